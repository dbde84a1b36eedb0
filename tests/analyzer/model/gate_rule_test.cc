// SPDX-License-Identifier: Apache-2.0
// The gate's rule (gate.h) on models with known counts: noise against
// change, per operation and per 1000 allocations, timing-dependent sites,
// bounded objects, and the keys and groups it compares.
#include <catch2/catch.hpp>

#include <cmath>
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

TEST_CASE("gate rule: --min-effect 0 means zero, and the unit is checked against an empty baseline") {
  // 10 objects in 10,000 operations: 0.001 per operation, under the default
  // effect; with an effect of 0 any significant rise fails (the baseline
  // gives no units here: its rate 0 is exact, so one object is significant).
  CHECK(Gate(Run(10'000, {Pair(10)}), PerOperation({})).passed());
  GateResult zero = Gate(Run(10'000, {Pair(10)}), PerOperation({}), {.min_effect = 0});
  CHECK(zero.min_effect == 0);
  REQUIRE(zero.offenses.size() == 1);
  CHECK(zero.offenses[0].verdict == GateVerdict::kNew);
  CHECK(Gate(Run(10'000, {Pair(10)}), PerOperation({}), {}).min_effect == kMinEffectPerOperation);
  // An empty baseline written per operation, a run without --operations.
  GateResult r;
  std::string error;
  CHECK_FALSE(EvaluateGate(Run(0, {Pair(10)}), PerOperation({}), {}, {}, &r, &error));
  CHECK(error == "the baseline's rates are per operation: give the run's operations (--operations N)");
}

TEST_CASE("gate rule: without --operations a warning names what is not judged") {
  GateResult r = Gate(Run(0, {Pair(0, 2'000)}, 2'000), Baseline{});
  CHECK(r.passed());
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0] ==
        "no --operations: per-call rates are per 1000 allocations, which move when the run's "
        "allocations per operation change (a hand-off on 1 call in 20 is at most the effect size, "
        "caught at most about half the time, at 50 or more allocations per call), and bounded "
        "(one-off) objects are not judged");
  CHECK(r.bounded_effect == 0);
  CHECK(Gate(Run(1'000, {Pair(10)}), PerOperation({})).warnings.empty());
  // A version 2 baseline gives no units: said too.
  Baseline v2 = PerOperation({});
  v2.version = 2;
  GateResult old = Gate(Run(1'000, {Pair(10)}), v2);
  REQUIRE(old.warnings.size() == 1);
  CHECK(old.warnings[0].rfind("the baseline (version 2) does not give its run's units", 0) == 0);
}

TEST_CASE("gate rule: bounded objects' effect size is an option") {
  // A thread-per-request server: +0.5 one-off objects per request.
  CHECK(Gate(Run(1'000, {Pair(0, 500)}), PerOperation({})).passed());
  GateResult r = Gate(Run(1'000, {Pair(0, 500)}), PerOperation({}), {.bounded_effect = 0.25});
  REQUIRE(r.offenses.size() == 1);
  CHECK(r.offenses[0].verdict == GateVerdict::kBoundedGrowing);
  CHECK(r.offenses[0].limit == 0.25);
}

// P(X >= k), X ~ Binomial(n, p), summed term by term in long double.
long double BinomialTailSum(uint64_t k, uint64_t n, long double p) {
  long double sum = 0;
  for (uint64_t i = k; i <= n; ++i) {
    long double log_term = std::lgamma(static_cast<long double>(n) + 1) -
                           std::lgamma(static_cast<long double>(i) + 1) -
                           std::lgamma(static_cast<long double>(n - i) + 1) +
                           i * std::log(p) + (n - i) * std::log1p(-p);
    sum += std::exp(log_term);
  }
  return sum;
}

TEST_CASE("gate rule: with the baseline's units the test allows for the baseline's own noise") {
  // Baseline: 60 objects in 1,000 operations (0.06); this run: 1,000
  // operations. Under equal rates this run's share of the c + 60 objects is
  // Binomial(c + 60, 1/2).
  CrossPair base = Pair(60);
  Baseline b = PerOperation({{base.key, {0.06, 0}}});
  b.units = b.steady_units = 1'000;
  // 111: past the effect (0.111 >= 0.11) and the growth (> 0.09).
  GateResult r = Gate(Run(1'000, {Pair(111)}), b);
  REQUIRE(r.offenses.size() == 1);
  CHECK(r.offenses[0].p_value == Approx(static_cast<double>(BinomialTailSum(111, 171, 0.5L))).epsilon(1e-9));
  CHECK(r.offenses[0].p_value < kSignificance);
  // 0.1: under the effect, passes whatever the test says.
  CHECK(Gate(Run(1'000, {Pair(100)}), b).passed());
  // A new site against a baseline as long: 0.5^c < 0.001 needs 10 objects;
  // with --min-effect 0, 9 in 1,000 operations pass and 10 fail.
  CHECK(Gate(Run(1'000, {Pair(9, 0, "r", "New")}), b, {.min_effect = 0}).passed());
  CHECK_FALSE(Gate(Run(1'000, {Pair(10, 0, "r", "New")}), b, {.min_effect = 0}).passed());
  CHECK(BinomialUpperTail(111, 171, 0.5) == Approx(static_cast<double>(BinomialTailSum(111, 171, 0.5L))));
  CHECK(BinomialLowerTail(3, 10, 0.5) == Approx(176.0 / 1024));
}

TEST_CASE("gate rule: the promise is the increase that fails in 99.99% of runs, from the same tests") {
  for (double u : {300.0, 3'000.0, 30'000.0}) {
    for (double b : {0.0, 0.05, 0.5, 2.0}) {
      INFO("operations " << u << ", baseline " << b);
      RateTest t{.baseline_rate = b, .baseline_units = u, .units = u,
                 .effect = kMinEffectPerOperation, .growth_base = b, .max_growth = 1.5};
      uint64_t c = SmallestFailingCount(t);
      CHECK(CountFails(t, c));
      CHECK_FALSE(CountFails(t, c - 1));
      double delta = DetectableIncrease(t);
      // At b + delta, P(count >= c) = 0.9999 exactly; a hair less, less.
      CHECK(PoissonUpperTail(c, (b + delta) * u) == Approx(1 - kMissProbability).epsilon(1e-9));
      CHECK(PoissonUpperTail(c, (b + delta * 0.99) * u) < 1 - kMissProbability);
    }
  }
  CHECK(kMissProbability == 1e-4);
  // A new site in 300 operations against a baseline as long: 15 objects
  // (the effect 0.05 x 300) fail, and a Poisson count reaches 15 in 99.99%
  // of runs at a mean of 33.816: +0.11272 per operation, printed rounded up
  // as 0.12. (In 99.9% of runs at a mean of 29.85: 1 in 10 calls is caught
  // in 99.9% of runs, not in 99.99%.)
  RateTest fresh{.baseline_rate = 0, .baseline_units = 300, .units = 300,
                 .effect = kMinEffectPerOperation, .growth_base = 0, .max_growth = 1.5};
  CHECK(SmallestFailingCount(fresh) == 15);
  CHECK(DetectableIncrease(fresh) == Approx(0.112721).epsilon(1e-5));
  CHECK(FormatPromise(DetectableIncrease(fresh)) == "0.12");
  CHECK(PoissonUpperTail(15, 29.85) == Approx(0.999).epsilon(1e-4));
  CHECK(FormatPromise(0.0552) == "0.056");
  CHECK(FormatPromise(1.3) == "1.3");
  CHECK(FormatPromise(127.1) == "130");
  // The gate's own figure for a run is the same function's.
  GateResult r = Gate(Run(300, {}), PerOperation({}));
  CHECK(r.promise_new == DetectableIncrease({.baseline_rate = 0, .baseline_units = 0, .units = 300,
                                             .effect = kMinEffectPerOperation, .growth_base = 0,
                                             .max_growth = 1.5}));
}

TEST_CASE("gate rule: a timing-dependent site fails when it crosses far more often than it did") {
  // Baseline: 15% of the site's 1.0 object per operation crossed.
  CrossPair base = Pair(1'500);
  Baseline b = PerOperation({{base.key, {0.15, 0}}}, {{kSite, 1.0}});
  b.site_shares[kSite] = 0.15;
  auto run = [](uint64_t crossed) {
    Analysis a = Run(10'000, {Pair(crossed)});
    a.site_objects[kSite] = 10'000;
    return a;
  };
  // All of them now: 0% stay, below 85% / 8.
  GateResult all = Gate(run(10'000), b);
  REQUIRE(all.offenses.size() == 1);
  CHECK(all.offenses[0].verdict == GateVerdict::kGrown);
  CHECK(all.offenses[0].by_share);
  CHECK(all.offenses[0].staying_share == 0);
  CHECK(all.offenses[0].staying_limit == Approx(0.10625));
  // 60%, 80% and 85% cross: timing (15% stay, above 10.625%).
  CHECK(Gate(run(6'000), b).passed());
  CHECK(Gate(run(8'000), b).passed());
  CHECK(Gate(run(8'500), b).passed());
  // 90%: 10% stay, below 10.625%, but 1,000 of 10,000 where 1,062.5 were
  // the least is binomial noise (p = 0.02); 91%: 900, p < 1e-6, fails.
  CHECK(Gate(run(9'000), b).passed());
  CHECK_FALSE(Gate(run(9'100), b).passed());
  // 0.43 -> 0.82 (gRPC's sync server on reruns) passes: 18% stay, 57% / 8 = 7.1%.
  Baseline grpc = PerOperation({{base.key, {0.43, 0}}}, {{kSite, 1.0}});
  grpc.site_shares[kSite] = 0.43;
  CHECK(Gate(run(8'200), grpc).passed());
  // --timing-slack 2: 28.5% is the least; 18% fails.
  CHECK_FALSE(Gate(run(8'200), grpc, {.timing_slack = 2}).passed());
}

// A timing-dependent site's run: `crossed` of `objects` allocated at kSite
// crossed threads, over `operations`.
Analysis TimingRun(uint64_t operations, uint64_t crossed, uint64_t objects) {
  Analysis a = Run(operations, {Pair(crossed)});
  a.site_objects[kSite] = objects;
  return a;
}

// A version 4 baseline of runs of `operations` each, with kSite's counts.
Baseline TimingBaseline(uint64_t operations, const std::vector<SiteRunCount>& runs) {
  SiteRunCount total;
  for (const SiteRunCount& r : runs) total.Add(r);
  const double units = static_cast<double>(operations * runs.size());
  Baseline b = PerOperation({{Pair(0).key, {static_cast<double>(total.crossed) / units, 0}}},
                            {{kSite, static_cast<double>(total.objects) / units}});
  b.units = b.steady_units = units;
  b.site_shares[kSite] = static_cast<double>(total.crossed) / static_cast<double>(total.objects);
  b.runs = static_cast<int>(runs.size());
  b.site_runs[kSite] = runs;
  return b;
}

TEST_CASE("gate rule: a timing-dependent site of a one-run baseline: its counts' lower bound / the slack") {
  // 1,500 of 10,000 crossed: 85% stayed. The one-sided Clopper-Pearson
  // lower bound at 0.0005 is 0.837937 (P(Binomial(10000, q) >= 8500) =
  // 0.0005), / 8 = 0.104742.
  Baseline b = TimingBaseline(10'000, {{10'000, 1'500}});
  StayingBound bound = LeastStayingShare(b.site_runs[kSite], kTimingSlack);
  CHECK(bound.runs == 1);
  CHECK(bound.baseline_staying == Approx(0.85));
  CHECK(bound.least == Approx(0.104742).epsilon(1e-5));
  CHECK(bound.run_alpha == kSignificance / 2);
  // All cross now: fails on the share.
  GateResult all = Gate(TimingRun(10'000, 10'000, 10'000), b);
  REQUIRE(all.offenses.size() == 1);
  CHECK(all.offenses[0].by_share);
  CHECK(all.offenses[0].group.baseline_runs == 1);
  CHECK(all.offenses[0].staying_limit == Approx(0.104742).epsilon(1e-5));
  // The edge: 948 of 10,000 staying is noise (P(Binomial(10000, 0.104742)
  // <= 948) = 0.00053 >= 0.0005); 947 is not (0.00047).
  CHECK(Gate(TimingRun(10'000, 9'052, 10'000), b).passed());
  CHECK_FALSE(Gate(TimingRun(10'000, 9'053, 10'000), b).passed());
  CHECK(Gate(TimingRun(10'000, 8'500, 10'000), b).passed());
  // A version 3 baseline (no site-runs): the same counts from its rate,
  // share and units, the same bound.
  Baseline v3 = b;
  v3.version = 3;
  v3.runs = 1;
  v3.site_runs.clear();
  GateResult old = Gate(TimingRun(10'000, 10'000, 10'000), v3);
  REQUIRE(old.offenses.size() == 1);
  CHECK(old.offenses[0].staying_limit == Approx(0.104742).epsilon(1e-5));
  CHECK(Gate(TimingRun(10'000, 9'052, 10'000), v3).passed());
  CHECK_FALSE(Gate(TimingRun(10'000, 9'053, 10'000), v3).passed());
}

TEST_CASE("gate rule: a timing-dependent site of a baseline of runs: the bound from their spread") {
  // 15%, 14% and 16% of 1,000 crossed in three runs: y = ln((s + 1/2) /
  // 1001) = -0.16293, -0.15124, -0.17476; m = -0.16298, d = 0.011758,
  // t(2, 0.9995) = 31.5991: least = exp(m - t d sqrt(4/3)) = 0.553214.
  std::vector<SiteRunCount> runs = {{1'000, 150}, {1'000, 140}, {1'000, 160}};
  Baseline b = TimingBaseline(1'000, runs);
  StayingBound bound = LeastStayingShare(runs, kTimingSlack);
  CHECK(bound.runs == 3);
  CHECK(bound.least == Approx(0.553214).epsilon(1e-5));
  CHECK(bound.run_alpha == kSignificance / 2);
  // The slack does not apply: the runs measured the spread.
  CHECK(LeastStayingShare(runs, 1).least == bound.least);
  // 15% -> 100% of 300 objects: fails.
  GateResult all = Gate(TimingRun(300, 300, 300), b);
  REQUIRE(all.offenses.size() == 1);
  CHECK(all.offenses[0].by_share);
  CHECK(all.offenses[0].group.baseline_runs == 3);
  CHECK(all.offenses[0].staying_limit == Approx(0.553214).epsilon(1e-5));
  // 15% again, and the edge: 138 of 300 staying is noise (P(Binomial(300,
  // 0.553214) <= 138) = 0.00074), 137 is not (0.00049).
  CHECK(Gate(TimingRun(300, 45, 300), b).passed());
  CHECK(Gate(TimingRun(300, 162, 300), b).passed());
  CHECK_FALSE(Gate(TimingRun(300, 163, 300), b).passed());
  // Runs that are not counted at the site (0 objects) are left out.
  std::vector<SiteRunCount> with_empty = runs;
  with_empty.push_back({0, 0});
  CHECK(LeastStayingShare(with_empty, kTimingSlack).least == bound.least);
  // Two runs as far apart as gRPC's reruns (43% and 82% crossing): one
  // degree of freedom, t(1, 0.9995) = 636.6: the bound is 0, no share fails.
  std::vector<SiteRunCount> apart = {{10'000, 4'300}, {10'000, 8'200}};
  CHECK(LeastStayingShare(apart, kTimingSlack).least < 1e-100);
  CHECK(Gate(TimingRun(10'000, 10'000, 10'000), TimingBaseline(10'000, apart)).passed());
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
