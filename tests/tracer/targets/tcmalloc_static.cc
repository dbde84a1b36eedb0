// SPDX-License-Identifier: Apache-2.0
// Tracer test target linked with libtcmalloc.a: 300 x malloc(12345)/free
// and 200 x new Chunk (12346 bytes)/delete. Built twice: with the
// MallocHook API exported, and with it only in the .symtab.
#include <cstdlib>

#include "target_util.h"

struct Chunk {
  char data[12346];
};

extern "C" {
TT_FN void* tt_tc_malloc() { return malloc(12345); }
TT_FN void tt_tc_free(void* p) { free(p); }
TT_FN Chunk* tt_tc_new() { return new Chunk; }
TT_FN void tt_tc_delete(Chunk* c) { delete c; }
}

int main() {
  TT_REPORT(tt_tc_malloc);
  TT_REPORT(tt_tc_free);
  TT_REPORT(tt_tc_new);
  TT_REPORT(tt_tc_delete);
  for (int i = 0; i < 300; ++i) tt_tc_free(tt_tc_malloc());
  for (int i = 0; i < 200; ++i) tt_tc_delete(tt_tc_new());
  printf("result 500\n");
  return 0;
}
