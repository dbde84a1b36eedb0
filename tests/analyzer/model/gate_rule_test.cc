// SPDX-License-Identifier: Apache-2.0
// The gate's rule (gate.h) on models with known counts: noise against
// change, per operation and per 1000 allocations, timing-dependent sites,
// bounded objects, and the keys and groups it compares.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/model/baseline.h"
#include "analyzer/model/gate.h"
#include "analyzer/model/sites.h"
#include "tests/analyzer/model/evaluate_gate.h"

namespace crossfree::analyzer {
namespace {

using testing::Gate;

constexpr char kSite[] = "Server::MakeResponse <- Server::Handle";

// A cross-thread pair at kSite (or `site`), freed by `free_role`.
CrossPair Pair(uint64_t steady, uint64_t bounded = 0, const std::string& free_role = "reactor-N",
               const std::string& site = kSite) {
  CrossPair p;
  p.alloc_role = "worker-N";
  p.free_role = free_role;
  p.alloc_site.key = site;
  p.free_site.key = "Reactor::Run";
  p.key = PairKeyText(p.alloc_role, p.free_role, p.alloc_site.key, p.free_site.key);
  p.count = SampledCount{steady + bounded};
  p.thread_bounded = SampledCount{bounded};
  return p;
}

Analysis Run(uint64_t operations, std::vector<CrossPair> pairs, uint64_t allocations = 1'000'000) {
  Analysis a;
  a.operations = operations;
  a.counts.allocations = allocations;
  a.pairs = std::move(pairs);
  return a;
}

Baseline PerOperation(std::vector<std::pair<std::string, BaselineRates>> allowed,
                      std::vector<std::pair<std::string, double>> sites = {}) {
  Baseline b;
  b.per_operation = true;
  for (auto& [k, r] : allowed) b.allowed[k] = r;
  for (auto& [k, r] : sites) b.sites[k] = r;
  return b;
}

TEST_CASE("gate rule: a new per-call site fails at one object per 10 operations, not at one per 100") {
  // Every 10th call hands an object over: 0.1 per operation, above 0.05.
  GateResult every10 = Gate(Run(10'000, {Pair(1'000)}), PerOperation({}));
  REQUIRE(every10.offenses.size() == 1);
  CHECK(every10.offenses[0].verdict == GateVerdict::kNew);
  CHECK(every10.offenses[0].group.key == kSite);
  // Every 100th: 0.01 per operation, under the effect size: listed, not failed.
  GateResult every100 = Gate(Run(10'000, {Pair(100)}), PerOperation({}));
  CHECK(every100.passed());
  CHECK(every100.new_within_noise.size() == 1);
  // With few operations 0.1 per operation is still a regression: 10 of 100.
  CHECK_FALSE(Gate(Run(100, {Pair(10)}), PerOperation({})).passed());
}

TEST_CASE("gate rule: run-to-run noise of an allowed site passes, a change beyond it fails") {
  CrossPair base = Pair(600);  // 0.06 per operation in the baseline
  Baseline b = PerOperation({{base.key, {0.06, 0}}});
  // 0.115 per operation over 100 operations: 12 seen where 6 were expected;
  // P(X >= 12 | 6) = 0.02: noise.
  GateResult few = Gate(Run(100, {Pair(12)}), b);
  CHECK(few.passed());
  // The same rate over 10,000 operations: 1,150 where 600 were expected.
  GateResult many = Gate(Run(10'000, {Pair(1'150)}), b);
  REQUIRE(many.offenses.size() == 1);
  CHECK(many.offenses[0].verdict == GateVerdict::kGrown);
  CHECK(many.offenses[0].p_value < kSignificance);
  // 2% above a rate of 1 per operation: under the effect size, passes.
  Baseline one = PerOperation({{base.key, {1.0, 0}}});
  CHECK(Gate(Run(100'000, {Pair(102'000)}), one).passed());
  // Doubled: fails.
  CHECK_FALSE(Gate(Run(100'000, {Pair(200'000)}), one).passed());
}

TEST_CASE("gate rule: a site that crossed threads part of the time may cross more, up to its objects") {
  // Baseline: 0.43 of the site's 1.0 object per operation crossed (timing).
  CrossPair base = Pair(4'300);
  Baseline b = PerOperation({{base.key, {0.43, 0}}}, {{kSite, 1.0}});
  GateResult more = Gate(Run(10'000, {Pair(8'200)}), b);
  CHECK(more.passed());
  // Past 1.5 x all of the site's objects: fails.
  GateResult past = Gate(Run(10'000, {Pair(16'000)}), b);
  REQUIRE(past.offenses.size() == 1);
  CHECK(past.offenses[0].group.timing_dependent);
  // A site that crossed only 2% of the time is not timing-dependent: half of
  // its objects crossing now is a change.
  Baseline rare = PerOperation({{base.key, {0.02, 0}}}, {{kSite, 1.0}});
  GateResult half = Gate(Run(10'000, {Pair(5'000)}), rare);
  REQUIRE(half.offenses.size() == 1);
  CHECK_FALSE(half.offenses[0].group.timing_dependent);
}

TEST_CASE("gate rule: one site freed by whichever thread gets it is one group") {
  CrossPair a = Pair(5'000, 0, "reactor-N"), b = Pair(5'000, 0, "poller");
  Baseline base = PerOperation({{a.key, {0.5, 0}}, {b.key, {0.5, 0}}});
  // 0.8 / 0.2 instead of 0.5 / 0.5: the site's rate did not change.
  GateResult r = Gate(Run(10'000, {Pair(8'000, 0, "reactor-N"), Pair(2'000, 0, "poller")}), base);
  CHECK(r.passed());
  CHECK(r.groups == 1);
  // A third freeing thread for the same objects is not a new site either.
  GateResult third =
      Gate(Run(10'000, {Pair(4'000, 0, "reactor-N"), Pair(3'000, 0, "poller"), Pair(3'000, 0, "x")}),
           base);
  CHECK(third.passed());
  CHECK(third.new_within_noise.size() == 1);
}

TEST_CASE("gate rule: bounded objects fail only when they grow with the work") {
  // 2,000 one-off objects in 1,000 operations: two per operation is no one-off.
  GateResult grows = Gate(Run(1'000, {Pair(0, 2'000)}), PerOperation({}));
  REQUIRE(grows.offenses.size() == 1);
  CHECK(grows.offenses[0].verdict == GateVerdict::kBoundedGrowing);
  // Start-up and shutdown objects, however many threads: pass.
  CHECK(Gate(Run(1'000, {Pair(0, 300)}), PerOperation({})).passed());
  // Per 1000 allocations bounded objects are not judged.
  Baseline per_alloc;
  CHECK(Gate(Run(0, {Pair(0, 2'000)}, 2'000), per_alloc).passed());
}

TEST_CASE("gate rule: per 1000 allocations without --operations, and units that do not match") {
  // 1,500 objects in 1,000,000 allocations: 1.5 per 1000, above the effect size 1.
  CHECK_FALSE(Gate(Run(0, {Pair(1'500)}), Baseline{}).passed());
  CHECK(Gate(Run(0, {Pair(500)}), Baseline{}).passed());
  CrossPair p = Pair(10);
  GateResult r;
  std::string error;
  CHECK_FALSE(EvaluateGate(Run(0, {p}), PerOperation({{p.key, {0.1, 0}}}), {}, {}, &r, &error));
  CHECK(error == "the baseline's rates are per operation: give the run's operations (--operations N)");
  Baseline per_alloc;
  per_alloc.allowed[p.key] = {1, 0};
  CHECK_FALSE(EvaluateGate(Run(10, {p}), per_alloc, {}, {}, &r, &error));
  CHECK(error.rfind("the baseline's rates are per 1000 allocations", 0) == 0);
}

TEST_CASE("gate rule: the Poisson tail") {
  CHECK(PoissonUpperTail(0, 5) == 1.0);
  CHECK(PoissonUpperTail(3, 0) == 0.0);
  CHECK(PoissonUpperTail(1, 1.0) == Approx(1 - 0.36787944117));
  CHECK(PoissonUpperTail(12, 6.0) == Approx(0.0200919).epsilon(1e-4));
}

TEST_CASE("groups and keys: a pair key's allocation site, names without parameter lists") {
  CHECK(GroupKeyOf("a -> b | alloc: X <- Y | free: Z") == "X <- Y");
  CHECK(GroupKeyOf("not a key") == "not a key");
  CHECK(KeyFunctionName("ns::C::Run(Flags const&) const") == "ns::C::Run");
  CHECK(KeyFunctionName("f(int)::{lambda()#1}::operator()() const") == "f::{lambda()#1}::operator()");
  CHECK(KeyFunctionName("(anonymous namespace)::Producer(int)") == "(anonymous namespace)::Producer");
  CHECK(KeyFunctionName("std::ostream& std::operator<< <std::char_traits<char> >(std::ostream&, char const*)") ==
        "std::operator<< <std::char_traits<char> >");
  CHECK(KeyFunctionName("operator new(unsigned long)") == "operator new");
  CHECK(KeyFunctionName("Foo::operator bool() const") == "Foo::operator bool");
  CHECK(KeyFunctionName("a::b<c(int)>::d(e<f>)") == "a::b<c(int)>::d");
  CHECK(KeyFunctionName("main") == "main");
  // What -g1 debug info names (no linkage name) is what the symbol table names, stripped.
  CHECK(KeyFunctionName("rpc::Worker::Run") == KeyFunctionName("rpc::Worker::Run(rpc::Flags const&)"));
}

TEST_CASE("lifecycle: a pair is per-call when most of its objects are of the steady state") {
  CrossPair p = Pair(9, 1);
  CHECK(p.lifecycle() == Lifecycle::kPerCall);
  CHECK(p.LifecycleEvidence() == "9 of 10 objects in the steady state");
  CrossPair q = Pair(1, 2);
  q.edge_bounded = SampledCount{1};
  q.thread_bounded = SampledCount{1};
  CHECK(q.lifecycle() == Lifecycle::kBounded);
  CHECK(q.LifecycleEvidence() ==
        "1 freed after the allocating thread exited or allocated before the freeing thread's first "
        "event; 1 allocated and freed at the run's edges (start-up, shutdown); 1 in the steady state");
  CHECK(std::string(LifecycleName(Lifecycle::kBounded)) == "bounded");
}

}  // namespace
}  // namespace crossfree::analyzer
