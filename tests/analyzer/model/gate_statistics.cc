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
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
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
             "false alarms on reruns | misses at the promise | expected misses at most |\n");
  fmt::print("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
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
      fmt::print("| {} | {:g} | {:.3g} (mean) | {} / {} | {} / {} | {:.0f} |\n",
                 static_cast<uint64_t>(u), rate, promise_sum / runs, alarms, runs, misses, runs,
                 kMissProbability * runs);
    }
  }
  // A new hand-off on 1 call in 10, and a timing-dependent site that
  // crossed 15% of the time: rerun at 15%, then at 100%.
  fmt::print("\n| operations | case | failed | of |\n| ---: | --- | ---: | ---: |\n");
  for (double u : kOperations) {
    int caught = 0, share_alarms = 0, share_caught = 0;
    for (int i = 0; i < runs; ++i) {
      caught += Fails(Run(u, Poisson(g, 0.1 * u)), BaselineOf(u, 0));
      uint64_t n0 = Poisson(g, u), n1 = Poisson(g, u);
      Baseline timing = BaselineOf(u, std::max<uint64_t>(1, Binomial(g, n0, 0.15)), n0);
      share_alarms += Fails(Run(u, Binomial(g, n1, 0.15), n1), timing);
      share_caught += Fails(Run(u, n1, n1), timing);
    }
    fmt::print("| {0} | new site, 1 in 10 calls | {1} | {4} |\n"
               "| {0} | timing-dependent site, 15% crossing -> 15% (rerun) | {2} | {4} |\n"
               "| {0} | timing-dependent site, 15% crossing -> 100% | {3} | {4} |\n",
               static_cast<uint64_t>(u), caught, share_alarms, share_caught, runs);
  }
  return 0;
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
