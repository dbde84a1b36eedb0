// SPDX-License-Identifier: Apache-2.0
// Benchmark only: the cheapest possible LD_PRELOAD allocation interposer.
// malloc, calloc, realloc and free forward straight to glibc's own entry
// points (operator new/delete reach them through libstdc++). It records
// nothing; scripts/bench/sampling and scripts/bench/tracer run it beside the
// tracer so that the cost any preloaded interposer adds to a workload (one
// more call per allocation, and the change in timing it brings) is measured
// rather than guessed. glibc-specific (__libc_malloc and friends).
//
// Built a second time with CROSSFREE_STAMP_FLOOR defined: then every call
// also takes the tracer's timestamp (lfence; rdtsc, tracer/clock.h) and
// stores it, 8 bytes, into a thread-local ring. That is the floor of any
// tracer that stamps each event the way crossfree's ordering rule needs
// (docs/design.md): no stack, no encoding, no file.
//
// Built a third time with CROSSFREE_WALK_FLOOR defined as well: every call
// then also walks the caller's frame-pointer chain (up to 32 return
// addresses, each frame checked to lie above the last and within 1 MiB of
// it) into the same ring. That is the floor of any tracer that stamps each
// event and records its whole stack: what is left of the tracer's cost
// above it is its record path (buffer hand-off, encoding, interning,
// writing) and the contention that brings. Only for programs built with
// frame pointers whose threads start with a zero %rbp (the project's own
// workloads): in code that uses %rbp as a general register the check is
// not a proof that the next word is mapped.
#include <stddef.h>
#include <stdint.h>

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t count, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void __libc_free(void* p);

#ifdef CROSSFREE_STAMP_FLOOR
enum { kRingWords = 512 };  // 4 KiB per thread, static TLS
// initial-exec: a plain %fs-relative access, as the tracer's own TLS (the
// default model of a shared object calls __tls_get_addr every time).
#define FLOOR_TLS __thread __attribute__((tls_model("initial-exec")))
static FLOOR_TLS uint64_t t_ring[kRingWords];
static FLOOR_TLS unsigned t_next;

static inline void Stamp(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
  t_ring[t_next++ % kRingWords] = ((uint64_t)hi << 32) | lo;
}
#else
static inline void Stamp(void) {}
#endif

#ifdef CROSSFREE_WALK_FLOOR
enum { kWalkFrames = 32 };
static inline __attribute__((always_inline)) void Walk(uintptr_t fp) {
  unsigned n = t_next;
  for (int i = 0; i < kWalkFrames; ++i) {
    const uintptr_t* record = (const uintptr_t*)fp;
    t_ring[n++ % kRingWords] = record[1];
    uintptr_t next = record[0];
    if (next <= fp || next - fp > (1u << 20) || (next & 7) != 0) break;
    fp = next;
  }
  t_next = n;
}
// A macro, so that the frame is the hook's own.
#define EVENT() (Stamp(), Walk((uintptr_t)__builtin_frame_address(0)))
#else
#define EVENT() Stamp()
#endif

__attribute__((visibility("default"))) void* malloc(size_t size) {
  void* p = __libc_malloc(size);
  EVENT();
  return p;
}
__attribute__((visibility("default"))) void* calloc(size_t count, size_t size) {
  void* p = __libc_calloc(count, size);
  EVENT();
  return p;
}
__attribute__((visibility("default"))) void* realloc(void* p, size_t size) {
  EVENT();
  void* q = __libc_realloc(p, size);
  EVENT();
  return q;
}
__attribute__((visibility("default"))) void free(void* p) {
  EVENT();
  __libc_free(p);
}
