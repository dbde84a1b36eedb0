// SPDX-License-Identifier: Apache-2.0
// Benchmark only: the cheapest possible LD_PRELOAD allocation interposer.
// malloc, calloc, realloc and free forward straight to glibc's own entry
// points (operator new/delete reach them through libstdc++). It records
// nothing; scripts/bench-sampling runs it beside the tracer so that the
// cost any preloaded interposer adds to a workload (one more call per
// allocation, and the change in timing it brings) is measured rather than
// guessed. glibc-specific (__libc_malloc and friends).
#include <stddef.h>

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t count, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void __libc_free(void* p);

__attribute__((visibility("default"))) void* malloc(size_t size) { return __libc_malloc(size); }
__attribute__((visibility("default"))) void* calloc(size_t count, size_t size) {
  return __libc_calloc(count, size);
}
__attribute__((visibility("default"))) void* realloc(void* p, size_t size) {
  return __libc_realloc(p, size);
}
__attribute__((visibility("default"))) void free(void* p) { __libc_free(p); }
