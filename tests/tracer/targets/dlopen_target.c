// SPDX-License-Identifier: Apache-2.0
// Tracer test target: loads libz.so.1 with dlopen after start-up (and
// allocates afterwards); the trace must list it in its module map.
#include <dlfcn.h>
#include <stdlib.h>

#include "target_util.h"

int main(void) {
  void* handle = dlopen("libz.so.1", RTLD_NOW);
  if (handle == NULL) {
    printf("result no-libz\n");
    return 1;
  }
  void* p = malloc(12345);
  TtSink(p);
  free(p);
  printf("result loaded\n");
  return 0;
}
