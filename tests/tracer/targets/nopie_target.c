// SPDX-License-Identifier: Apache-2.0
// Tracer test target: a non-PIE executable that takes malloc's address in
// code, so its malloc is a canonical PLT entry that dlsym finds inside the
// executable. It does not define malloc: every allocation is traced.
#include <stdio.h>
#include <stdlib.h>

void* (*volatile g_alloc)(size_t);

int main(void) {
  g_alloc = &malloc;
  for (int i = 0; i < 100; ++i) free(g_alloc(32 + i));
  printf("done\n");
  return 0;
}
