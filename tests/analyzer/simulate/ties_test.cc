// SPDX-License-Identifier: Apache-2.0
// Simulate tests: ties across threads (docs/design.md, "Ties"). A trace
// whose times were rounded to a resolution puts a producer's allocation and
// a consumer's free of the same block at one timestamp; the replay orders
// them by the block's state, as the pairing pass does, so the counts are
// those the program made, not unknown frees and leaks.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "analyzer/simulate/simulate.h"
#include "tests/analyzer/simulate/simulate_fixture.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer::simulate {
namespace {

using analyzer::testing::SyntheticTrace;
using testing::RunSimulation;

constexpr uint32_t kPid = 100;
constexpr uint64_t kTicks = 600;

// kTicks ticks of 1000 ns, every event of a tick at the tick's time, as a
// trace recorded with --time-resolution 1000 has them. In each tick:
// producer P allocates block X, consumer C frees it, P allocates X again
// (the allocator hands the freed block back) and C frees it again; C
// allocates and frees a temporary Y of its own; P allocates Z and C
// reallocs it to W (moved) and frees W. Each thread's records are in the
// order above, the two threads' records of a tick all at one timestamp.
// By construction, per tick: P makes 3 allocations; C makes 2 (Y, and W by
// the realloc) and 5 frees of known blocks (X twice, Y, Z by the realloc,
// W); 3 objects go from P to C (X twice, Z), 2 stay on C (Y, W). No free
// is unknown and nothing is live at the end. Chunks end inside ticks, so
// some ties span chunks. consumer_first puts C's stream first in the file
// (stream 0), so neither thread's place in the merge decides the order.
SyntheticTrace HandOffsInOneTick(bool consumer_first) {
  const uint32_t p = 101, c = 102;
  SyntheticTrace b(kPid);
  b.ThreadName(consumer_first ? c : p, 1, consumer_first ? "consumer-1" : "producer-1");
  b.Flush(consumer_first ? c : p);
  b.ThreadName(consumer_first ? p : c, 1, consumer_first ? "producer-1" : "consumer-1");
  b.Stack(p, 1, {0x1000});
  b.Stack(c, 2, {0x2000});
  b.Stack(c, 3, {0x3000});
  for (uint64_t k = 0; k < kTicks; ++k) {
    const uint64_t ts = 1000 * (k + 1);
    const uint64_t z = 0x200000 + (k % 3) * 64, w = 0x300000 + (k % 7) * 128;
    analyzer::testing::AppendTiedHandOffs(b, p, c, k, ts, 3);
    b.Alloc(p, ts, z, 40, 1);
    b.Realloc(c, ts, ts, z, w, 100, 2);
    b.Free(c, ts, w, 2);
  }
  b.ThreadExit(p, 1000 * (kTicks + 1));
  b.ThreadExit(c, 1000 * (kTicks + 1));
  return b;
}

const GroupResult& Group(const SimulationResult& r, const std::string& name) {
  return testing::GroupNamed(r.groups, name);
}

const CostGroupResult& CostGroup(const CostSimulation& s, const std::string& name) {
  return testing::GroupNamed(s.groups, name);
}

TEST_CASE("ties: hand-offs within one tick replay with the program's counts, no unknown frees",
          "[simulate]") {
  for (bool consumer_first : {false, true}) {
    CAPTURE(consumer_first);
    SyntheticTrace b = HandOffsInOneTick(consumer_first);
    SimulationResult r = RunSimulation(b, SimulateOptions());
    CHECK(r.unknown_frees == 0);
    CHECK(r.inplace_reallocs == 0);
    CHECK(r.totals.allocations == 5 * kTicks);
    CHECK(r.totals.frees == 5 * kTicks);
    const GroupResult& producer = Group(r, "producer-N");
    CHECK(producer.counts.allocations == 3 * kTicks);
    CHECK(producer.counts.frees == 0);
    const GroupResult& consumer = Group(r, "consumer-N");
    CHECK(consumer.counts.allocations == 2 * kTicks);
    CHECK(consumer.counts.frees == 5 * kTicks);
  }
}

TEST_CASE("ties: the cost replay pairs hand-offs within one tick across threads", "[simulate]") {
  for (const char* name : {"jemalloc", "gperftools"}) {
    for (bool consumer_first : {false, true}) {
      CAPTURE(name, consumer_first);
      SyntheticTrace b = HandOffsInOneTick(consumer_first);
      SimulateOptions options;
      options.allocator = FindAllocator(name);
      REQUIRE(options.allocator != nullptr);
      options.pairs = true;
      options.top = 0;
      SimulationResult r = RunSimulation(b, options);
      REQUIRE(r.cost.has_value());
      const CostSimulation& s = *r.cost;
      CHECK(r.unknown_frees == 0);
      CHECK(s.allocations == 5 * kTicks);
      CHECK(s.frees == 5 * kTicks);
      CHECK(CostGroup(s, "producer-N").allocations == 3 * kTicks);
      CHECK(CostGroup(s, "consumer-N").frees == 5 * kTicks);
      uint64_t cross = 0, same = 0;
      for (const CostPairResult& pair : s.pairs) {
        (pair.cross_thread ? cross : same) += pair.objects;
        if (pair.cross_thread) {
          CHECK(pair.alloc_group == "producer-N");
          CHECK(pair.free_group == "consumer-N");
        }
      }
      CHECK(cross == 3 * kTicks);
      // Same-thread pairs are listed only when they cost something: at most
      // the 2 per tick the consumer makes.
      CHECK(same <= 2 * kTicks);
    }
  }
}

}  // namespace
}  // namespace crossfree::analyzer::simulate
