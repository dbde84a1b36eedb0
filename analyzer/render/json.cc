// SPDX-License-Identifier: Apache-2.0
// The JSON renderer: every model (report, diff, central transfers,
// simulation) as the JSON documents of docs/guide/analyzer.md, each with its
// schema_version.
#include "format/names.h"
#include "analyzer/render/json.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "analyzer/pairing/size_class.h"
#include "analyzer/render/gate_formats.h"
#include "analyzer/render/output.h"

namespace crossfree::analyzer::render {
namespace {

std::string LoneJson(const Analysis& a, const std::vector<LoneSite>& sites) {
  std::string out = "[";
  for (size_t i = 0; i < sites.size(); ++i) {
    const LoneSite& s = sites[i];
    const LoneFigures f = a.Figures(s);
    std::string estimate =
        a.sampled() ? fmt::format(", \"estimate\": {{\"count\": {}, \"bytes\": {}}}",
                                  EstimateJson(f.count), EstimateJson(f.bytes))
                    : "";
    out += fmt::format("{}\n    {{\"role\": {}, \"count\": {}, \"bytes\": {}{}, \"site\": {}}}",
                       i ? "," : "", JsonString(s.role), f.objects, f.total_bytes,
                       estimate, SiteJson(s.site));
  }
  return out + (sites.empty() ? "]" : "\n  ]");
}

// A signed estimate (an asymmetry row's net): whole numbers, the interval
// widened outward.
std::string NetJson(const Estimate& e) {
  return fmt::format("{{\"estimate\": {}, \"low\": {}, \"high\": {}}}", RoundSigned(e.value),
                     FloorSigned(e.low), CeilSigned(e.high));
}

// What a sampled run's JSON says about its sampling (report, diff, gate).
std::string SamplingJson(const Analysis& a) {
  const PairingCounts& c = a.counts;
  return fmt::format(
      "{{\"sample_period\": {}, \"estimator\": \"sampled count x sample_period\", "
      "\"interval\": \"exact Poisson (Garwood) 95%, x sample_period\", "
      "\"exact_totals\": {}, \"counts_records\": {}, \"sampled_allocations\": {}, "
      "\"sampled_frees\": {}, \"samples_dropped\": {}, \"samples_dropped_share\": {:.4f}}}",
      a.sample_period, c.counts_records ? "true" : "false", c.counts_records, c.allocations,
      c.frees, c.samples_dropped, a.Totals().samples_dropped_share);
}

// The "window" object of a report: --from/--to and recording windows.
std::string WindowJson(const Analysis& a) {
  std::string out = "{";
  if (a.windowed) {
    out += fmt::format("\"from_s\": {:.6f}, \"to_s\": {}, ", Seconds(a.window_from_ns),
                       a.window_to_ns == ~uint64_t{0}
                           ? std::string("null")
                           : fmt::format("{:.6f}", Seconds(a.window_to_ns)));
  }
  if (a.recording_windows) {
    out += "\"recording\": [";
    bool first = true;
    for (const TraceInfo& t : a.traces) {
      if (!t.recording_windows) continue;
      std::string edges;
      for (const WindowEdge& e : t.windows) {
        edges += fmt::format("{}{{\"at_s\": {:.6f}, \"open\": {}}}", edges.empty() ? "" : ", ",
                             Seconds(e.timestamp_ns), e.open ? "true" : "false");
      }
      out += fmt::format("{}{{\"path\": {}, \"starts_closed\": {}, \"edges\": [{}]}}",
                         first ? "" : ", ", JsonString(t.path), t.starts_closed ? "true" : "false",
                         edges);
      first = false;
    }
    out += "], ";
  }
  const RunFigures t = a.Totals();
  out += fmt::format("\"allocated_before_window\": {}", t.before_window.total);
  // Recording windows and --to end with objects still live: not leaks.
  if (a.recording_windows || a.window_to_ns != ~uint64_t{0}) {
    out += fmt::format(", \"live_at_window_end\": {}, \"live_at_window_end_bytes\": {}",
                       t.live_at_window_end.total, t.live_window_end_bytes);
  }
  if (a.sampled()) {
    out += fmt::format(
        ", \"estimate\": {{\"allocated_before_window\": {}, \"live_at_window_end\": {}}}",
        EstimateJson(t.before_window.estimate), EstimateJson(t.live_at_window_end.estimate));
  }
  return out + "}";
}

std::string CountsJson(const CentralCounts& n) {
  return fmt::format(
      "\"fetch\": {}, \"release\": {}, \"remove_range\": {}, \"insert_range\": {}, "
      "\"fetched_objects\": {}, \"released_objects\": {}",
      n.fetch, n.release, n.remove_range, n.insert_range, n.fetched_objects, n.released_objects);
}

std::string RunJson(const Analysis& a) {
  std::string traces;
  for (const TraceInfo& t : a.traces) traces += (traces.empty() ? "" : ", ") + JsonString(t.path);
  const RunFigures t = a.Totals();
  std::string sampled =
      a.sampled() ? fmt::format(", \"sampling\": {}, \"estimate\": {{\"cross_thread_frees\": {}, "
                                "\"cross_thread_per_1000_allocs\": {}}}",
                                SamplingJson(a), EstimateJson(t.cross_thread_unbounded.estimate),
                                EstimateJson(t.cross_thread_rate, 3))
                  : "";
  return fmt::format(
      "{{\"traces\": [{}], \"allocations\": {}, \"cross_thread_frees\": {}, "
      "\"cross_thread_per_1000_allocs\": {:.3f}, \"pairs\": {}{}}}",
      traces, a.Allocations(), t.cross_thread.total, t.cross_thread_per_thousand, a.pairs.size(),
      sampled);
}

}  // namespace

// A pair's lifecycle (CrossPair::lifecycle()) with its evidence, and its
// per-call objects per unit of the run.
std::string LifecycleJson(const Analysis& a, const CrossPair& p) {
  const PairFigures f = a.Figures(p);
  return fmt::format(
      "{{\"class\": \"{}\", \"steady\": {}, \"bounded_thread\": {}, \"bounded_edge\": {}, "
      "\"per_call_rate\": {:.6g}, \"unit\": \"{}\", \"evidence\": {}}}",
      LifecycleName(p.lifecycle()), f.steady, f.thread_bounded, f.edge_bounded,
      f.steady_per_unit.value, a.UnitName(),
      JsonString(p.LifecycleEvidence(a.sampled())));
}

namespace {

// report --allocator / --lifetimes (pair_costs.h): the pair's lines, or "".
std::string PairCostJson(const Analysis& a, const CrossPair& p) {
  if (!a.pair_costs) return "";
  const PairCostFigures* f = a.pair_costs->Find(p.key);
  if (!f) return "";
  std::string out;
  if (a.pair_costs->with_costs()) {
    out += fmt::format(
        "     \"allocator_cost\": {{\"allocator\": {}, \"sync\": {}, \"refills\": {}, "
        "\"flushes\": {}, \"locks\": {}, \"atomics\": {}, \"remote_frees\": {}}},\n",
        JsonString(a.pair_costs->allocator), f->sync, f->refills, f->flushes, f->locks,
        f->atomics, f->remote_frees);
  }
  const LifetimeSummary& l = f->lifetime;
  std::string octaves;
  for (size_t i = 0; i < l.octaves.size(); ++i) octaves += fmt::format("{}{}", i ? ", " : "", l.octaves[i]);
  out += fmt::format(
      "     \"lifetime\": {{\"count\": {}, \"min_ns\": {}, \"median_ns\": {}, \"p99_ns\": {}, "
      "\"max_ns\": {}, \"first_octave\": {}, \"octaves\": [{}]}},\n     \"same_cpu\": {},\n",
      l.count, l.min_ns, l.median_ns, l.p99_ns, l.max_ns, l.first_octave, octaves,
      f->cpu_known() ? fmt::format("{{\"same\": {}, \"other\": {}}}", f->cpu.same, f->cpu.other)
                     : std::string("null"));
  return out;
}

}  // namespace

namespace {

// The report's "summary" line: counts of sampled objects as what they
// estimate (the figures' totals: the count itself in an unsampled run);
// allocations and frees are exact.
std::string SummaryJson(const Analysis& a) {
  const PairingCounts& c = a.counts;
  std::string out;
  const RunFigures t = a.Totals();
  std::string estimates;
  if (a.sampled()) {
    estimates = fmt::format(
        ",\n    \"estimate\": {{\"cross_thread_frees\": {}, \"cross_thread_per_1000_allocs\": {}, "
        "\"same_thread_frees\": {}, \"live_at_exit\": {}, \"live_at_exit_bytes\": {}, "
        "\"unknown_frees\": {}, \"double_frees\": {}, \"allocs_over_live\": {}}}",
        EstimateJson(t.cross_thread.estimate), EstimateJson(t.cross_thread_rate, 3),
        EstimateJson(t.same_thread.estimate), EstimateJson(t.live_at_exit.estimate),
        EstimateJson(t.live_bytes.estimate), EstimateJson(t.unknown_frees.estimate),
        EstimateJson(t.double_frees.estimate), EstimateJson(t.alloc_over_live.estimate));
  }
  out += fmt::format(
      "  \"summary\": {{\"events\": {}, \"threads\": {}, \"allocations\": {}, \"frees\": {}, "
      "\"cross_thread_frees\": {}, \"cross_thread_share\": {:.4f}, "
      "\"cross_thread_per_1000_allocs\": {:.3f}, \"same_thread_frees\": {}, "
      "\"live_at_exit\": {}, \"live_at_exit_bytes\": {}, \"unknown_frees\": {}, "
      "\"double_frees\": {}, \"allocs_over_live\": {}, \"realloc_events\": {}, "
      "\"null_address_events\": {}{}}},\n",
      c.events, a.threads, a.Allocations(), a.Frees(),
      t.cross_thread_frees, t.cross_thread_share,
      t.cross_thread_per_thousand, t.same_thread.total, t.live_at_exit.total, t.live_bytes.total,
      t.unknown_frees.total, t.double_frees.total, t.alloc_over_live.total,
      c.realloc_events, c.ignored_null,
      estimates + (c.forked_frees == 0
                       ? std::string()
                       : fmt::format(", \"freed_after_fork\": {}, \"freed_after_fork_matched\": {}",
                                     t.forked_frees.total, a.fork_frees.attributed)));
  return out;
}

// The report's "pairs_total" and "pairs" (the first options.top).
std::string PairsJson(const Analysis& a, const ReportOptions& options) {
  std::string out;
  size_t shown = options.top == 0 ? a.pairs.size() : std::min(options.top, a.pairs.size());
  out += fmt::format("  \"pairs_total\": {},\n  \"pairs\": [", a.pairs.size());
  for (size_t i = 0; i < shown; ++i) {
    const CrossPair& p = a.pairs[i];
    const PairFigures f = a.Figures(p);
    std::string classes;
    for (auto [cls, n] : f.size_classes) {
      if (!classes.empty()) classes += ", ";
      classes += fmt::format("{{\"class\": {}, \"class_bytes\": {}, \"count\": {}}}",
                             JsonString(SizeClassLabel(cls)), SizeClassBytes(cls), n);
    }
    std::string estimate =
        a.sampled() ? fmt::format("\n     \"estimate\": {{\"count\": {}, \"bytes\": {}, "
                                  "\"per_1000_allocs\": {}}},",
                                  EstimateJson(f.count), EstimateJson(f.bytes),
                                  EstimateJson(f.rate, 3))
                    : "";
    out += fmt::format(
        "{}\n    {{\"rank\": {}, \"key\": {}, \"alloc_role\": {}, \"free_role\": {}, "
        "\"count\": {}, \"bytes\": {}, \"share\": {:.4f}, \"per_1000_allocs\": {:.3f},{}\n"
        "     \"lifecycle\": {},\n{}"
        "     \"size_classes\": [{}],\n     \"alloc_site\": {},\n     \"free_site\": {}}}",
        i ? "," : "", i + 1, JsonString(p.key), JsonString(p.alloc_role), JsonString(p.free_role),
        f.frees, f.total_bytes, f.share, f.per_thousand, estimate, LifecycleJson(a, p),
        PairCostJson(a, p), classes, SiteJson(p.alloc_site), SiteJson(p.free_site));
  }
  out += shown ? "\n  ],\n" : "],\n";
  return out;
}

// The report's "asymmetry" rows.
std::string AsymmetryJson(const Analysis& a) {
  std::string out;
  out += "  \"asymmetry\": [";
  for (size_t i = 0; i < a.asymmetry.size(); ++i) {
    const AsymmetryRow& r = a.asymmetry[i];
    const AsymmetryFigures f = a.Figures(r);
    if (a.sampled()) {
      const Estimate& net = f.net;
      out += fmt::format(
          "{}\n    {{\"role\": {}, \"class\": {}, \"class_bytes\": {}, \"allocs\": {}, "
          "\"frees\": {}, \"net\": {}, \"effect\": \"{}\", \"top_site\": {},\n"
          "     \"estimate\": {{\"allocs\": {}, \"frees\": {}, \"net\": {}, "
          "\"net_interval_includes_zero\": {}}}}}",
          i ? "," : "", JsonString(r.role), JsonString(SizeClassLabel(r.size_class)),
          SizeClassBytes(r.size_class), f.total_allocs, f.total_frees,
          RoundSigned(net.value), AsymmetryEffect(r.net),
          JsonString(r.top_site), EstimateJson(f.allocs), EstimateJson(f.frees),
          NetJson(net), net.low <= 0 && net.high >= 0 ? "true" : "false");
      continue;
    }
    out += fmt::format(
        "{}\n    {{\"role\": {}, \"class\": {}, \"class_bytes\": {}, \"allocs\": {}, "
        "\"frees\": {}, \"net\": {}, \"effect\": \"{}\", \"top_site\": {}}}",
        i ? "," : "", JsonString(r.role), JsonString(SizeClassLabel(r.size_class)),
        SizeClassBytes(r.size_class), f.total_allocs, f.total_frees, r.net, AsymmetryEffect(r.net),
        JsonString(r.top_site));
  }
  out += a.asymmetry.empty() ? "],\n" : "\n  ],\n";
  return out;
}

// A trace without a clean end: "clean_end": false, and how it ended
// (docs/guide/analyzer.md, JSON): "buffers_lost" (its last buffers went
// with the process), "taken_after_exit" (record took every event after the
// process died), "taken_while_running" (record ended before the process).
std::string EndJson(const TraceInfo& t) {
  const char* end = t.LastBuffersLost() ? "buffers_lost"
                    : t.RunningAtEnd()  ? "taken_while_running"
                                        : "taken_after_exit";
  return fmt::format(", \"clean_end\": false, \"end\": \"{}\"", end);
}

}  // namespace

std::string RenderReportJson(const Analysis& a, const ReportOptions& options) {
  std::string out = "{\n";
  out += fmt::format("  \"schema_version\": {},\n  \"command\": \"report\",\n",
                     kReportSchemaVersion);
  out += fmt::format("  \"options\": {{\"by\": \"{}\", \"site_depth\": {}, \"top\": {}}},\n",
                     options.by == GroupBy::kRole ? "role" : "thread", options.site_depth,
                     options.top);
  // Sampled runs only: every count below is then an estimate (the
  // "estimate" objects give the sampled count and the 95% interval).
  if (a.sampled()) out += "  \"sampling\": " + SamplingJson(a) + ",\n";
  // report --allocator: the model whose cost each pair's allocator_cost is.
  if (a.pair_costs && a.pair_costs->with_costs()) {
    out += fmt::format(
        "  \"allocator_model\": {{\"allocator\": {}, \"validated\": {}, "
        "\"validation_level\": {}, \"validation\": {}, \"settings\": {}}},\n",
        JsonString(a.pair_costs->allocator), a.pair_costs->validated,
        JsonString(a.pair_costs->validation_label),
        JsonString(a.pair_costs->validation), JsonString(a.pair_costs->settings));
  }
  out += "  \"traces\": [";
  for (size_t i = 0; i < a.traces.size(); ++i) {
    const TraceInfo& t = a.traces[i];
    out += fmt::format(
        "{}\n    {{\"path\": {}, \"exe\": {}, \"pid\": {}, \"ppid\": {}, \"chunks\": {}, "
        "\"events\": {}, \"threads\": {}, \"truncated\": {}{}{}{}}}",
        i ? "," : "", JsonString(t.path), JsonString(t.exe), t.pid, t.ppid, t.chunks, t.events,
        t.threads, t.truncated ? "true" : "false", t.clean_end() ? "" : EndJson(t),
        t.losses.any()
            ? fmt::format(", \"losses\": {{\"events_dropped\": {}, \"chunks_dropped\": {}, "
                          "\"chunks_damaged\": {}}}",
                          t.losses.events_dropped, t.losses.chunks_dropped,
                          t.losses.chunks_damaged)
            : "",
        t.sample_period > 1 ? fmt::format(", \"sample_period\": {}", t.sample_period) : "");
  }
  out += "\n  ],\n";
  out += SummaryJson(a);
  if (a.windowed || a.recording_windows) out += "  \"window\": " + WindowJson(a) + ",\n";
  if (!a.fork_frees.pairs.empty()) {
    // Frees in fork children of their parent's blocks (fork_frees.h).
    // As many as the cross-thread pairs: --top (0: all).
    const size_t count = a.fork_frees.pairs.size();
    const size_t shown = options.top == 0 ? count : std::min(options.top, count);
    out += "  \"fork_pairs\": [";
    for (size_t i = 0; i < shown; ++i) {
      const ForkPair& p = a.fork_frees.pairs[i];
      out += fmt::format(
          "{}\n    {{\"alloc_role\": {}, \"free_role\": {}, \"parent_pid\": {}, "
          "\"child_pid\": {}, \"count\": {}, \"bytes\": {}, \"alloc_site\": {}, "
          "\"free_site\": {}}}",
          i ? "," : "", JsonString(p.alloc_role), JsonString(p.free_role), p.parent_pid,
          p.child_pid, p.count, p.bytes, JsonString(p.alloc_site.key),
          JsonString(p.free_site.key));
    }
    out += "\n  ],\n";
  }
  out += PairsJson(a, options);
  out += AsymmetryJson(a);
  out += "  \"live_at_exit_sites\": " + LoneJson(a, a.live) + ",\n";
  if (a.windowed || a.recording_windows) {
    out += "  \"live_at_window_end_sites\": " + LoneJson(a, a.live_at_window_end) + ",\n";
  }
  out += "  \"unknown_free_sites\": " + LoneJson(a, a.unknown_frees) + ",\n";
  out += "  \"double_free_sites\": " + LoneJson(a, a.double_frees) + ",\n";
  // Only for traces with central records, so older outputs stay the same.
  if (a.central.present()) out += "  \"central\": " + RenderCentralJson(a.central) + ",\n";
  out += "  \"warnings\": [" + JsonStringList(a.warnings) + "]\n}\n";
  return out;
}

std::string RenderCentralJson(const CentralSummary& c) {
  std::string out = "{" + CountsJson(c.total) + ",\n    \"by_tracer\": {" +
                    CountsJson(c.by_tracer) + "},\n    \"roles\": [";
  for (size_t i = 0; i < c.roles.size(); ++i) {
    out += fmt::format("{}\n      {{\"role\": {}, {}}}", i ? "," : "", JsonString(c.roles[i].role),
                       CountsJson(c.roles[i].counts));
  }
  out += c.roles.empty() ? "],\n" : "\n    ],\n";
  out += fmt::format("    \"sites_total\": {},\n    \"sites\": [", c.sites_total);
  for (size_t i = 0; i < c.sites.size(); ++i) {
    const CentralSite& s = c.sites[i];
    out += fmt::format("{}\n      {{\"op\": \"{}\", \"role\": {}, \"calls\": {}, \"objects\": {}, "
                       "\"site\": {}}}",
                       i ? "," : "", format::CentralOpName(s.op), JsonString(s.role), s.calls, s.objects,
                       SiteJson(s.site));
  }
  out += c.sites.empty() ? "]}" : "\n    ]}";
  return out;
}

std::string RenderCentralDiffJson(const CentralDiff& d) {
  std::string out = "{\"before\": {" + CountsJson(d.total.before) + "}, \"after\": {" +
                    CountsJson(d.total.after) + "},\n    \"roles\": [";
  for (size_t i = 0; i < d.roles.size(); ++i) {
    const CentralDiffRow& r = d.roles[i];
    out += fmt::format("{}\n      {{\"role\": {}, \"before\": {{{}}}, \"after\": {{{}}}}}",
                       i ? "," : "", JsonString(r.role), CountsJson(r.before), CountsJson(r.after));
  }
  out += d.roles.empty() ? "]}" : "\n    ]}";
  return out;
}

std::string RenderDiffJson(const Analysis& before, const Analysis& after, const DiffResult& d) {
  std::string out = "{\n";
  out += fmt::format("  \"schema_version\": {},\n  \"command\": \"diff\",\n", kDiffSchemaVersion);
  out += fmt::format("  \"min_change\": {:.4f},\n", d.min_change);
  out += fmt::format("  \"unit\": \"{}\",\n", d.per_operation ? "per operation" : "per 1000 allocations");
  out += "  \"rates\": \"per-call objects (the steady state) per unit; bounded pairs are listed with "
         "their counts, not compared\",\n";
  if (d.sampled) {
    out += "  \"significance\": \"a change counts only when the two runs' 95% intervals do not "
           "overlap\",\n";
  }
  out += "  \"before\": " + RunJson(before) + ",\n";
  out += "  \"after\": " + RunJson(after) + ",\n";
  out += "  \"pairs\": [";
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const DiffRow& r = d.rows[i];
    const CrossPair& p = r.pair();
    if (d.sampled) {
      // An absent pair is one of no sampled objects (its interval is not 0).
      const PairFigures& bf = r.before_figures;
      const PairFigures& af = r.after_figures;
      out += fmt::format(
          "{}\n    {{\"status\": \"{}\", \"significant\": {}, \"key\": {}, \"alloc_role\": {}, "
          "\"free_role\": {}, \"alloc_site\": {}, \"free_site\": {},\n     \"before\": "
          "{{\"count\": {}, \"rate\": {:.6g}, \"estimate\": {{\"count\": {}, "
          "\"rate\": {}}}}},\n     \"after\": {{\"count\": {}, \"rate\": "
          "{:.6g}, \"estimate\": {{\"count\": {}, \"rate\": {}}}}}}}",
          i ? "," : "", DiffStatusName(r.status), r.significant ? "true" : "false",
          JsonString(p.key), JsonString(p.alloc_role), JsonString(p.free_role),
          JsonString(p.alloc_site.key), JsonString(p.free_site.key), bf.frees,
          r.before_rate, EstimateJson(bf.count), EstimateJson(r.before_estimate, 3),
          af.frees, r.after_rate, EstimateJson(af.count),
          EstimateJson(r.after_estimate, 3));
      continue;
    }
    out += fmt::format(
        "{}\n    {{\"status\": \"{}\", \"key\": {}, \"alloc_role\": {}, \"free_role\": {}, "
        "\"alloc_site\": {}, \"free_site\": {},\n     \"before\": {{\"count\": {}, "
        "\"steady\": {}, \"bounded\": {}, \"rate\": {:.6g}}}, \"after\": {{\"count\": {}, "
        "\"steady\": {}, \"bounded\": {}, \"rate\": {:.6g}}}}}",
        i ? "," : "", DiffStatusName(r.status), JsonString(p.key), JsonString(p.alloc_role),
        JsonString(p.free_role), JsonString(p.alloc_site.key), JsonString(p.free_site.key),
        r.before_figures.frees, r.before_figures.steady, r.before_figures.bounded, r.before_rate,
        r.after_figures.frees, r.after_figures.steady, r.after_figures.bounded, r.after_rate);
  }
  out += d.rows.empty() ? "]" : "\n  ]";
  if (d.central.present) {  // only then: older outputs unchanged
    out += ",\n  \"central\": " + RenderCentralDiffJson(d.central);
  }
  out += "\n}\n";
  return out;
}

std::string RenderGateJson(const Analysis& a, const GateResult& r,
                           const std::string& accept_command) {
  auto pair = [&a](const CrossPair& p) {
    const PairFigures f = a.Figures(p);
    return fmt::format(
        "{{\"key\": {}, \"alloc_role\": {}, \"free_role\": {}, \"count\": {}, \"bytes\": {}, "
        "\"lifecycle\": {}, \"alloc_site\": {}, \"free_site\": {}}}",
        JsonString(p.key), JsonString(p.alloc_role), JsonString(p.free_role), f.frees,
        f.total_bytes, LifecycleJson(a, p), SiteJson(p.alloc_site), SiteJson(p.free_site));
  };
  std::string out = fmt::format("{{\n  \"schema_version\": {},\n  \"passed\": {},\n",
                                kGateSchemaVersion, r.passed() ? "true" : "false");
  out += fmt::format(
      "  \"unit\": \"{}\",\n  \"units\": {:.6g},\n  \"operations\": {},\n  \"allocations\": {},\n",
      r.per_operation ? "per operation" : "per 1000 allocations", r.units, a.operations,
      a.Allocations());
  out += fmt::format(
      "  \"rule\": {{\"min_effect\": {:.6g}, \"max_growth\": {:.6g}, \"significance\": {:.6g}, "
      "\"timing_slack\": {:.6g}, \"bounded_effect\": {}}},\n",
      r.min_effect, r.max_growth, kSignificance, r.timing_slack,
      r.per_operation ? fmt::format("{:.6g}", r.bounded_effect) : "null");
  out += GatePromiseJson(r);
  if (r.sampled) out += "  \"sampling\": " + SamplingJson(a) + ",\n";
  out += "  \"offenses\": [";
  for (size_t i = 0; i < r.offenses.size(); ++i) {
    const GateOffense& o = r.offenses[i];
    const GateGroup& g = o.group;
    std::string pairs;
    for (size_t k = 0; k < g.pairs.size(); ++k) pairs += (k ? ",\n       " : "") + pair(*g.pairs[k]);
    out += fmt::format(
        "{}\n    {{\"verdict\": \"{}\", \"group\": {}, \"rate\": {}, \"bounded_rate\": {}, "
        "\"baseline_rate\": {:.6g}, \"baseline_bounded_rate\": {:.6g}, \"baseline_site_rate\": {:.6g}, "
        "\"timing_dependent\": {}, \"limit\": {:.6g}, \"p_value\": {:.3g},\n     \"pairs\": [{}]}}",
        i ? "," : "", GateVerdictName(o.verdict), JsonString(g.key), EstimateJson(g.rate, 6),
        EstimateJson(g.bounded_rate, 6), g.baseline_rate, g.baseline_bounded_rate,
        g.baseline_site_rate, g.timing_dependent ? "true" : "false", o.limit, o.p_value, pairs);
  }
  out += r.offenses.empty() ? "],\n" : "\n  ],\n";
  out += fmt::format("  \"groups\": {},\n  \"allowed_groups\": {},\n", r.groups, r.allowed);
  out += "  \"new_within_noise\": [";
  for (size_t i = 0; i < r.new_within_noise.size(); ++i) {
    out += fmt::format("{}\n    {}", i ? "," : "", pair(*r.new_within_noise[i]));
  }
  out += r.new_within_noise.empty() ? "],\n" : "\n  ],\n";
  out += "  \"suppressed\": [";
  for (size_t i = 0; i < r.suppressed.size(); ++i) {
    out += fmt::format("{}\n    {{\"pattern\": {}, \"reason\": {}, \"pair\": {}}}", i ? "," : "",
                       JsonString(r.suppressed[i].second->pattern),
                       JsonString(r.suppressed[i].second->reason), pair(*r.suppressed[i].first));
  }
  out += r.suppressed.empty() ? "],\n" : "\n  ],\n";
  out += "  \"gone\": [";
  for (size_t i = 0; i < r.gone.size(); ++i) out += (i ? ", " : "") + JsonString(r.gone[i]);
  out += "],\n";
  out += fmt::format("  \"accept_command\": {}\n}}\n", JsonString(accept_command));
  return out;
}

}  // namespace crossfree::analyzer::render

namespace crossfree::analyzer::simulate {

using analyzer::render::JsonString;
using analyzer::render::SiteJson;
using analyzer::render::SizeClassLabel;

namespace {

std::string CountsJson(const TransferCounts& c) {
  return fmt::format(
      "\"allocations\": {}, \"frees\": {}, \"large_allocations\": {}, "
      "\"fetch_calls\": {}, \"fetched_objects\": {}, \"short_fetches\": {}, \"release_calls\": {}, "
      "\"released_objects\": {}, \"release_calls_by_cause\": {{\"{}\": {}, \"{}\": {}, "
      "\"{}\": {}}}, \"direct_central_frees\": {}",
      c.allocations, c.frees, c.large_allocations, c.fetch_calls, c.fetched_objects,
      c.short_fetches, c.release_calls, c.released_objects, ReleaseCauseName(ReleaseCause::kListTooLong),
      c.release_calls_by_cause[0], ReleaseCauseName(ReleaseCause::kScavenge),
      c.release_calls_by_cause[1], ReleaseCauseName(ReleaseCause::kThreadExit),
      c.release_calls_by_cause[2], c.direct_central_frees);
}

std::string SitesJson(const std::vector<SiteTransfers>& sites) {
  std::string out;
  for (const SiteTransfers& s : sites) {
    if (!out.empty()) out += ",\n";
    out += fmt::format("    {{\"group\": {}, \"calls\": {}, \"objects\": {}, \"site\": {}}}",
                       analyzer::render::JsonString(s.group), s.calls, s.objects,
                       analyzer::render::SiteJson(s.site));
  }
  return out.empty() ? "[]" : "[\n" + out + "\n  ]";
}

std::string CostJson(const CostCounts& c) {
  return fmt::format(
      "\"refills\": {}, \"refilled_objects\": {}, \"flushes\": {}, \"flushed_objects\": {}, "
      "\"locks\": {}, \"atomics\": {}, \"remote_frees\": {}, \"sync\": {}",
      c[CostKind::kRefill], c.refilled_objects, c[CostKind::kFlush], c.flushed_objects,
      c[CostKind::kLock], c[CostKind::kAtomic], c[CostKind::kRemoteFree], c.Total());
}

std::string LifetimeJson(const analyzer::LifetimeSummary& l) {
  std::string octaves;
  for (size_t i = 0; i < l.octaves.size(); ++i) {
    octaves += fmt::format("{}{}", i ? ", " : "", l.octaves[i]);
  }
  return fmt::format(
      "{{\"count\": {}, \"min_ns\": {}, \"median_ns\": {}, \"p99_ns\": {}, \"max_ns\": {}, "
      "\"first_octave\": {}, \"octaves\": [{}]}}",
      l.count, l.min_ns, l.median_ns, l.p99_ns, l.max_ns, l.first_octave, octaves);
}

std::string CpuJson(const analyzer::CpuFigures& c) {
  if (c.known == 0) return "null";
  return fmt::format("{{\"same\": {}, \"other\": {}, \"unknown\": {}}}", c.same, c.other,
                     c.unknown);
}

// The document of both simulate outputs: tool, schema, the model object's
// fields, the grouping, the traces (one object a line), the totals with the
// replay's unknown frees and in-place reallocs, then the schema's own
// `sections` (each "  \"name\": value,\n"), then the warnings.
std::string SimulationDocument(int schema, std::string_view model, const SimulationResult& r,
                               const SimulateOptions& options, std::string_view totals,
                               std::string_view sections) {
  std::string traces;
  for (const SimTraceInfo& t : r.traces) {
    if (!traces.empty()) traces += ",\n";
    traces += fmt::format(
        "    {{\"path\": {}, \"pid\": {}, \"threads\": {}, \"events\": {}, \"truncated\": {}}}",
        analyzer::render::JsonString(t.path), t.pid, t.threads, t.events, t.truncated);
  }
  return fmt::format(
      "{{\n  \"tool\": \"crossfree simulate\",\n  \"schema\": {},\n  \"model\": {{{}}},\n"
      "  \"by\": \"{}\",\n  \"traces\": [\n{}\n  ],\n"
      "  \"totals\": {{{}, \"unknown_frees\": {}, \"inplace_reallocs\": {}}},\n"
      "{}  \"warnings\": [{}]\n}}\n",
      schema, model, options.by == analyzer::GroupBy::kRole ? "role" : "thread", traces, totals,
      r.unknown_frees, r.inplace_reallocs, sections,
      analyzer::render::JsonStringList(r.warnings));
}

std::string RenderCostJson(const SimulationResult& r, const SimulateOptions& options) {
  const CostSimulation& m = *r.cost;
  std::string settings;
  for (const auto& [k, v] : m.settings) {
    settings += fmt::format("{}{}: {}", settings.empty() ? "" : ", ",
                            analyzer::render::JsonString(k), analyzer::render::JsonString(v));
  }
  std::string groups;
  for (const CostGroupResult& g : m.groups) {
    if (!groups.empty()) groups += ",\n";
    groups += fmt::format(
        "    {{\"name\": {}, \"threads\": {}, \"allocations\": {}, \"frees\": {}, {}, "
        "\"thread_exit\": {{{}}}}}",
        analyzer::render::JsonString(g.name), g.threads, g.allocations, g.frees, CostJson(g.cost),
        CostJson(g.thread_exit));
  }
  std::string classes;
  for (const CostClassResult& k : m.classes) {
    if (!classes.empty()) classes += ",\n";
    classes += fmt::format("    {{\"class\": {}, \"bytes\": {}, {}}}", k.cl, k.bytes,
                           CostJson(k.cost));
  }
  std::string pairs;
  for (const CostPairResult& p : m.pairs) {
    if (!pairs.empty()) pairs += ",\n";
    pairs += fmt::format(
        "    {{\"key\": {}, \"alloc_group\": {}, \"free_group\": {}, \"cross_thread\": {}, "
        "\"objects\": {}, \"bytes\": {}, \"cost\": {{{}}},\n     \"lifetime\": {}, "
        "\"same_cpu\": {},\n     \"alloc_site\": {},\n     \"free_site\": {}}}",
        analyzer::render::JsonString(p.key), analyzer::render::JsonString(p.alloc_group),
        analyzer::render::JsonString(p.free_group), p.cross_thread, p.objects, p.bytes,
        CostJson(p.cost), LifetimeJson(p.lifetime), CpuJson(p.cpu),
        analyzer::render::SiteJson(p.alloc_site), analyzer::render::SiteJson(p.free_site));
  }
  const std::string model = fmt::format(
      "\"allocator\": {}, \"settings\": {{{}}}, \"settings_source\": {}, \"validated\": {}, "
      "\"validation_level\": {}, \"validation\": {}",
      analyzer::render::JsonString(m.allocator), settings,
      analyzer::render::JsonString(m.settings_source), m.validation.validated,
      analyzer::render::JsonString(m.validation.Label()),
      analyzer::render::JsonString(m.validation.how));
  const std::string sections = fmt::format(
      "  \"cross_thread\": {{{}}},\n  \"thread_exit\": {{{}}},\n  \"live_at_end\": {{{}}},\n"
      "  \"groups\": [\n{}\n  ],\n  \"size_classes\": [\n{}\n  ],\n"
      "  \"pair_count\": {},\n  \"pairs\": [\n{}\n  ],\n",
      CostJson(m.cross_thread), CostJson(m.thread_exit), CostJson(m.live_at_end), groups,
      classes, m.pair_count, pairs);
  return SimulationDocument(2, model, r, options, CostJson(m.totals), sections);
}

}  // namespace

std::string RenderSimulationJson(const SimulationResult& r, const SimulateOptions& options) {
  if (r.cost) return RenderCostJson(r, options);
  std::string groups;
  for (const GroupResult& g : r.groups) {
    std::string classes;
    for (const auto& [cl, c] : g.by_class) {
      if (c.fetch_calls == 0 && c.release_calls == 0 && c.direct_central_frees == 0) continue;
      if (!classes.empty()) classes += ",\n";
      classes += fmt::format("        {{\"class\": {}, \"bytes\": {}, {}}}", cl,
                             r.class_bytes.at(cl), CountsJson(c));
    }
    if (!groups.empty()) groups += ",\n";
    groups += fmt::format("    {{\"name\": {}, \"threads\": {}, {}, \"size_classes\": [{}{}{}]}}",
                          analyzer::render::JsonString(g.name), g.threads, CountsJson(g.counts),
                          classes.empty() ? "" : "\n", classes,
                          classes.empty() ? "" : "\n      ");
  }
  const std::string model = fmt::format(
      "\"allocator\": \"gperftools-2.10\", \"page_shift\": {}, \"max_size\": {}, "
      "\"max_total_thread_cache_bytes\": {}, \"transfer_num_objects\": {}",
      kPageShift, kMaxSize, options.model.gperftools.max_total_thread_cache_bytes,
      options.model.gperftools.transfer_num_objects);
  const std::string sections =
      fmt::format("  \"groups\": [\n{}\n  ],\n  \"fetch_sites\": {},\n  \"release_sites\": {},\n",
                  groups, SitesJson(r.fetch_sites), SitesJson(r.release_sites));
  return SimulationDocument(1, model, r, options, CountsJson(r.totals), sections);
}

}  // namespace crossfree::analyzer::simulate
