// SPDX-License-Identifier: Apache-2.0
// The trace clock (tracer/clock.h) and the /proc/self/maps lookup it uses
// to find the hypervisor's stable-TSC flag (tracer/sys.h), linked in.
#include <sched.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tracer/clock.h"
#include "tracer/sys.h"

using crossfree::tracer::FindMappingStart;
using crossfree::tracer::InitFastClock;
using crossfree::tracer::MonotonicNs;
using crossfree::tracer::NowNs;

namespace {

// Maps n separate pages (alternating protections, so the kernel cannot
// merge them into one line) to make /proc/self/maps longer than the
// lookup's 4 KiB buffer. Unmapped by the destructor.
struct ManyMappings {
  explicit ManyMappings(int n) {
    for (int i = 0; i < n; ++i) Add();
  }
  void Add() {
    void* p = mmap(nullptr, 4096, pages.size() % 2 == 0 ? PROT_READ : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    pages.push_back(p);
  }
  ~ManyMappings() {
    for (void* p : pages) munmap(p, 4096);
  }
  std::vector<void*> pages;
};

}  // namespace

TEST_CASE("FindMappingStart finds the vDSO where the auxiliary vector puts it") {
  const auto vdso = static_cast<uintptr_t>(getauxval(AT_SYSINFO_EHDR));
  REQUIRE(vdso != 0);
  CHECK(FindMappingStart("[vdso]") == vdso);
  CHECK(FindMappingStart("[no such mapping]") == 0);
  CHECK(FindMappingStart("vdso]") == vdso);  // a line's end, not a word

  SECTION("in a maps file many times longer than its buffer") {
    ManyMappings many(600);
    CHECK(FindMappingStart("[vdso]") == vdso);
    int local = 0;
    const uintptr_t stack = FindMappingStart("[stack]");
    CHECK(stack != 0);
    CHECK(stack <= reinterpret_cast<uintptr_t>(&local));
    CHECK(FindMappingStart("[no such mapping]") == 0);
  }
}

// Two threads hand a token back and forth; each stamps the clock after it
// sees the token and before it passes it on. Whatever clock InitFastClock
// chose (the TSC when the kernel or the hypervisor vouches for it, else
// clock_gettime), a stamp taken after seeing another thread's stamp must
// not be smaller: that is the ordering rule's third point, across cores.
TEST_CASE("the trace clock never runs backwards across a hand-off between threads") {
  const bool tsc = InitFastClock();
  INFO("TSC clock in use: " << tsc);
  constexpr int kRounds = 100000;
  std::atomic<int> turn{0};
  std::atomic<uint64_t> last{0};
  std::atomic<long> backwards{0};
  auto run = [&](int me) {
    for (int i = 0; i < kRounds; ++i) {
      // Yielding: under a loaded ctest both threads may share one CPU.
      while (turn.load(std::memory_order_acquire) != me) sched_yield();
      const uint64_t seen = last.load(std::memory_order_relaxed);
      const uint64_t now = NowNs();
      if (now < seen) backwards.fetch_add(1, std::memory_order_relaxed);
      last.store(NowNs(), std::memory_order_relaxed);
      turn.store(1 - me, std::memory_order_release);
    }
  };
  std::thread other([&] { run(1); });
  run(0);
  other.join();
  CHECK(backwards.load() == 0);
}

// Each reading of the trace clock lies between two CLOCK_MONOTONIC
// readings around it, give or take 100 us (the TSC clock's calibration
// error, ~1e-5, is a few us over these 50 ms; preemption only widens the
// bracket).
TEST_CASE("the trace clock keeps to CLOCK_MONOTONIC") {
  InitFastClock();
  constexpr uint64_t kSlack = 100'000;
  for (int i = 0; i < 2; ++i) {
    const uint64_t before = MonotonicNs();
    const uint64_t ours = NowNs();
    const uint64_t after = MonotonicNs();
    CHECK(ours + kSlack >= before);
    CHECK(ours <= after + kSlack);
    timespec pause{0, 50'000'000};
    nanosleep(&pause, nullptr);
  }
}
