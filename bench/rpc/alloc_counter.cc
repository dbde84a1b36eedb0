// SPDX-License-Identifier: Apache-2.0
// Counting operator new/delete. Everything here avoids allocating: a fixed
// open-addressing table guarded by a spinlock holds address -> thread id.
#include "bench/rpc/alloc_counter.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace crossfree::rpc::testing {
namespace {

constexpr size_t kSlots = size_t{1} << 20;
struct Slot {
  uintptr_t addr;  // 0 = empty
  int32_t tid;
};
Slot g_table[kSlots];
std::atomic<bool> g_recording{false};
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
std::atomic<long> g_allocs{0};

constexpr int kMaxPairs = 256;
struct Pair {
  int32_t alloc_tid;
  int32_t free_tid;
  long count;
};
Pair g_pairs[kMaxPairs];
int g_num_pairs = 0;

// Allocations per thread while recording (guarded by g_lock).
constexpr int kMaxThreads = 256;
struct ThreadCount {
  int32_t tid;
  long count;
};
ThreadCount g_thread_counts[kMaxThreads];
int g_num_threads = 0;

thread_local int32_t t_tid = 0;
int32_t Tid() {
  if (t_tid == 0) t_tid = static_cast<int32_t>(syscall(SYS_gettid));
  return t_tid;
}

size_t Hash(uintptr_t a) { return (a >> 4) * 0x9E3779B97F4A7C15ull >> 44; }

void Lock() {
  while (g_lock.test_and_set(std::memory_order_acquire)) {
  }
}
void Unlock() { g_lock.clear(std::memory_order_release); }

// Copies the first `count` entries of a table the hooks write under g_lock
// and returns how many: the copy is then read without the lock, since
// naming its threads allocates (and so re-enters the hooks).
template <typename T, size_t N>
int CopyUnderLock(const T (&table)[N], const int& count, T (&copy)[N]) {
  Lock();
  const int n = count;
  memcpy(copy, table, sizeof(T) * n);
  Unlock();
  return n;
}

void Insert(uintptr_t a, int32_t tid) {
  Lock();
  int t = 0;
  while (t < g_num_threads && g_thread_counts[t].tid != tid) ++t;
  if (t == g_num_threads && g_num_threads < kMaxThreads) g_thread_counts[g_num_threads++] = {tid, 0};
  if (t < kMaxThreads) g_thread_counts[t].count++;
  size_t i = Hash(a) & (kSlots - 1);
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    if (g_table[i].addr == 0 || g_table[i].addr == a) {
      g_table[i] = Slot{a, tid};
      break;
    }
  }
  Unlock();
}

// Removes `a`; returns its thread id or 0 if unknown. Backward-shift
// deletion keeps probe chains intact without tombstones.
int32_t Remove(uintptr_t a) {
  Lock();
  size_t i = Hash(a) & (kSlots - 1);
  int32_t tid = 0;
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    if (g_table[i].addr == 0) break;
    if (g_table[i].addr == a) {
      tid = g_table[i].tid;
      size_t hole = i;
      size_t j = (i + 1) & (kSlots - 1);
      while (g_table[j].addr != 0) {
        size_t home = Hash(g_table[j].addr) & (kSlots - 1);
        // Move j into the hole if its home is not in (hole, j].
        bool between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!between) {
          g_table[hole] = g_table[j];
          hole = j;
        }
        j = (j + 1) & (kSlots - 1);
      }
      g_table[hole].addr = 0;
      break;
    }
  }
  if (tid != 0 && tid != Tid()) {
    int k = 0;
    for (; k < g_num_pairs; ++k) {
      if (g_pairs[k].alloc_tid == tid && g_pairs[k].free_tid == Tid()) break;
    }
    if (k == g_num_pairs && g_num_pairs < kMaxPairs) g_pairs[g_num_pairs++] = Pair{tid, Tid(), 0};
    if (k < kMaxPairs) g_pairs[k].count++;
  }
  Unlock();
  return tid;
}

void* Allocate(size_t size) {
  void* p = malloc(size == 0 ? 1 : size);
  if (p == nullptr) abort();
  if (g_recording.load(std::memory_order_relaxed)) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    Insert(reinterpret_cast<uintptr_t>(p), Tid());
  }
  return p;
}

void* AllocateAligned(size_t size, size_t align) {
  void* p = nullptr;
  if (posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, size == 0 ? 1 : size) != 0) {
    abort();
  }
  if (g_recording.load(std::memory_order_relaxed)) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    Insert(reinterpret_cast<uintptr_t>(p), Tid());
  }
  return p;
}

void Deallocate(void* p) {
  if (p == nullptr) return;
  if (g_recording.load(std::memory_order_relaxed)) Remove(reinterpret_cast<uintptr_t>(p));
  free(p);
}

std::string Role(int32_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
  FILE* f = fopen(path, "r");
  std::string name = "exited";
  if (f != nullptr) {
    char buf[64] = {0};
    if (fgets(buf, sizeof(buf), f) != nullptr) {
      name = buf;
      while (!name.empty() && name.back() == '\n') name.pop_back();
    }
    fclose(f);
  }
  std::string folded;
  for (size_t i = 0; i < name.size(); ++i) {
    if (isdigit(static_cast<unsigned char>(name[i]))) {
      folded += 'N';
      while (i + 1 < name.size() && isdigit(static_cast<unsigned char>(name[i + 1]))) ++i;
    } else {
      folded += name[i];
    }
  }
  return folded;
}

}  // namespace

void StartAllocRecording() {
  Lock();
  memset(g_table, 0, sizeof(g_table));
  g_num_pairs = 0;
  g_num_threads = 0;
  Unlock();
  g_allocs.store(0);
  g_recording.store(true);
}

std::map<std::string, long> StopAllocRecording() {
  g_recording.store(false);
  Pair pairs[kMaxPairs];
  const int n = CopyUnderLock(g_pairs, g_num_pairs, pairs);
  std::map<std::string, long> out;
  for (int i = 0; i < n; ++i) {
    out[Role(pairs[i].alloc_tid) + " -> " + Role(pairs[i].free_tid)] += pairs[i].count;
  }
  return out;
}

long RecordedAllocations() { return g_allocs.load(); }

std::map<std::string, long> RecordedAllocationsByRole() {
  ThreadCount counts[kMaxThreads];
  const int n = CopyUnderLock(g_thread_counts, g_num_threads, counts);
  std::map<std::string, long> out;
  for (int i = 0; i < n; ++i) out[Role(counts[i].tid)] += counts[i].count;
  return out;
}

}  // namespace crossfree::rpc::testing

// Replacements of the global allocation functions for this test binary.
using crossfree::rpc::testing::Allocate;
using crossfree::rpc::testing::AllocateAligned;
using crossfree::rpc::testing::Deallocate;

void* operator new(size_t n) { return Allocate(n); }
void* operator new[](size_t n) { return Allocate(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return Allocate(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return Allocate(n); }
void* operator new(size_t n, std::align_val_t a) { return AllocateAligned(n, size_t(a)); }
void* operator new[](size_t n, std::align_val_t a) { return AllocateAligned(n, size_t(a)); }
void operator delete(void* p) noexcept { Deallocate(p); }
void operator delete[](void* p) noexcept { Deallocate(p); }
void operator delete(void* p, size_t) noexcept { Deallocate(p); }
void operator delete[](void* p, size_t) noexcept { Deallocate(p); }
void operator delete(void* p, std::align_val_t) noexcept { Deallocate(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Deallocate(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { Deallocate(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { Deallocate(p); }
