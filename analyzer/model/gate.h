// SPDX-License-Identifier: Apache-2.0
// Analyzer: the CI gate. Stateless; used from one thread.
//
// The gate judges allocation sites, not single pairs: the objects
// allocated at one site that other threads free, whichever thread allocated
// and whichever freed them (which pool thread runs a completion is often a
// matter of timing, and would split one hand-off into keys that come and
// go between runs). Each group has two counts (CrossPair): its per-call
// objects (the steady state) and its bounded ones (start-up, shutdown, once
// per thread), each a rate per unit: per operation when the run's
// operations are given (--operations), else per 1000 allocations.
//
// A group fails when its per-call rate r, against the baseline's b (0 for a
// group the baseline does not have), passes all three of:
//   r - b >= min_effect      the change is one that matters (default: 0.05
//                            objects per operation, 1 per 1000 allocations)
//   r > limit                and is more than a drift: limit = b x max_growth,
//                            or, for a timing-dependent site, S x max_growth
//   P(X >= c | Poisson(b x units)) < kSignificance
//                            and is not run-to-run noise of the count c
// A site is timing-dependent when, in the baseline run, between
// kTimingShareLow and kTimingShareHigh of the objects it allocated (S per
// unit, freed on any thread, the `site` lines of the baseline) crossed
// threads: whether one crosses depends on which thread gets to it first,
// and any share up to all of them is the same code. In a sampled run the
// lower bound of r's 95% interval replaces r in the second test and the
// interval replaces the Poisson test. Per operation, a group's bounded rate
// fails the same way with kBoundedEffectPerOperation in place of
// min_effect: one-off objects whose number grew with the work are not
// one-off. Per 1000 allocations bounded objects are not judged (their rate
// there moves with the run's length). docs/guide/ci-gate.md gives the rule
// and what it is sure to catch.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/model/baseline.h"

namespace crossfree::analyzer {

inline constexpr double kMinEffectPerOperation = 0.05;
inline constexpr double kMinEffectPerThousand = 1.0;
inline constexpr double kBoundedEffectPerOperation = 1.0;
inline constexpr double kSignificance = 1e-3;
inline constexpr double kTimingShareLow = 0.1;
inline constexpr double kTimingShareHigh = 0.9;

struct GateOptions {
  double max_growth = 1.5;
  double min_effect = 0;  // 0: kMinEffectPerOperation or kMinEffectPerThousand by the unit
};

// The allocation site of a pair key ("ar -> fr | alloc: S | free: F" -> "S"):
// the group it belongs to.
std::string GroupKeyOf(const std::string& pair_key);

struct GateGroup {
  std::string key;                        // the allocation site's key
  const Site* alloc_site = nullptr;       // of its first pair
  std::vector<const CrossPair*> pairs;    // this run's, not suppressed, by count desc
  SampledCount steady;                    // summed over pairs
  SampledCount bounded;
  uint64_t steady_objects = 0;            // what steady and bounded stand for (Analysis::Scaled)
  uint64_t bounded_objects = 0;
  Estimate rate;                          // per-call objects per unit
  Estimate bounded_rate;
  bool in_baseline = false;               // some pair of the group is
  double baseline_rate = 0;               // per unit, summed over the baseline's pairs
  double baseline_bounded_rate = 0;
  double baseline_site_rate = 0;          // the site's objects per unit, 0 if unknown
  bool timing_dependent = false;          // see above
};

enum class GateVerdict {
  kNew,             // per-call objects the baseline does not have
  kGrown,           // more per-call objects than the baseline allows
  kBoundedGrowing,  // more one-off objects than one-offs can be
};
const char* GateVerdictName(GateVerdict v);

struct GateOffense {
  GateGroup group;
  GateVerdict verdict = GateVerdict::kNew;
  double limit = 0;    // the rate it had to stay under
  double p_value = 0;  // P(a count this high | the baseline's rate), unsampled runs
};

struct GateResult {
  std::vector<GateOffense> offenses;  // by rate above the limit, descending
  size_t groups = 0;                  // groups of this run (not suppressed)
  size_t allowed = 0;                 // groups within the baseline
  // Pairs the baseline does not have that did not fail: few enough
  // per-call objects to be noise, or bounded. Listed, not failed.
  std::vector<const CrossPair*> new_within_noise;
  std::vector<std::pair<const CrossPair*, const Suppression*>> suppressed;
  std::vector<std::string> gone;      // baseline keys this run does not have
  bool sampled = false;
  bool per_operation = false;
  double units = 0;                   // operations, or allocations / 1000
  double min_effect = 0;              // as applied
  double max_growth = 0;
  bool passed() const { return offenses.empty(); }
};

// The pairs a baseline written from this run would allow (not suppressed).
std::vector<const CrossPair*> UnsuppressedPairs(const Analysis& analysis,
                                                const std::vector<Suppression>& suppressions);

// Fails with *error when the baseline's unit is not the analysis's (rates
// per operation against a run without --operations, or the reverse).
bool EvaluateGate(const Analysis& analysis, const Baseline& baseline,
                  const std::vector<Suppression>& suppressions, const GateOptions& options,
                  GateResult* result, std::string* error);

// P(X >= k) for X ~ Poisson(lambda): 1 for k = 0, 0 for k > 0 = lambda.
double PoissonUpperTail(uint64_t k, double lambda);

}  // namespace crossfree::analyzer
