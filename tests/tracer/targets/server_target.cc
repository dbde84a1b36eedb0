// SPDX-License-Identifier: Apache-2.0
// Tracer test target: a server that never fills a trace buffer. The main
// thread allocates 100 blocks at start-up (tt_server_start), prints
// "ready" and then sleeps forever; two named workers (server-worker-0/1)
// allocate and free one block every 10 ms (tt_server_work) forever. The
// test SIGKILLs it. With the argument "alone" there are no workers: the
// process goes idle after start-up (pause), with nothing else running.
// With "fork": no workers either; after start-up the main thread forks a
// child that pauses, prints "ready <child pid>" and waits for it: a
// server's master process.
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "target_util.h"

extern "C" {

TT_FN void tt_server_start(void** blocks, int n) {
  for (int i = 0; i < n; ++i) blocks[i] = malloc(100 + i);
}

TT_FN void tt_server_work(void) {
  void* p = malloc(64);
  TtSink(p);
  free(p);
}

}  // extern "C"

namespace {

void* Worker(void* arg) {
  char name[16];
  snprintf(name, sizeof(name), "server-worker-%d", static_cast<int>(reinterpret_cast<long>(arg)));
  pthread_setname_np(pthread_self(), name);
  for (;;) {
    tt_server_work();
    usleep(10000);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const bool fork_mode = argc > 1 && argv[1][0] == 'f';
  const bool alone = fork_mode || (argc > 1 && argv[1][0] == 'a');
  TT_REPORT(tt_server_start);
  TT_REPORT(tt_server_work);
  static void* blocks[100];
  tt_server_start(blocks, 100);
  pthread_t t[2];
  for (long i = 0; i < 2 && !alone; ++i) {
    pthread_create(&t[i], nullptr, Worker, reinterpret_cast<void*>(i));
  }
  if (fork_mode) {
    pid_t child = fork();
    if (child == 0) {
      for (;;) pause();
    }
    printf("ready %d\n", static_cast<int>(child));
    fflush(stdout);
    waitpid(child, nullptr, 0);
    for (;;) pause();
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}
