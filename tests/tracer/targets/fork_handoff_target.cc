// SPDX-License-Identifier: Apache-2.0
// Tracer test target for fork children under `crossfree record`'s hand-off:
// each child records a known number of events on three threads, two of
// which then go idle where the tracer never writes on its own.
//
//   fork_handoff_target N [kill]
//                           the parent makes 100 malloc/free pairs
//                           (tt_fh_parent: 200 events), then forks N
//                           children. Child i (0-based) makes 100 * (i + 1)
//                           pairs on its main thread (tt_fh_child: 200 *
//                           (i + 1) events) and starts "fh-futex" (1,000
//                           pairs, tt_fh_futex: 2,000 events, then a
//                           condition variable nobody signals) and "fh-read"
//                           (1,500 pairs, tt_fh_read: 3,000 events, then a
//                           read of a pipe nobody writes). When both are idle
//                           it writes "child <i> <pid>\n", tells the parent
//                           (a byte on a pipe) and waits for the parent's
//                           release pipe to end, then returns from main (a
//                           clean exit, its threads still blocked). Once
//                           every child is idle the parent, with "kill",
//                           SIGKILLs the last one; then it closes the
//                           release pipe, reaps every child and writes
//                           "reaped <pid> <status>\n" for each.
// Output goes through write(2), after the fn lines.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target_util.h"

extern "C" {

TT_FN void tt_fh_parent(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    void* p = malloc(40);
    TtSink(p);
    free(p);
  }
}

TT_FN void tt_fh_child(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    void* p = malloc(56 + (i & 63));
    TtSink(p);
    free(p);
  }
}

TT_FN void tt_fh_futex(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    void* p = malloc(32);
    TtSink(p);
    free(p);
  }
}

TT_FN void tt_fh_read(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    void* p = malloc(80);
    TtSink(p);
    free(p);
  }
}

}  // extern "C"

namespace {

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_never = PTHREAD_COND_INITIALIZER;  // nobody signals it
pthread_barrier_t g_done;
int g_idle_pipe[2];

void Say(const char* line) {
  ssize_t ignored = write(1, line, strlen(line));
  (void)ignored;
}

void* FutexThread(void*) {
  pthread_setname_np(pthread_self(), "fh-futex");
  tt_fh_futex(1000);
  pthread_barrier_wait(&g_done);
  pthread_mutex_lock(&g_mu);
  for (;;) pthread_cond_wait(&g_never, &g_mu);
  return nullptr;
}

void* ReadThread(void*) {
  pthread_setname_np(pthread_self(), "fh-read");
  tt_fh_read(1500);
  pthread_barrier_wait(&g_done);
  char c;
  while (read(g_idle_pipe[0], &c, 1) > 0) {
  }
  pthread_mutex_lock(&g_mu);
  for (;;) pthread_cond_wait(&g_never, &g_mu);
  return nullptr;
}

int Child(int index, int release, int ready) {
  tt_fh_child(100 * (index + 1));
  if (pipe(g_idle_pipe) != 0) return 3;
  pthread_barrier_init(&g_done, nullptr, 3);
  pthread_t t[2];
  pthread_create(&t[0], nullptr, FutexThread, nullptr);
  pthread_create(&t[1], nullptr, ReadThread, nullptr);
  pthread_barrier_wait(&g_done);
  char line[64];
  snprintf(line, sizeof(line), "child %d %d\n", index, static_cast<int>(getpid()));
  Say(line);
  char c = 'r';
  if (write(ready, &c, 1) != 1) return 4;
  while (read(release, &c, 1) > 0) {
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  TT_REPORT(tt_fh_parent);
  TT_REPORT(tt_fh_child);
  TT_REPORT(tt_fh_futex);
  TT_REPORT(tt_fh_read);
  fflush(stdout);
  const int n = argc > 1 ? atoi(argv[1]) : 1;
  tt_fh_parent(100);
  const bool kill_last = argc > 2 && strcmp(argv[2], "kill") == 0;
  int release[2], ready[2];
  if (pipe(release) != 0 || pipe(ready) != 0) return 1;
  pid_t pids[64];
  for (int i = 0; i < n && i < 64; ++i) {
    pids[i] = fork();
    if (pids[i] == 0) {
      close(release[1]);
      close(ready[0]);
      return Child(i, release[0], ready[1]);
    }
  }
  close(release[0]);
  close(ready[1]);
  char c;
  for (int i = 0; i < n && i < 64; ++i) {
    if (read(ready[0], &c, 1) != 1) return 2;
  }
  if (kill_last && n > 0) kill(pids[(n < 64 ? n : 64) - 1], SIGKILL);
  close(release[1]);
  for (int i = 0; i < n && i < 64; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    char line[64];
    snprintf(line, sizeof(line), "reaped %d %d\n", static_cast<int>(pids[i]), status);
    Say(line);
  }
  return 0;
}
