// SPDX-License-Identifier: Apache-2.0
// Analyzer: what every gate format says alike (see gate_formats.h).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "analyzer/render/gate_formats.h"
#include "analyzer/render/output.h"

namespace crossfree::analyzer::render {

const char* GateUnitName(const GateResult& r) {
  return r.per_operation ? "per operation" : "per 1000 allocations";
}

std::string PromiseText(double promise) {
  if (std::isnan(promise)) return "not computed (sampled run)";
  if (std::isinf(promise)) return "none";
  return FormatPromise(promise);
}

namespace {

std::string PromiseJsonNumber(double promise) {
  if (!std::isfinite(promise)) return "null";
  return fmt::format("{:.6g}", PromiseRounded(promise));
}

// The allowed groups' smallest and largest finite promise.
bool PromiseRange(const GateResult& r, const GateGroup** lo, const GateGroup** hi) {
  *lo = *hi = nullptr;
  auto consider = [&](const GateGroup& g) {
    if (!g.in_baseline || !std::isfinite(g.promise)) return;
    if (!*lo || g.promise < (*lo)->promise) *lo = &g;
    if (!*hi || g.promise > (*hi)->promise) *hi = &g;
  };
  for (const GateGroup& g : r.passed_groups) consider(g);
  for (const GateOffense& o : r.offenses) consider(o.group);
  return *lo != nullptr;
}

}  // namespace

std::string StayingBoundText(const GateResult& r, const GateGroup& g) {
  if (g.baseline_runs >= 2) {
    return fmt::format("the least the spread of the baseline's {} runs allows; they kept {}",
                       g.baseline_runs, PercentText(g.baseline_staying_share, 1));
  }
  return fmt::format("the lower bound of the baseline's {} / {:g}",
                     PercentText(g.baseline_staying_share, 1), r.timing_slack);
}

std::string GatePromiseText(const GateResult& r) {
  std::string out;
  const char* unit = GateUnitName(r);
  if (r.steady_units < r.units) {
    out += fmt::format(
        "  per-call rates are over the steady state: {:.{}f} of the run's {:.{}f} {} (its share of "
        "the run's time; objects of the first and last 5% are one-off)\n",
        r.steady_units, r.per_operation ? 0 : 3, r.units, r.per_operation ? 0 : 3,
        r.per_operation ? "operations" : "thousand allocations");
  }
  if (r.sampled) {
    out += "  sure to catch: not computed for a sampled run\n";
    return out;
  }
  out += fmt::format(
      "  sure to catch (fails in >= {} of runs this long): a new site at {} or more per-call "
      "objects {}",
      PercentText(kCatchProbability, 2), PromiseText(r.promise_new), unit);
  const GateGroup *lo, *hi;
  if (PromiseRange(r, &lo, &hi)) {
    out += lo == hi || PromiseText(lo->promise) == PromiseText(hi->promise)
               ? fmt::format("; an allowed site rising by {}", PromiseText(lo->promise))
               : fmt::format("; an allowed site rising by {} to {} (each group's: --format json)",
                             PromiseText(lo->promise), PromiseText(hi->promise));
  }
  if (r.per_operation) {
    out += fmt::format("; one-off objects of a new site at {} or more",
                       PromiseText(r.promise_new_bounded));
  }
  out += "\n";
  return out;
}

std::string GatePromiseJson(const GateResult& r) {
  std::string groups;
  auto add = [&](const GateGroup& g) {
    groups += fmt::format(
        "{}\n      {{\"group\": {}, \"baseline_rate\": {:.6g}, \"timing_dependent\": {}, "
        "\"increase\": {}{}}}",
        groups.empty() ? "" : ",", JsonString(g.key), g.baseline_rate,
        g.timing_dependent ? "true" : "false", PromiseJsonNumber(g.promise),
        g.timing_dependent
            ? fmt::format(", \"least_staying_share\": {:.4g}, \"baseline_runs\": {}",
                          g.least_staying_share, g.baseline_runs)
            : "");
  };
  for (const GateGroup& g : r.passed_groups) {
    if (g.in_baseline) add(g);
  }
  for (const GateOffense& o : r.offenses) {
    if (o.group.in_baseline) add(o.group);
  }
  std::string out = fmt::format("  \"steady_units\": {:.6g},\n  \"baseline_steady_units\": {:.6g},\n",
                                r.steady_units, r.baseline_steady_units);
  out += fmt::format(
      "  \"promise\": {{\"miss_probability\": {:g}, \"new_site\": {}, \"new_site_bounded\": {}, "
      "\"groups\": [{}{}]}},\n",
      kMissProbability, PromiseJsonNumber(r.promise_new), PromiseJsonNumber(r.promise_new_bounded),
      groups, groups.empty() ? "" : "\n    ");
  out += "  \"warnings\": [";
  for (size_t i = 0; i < r.warnings.size(); ++i) out += (i ? ", " : "") + JsonString(r.warnings[i]);
  out += "],\n";
  return out;
}

std::string OffenseSummary(const GateResult& r, const GateOffense& o) {
  const GateGroup& g = o.group;
  const bool bounded = o.verdict == GateVerdict::kBoundedGrowing;
  const Estimate& rate = bounded ? g.bounded_rate : g.rate;
  std::string baseline = !g.in_baseline ? std::string("not in the baseline")
                         : bounded ? fmt::format("baseline {:.4g}", g.baseline_bounded_rate)
                                   : fmt::format("baseline {:.4g}", g.baseline_rate);
  std::string what =
      o.by_share
          ? fmt::format("{} of the site's objects stay on their thread, below {} ({}); {:.4g} "
                        "per-call objects {}, {}",
                        PercentText(o.staying_share, 1), PercentText(o.staying_limit, 1),
                        StayingBoundText(r, g), rate.value, GateUnitName(r), baseline)
          : fmt::format("{:.4g} {} objects {} ({}), limit {:.4g}; {}", rate.value,
                        bounded ? "one-off" : "per-call", GateUnitName(r),
                        Commas(bounded ? g.bounded_objects : g.steady_objects), o.limit, baseline);
  // A one-run baseline guesses a timing-dependent site's spread from one
  // share (docs/guide/ci-gate.md): when reruns of unchanged code fail here,
  // the remedy is a baseline of several runs, so the message says how.
  if (o.by_share && g.baseline_runs < 2) {
    what += "; the baseline is of one run, which cannot know how this share varies: if reruns "
            "of unchanged code fail here, write the baseline from 3 runs (--write-baseline "
            "--run A.trc --run B.trc --run C.trc)";
  }
  return fmt::format("{} cross-thread allocation site {}: {}", GateVerdictName(o.verdict), g.key,
                     what);
}

std::string RepoPath(const SymbolFrame& frame, const std::string& source_root) {
  if (frame.file.empty()) return "";
  std::string root = source_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (!root.empty() && frame.file.size() > root.size() + 1 &&
      frame.file.compare(0, root.size(), root) == 0 && frame.file[root.size()] == '/') {
    return frame.file.substr(root.size() + 1);
  }
  return frame.file;
}

const SymbolFrame* SourceFrame(const Site& site) {
  for (const SymbolFrame& f : site.frames) {
    if (!f.file.empty() && f.line > 0) return &f;
  }
  return nullptr;
}

}  // namespace crossfree::analyzer::render
