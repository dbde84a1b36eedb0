// SPDX-License-Identifier: Apache-2.0
// Tracer: where the rseq area's cpu_id is (see cpu.h).
#include "tracer/cpu.h"

#include <linux/rseq.h>

// glibc 2.35+ (GLIBC_2.35 symbols of libc.so.6). Weak, so that the tracer
// still loads with a glibc that has none: the CPU is then unknown.
extern "C" {
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
}

namespace crossfree::tracer {

ptrdiff_t g_rseq_cpu_offset = 0;

void InitCpuId() {
  g_rseq_cpu_offset = 0;
  if (&__rseq_size == nullptr || &__rseq_offset == nullptr || __rseq_size == 0) return;
  g_rseq_cpu_offset = __rseq_offset + static_cast<ptrdiff_t>(offsetof(struct rseq, cpu_id));
}

}  // namespace crossfree::tracer
