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
//                            objects per operation, 1 per 1000 allocations;
//                            0 is allowed and means any increase)
//   r > limit                and is more than a drift: limit = b x max_growth,
//                            or, for a timing-dependent site, S x max_growth
//   p < kSignificance        and is not run-to-run noise of the count c: p is
//                            the exact conditional test of two Poisson rates
//                            (c of c + c0 objects falls in this run with
//                            probability V / (V + V0), c0 and V0 the
//                            baseline's count and units), or, for a baseline
//                            that does not give its units (version 2),
//                            P(X >= c | Poisson(b x V)).
// r and b are per unit of the steady state (Analysis::SteadyUnits: per-call
// objects exclude the run's edges, so the units they are divided by do
// too), V this run's steady units.
// A site is timing-dependent when, in the baseline, between
// kTimingShareLow and kTimingShareHigh of the objects it allocated crossed
// threads (the `site` lines of the baseline): whether one crosses depends on
// which thread gets to it first. Such a site also fails on its crossing
// share: when the share of its objects that stay on their thread falls
// below the least its baseline allows (StayingBound: from the spread of the
// baseline's runs' shares when it has several, from the binomial noise of
// its one run's counts and --timing-slack otherwise), with r - b >=
// min_effect and the drop not binomial noise of this run's count. In a
// sampled run the lower bound of r's 95% interval replaces r in the second
// test and the interval replaces the significance test. Per operation, a
// group's bounded rate (over all the
// run's units) fails the same way with bounded_effect in place of
// min_effect: one-off objects whose number grew with the work are not
// one-off. Per 1000 allocations bounded objects are not judged (their rate
// there moves with the run's length), and GateResult::warnings says so.
//
// What the rule is sure to catch (GateResult::promise): the smallest
// increase of a group's per-call rate that fails with probability at least
// 1 - kMissProbability in a run of this length, computed from the same
// tests (DetectableIncrease). docs/guide/ci-gate.md gives the rule, and its
// table of promises comes from PromiseTable.
#pragma once

#include <cstdint>
#include <optional>
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
// The promise (DetectableIncrease) is the increase missed in at most 1 run
// in 10,000: ten times below the goal of 1 in 1,000, so that a simulation
// of 10,000 runs shows the goal met (its count of misses has mean <= 1, not
// <= 10, and its 95% upper bound stays under 1 in 1,000), and so that
// neither the discreteness of the counts nor the rounding of the printed
// promise can take the miss rate past the goal (docs/guide/ci-gate.md).
inline constexpr double kMissProbability = 1e-4;
inline constexpr double kCatchProbability = 1 - kMissProbability;
inline constexpr double kTimingShareLow = 0.1;
inline constexpr double kTimingShareHigh = 0.9;
// A baseline of one run cannot show how far reruns move a timing-dependent
// site's share (gRPC's sync server: its staying share fell up to 4.5x across
// reruns, far beyond binomial noise): the single-run bound divides by this.
// A baseline of several runs measures that spread instead.
inline constexpr double kTimingSlack = 8;

struct GateOptions {
  double max_growth = 1.5;
  // Unset: kMinEffectPerOperation or kMinEffectPerThousand by the unit.
  // 0 means 0: any significant increase beyond max_growth fails.
  std::optional<double> min_effect = std::nullopt;
  // Unset: kBoundedEffectPerOperation.
  std::optional<double> bounded_effect = std::nullopt;
  // A timing-dependent site of a single-run baseline fails when the share
  // of its objects that stay on their thread falls below the lower bound of
  // the baseline's / timing_slack (StayingBound); not used with several runs.
  double timing_slack = kTimingSlack;
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
  Estimate rate;                          // per-call objects per steady unit
  Estimate bounded_rate;                  // per unit
  bool in_baseline = false;               // some pair of the group is
  double baseline_rate = 0;               // per unit, summed over the baseline's pairs
  double baseline_bounded_rate = 0;
  double baseline_site_rate = 0;          // the site's objects per unit, 0 if unknown
  double baseline_share = -1;             // of the site's objects that crossed, -1 if unknown
  // Timing-dependent sites: the baseline's share of the site's objects that
  // stayed on their thread (1 - baseline_share, over all its runs), the
  // least share this run must keep (StayingBound), and the baseline runs it
  // was derived from; 0 otherwise.
  double baseline_staying_share = 0;
  double least_staying_share = 0;
  int baseline_runs = 0;
  bool timing_dependent = false;          // see above
  // This run's objects of the site (Analysis::site_objects, sampled), 0 if
  // unknown, and the share of them that crossed threads.
  uint64_t site_objects = 0;
  double share = -1;
  // The smallest per-call increase over baseline_rate that fails with
  // probability >= 1 - kMissProbability at this run's length (+inf when no
  // count can fail; NaN in a sampled run, where it is not computed).
  double promise = 0;
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
  double p_value = 0;  // of the test that failed it, unsampled runs
  // A timing-dependent site that failed on its crossing share: the share
  // of its objects that stayed on their thread, and the least allowed.
  bool by_share = false;
  double staying_share = 0;
  double staying_limit = 0;
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
  // Every group of this run that did not fail, with its promise.
  std::vector<GateGroup> passed_groups;
  bool sampled = false;
  bool per_operation = false;
  double units = 0;                   // operations, or allocations / 1000
  double steady_units = 0;            // of those, in the steady state (Analysis::SteadyUnits)
  double baseline_steady_units = 0;   // the baseline's, 0 when it does not say (version 2)
  double min_effect = 0;              // as applied
  double bounded_effect = 0;          // as applied; 0 when bounded objects are not judged
  double max_growth = 0;
  double timing_slack = 0;
  // The smallest per-call rate a site the baseline does not have must reach
  // to fail with probability >= 1 - kMissProbability in this run (+inf:
  // none can; NaN: sampled, not computed), and for bounded objects (NaN
  // without --operations).
  double promise_new = 0;
  double promise_new_bounded = 0;
  // What the reader must know about what was not judged or how (no
  // --operations, an old baseline): the CLI prints them on stderr, JSON
  // lists them.
  std::vector<std::string> warnings;
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
// P(X >= k) for X ~ Binomial(n, p).
double BinomialUpperTail(uint64_t k, uint64_t n, double p);
// P(X <= k) for X ~ Binomial(n, p).
double BinomialLowerTail(uint64_t k, uint64_t n, double p);

// One count against its baseline, unsampled: the three tests above.
struct RateTest {
  double baseline_rate = 0;   // b, per unit
  double baseline_units = 0;  // V0; 0: unknown (b taken as exact)
  double units = 0;           // V, this run's
  double effect = 0;          // min_effect (or bounded_effect)
  double growth_base = 0;     // b, or a timing-dependent site's S
  double max_growth = 1.5;
};
// Whether a count c fails; *p_value: its significance test's.
bool CountFails(const RateTest& t, uint64_t c, double* p_value = nullptr);
// The smallest failing count (UINT64_MAX when none can: units 0).
uint64_t SmallestFailingCount(const RateTest& t);
// The smallest increase of the rate over baseline_rate at which the count
// fails with probability >= 1 - kMissProbability (the count Poisson with
// mean rate x units): +inf when none can.
double DetectableIncrease(const RateTest& t);

// A timing-dependent site's bound: the least share of its objects that a
// run must keep on their thread, from the baseline's per-run counts (runs
// with no objects of the site are left out). The site fails when this run's
// staying count s of n objects is below it and the drop is not binomial
// noise (StayingShareFails). The false-alarm probability on reruns of the
// baseline's distribution is at most kSignificance either way:
// - one run (s0 of n0 stayed): least = the one-sided Clopper-Pearson lower
//   bound of s0 / n0 at kSignificance / 2, divided by timing_slack; this
//   run's binomial test is at kSignificance / 2 (P(the bound is above the
//   true share) + P(a run at the true share reads significantly below it)
//   <= kSignificance, whatever the slack >= 1);
// - R >= 2 runs: y_i = ln((s_i + 1/2) / (n_i + 1)), their mean m and sample
//   deviation d; least = exp(m - t(R - 1, 1 - kSignificance / 2) d
//   sqrt(1 + 1/R)), the one-sided prediction bound of a new run's y (a rerun
//   falls below it with probability kSignificance / 2 exactly when the y_i
//   are normal, whatever their spread); this run fails only below it and
//   with its binomial test at kSignificance / 2 too.
// (SiteRunCount: baseline.h.)
struct StayingBound {
  double baseline_staying = 0;  // pooled over the runs: 1 - crossed / objects
  double least = 0;             // the least staying share a run must keep
  int runs = 0;                 // baseline runs with objects at the site
  double run_alpha = kSignificance / 2;  // the level of this run's binomial test
};
StayingBound LeastStayingShare(const std::vector<SiteRunCount>& runs, double timing_slack);
// Whether `stayed` of `objects` falls below the bound (and, with p_value,
// that test's binomial lower tail).
bool StayingShareFails(const StayingBound& bound, uint64_t stayed, uint64_t objects,
                       double* p_value = nullptr);

// x rounded up to 2 significant digits (as printed: never below the
// promise computed).
double PromiseRounded(double x);
// PromiseRounded(x) in two significant digits, never in exponent form:
// "0.055", "1.3", "130".
std::string FormatPromise(double x);

// docs/guide/ci-gate.md's table of promises: for each baseline rate (0: a
// new site) and each run length (operations, the baseline as long, no
// edges), DetectableIncrease with the default options, as a Markdown table.
std::string PromiseTable(const std::vector<double>& baseline_rates,
                         const std::vector<double>& operations);

// A stable identity of a group's key across runs (FNV-1a, 16 hex digits),
// so that code scanning (SARIF) follows one finding from run to run.
std::string GroupFingerprint(const std::string& key);

}  // namespace crossfree::analyzer
