// SPDX-License-Identifier: Apache-2.0
// Analyzer: `crossfree gate` evaluation and output (see gate.h).
#include "analysis/gate.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "render/output.h"

namespace crossfree::analyzer {
namespace {

constexpr size_t kWidth = 100;

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
  std::set<std::string> seen;
  for (const CrossPair& p : analysis.pairs) {
    seen.insert(p.key);
    if (const Suppression* s = FindSuppression(p, suppressions)) {
      r.suppressed.push_back({&p, s});
      continue;
    }
    double rate = analysis.PerThousand(p.count);
    auto it = baseline.allowed.find(p.key);
    if (it == baseline.allowed.end()) {
      r.offenses.push_back({&p, true, 0, rate});
    } else if (rate > std::max(it->second, kMinBaselineRate) * max_growth) {
      r.offenses.push_back({&p, false, it->second, rate});
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

std::string RenderGateText(const Analysis& analysis, const GateResult& r, double max_growth,
                           const std::string& accept_command) {
  std::string out;
  size_t new_count = std::count_if(r.offenses.begin(), r.offenses.end(),
                                   [](const GateOffense& o) { return o.is_new; });
  if (r.passed()) {
    out += fmt::format(
        "crossfree gate: PASSED: {} cross-thread pairs, {} allowed by the baseline, {} "
        "suppressed\n",
        analysis.pairs.size(), r.allowed.size(), r.suppressed.size());
  } else {
    out += fmt::format(
        "crossfree gate: FAILED: {} new cross-thread pair{}, {} grown beyond {:g}x the baseline "
        "rate\n",
        new_count, new_count == 1 ? "" : "s", r.offenses.size() - new_count, max_growth);
  }
  for (size_t i = 0; i < r.offenses.size(); ++i) {
    const GateOffense& o = r.offenses[i];
    const CrossPair& p = *o.pair;
    out += "\n";
    out += Fit(fmt::format("{} {} -> {}", o.is_new ? "NEW  " : "GROWN", p.alloc_role,
                           p.free_role),
               kWidth) +
           "\n";
    if (o.is_new) {
      out += fmt::format("    {} frees, {:.3f} per 1000 allocations; not in the baseline\n",
                         Commas(p.count), o.rate);
    } else {
      out += fmt::format(
          "    {} frees, {:.3f} per 1000 allocations; baseline {:.3f} ({:.2f}x, limit {:g}x)\n",
          Commas(p.count), o.rate, o.baseline_rate,
          o.rate / std::max(o.baseline_rate, kMinBaselineRate), max_growth);
    }
    out += SiteText(p.alloc_site, "allocated at  ", 4, kWidth);
    out += SiteText(p.free_site, "freed at      ", 4, kWidth);
    out += "    key: " + p.key + "\n";
  }
  if (!r.gone.empty()) {
    out += fmt::format(
        "\n{} baseline pair{} not seen in this run (tighten the baseline with "
        "--write-baseline):\n",
        r.gone.size(), r.gone.size() == 1 ? "" : "s");
    for (const std::string& k : r.gone) out += "  " + k + "\n";
  }
  if (!r.suppressed.empty()) {
    out += fmt::format("\n{} suppressed pair{}:\n", r.suppressed.size(),
                       r.suppressed.size() == 1 ? "" : "s");
    for (const auto& [pair, s] : r.suppressed) {
      out += fmt::format("  {} ({} frees)\n    reason: {}\n", pair->key, Commas(pair->count),
                         s->reason);
    }
  }
  if (!r.passed()) {
    out += "\nIf these pairs are intended, accept them into the baseline with:\n  " +
           accept_command + "\n";
  }
  return out;
}

}  // namespace crossfree::analyzer
