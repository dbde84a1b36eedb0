// SPDX-License-Identifier: Apache-2.0
// Tracer test targets: shared helpers (C and C++). A target prints
// "fn NAME START SIZE" for each function whose allocations the test checks,
// so the test can verify that the first recorded frame lies inside it.
// Target functions are extern "C", noinline and exported (tt_*).
#ifndef CROSSFREE_TESTS_TRACER_TARGET_UTIL_H_
#define CROSSFREE_TESTS_TRACER_TARGET_UTIL_H_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#define TT_FN __attribute__((noinline, used, visibility("default")))

// Keeps the compiler from eliding an allocation whose result is unused.
static inline void TtSink(void* p) { __asm__ volatile("" : : "r"(p) : "memory"); }

// Makes `pairs` malloc/free pairs of base + (i & mask) bytes (i counting
// from 0). Always inlined, so that every allocation's first frame is the
// tt_* function that calls it: the tests find events by that function.
static inline __attribute__((always_inline)) void TtMallocFreePairs(long pairs, size_t base,
                                                                     size_t mask) {
  for (long i = 0; i < pairs; ++i) {
    void* p = malloc(base + ((size_t)i & mask));
    TtSink(p);
    free(p);
  }
}

static inline void TtReportFunction(const char* name, void* fn) {
  Dl_info info;
  const ElfW(Sym)* sym = NULL;
  unsigned long size = 0;
  if (dladdr1(fn, &info, (void**)&sym, RTLD_DL_SYMENT) != 0 && sym != NULL) {
    size = (unsigned long)sym->st_size;
  }
  printf("fn %s %p %lu\n", name, fn, size);
}

#define TT_REPORT(fn) TtReportFunction(#fn, (void*)&fn)

#endif  // CROSSFREE_TESTS_TRACER_TARGET_UTIL_H_
