// SPDX-License-Identifier: Apache-2.0
// crossfree-workload: a multi-threaded allocation workload whose counts of
// allocations, frees and cross-thread frees are known exactly. Used by the
// tracer and analyzer tests, scripts/demo and scripts/bench/tracer.
//
// Producers allocate objects (new[] and, for every 4th, malloc) and hand
// them through lock-free single-producer/single-consumer rings to consumer
// threads, which free them (cross-thread); every object also comes with
// --churn allocations that the producer frees itself (same-thread). The
// workload's own plumbing (rings, thread start-up) avoids malloc where it
// can: rings are mmap'd and threads are started with pthread_create, so the
// process's other allocations are only the C runtime's own few.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

enum class Mode { kProducerConsumer, kChurn, kMixed };

struct Options {
  Mode mode = Mode::kProducerConsumer;
  int producers = 2;
  int consumers = 2;
  long objects = 200000;
  int churn = 1;
  long min_size = 16;
  long max_size = 512;
  uint64_t seed = 1;
  // Extra frames between each thread's start and its loop (--nest), as in
  // server code; with it, object allocations also go through 0-3 more
  // frames (k % 4), so consecutive stacks differ near the top.
  int nest = 0;
  // --fns all: objects come from malloc, calloc, new and new[] in turn
  // (k % 4) instead of new[] with every 4th from malloc.
  bool all_fns = false;
  // --sizes A,B,...: each object's size is one of these, drawn at random,
  // instead of uniform in [--min-size, --max-size] (a few classes, as a
  // server's message types). At most 16.
  long sizes[16] = {};
  int size_count = 0;
};

struct Item {
  void* ptr;
  uint64_t from_malloc;  // 1: free(), 0: delete[], 2: delete
};

// Single-producer/single-consumer ring; one per (producer, consumer) pair.
constexpr uint32_t kRingSize = 1024;
struct alignas(64) Ring {
  alignas(64) std::atomic<uint32_t> head;  // next slot the consumer reads
  alignas(64) std::atomic<uint32_t> tail;  // next slot the producer writes
  alignas(64) std::atomic<bool> closed;
  Item items[kRingSize];
};

Options g_options;
Ring* g_rings = nullptr;  // g_rings[p * consumers + c]

Ring& RingFor(int producer, int consumer) {
  return g_rings[producer * g_options.consumers + consumer];
}

uint64_t NextRandom(uint64_t* state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

// Keeps the compiler from pairing up and removing a new/delete.
inline void Escape(void* p) { asm volatile("" : : "r"(p) : "memory"); }

// The allocation and free sites, kept out of line so that reports group by
// them: ObjectAllocate / ObjectFree for objects that cross threads (in
// producer-consumer and mixed modes), ChurnAllocate / ChurnFree for the
// same-thread churn.
__attribute__((noinline)) Item ObjectAllocate(size_t size, int kind) {
  void* p;
  uint64_t how = 0;
  switch (kind) {
    case 1: p = std::malloc(size); how = 1; break;
    case 2: p = std::calloc(1, size); how = 1; break;
    case 3: p = ::operator new(size); how = 2; break;  // like `new T` of that size
    default: p = new char[size]; break;
  }
  std::memset(p, 0x5a, size < 64 ? size : 64);
  Escape(p);
  return {p, how};
}

__attribute__((noinline)) void ObjectFree(Item item) {
  Escape(item.ptr);
  if (item.from_malloc == 1) {
    std::free(item.ptr);
  } else if (item.from_malloc == 2) {
    ::operator delete(item.ptr);
  } else {
    delete[] static_cast<char*>(item.ptr);
  }
}

// ObjectAllocate under `extra` more frames (--nest: 0-3 per object).
__attribute__((noinline)) Item AllocateDeeper(int extra, size_t size, int kind) {
  Item item = extra <= 0 ? ObjectAllocate(size, kind) : AllocateDeeper(extra - 1, size, kind);
  asm volatile("" : : "r"(&item) : "memory");  // no tail call: the frame stays
  return item;
}

__attribute__((noinline)) void Churn(size_t size, bool use_malloc) {
  if (use_malloc) {
    void* p = std::malloc(size);
    Escape(p);
    std::free(p);
  } else {
    char* p = new char[size];
    Escape(p);
    delete[] p;
  }
}

void SetThreadName(const char* role, int index) {
  char name[16];
  std::snprintf(name, sizeof(name), "%s-%d", role, index);
  pthread_setname_np(pthread_self(), name);
}

bool Crosses(long k) {
  switch (g_options.mode) {
    case Mode::kProducerConsumer: return true;
    case Mode::kChurn: return false;
    case Mode::kMixed: return k % 2 == 0;
  }
  return false;
}

void ProducerLoop(int p);
void ConsumerLoop(int c);

// Runs fn(index) `frames` calls below the caller (--nest).
__attribute__((noinline)) void Nested(int frames, void (*fn)(int), int index) {
  if (frames <= 0) {
    fn(index);
  } else {
    Nested(frames - 1, fn, index);
  }
  asm volatile("" : : : "memory");  // no tail call: each level keeps a frame
}

// The kind of allocation for object k: 0 new[], 1 malloc, 2 calloc, 3 new.
int ObjectKind(long k) {
  if (g_options.all_fns) return static_cast<int>(k % 4);
  return k % 4 == 3 ? 1 : 0;
}

// A thread of the workload: named "<role>-<index>", it runs its loop
// --nest frames below its entry.
struct ThreadRole {
  const char* role;
  void (*loop)(int);
  int index;
};

void* RoleMain(void* arg) {
  const ThreadRole& r = *static_cast<const ThreadRole*>(arg);
  SetThreadName(r.role, r.index);
  Nested(g_options.nest, r.loop, r.index);
  return nullptr;
}

void ProducerLoop(int p) {
  const Options& o = g_options;
  uint64_t rng = o.seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(p) + 1;
  const uint64_t span = static_cast<uint64_t>(o.max_size - o.min_size + 1);
  // Objects this producer keeps and frees itself in mixed/churn mode are
  // freed after a short delay, like short-lived request state.
  constexpr int kWindow = 16;
  Item held[kWindow] = {};
  int next_consumer = p % (o.consumers > 0 ? o.consumers : 1);
  for (long k = 0; k < o.objects; ++k) {
    size_t size = o.size_count > 0
                      ? static_cast<size_t>(o.sizes[NextRandom(&rng) % static_cast<uint64_t>(o.size_count)])
                      : static_cast<size_t>(o.min_size) + NextRandom(&rng) % span;
    Item item = g_options.nest > 0 ? AllocateDeeper(static_cast<int>(k % 4), size, ObjectKind(k))
                                   : ObjectAllocate(size, ObjectKind(k));
    if (Crosses(k)) {
      Ring& ring = RingFor(p, next_consumer);
      next_consumer = (next_consumer + 1) % o.consumers;
      uint32_t tail = ring.tail.load(std::memory_order_relaxed);
      while (tail - ring.head.load(std::memory_order_acquire) >= kRingSize) sched_yield();
      ring.items[tail % kRingSize] = item;
      ring.tail.store(tail + 1, std::memory_order_release);
    } else {
      Item& slot = held[k % kWindow];
      if (slot.ptr != nullptr) ObjectFree(slot);
      slot = item;
    }
    for (int c = 0; c < o.churn; ++c) {
      size_t churn_size = static_cast<size_t>(o.min_size) + NextRandom(&rng) % span;
      Churn(churn_size, (k + c) % 4 == 1);
    }
  }
  for (Item& slot : held) {
    if (slot.ptr != nullptr) ObjectFree(slot);
  }
  for (int c = 0; c < o.consumers; ++c) RingFor(p, c).closed.store(true, std::memory_order_release);
}

void ConsumerLoop(int c) {
  const Options& o = g_options;
  for (;;) {
    bool all_closed = true;
    bool any = false;
    for (int p = 0; p < o.producers; ++p) {
      Ring& ring = RingFor(p, c);
      // Read `closed` before the indices: once closed, tail is final.
      bool closed = ring.closed.load(std::memory_order_acquire);
      uint32_t head = ring.head.load(std::memory_order_relaxed);
      uint32_t tail = ring.tail.load(std::memory_order_acquire);
      while (head != tail) {
        ObjectFree(ring.items[head % kRingSize]);
        ++head;
        any = true;
      }
      ring.head.store(head, std::memory_order_release);
      if (!closed) all_closed = false;
    }
    if (all_closed && !any) return;
    if (!any) sched_yield();
  }
}

[[noreturn]] void Usage(const char* problem) {
  std::fprintf(stderr,
               "crossfree-workload: %s\n"
               "usage: crossfree-workload [--mode producer-consumer|churn|mixed]\n"
               "  [--producers N] [--consumers N] [--objects N] [--churn N]\n"
               "  [--min-size BYTES] [--max-size BYTES] [--sizes A,B,...] [--seed N]\n"
               "  [--nest FRAMES] [--fns classic|all]\n",
               problem);
  std::exit(2);
}

long ParseNumber(const char* flag, const char* text, long min, long max) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < min || value > max) {
    char problem[160];
    std::snprintf(problem, sizeof(problem), "%s wants a number in [%ld, %ld], got '%s'", flag,
                  min, max, text);
    Usage(problem);
  }
  return value;
}

// "32,64,200" into sizes[]; returns how many (1-16).
int ParseSizes(const char* text, long* sizes) {
  int n = 0;
  std::string_view rest(text);
  while (!rest.empty()) {
    if (n == 16) Usage("--sizes takes at most 16 sizes");
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    sizes[n++] = ParseNumber("--sizes", item.c_str(), 1, 1L << 30);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (n == 0) Usage("--sizes wants at least one size");
  return n;
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (std::strcmp(flag, "--help") == 0 || std::strcmp(flag, "-h") == 0) Usage("help");
    if (i + 1 >= argc) {
      char problem[160];
      std::snprintf(problem, sizeof(problem), "unknown flag or missing value: '%s'", flag);
      Usage(problem);
    }
    const char* value = argv[++i];
    if (std::strcmp(flag, "--mode") == 0) {
      if (std::strcmp(value, "producer-consumer") == 0) {
        o.mode = Mode::kProducerConsumer;
      } else if (std::strcmp(value, "churn") == 0) {
        o.mode = Mode::kChurn;
      } else if (std::strcmp(value, "mixed") == 0) {
        o.mode = Mode::kMixed;
      } else {
        Usage("--mode must be producer-consumer, churn or mixed");
      }
    } else if (std::strcmp(flag, "--producers") == 0) {
      o.producers = static_cast<int>(ParseNumber(flag, value, 1, 64));
    } else if (std::strcmp(flag, "--consumers") == 0) {
      o.consumers = static_cast<int>(ParseNumber(flag, value, 1, 64));
    } else if (std::strcmp(flag, "--objects") == 0) {
      o.objects = ParseNumber(flag, value, 0, 1L << 40);
    } else if (std::strcmp(flag, "--churn") == 0) {
      o.churn = static_cast<int>(ParseNumber(flag, value, 0, 1000));
    } else if (std::strcmp(flag, "--min-size") == 0) {
      o.min_size = ParseNumber(flag, value, 1, 1L << 30);
    } else if (std::strcmp(flag, "--max-size") == 0) {
      o.max_size = ParseNumber(flag, value, 1, 1L << 30);
    } else if (std::strcmp(flag, "--sizes") == 0) {
      o.size_count = ParseSizes(value, o.sizes);
    } else if (std::strcmp(flag, "--nest") == 0) {
      o.nest = static_cast<int>(ParseNumber(flag, value, 0, 200));
    } else if (std::strcmp(flag, "--fns") == 0) {
      if (std::strcmp(value, "all") == 0) {
        o.all_fns = true;
      } else if (std::strcmp(value, "classic") == 0) {
        o.all_fns = false;
      } else {
        Usage("--fns must be classic or all");
      }
    } else if (std::strcmp(flag, "--seed") == 0) {
      o.seed = static_cast<uint64_t>(ParseNumber(flag, value, 0, 1L << 62));
    } else {
      char problem[160];
      std::snprintf(problem, sizeof(problem), "unknown flag '%s'", flag);
      Usage(problem);
    }
  }
  if (o.min_size > o.max_size) Usage("--min-size must not exceed --max-size");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  g_options = ParseOptions(argc, argv);
  const Options& o = g_options;
  // Churn mode has no consumers: nothing crosses threads.
  const int consumers = o.mode == Mode::kChurn ? 0 : o.consumers;
  size_t ring_bytes = sizeof(Ring) * static_cast<size_t>(o.producers) * o.consumers;
  void* rings = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (rings == MAP_FAILED) {
    std::perror("crossfree-workload: mmap");
    return 1;
  }
  g_rings = static_cast<Ring*>(rings);  // zero-filled: empty, open rings

  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  pthread_t threads[128];
  ThreadRole roles[128];
  int started = 0;
  for (int c = 0; c < consumers; ++c) roles[started++] = {"consumer", ConsumerLoop, c};
  for (int p = 0; p < o.producers; ++p) roles[started++] = {"producer", ProducerLoop, p};
  for (int i = 0; i < started; ++i) pthread_create(&threads[i], nullptr, RoleMain, &roles[i]);
  for (int i = 0; i < started; ++i) pthread_join(threads[i], nullptr);
  timespec end{};
  clock_gettime(CLOCK_MONOTONIC, &end);

  long long objects = static_cast<long long>(o.producers) * o.objects;
  long long crossing = 0;
  if (o.mode == Mode::kProducerConsumer) crossing = objects;
  if (o.mode == Mode::kMixed) crossing = static_cast<long long>(o.producers) * ((o.objects + 1) / 2);
  long long allocs = objects * (1 + o.churn);
  // Stack buffer + write(2): no stdio buffer is allocated for the report.
  char line[256];
  int n = std::snprintf(line, sizeof(line),
                        "expected: allocs=%lld frees=%lld cross_thread=%lld same_thread=%lld\n",
                        allocs, allocs, crossing, allocs - crossing);
  if (write(STDOUT_FILENO, line, n) != n) return 1;
  double seconds = static_cast<double>(end.tv_sec - start.tv_sec) +
                   static_cast<double>(end.tv_nsec - start.tv_nsec) / 1e9;
  n = std::snprintf(line, sizeof(line), "workload: %.3f s\n", seconds);
  if (write(STDERR_FILENO, line, n) != n) return 1;
  munmap(rings, ring_bytes);
  return 0;
}
