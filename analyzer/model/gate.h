// SPDX-License-Identifier: Apache-2.0
// Analyzer: the CI gate. A run passes when every cross-thread pair it has is
// suppressed, or allowed by the baseline and its rate (frees per 1000
// allocations) is at most max_growth times the rate the baseline recorded.
// Stateless.
//
// A sampled run (estimate.h): a pair the baseline does not allow fails as
// soon as one sampled object shows it (what was seen happened: the count is
// at least 1). An allowed pair fails as grown only when the lower bound of
// its rate's 95% interval is above the limit, so sampling noise alone fails
// a run in at most 2.5% of runs per pair at the limit (fewer below it).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/model/baseline.h"

namespace crossfree::analyzer {

// Baseline rates below this (a pair seen less than once per million
// allocations) are compared as this, so a rare pair is not a failure for
// being seen twice.
inline constexpr double kMinBaselineRate = 0.001;

struct GateOffense {
  const CrossPair* pair = nullptr;
  bool is_new = false;       // not in the baseline at all
  double baseline_rate = 0;  // when !is_new
  double rate = 0;
  Estimate rate_estimate;    // the rate with its 95% interval (exact when unsampled)
  double limit = 0;          // when !is_new: the rate allowed
};

struct GateResult {
  std::vector<GateOffense> offenses;  // by rate, descending
  std::vector<const CrossPair*> allowed;
  std::vector<std::pair<const CrossPair*, const Suppression*>> suppressed;
  std::vector<std::string> gone;      // baseline keys this run does not have
  bool sampled = false;               // the run is sampled (rules above)
  bool passed() const { return offenses.empty(); }
};

// The pairs a baseline written from this run would allow (not suppressed).
std::vector<const CrossPair*> UnsuppressedPairs(const Analysis& analysis,
                                                const std::vector<Suppression>& suppressions);

GateResult EvaluateGate(const Analysis& analysis, const Baseline& baseline,
                        const std::vector<Suppression>& suppressions, double max_growth);


}  // namespace crossfree::analyzer
