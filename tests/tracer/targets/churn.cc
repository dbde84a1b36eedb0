// SPDX-License-Identifier: Apache-2.0
// Tracer test target: same-thread churn. 1000 x malloc(12345)/free and
// 500 x new Blob (12346 bytes)/delete (sized delete), all on the main
// thread, from the tt_* functions below. The static tcmalloc targets build
// it with other counts (TT_CHURN_MALLOCS, TT_CHURN_NEWS).
#include <cstdlib>

#include "target_util.h"

#ifndef TT_CHURN_MALLOCS
#define TT_CHURN_MALLOCS 1000
#endif
#ifndef TT_CHURN_NEWS
#define TT_CHURN_NEWS 500
#endif

struct Blob {
  char data[12346];
};

extern "C" {
TT_FN void* tt_churn_malloc() { return malloc(12345); }
TT_FN void tt_churn_free(void* p) { free(p); }
TT_FN Blob* tt_churn_new() { return new Blob; }
TT_FN void tt_churn_delete(Blob* b) { delete b; }
}

int main() {
  TT_REPORT(tt_churn_malloc);
  TT_REPORT(tt_churn_free);
  TT_REPORT(tt_churn_new);
  TT_REPORT(tt_churn_delete);
  long sum = 0;
  for (int i = 0; i < TT_CHURN_MALLOCS; ++i) {
    void* p = tt_churn_malloc();
    static_cast<char*>(p)[0] = 1;
    sum += static_cast<char*>(p)[0];
    tt_churn_free(p);
  }
  for (int i = 0; i < TT_CHURN_NEWS; ++i) {
    Blob* b = tt_churn_new();
    b->data[0] = 1;
    sum += b->data[0];
    tt_churn_delete(b);
  }
  printf("result %ld\n", sum);
  return 0;
}
