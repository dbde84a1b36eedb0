// SPDX-License-Identifier: Apache-2.0
// Sampled traces, known answers: the estimator and its interval against
// hand-computed values, unbiasedness and coverage over seeded thinnings of a
// full synthetic run whose truth is known, the gate's and the diff's rules,
// the refusals (mixed periods, --from/--to), and what every output format
// says about a sampled run.
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cmath>
#include <initializer_list>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/model/baseline.h"
#include "analyzer/model/diff.h"
#include "analyzer/model/estimate.h"
#include "analyzer/model/gate.h"
#include "analyzer/render/folded.h"
#include "analyzer/render/html.h"
#include "analyzer/render/json.h"
#include "analyzer/render/pprof.h"
#include "analyzer/render/text.h"
#include "pprof/profile.pb.h"
#include "tests/analyzer/model/evaluate_gate.h"
#include "tests/analyzer/model/name_resolver.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer {

// The models are checked as the renderers print them.
using namespace crossfree::analyzer::render;
namespace {

namespace pprof = ::perftools::profiles;

using testing::NameResolver;
using testing::SyntheticTrace;


constexpr uint32_t kPid = 700;
constexpr uint32_t kProducer0 = 701, kProducer1 = 702, kConsumer0 = 703, kConsumer1 = 704;

// The alloc site key of stack id s (frames {0x1000 s, 0x9000}).
std::string AllocSite(uint32_t s) { return fmt::format("F{:x} <- F9000", 0x1000 * s); }  // keys have no parameter lists

// The objects of a full run: each allocated on one thread at one stack and
// freed on another (or the same) thread at another stack.
struct Object {
  uint32_t alloc_tid, free_tid, alloc_stack, free_stack;
  uint64_t size;
  size_t pair;  // index into the run's pairs
};

struct PairSpec {
  uint32_t alloc_tid, free_tid, alloc_stack, free_stack;
  uint64_t count, size;
};

// Three cross-thread pairs of 2000, 500 and 50 objects, and 1000 objects
// allocated and freed on one thread (same-thread).
const std::vector<PairSpec>& TruthPairs() {
  static const std::vector<PairSpec> pairs = {
      {kProducer0, kConsumer0, 1, 11, 2000, 48},
      {kProducer1, kConsumer1, 2, 12, 500, 256},
      {kConsumer0, kProducer0, 3, 13, 50, 4096},
      {kProducer0, kProducer0, 4, 14, 1000, 24},
  };
  return pairs;
}

std::vector<Object> FullRun(const std::vector<PairSpec>& pairs) {
  std::vector<Object> objects;
  // Interleaved, so every pair runs the whole length of the trace.
  for (uint64_t i = 0;; ++i) {
    bool any = false;
    for (size_t p = 0; p < pairs.size(); ++p) {
      if (i >= pairs[p].count) continue;
      any = true;
      const PairSpec& s = pairs[p];
      objects.push_back({s.alloc_tid, s.free_tid, s.alloc_stack, s.free_stack, s.size, p});
    }
    if (!any) break;
  }
  return objects;
}

format::HeaderFields Sampled(uint32_t period, uint32_t pid = kPid) {
  format::HeaderFields f;
  f.pid = pid;
  f.sample_period = period;
  return f;
}

void Names(SyntheticTrace& t) {
  t.ThreadName(kProducer0, 1, "producer-0");
  t.ThreadName(kProducer1, 1, "producer-1");
  t.ThreadName(kConsumer0, 1, "consumer-0");
  t.ThreadName(kConsumer1, 1, "consumer-1");
  for (uint32_t s = 1; s <= 20; ++s) t.Stack(kProducer0, s, {0x1000ull * s, 0x9000});
}

// A sampled trace of the run: each object traced with probability
// 1/period (seeded), both its events when it is; counts records with every
// thread's exact allocations and frees. observed[p]: objects of pair p kept.
struct Thinned {
  SyntheticTrace trace;
  std::vector<uint64_t> observed;
};

Thinned Thin(const std::vector<Object>& objects, size_t pair_count, uint32_t period,
             uint64_t seed) {
  Thinned out{SyntheticTrace(Sampled(period)), std::vector<uint64_t>(pair_count, 0)};
  Names(out.trace);
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(1.0 / period);
  std::map<uint32_t, format::ThreadCounts> counts;
  uint64_t ts = 100;
  for (size_t i = 0; i < objects.size(); ++i) {
    const Object& o = objects[i];
    ++counts[o.alloc_tid].allocs;
    ++counts[o.free_tid].frees;
    ts += 10;
    if (!keep(rng)) continue;
    ++out.observed[o.pair];
    uint64_t address = 0x10000000 + i * 0x1000;  // never reused
    out.trace.Alloc(o.alloc_tid, ts, address, o.size, o.alloc_stack);
    out.trace.Free(o.free_tid, ts + 5, address, o.free_stack);
  }
  for (auto& [tid, c] : counts) out.trace.Counts(tid, c);
  return out;
}

struct Analyzed {
  TraceSet set;
  NameResolver resolver;
  Analysis analysis;
};

void AnalyzeInto(Analyzed& r, SyntheticTrace& trace, const std::string& name = "sampled.trc",
                 AnalysisOptions options = {}) {
  std::string error;
  REQUIRE(r.set.AddBytes(trace.Finish(), name, &error));
  options.pairing.jobs = 1;
  REQUIRE(Analyze(r.set, options, &r.resolver, &r.analysis, &error));
}

// The error Analyze refuses the named traces with, as one run; "" when it
// analyses them.
std::string Refusal(std::initializer_list<std::pair<std::string, SyntheticTrace*>> traces,
                    const AnalysisOptions& options = {}) {
  Analyzed r;
  std::string error;
  for (const auto& [name, trace] : traces) REQUIRE(r.set.AddBytes(trace->Finish(), name, &error));
  if (Analyze(r.set, options, &r.resolver, &r.analysis, &error)) return "";
  return error;
}

const CrossPair* FindPair(const Analysis& a, uint32_t alloc_stack) {
  for (const CrossPair& p : a.pairs) {
    if (p.alloc_site.key == AllocSite(alloc_stack)) return &p;
  }
  return nullptr;
}

// P(Poisson(mean) <= x), summed directly (the test's own computation, not
// Boost's).
long double PoissonCdf(uint64_t x, long double mean) {
  long double term = std::exp(-mean), sum = term;
  for (uint64_t k = 1; k <= x; ++k) {
    term *= mean / k;
    sum += term;
  }
  return sum;
}

// The Garwood bounds by bisection on the Poisson CDF: the lower bound is
// the mean at which P(X >= x) = 0.025, the upper the one at which
// P(X <= x) = 0.025.
Interval BisectGarwood(uint64_t x) {
  auto solve = [](auto&& f, long double target) {  // f decreasing in the mean
    long double lo = 0, hi = 1000;
    for (int i = 0; i < 200; ++i) {
      long double mid = (lo + hi) / 2;
      (f(mid) > target ? lo : hi) = mid;
    }
    return static_cast<double>((lo + hi) / 2);
  };
  Interval r;
  // P(X >= x) = 1 - P(X <= x - 1) = 0.025.
  r.low = x == 0 ? 0 : solve([x](long double m) { return PoissonCdf(x - 1, m); }, 0.975L);
  r.high = solve([x](long double m) { return PoissonCdf(x, m); }, 0.025L);
  return r;
}

TEST_CASE("Garwood intervals: published values for 0, 1, 10 and 100, and the test's own bisection") {
  struct Ref {
    uint64_t x;
    double low, high;
  };
  // chi2_0.025(2x)/2 and chi2_0.975(2x+2)/2, computed to 12 digits (mpmath).
  const Ref refs[] = {{0, 0.0, 3.68887945411},
                      {1, 0.0253178079843, 5.57164339094},
                      {10, 4.79538869613, 18.390356042},
                      {100, 81.3639912509, 121.626793792}};
  for (const Ref& r : refs) {
    INFO("x = " << r.x);
    Interval g = GarwoodInterval(r.x);
    CHECK(g.low == Approx(r.low).epsilon(1e-9).margin(1e-12));
    CHECK(g.high == Approx(r.high).epsilon(1e-9));
    Interval b = BisectGarwood(r.x);
    CHECK(b.low == Approx(r.low).epsilon(1e-9).margin(1e-12));
    CHECK(b.high == Approx(r.high).epsilon(1e-9));
    // At N = 100: the estimate is 100 x, the interval 100 x the bounds.
    Estimate e = EstimateCount(r.x, 100);
    CHECK(e.observed == r.x);
    CHECK(e.value == 100.0 * r.x);
    CHECK(e.low == Approx(100 * r.low).margin(1e-9));
    CHECK(e.high == Approx(100 * r.high));
  }
  for (uint64_t x : {2, 3, 5, 20, 50, 500}) {
    INFO("x = " << x);
    Interval g = GarwoodInterval(x), b = BisectGarwood(x);
    CHECK(g.low == Approx(b.low).epsilon(1e-8));
    CHECK(g.high == Approx(b.high).epsilon(1e-8));
  }
  // Past a million sampled objects the chi-square quantiles are
  // approximated (Boost's inversion slows, then fails): the bounds go on
  // smoothly, 1 apart for counts 1 apart, and huge counts do not throw.
  Interval m = GarwoodInterval(1000000), m1 = GarwoodInterval(1000001);
  CHECK(m1.low - m.low == Approx(1.0).epsilon(1e-3));
  CHECK(m1.high - m.high == Approx(1.0).epsilon(1e-3));
  CHECK(m.low == Approx(1e6 - 1.959964 * 1000).epsilon(1e-6));
  Interval huge = GarwoodInterval(1000000000000ull);
  CHECK(huge.low == Approx(1e12 - 1.959964e6).epsilon(1e-9));
  CHECK(huge.high == Approx(1e12 + 1.959964e6).epsilon(1e-9));
  // Unsampled: exact, the interval is the count.
  Estimate exact = EstimateCount(7, 1);
  CHECK(exact.value == 7);
  CHECK(exact.low == 7);
  CHECK(exact.high == 7);
  // Bytes: N x the sampled bytes, the count's interval at the mean size.
  Estimate bytes = EstimateBytes(10, 480, 100);
  CHECK(bytes.value == 48000);
  CHECK(bytes.low == Approx(100 * 4.79538869613 * 48));
  CHECK(bytes.high == Approx(100 * 18.390356042 * 48));
  // A crafted period cannot overflow the scaled count.
  CHECK(ScaleCount(~uint64_t{0} / 2, 0xffffffffu) == ~uint64_t{0});
}

TEST_CASE("the interval covers the truth in at least 95% of binomial thinnings (exact sum)") {
  // P(T in N x Garwood(X)) for X ~ Binomial(T, 1/N), summed over X.
  for (uint32_t period : {10u, 100u, 1000u}) {
    for (uint64_t truth : {1, 5, 50, 500, 2000, 20000}) {
      double p = 1.0 / period, coverage = 0;
      uint64_t top = std::min<uint64_t>(truth, static_cast<uint64_t>(truth * p + 40 * std::sqrt(truth * p + 1) + 40));
      for (uint64_t x = 0; x <= top; ++x) {
        double log_pmf = std::lgamma(truth + 1.0) - std::lgamma(x + 1.0) -
                         std::lgamma(truth - x + 1.0) + x * std::log(p) +
                         (truth - x) * std::log1p(-p);
        Estimate e = EstimateCount(x, period);
        if (e.low <= truth && truth <= e.high) coverage += std::exp(log_pmf);
      }
      INFO("period " << period << ", truth " << truth);
      CHECK(coverage >= 0.95);
    }
  }
}

TEST_CASE("sampled trace: each pair's estimate is N x its sampled count, totals are exact") {
  const auto& pairs = TruthPairs();
  std::vector<Object> objects = FullRun(pairs);
  Thinned t = Thin(objects, pairs.size(), 100, 42);
  Analyzed r;
  AnalyzeInto(r, t.trace);
  const Analysis& a = r.analysis;
  REQUIRE(a.sampled());
  CHECK(a.sample_period == 100);
  // Every allocation and free of the run, from the counts records.
  CHECK(a.Allocations() == objects.size());
  CHECK(a.Frees() == objects.size());
  CHECK(a.counts.counts_records == 4);
  uint64_t cross_observed = 0;
  for (size_t p = 0; p < 3; ++p) {
    INFO("pair " << p << ", observed " << t.observed[p]);
    cross_observed += t.observed[p];
    const CrossPair* cp = FindPair(a, pairs[p].alloc_stack);
    if (t.observed[p] == 0) {
      CHECK(cp == nullptr);
      continue;
    }
    REQUIRE(cp != nullptr);
    CHECK(cp->count.sampled == t.observed[p]);
    CHECK(a.Scaled(cp->count.sampled) == 100 * t.observed[p]);
    Estimate n = a.Count(cp->count.sampled);
    Interval g = GarwoodInterval(t.observed[p]);
    CHECK(n.value == 100.0 * t.observed[p]);
    CHECK(n.low == Approx(100 * g.low));
    CHECK(n.high == Approx(100 * g.high));
    Estimate bytes = a.Bytes(cp->count.sampled, cp->bytes.sampled);
    CHECK(bytes.value == 100.0 * t.observed[p] * pairs[p].size);
    // The rate's denominator is the exact allocation count.
    CHECK(a.PerThousand(cp->count.sampled) == Approx(100.0 * t.observed[p] * 1000 / objects.size()));
  }
  CHECK(a.counts.cross_thread == cross_observed);
  CHECK(a.counts.paired - a.counts.cross_thread == t.observed[3]);
  CHECK(a.warnings.empty());
}

TEST_CASE("sampled trace: estimates are unbiased and their intervals cover the truth (400 thinnings)") {
  const auto& pairs = TruthPairs();
  std::vector<Object> objects = FullRun(pairs);
  constexpr int kRuns = 400;
  constexpr uint32_t kPeriod = 100;
  std::vector<double> sum(pairs.size(), 0);
  std::vector<int> covered(pairs.size(), 0);
  for (int run = 0; run < kRuns; ++run) {
    Thinned t = Thin(objects, pairs.size(), kPeriod, 1000 + run);
    Analyzed r;
    AnalyzeInto(r, t.trace);
    const Analysis& a = r.analysis;
    for (size_t p = 0; p < pairs.size(); ++p) {
      uint64_t observed = 0;
      if (p < 3) {
        const CrossPair* cp = FindPair(a, pairs[p].alloc_stack);
        observed = cp ? cp->count.sampled : 0;
      } else {
        observed = a.counts.paired - a.counts.cross_thread;
      }
      REQUIRE(observed == t.observed[p]);
      Estimate e = a.Count(observed);
      sum[p] += e.value;
      if (e.low <= pairs[p].count && pairs[p].count <= e.high) ++covered[p];
    }
  }
  for (size_t p = 0; p < pairs.size(); ++p) {
    double truth = static_cast<double>(pairs[p].count);
    double mean = sum[p] / kRuns;
    // Var(N X) = N T (1 - 1/N) for X ~ Binomial(T, 1/N).
    double se = std::sqrt(kPeriod * truth * (1 - 1.0 / kPeriod) / kRuns);
    INFO("pair " << p << ": truth " << truth << ", mean estimate " << mean << ", standard error "
                 << se << ", covered " << covered[p] << "/" << kRuns);
    CHECK(std::abs(mean - truth) <= 4 * se);
    CHECK(covered[p] >= 0.95 * kRuns);
  }
}

// A sampled run with `sampled` objects of one cross-thread pair (alloc stack
// `stack`) and counts records claiming `allocations` allocations in all.
SyntheticTrace PairRun(uint32_t period, uint64_t sampled, uint64_t allocations, uint32_t stack = 1,
                       uint32_t pid = kPid) {
  SyntheticTrace t(Sampled(period, pid));
  Names(t);
  uint64_t ts = 100;
  for (uint64_t i = 0; i < sampled; ++i) {
    t.Alloc(kProducer0, ts += 10, 0x20000000 + i * 64, 64, stack);
    t.Free(kConsumer0, ts += 10, 0x20000000 + i * 64, 11);
  }
  t.Counts(kProducer0, {allocations, 0, 0});
  t.Counts(kConsumer0, {0, allocations, 0});
  return t;
}

TEST_CASE("gate, sampled: a group fails when its estimate is past the effect and its interval past the growth") {
  // 10 sampled of 1,000,000 allocations at 1/100: ~1000 frees, ~1.0 per
  // 1000 allocations, 95% interval 0.480 .. 1.839.
  SyntheticTrace trace = PairRun(100, 10, 1000000);
  Analyzed r;
  AnalyzeInto(r, trace);
  const Analysis& a = r.analysis;
  REQUIRE(a.pairs.size() == 1);
  const CrossPair& p = a.pairs[0];
  CHECK(p.steady().sampled == 10);  // a trace of microseconds: no edges, no thread churn
  Estimate rate = a.Rate(p.count.sampled);
  CHECK(rate.value == Approx(1.0));
  CHECK(rate.low == Approx(0.479538869613));
  CHECK(rate.high == Approx(1.8390356042));

  SECTION("a group not in the baseline at the effect size fails as new") {
    GateResult g = testing::Gate(a, Baseline{});
    CHECK_FALSE(g.passed());
    REQUIRE(g.offenses.size() == 1);
    CHECK(g.offenses[0].verdict == GateVerdict::kNew);
    CHECK(g.sampled);
    std::string text = RenderGateText(a, g, "accept");
    CHECK(text.find("FAILED: 1 allocation group over the baseline (1 new, 0 grown") !=
          std::string::npos);
    CHECK(text.find("the trace is sampled 1/100") != std::string::npos);
  }
  SECTION("a new pair too rare to matter is listed, not failed") {
    // One sampled object: ~0.1 per 1000 allocations, under the effect size 1.
    SyntheticTrace once = PairRun(100, 1, 1000000, 2);
    Analyzed o;
    AnalyzeInto(o, once);
    GateResult g = testing::Gate(o.analysis, Baseline{});
    CHECK(g.passed());
    CHECK(g.new_within_noise.size() == 1);
  }
  SECTION("allowed at 0.5: 0.5 more than the baseline is under the effect size, so it passes") {
    Baseline b;
    b.allowed[p.key] = {0.5, 0};
    GateResult g = testing::Gate(a, b);
    CHECK(g.passed());
    CHECK(g.allowed == 1);
    CHECK(RenderGateText(a, g, "accept").find("PASSED") != std::string::npos);
  }
  SECTION("allowed at 0.2 with an effect size of 0.5: the interval is above 1.5 x 0.2, so it fails") {
    Baseline b;
    b.allowed[p.key] = {0.2, 0};
    GateResult g = testing::Gate(a, b, {.max_growth = 1.5, .min_effect = 0.5});
    REQUIRE(g.offenses.size() == 1);
    CHECK(g.offenses[0].verdict == GateVerdict::kGrown);
    CHECK(g.offenses[0].limit == Approx(0.7));
    CHECK(g.offenses[0].group.rate.low == Approx(0.479538869613));
    std::string text = RenderGateText(a, g, "accept");
    CHECK(text.find("GROWN") != std::string::npos);
    CHECK(text.find("~1 [0.4795..1.839] per-call objects per 1000 allocations") != std::string::npos);
    std::string json = RenderGateJson(a, g, "accept");
    CHECK(json.find("\"sampling\": {\"sample_period\": 100") != std::string::npos);
    CHECK(json.find("\"verdict\": \"GROWN\"") != std::string::npos);
    CHECK(json.find("\"low\": 0.479539, \"high\": 1.839036") != std::string::npos);
  }
  SECTION("allowed at 0.35 with an effect size of 0.5: the interval reaches 1.5 x 0.35, so it passes") {
    Baseline b;
    b.allowed[p.key] = {0.35, 0};
    CHECK(testing::Gate(a, b, {.max_growth = 1.5, .min_effect = 0.5}).passed());
  }
  SECTION("the same numbers unsampled fail at 0.5: only sampling noise is forgiven") {
    SyntheticTrace full(kPid);
    Names(full);
    for (uint64_t i = 0; i < 1000; ++i) {
      full.Alloc(kProducer0, 100 + 20 * i, 0x30000000 + i * 64, 64, 1);
      full.Free(kConsumer0, 110 + 20 * i, 0x30000000 + i * 64, 11);
    }
    for (uint64_t i = 0; i < 999000; i += 1000) {  // the other allocations, 1000 at a time
      for (uint64_t k = 0; k < 1000; ++k) full.Alloc(kProducer1, 30000000 + i + k, 0x40000000 + (i + k) * 16, 16, 4);
    }
    Analyzed u;
    AnalyzeInto(u, full, "full.trc");
    REQUIRE(u.analysis.counts.allocations == 1000000);
    REQUIRE(u.analysis.pairs.size() == 1);
    Baseline allowed;
    allowed.allowed[u.analysis.pairs[0].key] = {0.5, 0};
    CHECK_FALSE(testing::Gate(u.analysis, allowed, {.max_growth = 1.5, .min_effect = 0.5}).passed());
    allowed.allowed[u.analysis.pairs[0].key] = {0.6, 0};  // 1.0 - 0.6 is under the effect size
    CHECK(testing::Gate(u.analysis, allowed, {.max_growth = 1.5, .min_effect = 0.5}).passed());
  }
}

// An RPC-like run of `calls` operations, unsampled, 1 ms a call from
// `first_call_ms` on (start-up at 10 ms, shutdown 10 ms after the last call): a per-call object (stack 1) producer-0 -> consumer-0; a
// timing-dependent one (stack 2) that consumer-0 frees with probability
// `cross` and producer-0 itself otherwise; 5 start-up objects (stack 3)
// producer-1 allocates at 10 ms and consumer-1 frees at shutdown; with
// `handoff`, every 10th call one more object (stack 4) producer-0 ->
// consumer-1. Seeded: reruns differ as runs do.
SyntheticTrace RpcLikeRun(uint64_t calls, double cross, bool handoff, uint64_t seed,
                          uint64_t first_call_ms = 100) {
  SyntheticTrace t(kPid);
  Names(t);
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution crosses(cross);
  constexpr uint64_t kMs = 1'000'000;
  t.Alloc(kProducer0, 10 * kMs, 0x600, 16, 9);
  t.Alloc(kConsumer0, 10 * kMs, 0x610, 16, 9);
  for (uint64_t i = 0; i < 5; ++i) t.Alloc(kProducer1, 10 * kMs + i, 0x700 + i * 16, 16, 3);
  t.Alloc(kConsumer1, 10 * kMs, 0x620, 16, 9);
  for (uint64_t c = 0; c < calls; ++c) {
    uint64_t ts = first_call_ms * kMs + c * kMs, a = 0x10000000 + c * 0x100;
    t.Alloc(kProducer0, ts, a, 64, 1);
    t.Alloc(kProducer0, ts + 1000, a + 0x40, 64, 2);
    if (handoff && c % 10 == 0) t.Alloc(kProducer0, ts + 2000, a + 0x80, 64, 4);
    t.Free(kConsumer0, ts + 10000, a, 11);
    t.Free(crosses(rng) ? kConsumer0 : kProducer0, ts + 20000, a + 0x40, 12);
    if (handoff && c % 10 == 0) t.Free(kConsumer1, ts + 30000, a + 0x80, 13);
  }
  uint64_t end = (first_call_ms + calls + 10) * kMs;
  for (uint64_t i = 0; i < 5; ++i) t.Free(kConsumer1, end + i, 0x700 + i * 16, 14);
  t.Free(kProducer0, end, 0x600, 9);
  t.Free(kConsumer0, end, 0x610, 9);
  t.Free(kConsumer1, end, 0x620, 9);
  return t;
}

// AnalyzeInto for a run of `operations` operations (the trace must outlive
// r: the set reads its bytes).
void AnalyzeRun(Analyzed& r, SyntheticTrace& trace, const std::string& name,
                uint64_t operations) {
  AnalyzeInto(r, trace, name);
  r.analysis.operations = operations;
}

// The baseline `gate --update` writes for the run, read back.
Baseline BaselineOf(const Analysis& a) {
  std::string text = FormatBaseline(UnsuppressedPairs(a, {}), a, "accept");
  Baseline baseline;
  std::string error;
  REQUIRE(ParseBaseline(text, "base", &baseline, &error));
  return baseline;
}

// An RpcLikeRun of `calls` operations, analyzed and gated against a
// baseline. One object because the result points into the analysis and the
// analysis reads the trace's bytes.
struct GatedRun {
  GatedRun(const Baseline& baseline, uint64_t calls, double cross, bool handoff, uint64_t seed,
           const std::string& name)
      : trace(RpcLikeRun(calls, cross, handoff, seed)) {
    AnalyzeRun(run, trace, name, calls);
    result = testing::Gate(run.analysis, baseline);
  }
  SyntheticTrace trace;
  Analyzed run;
  GateResult result;
};

TEST_CASE("gate on synthetic runs: one run's baseline passes reruns and fails a planted hand-off") {
  SyntheticTrace base_trace = RpcLikeRun(1000, 0.4, false, 1);
  Analyzed base;
  AnalyzeRun(base, base_trace, "base.trc", 1000);
  // The per-call pair, the timing-dependent one and the start-up objects.
  const CrossPair* startup = FindPair(base.analysis, 3);
  REQUIRE(startup != nullptr);
  CHECK(startup->lifecycle() == Lifecycle::kBounded);
  REQUIRE(FindPair(base.analysis, 1) != nullptr);
  CHECK(FindPair(base.analysis, 1)->lifecycle() == Lifecycle::kPerCall);
  const Baseline baseline = BaselineOf(base.analysis);
  CHECK(baseline.per_operation);
  CHECK(baseline.sites.at(AllocSite(2)) == Approx(1.0));  // every call allocates one there

  // A longer rerun in which the timing-dependent site crossed 60% of the time.
  CHECK(GatedRun(baseline, 3000, 0.6, false, 2, "longer.trc").result.passed());

  // The same length with a hand-off every 10th call: fails, naming its site.
  GatedRun planted(baseline, 1000, 0.4, true, 3, "planted.trc");
  const GateResult& fail = planted.result;
  REQUIRE(fail.offenses.size() == 1);
  CHECK(fail.offenses[0].verdict == GateVerdict::kNew);
  CHECK(fail.offenses[0].group.key == AllocSite(4));
  // 0.1 per operation: the planted objects of the last 5% of the trace are
  // one-off (4 of 100), and so is that share of the run's time (issue 42).
  // The calls start 90 ms after the trace does, so the first edge (55 ms)
  // has none: 955 calls in 90% of the time read 0.1067, within the 1/0.9
  // the guide states for operations that avoid the edges.
  CHECK(fail.offenses[0].group.rate.value == Approx(0.1067).epsilon(1e-3));
}

TEST_CASE("gate on synthetic runs: a uniform per-call pair reads its rate within its Poisson interval") {
  // The hand-off of every 10th call (0.1 per operation) at 300, 3,000 and
  // 30,000 operations, the calls spread over the whole trace. Objects of the
  // run's first and last 5% are one-off; the rate divides the rest by the
  // steady state's operations.
  for (uint64_t calls : {300, 3'000, 30'000}) {
    INFO(calls << " operations");
    SyntheticTrace trace = RpcLikeRun(calls, 0.4, true, calls, /*first_call_ms=*/10);
    Analyzed run;
    AnalyzeRun(run, trace, "uniform.trc", calls);
    const CrossPair* handoff = FindPair(run.analysis, 4);
    REQUIRE(handoff != nullptr);
    CHECK(handoff->edge_bounded.sampled > 0);  // the edges are cut
    uint64_t c = handoff->steady().sampled;
    double v = run.analysis.SteadyUnits();
    CHECK(v < calls);
    Interval i = GarwoodInterval(c);
    double rate = run.analysis.PerSteadyUnit(c).value;
    CHECK(i.low / v <= 0.1);
    CHECK(0.1 <= i.high / v);
    // At 300 the hand-offs are 30, in steps of 1/270 per operation.
    if (calls >= 3'000) CHECK(rate == Approx(0.1).epsilon(0.02));
    // Divided by all operations it read low, outside its interval at 30,000.
    if (calls == 30'000) CHECK(i.high / calls < 0.1);
  }
}

TEST_CASE("gate on synthetic runs: a timing-dependent site fails on its crossing share, not on reruns") {
  // Baseline: the site of stack 2 crossed 15% of the time.
  SyntheticTrace base_trace = RpcLikeRun(2000, 0.15, false, 11);
  Analyzed base;
  AnalyzeRun(base, base_trace, "base.trc", 2000);
  const Baseline baseline = BaselineOf(base.analysis);
  CHECK(baseline.site_shares.at(AllocSite(2)) == Approx(0.15).epsilon(0.1));
  CHECK(baseline.units == 2000);
  CHECK(baseline.steady_units < 2000);
  // Reruns at 30% and 60%: timing. Every object crossing: a change.
  for (double cross : {0.15, 0.3, 0.6}) {
    INFO("crossing " << cross);
    CHECK(GatedRun(baseline, 3000, cross, false, 12, "rerun.trc").result.passed());
  }
  GatedRun all(baseline, 3000, 1.0, false, 13, "all.trc");
  const GateResult& r = all.result;
  REQUIRE(r.offenses.size() == 1);
  CHECK(r.offenses[0].group.key == AllocSite(2));
  CHECK(r.offenses[0].by_share);
  CHECK(r.offenses[0].verdict == GateVerdict::kGrown);
}

TEST_CASE("diff, sampled: a change counts only when the intervals do not overlap") {
  // Before: 10 sampled (1.0 per 1000, 0.48 .. 1.84). After: 15 sampled
  // (1.5, 0.84 .. 2.47): up 50%, but the intervals overlap.
  SyntheticTrace b = PairRun(100, 10, 1000000), overlap = PairRun(100, 15, 1000000),
                 apart = PairRun(100, 60, 1000000);
  Analyzed before, after, far;
  AnalyzeInto(before, b, "before.trc");
  AnalyzeInto(after, overlap, "after.trc");
  AnalyzeInto(far, apart, "far.trc");
  DiffResult d = ComputeDiff(before.analysis, after.analysis, 0.1);
  CHECK(d.sampled);
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0].status == DiffStatus::kUnchanged);
  CHECK_FALSE(d.rows[0].significant);
  CHECK(d.rows[0].after_rate == Approx(1.5));
  // 60 sampled: 6.0 per 1000, 4.58 .. 7.72: apart from 0.48 .. 1.84.
  DiffResult g = ComputeDiff(before.analysis, far.analysis, 0.1);
  REQUIRE(g.rows.size() == 1);
  CHECK(g.rows[0].status == DiffStatus::kGrown);
  CHECK(g.rows[0].significant);
  DiffResult s = ComputeDiff(far.analysis, before.analysis, 0.1);
  CHECK(s.rows[0].status == DiffStatus::kShrunk);
  std::string text = RenderDiffText(before.analysis, far.analysis, g);
  CHECK(text.find("Grown: per-call rate up by more than 10%, beyond noise") != std::string::npos);
  CHECK(text.find("~1.0 [0.5 .. 1.8]") != std::string::npos);
  CHECK(text.find("~6.0 [4.6 .. 7.7]") != std::string::npos);
  std::string json = RenderDiffJson(before.analysis, far.analysis, g);
  CHECK(json.find("\"status\": \"grown\", \"significant\": true") != std::string::npos);
  CHECK(json.find("\"rate\": {\"estimate\": 1.000, \"low\": 0.480, \"high\": 1.839}") !=
        std::string::npos);

  // A pair that only one sample shows: gone, and significant only when the
  // other run's bound for a count of 0 (3.69 x 100 per 1,000,000
  // allocations: 0.369 per 1000) is below the rate seen.
  SyntheticTrace other = PairRun(100, 2, 1000000, 5);
  Analyzed o;
  AnalyzeInto(o, other, "other.trc");
  DiffResult gone = ComputeDiff(o.analysis, before.analysis, 0.1);
  for (const DiffRow& row : gone.rows) {
    if (row.status == DiffStatus::kGone) {
      CHECK(row.after_estimate.high == Approx(0.368887945411));
      CHECK_FALSE(row.significant);  // 2 sampled: 0.2 per 1000, 0.024 .. 0.72
    } else {
      CHECK(row.status == DiffStatus::kNew);
      CHECK(row.significant);  // 10 sampled: 0.48 .. 1.84 is above 0.369
    }
  }
}

TEST_CASE("one analysis, one sample period: mixing is refused, and --from/--to on a sampled trace") {
  SyntheticTrace s100 = PairRun(100, 3, 1000), s10 = PairRun(10, 3, 1000, 1, kPid + 10);
  SyntheticTrace full(kPid + 20);
  full.Alloc(kPid + 20, 100, 0x1000, 16);
  CHECK(Refusal({{"a.trc", &s100}, {"b.trc", &full}}) ==
        "cannot analyse sampled and unsampled traces together: a.trc is sampled 1/100, b.trc is "
        "not sampled (estimates need one sample period)");
  CHECK(Refusal({{"a.trc", &s100}, {"c.trc", &s10}}) ==
        "cannot analyse traces sampled at different periods together: a.trc is sampled 1/100, "
        "c.trc is sampled 1/10 (estimates need one sample period)");
  AnalysisOptions window;
  window.pairing.window_from_ns = 1000;
  CHECK_THAT(Refusal({{"a.trc", &s100}}, window),
             Catch::Matchers::StartsWith(
                 "a.trc: --from/--to cannot cut a sampled trace (sampled 1/100)"));
  std::string error;
  {
    // Two traces of one period are one run.
    TraceSet set;
    SyntheticTrace s100b = PairRun(100, 4, 2000, 1, kPid + 30);
    REQUIRE(set.AddBytes(s100.Finish(), "a.trc", &error));
    REQUIRE(set.AddBytes(s100b.Finish(), "d.trc", &error));
    NameResolver resolver;
    Analysis a;
    REQUIRE(Analyze(set, {}, &resolver, &a, &error));
    CHECK(a.Allocations() == 3000);
    CHECK(a.counts.cross_thread == 7);
  }
}

TEST_CASE("sampled trace: dropped samples and missing counts records are warned about") {
  SyntheticTrace t(Sampled(100));
  Names(t);
  for (uint64_t i = 0; i < 30; ++i) {
    t.Alloc(kProducer0, 100 + 20 * i, 0x1000 + 64 * i, 64, 1);
    t.Free(kConsumer0, 110 + 20 * i, 0x1000 + 64 * i, 11);
  }
  t.Counts(kProducer0, {3000, 0, 10});
  t.Counts(kConsumer0, {0, 3000, 0});
  Analyzed r;
  AnalyzeInto(r, t);
  REQUIRE(r.analysis.warnings.size() == 1);
  CHECK(r.analysis.warnings[0] ==
        "sampled.trc: the tracer dropped 10 of the 40 allocations its sampler chose (25.00%: its "
        "table of sampled objects was full): every estimate is low by about that share");
  CHECK(r.analysis.counts.samples_dropped == 10);
  std::string text = RenderReportText(r.analysis, {});
  CHECK(text.find("samples dropped                    10   25.00% of the sampler's choices") !=
        std::string::npos);
  CHECK(RenderReportJson(r.analysis, {}).find("\"samples_dropped\": 10, \"samples_dropped_share\": "
                                              "0.2500") != std::string::npos);

  SyntheticTrace bare(Sampled(100));
  Names(bare);
  bare.Alloc(kProducer0, 100, 0x1000, 64, 1);
  bare.Free(kConsumer0, 110, 0x1000, 11);
  Analyzed b;
  AnalyzeInto(b, bare);
  REQUIRE(b.analysis.warnings.size() == 1);
  CHECK(b.analysis.warnings[0].find("has no counts records") != std::string::npos);
  CHECK(b.analysis.Allocations() == 100);  // estimated: 100 x 1
}

TEST_CASE("sampled trace: a followed realloc chain is counted like any sampled object") {
  SyntheticTrace t(Sampled(10));
  Names(t);
  t.Alloc(kProducer0, 100, 0x1000, 64, 1);
  t.Realloc(kConsumer0, 200, 210, 0x1000, 0x2000, 128, 2);  // the old block crosses
  t.Free(kProducer0, 300, 0x2000, 11);                      // and so does the new one
  t.Counts(kProducer0, {100, 100, 0});
  t.Counts(kConsumer0, {100, 100, 0});
  Analyzed r;
  AnalyzeInto(r, t);
  // The tracer follows a chain exactly when its first block was sampled
  // (tracer/interpose.cc, SampledRealloc): N x observed for each block.
  CHECK(r.analysis.counts.cross_thread == 2);
  CHECK(r.analysis.warnings.empty());
}

TEST_CASE("sampled report: text, JSON, folded, HTML and pprof say so and carry the estimates") {
  SyntheticTrace trace = PairRun(100, 10, 1000000);
  Analyzed r;
  AnalyzeInto(r, trace);
  const Analysis& a = r.analysis;
  std::string text = RenderReportText(a, {});
  INFO(text);
  CHECK(text.find("sampled events (estimated, sampled 1/100)") != std::string::npos);
  CHECK(text.find("Summary (sampled 1/100: ~ marks an estimate, 100 x the sampled count") !=
        std::string::npos);
  CHECK(text.find("  allocations                 1,000,000   exact, sampled or not; 10 sampled") !=
        std::string::npos);
  CHECK(text.find("    cross-thread                 ~1,000   [479 .. 1,840]") != std::string::npos);
  CHECK(text.find("    ~1,000 frees (100.0% of cross-thread, ~1.0 per 1000 allocs), ~62.5 KiB; 10 "
                  "sampled") != std::string::npos);
  CHECK(text.find("    95%: 479 .. 1,840 frees, 0.5 .. 1.8 per 1000 allocs, 30.0 KiB .. 114.9 KiB") !=
        std::string::npos);
  CHECK(text.find("net 95%") != std::string::npos);

  std::string json = RenderReportJson(a, {});
  CHECK(json.find("\"sampling\": {\"sample_period\": 100, \"estimator\": \"sampled count x "
                  "sample_period\"") != std::string::npos);
  CHECK(json.find("\"exact_totals\": true, \"counts_records\": 2, \"sampled_allocations\": 10") !=
        std::string::npos);
  CHECK(json.find("\"allocations\": 1000000, \"frees\": 1000000, \"cross_thread_frees\": 1000,") !=
        std::string::npos);
  CHECK(json.find("\"estimate\": {\"count\": {\"observed\": 10, \"estimate\": 1000, \"low\": 479, "
                  "\"high\": 1840}, \"bytes\": {\"observed\": 640, \"estimate\": 64000, \"low\": "
                  "30690, \"high\": 117699}, \"per_1000_allocs\": {\"estimate\": 1.000, \"low\": "
                  "0.480, \"high\": 1.839}}") != std::string::npos);
  CHECK(json.find("\"sample_period\": 100}") != std::string::npos);  // in the trace's entry

  std::string folded = RenderReportFolded(a);
  CHECK(folded.rfind("[estimated, sampled 1/100];[per-call];producer-N;", 0) == 0);
  CHECK(folded.find(" 1000\n") != std::string::npos);

  std::string html = RenderReportHtml(a);
  CHECK(html.find("<title>crossfree report: /bin/synthetic (estimated, sampled 1/100)</title>") !=
        std::string::npos);
  CHECK(html.find("<b>Estimated, sampled 1/100</b>") != std::string::npos);
  CHECK(html.find("<td>10</td><td>1,000</td><td>479</td><td>1,840</td>") != std::string::npos);
  CHECK(html.find("\"n\":1000,\"b\":64000") != std::string::npos);
  CHECK(html.find(",\"lo\":479,\"hi\":1840,\"obs\":10}") != std::string::npos);

  std::string gz = RenderReportPprof(a);
  google::protobuf::io::ArrayInputStream raw(gz.data(), static_cast<int>(gz.size()));
  google::protobuf::io::GzipInputStream in(&raw);
  pprof::Profile p;
  REQUIRE(p.ParseFromZeroCopyStream(&in));
  auto str = [&p](int64_t i) { return p.string_table(static_cast<int>(i)); };
  CHECK(p.period() == 100);
  CHECK(str(p.period_type().type()) == "allocations");
  bool said = false;
  for (int64_t c : p.comment()) said |= str(c).rfind("estimated, sampled 1/100", 0) == 0;
  CHECK(said);
  REQUIRE(p.sample_size() == 1);
  CHECK(p.sample(0).value(0) == 1000);
  CHECK(p.sample(0).value(1) == 64000);
  std::map<std::string, int64_t> labels;
  for (const auto& l : p.sample(0).label()) {
    if (l.str() == 0) labels[str(l.key())] = l.num();
  }
  CHECK(labels["sampled_frees"] == 10);
  CHECK(labels["frees_low"] == 479);
  CHECK(labels["frees_high"] == 1840);
}

TEST_CASE("unsampled runs say nothing of sampling") {
  SyntheticTrace full(kPid);
  Names(full);
  full.Alloc(kProducer0, 100, 0x1000, 64, 1);
  full.Free(kConsumer0, 110, 0x1000, 11);
  Analyzed r;
  AnalyzeInto(r, full, "full.trc");
  CHECK_FALSE(r.analysis.sampled());
  for (const std::string& out :
       {RenderReportText(r.analysis, {}), RenderReportJson(r.analysis, {}),
        RenderReportFolded(r.analysis), RenderReportHtml(r.analysis)}) {
    CHECK(out.find("sampl") == std::string::npos);
    CHECK(out.find("estimate") == std::string::npos);
  }
}

}  // namespace
}  // namespace crossfree::analyzer

namespace crossfree::analyzer {
namespace {

// A run sampled at 1/period whose counts records give its exact totals,
// with `sampled` sampled frees, every one cross-thread, and `allocations`
// sampled allocations.
Analysis SampledRun(uint32_t period, uint64_t total_allocs, uint64_t total_frees,
                    uint64_t allocations, uint64_t sampled) {
  Analysis a;
  a.sample_period = period;
  a.counts.counts_records = 2;
  a.counts.total_allocs = total_allocs;
  a.counts.total_frees = total_frees;
  a.counts.allocations = allocations;
  a.counts.frees = sampled;
  a.counts.paired = sampled;
  a.counts.cross_thread = sampled;
  return a;
}

// Issue 31, item 10: ZeroMQ at --sample 100 reported cross-thread frees
// "~76,400, 100.2% of frees" while the counts records said 76,240 frees in
// all. An estimated part of an exactly known total is bounded by it.
TEST_CASE("sampled estimates never exceed the exact totals of the counts records") {
  Analysis a = SampledRun(100, 76'300, 76'240, 763, 764);
  Estimate e = a.FreeCount(764);
  CHECK(e.value == 76'240.0);
  CHECK(e.high <= 76'240.0);
  CHECK(e.low <= e.value);
  CHECK(a.AllocCount(764).value == 76'300.0);
  // Unsampled counts are left alone.
  Analysis exact;
  exact.counts.frees = 10;
  CHECK(exact.FreeCount(10).value == 10.0);
  ReportOptions options;
  std::string text = render::RenderReportText(a, options);
  INFO(text);
  CHECK(text.find("~76,400") == std::string::npos);
  CHECK(text.find("100.0% of frees") != std::string::npos);
  CHECK(text.find("100.2%") == std::string::npos);
}

// A pair's interval too: 12 sampled frees at 1/1000 stand for ~12,000 with
// a 95% upper bound near 21,000, above the run's 8,798 exact frees (a
// redis attach at --sample 1000 printed "1,089 .. 10,242 frees" against
// 8,798, and "1160.3 per 1000 allocations"). Bounded by the frees, and
// its rate by the frees per 1000 allocations.
TEST_CASE("a sampled pair's interval and rate never exceed the run's exact frees") {
  const Analysis a = SampledRun(1000, 8'826, 8'798, 12, 12);
  CrossPair p;
  p.count.sampled = 12;
  const PairFigures f = a.Figures(p);
  CHECK(f.count.high <= 8'798.0);
  CHECK(f.count.value <= 8'798.0);
  CHECK(f.count.low <= f.count.value);
  CHECK(f.rate.high <= 8'798.0 * 1000.0 / 8'826.0 + 1e-9);
  CHECK(f.rate.low <= f.rate.high);
  CHECK(f.rate.value <= f.rate.high);
  // Unbounded, the count alone would reach past the run's frees.
  CHECK(a.Count(12).high > 8'798.0);
}

}  // namespace
}  // namespace crossfree::analyzer
