// SPDX-License-Identifier: Apache-2.0
// Tracer test target: starts argv[1] (with the rest of argv) as a daemon the
// way Chromium starts its crash handler: a raw clone() twice, no fork
// handler run (so no trace of either child), the middle process exits, and
// the grandchild, once reparented (to record, the subreaper), execs the
// program. Both children make raw system calls only: they share nothing
// with the tracer's state but its copy, which they never touch.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const long middle = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (middle == 0) {
    const long self = syscall(SYS_getpid);
    if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) == 0) {
      // Until the middle process has exited: then the program's trace
      // names its new parent, not a process of the run. It exits at once;
      // 10 s without that is a failure (exit 3), not a wait for ever.
      const struct timespec pause = {0, 1000000};
      for (int ms = 0; syscall(SYS_getppid) == self; ++ms) {
        if (ms == 10000) syscall(SYS_exit_group, 3);
        syscall(SYS_nanosleep, &pause, 0);
      }
      syscall(SYS_execve, argv[1], argv + 1, environ);
      syscall(SYS_exit_group, 127);
    }
    syscall(SYS_exit_group, 0);
  }
  int status = 0;
  waitpid((pid_t)middle, &status, 0);
  return 0;
}
