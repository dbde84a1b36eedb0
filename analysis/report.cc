// SPDX-License-Identifier: Apache-2.0
// Analyzer: `crossfree report` text and JSON rendering.
#include "analysis/report.h"

#include <fmt/core.h>

#include <algorithm>

#include "analysis/central.h"
#include "render/output.h"
#include "analysis/size_class.h"

namespace crossfree::analyzer {
namespace {

constexpr size_t kWidth = 100;

double Share(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string SizeClassesText(const CrossPair& p) {
  std::vector<std::pair<uint64_t, int>> by_count;
  for (auto [c, n] : p.size_classes) by_count.push_back({n, c});
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](auto& a, auto& b) { return a.first > b.first; });
  std::string out;
  size_t shown = 0;
  for (auto [n, c] : by_count) {
    if (shown == 4) {
      out += fmt::format(", +{} more", by_count.size() - shown);
      break;
    }
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {:.1f}%", SizeClassLabel(c), 100.0 * Share(n, p.count));
    ++shown;
  }
  return out;
}

std::string TraceLine(const TraceInfo& t) {
  std::string notes;
  if (t.ppid != 0 && t.ppid != 1) notes += fmt::format("parent {}", t.ppid);
  if (t.truncated) notes += notes.empty() ? "truncated" : ", truncated";
  std::string line = fmt::format("  pid {:<7} {}  {}", t.pid, t.path, t.exe);
  if (!notes.empty()) line += fmt::format("  ({})", notes);
  return Fit(line, kWidth) + "\n";
}

void LoneText(std::string& out, const char* title, const std::vector<LoneSite>& sites,
              uint64_t total, bool with_bytes) {
  if (total == 0) return;
  out += fmt::format("\n{} (top {} site{})\n", title, sites.size(), sites.size() == 1 ? "" : "s");
  for (const LoneSite& s : sites) {
    // Frees rarely know their size (only sized delete does): bytes only for live ones.
    std::string head = fmt::format("  {:>11}  {:>10}  {:<14} ", Commas(s.count),
                                   with_bytes ? HumanBytes(s.bytes) : "", Fit(s.role, 14));
    out += head + Fit(s.site.key, kWidth - head.size()) + "\n";
  }
}

}  // namespace

const char* AsymmetryEffect(int64_t net) {
  return net > 0 ? "drains" : net < 0 ? "overflows" : "balanced";
}

std::string RenderReportText(const Analysis& a, const ReportOptions& options) {
  const PairingCounts& c = a.counts;
  std::string out;
  out += fmt::format("crossfree report: {} trace{}, {} threads, {} events\n", a.traces.size(),
                     a.traces.size() == 1 ? "" : "s", a.threads, Commas(c.events));
  for (const TraceInfo& t : a.traces) out += TraceLine(t);

  out += "\nSummary\n";
  auto row = [&out](std::string_view label, uint64_t n, std::string note) {
    out += fmt::format("  {:<22}{:>15}{}{}\n", label, Commas(n), note.empty() ? "" : "   ", note);
  };
  row("allocations", c.allocations, "");
  row("frees", c.frees, "");
  row("  cross-thread", c.cross_thread,
      fmt::format("{:.1f}% of frees, {:.1f} per 1000 allocations",
                  100.0 * Share(c.cross_thread, c.frees), a.PerThousand(c.cross_thread)));
  row("  same-thread", c.paired - c.cross_thread, "");
  row("live at exit", c.live_at_exit, c.live_at_exit ? HumanBytes(c.live_bytes) : "");
  row("unknown frees", c.unknown_frees,
      c.unknown_frees ? "never seen allocated (before tracing, or lost)" : "");
  row("double frees", c.double_frees, "");
  if (c.ignored_null) {
    row("null-address events", c.ignored_null, "free(NULL) or failed allocations, ignored");
  }
  if (c.alloc_over_live) {
    row("allocs over live", c.alloc_over_live, "address allocated again without a free");
  }

  size_t shown = options.top == 0 ? a.pairs.size() : std::min(options.top, a.pairs.size());
  if (a.pairs.empty()) {
    out += "\nNo cross-thread pairs.\n";
  } else {
    out += fmt::format("\nTop cross-thread pairs ({} of {}, by frees; allocating -> freeing {})\n",
                       shown, a.pairs.size(), options.by == GroupBy::kRole ? "role" : "thread");
  }
  for (size_t i = 0; i < shown; ++i) {
    const CrossPair& p = a.pairs[i];
    out += "\n";
    out += Fit(fmt::format("#{:<3}{} -> {}", i + 1, p.alloc_role, p.free_role), kWidth) + "\n";
    out += fmt::format("    {} frees ({:.1f}% of cross-thread, {:.1f} per 1000 allocs), {}\n",
                       Commas(p.count), 100.0 * Share(p.count, c.cross_thread),
                       a.PerThousand(p.count), HumanBytes(p.bytes));
    out += Fit("    size classes: " + SizeClassesText(p), kWidth) + "\n";
    out += SiteText(p.alloc_site, "allocated at  ", 4, kWidth);
    out += SiteText(p.free_site, "freed at      ", 4, kWidth);
  }

  if (!a.asymmetry.empty()) {
    size_t rows = options.asymmetry_rows == 0 ? a.asymmetry.size()
                                              : std::min(options.asymmetry_rows, a.asymmetry.size());
    out += fmt::format(
        "\nCache asymmetry: allocations minus frees per {} and size class ({} of {})\n",
        options.by == GroupBy::kRole ? "role" : "thread", rows, a.asymmetry.size());
    out += fmt::format("  {:<20} {:>8} {:>13} {:>13} {:>14}  {}\n", "role", "class", "allocs",
                       "frees", "net", "effect");
    for (size_t i = 0; i < rows; ++i) {
      const AsymmetryRow& r = a.asymmetry[i];
      out += fmt::format("  {:<20} {:>8} {:>13} {:>13} {:>14}  {}\n", Fit(r.role, 20),
                         SizeClassLabel(r.size_class), Commas(r.allocs), Commas(r.frees),
                         SignedCommas(r.net), AsymmetryEffect(r.net));
      if (!r.top_site.empty()) {
        out += Fit(fmt::format("      {} {}", r.net > 0 ? "allocated at" : "freed at",
                               r.top_site),
                   kWidth) +
               "\n";
      }
    }
    out +=
        "  drains: allocates more than it frees, so its thread cache refills from the central\n"
        "  free list; overflows: frees more than it allocates, so it releases to the central list.\n";
  }

  out += RenderCentralText(a.central, options.by, kWidth);  // empty without central records
  LoneText(out, "Live at exit", a.live, c.live_at_exit, true);
  LoneText(out, "Unknown frees", a.unknown_frees, c.unknown_frees, false);
  LoneText(out, "Double frees", a.double_frees, c.double_frees, false);
  // Warnings go to stderr (the command prints them), not into the text.
  return out;
}

namespace {

std::string LoneJson(const std::vector<LoneSite>& sites) {
  std::string out = "[";
  for (size_t i = 0; i < sites.size(); ++i) {
    const LoneSite& s = sites[i];
    out += fmt::format("{}\n    {{\"role\": {}, \"count\": {}, \"bytes\": {}, \"site\": {}}}",
                       i ? "," : "", JsonString(s.role), s.count, s.bytes, SiteJson(s.site));
  }
  return out + (sites.empty() ? "]" : "\n  ]");
}

}  // namespace

std::string RenderReportJson(const Analysis& a, const ReportOptions& options) {
  const PairingCounts& c = a.counts;
  std::string out = "{\n";
  out += fmt::format("  \"schema_version\": {},\n  \"command\": \"report\",\n",
                     kReportSchemaVersion);
  out += fmt::format("  \"options\": {{\"by\": \"{}\", \"site_depth\": {}, \"top\": {}}},\n",
                     options.by == GroupBy::kRole ? "role" : "thread", options.site_depth,
                     options.top);
  out += "  \"traces\": [";
  for (size_t i = 0; i < a.traces.size(); ++i) {
    const TraceInfo& t = a.traces[i];
    out += fmt::format(
        "{}\n    {{\"path\": {}, \"exe\": {}, \"pid\": {}, \"ppid\": {}, \"chunks\": {}, "
        "\"events\": {}, \"threads\": {}, \"truncated\": {}}}",
        i ? "," : "", JsonString(t.path), JsonString(t.exe), t.pid, t.ppid, t.chunks, t.events,
        t.threads, t.truncated ? "true" : "false");
  }
  out += "\n  ],\n";
  out += fmt::format(
      "  \"summary\": {{\"events\": {}, \"threads\": {}, \"allocations\": {}, \"frees\": {}, "
      "\"cross_thread_frees\": {}, \"cross_thread_share\": {:.4f}, "
      "\"cross_thread_per_1000_allocs\": {:.3f}, \"same_thread_frees\": {}, "
      "\"live_at_exit\": {}, \"live_at_exit_bytes\": {}, \"unknown_frees\": {}, "
      "\"double_frees\": {}, \"allocs_over_live\": {}, \"realloc_events\": {}, "
      "\"null_address_events\": {}}},\n",
      c.events, a.threads, c.allocations, c.frees, c.cross_thread, Share(c.cross_thread, c.frees),
      a.PerThousand(c.cross_thread), c.paired - c.cross_thread, c.live_at_exit, c.live_bytes,
      c.unknown_frees, c.double_frees, c.alloc_over_live, c.realloc_events, c.ignored_null);
  size_t shown = options.top == 0 ? a.pairs.size() : std::min(options.top, a.pairs.size());
  out += fmt::format("  \"pairs_total\": {},\n  \"pairs\": [", a.pairs.size());
  for (size_t i = 0; i < shown; ++i) {
    const CrossPair& p = a.pairs[i];
    std::string classes;
    for (auto [cls, n] : p.size_classes) {
      if (!classes.empty()) classes += ", ";
      classes += fmt::format("{{\"class\": {}, \"class_bytes\": {}, \"count\": {}}}",
                             JsonString(SizeClassLabel(cls)), SizeClassBytes(cls), n);
    }
    out += fmt::format(
        "{}\n    {{\"rank\": {}, \"key\": {}, \"alloc_role\": {}, \"free_role\": {}, "
        "\"count\": {}, \"bytes\": {}, \"share\": {:.4f}, \"per_1000_allocs\": {:.3f},\n"
        "     \"size_classes\": [{}],\n     \"alloc_site\": {},\n     \"free_site\": {}}}",
        i ? "," : "", i + 1, JsonString(p.key), JsonString(p.alloc_role), JsonString(p.free_role),
        p.count, p.bytes, Share(p.count, c.cross_thread), a.PerThousand(p.count), classes,
        SiteJson(p.alloc_site), SiteJson(p.free_site));
  }
  out += shown ? "\n  ],\n" : "],\n";
  out += "  \"asymmetry\": [";
  for (size_t i = 0; i < a.asymmetry.size(); ++i) {
    const AsymmetryRow& r = a.asymmetry[i];
    out += fmt::format(
        "{}\n    {{\"role\": {}, \"class\": {}, \"class_bytes\": {}, \"allocs\": {}, "
        "\"frees\": {}, \"net\": {}, \"effect\": \"{}\", \"top_site\": {}}}",
        i ? "," : "", JsonString(r.role), JsonString(SizeClassLabel(r.size_class)),
        SizeClassBytes(r.size_class), r.allocs, r.frees, r.net, AsymmetryEffect(r.net),
        JsonString(r.top_site));
  }
  out += a.asymmetry.empty() ? "],\n" : "\n  ],\n";
  out += "  \"live_at_exit_sites\": " + LoneJson(a.live) + ",\n";
  out += "  \"unknown_free_sites\": " + LoneJson(a.unknown_frees) + ",\n";
  out += "  \"double_free_sites\": " + LoneJson(a.double_frees) + ",\n";
  // Only for traces with central records, so older outputs stay the same.
  if (a.central.present()) out += "  \"central\": " + RenderCentralJson(a.central) + ",\n";
  out += "  \"warnings\": [";
  for (size_t i = 0; i < a.warnings.size(); ++i) {
    out += (i ? ", " : "") + JsonString(a.warnings[i]);
  }
  out += "]\n}\n";
  return out;
}

}  // namespace crossfree::analyzer
