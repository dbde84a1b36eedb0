// SPDX-License-Identifier: Apache-2.0
// Tracer test target: the parent allocates 11 x 12345 (kept), forks; the
// child allocates and frees 7 x 12346 and leaves with _exit; the parent
// then allocates 5 x 12347. argv[1] == "exit" makes the child use exit().
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "target_util.h"

extern "C" {
TT_FN void* tt_parent_alloc(size_t n) { return malloc(n); }
TT_FN void tt_child_work() { TtMallocFreePairs(7, 12346, 0); }
}

int main(int argc, char** argv) {
  TT_REPORT(tt_parent_alloc);
  TT_REPORT(tt_child_work);
  fflush(stdout);
  void* keep[16];
  for (int i = 0; i < 11; ++i) keep[i] = tt_parent_alloc(12345);
  pid_t pid = fork();
  if (pid == 0) {
    tt_child_work();
    if (argc > 1 && strcmp(argv[1], "exit") == 0) exit(0);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  for (int i = 0; i < 5; ++i) TtSink(tt_parent_alloc(12347));
  TtSink(keep[0]);
  printf("child %d status %d\n", static_cast<int>(pid), status);
  return 0;
}
