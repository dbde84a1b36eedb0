// SPDX-License-Identifier: Apache-2.0
// Tracer test target for recording windows (CROSSFREE_TOGGLE_SIGNAL=SIGUSR2
// set by the test). Every object has a size of its own, so the test can
// tell them apart in the trace:
//   1111 x100  allocated before the window, freed inside it
//   2222 x200  allocated and freed inside (main)
//   3333 x50   allocated inside, still live when the window closes
//   4444 x30   a thread started inside the window allocates and frees them
//   5555 x20   a thread blocked in read() across the opening toggle
//   6666 x10   a thread blocked in a condition wait across the opening
//   7777 x10   allocated and freed after the window closed
// main opens and closes the window with raise(SIGUSR2), so the edges are
// exact. After the close it leaves with _exit, so no exit flush runs:
// what the trace holds was written when the window closed (the test also
// turns the age-bound flush off). The blocked threads are still blocked
// then, with their events in their buffers.
//   mode "blocked": the signal goes to the process (kill), main blocks it,
//   so it lands on the threads blocked in read() and in a condition wait;
//   they must go on as if nothing happened (SA_RESTART) and read all data.
//   Untraced (no CROSSFREE_TOGGLE_SIGNAL) it sends nothing: SIGUSR2 would
//   end it.
//   mode "fork": after the window opened, a child allocates and frees
//   8888 x10 and leaves with exit(); the parent waits for it.
//   mode "late SLEEP_MS UNTIL_MS" (CROSSFREE_DELAY_MS and _DURATION_MS set
//   by the test): sleeps SLEEP_MS without allocating, then allocates and
//   frees 9999 bytes again and again until UNTIL_MS after its start, so
//   the delay is noticed only when the sleep ends.
//   mode "idle_end BUSY_MS SLEEP_MS" (CROSSFREE_DELAY_MS and _DURATION_MS
//   set by the test): allocates and frees 9999 bytes again and again until
//   BUSY_MS after its start, sleeps SLEEP_MS without allocating (through
//   the window's end), then allocates and frees 7777 bytes 10 times: the
//   duration's end is noticed only then.
//   mode "rare THREADS PERIOD_MS UNTIL_MS" (under `record --delay`): each
//   of THREADS threads allocates and frees 4321 bytes once every PERIOD_MS
//   until UNTIL_MS after the start, fewer than the 64 calls of a thread on
//   which a closed window reads the clock: only record's nudge at the
//   delay's end opens the window.
//   mode "idle" (under `record --toggle-signal USR2`): raise(SIGUSR2)
//   twice with no allocation or free between, so the window opens and
//   closes with nothing in it; "idle ignored" first sets SIGUSR2 to
//   SIG_IGN, replacing the tracer's handler, as a program that uses the
//   signal itself does.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "target_util.h"

namespace {

int pipe_fds[2];
int again_fds[2];
// Never destroyed: a fork child leaves with exit(), and the destructor of a
// condition variable that another thread (in the parent) waits on would
// wait for ever.
std::mutex& mu = *new std::mutex;
std::condition_variable& cv = *new std::condition_variable;
bool go = false;
bool cond_done = false;
// The two threads that block across the opening toggle, once they run.
std::atomic<pid_t> reader_tid{0};
std::atomic<pid_t> waiter_tid{0};

void Churn(size_t size, int n) {
  for (int i = 0; i < n; ++i) {
    void* p = malloc(size);
    TtSink(p);
    free(p);
  }
}

// Reads exactly n bytes; a short or failed read is a test failure.
bool ReadAll(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// Whether thread `tid` of this process sleeps in the kernel (state S:
// read() on an empty pipe, a futex wait).
bool Sleeping(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = fopen(path, "r");
  if (f == nullptr) return false;
  char line[512];
  const bool got = fgets(line, sizeof(line), f) != nullptr;
  fclose(f);
  // The state follows the name, which is in parentheses and may hold any
  // character: the last ')' ends it.
  const char* end = got ? strrchr(line, ')') : nullptr;
  return end != nullptr && end[1] == ' ' && end[2] == 'S';
}

uint64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

// Sleeps ms without allocating (a signal does not cut it short).
void SleepMs(long ms) {
  timespec pause = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&pause, &pause) != 0) {
  }
}

// Churns 9999-byte blocks until until_ms after start.
void ChurnUntil(uint64_t start, long until_ms) {
  while (MonotonicMs() - start < static_cast<uint64_t>(until_ms)) Churn(9999, 100);
}

int Late(long sleep_ms, long until_ms) {
  const uint64_t start = MonotonicMs();
  SleepMs(sleep_ms);
  ChurnUntil(start, until_ms);
  printf("window target done\n");
  return 0;
}

int IdleEnd(long busy_ms, long sleep_ms) {
  ChurnUntil(MonotonicMs(), busy_ms);
  SleepMs(sleep_ms);
  Churn(7777, 10);
  printf("window target done\n");
  return 0;
}

int Rare(long threads, long period_ms, long until_ms) {
  const uint64_t start = MonotonicMs();
  std::vector<std::thread> workers;
  for (long t = 0; t < threads; ++t) {
    workers.emplace_back([=] {
      for (uint64_t next = start; next - start < static_cast<uint64_t>(until_ms);
           next += static_cast<uint64_t>(period_ms)) {
        const uint64_t now = MonotonicMs();
        if (next > now) {
          timespec pause = {static_cast<time_t>((next - now) / 1000),
                            static_cast<long>((next - now) % 1000) * 1000000};
          while (nanosleep(&pause, &pause) != 0) {
          }
        }
        void* p = malloc(4321);
        TtSink(p);
        free(p);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  printf("window target done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "idle") == 0) {
    if (argc > 2 && strcmp(argv[2], "ignored") == 0) signal(SIGUSR2, SIG_IGN);
    raise(SIGUSR2);
    raise(SIGUSR2);
    return 0;
  }
  if (argc > 3 && strcmp(argv[1], "late") == 0) return Late(atol(argv[2]), atol(argv[3]));
  if (argc > 3 && strcmp(argv[1], "idle_end") == 0) return IdleEnd(atol(argv[2]), atol(argv[3]));
  if (argc > 4 && strcmp(argv[1], "rare") == 0) {
    return Rare(atol(argv[2]), atol(argv[3]), atol(argv[4]));
  }
  const bool blocked = argc > 1 && strcmp(argv[1], "blocked") == 0;
  const bool forking = argc > 1 && strcmp(argv[1], "fork") == 0;
  if (pipe(pipe_fds) != 0 || pipe(again_fds) != 0) return 3;
  void* pre[100];
  for (void*& p : pre) p = malloc(1111);
  bool reader_ok = true;
  std::thread reader([&] {
    char buf[4096];
    reader_tid = gettid();
    // Blocked here while the window opens.
    reader_ok = ReadAll(pipe_fds[0], buf, sizeof(buf)) && buf[4095] == 'x';
    Churn(5555, 20);
    write(again_fds[1], "k", 1);
    // And blocked here, events buffered, while it closes.
    reader_ok = reader_ok && ReadAll(pipe_fds[0], buf, 1);
  });
  std::thread waiter([] {
    waiter_tid = gettid();
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [] { return go; });
    Churn(6666, 10);
    cond_done = true;
    cv.notify_all();
  });
  if (blocked) {
    // The toggles land on the threads blocked in read() and cv.wait().
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // Both threads blocked first, so that the toggles land on them: a
    // bounded poll (10 s, a deadline, not a synchronisation; the result
    // does not depend on it).
    for (int i = 0; i < 10000; ++i) {
      const pid_t r = reader_tid.load(), w = waiter_tid.load();
      if (r != 0 && w != 0 && Sleeping(r) && Sleeping(w)) break;
      usleep(1000);
    }
    for (int i = 0; i < 10 && getenv("CROSSFREE_TOGGLE_SIGNAL") != nullptr; ++i) {
      kill(getpid(), SIGUSR2);
      // Pacing, not a synchronisation: spreads the toggles (two sent
      // before the first is handled merge into one, which the test allows).
      usleep(2000);
    }
  } else {
    raise(SIGUSR2);  // open
  }
  for (void* p : pre) free(p);
  if (forking) {
    pid_t child = fork();
    if (child == 0) {
      Churn(8888, 10);
      exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0) return 5;
  }
  Churn(2222, 200);
  void* live[50];
  for (void*& p : live) p = malloc(3333);
  std::thread([] { Churn(4444, 30); }).join();
  char data[4096];
  memset(data, 'x', sizeof(data));
  if (write(pipe_fds[1], data, sizeof(data)) != sizeof(data)) return 3;
  char k;
  if (!ReadAll(again_fds[0], &k, 1)) return 3;
  {
    std::unique_lock<std::mutex> lock(mu);
    go = true;
    cv.notify_all();
    cv.wait(lock, [] { return cond_done; });
  }
  waiter.join();
  if (!blocked) raise(SIGUSR2);  // close
  for (void* p : live) free(p);
  Churn(7777, 10);
  if (write(pipe_fds[1], "y", 1) != 1) return 3;
  reader.join();
  if (!reader_ok) {
    static const char msg[] = "reader lost data\n";
    write(2, msg, sizeof(msg) - 1);
    return 4;
  }
  static const char done[] = "window target done\n";
  write(1, done, sizeof(done) - 1);
  if (blocked) return 0;
  _exit(0);
}
