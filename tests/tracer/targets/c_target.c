// SPDX-License-Identifier: Apache-2.0
// Tracer test target in C (no libstdc++ in the process): 100 x
// malloc(12345), calloc(1, 12346), realloc to 12347, free.
#include <stdlib.h>

#include "target_util.h"

TT_FN void* tt_c_alloc(size_t n) { return malloc(n); }
TT_FN void* tt_c_calloc(size_t n) { return calloc(1, n); }
TT_FN void* tt_c_realloc(void* p, size_t n) { return realloc(p, n); }
TT_FN void tt_c_free(void* p) { free(p); }

int main(void) {
  TT_REPORT(tt_c_alloc);
  TT_REPORT(tt_c_calloc);
  TT_REPORT(tt_c_realloc);
  TT_REPORT(tt_c_free);
  for (int i = 0; i < 100; ++i) {
    void* a = tt_c_alloc(12345);
    void* b = tt_c_calloc(12346);
    b = tt_c_realloc(b, 12347);
    tt_c_free(a);
    tt_c_free(b);
  }
  printf("result 100\n");
  return 0;
}
