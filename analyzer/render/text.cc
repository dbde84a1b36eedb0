// SPDX-License-Identifier: Apache-2.0
// The text renderer: the report, diff, gate and central-transfer models as
// the text the commands print, fitted to 100 columns (the simulation's text
// is simulate_text.cc).
#include "format/names.h"
#include "analyzer/render/text.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "analyzer/pairing/size_class.h"
#include "analyzer/render/gate_formats.h"
#include "analyzer/render/output.h"

namespace crossfree::analyzer::render {
namespace {

// The line width of the text being rendered (0: unlimited). Set for the
// duration of one public Render*Text call by WidthScope, so the helpers
// below need no extra parameter; renderers are stateless otherwise, and the
// variable is per thread.
thread_local size_t tl_width = 100;

class WidthScope {
 public:
  explicit WidthScope(size_t width) : saved_(tl_width) { tl_width = width; }
  ~WidthScope() { tl_width = saved_; }

 private:
  size_t saved_;
};

size_t Width() { return tl_width; }
// The room left after `used` columns (0, unlimited, stays 0).
size_t Room(size_t used) { return tl_width == 0 ? 0 : tl_width > used + 8 ? tl_width - used : 8; }

std::string SizeClassesText(const CrossPair& p, const PairFigures& f) {
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
    out += fmt::format("{} {}", SizeClassLabel(c), PercentText(f.size_class_shares.at(c), 1));
    ++shown;
  }
  return out;
}

std::string SecondsText(uint64_t ns) { return fmt::format("{:.3f} s", Seconds(ns)); }

// "1.000 s .. 3.000 s, 5.000 s .. the end": the recording windows of a trace.
std::string WindowsText(const TraceInfo& t) {
  std::string out;
  bool open = !t.starts_closed;
  uint64_t from = 0;
  for (const WindowEdge& e : t.windows) {
    if (e.open && !open) {
      from = e.timestamp_ns;
      open = true;
    } else if (!e.open && open) {
      out += (out.empty() ? "" : ", ") + SecondsText(from) + " .. " + SecondsText(e.timestamp_ns);
      open = false;
    }
  }
  if (open) out += (out.empty() ? "" : ", ") + SecondsText(from) + " .. the end";
  return out.empty() ? "none (nothing was recorded)" : out;
}

// What the traces' ends leave out, for the live and allocs-over-live
// rows: "" when every trace ended cleanly or was taken whole after its
// process died; else why blocks live at exit may have been freed.
std::string EndCaveat(const Analysis& a) {
  for (const TraceInfo& t : a.traces) {
    if (t.LastBuffersLost()) return "no clean end, frees lost";
  }
  for (const TraceInfo& t : a.traces) {
    if (t.RunningAtEnd()) return "a process still ran at record's end";
  }
  return "";
}

// The live-at-exit row's note: its bytes, and why they are not leaks when
// a trace's end leaves frees out (EndCaveat).
std::string LiveNote(const Analysis& a, const std::string& bytes) {
  const std::string caveat = EndCaveat(a);
  return caveat.empty() ? bytes : bytes + ", not leaks: " + caveat;
}

// The "freed after fork" row's note: a fork child's frees of blocks its
// parent allocated before the fork (fork_frees.h).
std::string ForkedNote(const Analysis& a) {
  const ForkFrees& f = a.fork_frees;
  if (f.attributed == 0) return "allocated by the parent before fork";
  return fmt::format("allocated by the parent before fork; {} matched to the parent's "
                     "allocations (below)",
                     Commas(f.attributed));
}

// Frees in fork children attributed to their parent's allocations.
// As many as the cross-thread pairs: --top (0: all).
void ForkPairsText(std::string& out, const Analysis& a, const ReportOptions& options) {
  const ForkFrees& f = a.fork_frees;
  if (f.pairs.empty()) return;
  const size_t shown = options.top == 0 ? f.pairs.size() : std::min(options.top, f.pairs.size());
  out += fmt::format("\nFreed in a fork child, allocated by its parent before the fork "
                     "({} of {})\n",
                     shown, f.pairs.size());
  for (size_t i = 0; i < shown; ++i) {
    const ForkPair& p = f.pairs[i];
    out += fmt::format("  {:>9}  {} (pid {}) -> {} (pid {})\n", Commas(p.count), p.alloc_role,
                       p.parent_pid, p.free_role, p.child_pid);
    out += Fit(fmt::format("      allocated at  {}", p.alloc_site.key), Width()) + "\n";
    out += Fit(fmt::format("      freed at      {}", p.free_site.key), Width()) + "\n";
  }
}

std::string TraceLine(const TraceInfo& t) {
  std::string notes;
  if (t.ppid != 0 && t.ppid != 1) notes += fmt::format("parent {}", t.ppid);
  if (t.truncated) notes += notes.empty() ? "truncated" : ", truncated";
  if (!t.clean_end()) {
    notes += notes.empty() ? "" : ", ";
    notes += t.LastBuffersLost() ? "no clean end"
             : t.RunningAtEnd()  ? "running at record's end"
                                 : "killed, its events all taken";
  }
  // Short here (the line is fitted to the width); the warning above the
  // report has the whole phrase.
  if (t.losses.any()) {
    notes += fmt::format("{}incomplete: {} events dropped, {} chunks damaged",
                         notes.empty() ? "" : ", ", t.losses.events_dropped,
                         t.losses.chunks_damaged);
  }
  if (t.sample_period > 1) notes += (notes.empty() ? "" : ", ") + SampledLabel(t.sample_period);
  std::string line = fmt::format("  pid {:<7} {}  {}", t.pid, t.path, t.exe);
  if (!notes.empty()) line += fmt::format("  ({})", notes);
  line = Fit(line, Width()) + "\n";
  if (t.recording_windows) line += Fit("    recording windows: " + WindowsText(t), Width()) + "\n";
  return line;
}

void LoneText(std::string& out, const Analysis& a, const char* title,
              const std::vector<LoneSite>& sites, uint64_t total, bool with_bytes) {
  if (total == 0) return;
  out += fmt::format("\n{} (top {} site{})\n", title, sites.size(), sites.size() == 1 ? "" : "s");
  for (const LoneSite& s : sites) {
    // Frees rarely know their size (only sized delete does): bytes only for live ones.
    const LoneFigures f = a.Figures(s);
    std::string head;
    if (a.sampled()) {
      head = fmt::format("  {:>11} {:<22} {:>10}  {:<14} ", EstimateText(f.count),
                         "[" + IntervalText(f.count) + "]",
                         with_bytes ? "~" + HumanBytes(f.total_bytes) : "", Fit(s.role, 14));
    } else {
      head = fmt::format("  {:>11}  {:>10}  {:<14} ", Commas(f.objects),
                         with_bytes ? HumanBytes(f.total_bytes) : "", Fit(s.role, 14));
    }
    out += head + Fit(s.site.key, Room(head.size())) + "\n";
  }
}

// The summary of a sampled run: exact totals, then every count of sampled
// objects as an estimate with its interval.
void SampledSummaryText(std::string& out, const Analysis& a) {
  const PairingCounts& c = a.counts;
  out += fmt::format("\nSummary ({}: ~ marks an estimate, {} x the sampled count, with its 95% "
                     "interval)\n",
                     SampledLabel(a.sample_period), a.sample_period);
  auto exact = [&out](std::string_view label, uint64_t n, std::string note) {
    out += fmt::format("  {:<22}{:>15}{}{}\n", label, Commas(n), note.empty() ? "" : "   ", note);
  };
  auto est = [&out](std::string_view label, const Estimate& e, std::string note) {
    out += fmt::format("  {:<22}{:>15}   [{}]{}{}\n", label, EstimateText(e), IntervalText(e),
                       note.empty() ? "" : "  ", note);
  };
  const RunFigures t = a.Totals();
  exact("allocations", a.Allocations(),
        c.counts_records ? fmt::format("exact, sampled or not; {} sampled", Commas(c.allocations))
                         : "estimated: no counts records");
  exact("frees", a.Frees(), c.counts_records ? "exact" : "estimated: no counts records");
  est("  cross-thread", t.cross_thread.estimate,
      fmt::format("{} of frees, {:.1f} per 1000 allocations",
                  PercentText(t.cross_thread_share, 1), t.cross_thread_per_thousand));
  est("  same-thread", t.same_thread.estimate, "");
  est("live at exit", t.live_at_exit.estimate,
      c.live_at_exit ? LiveNote(a, "~" + HumanBytes(t.live_bytes.total)) : "");
  est("unknown frees", t.unknown_frees_bounded,
      c.unknown_frees ? "never seen allocated (before tracing, or lost)" : "");
  est("double frees", t.double_frees_bounded, "");
  if (c.forked_frees) est("freed after fork", t.forked_frees.estimate, ForkedNote(a));
  if (c.alloc_over_live) {
    est("allocs over live", t.alloc_over_live.estimate, "address allocated again without a free");
  }
  exact("samples dropped", c.samples_dropped,
        c.samples_dropped
            ? fmt::format("{} of the sampler's choices, not followed: estimates are low by "
                          "about as much",
                          PercentText(t.samples_dropped_share, 2))
            : "");
}

// The window rows of the summary (--from/--to, recording windows).
void WindowRows(std::string& out, const Analysis& a) {
  const PairingCounts& c = a.counts;
  std::string where;
  if (a.windowed) {
    where = fmt::format("freed in the window {:.3f} s .. {} of each trace",
                        Seconds(a.window_from_ns),
                        a.window_to_ns == ~uint64_t{0}
                            ? std::string("the end")
                            : fmt::format("{:.3f} s", Seconds(a.window_to_ns)));
  } else {
    where = "freed in a recording window";
  }
  std::string before_note = where + ", allocated before it";
  std::string end_note = c.live_at_window_end ? "still live when the window ended: not leaks" : "";
  if (a.sampled()) {
    auto est = [&out](std::string_view label, const Estimate& e, std::string note) {
      out += fmt::format("  {:<22}{:>15}   [{}]{}{}\n", label, EstimateText(e), IntervalText(e),
                         note.empty() ? "" : "  ", note);
    };
    const RunFigures t = a.Totals();
    est("before the window", t.before_window.estimate, before_note);
    est("live at window end", t.live_at_window_end.estimate, end_note);
    return;
  }
  out += fmt::format("  {:<22}{:>15}   {}\n", "before the window", Commas(c.before_window),
                     before_note);
  out += fmt::format("  {:<22}{:>15}{}{}\n", "live at window end", Commas(c.live_at_window_end),
                     end_note.empty() ? "" : "   ",
                     c.live_at_window_end
                         ? HumanBytes(c.live_window_end_bytes) + "   " + end_note
                         : "");
}

std::string RunNames(const Analysis& a) {
  std::string out;
  for (const TraceInfo& t : a.traces) out += (out.empty() ? "" : " ") + t.path;
  return out;
}

// One frame per line, so long C++ names stay readable in 100 columns.
std::string SiteLines(const Site& site, const std::string& label) {
  if (site.frames.empty()) return Fit(label + site.key, Width()) + "\n";
  std::string out;
  std::string pad(label.size() - 3, ' ');
  for (size_t i = 0; i < site.frames.size(); ++i) {
    out += Fit((i == 0 ? label : pad + "<- ") + FrameName(site.frames[i], false), Width()) + "\n";
  }
  return out;
}

}  // namespace

namespace {

// A pair's lines of report --allocator / --lifetimes (pair_costs.h).
std::string PairCostText(const PairCosts& costs, const std::string& key, size_t width) {
  const PairCostFigures* f = costs.Find(key);
  if (!f) return "";
  std::string out;
  if (costs.with_costs()) {
    out += Fit(fmt::format("    cost under {}: {} locks + atomics ({} refills, {} flushes, {} "
                           "locks, {} atomics, {} remote frees)",
                           costs.allocator, Commas(f->sync), Commas(f->refills),
                           Commas(f->flushes), Commas(f->locks), Commas(f->atomics),
                           Commas(f->remote_frees)),
               width) +
           "\n";
  }
  const LifetimeSummary& l = f->lifetime;
  std::string cpu =
      f->cpu_known()
          ? fmt::format("same CPU: {} of {} frees", Commas(f->cpu.same), Commas(f->cpu.known))
          : std::string("same CPU: n/a (the trace records no CPU)");
  out += Fit(fmt::format("    lifetime: min {}, median {}, p99 {}, max {}; {}",
                         DurationText(l.min_ns), DurationText(l.median_ns), DurationText(l.p99_ns),
                         DurationText(l.max_ns), cpu),
             width) +
         "\n";
  return out;
}

}  // namespace

namespace {

// The summary of an unsampled run: the counts themselves.
void SummaryText(std::string& out, const Analysis& a) {
  const PairingCounts& c = a.counts;
  out += "\nSummary\n";
  auto row = [&out](std::string_view label, uint64_t n, std::string note) {
    out += fmt::format("  {:<22}{:>15}{}{}\n", label, Commas(n), note.empty() ? "" : "   ", note);
  };
  row("allocations", c.allocations, "");
  row("frees", c.frees, "");
  const RunFigures t = a.Totals();
  row("  cross-thread", c.cross_thread,
      fmt::format("{} of frees, {:.1f} per 1000 allocations",
                  PercentText(t.cross_thread_share, 1), t.cross_thread_per_thousand));
  row("  same-thread", t.same_thread.total, "");
  row("live at exit", c.live_at_exit,
      c.live_at_exit ? LiveNote(a, HumanBytes(c.live_bytes)) : "");
  row("unknown frees", c.unknown_frees,
      c.unknown_frees ? "never seen allocated (before tracing, or lost)" : "");
  row("double frees", c.double_frees, "");
  if (c.forked_frees) row("freed after fork", c.forked_frees, ForkedNote(a));
  if (a.windowed || a.recording_windows) WindowRows(out, a);
  if (c.ignored_null) {
    row("null-address events", c.ignored_null, "free(NULL) or failed allocations, ignored");
  }
  if (c.alloc_over_live) {
    row("allocs over live", c.alloc_over_live,
        EndCaveat(a).empty() ? "address allocated again without a free"
                             : "address allocated again without a free (lost with the last "
                               "buffers?)");
  }
}

// The i-th cross-thread pair: counts, size classes, lifecycle, costs, sites.
void PairText(std::string& out, const Analysis& a, size_t i) {
  const CrossPair& p = a.pairs[i];
  const PairFigures f = a.Figures(p);
  out += "\n";
  out += Fit(fmt::format("#{:<3}{} -> {}", i + 1, p.alloc_role, p.free_role), Width()) + "\n";
  if (a.sampled()) {
    const Estimate &n = f.count, &bytes = f.bytes, &rate = f.rate;
    out += fmt::format("    {} frees ({} of cross-thread, ~{:.1f} per 1000 allocs), ~{}; "
                       "{} sampled\n",
                       EstimateText(n), PercentText(f.share, 1), rate.value,
                       HumanBytes(EstimateValue(bytes)), Commas(p.count.sampled));
    out += fmt::format("    95%: {} frees, {} per 1000 allocs, {}\n", IntervalText(n),
                       RateIntervalText(rate), BytesIntervalText(bytes));
  } else {
    out += fmt::format("    {} frees ({} of cross-thread, {:.1f} per 1000 allocs), {}\n",
                       Commas(f.frees), PercentText(f.share, 1), f.per_thousand,
                       HumanBytes(f.total_bytes));
  }
  out += Fit("    size classes: " + SizeClassesText(p, f), Width()) + "\n";
  std::string rate = a.per_operation()
                         ? fmt::format("; {:.4g} per-call objects per operation",
                                       f.steady_per_unit.value)
                         : "";
  out += Fit(fmt::format("    lifecycle: {} ({}){}", LifecycleName(p.lifecycle()),
                         p.LifecycleEvidence(a.sampled()), rate),
             Width()) +
         "\n";
  if (a.pair_costs) out += PairCostText(*a.pair_costs, p.key, Width());
  out += SiteText(p.alloc_site, "allocated at  ", 4, Width());
  out += SiteText(p.free_site, "freed at      ", 4, Width());
}

// The cache asymmetry table (nothing when every role frees what it allocates).
void AsymmetryText(std::string& out, const Analysis& a, const ReportOptions& options) {
  if (a.asymmetry.empty()) return;
  size_t rows = options.asymmetry_rows == 0 ? a.asymmetry.size()
                                            : std::min(options.asymmetry_rows, a.asymmetry.size());
  out += fmt::format(
      "\nCache asymmetry: allocations minus frees per {} and size class ({} of {}){}\n",
      options.by == GroupBy::kRole ? "role" : "thread", rows, a.asymmetry.size(),
      a.sampled() ? ", estimated" : "");
  if (a.sampled()) {
    out += fmt::format("  {:<20} {:>8} {:>13} {:>13} {:>14} {:>26}  {}\n", "role", "class",
                       "allocs", "frees", "net", "net 95%", "effect");
  } else {
    out += fmt::format("  {:<20} {:>8} {:>13} {:>13} {:>14}  {}\n", "role", "class", "allocs",
                       "frees", "net", "effect");
  }
  for (size_t i = 0; i < rows; ++i) {
    const AsymmetryRow& r = a.asymmetry[i];
    const AsymmetryFigures f = a.Figures(r);
    if (a.sampled()) {
      const Estimate& net = f.net;
      bool clear = net.low > 0 || net.high < 0;
      auto signed_text = [](double v) { return SignedCommas(RoundSigned(v)); };
      out += fmt::format("  {:<20} {:>8} {:>13} {:>13} {:>14} {:>26}  {}\n", Fit(r.role, 20),
                         SizeClassLabel(r.size_class), EstimateText(f.allocs),
                         EstimateText(f.frees), "~" + signed_text(net.value),
                         signed_text(net.low) + " .. " + signed_text(net.high),
                         clear ? AsymmetryEffect(r.net) : "unclear");
    } else {
      out += fmt::format("  {:<20} {:>8} {:>13} {:>13} {:>14}  {}\n", Fit(r.role, 20),
                         SizeClassLabel(r.size_class), Commas(f.total_allocs),
                         Commas(f.total_frees), SignedCommas(r.net), AsymmetryEffect(r.net));
    }
    if (!r.top_site.empty()) {
      out += Fit(fmt::format("      {} {}", r.net > 0 ? "allocated at" : "freed at", r.top_site),
                 Width()) +
             "\n";
    }
  }
  out +=
      "  drains: allocates more than it frees, so its thread cache refills from the central\n"
      "  free list; overflows: frees more than it allocates, so it releases to the central list.\n";
  if (a.sampled()) out += "  unclear: the net's 95% interval includes 0.\n";
}

}  // namespace

std::string RenderReportText(const Analysis& a, const ReportOptions& options) {
  WidthScope scope(options.width);
  const PairingCounts& c = a.counts;
  std::string out;
  out += fmt::format("crossfree report: {} trace{}, {} threads, {} {}events{}\n", a.traces.size(),
                     a.traces.size() == 1 ? "" : "s", a.threads, Commas(c.events),
                     a.sampled() ? "sampled " : "",
                     a.sampled() ? " (estimated, " + SampledLabel(a.sample_period) + ")" : "");
  for (const TraceInfo& t : a.traces) out += TraceLine(t);
  if (a.sampled()) {
    SampledSummaryText(out, a);
    if (a.windowed || a.recording_windows) WindowRows(out, a);
  } else {
    SummaryText(out, a);
  }

  size_t shown = options.top == 0 ? a.pairs.size() : std::min(options.top, a.pairs.size());
  if (a.pair_costs && a.pair_costs->with_costs()) {
    const PairCosts& costs = *a.pair_costs;
    out += Fit(fmt::format("\nCost per pair under {} ({}: {}); settings: {}", costs.allocator,
                           costs.validation_label, costs.validation, costs.settings),
               0) +
           "\n";
  }
  if (a.pairs.empty()) {
    out += "\nNo cross-thread pairs.\n";
  } else {
    out += fmt::format("\nTop cross-thread pairs ({} of {}, by frees; allocating -> freeing {})\n",
                       shown, a.pairs.size(), options.by == GroupBy::kRole ? "role" : "thread");
  }
  for (size_t i = 0; i < shown; ++i) PairText(out, a, i);
  AsymmetryText(out, a, options);

  out += RenderCentralText(a.central, options.by, Width());  // empty without central records
  LoneText(out, a, "Live at exit", a.live, c.live_at_exit, true);
  LoneText(out, a, "Live at window end", a.live_at_window_end, c.live_at_window_end, true);
  LoneText(out, a, "Unknown frees", a.unknown_frees, c.unknown_frees, false);
  LoneText(out, a, "Double frees", a.double_frees, c.double_frees, false);
  ForkPairsText(out, a, options);
  // Warnings go to stderr (the command prints them), not into the text.
  return out;
}

std::string RenderCentralText(const CentralSummary& c, GroupBy by, size_t width) {
  if (!c.present()) return "";
  std::string out = fmt::format(
      "\nCentral free-list transfers (tcmalloc): {} fetches, {} releases per {}\n",
      Commas(c.total.fetch), Commas(c.total.release), by == GroupBy::kRole ? "role" : "thread");
  auto row = [&](const std::string& role, const CentralCounts& n) {
    out += fmt::format("  {:<20} {:>11} {:>11} {:>12} {:>12} {:>11} {:>11}\n", Fit(role, 20),
                       Commas(n.fetch), Commas(n.release), Commas(n.remove_range),
                       Commas(n.insert_range), Commas(n.fetched_objects),
                       Commas(n.released_objects));
  };
  out += fmt::format("  {:<20} {:>11} {:>11} {:>12} {:>12} {:>11} {:>11}\n",
                     by == GroupBy::kRole ? "role" : "thread", "fetch", "release",
                     "remove_range", "insert_range", "fetched", "released");
  for (const CentralRoleRow& r : c.roles) row(r.role, r.counts);
  if (c.roles.size() > 1) row("total", c.total);
  if (c.by_tracer.transfers() > 0) {
    out += fmt::format("  (not counted above: {} fetches, {} releases caused by the tracer itself)\n",
                       Commas(c.by_tracer.fetch), Commas(c.by_tracer.release));
  }
  if (!c.sites.empty()) {
    out += fmt::format("  Call sites that triggered them (top {} of {})\n", c.sites.size(),
                       c.sites_total);
    for (const CentralSite& s : c.sites) {
      std::string head = fmt::format("  {:>11}  {:<7} {:<14} ", Commas(s.calls),
                                     format::CentralOpName(s.op), Fit(s.role, 14));
      out += head + Fit(s.site.key, width > head.size() ? width - head.size() : 10) + "\n";
    }
  }
  out +=
      "  fetch: the thread cache was empty and refilled from the central list (RemoveRange);\n"
      "  release: its list grew too long and went back (InsertRange).\n";
  return out;
}

std::string RenderCentralDiffText(const CentralDiff& d) {
  if (!d.present) return "";
  std::string out =
      "\nCentral free-list transfers (tcmalloc): calls before -> after (per 1000 allocations)\n";
  out += fmt::format("  {:<20} {:>30} {:>30}\n", "role", "fetch", "release");
  auto line = [&](const CentralDiffRow& r) {
    out += fmt::format("  {:<20} {:>30} {:>30}\n", Fit(r.role, 20),
                       fmt::format("{} -> {} ({:.1f} -> {:.1f})", Commas(r.before.fetch),
                                   Commas(r.after.fetch), r.before_fetch_rate, r.after_fetch_rate),
                       fmt::format("{} -> {} ({:.1f} -> {:.1f})", Commas(r.before.release),
                                   Commas(r.after.release), r.before_release_rate,
                                   r.after_release_rate));
  };
  for (const CentralDiffRow& r : d.roles) line(r);
  line(d.total);
  return out;
}

namespace {

// The diff of runs one of which (or both) is sampled: estimates with their
// 95% intervals, and the significance rule of diff.h.
}  // namespace

std::string RenderDiffText(const Analysis& before, const Analysis& after, const DiffResult& d,
                           size_t width) {
  WidthScope scope(width);
  std::string out;
  auto run_line = [](const char* head, const Analysis& a) {
    return Fit(head + RunNames(a) + (a.sampled() ? " (" + SampledLabel(a.sample_period) + ")" : ""),
               Width()) +
           "\n";
  };
  out += run_line("crossfree diff: before ", before);
  out += run_line("                after  ", after);
  if (d.sampled) {
    out += "  sampled: ~ marks an estimate, [95% interval]; a change counts only when the two "
           "intervals do not overlap\n";
  }
  // Counts and rates, exact or estimated with their intervals.
  auto cell = [](const Analysis& a, const TotalFigure& f) {
    return a.sampled() ? EstimateText(f.estimate) + " [" + IntervalText(f.estimate) + "]"
                       : Commas(f.total);
  };
  // A pair's frees in one run (an absent pair: none sampled).
  auto pair_cell = [&cell](const Analysis& a, const PairFigures& f) {
    return cell(a, TotalFigure{f.count, f.frees});
  };
  const int decimals = d.per_operation ? 3 : 1;
  auto rate_cell = [decimals](const Analysis& a, const Estimate& e) {
    return a.sampled() ? fmt::format("~{:.{}f} [{}]", e.value, decimals, RateIntervalText(e, decimals))
                       : fmt::format("{:.{}f}", e.value, decimals);
  };
  const int w = d.sampled ? 34 : 15;
  auto row = [&out, w](std::string_view label, const std::string& b, const std::string& a) {
    out += fmt::format("  {:<30}{:>{}}{:>{}}\n", label, b, w, a, w);
  };
  const RunFigures bt = before.Totals(), at = after.Totals();
  const char* unit = d.per_operation ? "per operation" : "per 1000 allocations";
  out += "\n";
  row("", "before", "after");
  row("allocations", Commas(before.Allocations()), Commas(after.Allocations()));
  if (d.per_operation) row("operations", Commas(before.operations), Commas(after.operations));
  row("cross-thread frees", cell(before, bt.cross_thread_unbounded),
      cell(after, at.cross_thread_unbounded));
  row("  per-call (steady state)", cell(before, bt.steady), cell(after, at.steady));
  row(fmt::format("    {}", unit),
      rate_cell(before, d.per_operation ? bt.steady_per_unit : bt.steady_rate),
      rate_cell(after, d.per_operation ? at.steady_per_unit : at.steady_rate));
  row("  bounded (one-off)", cell(before, bt.bounded), cell(after, at.bounded));
  row("cross-thread pairs", fmt::format("{}", before.pairs.size()),
      fmt::format("{}", after.pairs.size()));
  out += RenderCentralDiffText(d.central);

  static const DiffStatus kOrder[] = {DiffStatus::kGone,   DiffStatus::kNew,
                                      DiffStatus::kGrown,  DiffStatus::kShrunk,
                                      DiffStatus::kUnchanged, DiffStatus::kBounded};
  static const char* kTitles[] = {
      "Gone: per-call pairs AFTER no longer has",
      "New: per-call pairs only AFTER has",
      "Grown: per-call rate up by more than {}, beyond noise",
      "Shrunk: per-call rate down by more than {}, beyond noise",
      "Unchanged: per-call rate within {}, or within noise",
      "Bounded: one-off pairs (start-up, shutdown, once per thread), counts only: their number "
      "does not grow with the work"};
  out += fmt::format("\nPer-call pairs are compared by their steady-state objects {}.\n", unit);
  const std::string unit_head = d.per_operation ? "/op" : "/1k";
  for (int s = 0; s < 6; ++s) {
    size_t n = std::count_if(d.rows.begin(), d.rows.end(),
                             [&](const DiffRow& r) { return r.status == kOrder[s]; });
    out += "\n" + fmt::format(fmt::runtime(kTitles[s]), PercentText(d.min_change, 0)) +
           fmt::format(" ({})\n", n);
    if (n == 0) continue;
    const bool bounded = kOrder[s] == DiffStatus::kBounded;
    const int rw = d.sampled ? 30 : 10;
    if (bounded) {
      out += fmt::format("  {:>{}} {:>{}}  {}\n", "before", rw, "after", rw,
                         "alloc role -> free role");
    } else {
      out += fmt::format("  {:>{}} {:>{}} {:>12} {:>12}  {}\n", "before" + unit_head, rw,
                         "after" + unit_head, rw, "before", "after", "alloc role -> free role");
    }
    for (const DiffRow& r : d.rows) {
      if (r.status != kOrder[s]) continue;
      const CrossPair& p = r.pair();
      std::string head =
          bounded ? fmt::format("  {:>{}} {:>{}}  ", pair_cell(before, r.before_figures), rw,
                                pair_cell(after, r.after_figures), rw)
                  : fmt::format("  {:>{}} {:>{}} {:>12} {:>12}  ", rate_cell(before, r.before_estimate),
                                rw, rate_cell(after, r.after_estimate), rw,
                                Commas(r.before_figures.steady),
                                Commas(r.after_figures.steady));
      out += head + Fit(p.alloc_role + " -> " + p.free_role, Room(head.size())) + "\n";
      std::string note;
      if (!bounded && (r.before_bounded.sampled || r.after_bounded.sampled)) {
        note = fmt::format("one-off objects too: {} -> {}", Commas(r.before_figures.bounded),
                           Commas(r.after_figures.bounded));
      }
      if (d.sampled) {
        note += (note.empty() ? "" : "; ") +
                fmt::format("sampled frees {} -> {}",
                            Commas(r.before ? r.before->count.sampled : 0),
                            Commas(r.after ? r.after->count.sampled : 0));
        if ((r.status == DiffStatus::kGone || r.status == DiffStatus::kNew) && !r.significant) {
          note += "; not significant: the intervals overlap";
        }
      }
      if (!note.empty()) out += Fit("        " + note, Width()) + "\n";
      out += SiteLines(p.alloc_site, "        alloc: ");
      out += SiteLines(p.free_site, "        free:  ");
    }
  }
  return out;
}

std::string RenderGateText(const Analysis& analysis, const GateResult& r,
                           const std::string& accept_command, size_t width) {
  WidthScope scope(width);
  std::string out;
  const char* unit = r.per_operation ? "per operation" : "per 1000 allocations";
  std::string units = r.per_operation ? fmt::format("{} operations", Commas(analysis.operations))
                                      : fmt::format("{} allocations", Commas(analysis.Allocations()));
  if (r.passed()) {
    out += fmt::format(
        "crossfree gate: PASSED: {} cross-thread pairs in {} allocation groups, all within the "
        "baseline or run-to-run noise ({} new pairs within noise), {} suppressed; {}\n",
        analysis.pairs.size(), r.groups, r.new_within_noise.size(), r.suppressed.size(), units);
  } else {
    size_t counts[3] = {};
    for (const GateOffense& o : r.offenses) ++counts[static_cast<int>(o.verdict)];
    out += fmt::format(
        "crossfree gate: FAILED: {} allocation group{} over the baseline ({} new, {} grown, {} "
        "bounded but growing with the work); {}\n",
        r.offenses.size(), r.offenses.size() == 1 ? "" : "s", counts[0], counts[1], counts[2],
        units);
  }
  out += fmt::format(
      "  rule: a group fails when its per-call objects {} rise by at least {:g} and beyond {:g}x "
      "the baseline, and {}\n",
      unit, r.min_effect, r.max_growth,
      r.sampled ? "the rate's 95% interval is wholly above that limit"
                : fmt::format("a count that high is not run-to-run noise (p < {:g})",
                              kSignificance));
  if (r.sampled) {
    out += fmt::format("  the trace is {}: rates are estimates with 95% intervals\n",
                       SampledLabel(analysis.sample_period));
  }
  out += GatePromiseText(r);
  for (const GateOffense& o : r.offenses) {
    const GateGroup& g = o.group;
    const bool bounded = o.verdict == GateVerdict::kBoundedGrowing;
    const Estimate& rate = bounded ? g.bounded_rate : g.rate;
    out += "\n";
    out += Fit(fmt::format("{:<5} allocated at {}", GateVerdictName(o.verdict), g.key), Width()) +
           "\n";
    std::string value = r.sampled ? fmt::format("~{:.4g} [{:.4g}..{:.4g}]", rate.value, rate.low,
                                                rate.high)
                                  : fmt::format("{:.4g}", rate.value);
    std::string baseline =
        !g.in_baseline ? std::string("not in the baseline")
        : bounded      ? fmt::format("baseline {:.4g}", g.baseline_bounded_rate)
        : g.timing_dependent
            ? fmt::format("baseline {:.4g} of the site's {:.4g} (timing-dependent)", g.baseline_rate,
                          g.baseline_site_rate)
            : fmt::format("baseline {:.4g}", g.baseline_rate);
    out += fmt::format("    {} {} objects {} ({}), limit {:.4g}; {}\n", value,
                       bounded ? "one-off" : "per-call", unit,
                       Commas(bounded ? g.bounded_objects : g.steady_objects), o.limit, baseline);
    if (o.by_share) {
      out += fmt::format(
          "    {} of the site's objects stay on their thread, below {} ({})\n",
          PercentText(o.staying_share, 1), PercentText(o.staying_limit, 1),
          render::StayingBoundText(r, g));
    }
    if (!r.sampled) out += fmt::format("    P(a count this high | the baseline's rate) = {:.2g}\n", o.p_value);
    if (g.alloc_site) out += SiteText(*g.alloc_site, "allocated at  ", 4, Width());
    for (const CrossPair* p : g.pairs) {
      out += Fit(fmt::format("    {} -> {}: {} objects, {} ({})", p->alloc_role, p->free_role,
                             Commas(analysis.Figures(*p).frees), LifecycleName(p->lifecycle()),
                             p->LifecycleEvidence(analysis.sampled())),
                 Width()) +
             "\n";
      out += SiteText(p->free_site, "  freed at    ", 4, Width());
      out += "      key: " + p->key + "\n";
    }
  }
  if (!r.new_within_noise.empty()) {
    out += fmt::format(
        "\n{} pair{} not in the baseline, within noise or bounded (not failed):\n",
        r.new_within_noise.size(), r.new_within_noise.size() == 1 ? "" : "s");
    size_t shown = std::min<size_t>(r.new_within_noise.size(), 10);
    for (size_t i = 0; i < shown; ++i) {
      const CrossPair& p = *r.new_within_noise[i];
      out += Fit(fmt::format("  {} objects, {}: {}", Commas(analysis.Figures(p).frees),
                             LifecycleName(p.lifecycle()), p.key),
                 Width()) +
             "\n";
    }
    if (shown < r.new_within_noise.size()) {
      out += fmt::format("  ... and {} more (--format json lists them all)\n",
                         r.new_within_noise.size() - shown);
    }
  }
  if (!r.gone.empty()) {
    out += fmt::format(
        "\n{} baseline pair{} not seen in this run{} (tighten the baseline with "
        "--write-baseline):\n",
        r.gone.size(), r.gone.size() == 1 ? "" : "s",
        r.sampled ? "'s sample (they may still happen, unsampled)" : "");
    for (const std::string& k : r.gone) out += "  " + k + "\n";
  }
  if (!r.suppressed.empty()) {
    out += fmt::format("\n{} suppressed pair{}:\n", r.suppressed.size(),
                       r.suppressed.size() == 1 ? "" : "s");
    for (const auto& [pair, s] : r.suppressed) {
      out += fmt::format("  {} ({} frees)\n    reason: {}\n", pair->key,
                         r.sampled ? EstimateText(analysis.Figures(*pair).count)
                                   : Commas(analysis.Figures(*pair).frees),
                         s->reason);
    }
  }
  if (!r.passed()) {
    out += "\nIf these pairs are intended, accept them into the baseline with:\n  " +
           accept_command + "\n";
  }
  return out;
}

}  // namespace crossfree::analyzer::render
