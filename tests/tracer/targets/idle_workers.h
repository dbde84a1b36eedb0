// SPDX-License-Identifier: Apache-2.0
// Tracer test targets for `crossfree record`'s hand-off (handoff_target.cc,
// fork_handoff_target.cc): worker threads that record a known number of
// events and then go idle where the tracer never writes on its own (a
// condition variable nobody signals, a read of a pipe nobody writes), so a
// test can check that their last events still reach the trace.
//
// Included by exactly one source file of each target: it defines the
// functions the tests find by name and the targets' shared state.
#ifndef CROSSFREE_TESTS_TRACER_TARGETS_IDLE_WORKERS_H_
#define CROSSFREE_TESTS_TRACER_TARGETS_IDLE_WORKERS_H_

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target_util.h"

extern "C" {

// "hf-futex": 1,000 pairs (2,000 events), then idles in a futex wait.
TT_FN void tt_handoff_futex(int pairs) { TtMallocFreePairs(pairs, 32, 0); }

// "hf-read": 1,500 pairs (3,000 events), then idles in a read.
TT_FN void tt_handoff_read(int pairs) { TtMallocFreePairs(pairs, 80, 0); }

}  // extern "C"

namespace idle_workers {

inline pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
inline pthread_cond_t g_never = PTHREAD_COND_INITIALIZER;  // nobody signals it
// The idle workers and the thread that waits for them meet here once their
// work is done (pthread_barrier_init by the target, workers + 1).
inline pthread_barrier_t g_done;
// The read-idling worker reads [0]; nobody writes [1] (pipe() by the target).
inline int g_idle_pipe[2];

// Output through write(2): no stdio buffer to allocate in between.
inline void Say(const char* text) {
  ssize_t ignored = write(1, text, strlen(text));
  (void)ignored;
}

inline void WaitForEver() {
  pthread_mutex_lock(&g_mu);
  for (;;) pthread_cond_wait(&g_never, &g_mu);
}

// A worker thread: named `name`, it makes `pairs` pairs with `work`; then,
// when it idles, it meets the others at g_done and waits for ever: in a
// futex wait, after a read of the idle pipe (that never gets a byte) when
// idle_in_read.
struct Worker {
  const char* name;
  void (*work)(int pairs);
  int pairs;
  bool idles;
  bool idle_in_read;
};
inline const Worker kFutex = {"hf-futex", tt_handoff_futex, 1000, true, false};
inline const Worker kRead = {"hf-read", tt_handoff_read, 1500, true, true};

inline void* WorkerThread(void* arg) {
  const Worker& w = *static_cast<const Worker*>(arg);
  pthread_setname_np(pthread_self(), w.name);
  w.work(w.pairs);
  if (!w.idles) return nullptr;
  pthread_barrier_wait(&g_done);
  char c;
  while (w.idle_in_read && read(g_idle_pipe[0], &c, 1) > 0) {
  }
  WaitForEver();
  return nullptr;
}

// Starts w on a thread of its own.
inline pthread_t Start(const Worker& w) {
  pthread_t t;
  pthread_create(&t, nullptr, WorkerThread, const_cast<Worker*>(&w));
  return t;
}

}  // namespace idle_workers

#endif  // CROSSFREE_TESTS_TRACER_TARGETS_IDLE_WORKERS_H_
