// SPDX-License-Identifier: Apache-2.0
// Simulate tests: the cost replay (cost_replay.h) on synthetic traces: each
// cost is charged to the pair whose operation caused it, the totals add up
// (pairs + thread exits + objects never freed), lifetimes and CPUs per
// pair; and the lifetime histogram (analyzer/model/lifetime.h) on values
// whose quantiles are known.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/model/lifetime.h"
#include "analyzer/render/json.h"
#include "analyzer/render/text.h"
#include "analyzer/simulate/report_costs.h"
#include "analyzer/simulate/simulate.h"
#include "tests/analyzer/simulate/simulate_fixture.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer {

// For the failure messages of the checks that compare whole LifetimeSummary.
std::ostream& operator<<(std::ostream& os, const LifetimeSummary& s) {
  os << "{count " << s.count << ", min " << s.min_ns << ", median " << s.median_ns << ", p99 "
     << s.p99_ns << ", max " << s.max_ns << ", octaves from 2^" << s.first_octave << ":";
  for (uint64_t n : s.octaves) os << " " << n;
  return os << "}";
}

}  // namespace crossfree::analyzer

namespace crossfree::analyzer::simulate {
namespace {

using analyzer::testing::SyntheticTrace;
using testing::RunSimulation;


constexpr uint32_t kPid = 100;
constexpr uint64_t kBase = 0x10000000;

// main (kPid) allocates one 16-byte object so it owns arena 0; producer
// (101, arena 1) allocates 201 objects of 16 bytes at ts 1000 + i; consumer
// (102, arena 2) frees them at ts 5000 + 2i, then both exit.
SyntheticTrace ProducerConsumer() {
  SyntheticTrace b(kPid);
  b.ThreadName(101, 1, "producer-1");
  b.ThreadName(102, 1, "consumer-1");
  b.Stack(101, 1, {0x1000});
  b.Stack(102, 2, {0x2000});
  b.Stack(kPid, 3, {0x3000});
  b.Alloc(kPid, 5, kBase - 64, 16, 3);
  for (uint64_t i = 0; i < 201; ++i) b.Alloc(101, 1000 + i, kBase + 16 * i, 16, 1);
  for (uint64_t i = 0; i < 201; ++i) b.Free(102, 5000 + 2 * i, kBase + 16 * i, 2);
  b.ThreadExit(101, 9000);
  b.ThreadExit(102, 9001);
  return b;
}

TEST_CASE("cost replay: jemalloc costs charged to the pair, thread exits and live objects",
          "[simulate]") {
  SyntheticTrace b = ProducerConsumer();
  SimulateOptions options;
  options.allocator = FindAllocator("jemalloc");
  options.model.cpus = 2;
  SimulationResult r = RunSimulation(b, options);
  REQUIRE(r.cost);
  const CostSimulation& m = *r.cost;
  CHECK(m.allocator == "jemalloc-5.3.0");
  CHECK(m.validation.validated);
  // The pair producer -> consumer: the producer's 3 fills of 100 (5 locks,
  // as in allocator_models_test); the consumer never allocates, so it has
  // no tcache and each of its 201 frees locks arena 1's bin (201 locks, no
  // flush); 201 remote frees.
  REQUIRE_FALSE(m.pairs.empty());
  const CostPairResult& p = m.pairs[0];
  CHECK(p.alloc_group == "producer-N");
  CHECK(p.free_group == "consumer-N");
  CHECK(p.cross_thread);
  CHECK(p.alloc_site.key == "Site0x1000");
  CHECK(p.free_site.key == "Site0x2000");
  CHECK(p.objects == 201);
  CHECK(p.cost[CostKind::kRefill] == 3);
  CHECK(p.cost.refilled_objects == 300);
  CHECK(p.cost[CostKind::kFlush] == 0);
  CHECK(p.cost[CostKind::kLock] == 206);
  CHECK(p.cost[CostKind::kRemoteFree] == 201);
  CHECK(p.cost.Total() == 206);
  // Lifetimes: object i lives (5000 + 2i) - (1000 + i) = 4000 + i ns: min
  // 4000, max 4200; the median (rank 101, 4100 ns) and p99 (rank 199, 4198
  // ns) fall in the bucket [4096, 4608): its floor, 4096. By power of two:
  // 4000..4095 (96 objects) in [2^11, 2^12), 4096..4200 (105) in [2^12, 2^13).
  CHECK(p.lifetime == LifetimeSummary{.count = 201, .min_ns = 4000, .median_ns = 4096,
                                      .p99_ns = 4096, .max_ns = 4200, .first_octave = 11,
                                      .octaves = {96, 105}});
  // The synthetic trace records no CPU: every free is "unknown".
  CHECK(p.cpu.unknown == 201);
  CHECK(p.cpu.same + p.cpu.other == 0);
  CHECK_FALSE(m.cpus_known);
  // main's allocation (a fill of 100 into a fresh slab: 2 locks) is never
  // freed.
  CHECK(m.live_at_end[CostKind::kRefill] == 1);
  CHECK(m.live_at_end[CostKind::kLock] == 2);
  // Everything adds up: pairs + thread exits + objects never freed.
  CostCounts sum = m.thread_exit;
  sum.Add(m.live_at_end);
  for (const CostPairResult& q : m.pairs) sum.Add(q.cost);
  for (int k = 0; k < kCostKindCount; ++k) CHECK(sum.n[k] == m.totals.n[k]);
  CHECK(m.cross_thread.Total() == 206);
  // Only the producer's exit flushes (41 bins); the consumer has no tcache.
  CHECK(m.thread_exit[CostKind::kFlush] == 41);
  CHECK(m.cross_pairs.count(p.key) == 1);

  std::string text = RenderSimulationText(r, options);
  CHECK(text.find("jemalloc-5.3.0 (validated)") != std::string::npos);
  CHECK(text.find("lifetime: min 4.00 us, median 4.10 us, p99 4.10 us, max 4.20 us") !=
        std::string::npos);
  CHECK(text.find("same CPU: n/a") != std::string::npos);
  std::string json = RenderSimulationJson(r, options);
  CHECK(json.find("\"median_ns\": 4096") != std::string::npos);
  CHECK(json.find("\"same_cpu\": null") != std::string::npos);

  // As under attach (the tracer's own allocations gave the consumer a
  // tcache too): the consumer's one flush of 100 to arena 1 plus its
  // statistics lock (2 locks); both exits flush 41 bins, the consumer's 101
  // objects take arena 1's lock besides its own statistics locks.
  options.model.cache_from_first_event = true;
  SyntheticTrace b2 = ProducerConsumer();
  SimulationResult r2 = RunSimulation(b2, options);
  REQUIRE(r2.cost);
  REQUIRE_FALSE(r2.cost->pairs.empty());
  const CostPairResult& p2 = r2.cost->pairs[0];
  CHECK(p2.cost[CostKind::kRefill] == 3);
  CHECK(p2.cost[CostKind::kFlush] == 1);
  CHECK(p2.cost[CostKind::kLock] == 7);
  CHECK(p2.cost[CostKind::kRemoteFree] == 201);
  CHECK(r2.cost->thread_exit[CostKind::kFlush] == 82);
}

TEST_CASE("report --allocator: the pair's cost and lifetimes join the report's pair by key",
          "[simulate]") {
  SyntheticTrace b = ProducerConsumer();
  std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                     "/crossfree-report-costs-test.trace";
  b.WriteTo(path);
  analyzer::AnalysisOptions options;
  analyzer::Analysis analysis;
  std::string error;
  REQUIRE(analyzer::AnalyzeFiles({path}, options, &analysis, &error));
  REQUIRE(analysis.pairs.size() == 1);
  ModelSettings model;
  model.cpus = 2;
  REQUIRE(AddPairCosts({path}, FindAllocator("jemalloc"), model, "flags", options, &analysis,
                       &error));
  std::remove(path.c_str());
  REQUIRE(analysis.pair_costs);
  CHECK(analysis.pair_costs->allocator == "jemalloc-5.3.0");
  const analyzer::PairCostFigures* f = analysis.pair_costs->Find(analysis.pairs[0].key);
  REQUIRE(f);
  // As the cost replay's test derives: 3 fills, no flush, 206 locks.
  CHECK(f->refills == 3);
  CHECK(f->flushes == 0);
  CHECK(f->locks == 206);
  CHECK(f->sync == 206);
  CHECK(f->remote_frees == 201);
  CHECK(f->lifetime.min_ns == 4000);
  CHECK(f->lifetime.max_ns == 4200);
  CHECK_FALSE(f->cpu_known());
}

TEST_CASE("cost replay: the models that are not (fully) validated say so", "[simulate]") {
  for (const char* name : {"glibc", "mimalloc"}) {
    SyntheticTrace b = ProducerConsumer();
    SimulateOptions options;
    options.allocator = FindAllocator(name);
    SimulationResult r = RunSimulation(b, options);
    REQUIRE(r.cost);
    CHECK_FALSE(r.cost->validation.validated);
    CHECK(r.cost->validation.partly);
    CHECK(RenderSimulationText(r, options).find("(partly validated)") != std::string::npos);
    // Every consumer free is remote in both.
    REQUIRE_FALSE(r.cost->pairs.empty());
    CHECK(r.cost->cross_thread[CostKind::kRemoteFree] == 201);
  }
  // A model checked against nothing would say so.
  CHECK(std::string(Validation{}.Label()) == "NOT VALIDATED");
}

TEST_CASE("lifetimes: exact below 16 ns and at bucket floors, min and max always exact",
          "[simulate]") {
  analyzer::Lifetime l;
  CHECK(l.Summary().count == 0);
  for (uint64_t v = 0; v < 16; ++v) CHECK(analyzer::Lifetime::BucketFloor(analyzer::Lifetime::Bucket(v)) == v);
  // Every bucket's floor is in it, and the next value below is not.
  for (int b = 16; b < 400; ++b) {
    uint64_t floor = analyzer::Lifetime::BucketFloor(b);
    CHECK(analyzer::Lifetime::Bucket(floor) == b);
    CHECK(analyzer::Lifetime::Bucket(floor - 1) == b - 1);
  }
  // 98 objects of 1024 ns, one of 3 ns, one of 1 s: median and p99 1024 ns.
  for (int i = 0; i < 98; ++i) l.Add(1024);
  l.Add(3);
  l.Add(1'000'000'000);
  analyzer::LifetimeSummary s = l.Summary();
  CHECK(s.count == 100);
  CHECK(s.min_ns == 3);
  CHECK(s.max_ns == 1'000'000'000);
  CHECK(s.median_ns == 1024);
  CHECK(s.p99_ns == 1024);
  // Octaves from 2^1 (3 ns) to 2^29 (1 s): 1 + 98 + 1.
  CHECK(s.first_octave == 1);
  REQUIRE(s.octaves.size() == 29);
  CHECK(s.octaves[0] == 1);
  CHECK(s.octaves[9] == 98);
  CHECK(s.octaves[28] == 1);
  // Merging is adding.
  analyzer::Lifetime a, b2;
  a.Add(10);
  b2.Add(5000);
  b2.Add(7);
  a.Merge(b2);
  CHECK(a.Summary().count == 3);
  CHECK(a.Summary().min_ns == 7);
  CHECK(a.Summary().median_ns == 10);
  CHECK(a.Summary().max_ns == 5000);
}

}  // namespace
}  // namespace crossfree::analyzer::simulate
