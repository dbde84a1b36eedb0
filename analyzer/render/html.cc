// SPDX-License-Identifier: Apache-2.0
// The HTML renderer (see html.h).
#include "analyzer/render/html.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "analyzer/render/output.h"
#include "analyzer/render/report_page_assets.h"

namespace crossfree::analyzer::render {
namespace {

// JSON inside <script type="application/json">: "</script" or "<!--" would
// end or confuse the element. '<' only ever occurs inside JSON strings, where
// \u003c means the same.
std::string ScriptSafe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FramesJson(const Site& site) {
  std::string out = "[";
  for (size_t i = 0; i < site.frames.size(); ++i) {
    const SymbolFrame& f = site.frames[i];
    out += fmt::format("{}[{},{},{}]", i ? "," : "", JsonString(FrameName(f, false)),
                       JsonString(FrameLocation(f)), f.inlined ? 1 : 0);
  }
  return out + "]";
}


// report --allocator / --lifetimes: the pair's cost ("cs", its parts in
// "cd"), lifetime figures ("lt") and distribution ("lh", inline SVG), and
// CPUs ("cpu"), for the page's pair table.
std::string PairCostPageJson(const Analysis& a, const CrossPair& p) {
  if (!a.pair_costs) return "";
  const PairCostFigures* f = a.pair_costs->Find(p.key);
  if (!f) return "";
  const LifetimeSummary& l = f->lifetime;
  std::string out = fmt::format(
      ",\"lt\":{},\"lh\":{},\"cpu\":{}",
      JsonString(fmt::format("{} / {} / {} / {}", DurationText(l.min_ns), DurationText(l.median_ns),
                             DurationText(l.p99_ns), DurationText(l.max_ns))),
      JsonString(LifetimeSvg(l)),
      JsonString(f->cpu_known() ? fmt::format("{:.0f}%", f->cpu.same_percent)
                                : std::string("n/a")));
  if (a.pair_costs->with_costs()) {
    out += fmt::format(",\"cs\":{},\"cd\":{}", f->sync,
                       JsonString(fmt::format("{} refills, {} flushes, {} locks, {} atomics, {} "
                                              "remote frees",
                                              Commas(f->refills), Commas(f->flushes),
                                              Commas(f->locks), Commas(f->atomics),
                                              Commas(f->remote_frees))));
  }
  return out;
}

std::string PairJson(const CrossPair& p, const Analysis& a) {
  const PairFigures f = a.Figures(p);
  std::string classes = "[";
  for (auto [c, n] : f.size_classes) {
    classes += fmt::format("{}[{},{}]", classes.size() > 1 ? "," : "", JsonString(SizeClassLabel(c)),
                           n);
  }
  classes += "]";
  std::string timeline = "[";
  for (size_t i = 0; i < f.timeline.size(); ++i) {
    timeline += fmt::format("{}{}", i ? "," : "", f.timeline[i]);
  }
  timeline += "]";
  // Sampled: the estimate's interval and the sampled count (n, b and r are
  // the estimates).
  std::string sampled;
  if (a.sampled()) {
    sampled = fmt::format(",\"lo\":{},\"hi\":{},\"obs\":{}", EstimateLow(f.count),
                          EstimateHigh(f.count), f.count.observed);
  }
  return fmt::format(
      "{{\"key\":{},\"a\":{},\"f\":{},\"n\":{},\"b\":{},\"r\":{:.4f},\"as\":{},\"fs\":{},"
      "\"ak\":{},\"fk\":{},\"sc\":{},\"t\":{},\"lc\":\"{}\",\"lce\":{}{}{}}}",
      JsonString(p.key), JsonString(p.alloc_role), JsonString(p.free_role), f.frees,
      f.total_bytes, f.per_thousand, FramesJson(p.alloc_site), FramesJson(p.free_site),
      JsonString(p.alloc_site.key), JsonString(p.free_site.key), classes, timeline,
      LifecycleName(p.lifecycle()), JsonString(p.LifecycleEvidence(a.sampled())), sampled,
      PairCostPageJson(a, p));
}

std::string PageRunJson(const Analysis& a) {
  const PairingCounts& c = a.counts;
  const RunFigures t = a.Totals();
  std::string traces = "[";
  for (size_t i = 0; i < a.traces.size(); ++i) {
    const TraceInfo& t = a.traces[i];
    traces += fmt::format("{}{{\"path\":{},\"exe\":{},\"pid\":{},\"events\":{},\"threads\":{},\"truncated\":{}{}{}}}",
                          i ? "," : "", JsonString(t.path), JsonString(t.exe), t.pid, t.events,
                          t.threads, t.truncated ? "true" : "false",
                          t.clean_end()         ? ""
                          : t.LastBuffersLost() ? ",\"clean_end\":false"
                          : t.RunningAtEnd()    ? ",\"clean_end\":false,\"end\":\"running\""
                                                : ",\"clean_end\":false,\"end\":\"killed\"",
                          t.losses.any() ? fmt::format(",\"events_dropped\":{},\"chunks_damaged\":{}",
                                                       t.losses.events_dropped,
                                                       t.losses.chunks_damaged)
                                         : "");
  }
  traces += "]";
  std::string pairs = "[";
  for (size_t i = 0; i < a.pairs.size(); ++i) pairs += (i ? "," : "") + PairJson(a.pairs[i], a);
  pairs += "]";
  std::string asym = "[";
  for (size_t i = 0; i < a.asymmetry.size(); ++i) {
    const AsymmetryRow& r = a.asymmetry[i];
    const AsymmetryFigures f = a.Figures(r);
    asym += fmt::format("{}[{},{},{},{},{}]", i ? "," : "", JsonString(r.role),
                        JsonString(SizeClassLabel(r.size_class)), f.total_allocs, f.total_frees,
                        a.sampled() ? RoundSigned(f.net.value) : r.net);
  }
  asym += "]";
  std::string central = "[";
  for (size_t i = 0; i < a.central.roles.size(); ++i) {
    const CentralRoleRow& r = a.central.roles[i];
    central += fmt::format("{}[{},{},{}]", i ? "," : "", JsonString(r.role), r.counts.fetch,
                           r.counts.release);
  }
  central += "]";
  return fmt::format(
      "{{\"traces\":{},\"events\":{},\"allocations\":{},\"frees\":{},\"cross\":{},\"live\":{},"
      "\"unknown\":{},\"double\":{},\"threads\":{},\"bucket_ns\":{},\"pairs\":{},\"asym\":{},"
      "\"central\":{}{}{}}}",
      traces, c.events, a.Allocations(), a.Frees(), t.cross_thread.total, t.live_at_exit.total,
      t.unknown_frees.total, t.double_frees.total, a.threads,
      a.timeline_bucket_ns, pairs, asym, central,
      a.sampled() ? fmt::format(",\"period\":{}", a.sample_period) : "",
      !a.pair_costs ? std::string()
                    : fmt::format(",\"lifetimes\":true{}",
                                  a.pair_costs->with_costs()
                                      ? fmt::format(",\"costs\":{},\"costsv\":{}",
                                                    JsonString(a.pair_costs->allocator),
                                                    JsonString(a.pair_costs->validation_label))
                                      : ""));
}

// The page's style and script: report_page.css and report_page.js, embedded
// at build time (the generated report_page_assets.h).
using report_page::kScript;
using report_page::kStyle;

std::string Page(const std::string& title, const std::string& body, const std::string& model) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>{}</title>\n"
      "<style>{}</style></head>\n<body>\n{}\n"
      "<script type=\"application/json\" id=\"model\">{}</script>\n<script>{}</script>\n"
      "</body></html>\n",
      title, kStyle, body, ScriptSafe(model), kScript);
}

std::string HtmlEscape(std::string_view s) { return MarkupEscape(s, Markup::kHtml); }

// A sampled run's page says so at the top, and lists the estimates with
// their 95% intervals in a table of its own (the drawn tables show the
// estimates).
constexpr size_t kSampledPairRows = 100;

std::string EstimateCells(const Estimate& e) {
  return fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td>", Commas(e.observed),
                     Commas(EstimateValue(e)), Commas(EstimateLow(e)), Commas(EstimateHigh(e)));
}

std::string SampledSection(const Analysis& a, const std::string& id) {
  const PairingCounts& c = a.counts;
  std::string rows;
  auto row = [&rows](const std::string& label, const Estimate& e) {
    rows += "<tr><td class=\"l\">" + label + "</td>" + EstimateCells(e) + "</tr>";
  };
  const RunFigures t = a.Totals();
  row("cross-thread frees", t.cross_thread.estimate);
  row("same-thread frees", t.same_thread.estimate);
  row("live at exit", t.live_at_exit.estimate);
  if (a.windowed || a.recording_windows) {
    row("freed in the window, allocated before it", t.before_window.estimate);
    row("live at window end", t.live_at_window_end.estimate);
  }
  row("unknown frees", t.unknown_frees.estimate);
  row("double frees", t.double_frees.estimate);
  size_t shown = std::min(a.pairs.size(), kSampledPairRows);
  for (size_t i = 0; i < shown; ++i) {
    const CrossPair& p = a.pairs[i];
    const PairFigures f = a.Figures(p);
    const Estimate& rate = f.rate;
    rows += fmt::format(
        "<tr><td class=\"l\">#{} {} &rarr; {}<br><span class=\"muted\">{}</span></td>{}"
        "<td>{:.1f} ({:.1f} .. {:.1f}) per 1000 allocs</td></tr>",
        i + 1, HtmlEscape(p.alloc_role), HtmlEscape(p.free_role), HtmlEscape(p.alloc_site.key),
        EstimateCells(f.count), rate.value, rate.low, rate.high);
  }
  return fmt::format(
      "<div class=\"sampled\" id=\"{}\"><p><b>Estimated, {}</b>: each allocation was traced with "
      "probability 1/{}; every count below and in the tables is {} x the sampled count, with its "
      "exact Poisson 95% interval. Allocations ({}) and frees ({}) are exact (the trace's counts "
      "records) and are the rates' denominators.{}</p>"
      "<table><tr><th class=\"l\">estimated</th><th>sampled</th><th>estimate</th><th>95% low</th>"
      "<th>95% high</th><th></th></tr>{}</table>{}</div>\n",
      id, SampledLabel(a.sample_period), a.sample_period, a.sample_period, Commas(a.Allocations()),
      Commas(a.Frees()),
      c.samples_dropped ? fmt::format(" The tracer dropped {} sampled allocations (table full): "
                                      "the estimates are low by about {}.",
                                      Commas(c.samples_dropped),
                                      PercentText(t.samples_dropped_share, 2))
                        : "",
      rows,
      a.pairs.size() > shown
          ? fmt::format("<p class=\"muted\">the first {} of {} pairs; the JSON output has every "
                        "pair's interval</p>",
                        shown, a.pairs.size())
          : "");
}

// Windows (--from/--to, recording windows): the two counts they add, named
// as in the text report.
std::string WindowSection(const Analysis& a) {
  const RunFigures t = a.Totals();
  std::string windows;
  for (const TraceInfo& t : a.traces) {
    if (!t.recording_windows) continue;
    std::string edges;
    for (const WindowEdge& e : t.windows) {
      edges += fmt::format("{}{} at {:.3f} s", edges.empty() ? "" : ", ", e.open ? "open" : "closed",
                           Seconds(e.timestamp_ns));
    }
    windows += fmt::format("<br>{}: recording {}{}", HtmlEscape(t.path),
                           t.starts_closed ? "started closed" : "started open",
                           edges.empty() ? "" : "; " + edges);
  }
  std::string analysis_window =
      a.windowed ? fmt::format("<br>analysis window {:.3f} s .. {} of each trace",
                               Seconds(a.window_from_ns),
                               a.window_to_ns == ~uint64_t{0}
                                   ? std::string("the end")
                                   : fmt::format("{:.3f} s", Seconds(a.window_to_ns)))
                 : "";
  return fmt::format(
      "<div id=\"windows\"><h2>Windows</h2><p>before the window: {}{} (freed in the window, "
      "allocated before it)<br>live at window end: {}{} (still live when the window ended: not "
      "leaks){}{}</p></div>\n",
      a.sampled() ? "~" : "", Commas(t.before_window.total), a.sampled() ? "~" : "",
      Commas(t.live_at_window_end.total), analysis_window, windows);
}

}  // namespace

std::string RenderReportHtml(const Analysis& a) {
  std::string title = "crossfree report";
  if (!a.traces.empty()) title += ": " + HtmlEscape(a.traces[0].exe.empty() ? a.traces[0].path : a.traces[0].exe);
  if (a.sampled()) title += " (estimated, " + SampledLabel(a.sample_period) + ")";
  std::string body = "<h1>" + title + "</h1>\n" +
      (a.sampled() ? SampledSection(a, "sampling") : std::string()) +
      "<h2>Summary</h2><table class=\"summary\" id=\"summary\"></table>\n" +
      (a.windowed || a.recording_windows ? WindowSection(a) : std::string()) +
      "<h2>Cross-thread frees by role</h2><p class=\"muted\">rows allocate, columns free</p>"
      "<table class=\"heat\" id=\"heatmap\"></table>\n"
      "<h2>Pairs</h2><p><input id=\"filter\" placeholder=\"filter by role or function\"> "
      "<span id=\"pairs-count\" class=\"muted\"></span></p><table id=\"pairs\"></table>"
      "<p><button id=\"more\">more</button></p>\n"
      "<h2>Cache asymmetry</h2><div id=\"asymmetry\"></div>\n"
      "<h2>Timelines of the top pairs</h2><div id=\"timelines\"></div>\n"
      "<div id=\"central-section\"><h2>tcmalloc central free-list transfers per role</h2>"
      "<table id=\"central\"></table></div>";
  return Page(title, body, "{\"kind\":\"report\",\"run\":" + PageRunJson(a) + "}");
}

std::string RenderDiffHtml(const Analysis& before, const Analysis& after, const DiffResult& d) {
  std::string rows = "[";
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const DiffRow& r = d.rows[i];
    const CrossPair& p = r.pair();
    const PairFigures& bf = r.before_figures;
    const PairFigures& af = r.after_figures;
    rows += fmt::format(
        "{}{{\"s\":\"{}\",\"a\":{},\"f\":{},\"ak\":{},\"fk\":{},\"br\":{:.6g},\"ar\":{:.6g},"
        "\"bs\":{},\"as\":{},\"bc\":{},\"ac\":{}}}",
        i ? "," : "", DiffStatusName(r.status), JsonString(p.alloc_role), JsonString(p.free_role),
        JsonString(p.alloc_site.key), JsonString(p.free_site.key), r.before_rate, r.after_rate,
        bf.steady, af.steady, bf.frees, af.frees);
  }
  rows += "]";
  std::string sampled;
  if (d.sampled) {
    sampled = "<p class=\"sampled\"><b>Estimated</b>: ";
    sampled += before.sampled() ? "BEFORE is " + SampledLabel(before.sample_period) : "BEFORE is not sampled";
    sampled += after.sampled() ? ", AFTER is " + SampledLabel(after.sample_period) : ", AFTER is not sampled";
    sampled += ". Rates are estimates; a pair is grown or shrunk only when the two runs' 95% "
               "intervals do not overlap.</p><table><tr><th class=\"l\">pair</th><th>status</th>"
               "<th>before /1000 (95%)</th><th>after /1000 (95%)</th><th>significant</th></tr>";
    for (const DiffRow& r : d.rows) {
      const CrossPair& p = r.pair();
      sampled += fmt::format(
          "<tr><td class=\"l\">{} &rarr; {}<br><span class=\"muted\">{}</span></td><td>{}</td>"
          "<td>{:.2f} ({:.2f} .. {:.2f})</td><td>{:.2f} ({:.2f} .. {:.2f})</td><td>{}</td></tr>",
          HtmlEscape(p.alloc_role), HtmlEscape(p.free_role), HtmlEscape(p.alloc_site.key),
          DiffStatusName(r.status), r.before_estimate.value, r.before_estimate.low,
          r.before_estimate.high, r.after_estimate.value, r.after_estimate.low,
          r.after_estimate.high, r.significant ? "yes" : "no");
    }
    sampled += "</table>\n";
  }
  std::string body =
      "<h1>crossfree diff" + std::string(d.sampled ? " (estimated, sampled)" : "") + "</h1>\n" +
      sampled +
      "<div style=\"display:flex;gap:2em\"><div><h2>Before</h2><table class=\"summary\" id=\"summary-before\"></table></div>"
      "<div><h2>After</h2><table class=\"summary\" id=\"summary-after\"></table></div></div>\n"
      "<h2>Per-call pairs by their steady-state objects " +
      std::string(d.per_operation ? "per operation" : "per 1000 allocations") +
      " of each run, with their counts; one-off pairs by count</h2>"
      "<div id=\"diff\" class=\"panels\"></div>\n"
      "<div style=\"display:flex;gap:2em\"><div><h2>Before by role</h2><table class=\"heat\" id=\"heatmap-before\"></table></div>"
      "<div><h2>After by role</h2><table class=\"heat\" id=\"heatmap-after\"></table></div></div>";
  return Page("crossfree diff", body,
              "{\"kind\":\"diff\",\"per_operation\":" +
                  std::string(d.per_operation ? "true" : "false") + ",\"before\":" +
                  PageRunJson(before) + ",\"after\":" + PageRunJson(after) + ",\"rows\":" + rows + "}");
}

}  // namespace crossfree::analyzer::render

namespace crossfree::analyzer::render {

std::string LifetimeSvg(const LifetimeSummary& l) {
  if (l.count == 0 || l.octaves.empty()) return "";
  // One bar per power of two; heights relative to the tallest bar.
  constexpr int kBar = 10, kGap = 2, kHeight = 40;
  uint64_t top = *std::max_element(l.octaves.begin(), l.octaves.end());
  int width = static_cast<int>(l.octaves.size()) * (kBar + kGap);
  std::string bars;
  for (size_t i = 0; i < l.octaves.size(); ++i) {
    int h = top ? static_cast<int>(std::ceil(static_cast<double>(l.octaves[i]) * kHeight /
                                             static_cast<double>(top)))
                : 0;
    bars += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#4a7ab5\">"
        "<title>{} objects lived {} .. {}</title></rect>",
        static_cast<int>(i) * (kBar + kGap), kHeight - h, kBar, h, Commas(l.octaves[i]),
        DurationText(l.OctaveLowestNs(i)), DurationText(l.OctaveEndNs(i)));
  }
  return fmt::format(
      "<svg class=\"lifetime\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"lifetime distribution\">{}"
      "<text x=\"0\" y=\"{}\" font-size=\"9\">{}</text>"
      "<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"end\">{}</text></svg>",
      std::max(width, 80), kHeight + 12, bars, kHeight + 10,
      DurationText(l.OctaveStartNs(0)), std::max(width, 80), kHeight + 10,
      DurationText(l.OctaveEndNs(l.octaves.size() - 1)));
}

}  // namespace crossfree::analyzer::render

namespace crossfree::analyzer::simulate {

namespace {

using analyzer::render::Commas;
using analyzer::render::DurationText;
using analyzer::render::HtmlEscape;

std::string CostCells(const CostCounts& c) {
  return fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                     Commas(c[CostKind::kRefill]), Commas(c[CostKind::kFlush]),
                     Commas(c[CostKind::kLock]), Commas(c[CostKind::kAtomic]),
                     Commas(c[CostKind::kRemoteFree]), Commas(c.Total()));
}
constexpr const char* kCostHeads =
    "<th>refills</th><th>flushes</th><th>locks</th><th>atomics</th><th>remote frees</th>"
    "<th>sync</th>";

}  // namespace

std::string RenderSimulationHtml(const SimulationResult& r, const SimulateOptions& options) {
  std::string body;
  if (!r.cost) return "";
  const CostSimulation& m = *r.cost;
  std::string settings;
  for (const auto& [k, v] : m.settings) {
    settings += fmt::format("{}<code>{}={}</code>", settings.empty() ? "" : ", ", HtmlEscape(k),
                            HtmlEscape(v));
  }
  body += fmt::format("<h1>crossfree simulate: {}</h1>\n<p><b>{}</b>: {}</p>\n",
                      HtmlEscape(m.allocator),
                      m.validation.Label(),
                      HtmlEscape(m.validation.how));
  body += fmt::format("<p>settings ({}): {}</p>\n", HtmlEscape(m.settings_source), settings);
  for (const SimTraceInfo& t : r.traces) {
    body += fmt::format("<p>trace {}: pid {}, {} threads, {} events{}</p>\n", HtmlEscape(t.path),
                        t.pid, t.threads, Commas(t.events), t.truncated ? " (truncated)" : "");
  }
  body += fmt::format(
      "<p>{} synchronisations (locks + atomics): {} on cross-thread pairs, {} at thread exits, "
      "{} by objects never freed.</p>\n",
      Commas(m.totals.Total()), Commas(m.cross_thread.Total()), Commas(m.thread_exit.Total()),
      Commas(m.live_at_end.Total()));
  body += fmt::format("<h2>By {}</h2>\n<table><tr><th>{}</th><th>threads</th><th>allocs</th>"
                      "<th>frees</th>{}</tr>\n",
                      options.by == analyzer::GroupBy::kRole ? "role" : "thread",
                      options.by == analyzer::GroupBy::kRole ? "role" : "thread", kCostHeads);
  for (const CostGroupResult& g : m.groups) {
    body += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr>\n",
                        HtmlEscape(g.name), g.threads, Commas(g.allocations), Commas(g.frees),
                        CostCells(g.cost));
  }
  body += fmt::format("<tr><th>total</th><td>{}</td><td>{}</td><td>{}</td>{}</tr></table>\n",
                      m.threads, Commas(m.allocations), Commas(m.frees), CostCells(m.totals));
  body += fmt::format("<h2>By size class</h2>\n<table><tr><th>class</th><th>bytes</th>{}</tr>\n",
                      kCostHeads);
  for (const CostClassResult& k : m.classes) {
    if (k.cost.Total() == 0) continue;
    body += fmt::format("<tr><td>{}</td><td>{}</td>{}</tr>\n", k.cl,
                        k.bytes ? Commas(k.bytes) : std::string("large"), CostCells(k.cost));
  }
  body += "</table>\n";
  body += fmt::format(
      "<h2>Top pairs by cost ({} of {})</h2>\n<table><tr><th>#</th><th>pair</th><th>objects</th>"
      "{}<th>lifetime (min / median / p99 / max)</th><th>distribution</th><th>same CPU</th></tr>\n",
      m.pairs.size(), m.pair_count, kCostHeads);
  for (size_t i = 0; i < m.pairs.size(); ++i) {
    const CostPairResult& p = m.pairs[i];
    const analyzer::LifetimeSummary& l = p.lifetime;
    body += fmt::format(
        "<tr><td>{}</td><td>{} &rarr; {}{}<br><small>alloc: {}<br>free: {}</small></td><td>{}</td>"
        "{}<td>{}</td><td>{}</td><td>{}</td></tr>\n",
        i + 1, HtmlEscape(p.alloc_group), HtmlEscape(p.free_group),
        p.cross_thread ? "" : " (same thread)", HtmlEscape(p.alloc_site.key),
        HtmlEscape(p.free_site.key), Commas(p.objects), CostCells(p.cost),
        l.count ? fmt::format("{} / {} / {} / {}", DurationText(l.min_ns), DurationText(l.median_ns),
                              DurationText(l.p99_ns), DurationText(l.max_ns))
                : std::string("-"),
        analyzer::render::LifetimeSvg(l),
        p.cpu.known ? fmt::format("{:.0f}% of {}", p.cpu.same_percent, Commas(p.cpu.known))
                    : std::string("n/a"));
  }
  body += "</table>\n";
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>crossfree simulate: {}</title>\n<style>body{{font-family:sans-serif;margin:1em}}"
      "table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;"
      "text-align:right;vertical-align:top}}td:first-child,td:nth-child(2){{text-align:left}}</style></head>\n"
      "<body>\n{}</body></html>\n",
      HtmlEscape(m.allocator), body);
}

}  // namespace crossfree::analyzer::simulate
