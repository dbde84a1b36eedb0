// SPDX-License-Identifier: Apache-2.0
// Tracer: the CPU an event ran on (docs/trace-format.md 6.8), read from the
// thread's rseq area, which glibc 2.35 and later registers for every thread
// and the kernel keeps up to date: one load from the thread pointer, no
// system call. Any thread may call CurrentCpu at any time (no lock, no
// allocation); InitCpuId runs once at start-up.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/trace_format.h"

namespace crossfree::tracer {

// Offset of the calling thread's rseq cpu_id from its thread pointer, the
// same in every thread; 0 when glibc registered no rseq area (an older
// glibc, GLIBC_TUNABLES=glibc.pthread.rseq=0), so every CPU is unknown.
extern ptrdiff_t g_rseq_cpu_offset;

// Reads glibc's __rseq_offset and __rseq_size. Start-up, before any event.
void InitCpuId();

// The CPU the calling thread runs on now, or kUnknownCpu. The thread may
// migrate right after: a hook reads it where it reads the timestamp.
inline uint32_t CurrentCpu() {
  const ptrdiff_t offset = g_rseq_cpu_offset;
  if (__builtin_expect(offset == 0, 0)) return format::kUnknownCpu;
  const auto* id = reinterpret_cast<const uint32_t*>(
      static_cast<const char*>(__builtin_thread_pointer()) + offset);
  // The kernel stores it on every return to this thread: a relaxed load.
  const uint32_t cpu = __atomic_load_n(id, __ATOMIC_RELAXED);
  // RSEQ_CPU_ID_UNINITIALIZED (-1) and RSEQ_CPU_ID_REGISTRATION_FAILED (-2).
  return cpu >= 0xFFFFFFFEu ? format::kUnknownCpu : cpu;
}

}  // namespace crossfree::tracer
