// SPDX-License-Identifier: Apache-2.0
// Tracer test target: a worker thread does 10000 malloc(12345)/free pairs
// (more than one chunk), tells main, and then blocks forever; main returns
// while it still runs. All 20000 events must reach the trace.
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>

#include "target_util.h"

namespace {
pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
bool done = false;
}  // namespace

extern "C" TT_FN void tt_worker_loop() { TtMallocFreePairs(10000, 12345, 0); }

void* Worker(void*) {
  tt_worker_loop();
  pthread_mutex_lock(&mu);
  done = true;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  for (;;) pause();
  return nullptr;
}

int main() {
  TT_REPORT(tt_worker_loop);
  pthread_t t;
  pthread_create(&t, nullptr, Worker, nullptr);
  pthread_mutex_lock(&mu);
  while (!done) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  printf("result 1\n");
  return 0;  // the worker is still running
}
