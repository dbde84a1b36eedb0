// SPDX-License-Identifier: Apache-2.0
// Preloaded after the tracer: counts, per thread, the malloc-family calls
// that reach the allocator behind the tracer (glibc's, through its
// __libc_* entry points), so a test can see what the tracer itself sends
// there. tt_count_calls_thread_allocations() returns the calling thread's
// count.
#define _GNU_SOURCE
#include <stddef.h>

extern void* __libc_malloc(size_t n);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t n);
extern void* __libc_memalign(size_t align, size_t n);

static __thread unsigned long thread_allocations;

__attribute__((visibility("default"))) unsigned long tt_count_calls_thread_allocations(void) {
  return thread_allocations;
}

__attribute__((visibility("default"))) void* malloc(size_t n) {
  ++thread_allocations;
  return __libc_malloc(n);
}

__attribute__((visibility("default"))) void* calloc(size_t n, size_t size) {
  ++thread_allocations;
  return __libc_calloc(n, size);
}

__attribute__((visibility("default"))) void* realloc(void* p, size_t n) {
  ++thread_allocations;
  return __libc_realloc(p, n);
}

__attribute__((visibility("default"))) void* memalign(size_t align, size_t n) {
  ++thread_allocations;
  return __libc_memalign(align, n);
}
