// SPDX-License-Identifier: Apache-2.0
// Analyzer: `crossfree gate` evaluation (see gate.h).
#include "analyzer/model/gate.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

namespace crossfree::analyzer {
namespace {

const Suppression* FindSuppression(const CrossPair& p, const std::vector<Suppression>& s) {
  for (const Suppression& x : s) {
    if (std::regex_search(p.key, x.regex)) return &x;
  }
  return nullptr;
}

}  // namespace

std::vector<const CrossPair*> UnsuppressedPairs(const Analysis& analysis,
                                                const std::vector<Suppression>& suppressions) {
  std::vector<const CrossPair*> out;
  for (const CrossPair& p : analysis.pairs) {
    if (!FindSuppression(p, suppressions)) out.push_back(&p);
  }
  return out;
}

GateResult EvaluateGate(const Analysis& analysis, const Baseline& baseline,
                        const std::vector<Suppression>& suppressions, double max_growth) {
  GateResult r;
  r.sampled = analysis.sampled();
  std::set<std::string> seen;
  for (const CrossPair& p : analysis.pairs) {
    seen.insert(p.key);
    if (const Suppression* s = FindSuppression(p, suppressions)) {
      r.suppressed.push_back({&p, s});
      continue;
    }
    double rate = analysis.PerThousand(p.count);
    Estimate estimate = analysis.Rate(p.count);
    auto it = baseline.allowed.find(p.key);
    if (it == baseline.allowed.end()) {
      r.offenses.push_back({&p, true, 0, rate, estimate, 0});
      continue;
    }
    double limit = std::max(it->second, kMinBaselineRate) * max_growth;
    // Unsampled: the rate itself; sampled: only a rate surely above it.
    if ((r.sampled ? estimate.low : rate) > limit) {
      r.offenses.push_back({&p, false, it->second, rate, estimate, limit});
    } else {
      r.allowed.push_back(&p);
    }
  }
  for (const auto& [key, rate] : baseline.allowed) {
    if (!seen.count(key)) r.gone.push_back(key);
  }
  std::stable_sort(r.offenses.begin(), r.offenses.end(),
                   [](const GateOffense& a, const GateOffense& b) { return a.rate > b.rate; });
  return r;
}

}  // namespace crossfree::analyzer
