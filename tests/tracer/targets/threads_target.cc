// SPDX-License-Identifier: Apache-2.0
// Tracer test target, two modes.
//   reuse:  200 threads, one after the other, each 10 x malloc(12345)/free
//           in tt_thread_work; thread states must be reused.
//   stress: 8 threads loop malloc(12345)/free in tt_stress_loop without
//           end; main exits while they run, once each has made 20000
//           pairs (counted, not timed: a loaded machine only takes longer).
//           The exit flush must neither hang nor cut or duplicate a record.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "target_util.h"

namespace {
std::atomic<int> started{0};
}

extern "C" {
TT_FN void tt_thread_work() { TtMallocFreePairs(10, 12345, 0); }

TT_FN void tt_stress_loop() {
  for (long i = 0;; ++i) {
    void* p = malloc(12345);
    TtSink(p);
    free(p);
    if (i == 20000) started.fetch_add(1);  // main exits once all are this far
  }
}
}

void* Work(void*) {
  tt_thread_work();
  return nullptr;
}

void* Stress(void*) {
  tt_stress_loop();
  return nullptr;
}

int main(int argc, char** argv) {
  TT_REPORT(tt_thread_work);
  TT_REPORT(tt_stress_loop);
  if (argc > 1 && strcmp(argv[1], "stress") == 0) {
    pthread_t t[8];
    for (pthread_t& th : t) pthread_create(&th, nullptr, Stress, nullptr);
    // Polls the count; the test's bound on the whole run is the deadline.
    while (started.load() < 8) usleep(1000);
    printf("result stress\n");
    fflush(stdout);
    exit(0);  // the workers are still allocating
  }
  for (int i = 0; i < 200; ++i) {
    pthread_t t;
    pthread_create(&t, nullptr, Work, nullptr);
    pthread_join(t, nullptr);
  }
  printf("result 200\n");
  return 0;
}
