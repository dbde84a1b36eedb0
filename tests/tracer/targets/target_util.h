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

#define TT_FN __attribute__((noinline, used, visibility("default")))

// Keeps the compiler from eliding an allocation whose result is unused.
static inline void TtSink(void* p) { __asm__ volatile("" : : "r"(p) : "memory"); }

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
