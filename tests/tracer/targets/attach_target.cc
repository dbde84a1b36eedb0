// SPDX-License-Identifier: Apache-2.0
// Tracer test target for `crossfree record -p` (attach_test.cc): a process
// that is already running when the tracer arrives, driven by one command
// per line on stdin, answering one line per command on stdout:
//   ready <pid>                 at start, once its threads run
//   where      -> "where <object of the executable's malloc GOT entry>
//                 <object of the plugin's, or ->"
//   cross      -> "cross": kCross objects of kCrossSize bytes made by
//                 thread "producer" (tt_produce) and freed by thread
//                 "consumer" (tt_consume)
//   freeold    -> "freeold": thread "consumer" frees the kOld objects of
//                 kOldSize that main allocated before anything else
//   keep       -> "keep": thread "producer" allocates kKeep objects of
//                 kKeepSize that stay allocated
//   plugin P   -> "plugin": dlopen P, wait (bounded) until its GOT entry
//                 for malloc reaches the tracer, then kPlugin objects of
//                 kPluginSize allocated by the plugin and freed by main
//   stuck      -> "stuck" (printed by the handler): thread "stuck" enters
//                 operator new for an impossible size; its new-handler
//                 says so and waits for "unstick"
//   unstick    -> "unstuck": the handler returns, operator new throws
//                 bad_alloc, which the thread catches
//   fork       -> "forked 7 8": two children allocate and leave through
//                 _exit(7) and exit(8)
//   handover   -> "ready <pid>" from a fork child, which reads the
//                 commands from then on (main's only: the threads stay in
//                 the parent); the parent waits for it and leaves with its
//                 exit status
//   mainalloc  -> "mainalloc": main allocates and frees kCross objects of
//                 kCrossSize
//   exec       -> becomes /bin/cat (which copies stdin to stdout)
//   rawexec    -> the same through a direct execve system call, which the
//                 tracer does not see (as glibc's execl family)
//   exit       -> exits with status 0 (through exit())
//   sleepers   -> "sleepers N": one byte to each of the two sleepers; N of
//                 them read it (their read() came back with it) and said so
//                 within 10 s
//   smalltid   -> "smalltid <tid>" of thread "small", asleep in read() on
//                 a 64 KB stack (too little for the injected code)
//   small      -> "small 1" when thread "small" read the byte sent to it
//                 within 10 s
//   vectortid  -> "vectortid <tid>" of thread "vector"
//   busy       -> "busy N": N of the two "busy" threads (below) made a
//                 whole malloc call that began after the command came,
//                 within 10 s
//   vector     -> "vector ok" when thread "vector", asleep in a raw read
//                 system call with known values in r12-r15 and in ymm8
//                 (xmm8 without AVX), woke on the byte sent to it and found
//                 them all as they were; else "vector bad ..."
// Besides: two threads sleep in read() on pipes and two threads allocate
// and free continuously (same thread) until exit.
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "target_util.h"

namespace {

constexpr int kCross = 1000;
constexpr size_t kCrossSize = 4242;
constexpr int kOld = 100;
constexpr size_t kOldSize = 4243;
constexpr int kKeep = 50;
constexpr size_t kKeepSize = 4244;
constexpr int kPlugin = 300;
constexpr size_t kPluginSize = 4245;

std::atomic<bool> g_quit{false};

// Each "busy" thread's count of malloc calls that have returned.
std::atomic<unsigned> g_busy_calls[2];

// A thread that runs tasks one at a time, in order.
class Worker {
 public:
  explicit Worker(const char* name) : thread_([this, name] { Run(name); }) {}
  void Do(std::function<void()> task) {
    std::unique_lock<std::mutex> lock(mu_);
    task_ = std::move(task);
    done_ = false;
    cv_.notify_all();
    cv_.wait(lock, [this] { return done_; });
  }
  void Detach() { thread_.detach(); }

 private:
  void Run(const char* name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return task_ != nullptr; });
        task = std::move(task_);
        task_ = nullptr;
      }
      task();
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool done_ = true;
  std::thread thread_;
};

const char* ObjectOf(const void* p) {
  Dl_info info;
  if (p == nullptr || dladdr(p, &info) == 0 || info.dli_fname == nullptr) return "?";
  const char* slash = strrchr(info.dli_fname, '/');
  return slash != nullptr ? slash + 1 : info.dli_fname;
}

int g_stuck_pipe[2];

void StuckHandler() {
  printf("stuck\n");  // the test detaches once it reads this
  char c;
  // Blocks inside operator new (the tracer's hook is on the stack) until
  // the test has detached.
  if (read(g_stuck_pipe[0], &c, 1) != 1) abort();
  std::set_new_handler(nullptr);  // next failure throws
}

// Waits up to 10 s for n bytes on fd; returns how many came.
int AwaitBytes(int fd, int n) {
  int got = 0;
  while (got < n) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) break;
    char c;
    if (read(fd, &c, 1) == 1) ++got;
  }
  return got;
}

// Thread "vector": asleep in a read system call made by hand, so that the
// compiler keeps nothing of its own in registers across it and every
// register the kernel preserves must come back as it was.
int g_vector_pipe[2];
int g_vector_ack[2];
std::atomic<pid_t> g_vector_tid{0};
char g_vector_verdict[256] = "vector none";

// read(g_vector_pipe[0], &c, 1) as one system call instruction, with the
// pattern moved into REG (ymm8: 32 bytes, xmm8: 16) and known values into
// r12-r15 before it, and all of them stored to vec and gpr after it.
#define CF_VECTOR_READ(MOVE, REG)                                                         \
  asm volatile(MOVE " (%[pat]), %%" REG "\n"                                            \
               "movabs $0x1111111111111111, %%r12\n"                                     \
               "movabs $0x2222222222222222, %%r13\n"                                     \
               "movabs $0x3333333333333333, %%r14\n"                                     \
               "movabs $0x4444444444444444, %%r15\n"                                     \
               "syscall\n" MOVE " %%" REG ", (%[vec])\n"                                  \
               "mov %%r12, 0(%[gpr])\n"                                                  \
               "mov %%r13, 8(%[gpr])\n"                                                  \
               "mov %%r14, 16(%[gpr])\n"                                                 \
               "mov %%r15, 24(%[gpr])\n"                                                 \
               : "=a"(r)                                                                 \
               : "a"(static_cast<long>(SYS_read)), "D"(g_vector_pipe[0]), "S"(&c), "d"(1L), \
                 [pat] "r"(kPattern), [vec] "r"(vec), [gpr] "r"(gpr)                      \
               : "rcx", "r11", "r12", "r13", "r14", "r15", "xmm8", "memory")

void VectorThread() {
  prctl(PR_SET_NAME, "vector", 0, 0, 0);
  g_vector_tid = static_cast<pid_t>(syscall(SYS_gettid));
  const bool avx = __builtin_cpu_supports("avx");
  alignas(32) static const uint64_t kPattern[4] = {0x0123456789abcdefULL, 0xfedcba9876543210ULL,
                                                   0x1122334455667788ULL, 0x99aabbccddeeff00ULL};
  for (;;) {
    alignas(32) uint64_t vec[4] = {};
    uint64_t gpr[4] = {};
    char c = 0;
    long r;
    if (avx) {
      CF_VECTOR_READ("vmovdqa", "ymm8");
    } else {
      CF_VECTOR_READ("movdqa", "xmm8");
      vec[2] = kPattern[2];
      vec[3] = kPattern[3];
    }
    // No signal handler here: an EINTR would be the injection's doing.
    bool ok = r == 1 && c == 'v';
    for (int i = 0; i < 4; ++i) ok = ok && vec[i] == kPattern[i];
    ok = ok && gpr[0] == 0x1111111111111111ULL && gpr[1] == 0x2222222222222222ULL &&
         gpr[2] == 0x3333333333333333ULL && gpr[3] == 0x4444444444444444ULL;
    if (ok) {
      snprintf(g_vector_verdict, sizeof(g_vector_verdict), "vector ok");
    } else {
      snprintf(g_vector_verdict, sizeof(g_vector_verdict),
               "vector bad r=%ld c=%d v=%lx,%lx,%lx,%lx g=%lx,%lx,%lx,%lx", r, c,
               static_cast<unsigned long>(vec[0]), static_cast<unsigned long>(vec[1]),
               static_cast<unsigned long>(vec[2]), static_cast<unsigned long>(vec[3]),
               static_cast<unsigned long>(gpr[0]), static_cast<unsigned long>(gpr[1]),
               static_cast<unsigned long>(gpr[2]), static_cast<unsigned long>(gpr[3]));
    }
    if (write(g_vector_ack[1], "a", 1) != 1) abort();
  }
}

}  // namespace

extern "C" {
TT_FN void* tt_produce() { return malloc(kCrossSize); }
TT_FN void tt_consume(void* p) { free(p); }
TT_FN void* tt_keep() { return malloc(kKeepSize); }
}

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  // Before anything: the objects that the window will see freed.
  std::vector<void*> old;
  for (int i = 0; i < kOld; ++i) old.push_back(malloc(kOldSize));
  Worker producer("producer");
  Worker consumer("consumer");
  // Threads asleep in a system call (one of them is the one stopped).
  int sleep_pipes[2][2];
  int sleep_ack[2];
  if (pipe(sleep_ack) != 0) return 1;
  for (auto& p : sleep_pipes) {
    if (pipe(p) != 0) return 1;
    std::thread([fd = p[0], ack = sleep_ack[1]] {
      prctl(PR_SET_NAME, "sleeper", 0, 0, 0);
      char c;
      while (read(fd, &c, 1) == 1) {
        if (write(ack, &c, 1) != 1) abort();
      }
    }).detach();
  }
  // Thread "small": a 64 KB stack.
  int small_pipe[2], small_ack[2];
  if (pipe(small_pipe) != 0 || pipe(small_ack) != 0) return 1;
  static std::atomic<pid_t> small_tid{0};
  static int small_fds[2];
  small_fds[0] = small_pipe[0];
  small_fds[1] = small_ack[1];
  {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t small;
    if (pthread_create(&small, &attr, [](void*) -> void* {
          prctl(PR_SET_NAME, "small", 0, 0, 0);
          small_tid = static_cast<pid_t>(syscall(SYS_gettid));
          char c;
          while (read(small_fds[0], &c, 1) == 1) {
            if (write(small_fds[1], &c, 1) != 1) abort();
          }
          return nullptr;
        }, nullptr) != 0) {
      return 1;
    }
    pthread_attr_destroy(&attr);
    while (small_tid.load() == 0) sched_yield();
  }
  if (pipe(g_vector_pipe) != 0 || pipe(g_vector_ack) != 0) return 1;
  std::thread(VectorThread).detach();
  while (g_vector_tid.load() == 0) sched_yield();
  // Threads busy allocating: each keeps a few blocks and churns them.
  for (int t = 0; t < 2; ++t) {
    std::thread([t] {
      prctl(PR_SET_NAME, "busy", 0, 0, 0);
      void* keep[16] = {};
      unsigned i = 0;
      while (!g_quit.load(std::memory_order_relaxed)) {
        free(keep[i % 16]);
        keep[i % 16] = malloc(16 + (i % 512));
        g_busy_calls[t].fetch_add(1, std::memory_order_release);
        ++i;
      }
      for (void* p : keep) free(p);
    }).detach();
  }
  if (pipe(g_stuck_pipe) != 0) return 1;
  void* plugin = nullptr;
  void* (*plugin_where)() = nullptr;
  // The executable's own GOT entry for malloc, read through a volatile
  // pointer so that the compiler loads it each time.
  void* (*volatile exe_malloc)(size_t) = malloc;
  printf("ready %d\n", static_cast<int>(getpid()));
  char line[4096];
  std::thread stuck_thread;
  while (fgets(line, sizeof(line), stdin) != nullptr) {
    std::string cmd(line);
    while (!cmd.empty() && (cmd.back() == '\n' || cmd.back() == '\r')) cmd.pop_back();
    if (cmd == "where") {
      exe_malloc = malloc;
      printf("where %s %s\n", ObjectOf(reinterpret_cast<void*>(exe_malloc)),
             plugin_where != nullptr ? ObjectOf(plugin_where()) : "-");
    } else if (cmd == "cross") {
      void* items[kCross];
      producer.Do([&] {
        for (void*& p : items) p = tt_produce();
      });
      consumer.Do([&] {
        for (void* p : items) tt_consume(p);
      });
      printf("cross\n");
    } else if (cmd == "freeold") {
      // The addresses first (printing allocates nothing per address here).
      std::string answer = "freeold";
      char hex[32];
      for (void* p : old) {
        snprintf(hex, sizeof(hex), " %lx", reinterpret_cast<unsigned long>(p));
        answer += hex;
      }
      consumer.Do([&] {
        for (void* p : old) free(p);
      });
      old.clear();
      printf("%s\n", answer.c_str());
    } else if (cmd == "keep") {
      producer.Do([&] {
        for (int i = 0; i < kKeep; ++i) (void)!tt_keep();
      });
      printf("keep\n");
    } else if (cmd.rfind("plugin ", 0) == 0) {
      plugin = dlopen(cmd.substr(7).c_str(), RTLD_NOW | RTLD_LOCAL);
      if (plugin == nullptr) {
        printf("plugin-error %s\n", dlerror());
        continue;
      }
      plugin_where = reinterpret_cast<void* (*)()>(dlsym(plugin, "plugin_where_malloc"));
      auto alloc = reinterpret_cast<void* (*)(size_t)>(dlsym(plugin, "plugin_alloc"));
      // The tracer patches a new module within its poll period (20 ms):
      // wait for that, bounded (10 s), by looking at the entry itself.
      bool reached = false;
      for (int i = 0; i < 10000 && !reached; ++i) {
        reached = strstr(ObjectOf(plugin_where()), "crossfree-trace") != nullptr;
        if (!reached) {
          timespec ts{0, 1'000'000};
          nanosleep(&ts, nullptr);
        }
      }
      void* items[kPlugin];
      for (void*& p : items) p = alloc(kPluginSize);
      for (void* p : items) free(p);
      printf(reached ? "plugin\n" : "plugin-not-patched\n");
    } else if (cmd == "stuck") {
      stuck_thread = std::thread([] {
        prctl(PR_SET_NAME, "stuck", 0, 0, 0);
        std::set_new_handler(StuckHandler);
        try {
          volatile size_t huge = size_t{1} << 62;
          void* p = ::operator new(huge);
          ::operator delete(p);
        } catch (const std::bad_alloc&) {
        }
        printf("unstuck\n");
      });
    } else if (cmd == "unstick") {
      if (write(g_stuck_pipe[1], "x", 1) != 1) return 1;
      stuck_thread.join();
    } else if (cmd == "fork") {
      // A child that allocates and leaves through _exit (whose hook runs
      // the tracer's exit path) and through exit().
      int statuses[2] = {-1, -1};
      for (int how = 0; how < 2; ++how) {
        pid_t child = fork();
        if (child == 0) {
          for (int i = 0; i < 100; ++i) free(malloc(kCrossSize));
          if (how == 0) _exit(7);
          exit(8);
        }
        int status = 0;
        if (child < 0 || waitpid(child, &status, 0) != child) return 1;
        statuses[how] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      printf("forked %d %d\n", statuses[0], statuses[1]);
    } else if (cmd == "handover") {
      // A prefork server's new worker: a child of a process the tracer
      // may have been attached to before.
      pid_t child = fork();
      if (child == 0) {
        printf("ready %d\n", static_cast<int>(getpid()));
        continue;
      }
      int status = 0;
      if (child < 0 || waitpid(child, &status, 0) != child) return 1;
      _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    } else if (cmd == "mainalloc") {
      for (int i = 0; i < kCross; ++i) {
        void* p = malloc(kCrossSize);
        TtSink(p);
        free(p);
      }
      printf("mainalloc\n");
    } else if (cmd == "exec") {
      g_quit.store(true);
      // execv: a hooked exec function (execl reaches execve inside libc).
      char* argv[] = {const_cast<char*>("cat"), nullptr};
      execv("/bin/cat", argv);
      return 1;
    } else if (cmd == "rawexec") {
      g_quit.store(true);
      char* argv[] = {const_cast<char*>("cat"), nullptr};
      syscall(SYS_execve, "/bin/cat", argv, environ);
      return 1;
    } else if (cmd == "sleepers") {
      for (auto& p : sleep_pipes) {
        if (write(p[1], "s", 1) != 1) return 1;
      }
      printf("sleepers %d\n", AwaitBytes(sleep_ack[0], 2));
    } else if (cmd == "smalltid") {
      printf("smalltid %d\n", static_cast<int>(small_tid.load()));
    } else if (cmd == "small") {
      if (write(small_pipe[1], "s", 1) != 1) return 1;
      printf("small %d\n", AwaitBytes(small_ack[0], 1));
    } else if (cmd == "vectortid") {
      printf("vectortid %d\n", static_cast<int>(g_vector_tid.load()));
    } else if (cmd == "vector") {
      if (write(g_vector_pipe[1], "v", 1) != 1) return 1;
      printf("%s\n", AwaitBytes(g_vector_ack[0], 1) == 1 ? g_vector_verdict : "vector silent");
    } else if (cmd == "busy") {
      // Two more returns than now: at least one call began after this.
      unsigned want[2];
      for (int t = 0; t < 2; ++t) want[t] = g_busy_calls[t].load(std::memory_order_acquire) + 2;
      timespec start, now;
      clock_gettime(CLOCK_MONOTONIC, &start);
      int done = 0;
      for (;;) {
        done = 0;
        for (int t = 0; t < 2; ++t) {
          done += g_busy_calls[t].load(std::memory_order_acquire) - want[t] < (1u << 31) ? 1 : 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (done == 2 || now.tv_sec - start.tv_sec > 10) break;
        sched_yield();
      }
      printf("busy %d\n", done);
    } else if (cmd == "exit") {
      g_quit.store(true);
      exit(0);
    } else {
      printf("unknown %s\n", cmd.c_str());
    }
  }
  g_quit.store(true);
  return 0;
}
