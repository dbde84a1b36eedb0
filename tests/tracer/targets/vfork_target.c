// SPDX-License-Identifier: Apache-2.0
// Tracer test target: three vfork children whose exec fails and that leave
// with _exit (they share the parent's memory: the tracer must not flush or
// close the parent's state from them); then the parent allocates
// 3 x malloc(12345) in tt_after_vfork, which must still be recorded.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target_util.h"

TT_FN void tt_after_vfork(void) {
  for (int i = 0; i < 3; ++i) {
    void* p = malloc(12345);
    TtSink(p);
    free(p);
  }
}

int main(void) {
  TT_REPORT(tt_after_vfork);
  for (int i = 0; i < 3; ++i) {
    pid_t pid = vfork();
    if (pid == 0) {
      execl("/nonexistent/program", "program", (char*)NULL);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  tt_after_vfork();
  printf("result 3\n");
  return 0;
}
