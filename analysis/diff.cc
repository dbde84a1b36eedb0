// SPDX-License-Identifier: Apache-2.0
// Analyzer: `crossfree diff` (see diff.h).
#include "analysis/diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>

#include "render/output.h"

namespace crossfree::analyzer {
namespace {

constexpr size_t kWidth = 100;

std::string RunNames(const Analysis& a) {
  std::string out;
  for (const TraceInfo& t : a.traces) out += (out.empty() ? "" : " ") + t.path;
  return out;
}

std::string RunJson(const Analysis& a) {
  std::string traces;
  for (const TraceInfo& t : a.traces) traces += (traces.empty() ? "" : ", ") + JsonString(t.path);
  return fmt::format(
      "{{\"traces\": [{}], \"allocations\": {}, \"cross_thread_frees\": {}, "
      "\"cross_thread_per_1000_allocs\": {:.3f}, \"pairs\": {}}}",
      traces, a.counts.allocations, a.counts.cross_thread, a.PerThousand(a.counts.cross_thread),
      a.pairs.size());
}

// One frame per line, so long C++ names stay readable in 100 columns.
std::string SiteLines(const Site& site, const std::string& label) {
  if (site.frames.empty()) return Fit(label + site.key, kWidth) + "\n";
  std::string out;
  std::string pad(label.size() - 3, ' ');
  for (size_t i = 0; i < site.frames.size(); ++i) {
    out += Fit((i == 0 ? label : pad + "<- ") + FrameName(site.frames[i], false), kWidth) + "\n";
  }
  return out;
}

}  // namespace

const char* DiffStatusName(DiffStatus status) {
  switch (status) {
    case DiffStatus::kGone: return "gone";
    case DiffStatus::kNew: return "new";
    case DiffStatus::kGrown: return "grown";
    case DiffStatus::kShrunk: return "shrunk";
    case DiffStatus::kUnchanged: return "unchanged";
  }
  return "?";
}

DiffResult ComputeDiff(const Analysis& before, const Analysis& after, double min_change) {
  DiffResult d;
  d.min_change = min_change;
  std::unordered_map<std::string, const CrossPair*> after_by_key;
  for (const CrossPair& p : after.pairs) after_by_key[p.key] = &p;
  for (const CrossPair& p : before.pairs) {
    DiffRow row;
    row.before = &p;
    row.before_rate = before.PerThousand(p.count);
    auto it = after_by_key.find(p.key);
    if (it == after_by_key.end()) {
      row.status = DiffStatus::kGone;
    } else {
      row.after = it->second;
      row.after_rate = after.PerThousand(it->second->count);
      after_by_key.erase(it);
      if (row.after_rate > row.before_rate * (1 + min_change)) {
        row.status = DiffStatus::kGrown;
      } else if (row.after_rate < row.before_rate * (1 - min_change)) {
        row.status = DiffStatus::kShrunk;
      }
    }
    d.rows.push_back(row);
  }
  for (const CrossPair& p : after.pairs) {
    if (!after_by_key.count(p.key)) continue;
    DiffRow row;
    row.status = DiffStatus::kNew;
    row.after = &p;
    row.after_rate = after.PerThousand(p.count);
    d.rows.push_back(row);
  }
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    if (a.status != b.status) return a.status < b.status;
    double x = std::max(a.before_rate, a.after_rate), y = std::max(b.before_rate, b.after_rate);
    if (x != y) return x > y;
    return a.pair().key < b.pair().key;
  });
  return d;
}

std::string RenderDiffText(const Analysis& before, const Analysis& after, const DiffResult& d) {
  std::string out;
  out += Fit("crossfree diff: before " + RunNames(before), kWidth) + "\n";
  out += Fit("                after  " + RunNames(after), kWidth) + "\n\n";
  out += fmt::format("  {:<30}{:>15}{:>15}\n", "", "before", "after");
  out += fmt::format("  {:<30}{:>15}{:>15}\n", "allocations", Commas(before.counts.allocations),
                     Commas(after.counts.allocations));
  out += fmt::format("  {:<30}{:>15}{:>15}\n", "cross-thread frees",
                     Commas(before.counts.cross_thread), Commas(after.counts.cross_thread));
  double br = before.PerThousand(before.counts.cross_thread);
  double ar = after.PerThousand(after.counts.cross_thread);
  std::string change = br > 0 ? fmt::format("   ({:+.1f}%)", 100.0 * (ar - br) / br) : "";
  out += fmt::format("  {:<30}{:>15.1f}{:>15.1f}{}\n", "  per 1000 allocations", br, ar, change);
  out += fmt::format("  {:<30}{:>15}{:>15}\n", "cross-thread pairs", before.pairs.size(),
                     after.pairs.size());

  // tcmalloc central transfers per role, when either run recorded them.
  out += RenderCentralDiffText(before.central, before.counts.allocations, after.central,
                               after.counts.allocations);

  static const DiffStatus kOrder[] = {DiffStatus::kGone, DiffStatus::kNew, DiffStatus::kGrown,
                                      DiffStatus::kShrunk, DiffStatus::kUnchanged};
  static const char* kTitles[] = {"Gone: pairs of BEFORE that AFTER no longer has",
                                  "New: pairs only AFTER has",
                                  "Grown: rate up by more than {:.0f}%",
                                  "Shrunk: rate down by more than {:.0f}%",
                                  "Unchanged: rate within {:.0f}%"};
  for (int s = 0; s < 5; ++s) {
    size_t n = std::count_if(d.rows.begin(), d.rows.end(),
                             [&](const DiffRow& r) { return r.status == kOrder[s]; });
    out += "\n" + fmt::format(fmt::runtime(kTitles[s]), 100.0 * d.min_change) +
           fmt::format(" ({})\n", n);
    if (n == 0) continue;
    out += fmt::format("  {:>10} {:>10} {:>12} {:>12}  {}\n", "before/1k", "after/1k", "before",
                       "after", "alloc role -> free role");
    for (const DiffRow& r : d.rows) {
      if (r.status != kOrder[s]) continue;
      const CrossPair& p = r.pair();
      std::string head = fmt::format("  {:>10.1f} {:>10.1f} {:>12} {:>12}  ", r.before_rate,
                                     r.after_rate, Commas(r.before ? r.before->count : 0),
                                     Commas(r.after ? r.after->count : 0));
      out += head + Fit(p.alloc_role + " -> " + p.free_role, kWidth - head.size()) + "\n";
      out += SiteLines(p.alloc_site, "        alloc: ");
      out += SiteLines(p.free_site, "        free:  ");
    }
  }
  return out;
}

std::string RenderDiffJson(const Analysis& before, const Analysis& after, const DiffResult& d) {
  std::string out = "{\n";
  out += fmt::format("  \"schema_version\": {},\n  \"command\": \"diff\",\n", kDiffSchemaVersion);
  out += fmt::format("  \"min_change\": {:.4f},\n", d.min_change);
  out += "  \"before\": " + RunJson(before) + ",\n";
  out += "  \"after\": " + RunJson(after) + ",\n";
  out += "  \"pairs\": [";
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const DiffRow& r = d.rows[i];
    const CrossPair& p = r.pair();
    out += fmt::format(
        "{}\n    {{\"status\": \"{}\", \"key\": {}, \"alloc_role\": {}, \"free_role\": {}, "
        "\"alloc_site\": {}, \"free_site\": {},\n     \"before\": {{\"count\": {}, "
        "\"per_1000_allocs\": {:.3f}}}, \"after\": {{\"count\": {}, \"per_1000_allocs\": {:.3f}}}}}",
        i ? "," : "", DiffStatusName(r.status), JsonString(p.key), JsonString(p.alloc_role),
        JsonString(p.free_role), JsonString(p.alloc_site.key), JsonString(p.free_site.key),
        r.before ? r.before->count : 0, r.before_rate, r.after ? r.after->count : 0,
        r.after_rate);
  }
  out += d.rows.empty() ? "]" : "\n  ]";
  if (before.central.present() || after.central.present()) {  // only then: older outputs unchanged
    out += ",\n  \"central\": " + RenderCentralDiffJson(before.central, after.central);
  }
  out += "\n}\n";
  return out;
}

}  // namespace crossfree::analyzer
