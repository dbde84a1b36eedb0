// SPDX-License-Identifier: Apache-2.0
// The gate's statistics, computed and simulated with the gate's own code
// (analyzer/model/gate.h), for docs/guide/ci-gate.md and
// scripts/validate/gate-statistics:
//   gate_statistics promise-table       the guide's table of promises
//   gate_statistics simulate RUNS SEED  false alarms on identical-rate
//       reruns and misses at the promised increase, RUNS synthetic runs per
//       row, each judged by EvaluateGate
//   gate_statistics claims              the other figures the guide quotes
// Deterministic: the counts are drawn with std::mt19937_64 (its sequence is
// fixed by the standard) and this file's own Poisson and binomial draws.
#include <boost/math/special_functions/beta.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/model/baseline.h"
#include "analyzer/model/gate.h"

namespace crossfree::analyzer {
namespace {

constexpr char kSite[] = "Server::Handle";

double Uniform(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

// Poisson(mean) by inversion, in parts of mean <= 200 (a sum of Poisson
// counts is Poisson; exp(-200) does not underflow).
uint64_t Poisson(std::mt19937_64& g, double mean) {
  uint64_t total = 0;
  while (mean > 0) {
    double m = std::min(mean, 200.0);
    mean -= m;
    double u = Uniform(g), p = std::exp(-m), cdf = p;
    uint64_t k = 0;
    while (u > cdf && k < 100000) {
      ++k;
      p *= m / static_cast<double>(k);
      cdf += p;
    }
    total += k;
  }
  return total;
}

uint64_t Binomial(std::mt19937_64& g, uint64_t n, double p) {
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; ++i) k += Uniform(g) < p;
  return k;
}

CrossPair Pair(uint64_t steady) {
  CrossPair p;
  p.alloc_role = "worker-N";
  p.free_role = "reactor-N";
  p.alloc_site.key = kSite;
  p.free_site.key = "Reactor::Run";
  p.key = PairKeyText(p.alloc_role, p.free_role, p.alloc_site.key, p.free_site.key);
  p.count = SampledCount{steady};
  return p;
}

// A run of `operations` (no edges) whose site handed `crossed` objects to
// another thread, of `site_objects` (0: not counted).
Analysis Run(double operations, uint64_t crossed, uint64_t site_objects = 0) {
  Analysis a;
  a.operations = static_cast<uint64_t>(operations);
  a.counts.allocations = 1'000'000;
  if (crossed > 0) a.pairs.push_back(Pair(crossed));
  if (site_objects > 0) a.site_objects[kSite] = site_objects;
  return a;
}

// A baseline written from a run like Run(): its count, units, and site.
Baseline BaselineOf(double operations, uint64_t crossed, uint64_t site_objects = 0) {
  Baseline b;
  b.per_operation = true;
  b.units = b.steady_units = operations;
  if (crossed > 0) {
    b.allowed[Pair(crossed).key] = {static_cast<double>(crossed) / operations, 0};
    if (site_objects > 0) {
      b.sites[kSite] = static_cast<double>(site_objects) / operations;
      b.site_shares[kSite] = static_cast<double>(crossed) / static_cast<double>(site_objects);
    }
  }
  return b;
}

// A baseline written from several runs like Run() (--write-baseline --run
// ...): the site's counts per run, its rates over all of them.
Baseline BaselineOfRuns(double operations, const std::vector<SiteRunCount>& runs) {
  SiteRunCount total;
  for (const SiteRunCount& r : runs) total.Add(r);
  Baseline b =
      BaselineOf(operations * static_cast<double>(runs.size()), total.crossed, total.objects);
  b.runs = static_cast<int>(runs.size());
  if (total.crossed > 0) b.site_runs[kSite] = runs;
  return b;
}

// The one-sided 95% upper bound of a rate seen x times in n (Clopper-Pearson).
double UpperBound95(int x, int n) {
  if (x >= n) return 1;
  return boost::math::ibeta_inv(static_cast<double>(x + 1), static_cast<double>(n - x), 0.95);
}

bool Fails(const Analysis& a, const Baseline& b) {
  GateResult r;
  std::string error;
  if (!EvaluateGate(a, b, {}, {}, &r, &error)) {
    fmt::print(stderr, "gate_statistics: {}\n", error);
    std::exit(2);
  }
  return !r.passed();
}

double PromiseOf(const Analysis& a, const Baseline& b) {
  GateResult r;
  std::string error;
  EvaluateGate(a, b, {}, {}, &r, &error);
  if (r.passed_groups.empty() && r.offenses.empty()) return r.promise_new;
  return r.passed_groups.empty() ? r.offenses[0].group.promise : r.passed_groups[0].promise;
}

const std::vector<double> kOperations = {300, 3'000, 30'000};

int Simulate(int runs, uint64_t seed) {
  std::mt19937_64 g(seed);
  fmt::print("| operations | per-call rate (baseline and reruns) | promise at that baseline | "
             "false alarms on reruns | misses at the promise | expected misses at most | "
             "miss rate, 95% upper bound |\n");
  fmt::print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (double u : kOperations) {
    for (double rate : {0.0, 0.05, 0.2, 1.0}) {
      int alarms = 0, misses = 0;
      double promise_sum = 0;
      for (int i = 0; i < runs; ++i) {
        uint64_t c0 = Poisson(g, rate * u);
        Baseline base = BaselineOf(u, c0);
        // A rerun of the same distribution.
        alarms += Fails(Run(u, Poisson(g, rate * u)), base);
        // A run at the baseline's rate plus the promise the gate states
        // for it at this length (printed, rounded up).
        double promise = PromiseRounded(PromiseOf(Run(u, c0), base));
        promise_sum += promise;
        double b = static_cast<double>(c0) / u;
        misses += !Fails(Run(u, Poisson(g, (b + promise) * u)), base);
      }
      fmt::print("| {} | {:g} | {:.3g} (mean) | {} / {} | {} / {} | {:g} | {:.2f}% |\n",
                 static_cast<uint64_t>(u), rate, promise_sum / runs, alarms, runs, misses, runs,
                 kMissProbability * runs, 100 * UpperBound95(misses, runs));
    }
  }
  // A new hand-off on 1 call in 10, and a timing-dependent site that
  // crossed 15% (and 43%) of the time, its baseline written from one run
  // and from 3 and 5 runs (each run's site objects Poisson(operations),
  // each crossing with the same probability, or with the run's own when
  // the share varies between runs as timing makes it): rerun from the same
  // distribution, then at 100%.
  fmt::print("\n| operations | case | failed | of | baselines whose share fell outside 10%-90% "
             "| of the failed, those with such a baseline |\n"
             "| ---: | --- | ---: | ---: | ---: | ---: |\n");
  for (double u : kOperations) {
    fmt::print("| {} | new site, 1 in 10 calls | {} | {} | - | - |\n", static_cast<uint64_t>(u),
               [&] {
                 int caught = 0;
                 for (int i = 0; i < runs; ++i) {
                   caught += Fails(Run(u, Poisson(g, 0.1 * u)), BaselineOf(u, 0));
                 }
                 return caught;
               }(),
               runs);
    // The crossing share, and the spread of the staying share between
    // runs beyond binomial noise (sd of its log; 0: every run alike).
    for (auto [share, spread] : {std::pair{0.15, 0.0}, {0.43, 0.0}, {0.6, 0.3}}) {
      // One run's crossing probability: its staying share log-normal
      // around the mean's (at most 1).
      auto run_share = [&, share = share, spread = spread] {
        if (spread == 0) return share;
        double z = std::sqrt(-2 * std::log(1 - Uniform(g))) * std::cos(2 * std::numbers::pi * Uniform(g));
        return 1 - std::min(1.0, (1 - share) * std::exp(spread * z));
      };
      for (int baseline_runs : {1, 3, 5}) {
        // Failures whose baseline's pooled share fell outside 10%-90%: the
        // site was then not taken as timing-dependent and was judged as a
        // per-call rate (the classification, not the staying bound).
        int alarms = 0, caught = 0, outside_baselines = 0, alarms_outside = 0, caught_outside = 0;
        for (int i = 0; i < runs; ++i) {
          std::vector<SiteRunCount> counts;
          for (int k = 0; k < baseline_runs; ++k) {
            uint64_t n = Poisson(g, u);
            counts.push_back({n, std::max<uint64_t>(1, Binomial(g, n, run_share()))});
          }
          Baseline timing = BaselineOfRuns(u, counts);
          const double pooled = timing.site_shares.count(kSite) ? timing.site_shares[kSite] : 0;
          const bool outside = pooled < kTimingShareLow || pooled > kTimingShareHigh;
          uint64_t n1 = Poisson(g, u);
          const bool alarm = Fails(Run(u, Binomial(g, n1, run_share()), n1), timing);
          const bool catches = Fails(Run(u, n1, n1), timing);
          outside_baselines += outside;
          alarms += alarm;
          caught += catches;
          alarms_outside += alarm && outside;
          caught_outside += catches && outside;
        }
        std::string what = spread == 0 ? fmt::format("{:g}% crossing", 100 * share)
                                       : fmt::format("{:g}% crossing, the staying share varying "
                                                     "between runs (log sd {:g})",
                                                     100 * share, spread);
        fmt::print("| {0} | timing-dependent site, {1}, baseline of {2} run{3}: rerun | {4} | {6} | {9} | {7} |\n"
                   "| {0} | timing-dependent site, {1}, baseline of {2} run{3}: 100% | {5} | {6} | {9} | {8} |\n",
                   static_cast<uint64_t>(u), what, baseline_runs, baseline_runs == 1 ? "" : "s",
                   alarms, caught, runs, alarms_outside, caught_outside, outside_baselines);
      }
    }
  }
  return 0;
}

// The exact probability that a rerun of a timing-dependent site's own
// distribution fails on its staying share against a single-run baseline
// (both runs n objects, each staying with probability q): the sum over the
// baseline's staying count s0 of P(s0) P(the rerun's count fails the bound
// s0 gives). Failing is monotone in the rerun's count: below a threshold.
double ExactSingleRunFalseAlarm(uint64_t n, double q, double slack) {
  double total = 0;
  for (uint64_t s0 = 0; s0 <= n; ++s0) {
    double p0 = BinomialUpperTail(s0, n, q) - BinomialUpperTail(s0 + 1, n, q);
    if (p0 < 1e-300) continue;
    StayingBound bound = LeastStayingShare({{n, n - s0}}, slack);
    // The largest failing staying count, by bisection (none: -1).
    if (!StayingShareFails(bound, 0, n)) continue;
    uint64_t lo = 0, hi = n + 1;  // fails at lo, not at hi
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      (StayingShareFails(bound, mid, n) ? lo : hi) = mid;
    }
    total += p0 * BinomialLowerTail(lo, n, q);
  }
  return total;
}

// Simulate's rows where the share varies between runs: one run's staying
// share is min(1, (1 - share) e^(spread z)), z standard normal, and its
// crossed count max(1, Binomial(n, 1 - staying)). The probability that
// the crossed share of one such run of n objects falls outside
// kTimingShareLow..kTimingShareHigh, so that a baseline written from it
// does not take the site as timing-dependent (the midpoint rule over z in
// [-9, 9], in steps of 1/1000).
double OutsideTimingShare(uint64_t n, double share, double spread) {
  const double objects = static_cast<double>(n);
  uint64_t low = 0;  // the crossed counts 1..low read below kTimingShareLow
  while (static_cast<double>(low + 1) / objects < kTimingShareLow) ++low;
  uint64_t high = n + 1;  // and high..n above kTimingShareHigh
  while (high > 1 && static_cast<double>(high - 1) / objects > kTimingShareHigh) --high;
  constexpr double kStep = 1e-3;
  double total = 0;
  for (double z = -9 + kStep / 2; z < 9; z += kStep) {
    const double density = std::exp(-z * z / 2) / std::sqrt(2 * std::numbers::pi);
    const double staying = std::min(1.0, (1 - share) * std::exp(spread * z));
    const double p = 1 - staying;
    // max(1, X) <= low is X <= low for low >= 1.
    double outside = low >= 1 ? BinomialLowerTail(low, n, p) : 0.0;
    if (high <= n) outside += BinomialUpperTail(high, n, p);
    total += density * kStep * outside;
  }
  return total;
}

// OutsideTimingShare for each of `objects`, in one line: "300 objects: P,
// 3000 objects: P", each P in value_format.
std::string OutsideTimingShares(std::initializer_list<uint64_t> objects, double share,
                                double spread, std::string_view value_format) {
  std::string out;
  for (uint64_t n : objects) {
    out += fmt::format("{}{} objects: ", out.empty() ? "" : ", ", n);
    out += fmt::format(fmt::runtime(value_format), OutsideTimingShare(n, share, spread));
  }
  return out;
}

int Claims() {
  // The figures docs/guide/ci-gate.md quotes besides its tables.
  fmt::print("P(Poisson(30) < 15) = {:.5f}\n", 1 - PoissonUpperTail(15, 30));
  for (double u : {300.0, 20'000.0}) {
    RateTest t{.baseline_rate = 0, .baseline_units = u, .units = u,
               .effect = kMinEffectPerOperation, .growth_base = 0, .max_growth = 1.5};
    uint64_t c = SmallestFailingCount(t);
    fmt::print("new site, {} operations (baseline as long): fails from {} objects; promise +{}; "
               "P(caught) at 1 in 20 calls = {:.3f}, at 1 in 10 = {:.6f}\n",
               static_cast<uint64_t>(u), c, FormatPromise(DetectableIncrease(t)),
               PoissonUpperTail(c, 0.05 * u), PoissonUpperTail(c, 0.1 * u));
  }
  // From which run length 1 call in 10 is within the promise (caught in
  // at least 1 - kMissProbability of runs), in steps of 10 operations.
  for (double u = 10;; u += 10) {
    RateTest t{.baseline_rate = 0, .baseline_units = u, .units = u,
               .effect = kMinEffectPerOperation, .growth_base = 0, .max_growth = 1.5};
    if (DetectableIncrease(t) <= 0.1) {
      fmt::print("new site (baseline as long): a hand-off on 1 call in 10 is within the promise "
                 "from {} operations\n",
                 static_cast<uint64_t>(u));
      break;
    }
  }
  // One-off (bounded) objects of a new site: the smallest failing count
  // with the default --bounded-effect, and with 0.25 (the guide's advice
  // for a thread-per-request server, +0.5 per request).
  for (double effect : {kBoundedEffectPerOperation, 0.25}) {
    std::string counts;
    for (double u : {300.0, 3'000.0}) {
      RateTest t{.baseline_rate = 0, .baseline_units = u, .units = u, .effect = effect,
                 .growth_base = 0, .max_growth = 1.5};
      counts += fmt::format("{}from {} in a run of {} operations", counts.empty() ? "" : ", ",
                            SmallestFailingCount(t), static_cast<uint64_t>(u));
    }
    fmt::print("one-off objects of a new site, --bounded-effect {:g}: fail {}\n", effect, counts);
  }
  // Timing-dependent sites: the exact false-alarm probability of the
  // single-run bound on reruns of the baseline's distribution.
  for (uint64_t n : {300, 3'000}) {
    for (double slack : {kTimingSlack, 1.0}) {
      double p = ExactSingleRunFalseAlarm(n, 0.85, slack);
      fmt::print("timing-dependent site, 15% crossing, {} objects a run, baseline of one run, "
                 "slack {:g}: P(a rerun fails) = {}\n",
                 n, slack, p > 0 ? fmt::format("{:.2g}", p) : std::string("below 1e-300"));
    }
  }
  // The multi-run bound's Student t quantile, by the baseline's runs: what
  // the spread of R runs is multiplied by (recomputed from two runs'
  // bound: ln(L) = m - t d sqrt(1 + 1/R)).
  std::string quantiles;
  for (int runs : {2, 3, 5, 10}) {
    std::vector<SiteRunCount> counts(static_cast<size_t>(runs), SiteRunCount{1000, 150});
    counts[0].crossed = 140;
    StayingBound b = LeastStayingShare(counts, kTimingSlack);
    double mean = 0, ss = 0;
    std::vector<double> y;
    for (const SiteRunCount& c : counts) {
      y.push_back(std::log((static_cast<double>(c.objects - c.crossed) + 0.5) /
                           (static_cast<double>(c.objects) + 1)));
      mean += y.back() / runs;
    }
    for (double v : y) ss += (v - mean) * (v - mean);
    double d = std::sqrt(ss / (runs - 1));
    quantiles += fmt::format("{}{} runs: {:.4g}", quantiles.empty() ? "" : ", ", runs,
                             (mean - std::log(b.least)) / (d * std::sqrt(1 + 1.0 / runs)));
  }
  fmt::print("t(R - 1, 0.9995) of the multi-run bound: {}\n", quantiles);
  // Why a one-run baseline fails reruns of a site whose share varies
  // between runs (Simulate's log sd 0.3 rows): its one run falls outside
  // 10%-90% this often, and the site is then judged as a per-call rate.
  // The same edge with binomial noise only (the 15% rows: one run of 300
  // objects can cross fewer than 30).
  fmt::print("timing-dependent site, 15% crossing, binomial noise only: P(one run crosses "
             "outside 10%-90% of its objects) = {}\n",
             OutsideTimingShares({300, 3'000}, 0.15, 0, "{:.2g}"));
  fmt::print("timing-dependent site, 60% crossing, the staying share varying between runs (log "
             "sd 0.3): P(one run crosses outside 10%-90% of its objects) = {}\n",
             OutsideTimingShares({300, 3'000, 30'000}, 0.6, 0.3, "{:.5f}"));
  return 0;
}

}  // namespace
}  // namespace crossfree::analyzer

int main(int argc, char** argv) {
  using namespace crossfree::analyzer;
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "promise-table") {
    fmt::print("{}", PromiseTable({0, 0.05, 0.1, 0.5, 1, 2}, kOperations));
    return 0;
  }
  if (mode == "simulate" && argc == 4) return Simulate(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10));
  if (mode == "claims") return Claims();
  fmt::print(stderr, "usage: gate_statistics promise-table | simulate RUNS SEED | claims\n");
  return 2;
}
