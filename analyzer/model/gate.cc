// SPDX-License-Identifier: Apache-2.0
// Analyzer: `crossfree gate` evaluation (see gate.h).
#include "analyzer/model/gate.h"

#include <boost/math/special_functions/gamma.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

namespace crossfree::analyzer {
namespace {

const Suppression* FindSuppression(const CrossPair& p, const std::vector<Suppression>& s) {
  for (const Suppression& x : s) {
    if (std::regex_search(p.key, x.regex)) return &x;
  }
  return nullptr;
}

// Whether the group's per-call (or bounded) rate is beyond the baseline's:
// the three tests of gate.h, growth measured from `growth_base` (the
// baseline rate, or a timing-dependent site's whole rate). Sets *limit and
// *p_value.
bool Exceeds(const Analysis& analysis, SampledCount count, const Estimate& rate, double baseline,
             double growth_base, double effect, double max_growth, double* limit,
             double* p_value) {
  *limit = std::max(baseline + effect, growth_base * max_growth);
  // The effect on the estimate (a rate computed exactly at the effect size
  // may land a rounding below it); the growth, in a sampled run, on the
  // interval's lower bound: sampling noise alone does not fail a group.
  if (rate.value < (baseline + effect) * (1 - 1e-9)) return false;
  if ((analysis.sampled() ? rate.low : rate.value) <= growth_base * max_growth) return false;
  if (analysis.sampled()) {
    *p_value = 0;
    return true;
  }
  *p_value = PoissonUpperTail(count.sampled, baseline * analysis.Units());
  return *p_value < kSignificance;
}

}  // namespace

const char* GateVerdictName(GateVerdict v) {
  switch (v) {
    case GateVerdict::kNew: return "NEW";
    case GateVerdict::kGrown: return "GROWN";
    case GateVerdict::kBoundedGrowing: return "BOUNDED-GROWING";
  }
  return "?";
}

std::string GroupKeyOf(const std::string& pair_key) {
  constexpr std::string_view kAlloc = " | alloc: ";
  size_t alloc = pair_key.find(kAlloc);
  size_t free = pair_key.rfind(" | free: ");
  if (alloc == std::string::npos || free == std::string::npos || free < alloc) return pair_key;
  return pair_key.substr(alloc + kAlloc.size(), free - alloc - kAlloc.size());
}

double PoissonUpperTail(uint64_t k, double lambda) {
  if (k == 0) return 1.0;
  if (lambda <= 0) return 0.0;
  // P(X >= k) = P(k, lambda), the regularized lower incomplete gamma function.
  return boost::math::gamma_p(static_cast<double>(k), lambda);
}

std::vector<const CrossPair*> UnsuppressedPairs(const Analysis& analysis,
                                                const std::vector<Suppression>& suppressions) {
  std::vector<const CrossPair*> out;
  for (const CrossPair& p : analysis.pairs) {
    if (!FindSuppression(p, suppressions)) out.push_back(&p);
  }
  return out;
}

bool EvaluateGate(const Analysis& analysis, const Baseline& baseline,
                  const std::vector<Suppression>& suppressions, const GateOptions& options,
                  GateResult* result, std::string* error) {
  GateResult& r = *result;
  r = GateResult();
  r.sampled = analysis.sampled();
  r.per_operation = analysis.per_operation();
  r.units = analysis.Units();
  r.max_growth = options.max_growth;
  r.min_effect = options.min_effect > 0
                     ? options.min_effect
                     : (r.per_operation ? kMinEffectPerOperation : kMinEffectPerThousand);
  if (!baseline.allowed.empty() && baseline.per_operation != r.per_operation) {
    *error = baseline.per_operation
                 ? "the baseline's rates are per operation: give the run's operations "
                   "(--operations N)"
                 : "the baseline's rates are per 1000 allocations: gate without --operations, "
                   "or rewrite the baseline with --operations (--write-baseline)";
    return false;
  }

  // The baseline's rates by group.
  std::map<std::string, BaselineRates> baseline_groups;
  for (const auto& [key, rates] : baseline.allowed) {
    BaselineRates& g = baseline_groups[GroupKeyOf(key)];
    g.per_call += rates.per_call;
    g.bounded += rates.bounded;
  }

  // This run's groups.
  std::map<std::string, GateGroup> groups;
  std::set<std::string> seen;
  for (const CrossPair& p : analysis.pairs) {
    seen.insert(p.key);
    if (const Suppression* s = FindSuppression(p, suppressions)) {
      r.suppressed.push_back({&p, s});
      continue;
    }
    std::string group_key = GroupKeyOf(p.key);
    GateGroup& g = groups[group_key];
    if (g.pairs.empty()) {
      g.key = std::move(group_key);
      g.alloc_site = &p.alloc_site;
    }
    g.pairs.push_back(&p);
    g.steady += p.steady();
    g.bounded += p.bounded();
  }
  r.groups = groups.size();

  for (auto& [key, g] : groups) {
    g.rate = analysis.PerUnit(g.steady);
    g.bounded_rate = analysis.PerUnit(g.bounded);
    g.steady_objects = analysis.Scaled(g.steady);
    g.bounded_objects = analysis.Scaled(g.bounded);
    if (auto it = baseline_groups.find(key); it != baseline_groups.end()) {
      g.in_baseline = true;
      g.baseline_rate = it->second.per_call;
      g.baseline_bounded_rate = it->second.bounded;
      if (auto site = baseline.sites.find(key); site != baseline.sites.end()) {
        g.baseline_site_rate = site->second;
        double share = site->second > 0 ? g.baseline_rate / site->second : 1.0;
        g.timing_dependent = share >= kTimingShareLow && share <= kTimingShareHigh;
      }
    }
    GateOffense o;
    bool failed = false;
    double growth_base = g.timing_dependent ? g.baseline_site_rate : g.baseline_rate;
    if (Exceeds(analysis, g.steady, g.rate, g.baseline_rate, growth_base, r.min_effect,
                options.max_growth, &o.limit, &o.p_value)) {
      o.verdict = g.in_baseline ? GateVerdict::kGrown : GateVerdict::kNew;
      failed = true;
    } else if (r.per_operation &&
               Exceeds(analysis, g.bounded, g.bounded_rate, g.baseline_bounded_rate,
                       g.baseline_bounded_rate, kBoundedEffectPerOperation, options.max_growth,
                       &o.limit, &o.p_value)) {
      o.verdict = GateVerdict::kBoundedGrowing;
      failed = true;
    }
    if (failed) {
      o.group = g;
      r.offenses.push_back(std::move(o));
      continue;
    }
    ++r.allowed;
    for (const CrossPair* p : g.pairs) {
      if (!baseline.allowed.count(p->key)) r.new_within_noise.push_back(p);
    }
  }
  for (const auto& [key, rates] : baseline.allowed) {
    if (!seen.count(key)) r.gone.push_back(key);
  }
  auto excess = [](const GateOffense& o) {
    const Estimate& e = o.verdict == GateVerdict::kBoundedGrowing ? o.group.bounded_rate
                                                                   : o.group.rate;
    return e.value - o.limit;
  };
  std::stable_sort(r.offenses.begin(), r.offenses.end(),
                   [&](const GateOffense& a, const GateOffense& b) { return excess(a) > excess(b); });
  return true;
}

}  // namespace crossfree::analyzer
