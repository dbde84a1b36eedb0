// SPDX-License-Identifier: Apache-2.0
// Known-answer tests of the pairing pass on synthetic traces.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analyzer/pairing/pairing.h"
#include "analyzer/pairing/trace_set.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer {
namespace {

using testing::SyntheticTrace;

constexpr uint32_t kPid = 100;
constexpr uint32_t kA = 100;  // main thread
constexpr uint32_t kB = 101;

struct Run {
  TraceSet set;
  std::vector<PairingResult> results;
};

void PairAll(Run& run, int jobs, uint64_t max_buffered = 8u << 20) {
  for (auto& trace : run.set.traces()) {
    PairingOptions options;
    options.jobs = jobs;
    options.max_buffered_events = max_buffered;
    run.results.emplace_back();
    std::string error;
    REQUIRE(PairTrace(*trace, options, &run.results.back(), &error));
    REQUIRE(error.empty());
  }
}

void AddTrace(Run& run, SyntheticTrace& t) {
  std::string error;
  REQUIRE(run.set.AddBytes(t.Finish(), "synthetic", &error));
}

// Pairs the one trace t with `jobs` workers; returns its counts.
const PairingCounts& PairOne(Run& run, SyntheticTrace& t, int jobs,
                             uint64_t max_buffered = 8u << 20) {
  AddTrace(run, t);
  PairAll(run, jobs, max_buffered);
  return run.results[0].counts;
}

StreamIndex ThreadIndex(const ProcessTrace& trace, uint32_t tid) {
  for (uint32_t i = 0; i < trace.streams.size(); ++i) {
    if (trace.streams[i].tid == tid) return StreamIndex(i);
  }
  FAIL("no stream for tid " << tid);
  return StreamIndex();
}

// Sum of pairs matching (alloc tid, free tid), over all stacks and classes.
uint64_t PairCount(const Run& run, size_t trace, uint32_t alloc_tid, uint32_t free_tid,
                   uint32_t alloc_stack = 0, uint32_t free_stack = 0) {
  const ProcessTrace& t = *run.set.traces()[trace];
  StreamIndex a = ThreadIndex(t, alloc_tid), f = ThreadIndex(t, free_tid);
  uint64_t n = 0;
  run.results[trace].pairs.ForEach([&](const PairKey& k, const PairCounts& v) {
    if (k.alloc_thread == a && k.free_thread == f &&
        (alloc_stack == 0 || k.alloc_stack == alloc_stack) &&
        (free_stack == 0 || k.free_stack == free_stack)) {
      n += v.count;
    }
  });
  return n;
}

// The counts a case expects; a field left empty is not checked.
struct Want {
  std::optional<uint64_t> events = {}, realloc_events = {}, allocations = {}, frees = {},
                          paired = {}, cross_thread = {}, unknown_frees = {}, double_frees = {},
                          alloc_over_live = {}, live_at_exit = {}, live_bytes = {};
};

// Each expected count against c (one CHECK per field given, so a failure
// names the field and both values).
void CheckCounts(const PairingCounts& c, const Want& want) {
  auto check = [](const char* field, const std::optional<uint64_t>& w, uint64_t got) {
    if (!w) return;
    INFO(field);
    CHECK(got == *w);
  };
  check("events", want.events, c.events);
  check("realloc_events", want.realloc_events, c.realloc_events);
  check("allocations", want.allocations, c.allocations);
  check("frees", want.frees, c.frees);
  check("paired", want.paired, c.paired);
  check("cross_thread", want.cross_thread, c.cross_thread);
  check("unknown_frees", want.unknown_frees, c.unknown_frees);
  check("double_frees", want.double_frees, c.double_frees);
  check("alloc_over_live", want.alloc_over_live, c.alloc_over_live);
  check("live_at_exit", want.live_at_exit, c.live_at_exit);
  check("live_bytes", want.live_bytes, c.live_bytes);
}

// The counts of a trace built so that every free ends a live allocation
// the trace has: no unknown free, no double free, no allocation over a
// live block.
void CheckNoAnomalies(const PairingCounts& c) {
  CheckCounts(c, {.unknown_frees = 0, .double_frees = 0, .alloc_over_live = 0});
}

TEST_CASE("producer/consumer: N cross-thread, M same-thread, to the object") {
  for (int jobs : {1, 2, 3}) {
    SyntheticTrace t(kPid);
    const uint64_t n = 5000, m = 3000;
    uint64_t ts = 10;
    for (uint64_t i = 0; i < n; ++i) t.Alloc(kA, ts++, 0x10000 + i * 64, 48, 1);
    for (uint64_t i = 0; i < m; ++i) t.Alloc(kA, ts++, 0x900000 + i * 32, 24, 2);
    for (uint64_t i = 0; i < m; ++i) t.Free(kA, ts++, 0x900000 + i * 32, 3);
    t.Flush(kA);
    for (uint64_t i = 0; i < n; ++i) t.Free(kB, ts++, 0x10000 + i * 64, 4);
    Run run;
    const PairingCounts& c = PairOne(run, t, jobs);
    INFO("jobs " << jobs);
    CheckCounts(c, {.events = 2 * (n + m), .allocations = n + m, .frees = n + m, .paired = n + m,
                    .cross_thread = n, .live_at_exit = 0});
    CheckNoAnomalies(c);
    CHECK(PairCount(run, 0, kA, kB, 1, 4) == n);
    CHECK(PairCount(run, 0, kA, kA, 2, 3) == m);
    CHECK(run.results[0].pairs.size() == 2);
    uint64_t bytes = 0;
    run.results[0].pairs.ForEach([&](const PairKey& k, const PairCounts& v) {
      if (k.alloc_stack == 1) bytes = v.bytes;
    });
    CHECK(bytes == n * 48);
    const ProcessTrace& trace = *run.set.traces()[0];
    StreamIndex a = ThreadIndex(trace, kA), b = ThreadIndex(trace, kB);
    const PairingResult& r = run.results[0];
    CHECK(r.ByClass(a, SizeClassIndex(48)).allocs == n);
    CHECK(r.ByClass(a, SizeClassIndex(24)).allocs == m);
    CHECK(r.ByClass(b, SizeClassIndex(48)).frees == n);
    CHECK(r.ByClass(a, SizeClassIndex(24)).frees == m);
    CHECK(r.ByClass(a, SizeClassIndex(48)).frees == 0);
  }
}

TEST_CASE("address reuse across threads pairs each free with the allocation it ends") {
  SyntheticTrace t(kPid);
  const uint64_t x = 0x5000;
  t.Alloc(kA, 1, x, 16, 1);
  t.Free(kB, 2, x, 2);
  t.Alloc(kB, 3, x, 16, 3);
  t.Free(kA, 4, x, 4);
  t.Alloc(kA, 5, x, 16, 5);
  t.Free(kA, 6, x, 6);
  // B's chunk first in the file: the merge must not follow file order.
  t.Flush(kB);
  t.Flush(kA);
  for (int jobs : {1, 2}) {
    Run run;
    const PairingCounts& c = PairOne(run, t, jobs);
    CHECK(c.paired == 3);
    CHECK(c.cross_thread == 2);
    CHECK(PairCount(run, 0, kA, kB, 1, 2) == 1);
    CHECK(PairCount(run, 0, kB, kA, 3, 4) == 1);
    CHECK(PairCount(run, 0, kA, kA, 5, 6) == 1);
    CheckNoAnomalies(c);
  }
}

TEST_CASE("realloc halves are ordinary free and allocation events") {
  SyntheticTrace t(kPid);
  t.Alloc(kA, 1, 0x1000, 10, 1);
  t.Realloc(kA, 2, 3, 0x1000, 0x2000, 100, 2);   // X -> Y on A
  t.Realloc(kB, 4, 5, 0x2000, 0x3000, 1000, 3);  // Y -> Z on B: Y crosses
  t.Free(kB, 6, 0x3000, 4);
  Run run;
  const PairingCounts& c = PairOne(run, t, 2);
  CheckCounts(c, {.events = 6, .realloc_events = 4, .allocations = 3, .frees = 3, .paired = 3,
                  .cross_thread = 1});
  CHECK(PairCount(run, 0, kA, kA, 1, 2) == 1);
  CHECK(PairCount(run, 0, kA, kB, 2, 3) == 1);
  CHECK(PairCount(run, 0, kB, kB, 3, 4) == 1);
}

TEST_CASE("unknown frees, double frees and live allocations are counted apart") {
  SyntheticTrace t(kPid);
  t.Free(kB, 1, 0x7000, 9);         // never allocated: unknown
  t.Alloc(kA, 2, 0x8000, 64, 1);
  t.Free(kA, 3, 0x8000, 2);
  t.Free(kB, 4, 0x8000, 3);         // second free of it: double
  t.Free(kB, 5, 0x7000, 9);         // second free of the unknown one: double
  t.Alloc(kA, 6, 0x9000, 100, 1);   // live at exit
  t.Alloc(kB, 7, 0xa000, 28, 5);    // live at exit
  Run run;
  const PairingCounts& c = PairOne(run, t, 2);
  CheckCounts(c, {.allocations = 3, .frees = 4, .paired = 1, .cross_thread = 0, .unknown_frees = 1,
                  .double_frees = 2, .live_at_exit = 2, .live_bytes = 128});
  const ProcessTrace& trace = *run.set.traces()[0];
  auto& r = run.results[0];
  CountBytes* live_a = r.live.Find(StackThread{1, ThreadIndex(trace, kA)});
  REQUIRE(live_a != nullptr);
  CHECK(live_a->count == 1);
  CHECK(live_a->bytes == 100);
  CountBytes* unknown = r.unknown_frees.Find(StackThread{9, ThreadIndex(trace, kB)});
  REQUIRE(unknown != nullptr);
  CHECK(unknown->count == 1);
  CountBytes* dbl = r.double_frees.Find(StackThread{3, ThreadIndex(trace, kB)});
  REQUIRE(dbl != nullptr);
  CHECK(dbl->count == 1);
}

// Allocations per (thread, class) are counted when each allocation's fate
// is known (paired, replaced, or live at the end), not as they happen: every
// fate must count once, and frees without an allocation must not.
TEST_CASE("allocations per thread and size class count every fate once") {
  SyntheticTrace t(kPid);
  t.Alloc(kA, 1, 0x1000, 16, 1);
  t.Free(kB, 2, 0x1000, 2);         // paired, cross-thread
  t.Alloc(kA, 3, 0x2000, 100, 1);
  t.Alloc(kA, 4, 0x2000, 200, 1);   // replaces the live 100-byte one
  t.Free(kA, 5, 0x2000, 2);         // pairs with the 200-byte one
  t.Alloc(kB, 6, 0x3000, 16, 3);    // live at exit
  t.Alloc(kA, 7, 0x4000, 300, 1);
  t.Free(kA, 8, 0x4000, 2);
  t.Free(kB, 9, 0x4000, 2);         // double free
  t.Free(kB, 10, 0x5000, 2);        // unknown free
  for (int jobs : {1, 2, 3}) {
    INFO("jobs " << jobs);
    Run run;
    AddTrace(run, t);
    PairAll(run, jobs);
    const ProcessTrace& trace = *run.set.traces()[0];
    StreamIndex a = ThreadIndex(trace, kA), b = ThreadIndex(trace, kB);
    const PairingResult& r = run.results[0];
    CHECK(r.counts.alloc_over_live == 1);
    CHECK(r.ByClass(a, SizeClassIndex(16)).allocs == 1);
    CHECK(r.ByClass(b, SizeClassIndex(16)).frees == 1);
    CHECK(r.ByClass(a, SizeClassIndex(100)).allocs == 1);
    CHECK(r.ByClass(a, SizeClassIndex(100)).frees == 0);
    CHECK(r.ByClass(a, SizeClassIndex(200)).allocs == 1);
    CHECK(r.ByClass(a, SizeClassIndex(200)).frees == 1);
    CHECK(r.ByClass(b, SizeClassIndex(16)).allocs == 1);
    CHECK(r.ByClass(a, SizeClassIndex(300)).allocs == 1);
    CHECK(r.ByClass(a, SizeClassIndex(300)).frees == 1);
    CHECK(r.ByClass(b, SizeClassIndex(300)).frees == 0);
    uint64_t allocs = 0, frees = 0;
    r.by_class.ForEach([&](const ThreadClass&, const AllocsFrees& v) {
      allocs += v.allocs;
      frees += v.frees;
    });
    CHECK(allocs == r.counts.allocations);
    CHECK(frees == r.counts.paired);
  }
}

TEST_CASE("a free and an allocation with the same timestamp: the free comes first") {
  SyntheticTrace t(kPid);
  t.Alloc(kA, 1, 0x4000, 32, 1);
  t.Alloc(kA, 5, 0x4000, 32, 3);  // same stamp as B's free: happened after it
  t.Flush(kA);
  t.Free(kB, 5, 0x4000, 2);
  Run run;
  const PairingCounts& c = PairOne(run, t, 2);
  CHECK(c.paired == 1);
  CHECK(c.cross_thread == 1);
  CHECK(PairCount(run, 0, kA, kB, 1, 2) == 1);
  CHECK(c.live_at_exit == 1);
  CHECK(c.alloc_over_live == 0);
  CHECK(c.unknown_frees == 0);
}

TEST_CASE("a hand-off within one tick: the allocation comes first when its address is not live") {
  // Times rounded to a resolution (docs/trace-format.md 7.1): A allocated
  // the block and B freed it within one tick. The address is not live, so
  // the allocation goes first (docs/design.md, "Ties"), whatever the
  // threads' order.
  for (int jobs : {1, 2}) {
    for (bool free_first_in_file : {false, true}) {
      SyntheticTrace t(kPid);
      if (free_first_in_file) {
        t.Free(kB, 5000, 0x4000, 2);
        t.Flush(kB);
        t.Alloc(kA, 5000, 0x4000, 32, 1);
      } else {
        t.Alloc(kA, 5000, 0x4000, 32, 1);
        t.Flush(kA);
        t.Free(kB, 5000, 0x4000, 2);
      }
      Run run;
      const PairingCounts& c = PairOne(run, t, jobs);
      CHECK(c.paired == 1);
      CHECK(c.cross_thread == 1);
      CHECK(PairCount(run, 0, kA, kB, 1, 2) == 1);
      CHECK(c.unknown_frees == 0);
      CHECK(c.live_at_exit == 0);
    }
  }
}

TEST_CASE("ties by address state: hand-offs and reuse inside one tick, exact counts") {
  // N ticks of 1000 ns. In each, producer A allocates block X, consumer B
  // frees it, A allocates X again (glibc hands the freed block back) and B
  // frees it again; B also allocates and frees a temporary Y of its own.
  // Every event of a tick carries the tick's time, as a trace recorded
  // with --time-resolution 1000 does. By construction: 2N cross-thread
  // pairs (A -> B), N same-thread pairs (B), nothing unknown, double or
  // live. Chunks end at places that split ticks, so a tie spans chunks.
  const uint64_t n = 2000;
  for (int jobs : {1, 2, 3}) {
    SyntheticTrace t(kPid);
    for (uint64_t k = 0; k < n; ++k) {
      testing::AppendTiedHandOffs(t, kA, kB, k, 1000 * (k + 1), 4);
    }
    Run run;
    const PairingCounts& c = PairOne(run, t, jobs);
    CAPTURE(jobs);
    CheckCounts(c, {.allocations = 3 * n, .frees = 3 * n, .paired = 3 * n, .cross_thread = 2 * n});
    CHECK(PairCount(run, 0, kA, kB, 1, 2) == 2 * n);
    CHECK(PairCount(run, 0, kB, kB, 3, 4) == n);
    CheckNoAnomalies(c);
    CHECK(c.live_at_exit == 0);
  }
}

TEST_CASE("a tied event that fits no state is counted as before: unknown, double, over live") {
  // Tick 2000: A allocates 0x5000 again and 0x6000, B frees 0x7000, which
  // nobody allocated (it fits no order: an unknown free), and allocates
  // 0x6000 too, over A's live block (it fits no order either: one
  // allocation over a live one, whichever goes first). Tick 3000: B frees
  // 0x5000 twice (a cross-thread pair, then a double free).
  SyntheticTrace t(kPid);
  t.Alloc(kA, 1000, 0x5000, 16, 1);
  t.Free(kA, 1000, 0x5000, 2);
  t.Alloc(kA, 2000, 0x5000, 16, 1);
  t.Alloc(kA, 2000, 0x6000, 16, 1);
  t.Flush(kA);
  t.Free(kB, 2000, 0x7000, 4);
  t.Alloc(kB, 2000, 0x6000, 16, 3);
  t.Free(kB, 3000, 0x5000, 4);
  t.Free(kB, 3000, 0x5000, 4);
  for (int jobs : {1, 2}) {
    Run run;
    const PairingCounts& c = PairOne(run, t, jobs);
    // live_at_exit: 0x6000, the later of its two allocations.
    CheckCounts(c, {.paired = 2, .cross_thread = 1, .unknown_frees = 1, .double_frees = 1,
                    .alloc_over_live = 1, .live_at_exit = 1});
  }
}

TEST_CASE("addresses of different processes never pair") {
  SyntheticTrace parent(200, 1);
  parent.Alloc(200, 1, 0x6000, 8, 1);
  SyntheticTrace child(201, 200);
  child.Free(201, 2, 0x6000, 2);
  Run run;
  AddTrace(run, parent);
  AddTrace(run, child);
  PairAll(run, 2);
  CHECK(run.results[0].counts.live_at_exit == 1);
  CHECK(run.results[0].counts.paired == 0);
  CHECK(run.results[1].counts.unknown_frees == 1);
  CHECK(run.results[1].counts.paired == 0);
}

TEST_CASE("many threads and small chunks, the throttle keeps results exact") {
  SyntheticTrace t(kPid);
  // Thread 100+k allocates objects that thread 100+(k+1)%4 frees, in rounds;
  // every round flushes, so chunks of different threads interleave.
  const int threads = 4, rounds = 50, per_round = 40;
  uint64_t ts = 100;
  uint64_t expected_cross = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < threads; ++k) {
      for (int i = 0; i < per_round; ++i) {
        t.Alloc(kPid + k, ts++, 0x100000 + (uint64_t(k) * per_round + i) * 16, 16, 1 + k);
      }
    }
    for (int k = 0; k < threads; ++k) {
      int consumer = (k + 1) % threads;
      for (int i = 0; i < per_round; ++i) {
        t.Free(kPid + consumer, ts++, 0x100000 + (uint64_t(k) * per_round + i) * 16, 10 + k);
        ++expected_cross;
      }
    }
    for (int k = threads - 1; k >= 0; --k) t.Flush(kPid + k);
  }
  for (int jobs : {1, 2, 4}) {
    for (uint64_t max_buffered : {uint64_t{4}, uint64_t{8} << 20}) {
      Run run;
      const PairingCounts& c = PairOne(run, t, jobs, max_buffered);
      INFO("jobs " << jobs << " max_buffered " << max_buffered);
      CHECK(c.cross_thread == expected_cross);
      CHECK(c.paired == expected_cross);
      CHECK(c.live_at_exit == 0);
      CheckNoAnomalies(c);
      for (int k = 0; k < threads; ++k) {
        CHECK(PairCount(run, 0, kPid + k, kPid + (k + 1) % threads, 1 + k, 10 + k) ==
              uint64_t(rounds) * per_round);
      }
    }
  }
}

TEST_CASE("stacks, thread names and modules are collected from the chunks") {
  SyntheticTrace t(kPid);
  t.Stack(kA, 1, {0x401000, 0x402000});
  t.ThreadName(kB, 1, "worker-0");
  t.ThreadName(kB, 9, "worker-1");  // the later name wins
  t.Module(kA, "/bin/synthetic", 0x400000, 0x400000, 0x10000);
  t.Alloc(kA, 3, 0x1000, 8, 1);
  t.Free(kB, 4, 0x1000, 0);
  Run run;
  AddTrace(run, t);
  PairAll(run, 2);
  ProcessTrace& trace = *run.set.traces()[0];
  REQUIRE(trace.stacks.count(1) == 1);
  CHECK(trace.stacks[1] == std::vector<uint64_t>{0x401000, 0x402000});
  CHECK(trace.thread_names[kB] == "worker-1");
  REQUIRE(trace.modules.size() == 1);
  CHECK(trace.modules[0].path == "/bin/synthetic");
  CHECK(run.results[0].counts.cross_thread == 1);
}

}  // namespace
}  // namespace crossfree::analyzer

namespace crossfree::analyzer {
namespace {

TEST_CASE("a trace with a header and no chunks pairs to zeros") {
  testing::SyntheticTrace t(300);
  TraceSet set;
  std::string error;
  REQUIRE(set.AddBytes(t.Finish(), "empty", &error));
  for (int jobs : {1, 2}) {
    PairingResult result;
    PairingOptions options;
    options.jobs = jobs;
    REQUIRE(PairTrace(*set.traces()[0], options, &result, &error));
    CHECK(result.counts.events == 0);
    CHECK(result.pairs.size() == 0);
  }
}

TEST_CASE("free(NULL)-style events on address 0 are ignored, and counted") {
  testing::SyntheticTrace t(300);
  t.Free(300, 1, 0, 0);
  t.Alloc(300, 2, 0x100, 8, 0);
  t.Free(301, 3, 0x100, 0);
  TraceSet set;
  std::string error;
  REQUIRE(set.AddBytes(t.Finish(), "null", &error));
  PairingResult result;
  REQUIRE(PairTrace(*set.traces()[0], PairingOptions{}, &result, &error));
  CHECK(result.counts.ignored_null == 1);
  CHECK(result.counts.events == 2);
  CHECK(result.counts.unknown_frees == 0);
  CHECK(result.counts.cross_thread == 1);
}

// Damaged-trace class 6 of the analyzer hardening: a packed `ts * 2 +
// is_alloc` sort key wrapped for timestamps of 2^63 and above, so every free
// sorted before its allocation and 20 cross-thread pairs read as 20 unknown
// frees.
TEST_CASE("timestamps of 2^63 and above keep their order") {
  // The middle base puts one pair astride 2^63 (allocated at 2^63 - 3,
  // freed at 2^63 + 2), which the packed key sorted free-first.
  for (uint64_t base : {uint64_t{1} << 63, (uint64_t{1} << 63) - 93, ~uint64_t{0} - 1000}) {
    testing::SyntheticTrace t(400);
    for (uint64_t i = 0; i < 20; ++i) {
      t.Alloc(400, base + i * 10, 0x1000 + i * 0x40, 32, 0);
      t.Free(401, base + i * 10 + 5, 0x1000 + i * 0x40, 0);
    }
    // A free and the allocation that reuses its address at the same stamp:
    // the free comes first (the ordering rule), also up here.
    t.Alloc(400, base + 300, 0x9000, 16, 0);
    t.Free(401, base + 400, 0x9000, 0);
    t.Alloc(400, base + 400, 0x9000, 16, 0);
    for (int jobs : {1, 2}) {
      TraceSet set;
      std::string error;
      REQUIRE(set.AddBytes(t.Finish(), "high-ts", &error));
      PairingResult result;
      PairingOptions options;
      options.jobs = jobs;
      REQUIRE(PairTrace(*set.traces()[0], options, &result, &error));
      CHECK(result.counts.cross_thread == 21);
      CHECK(result.counts.unknown_frees == 0);
      CHECK(result.counts.live_at_exit == 1);
      CHECK(result.counts.alloc_over_live == 0);
    }
  }
}

TEST_CASE("a thread's name is the one it set last, whichever chunk holds it") {
  testing::SyntheticTrace t(500);
  t.ThreadName(501, 50, "late");
  t.Alloc(501, 60, 0x100, 8, 0);
  t.Flush(501);
  t.ThreadName(501, 10, "early");
  t.Free(501, 70, 0x100, 0);
  TraceSet set;
  std::string error;
  REQUIRE(set.AddBytes(t.Finish(), "names", &error));
  PairingResult result;
  REQUIRE(PairTrace(*set.traces()[0], PairingOptions{}, &result, &error));
  CHECK(set.traces()[0]->thread_names.at(501) == "late");
}

// --from/--to: the window's edges with known answers. The synthetic trace
// starts at 1 ns, so window times are timestamps - 1.
TEST_CASE("an analysis window counts what happens inside it") {
  testing::SyntheticTrace t(600);
  // Allocated before the window, freed inside (cross-thread): "allocated
  // before the window", not an unknown free and not a pair.
  t.Alloc(600, 101, 0x100, 16);
  t.Free(601, 1501, 0x100);
  // Allocated inside, freed after: live at the window's end.
  t.Alloc(600, 1601, 0x200, 16);
  t.Free(601, 3001, 0x200);
  // Inside and inside, cross-thread: one pair.
  t.Alloc(600, 1701, 0x300, 16);
  t.Free(601, 1801, 0x300);
  // A thread that starts inside the window.
  t.Alloc(602, 1901, 0x400, 16);
  t.Free(600, 1951, 0x400);
  // Exactly at the edges: both inside (the window is closed).
  t.Alloc(600, 1001, 0x500, 16);
  t.Free(601, 2001, 0x500);
  // Before and before: nothing.
  t.Alloc(600, 201, 0x600, 16);
  t.Free(601, 301, 0x600);
  for (int jobs : {1, 2}) {
    TraceSet set;
    std::string error;
    REQUIRE(set.AddBytes(t.Finish(), "window", &error));
    PairingOptions options;
    options.jobs = jobs;
    options.window_from_ns = 1000;
    options.window_to_ns = 2000;
    PairingResult r;
    REQUIRE(PairTrace(*set.traces()[0], options, &r, &error));
    CHECK(r.counts.before_window == 1);
    CHECK(r.counts.unknown_frees == 0);
    CHECK(r.counts.cross_thread == 3);  // 0x300, 0x400, 0x500
    CHECK(r.counts.live_at_window_end == 1);  // 0x200: live at --to, not a leak
    CHECK(r.counts.live_at_exit == 0);
    CHECK(r.counts.allocations == 4);
    CHECK(r.counts.frees == 4);
    // By thread and class: only the allocations inside the window, the one
    // live at its end included.
    const ProcessTrace& trace = *set.traces()[0];
    const int c16 = SizeClassIndex(16);
    CHECK(r.ByClass(ThreadIndex(trace, 600), c16).allocs == 3);  // 0x200, 0x300, 0x500
    CHECK(r.ByClass(ThreadIndex(trace, 602), c16).allocs == 1);  // 0x400
    CHECK(r.ByClass(ThreadIndex(trace, 601), c16).frees == 2);   // 0x300, 0x500
    CHECK(r.ByClass(ThreadIndex(trace, 600), c16).frees == 1);   // 0x400
    // Without a window: every pair, nothing before.
    PairingResult all;
    options.window_from_ns = 0;
    options.window_to_ns = ~uint64_t{0};
    REQUIRE(PairTrace(*set.traces()[0], options, &all, &error));
    CHECK(all.counts.before_window == 0);
    CHECK(all.counts.cross_thread == 6);
  }
}

}  // namespace
}  // namespace crossfree::analyzer
