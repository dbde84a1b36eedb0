// SPDX-License-Identifier: Apache-2.0
// Tracer test target: calloc(3, 4115) = 12345 bytes from a constructor
// function, before main; freed in main.
#include <cstdlib>

#include "target_util.h"

static void* g_early = nullptr;

extern "C" TT_FN __attribute__((constructor)) void tt_early_ctor() { g_early = calloc(3, 4115); }
extern "C" TT_FN void tt_late_free() { free(g_early); }

int main() {
  TT_REPORT(tt_early_ctor);
  TT_REPORT(tt_late_free);
  tt_late_free();
  printf("result %d\n", g_early != nullptr);
  return 0;
}
