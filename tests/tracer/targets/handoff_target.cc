// SPDX-License-Identifier: Apache-2.0
// Tracer test target for `crossfree record`'s chunk hand-off: threads that
// record a known number of events and then go idle where the tracer never
// writes on its own (a condition variable, a blocking read on a pipe).
//
//   handoff_target idle   the main thread allocates 250 blocks and frees
//                         them (tt_handoff_main: 500 events); four threads
//                         run: "hf-futex" 1,000 malloc/free pairs
//                         (tt_handoff_futex: 2,000 events) then waits on a
//                         condition variable nobody signals; "hf-read" 1,500
//                         pairs (tt_handoff_read: 3,000 events) then reads a
//                         pipe nobody writes; "hf-bulk" 60,000 pairs
//                         (tt_handoff_bulk: 120,000 events, many chunks) then
//                         waits on the condition variable. When all four have
//                         done their work the main thread writes
//                         "done <pid>\n" to stdout and reads stdin: the test
//                         SIGKILLs it there. "idle exit": the same, but the
//                         main thread returns from main when stdin ends
//                         (process exit with the threads still blocked).
//   handoff_target flood  writes "ready <pid>\n", waits for a byte on stdin,
//                         then one thread "hf-flood" makes 100,000 pairs
//                         (tt_handoff_flood: 200,000 events) and exits; the
//                         main thread writes "flooded\n", waits for stdin to
//                         end and returns.
// Output goes through write(2) (no stdio buffer to allocate in between), after
// the fn lines.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>

#include "target_util.h"

extern "C" {

TT_FN void tt_handoff_main(void** blocks, int n) {
  for (int i = 0; i < n; ++i) blocks[i] = malloc(48 + i);
  for (int i = 0; i < n; ++i) free(blocks[i]);
}

TT_FN void tt_handoff_futex(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    void* p = malloc(32);
    TtSink(p);
    free(p);
  }
}

TT_FN void tt_handoff_read(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    void* p = malloc(80);
    TtSink(p);
    free(p);
  }
}

TT_FN void tt_handoff_bulk(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    void* p = malloc(16 + (i & 255));
    TtSink(p);
    free(p);
  }
}

TT_FN void tt_handoff_flood(int pairs) {
  for (int i = 0; i < pairs; ++i) {
    void* p = malloc(24 + (i & 127));
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

void Say(const char* text) {
  ssize_t ignored = write(1, text, strlen(text));
  (void)ignored;
}

void SayWithPid(const char* word) {
  char line[64];
  int n = snprintf(line, sizeof(line), "%s %d\n", word, static_cast<int>(getpid()));
  ssize_t ignored = write(1, line, static_cast<size_t>(n));
  (void)ignored;
}

void WaitForEver() {
  pthread_mutex_lock(&g_mu);
  for (;;) pthread_cond_wait(&g_never, &g_mu);
}

void* FutexThread(void*) {
  pthread_setname_np(pthread_self(), "hf-futex");
  tt_handoff_futex(1000);
  pthread_barrier_wait(&g_done);
  WaitForEver();
  return nullptr;
}

void* ReadThread(void*) {
  pthread_setname_np(pthread_self(), "hf-read");
  tt_handoff_read(1500);
  pthread_barrier_wait(&g_done);
  char c;
  for (;;) {
    if (read(g_idle_pipe[0], &c, 1) <= 0) break;
  }
  WaitForEver();
  return nullptr;
}

void* BulkThread(void*) {
  pthread_setname_np(pthread_self(), "hf-bulk");
  tt_handoff_bulk(60000);
  pthread_barrier_wait(&g_done);
  WaitForEver();
  return nullptr;
}

void* FloodThread(void*) {
  pthread_setname_np(pthread_self(), "hf-flood");
  tt_handoff_flood(100000);
  return nullptr;
}

// Reads stdin until a byte arrives (true) or it ends (false).
bool ReadByte() {
  char c;
  for (;;) {
    ssize_t n = read(0, &c, 1);
    if (n == 1) return true;
    if (n == 0) return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  TT_REPORT(tt_handoff_main);
  TT_REPORT(tt_handoff_futex);
  TT_REPORT(tt_handoff_read);
  TT_REPORT(tt_handoff_bulk);
  TT_REPORT(tt_handoff_flood);
  fflush(stdout);
  const bool flood = argc > 1 && strcmp(argv[1], "flood") == 0;
  if (flood) {
    SayWithPid("ready");
    if (!ReadByte()) return 1;
    pthread_t t;
    pthread_create(&t, nullptr, FloodThread, nullptr);
    pthread_join(t, nullptr);
    Say("flooded\n");
    while (ReadByte()) {
    }
    return 0;
  }
  const bool exit_at_end = argc > 2 && strcmp(argv[2], "exit") == 0;
  static void* blocks[250];
  tt_handoff_main(blocks, 250);
  if (pipe(g_idle_pipe) != 0) return 1;
  pthread_barrier_init(&g_done, nullptr, 4);
  pthread_t t[3];
  pthread_create(&t[0], nullptr, FutexThread, nullptr);
  pthread_create(&t[1], nullptr, ReadThread, nullptr);
  pthread_create(&t[2], nullptr, BulkThread, nullptr);
  pthread_barrier_wait(&g_done);
  SayWithPid("done");
  while (ReadByte()) {
  }
  if (exit_at_end) return 0;
  for (;;) pause();
}
