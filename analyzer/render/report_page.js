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
  const rows = [['traces', run.traces.map(t => esc(t.path) + ' (pid ' + t.pid + (t.truncated ? ', truncated' : '') + (t.clean_end === false ? (t.end === 'killed' ? ', killed, its events all taken by record' : t.end === 'running' ? ', still running at record\'s end: its later events are not in the trace' : ', no clean end: the frees in its last buffers were lost, live blocks are not leaks') : '') + (t.events_dropped !== undefined ? ', incomplete: ' + t.events_dropped + ' events dropped, ' + t.chunks_damaged + ' chunks damaged' : '') + ')').join('<br>')],
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
  // report --allocator / --lifetimes: the model's cost (locks + atomics), the
  // lifetime figures and distribution, and the share of frees on the
  // allocation's CPU, after the lifecycle.
  const extra = [];
  if (run.costs) extra.push(['cost: ' + run.costs + ' (' + run.costsv + ')', 'cs']);
  if (run.lifetimes) extra.push(['lifetime min / median / p99 / max', null], ['lifetimes', null], ['same CPU', null]);
  cols.splice(7, 0, ...extra);
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
           (run.costs ? '</td><td title="' + esc(p.cd || '') + '">' + (p.cs === undefined ? '' : fmt(p.cs)) : '') +
           (run.lifetimes ? '</td><td>' + esc(p.lt || '') + '</td><td>' + (p.lh || '') + '</td><td>' + esc(p.cpu || '') : '') +
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
