// SPDX-License-Identifier: Apache-2.0
// The HTML renderer (see html.h).
#include "analyzer/render/html.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "analyzer/render/output.h"

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

std::string PairJson(const CrossPair& p, const Analysis& a) {
  std::string classes = "[";
  for (auto [c, n] : p.size_classes) {
    classes += fmt::format("{}[{},{}]", classes.size() > 1 ? "," : "", JsonString(SizeClassLabel(c)),
                           a.Scaled(n));
  }
  classes += "]";
  std::string timeline = "[";
  for (size_t i = 0; i < p.timeline.size(); ++i) {
    timeline += fmt::format("{}{}", i ? "," : "", a.Scaled(p.timeline[i]));
  }
  timeline += "]";
  // Sampled: the estimate's interval and the sampled count (n, b and r are
  // the estimates).
  std::string sampled;
  if (a.sampled()) {
    Estimate n = a.Count(p.count);
    sampled = fmt::format(",\"lo\":{},\"hi\":{},\"obs\":{}", EstimateLow(n), EstimateHigh(n),
                          p.count);
  }
  return fmt::format(
      "{{\"key\":{},\"a\":{},\"f\":{},\"n\":{},\"b\":{},\"r\":{:.4f},\"as\":{},\"fs\":{},"
      "\"ak\":{},\"fk\":{},\"sc\":{},\"t\":{},\"lc\":\"{}\",\"lce\":{}{}}}",
      JsonString(p.key), JsonString(p.alloc_role), JsonString(p.free_role), a.Scaled(p.count),
      a.Scaled(p.bytes), a.PerThousand(p.count), FramesJson(p.alloc_site), FramesJson(p.free_site),
      JsonString(p.alloc_site.key), JsonString(p.free_site.key), classes, timeline,
      LifecycleName(p.lifecycle()), JsonString(p.LifecycleEvidence()), sampled);
}

std::string RunJson(const Analysis& a) {
  const PairingCounts& c = a.counts;
  std::string traces = "[";
  for (size_t i = 0; i < a.traces.size(); ++i) {
    const TraceInfo& t = a.traces[i];
    traces += fmt::format("{}{{\"path\":{},\"exe\":{},\"pid\":{},\"events\":{},\"threads\":{},\"truncated\":{}{}}}",
                          i ? "," : "", JsonString(t.path), JsonString(t.exe), t.pid, t.events,
                          t.threads, t.truncated ? "true" : "false",
                          t.clean_end ? "" : ",\"clean_end\":false");
  }
  traces += "]";
  std::string pairs = "[";
  for (size_t i = 0; i < a.pairs.size(); ++i) pairs += (i ? "," : "") + PairJson(a.pairs[i], a);
  pairs += "]";
  std::string asym = "[";
  for (size_t i = 0; i < a.asymmetry.size(); ++i) {
    const AsymmetryRow& r = a.asymmetry[i];
    asym += fmt::format("{}[{},{},{},{},{}]", i ? "," : "", JsonString(r.role),
                        JsonString(SizeClassLabel(r.size_class)), a.Scaled(r.allocs),
                        a.Scaled(r.frees),
                        a.sampled() ? RoundSigned(a.Net(r).value) : r.net);
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
      "\"central\":{}{}}}",
      traces, c.events, a.Allocations(), a.Frees(), a.Scaled(c.cross_thread),
      a.Scaled(c.live_at_exit), a.Scaled(c.unknown_frees), a.Scaled(c.double_frees), a.threads,
      a.timeline_bucket_ns, pairs, asym, central,
      a.sampled() ? fmt::format(",\"period\":{}", a.sample_period) : "");
}

constexpr std::string_view kStyle = R"CSS(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{padding:2px 8px;text-align:right;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;white-space:nowrap}td.l,th.l{text-align:left}
.summary td:first-child{text-align:left;color:#555}
.heat td{min-width:4em;border:1px solid #eee}.heat th{cursor:default}
.stack{font:12px/1.3 ui-monospace,monospace;text-align:left;white-space:pre;color:#333}
.stack .loc{color:#777}.inl{color:#999}
tr.pair:hover{background:#fafae8}
.muted{color:#777}.bar-a{fill:#c0504d}.bar-f{fill:#4f81bd}
input{font-size:14px;padding:3px;width:24em}
.gone{background:#eaf6ea}.new{background:#fbeaea}.grown{background:#fbf3e6}.shrunk{background:#eef3fa}
.bounded{background:#f4f4f4}
.panels{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,640px),1fr));gap:8px}
.panel{min-width:0;padding:6px;box-sizing:border-box;overflow-x:auto}
table.diff{width:100%;table-layout:fixed}table.diff th:first-child,table.diff td:first-child{width:auto}
table.diff th:not(:first-child),table.diff td:not(:first-child){width:5.5em}
table.diff .stack{white-space:pre-wrap;overflow-wrap:anywhere}
)CSS";

// The page script: draws every section from the JSON model. Written for
// the browsers Debian ships; no library.
constexpr std::string_view kScript = R"JS(
'use strict';
const M = JSON.parse(document.getElementById('model').textContent);
const fmt = n => Number(n).toLocaleString('en-US');
const esc = s => String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
const el = (id) => document.getElementById(id);
function bytes(n) { const u = ['B','KiB','MiB','GiB','TiB']; let i = 0; while (n >= 1024 && i < 4) { n /= 1024; i++; } return (i ? n.toFixed(1) : n) + ' ' + u[i]; }
function stackHtml(frames, key) {
  if (!frames.length) return esc(key);
  return frames.map(f => esc(f[0]) + (f[2] ? ' <span class="inl">[inlined]</span>' : '') +
                         (f[1] ? '  <span class="loc">' + esc(f[1]) + '</span>' : '')).join('\n');
}
function spark(t, w, h) {
  if (!t || !t.length) return '';
  const max = Math.max(1, ...t), bw = w / t.length;
  let s = '<svg class="timeline" width="' + w + '" height="' + h + '">';
  t.forEach((v, i) => { if (v) { const bh = Math.max(1, v / max * h); s += '<rect x="' + (i * bw).toFixed(1) + '" y="' + (h - bh).toFixed(1) + '" width="' + Math.max(1, bw - 0.5).toFixed(1) + '" height="' + bh.toFixed(1) + '" fill="#4f81bd"><title>' + fmt(v) + ' frees</title></rect>'; } });
  return s + '</svg>';
}
function summary(run, id) {
  const rows = [['traces', run.traces.map(t => esc(t.path) + ' (pid ' + t.pid + (t.truncated ? ', truncated' : '') + (t.clean_end === false ? ', no clean end: the frees in its last buffers were lost, live blocks are not leaks' : '') + ')').join('<br>')],
    ['events', fmt(run.events)], ['threads', fmt(run.threads)], ['allocations', fmt(run.allocations)],
    ['frees', fmt(run.frees)],
    ['cross-thread frees', fmt(run.cross) + ' (' + (run.frees ? (100 * run.cross / run.frees).toFixed(1) : 0) + '% of frees, ' + (run.allocations ? (1000 * run.cross / run.allocations).toFixed(1) : 0) + ' per 1000 allocations)'],
    ['live at exit', fmt(run.live)], ['unknown frees', fmt(run.unknown)], ['double frees', fmt(run.double)],
    ['cross-thread pairs', fmt(run.pairs.length)]];
  el(id).innerHTML = rows.map(r => '<tr><td>' + r[0] + '</td><td class="l">' + r[1] + '</td></tr>').join('');
}
function heatmap(run, id) {
  const alloc = [...new Set(run.pairs.map(p => p.a))].sort(), free = [...new Set(run.pairs.map(p => p.f))].sort();
  const cell = {}; let max = 1;
  run.pairs.forEach(p => { const k = p.a + '\u0000' + p.f; cell[k] = (cell[k] || 0) + p.n; max = Math.max(max, cell[k]); });
  let s = '<tr><th class="l">allocating \\ freeing</th>' + free.map(f => '<th>' + esc(f) + '</th>').join('') + '</tr>';
  alloc.forEach(a => {
    s += '<tr><th class="l">' + esc(a) + '</th>' + free.map(f => {
      const v = cell[a + '\u0000' + f] || 0, x = v / max;
      return '<td data-frees="' + v + '" style="background:rgba(192,80,77,' + (v ? (0.08 + 0.92 * x).toFixed(3) : 0) + ');color:' + (x > 0.6 ? '#fff' : '#222') + '">' + (v ? fmt(v) : '') + '</td>';
    }).join('') + '</tr>';
  });
  el(id).innerHTML = run.pairs.length ? s : '<tr><td class="l muted">no cross-thread frees</td></tr>';
}
const PAGE = 200;
function pairsTable(run) {
  let sortKey = 'n', desc = true, shown = PAGE, filter = '';
  const cols = [['#', null], ['allocating', 'a'], ['freeing', 'f'], ['frees', 'n'], ['bytes', 'b'], ['per 1000 allocs', 'r'], ['lifecycle', 'lc'], ['size classes', null], ['timeline', null], ['allocated at', 'ak'], ['freed at', 'fk']];
  function rows() {
    const q = filter.toLowerCase();
    let list = q ? run.pairs.filter(p => (p.a + ' ' + p.f + ' ' + p.ak + ' ' + p.fk).toLowerCase().includes(q)) : run.pairs.slice();
    list.sort((x, y) => { const a = x[sortKey], b = y[sortKey]; const c = a < b ? -1 : a > b ? 1 : 0; return desc ? -c : c; });
    return list;
  }
  function draw() {
    const list = rows();
    let s = '<tr>' + cols.map(c => '<th class="' + (c[1] === 'a' || c[1] === 'f' || c[1] === 'ak' || c[1] === 'fk' || c[1] === null ? 'l' : '') + '" data-key="' + (c[1] || '') + '">' + c[0] + (c[1] === sortKey ? (desc ? ' \u25be' : ' \u25b4') : '') + '</th>').join('') + '</tr>';
    list.slice(0, shown).forEach((p, i) => {
      s += '<tr class="pair"><td>' + (i + 1) + '</td><td class="l">' + esc(p.a) + '</td><td class="l">' + esc(p.f) + '</td><td>' + fmt(p.n) + '</td><td>' + bytes(p.b) + '</td><td>' + p.r.toFixed(1) +
           '</td><td class="l" title="' + esc(p.lce) + '">' + esc(p.lc) +
           '</td><td class="l">' + p.sc.slice().sort((x, y) => y[1] - x[1]).slice(0, 4).map(c => esc(c[0]) + ' ' + (100 * c[1] / p.n).toFixed(0) + '%').join('<br>') +
           '</td><td>' + spark(p.t, 128, 24) + '</td><td class="stack">' + stackHtml(p.as, p.ak) + '</td><td class="stack">' + stackHtml(p.fs, p.fk) + '</td></tr>';
    });
    el('pairs').innerHTML = s;
    el('pairs-count').textContent = Math.min(shown, list.length) + ' of ' + list.length + ' pairs' + (filter ? ' matching' : '');
    el('more').style.display = list.length > shown ? '' : 'none';
    el('pairs').querySelectorAll('th').forEach(th => th.onclick = () => { const k = th.dataset.key; if (!k) return; if (k === sortKey) desc = !desc; else { sortKey = k; desc = k === 'n' || k === 'b' || k === 'r'; } draw(); });
  }
  el('filter').oninput = e => { filter = e.target.value; shown = PAGE; draw(); };
  el('more').onclick = () => { shown += PAGE; draw(); };
  draw();
}
function asymmetry(run) {
  const rows = run.asym.slice(0, 40);
  if (!rows.length) { el('asymmetry').innerHTML = '<p class="muted">every role frees what it allocates, per size class</p>'; return; }
  const max = Math.max(1, ...rows.map(r => Math.abs(r[4]))), w = 360, rh = 18, lw = 260;
  let s = '<svg id="asymmetry-chart" width="' + (lw + 2 * w + 120) + '" height="' + (rows.length * rh + 24) + '">';
  s += '<line x1="' + (lw + w) + '" y1="0" x2="' + (lw + w) + '" y2="' + (rows.length * rh + 4) + '" stroke="#999"/>';
  rows.forEach((r, i) => {
    const y = i * rh + 2, len = Math.abs(r[4]) / max * w, drains = r[4] > 0;
    s += '<text x="0" y="' + (y + 13) + '" font-size="12">' + esc(r[0]) + ' \u00b7 ' + esc(r[1]) + '</text>';
    s += '<rect class="' + (drains ? 'bar-a' : 'bar-f') + '" x="' + (drains ? lw + w : lw + w - len).toFixed(1) + '" y="' + y + '" width="' + Math.max(1, len).toFixed(1) + '" height="' + (rh - 4) + '"><title>' + fmt(r[2]) + ' allocs, ' + fmt(r[3]) + ' frees</title></rect>';
    s += '<text x="' + (lw + 2 * w + 8) + '" y="' + (y + 13) + '" font-size="12">' + (drains ? '+' : '') + fmt(r[4]) + ' ' + (drains ? 'drains' : 'overflows') + '</text>';
  });
  el('asymmetry').innerHTML = s + '</svg><p class="muted">allocations minus frees per role and size class: a role that allocates more than it frees drains its thread cache (fetches from the central list, red, right); one that frees more overflows it (releases to it, blue, left).</p>';
}
function timelines(run) {
  const top = run.pairs.slice(0, 12), span = run.bucket_ns * 64 / 1e9;
  if (!top.length) { el('timelines').innerHTML = ''; return; }
  el('timelines').innerHTML = '<p class="muted">cross-thread frees per ' + (run.bucket_ns / 1e6).toFixed(run.bucket_ns < 1e7 ? 2 : 0) + ' ms since each trace began (64 buckets, ' + span.toFixed(span < 10 ? 2 : 0) + ' s): start-up and shutdown pairs have their frees at the ends, per-request pairs all along.</p><table>' +
    top.map((p, i) => '<tr><td>#' + (i + 1) + '</td><td class="l">' + esc(p.a) + ' \u2192 ' + esc(p.f) + '<br><span class="muted">' + esc(p.ak.split(' <- ')[0]) + '</span></td><td>' + spark(p.t, 520, 36) + '</td></tr>').join('') + '</table>';
}
function central(run) {
  if (!run.central.length) { el('central-section').style.display = 'none'; return; }
  el('central').innerHTML = '<tr><th class="l">role</th><th>fetches</th><th>releases</th></tr>' + run.central.map(r => '<tr><td class="l">' + esc(r[0]) + '</td><td>' + fmt(r[1]) + '</td><td>' + fmt(r[2]) + '</td></tr>').join('');
}
function diffTables() {
  const groups = {gone: [], 'new': [], grown: [], shrunk: [], unchanged: [], bounded: []};
  M.rows.forEach(r => { if (groups[r.s]) groups[r.s].push(r); });
  const unit = M.per_operation ? '/op' : '/1000';
  const num = (x, d) => Number(x).toFixed(d);
  el('diff').innerHTML = Object.keys(groups).filter(g => groups[g].length).map(g => {
    const bounded = g === 'bounded';
    const head = bounded ? '<tr><th class="l">pair</th><th>before</th><th>after</th></tr>'
      : '<tr><th class="l">pair</th><th>before ' + unit + '</th><th>after ' + unit + '</th><th>before</th><th>after</th></tr>';
    return '<section class="panel ' + g + '"><h3>' + g + (bounded ? ': one-off pairs, counts only' : ': per-call pairs') + ' (' + groups[g].length + ')</h3><table class="diff">' + head +
      groups[g].map(r => '<tr class="diff-row"><td class="l">' + esc(r.a) + ' \u2192 ' + esc(r.f) + '<div class="stack">' + esc(r.ak) + '\n' + esc(r.fk) + '</div></td>' +
        (bounded ? '<td>' + fmt(r.bc) + '</td><td>' + fmt(r.ac) + '</td>'
                 : '<td>' + num(r.br, M.per_operation ? 3 : 2) + '</td><td>' + num(r.ar, M.per_operation ? 3 : 2) + '</td><td>' + fmt(r.bs) + '</td><td>' + fmt(r.as) + '</td>') +
        '</tr>').join('') + '</table></section>';
  }).join('');
}
const started = performance.now();
try {
  if (M.kind === 'report') {
    summary(M.run, 'summary'); heatmap(M.run, 'heatmap'); pairsTable(M.run); asymmetry(M.run); timelines(M.run); central(M.run);
  } else {
    summary(M.before, 'summary-before'); summary(M.after, 'summary-after'); diffTables();
    heatmap(M.before, 'heatmap-before'); heatmap(M.after, 'heatmap-after');
  }
  document.body.dataset.renderMs = String(Math.round(performance.now() - started));
  // Panels whose content is wider than they are (a test checks for none).
  document.body.dataset.overflow = String([...document.querySelectorAll('.panel')]
    .filter(p => p.scrollWidth > p.clientWidth + 1).length);
  document.body.dataset.ready = '1';
} catch (e) {
  document.body.dataset.error = String(e);
  throw e;
}
)JS";

std::string Page(const std::string& title, const std::string& body, const std::string& model) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>{}</title>\n"
      "<style>{}</style></head>\n<body>\n{}\n"
      "<script type=\"application/json\" id=\"model\">{}</script>\n<script>{}</script>\n"
      "</body></html>\n",
      title, kStyle, body, ScriptSafe(model), kScript);
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

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
  row("cross-thread frees", a.FreeCount(c.cross_thread));
  row("same-thread frees", a.FreeCount(c.paired - c.cross_thread));
  row("live at exit", a.AllocCount(c.live_at_exit));
  if (a.windowed || a.recording_windows) {
    row("freed in the window, allocated before it", a.Count(c.before_window));
    row("live at window end", a.Count(c.live_at_window_end));
  }
  row("unknown frees", a.Count(c.unknown_frees));
  row("double frees", a.Count(c.double_frees));
  size_t shown = std::min(a.pairs.size(), kSampledPairRows);
  for (size_t i = 0; i < shown; ++i) {
    const CrossPair& p = a.pairs[i];
    Estimate rate = a.Rate(p.count);
    rows += fmt::format(
        "<tr><td class=\"l\">#{} {} &rarr; {}<br><span class=\"muted\">{}</span></td>{}"
        "<td>{:.1f} ({:.1f} .. {:.1f}) per 1000 allocs</td></tr>",
        i + 1, HtmlEscape(p.alloc_role), HtmlEscape(p.free_role), HtmlEscape(p.alloc_site.key),
        EstimateCells(a.Count(p.count)), rate.value, rate.low, rate.high);
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
                                      "the estimates are low by about {:.2f}%.",
                                      Commas(c.samples_dropped),
                                      100.0 * Share(c.samples_dropped,
                                                    c.samples_dropped + c.allocations))
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
  const PairingCounts& c = a.counts;
  std::string windows;
  for (const TraceInfo& t : a.traces) {
    if (!t.recording_windows) continue;
    std::string edges;
    for (const WindowEdge& e : t.windows) {
      edges += fmt::format("{}{} at {:.3f} s", edges.empty() ? "" : ", ", e.open ? "open" : "closed",
                           e.timestamp_ns / 1e9);
    }
    windows += fmt::format("<br>{}: recording {}{}", HtmlEscape(t.path),
                           t.starts_closed ? "started closed" : "started open",
                           edges.empty() ? "" : "; " + edges);
  }
  std::string analysis_window =
      a.windowed ? fmt::format("<br>analysis window {:.3f} s .. {} of each trace", a.window_from_ns / 1e9,
                               a.window_to_ns == ~uint64_t{0}
                                   ? std::string("the end")
                                   : fmt::format("{:.3f} s", a.window_to_ns / 1e9))
                 : "";
  return fmt::format(
      "<div id=\"windows\"><h2>Windows</h2><p>before the window: {}{} (freed in the window, "
      "allocated before it)<br>live at window end: {}{} (still live when the window ended: not "
      "leaks){}{}</p></div>\n",
      a.sampled() ? "~" : "", Commas(a.Scaled(c.before_window)), a.sampled() ? "~" : "",
      Commas(a.Scaled(c.live_at_window_end)), analysis_window, windows);
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
  return Page(title, body, "{\"kind\":\"report\",\"run\":" + RunJson(a) + "}");
}

std::string RenderDiffHtml(const Analysis& before, const Analysis& after, const DiffResult& d) {
  std::string rows = "[";
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const DiffRow& r = d.rows[i];
    const CrossPair& p = r.pair();
    rows += fmt::format(
        "{}{{\"s\":\"{}\",\"a\":{},\"f\":{},\"ak\":{},\"fk\":{},\"br\":{:.6g},\"ar\":{:.6g},"
        "\"bs\":{},\"as\":{},\"bc\":{},\"ac\":{}}}",
        i ? "," : "", DiffStatusName(r.status), JsonString(p.alloc_role), JsonString(p.free_role),
        JsonString(p.alloc_site.key), JsonString(p.free_site.key), r.before_rate, r.after_rate,
        before.Scaled(r.before_steady), after.Scaled(r.after_steady),
        before.Scaled(r.before ? r.before->count : 0), after.Scaled(r.after ? r.after->count : 0));
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
                  RunJson(before) + ",\"after\":" + RunJson(after) + ",\"rows\":" + rows + "}");
}

}  // namespace crossfree::analyzer::render
