// SPDX-License-Identifier: Apache-2.0
// Tracer test target: every interposed allocation function and every
// operator new/delete variant, once each, with distinct sizes (1001..1032),
// all called from tt_all_functions. Also a throwing operator new that fails
// (std::bad_alloc) followed by one more allocation, to show the recursion
// guard is released when an exception passes through the hook.
#include <errno.h>
#include <malloc.h>

#include <cstdlib>
#include <new>

#include "target_util.h"

namespace {
constexpr std::align_val_t kAlign{64};
}

extern "C" TT_FN int tt_all_functions() {
  int bad = 0;
  void* p;
  p = malloc(1001); TtSink(p); free(p);
  p = calloc(1, 1002); TtSink(p); free(p);
  p = realloc(nullptr, 1003); TtSink(p); free(p);
  p = reallocarray(nullptr, 1, 1004); TtSink(p); free(p);
  if (posix_memalign(&p, 64, 1005) != 0) ++bad;
  TtSink(p); free(p);
  p = aligned_alloc(64, 1006); TtSink(p); free(p);
  p = memalign(64, 1007); TtSink(p); free(p);
  p = valloc(1008); TtSink(p); free(p);
  p = pvalloc(1009); TtSink(p);
  if (malloc_usable_size(p) < 1009) ++bad;
  free(p);
  // operator new x8 / delete x12: each delete variant gets its own block.
  p = operator new(1010); TtSink(p); operator delete(p);
  p = operator new(1011); TtSink(p); operator delete(p, size_t{1011});
  p = operator new(1012, std::nothrow); TtSink(p); operator delete(p, std::nothrow);
  p = operator new(1013, kAlign); TtSink(p); operator delete(p, kAlign);
  p = operator new(1014, kAlign); TtSink(p); operator delete(p, size_t{1014}, kAlign);
  p = operator new(1015, kAlign, std::nothrow); TtSink(p); operator delete(p, kAlign, std::nothrow);
  p = operator new[](1016); TtSink(p); operator delete[](p);
  p = operator new[](1017); TtSink(p); operator delete[](p, size_t{1017});
  p = operator new[](1018, std::nothrow); TtSink(p); operator delete[](p, std::nothrow);
  p = operator new[](1019, kAlign); TtSink(p); operator delete[](p, kAlign);
  p = operator new[](1020, kAlign); TtSink(p); operator delete[](p, size_t{1020}, kAlign);
  p = operator new[](1021, kAlign, std::nothrow); TtSink(p); operator delete[](p, kAlign, std::nothrow);
  try {
    p = operator new(static_cast<size_t>(-1) / 4);
    TtSink(p);
    ++bad;
  } catch (const std::bad_alloc&) {
  }
  p = operator new(1022); TtSink(p); operator delete(p);
  return bad;
}

// errno is left exactly as the real functions set it.
int ErrnoChecks() {
  int bad = 0;
  errno = 4321;
  void* p = malloc(100);
  TtSink(p);
  bad += errno != 4321;
  free(p);
  bad += errno != 4321;
  p = operator new(100);
  TtSink(p);
  operator delete(p);
  bad += errno != 4321;
  errno = 0;
  p = malloc(static_cast<size_t>(-1) / 2);
  bad += p != nullptr || errno != ENOMEM;
  errno = 0;
  p = calloc(static_cast<size_t>(-1) / 2, 4);
  bad += p != nullptr || errno != ENOMEM;
  return bad;
}

int main() {
  TT_REPORT(tt_all_functions);
  int bad = tt_all_functions() + ErrnoChecks();
  printf("result %d\n", bad);
  return bad;
}
