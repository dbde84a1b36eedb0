// SPDX-License-Identifier: Apache-2.0
// Analyzer: `crossfree gate` evaluation (see gate.h).
#include "analyzer/model/gate.h"

#include <boost/math/special_functions/beta.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/special_functions/gamma.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

// Whether a sampled group's rate is beyond the baseline's: the effect on
// the estimate, the growth on the interval's lower bound (sampling noise
// alone does not fail a group), and the interval replaces the significance
// test. Sets *limit.
bool SampledExceeds(const Estimate& rate, double baseline, double growth_base, double effect,
                    double max_growth, double* limit) {
  *limit = std::max(baseline + effect, growth_base * max_growth);
  if (rate.value < (baseline + effect) * (1 - 1e-9)) return false;
  return rate.low > growth_base * max_growth;
}


// The baseline's count behind a rate: rate x units, whole.
uint64_t BaselineCount(double rate, double units) {
  return static_cast<uint64_t>(std::llround(std::max(0.0, rate * units)));
}

// A timing-dependent site's bound from what the baseline gives: each run's
// counts (version 4), else its one run's counts taken back from the site's
// rate and share over the units (version 3), else (version 2, no units) the
// share taken as exact.
StayingBound BaselineStayingBound(const Baseline& baseline, const std::string& site,
                                  double share, double timing_slack) {
  if (auto it = baseline.site_runs.find(site); it != baseline.site_runs.end()) {
    StayingBound b = LeastStayingShare(it->second, timing_slack);
    if (b.runs > 0) return b;
  }
  if (auto it = baseline.sites.find(site); it != baseline.sites.end() && baseline.units > 0) {
    uint64_t objects = BaselineCount(it->second, baseline.units);
    uint64_t crossed = std::min<uint64_t>(
        objects, static_cast<uint64_t>(std::llround(share * static_cast<double>(objects))));
    if (objects > 0) return LeastStayingShare({{objects, crossed}}, timing_slack);
  }
  StayingBound b;
  b.baseline_staying = 1 - share;
  b.least = b.baseline_staying / std::max(1.0, timing_slack);
  b.runs = 1;
  b.run_alpha = kSignificance / 2;
  return b;
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

double BinomialUpperTail(uint64_t k, uint64_t n, double p) {
  if (k == 0) return 1.0;
  if (k > n || p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  // P(X >= k) = I_p(k, n - k + 1), the regularized incomplete beta function.
  return boost::math::ibeta(static_cast<double>(k), static_cast<double>(n - k + 1), p);
}

double BinomialLowerTail(uint64_t k, uint64_t n, double p) {
  if (k >= n) return 1.0;
  return 1.0 - BinomialUpperTail(k + 1, n, p);
}

StayingBound LeastStayingShare(const std::vector<SiteRunCount>& runs, double timing_slack) {
  StayingBound b;
  uint64_t objects = 0, crossed = 0;
  std::vector<double> y;  // ln((s_i + 1/2) / (n_i + 1)) of each run with objects
  for (const SiteRunCount& r : runs) {
    if (r.objects == 0) continue;
    objects += r.objects;
    crossed += std::min(r.crossed, r.objects);
    double stayed = static_cast<double>(r.objects - std::min(r.crossed, r.objects));
    y.push_back(std::log((stayed + 0.5) / (static_cast<double>(r.objects) + 1)));
  }
  b.runs = static_cast<int>(y.size());
  if (objects == 0) return b;
  const uint64_t stayed = objects - crossed;
  b.baseline_staying = static_cast<double>(stayed) / static_cast<double>(objects);
  if (b.runs == 1) {
    // The one-sided Clopper-Pearson lower bound of the staying share:
    // P(Binomial(n0, q) >= s0) = kSignificance / 2 (0 when none stayed).
    b.run_alpha = kSignificance / 2;
    double low = stayed == 0 ? 0.0
                             : boost::math::ibeta_inv(static_cast<double>(stayed),
                                                      static_cast<double>(objects - stayed + 1),
                                                      kSignificance / 2);
    b.least = low / std::max(1.0, timing_slack);
    return b;
  }
  // The one-sided prediction bound of a new run's y from R runs' y:
  // (y_new - m) / (d sqrt(1 + 1/R)) is Student's t with R - 1 degrees of
  // freedom when the y are normal.
  const double n = static_cast<double>(y.size());
  double mean = 0;
  for (double v : y) mean += v / n;
  double ss = 0;
  for (double v : y) ss += (v - mean) * (v - mean);
  const double deviation = std::sqrt(ss / (n - 1));
  const double t = boost::math::quantile(boost::math::students_t(n - 1), 1 - kSignificance / 2);
  b.run_alpha = kSignificance / 2;
  b.least = std::exp(mean - t * deviation * std::sqrt(1 + 1 / n));
  return b;
}

bool StayingShareFails(const StayingBound& bound, uint64_t stayed, uint64_t objects,
                       double* p_value) {
  if (p_value) *p_value = 1;
  if (objects == 0 || bound.least <= 0) return false;
  stayed = std::min(stayed, objects);
  const double n = static_cast<double>(objects), s = static_cast<double>(stayed);
  // Below the bound: with several runs on the scale the bound was computed
  // on (ln((s + 1/2) / (n + 1)), which is defined when none stayed).
  bool below = bound.runs >= 2 ? (s + 0.5) / (n + 1) < bound.least : s < bound.least * n;
  if (!below) return false;
  double p = BinomialLowerTail(stayed, objects, bound.least);
  if (p_value) *p_value = p;
  return p < bound.run_alpha;
}

bool CountFails(const RateTest& t, uint64_t c, double* p_value) {
  if (p_value) *p_value = 1;
  if (t.units <= 0) return false;
  const double r = static_cast<double>(c) / t.units;
  // The effect on the rate (a rate computed exactly at the effect size may
  // land a rounding below it), the growth strictly beyond.
  if (r < (t.baseline_rate + t.effect) * (1 - 1e-9)) return false;
  if (r <= t.growth_base * t.max_growth) return false;
  if (c == 0) return false;
  double p;
  if (t.baseline_units > 0) {
    // Conditional on the total, this run's share of the c + c0 objects is
    // Binomial(c + c0, V / (V + V0)) when the rates are equal: the exact
    // test of two Poisson rates, which allows for the baseline's noise.
    uint64_t c0 = BaselineCount(t.baseline_rate, t.baseline_units);
    p = BinomialUpperTail(c, c + c0, t.units / (t.units + t.baseline_units));
  } else {
    p = PoissonUpperTail(c, t.baseline_rate * t.units);
  }
  if (p_value) *p_value = p;
  return p < kSignificance;
}

uint64_t SmallestFailingCount(const RateTest& t) {
  constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
  if (t.units <= 0) return kNone;
  // Every test is monotone in c: double until one fails, then bisect.
  uint64_t hi = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::max(t.baseline_rate + t.effect,
                                        t.growth_base * t.max_growth) * t.units));
  while (!CountFails(t, hi)) {
    if (hi > (uint64_t{1} << 52)) return kNone;
    hi *= 2;
  }
  uint64_t lo = 0;  // fails at hi, not at lo (c = 0 never fails)
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    (CountFails(t, mid) ? hi : lo) = mid;
  }
  return hi;
}

double DetectableIncrease(const RateTest& t) {
  uint64_t c = SmallestFailingCount(t);
  if (c == std::numeric_limits<uint64_t>::max()) return std::numeric_limits<double>::infinity();
  // P(Poisson(mu) >= c) = P(c, mu) = 1 - kMissProbability.
  double mu = boost::math::gamma_p_inv(static_cast<double>(c), 1 - kMissProbability);
  return std::max(0.0, mu / t.units - t.baseline_rate);
}

std::string PromiseTable(const std::vector<double>& baseline_rates,
                         const std::vector<double>& operations) {
  std::string out = "| baseline rate per operation |";
  std::string rule = "| ---: |";
  for (double u : operations) {
    out += fmt::format(" {} operations |", GroupedCount(static_cast<uint64_t>(u)));
    rule += " ---: |";
  }
  out += "\n" + rule + "\n";
  for (double b : baseline_rates) {
    out += b == 0 ? std::string("| 0 (a new site) |") : fmt::format("| {:g} |", b);
    for (double u : operations) {
      RateTest t{.baseline_rate = b, .baseline_units = u, .units = u,
                 .effect = kMinEffectPerOperation, .growth_base = b, .max_growth = 1.5};
      out += " +" + FormatPromise(DetectableIncrease(t)) + " |";
    }
    out += "\n";
  }
  return out;
}

std::string FormatPromise(double promise) {
  if (!std::isfinite(promise)) return "none";
  double x = PromiseRounded(promise);
  int decimals = x > 0 ? std::max(0, 1 - static_cast<int>(std::floor(std::log10(x)))) : 0;
  return fmt::format("{:.{}f}", x, decimals);
}

double PromiseRounded(double x) {
  if (!std::isfinite(x) || x <= 0) return x;
  // Up to 2 significant digits: the promise printed is never below the one
  // computed.
  double scale = std::pow(10.0, std::floor(std::log10(x)) - 1);
  return std::ceil(x / scale * (1 - 1e-12)) * scale;
}

std::vector<const CrossPair*> UnsuppressedPairs(const Analysis& analysis,
                                                const std::vector<Suppression>& suppressions) {
  std::vector<const CrossPair*> out;
  for (const CrossPair& p : analysis.pairs) {
    if (!FindSuppression(p, suppressions)) out.push_back(&p);
  }
  return out;
}

namespace {

// EvaluateGate's steps, in its order.

// The run's figures and the options into a fresh result, after checking
// that the baseline's rates are on the run's scale; the warnings on what
// the gate cannot judge.
bool StartResult(const Analysis& analysis, const Baseline& baseline, const GateOptions& options,
                 GateResult* result, std::string* error) {
  GateResult& r = *result;
  r = GateResult();
  r.sampled = analysis.sampled();
  r.per_operation = analysis.per_operation();
  r.units = analysis.Units();
  r.steady_units = analysis.SteadyUnits();
  r.max_growth = options.max_growth;
  r.timing_slack = options.timing_slack;
  r.min_effect = options.min_effect.value_or(r.per_operation ? kMinEffectPerOperation
                                                             : kMinEffectPerThousand);
  r.bounded_effect = r.per_operation ? options.bounded_effect.value_or(kBoundedEffectPerOperation)
                                     : 0;
  // The unit is checked even when the baseline allows nothing: an empty
  // baseline per operation against a run without --operations would judge
  // new sites on the wrong scale.
  if (baseline.per_operation != r.per_operation) {
    *error = baseline.per_operation
                 ? "the baseline's rates are per operation: give the run's operations "
                   "(--operations N)"
                 : "the baseline's rates are per 1000 allocations: gate without --operations, "
                   "or rewrite the baseline with --operations (--write-baseline)";
    return false;
  }
  r.baseline_steady_units = baseline.steady_units;
  if (!r.per_operation) {
    r.warnings.push_back(
        "no --operations: per-call rates are per 1000 allocations, which move when the run's "
        "allocations per operation change (a hand-off on 1 call in 20 is at most the effect size, "
        "caught at most about half the time, at 50 or more allocations per call), and bounded "
        "(one-off) objects are not judged");
  }
  if (baseline.steady_units <= 0 && baseline.version < 3) {
    r.warnings.push_back(fmt::format(
        "the baseline (version {}) does not give its run's units: its rates are taken as exact, "
        "so the significance test does not allow for its own noise; rewrite it with "
        "--write-baseline",
        baseline.version));
  }
  return true;
}

// The baseline's rates by group.
std::map<std::string, BaselineRates> BaselineGroups(const Baseline& baseline) {
  std::map<std::string, BaselineRates> baseline_groups;
  for (const auto& [key, rates] : baseline.allowed) {
    BaselineRates& g = baseline_groups[GroupKeyOf(key)];
    g.per_call += rates.per_call;
    g.bounded += rates.bounded;
  }
  return baseline_groups;
}

// This run's groups of pairs by allocation site; suppressed pairs go to
// r->suppressed instead. Every pair's key into *seen.
std::map<std::string, GateGroup> RunGroups(const Analysis& analysis,
                                           const std::vector<Suppression>& suppressions,
                                           GateResult* r, std::set<std::string>* seen) {
  std::map<std::string, GateGroup> groups;
  for (const CrossPair& p : analysis.pairs) {
    seen->insert(p.key);
    if (const Suppression* s = FindSuppression(p, suppressions)) {
      r->suppressed.push_back({&p, s});
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
  return groups;
}

// Judges each group of the run against the baseline: its figures, its
// tests, its verdict.
struct GroupJudge {
  const Analysis& analysis;
  const Baseline& baseline;
  const GateOptions& options;
  const std::map<std::string, BaselineRates>& baseline_groups;
  const GateResult& r;

  RateTest SteadyTest(double b, double growth_base) const {
    return RateTest{.baseline_rate = b, .baseline_units = baseline.steady_units,
                    .units = r.steady_units, .effect = r.min_effect,
                    .growth_base = growth_base, .max_growth = options.max_growth};
  }
  RateTest BoundedTest(double b) const {
    return RateTest{.baseline_rate = b, .baseline_units = baseline.units, .units = r.units,
                    .effect = r.bounded_effect, .growth_base = b,
                    .max_growth = options.max_growth};
  }

  // The group's rates and objects, its share of its site's objects, and
  // the baseline's figures for it (whether the site's share makes it
  // timing-dependent, and then the bound on its staying share).
  StayingBound Measure(const std::string& key, GateGroup& g) const {
    StayingBound staying_bound;  // of a timing-dependent site
    g.rate = analysis.PerSteadyUnit(g.steady);
    g.bounded_rate = analysis.PerUnit(g.bounded);
    g.steady_objects = analysis.Scaled(g.steady);
    g.bounded_objects = analysis.Scaled(g.bounded);
    if (auto it = analysis.site_objects.find(key);
        it != analysis.site_objects.end() && it->second > 0) {
      g.site_objects = it->second;
      g.share = std::min(1.0, static_cast<double>((g.steady + g.bounded).sampled) /
                                  static_cast<double>(it->second));
    }
    if (auto it = baseline_groups.find(key); it != baseline_groups.end()) {
      g.in_baseline = true;
      g.baseline_rate = it->second.per_call;
      g.baseline_bounded_rate = it->second.bounded;
      if (auto site = baseline.sites.find(key); site != baseline.sites.end()) {
        g.baseline_site_rate = site->second;
        auto share = baseline.site_shares.find(key);
        g.baseline_share = share != baseline.site_shares.end() ? share->second
                           : site->second > 0 ? std::min(1.0, g.baseline_rate / site->second)
                                              : 1.0;
        g.timing_dependent =
            g.baseline_share >= kTimingShareLow && g.baseline_share <= kTimingShareHigh;
        if (g.timing_dependent) {
          StayingBound bound = BaselineStayingBound(baseline, key, g.baseline_share,
                                                    options.timing_slack);
          g.baseline_staying_share = bound.baseline_staying;
          g.least_staying_share = bound.least;
          g.baseline_runs = bound.runs;
          staying_bound = bound;
        }
      }
    }
    return staying_bound;
  }

  // A timing-dependent group whose rate grew: fails when the share of the
  // site's objects that stay on their thread falls below the least the
  // baseline allows (StayingShareFails), as a binomial count of the site's.
  bool FailsByShare(const GateGroup& g, const StayingBound& bound, GateOffense* o) const {
    if (!(g.timing_dependent && g.site_objects > 0 &&
          g.rate.value >= (g.baseline_rate + r.min_effect) * (1 - 1e-9))) {
      return false;
    }
    const uint64_t crossed = std::min(g.site_objects, (g.steady + g.bounded).sampled);
    const uint64_t stayed = g.site_objects - crossed;
    double p = 1;
    if (!StayingShareFails(bound, stayed, g.site_objects, &p)) return false;
    o->verdict = GateVerdict::kGrown;
    o->by_share = true;
    o->staying_share = static_cast<double>(stayed) / static_cast<double>(g.site_objects);
    o->staying_limit = g.least_staying_share;
    o->p_value = r.sampled ? 0 : p;
    return true;
  }

  // The group's verdict: true with *o filled when it fails (new or grown
  // per call, by the staying share, or bounded objects growing). Sets the
  // group's promise.
  bool Fails(GateGroup& g, const StayingBound& bound, GateOffense* o) const {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double growth_base = g.timing_dependent ? g.baseline_site_rate : g.baseline_rate;
    const RateTest steady = SteadyTest(g.baseline_rate, growth_base);
    const RateTest bounded = BoundedTest(g.baseline_bounded_rate);
    g.promise = r.sampled ? nan : DetectableIncrease(steady);

    bool failed = false;
    if (r.sampled ? SampledExceeds(g.rate, g.baseline_rate, growth_base, r.min_effect,
                                   options.max_growth, &o->limit)
                  : CountFails(steady, g.steady.sampled, &o->p_value)) {
      o->verdict = g.in_baseline ? GateVerdict::kGrown : GateVerdict::kNew;
      failed = true;
    } else if (FailsByShare(g, bound, o)) {
      failed = true;
    }
    if (failed) {
      o->limit = std::max(g.baseline_rate + r.min_effect, growth_base * options.max_growth);
    } else if (r.per_operation &&
               (r.sampled ? SampledExceeds(g.bounded_rate, g.baseline_bounded_rate,
                                           g.baseline_bounded_rate, r.bounded_effect,
                                           options.max_growth, &o->limit)
                          : CountFails(bounded, g.bounded.sampled, &o->p_value))) {
      o->verdict = GateVerdict::kBoundedGrowing;
      o->limit = std::max(g.baseline_bounded_rate + r.bounded_effect,
                          g.baseline_bounded_rate * options.max_growth);
      failed = true;
    }
    return failed;
  }
};

// The offenses by how far each is above its limit, descending.
void SortOffenses(GateResult* r) {
  auto excess = [](const GateOffense& o) {
    const Estimate& e = o.verdict == GateVerdict::kBoundedGrowing ? o.group.bounded_rate
                                                                   : o.group.rate;
    return e.value - o.limit;
  };
  std::stable_sort(r->offenses.begin(), r->offenses.end(),
                   [&](const GateOffense& a, const GateOffense& b) { return excess(a) > excess(b); });
}

}  // namespace

bool EvaluateGate(const Analysis& analysis, const Baseline& baseline,
                  const std::vector<Suppression>& suppressions, const GateOptions& options,
                  GateResult* result, std::string* error) {
  GateResult& r = *result;
  if (!StartResult(analysis, baseline, options, result, error)) return false;
  const std::map<std::string, BaselineRates> baseline_groups = BaselineGroups(baseline);
  std::set<std::string> seen;
  std::map<std::string, GateGroup> groups = RunGroups(analysis, suppressions, result, &seen);
  r.groups = groups.size();

  const GroupJudge judge{analysis, baseline, options, baseline_groups, r};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.promise_new = r.sampled ? nan : DetectableIncrease(judge.SteadyTest(0, 0));
  r.promise_new_bounded =
      r.sampled || !r.per_operation ? nan : DetectableIncrease(judge.BoundedTest(0));

  for (auto& [key, g] : groups) {
    const StayingBound bound = judge.Measure(key, g);
    GateOffense o;
    if (judge.Fails(g, bound, &o)) {
      if (r.sampled) o.p_value = 0;
      o.group = g;
      r.offenses.push_back(std::move(o));
      continue;
    }
    ++r.allowed;
    r.passed_groups.push_back(g);
    for (const CrossPair* p : g.pairs) {
      if (!baseline.allowed.count(p->key)) r.new_within_noise.push_back(p);
    }
  }
  for (const auto& [key, rates] : baseline.allowed) {
    if (!seen.count(key)) r.gone.push_back(key);
  }
  SortOffenses(result);
  return true;
}

std::string GroupFingerprint(const std::string& key) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ULL;
  return fmt::format("{:016x}", h);
}

}  // namespace crossfree::analyzer
