// SPDX-License-Identifier: Apache-2.0
// Known answers for the lifecycle signals of the pairing pass (PairCounts:
// thread_bounded, edge_bounded), one synthetic trace per signal, each with
// steady-state objects beside it that must stay steady.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/pairing/pairing.h"
#include "analyzer/pairing/trace_set.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer {
namespace {

using testing::SyntheticTrace;

constexpr uint32_t kPid = 700;
constexpr uint32_t kMain = 700;
constexpr uint32_t kWorker = 701;
constexpr uint32_t kReactor = 702;
constexpr uint64_t kMs = 1'000'000;

// A run's events, written in time order (each thread's chunks must be):
// the tests add them in whatever order reads best.
struct Events {
  struct Op {
    uint64_t ts;
    int kind;  // 0 alloc, 1 free, 2 thread exit
    uint32_t tid;
    uint64_t address;
    uint32_t stack;
  };
  std::vector<Op> ops;
  void Alloc(uint32_t tid, uint64_t ts, uint64_t address, uint64_t, uint32_t stack) {
    ops.push_back({ts, 0, tid, address, stack});
  }
  void Free(uint32_t tid, uint64_t ts, uint64_t address, uint32_t stack) {
    ops.push_back({ts, 1, tid, address, stack});
  }
  void ThreadExit(uint32_t tid, uint64_t ts) { ops.push_back({ts, 2, tid, 0, 0}); }
  // Objects [first, last) of a run of 64-byte objects from `base`: object i
  // allocated on `from` at alloc_ts + i (stack alloc_stack), freed on `to` at
  // free_ts + i (stack alloc_stack + 1).
  void Handoff(uint32_t from, uint32_t to, uint64_t first, uint64_t last, uint64_t base,
               uint64_t alloc_ts, uint64_t free_ts, uint32_t alloc_stack) {
    for (uint64_t i = first; i < last; ++i) Alloc(from, alloc_ts + i, base + i * 64, 64, alloc_stack);
    for (uint64_t i = first; i < last; ++i) Free(to, free_ts + i, base + i * 64, alloc_stack + 1);
  }
  SyntheticTrace Write() {
    std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.ts < b.ts; });
    SyntheticTrace t(kPid);
    for (const Op& o : ops) {
      if (o.kind == 0) t.Alloc(o.tid, o.ts, o.address, 64, o.stack);
      if (o.kind == 1) t.Free(o.tid, o.ts, o.address, o.stack);
      if (o.kind == 2) t.ThreadExit(o.tid, o.ts);
    }
    return t;
  }
};

// Per-call traffic that makes the steady state: kWorker allocates, kReactor
// frees 100 us later, one object a millisecond from 100 ms to 900 ms, at
// alloc stack 1. The trace runs from 10 ms to 990 ms, so its edges (5% of
// 980 ms at each end) end at 59 ms and begin at 941 ms.
// Both threads have an event at 10 ms (as threads started with the
// program do), so nothing of theirs is allocated before the other's first
// event.
void PerCall(Events& t) {
  t.Alloc(kWorker, 10 * kMs, 0x700, 64, 30);
  t.Free(kWorker, 10 * kMs + 1, 0x700, 31);
  t.Alloc(kReactor, 10 * kMs, 0x780, 64, 32);
  t.Free(kReactor, 10 * kMs + 1, 0x780, 33);
  for (uint64_t i = 0; i < 800; ++i) {
    uint64_t ts = 100 * kMs + i * kMs;
    t.Alloc(kWorker, ts, 0x10000000 + i * 64, 64, 1);
    t.Free(kReactor, ts + kMs / 10, 0x10000000 + i * 64, 2);
  }
}

// A run that lasts from 10 ms to 990 ms: main allocates one object at its
// start and frees it at its end (alloc stack 9), with PerCall's steady
// state between.
Events SteadyRun() {
  Events t;
  t.Alloc(kMain, 10 * kMs, 0x900, 16, 9);
  t.Free(kMain, 990 * kMs, 0x900, 9);
  PerCall(t);
  return t;
}

PairCounts Sum(const TraceSet& set, const PairingResult& r, uint32_t alloc_stack) {
  (void)set;
  PairCounts sum;
  r.pairs.ForEach([&](const PairKey& k, const PairCounts& v) {
    if (k.alloc_stack != alloc_stack || k.alloc_thread == k.free_thread) return;
    sum.count += v.count;
    sum.thread_bounded += v.thread_bounded;
    sum.edge_bounded += v.edge_bounded;
  });
  return sum;
}

struct Paired {
  TraceSet set;
  PairingResult result;
};

// What the cross-thread pairs of one alloc stack must sum to.
struct Want {
  uint64_t count;
  uint64_t thread_bounded;
  uint64_t edge_bounded;
};

void CheckSum(const Paired& p, uint32_t alloc_stack, const Want& want) {
  INFO("pairs of alloc stack " << alloc_stack);
  PairCounts got = Sum(p.set, p.result, alloc_stack);
  CHECK(got.count == want.count);
  CHECK(got.thread_bounded == want.thread_bounded);
  CHECK(got.edge_bounded == want.edge_bounded);
}

Paired Pair(Events& events, int jobs) {
  SyntheticTrace t = events.Write();
  std::string error;
  Paired out;
  REQUIRE(out.set.AddBytes(t.Finish(), "lifecycle.trc", &error));
  PairingOptions options;
  options.jobs = jobs;
  REQUIRE(PairTrace(*out.set.traces()[0], options, &out.result, &error));
  return out;
}

TEST_CASE("lifecycle: objects freed after their allocating thread exited are bounded") {
  int jobs = GENERATE(1, 3);
  Events t = SteadyRun();
  // A short-lived thread in the middle of the run: 5 objects, then it exits;
  // the reactor frees them after that (thread churn), 3 more before it.
  constexpr uint32_t kChurn = 750;
  t.Handoff(kChurn, kReactor, 5, 8, 0x20000000, 300 * kMs, 300 * kMs + 9000, 3);
  t.Handoff(kChurn, kReactor, 0, 5, 0x20000000, 300 * kMs, 400 * kMs, 3);
  t.ThreadExit(kChurn, 301 * kMs);
  const Paired p = Pair(t, jobs);
  CheckSum(p, 3, {.count = 8, .thread_bounded = 5, .edge_bounded = 0});
  CheckSum(p, 1, {.count = 800, .thread_bounded = 0, .edge_bounded = 0});
}

TEST_CASE("lifecycle: a new thread with an exited thread's tid is alive") {
  int jobs = GENERATE(1, 3);
  Events t = SteadyRun();
  // Thread 750 exits at 200 ms; a new thread gets tid 750 at 300 ms and hands
  // 4 objects to the reactor while it runs: those are per-call.
  constexpr uint32_t kChurn = 750;
  t.Alloc(kChurn, 150 * kMs, 0x20000000, 64, 3);
  t.Free(kChurn, 150 * kMs + 1, 0x20000000, 4);
  t.ThreadExit(kChurn, 200 * kMs);
  t.Handoff(kChurn, kReactor, 0, 4, 0x21000000, 300 * kMs, 300 * kMs + 1000, 3);
  t.ThreadExit(kChurn, 400 * kMs);
  const Paired p = Pair(t, jobs);
  CheckSum(p, 3, {.count = 4, .thread_bounded = 0, .edge_bounded = 0});
}

TEST_CASE("lifecycle: objects allocated before the freeing thread's first event are bounded") {
  int jobs = GENERATE(1, 3);
  Events t = SteadyRun();
  // Three objects queued at 500 ms for a thread whose first event is at
  // 600 ms; then one it frees 1 us after allocated by a thread it already
  // had events with (not before its start: steady).
  constexpr uint32_t kLate = 760;
  t.Handoff(kWorker, kLate, 0, 3, 0x30000000, 500 * kMs, 600 * kMs, 5);
  t.Alloc(kWorker, 700 * kMs, 0x30001000, 64, 5);
  t.Free(kLate, 700 * kMs + 1000, 0x30001000, 6);
  const Paired p = Pair(t, jobs);
  CheckSum(p, 5, {.count = 4, .thread_bounded = 3, .edge_bounded = 0});
  CheckSum(p, 1, {.count = 800, .thread_bounded = 0, .edge_bounded = 0});
}

TEST_CASE("lifecycle: objects allocated and freed only at the run's edges are bounded") {
  int jobs = GENERATE(1, 3);
  Events t;
  // The reactor is there from the start (so nothing here is allocated before
  // its first event; PerCall gives it one at 10 ms too).
  t.Alloc(kReactor, 10 * kMs, 0x800, 16, 20);
  // Start-up: main makes 4 objects the reactor frees at shutdown, and 2 it
  // frees during start-up; at 60 ms (inside the steady state) 1 more.
  for (uint64_t i = 0; i < 4; ++i) t.Alloc(kMain, 10 * kMs + i, 0x40000000 + i * 64, 64, 7);
  t.Handoff(kMain, kReactor, 4, 6, 0x40000000, 20 * kMs, 30 * kMs, 7);
  t.Alloc(kMain, 60 * kMs, 0x40001000, 64, 7);
  t.Free(kReactor, 61 * kMs, 0x40001000, 8);
  PerCall(t);
  // Shutdown: objects the worker allocates after 941 ms, freed by the reactor.
  t.Handoff(kWorker, kReactor, 0, 3, 0x50000000, 950 * kMs, 960 * kMs, 10);
  for (uint64_t i = 0; i < 4; ++i) t.Free(kReactor, 990 * kMs - 4 + i, 0x40000000 + i * 64, 8);
  t.Free(kReactor, 990 * kMs, 0x800, 20);
  const Paired p = Pair(t, jobs);
  CheckSum(p, 7, {.count = 7, .thread_bounded = 0, .edge_bounded = 6});
  CheckSum(p, 10, {.count = 3, .thread_bounded = 0, .edge_bounded = 3});
  CheckSum(p, 1, {.count = 800, .thread_bounded = 0, .edge_bounded = 0});
  CHECK(p.result.steady_from_ns == Approx(59 * kMs).epsilon(0.001));
  CHECK(p.result.steady_to_ns == Approx(941 * kMs).epsilon(0.001));
}

TEST_CASE("lifecycle: a trace shorter than 50 ms has no edges") {
  Events t;
  for (uint64_t i = 0; i < 10; ++i) {
    t.Alloc(kMain, 1000 + i * 100, 0x60000000 + i * 64, 64, 12);
    t.Free(kReactor, 40 * kMs + i, 0x60000000 + i * 64, 13);
  }
  const Paired p = Pair(t, 1);
  // kReactor's first event (40 ms) came after the allocations: thread-bounded.
  CheckSum(p, 12, {.count = 10, .thread_bounded = 10, .edge_bounded = 0});
}

}  // namespace
}  // namespace crossfree::analyzer
