// SPDX-License-Identifier: Apache-2.0
// Tracer test target: a statically linked program (no dynamic loader to
// load the tracer into), for the attach error message. Waits on stdin.
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  char c;
  while (read(0, &c, 1) == 1) {
  }
  return 0;
}
