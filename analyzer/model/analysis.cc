// SPDX-License-Identifier: Apache-2.0
// Analyzer: from pairing results to the symbolic model (see analysis.h).
#include "analyzer/model/analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace crossfree::analyzer {

PairFigures Analysis::Figures(const CrossPair& p) const {
  PairFigures f;
  f.count = FreeCount(p.count.sampled);  // a pair's frees are a part of the run's
  f.bytes = Bytes(p.count.sampled, p.bytes.sampled);
  f.rate = Rate(p.count.sampled);
  f.frees = Scaled(p.count.sampled);
  f.total_bytes = Scaled(p.bytes.sampled);
  f.per_thousand = PerThousand(p.count.sampled);
  f.share = counts.cross_thread ? static_cast<double>(p.count.sampled) /
                                      static_cast<double>(counts.cross_thread)
                                : 0.0;
  f.steady = Scaled(p.steady().sampled);
  f.thread_bounded = Scaled(p.thread_bounded.sampled);
  f.edge_bounded = Scaled(p.edge_bounded.sampled);
  f.bounded = Scaled(p.bounded().sampled);
  f.steady_per_unit = PerSteadyUnit(p.steady().sampled);
  for (auto [cls, n] : p.size_classes) {
    f.size_classes[cls] = Scaled(n);
    f.size_class_shares[cls] = Share(n, p.count.sampled);
  }
  f.timeline.reserve(p.timeline.size());
  for (uint64_t n : p.timeline) f.timeline.push_back(Scaled(n));
  return f;
}

LoneFigures Analysis::Figures(const LoneSite& s) const {
  return {Count(s.count.sampled), Bytes(s.count.sampled, s.bytes.sampled), Scaled(s.count.sampled), Scaled(s.bytes.sampled)};
}

AsymmetryFigures Analysis::Figures(const AsymmetryRow& r) const {
  return {Count(r.allocs), Count(r.frees), Net(r), Scaled(r.allocs), Scaled(r.frees)};
}

RunFigures Analysis::Totals() const {
  const PairingCounts& c = counts;
  auto total = [this](Estimate e, uint64_t n) { return TotalFigure{e, Scaled(n)}; };
  uint64_t same = c.paired - c.cross_thread;
  RunFigures f;
  f.cross_thread = total(FreeCount(c.cross_thread), c.cross_thread);
  f.cross_thread_unbounded = total(Count(c.cross_thread), c.cross_thread);
  f.cross_thread_frees = static_cast<uint64_t>(f.cross_thread.estimate.value);
  f.cross_thread_share = Share(f.cross_thread_frees, Frees());
  f.cross_thread_rate = Rate(c.cross_thread);
  f.cross_thread_per_thousand = PerThousand(c.cross_thread);
  f.same_thread = total(FreeCount(same), same);
  f.live_at_exit = total(AllocCount(c.live_at_exit), c.live_at_exit);
  f.live_bytes = total(Bytes(c.live_at_exit, c.live_bytes), c.live_bytes);
  f.unknown_frees = total(Count(c.unknown_frees), c.unknown_frees);
  f.unknown_frees_bounded = FreeCount(c.unknown_frees);
  f.double_frees = total(Count(c.double_frees), c.double_frees);
  f.double_frees_bounded = FreeCount(c.double_frees);
  f.forked_frees = total(FreeCount(c.forked_frees), c.forked_frees);
  f.alloc_over_live = total(Count(c.alloc_over_live), c.alloc_over_live);
  f.before_window = total(Count(c.before_window), c.before_window);
  f.live_at_window_end = total(Count(c.live_at_window_end), c.live_at_window_end);
  f.live_window_end_bytes = Scaled(c.live_window_end_bytes);
  f.samples_dropped_share = Share(c.samples_dropped, c.samples_dropped + c.allocations);
  uint64_t steady = 0;
  for (const CrossPair& p : pairs) steady += p.steady().sampled;
  f.steady = total(Count(steady), steady);
  f.bounded = total(Count(c.cross_thread - steady), c.cross_thread - steady);
  f.steady_rate = Rate(steady).Scaled(1.0 / SteadyShare());
  f.steady_per_unit = PerSteadyUnit(steady);
  return f;
}

std::string PairKeyText(const std::string& alloc_role, const std::string& free_role,
                        const std::string& alloc_site, const std::string& free_site) {
  return fmt::format("{} -> {} | alloc: {} | free: {}", alloc_role, free_role, alloc_site,
                     free_site);
}

const char* LifecycleName(Lifecycle l) {
  return l == Lifecycle::kPerCall ? "per-call" : "bounded";
}

std::string CrossPair::LifecycleEvidence(bool sampled) const {
  const char* objects = sampled ? "sampled objects" : "objects";
  if (lifecycle() == Lifecycle::kPerCall) {
    return fmt::format("{} of {} {} in the steady state", GroupedCount(steady().sampled),
                       GroupedCount(count.sampled), objects);
  }
  std::string out;
  auto add = [&out, sampled](uint64_t n, const char* what) {
    if (n == 0) return;
    if (!out.empty()) out += "; ";
    out += fmt::format("{}{} {}", GroupedCount(n), sampled ? " sampled" : "", what);
  };
  add(thread_bounded.sampled, "freed after the allocating thread exited or allocated before the freeing "
                      "thread's first event");
  add(edge_bounded.sampled, "allocated and freed at the run's edges (start-up, shutdown)");
  add(steady().sampled, "in the steady state");
  return out;
}

namespace {

// Lone (stack, thread) counts of all traces -> the top sites, symbolized.
void TopLoneSites(TraceSet& set, const std::vector<PairingResult>& results,
                  FlatMap<StackThread, CountBytes, StackThreadHash> PairingResult::*member,
                  const AnalysisOptions& options, SiteBuilder& sites,
                  std::vector<LoneSite>* out) {
  struct Raw {
    size_t trace;
    StackThread key;
    CountBytes value;
  };
  std::vector<Raw> raw;
  for (size_t t = 0; t < results.size(); ++t) {
    (results[t].*member).ForEach([&](const StackThread& k, const CountBytes& v) {
      raw.push_back({t, k, v});
    });
  }
  // Symbolize a few more than shown, since merging by key can reorder them.
  size_t keep = std::min(raw.size(), options.lone_sites * 4);
  std::partial_sort(raw.begin(), raw.begin() + keep, raw.end(), [](const Raw& a, const Raw& b) {
    return std::tie(b.value.count, a.trace, a.key.stack, a.key.thread) <
           std::tie(a.value.count, b.trace, b.key.stack, b.key.thread);
  });
  std::map<std::pair<std::string, std::string>, LoneSite> merged;
  for (size_t i = 0; i < keep; ++i) {
    const ProcessTrace& trace = *set.traces()[raw[i].trace];
    std::string role = ThreadLabel(trace, trace.stream(raw[i].key.thread).tid, options.by);
    const Site& site = sites.Get(raw[i].trace, trace, raw[i].key.stack);
    LoneSite& s = merged[{role, site.key}];
    if (s.count.sampled == 0) {
      s.role = role;
      s.site = site;
    }
    s.count += SampledCount{raw[i].value.count};
    s.bytes += SampledCount{raw[i].value.bytes};
  }
  for (auto& [k, v] : merged) out->push_back(std::move(v));
  std::sort(out->begin(), out->end(), [](const LoneSite& a, const LoneSite& b) {
    if (a.count != b.count) return a.count > b.count;
    return std::tie(a.role, a.site.key) < std::tie(b.role, b.site.key);
  });
  if (out->size() > options.lone_sites) out->resize(options.lone_sites);
}

uint32_t PeriodOf(const ProcessTrace& trace) {
  return std::max<uint32_t>(trace.header.fields.sample_period, 1);
}

std::string PeriodText(uint32_t period) {
  return period > 1 ? fmt::format("sampled 1/{}", period) : "not sampled";
}

// One analysis has one sample period: the estimates scale every count by
// it. And the exact totals of a sampled trace come per chunk, not per time,
// so --from/--to cannot cut one.
bool CheckSampling(const TraceSet& set, const AnalysisOptions& options, std::string* error) {
  const auto& traces = set.traces();
  for (size_t t = 0; t < traces.size(); ++t) {
    uint32_t period = PeriodOf(*traces[t]);
    if (period > 1 && options.pairing.windowed()) {
      *error = fmt::format(
          "{}: --from/--to cannot cut a sampled trace ({}): its exact allocation and free "
          "totals come per chunk, not per time; record the window instead (crossfree record "
          "--delay/--duration)",
          traces[t]->path, PeriodText(period));
      return false;
    }
    if (t > 0 && period != PeriodOf(*traces[0])) {
      uint32_t first = PeriodOf(*traces[0]);
      *error = fmt::format(
          "cannot analyse {} together: {} is {}, {} is {} (estimates need one sample period)",
          first > 1 && period > 1 ? "traces sampled at different periods"
                                  : "sampled and unsampled traces",
          traces[0]->path, PeriodText(first), traces[t]->path, PeriodText(period));
      return false;
    }
  }
  return true;
}

// What a sampled run's reader must know: samples the tracer dropped (the
// estimates are low by about their share), missing or inconsistent totals,
// and pairs of blocks followed through realloc (their estimates are high).
void SamplingWarnings(const Analysis& a, const std::vector<PairingResult>& results,
                      std::vector<std::string>* warnings) {
  if (!a.sampled()) return;
  for (size_t t = 0; t < results.size(); ++t) {
    const PairingCounts& c = results[t].counts;
    const std::string& path = a.traces[t].path;
    if (c.counts_records == 0 && c.events > 0) {
      warnings->push_back(fmt::format(
          "{}: sampled 1/{} but has no counts records: the allocation and free totals, and the "
          "rates per 1000 allocations, are estimated too",
          path, a.sample_period));
    } else if (c.total_allocs < c.allocations || c.total_frees < c.frees) {
      warnings->push_back(fmt::format(
          "{}: its counts records claim fewer allocations or frees ({} / {}) than were sampled "
          "({} / {}): the totals used are the sampled ones",
          path, c.total_allocs, c.total_frees, c.allocations, c.frees));
    }
    if (c.samples_dropped > 0) {
      double share = static_cast<double>(c.samples_dropped) /
                     static_cast<double>(c.samples_dropped + c.allocations);
      warnings->push_back(fmt::format(
          "{}: the tracer dropped {} of the {} allocations its sampler chose ({:.2f}%: its table "
          "of sampled objects was full): every estimate is low by about that share",
          path, c.samples_dropped, c.samples_dropped + c.allocations, 100.0 * share));
    }
  }
}

// Analysis::site_objects: every paired object (either thread) allocated at
// a stack whose innermost frame is that of some cross-thread pair's
// allocation stack, by the site key that stack makes. Only those stacks are
// symbolized, not every stack of the trace.
void CountSiteObjects(TraceSet& set, const std::vector<PairingResult>& results, SiteBuilder& sites,
                      Analysis* out) {
  std::set<std::string> cross_sites;
  for (const CrossPair& p : out->pairs) cross_sites.insert(p.alloc_site.key);
  for (size_t t = 0; t < results.size(); ++t) {
    const ProcessTrace& trace = *set.traces()[t];
    auto innermost = [&trace](uint32_t stack) -> uint64_t {
      auto it = trace.stacks.find(stack);
      return it == trace.stacks.end() || it->second.empty() ? 0 : it->second.front();
    };
    std::unordered_map<uint32_t, uint64_t> by_stack;  // alloc stack -> paired objects
    std::unordered_set<uint64_t> cross_call_sites;    // innermost frames of cross pairs
    results[t].pairs.ForEach([&](const PairKey& k, const PairCounts& v) {
      by_stack[k.alloc_stack] += v.count;
      if (k.alloc_thread != k.free_thread) cross_call_sites.insert(innermost(k.alloc_stack));
    });
    for (const auto& [stack, count] : by_stack) {
      uint64_t frame = innermost(stack);
      if (frame == 0 || !cross_call_sites.count(frame)) continue;
      const Site& site = sites.Get(t, trace, stack);
      if (cross_sites.count(site.key)) out->site_objects[site.key] += count;
    }
  }
}

// Analyze's steps, in its order.

// What the report says of one trace and its pairing.
TraceInfo TraceInfoOf(const ProcessTrace& trace, const PairingResult& result) {
  TraceInfo info;
  info.path = trace.path;
  info.exe = trace.header.exe_path;
  info.pid = trace.header.fields.pid;
  info.ppid = trace.header.fields.ppid;
  info.chunks = trace.chunk_count;
  info.events = result.counts.events;
  info.threads = trace.ThreadsWithEvents();
  info.truncated = trace.truncated;
  info.end = trace.end;
  info.taken_end = trace.taken_end;
  info.losses = trace.losses;
  info.truncated_offset = trace.truncated_offset;
  info.file_bytes = trace.reader->file_size();
  info.sample_period = PeriodOf(trace);
  info.starts_closed = result.starts_closed;
  info.recording_windows = info.starts_closed || !result.windows.empty();
  uint64_t start = trace.header.fields.start_monotonic_ns;
  for (WindowEdge e : result.windows) {
    e.timestamp_ns = e.timestamp_ns > start ? e.timestamp_ns - start : 0;
    info.windows.push_back(e);
  }
  return info;
}

// Pairs every trace's frees with their allocations into (*results)[t],
// and adds each trace's counts, description and steady state to *out.
bool PairTraces(TraceSet& set, const AnalysisOptions& options,
                std::vector<PairingResult>* results, Analysis* out, std::string* error) {
  for (size_t t = 0; t < set.traces().size(); ++t) {
    ProcessTrace& trace = *set.traces()[t];
    PairingResult& result = (*results)[t];
    if (!PairTrace(trace, options.pairing, &result, error)) return false;
    out->counts.Add(result.counts);
    TraceInfo info = TraceInfoOf(trace, result);
    out->threads += info.threads;
    uint64_t start = trace.header.fields.start_monotonic_ns;
    out->recording_windows |= info.recording_windows;
    out->steady_states.push_back(
        {result.steady_from_ns > start ? result.steady_from_ns - start : 0,
         result.steady_to_ns > start ? result.steady_to_ns - start : 0});
    out->traces.push_back(std::move(info));
  }
  return true;
}

// Timelines of all traces at one width: the coarsest any trace needed.
void AlignTimelines(const AnalysisOptions& options, std::vector<PairingResult>& results,
                    Analysis* out) {
  int shift = 0;
  for (PairingResult& r : results) shift = std::max(shift, r.timeline_shift);
  for (PairingResult& r : results) {
    for (; r.timeline_shift < shift; ++r.timeline_shift) {
      r.timelines.ForEach([](const PairKey&, Timeline& tl) { tl.Fold(); });
    }
  }
  out->timeline_bucket_ns = uint64_t{1} << shift;
  out->windowed = options.pairing.windowed();
  out->window_from_ns = options.pairing.window_from_ns;
  out->window_to_ns = options.pairing.window_to_ns;
}

// Cross-thread pairs: their stacks symbolized and merged by symbolic key
// (roles and sites) into out->pairs, by count descending.
void MergeCrossPairs(TraceSet& set, const std::vector<PairingResult>& results,
                     const AnalysisOptions& options, SiteBuilder& sites, Analysis* out) {
  std::unordered_map<std::string, size_t> pair_index;
  for (size_t t = 0; t < results.size(); ++t) {
    const ProcessTrace& trace = *set.traces()[t];
    std::vector<std::string> labels;
    for (const ThreadStream& s : trace.streams) labels.push_back(ThreadLabel(trace, s.tid, options.by));
    results[t].pairs.ForEach([&](const PairKey& k, const PairCounts& v) {
      if (k.alloc_thread == k.free_thread) return;
      const Site& alloc_site = sites.Get(t, trace, k.alloc_stack);
      const Site& free_site = sites.Get(t, trace, k.free_stack);
      const std::string& ar = labels[k.alloc_thread.value];
      const std::string& fr = labels[k.free_thread.value];
      std::string key = PairKeyText(ar, fr, alloc_site.key, free_site.key);
      auto [it, inserted] = pair_index.try_emplace(key, out->pairs.size());
      if (inserted) {
        CrossPair p;
        p.key = key;
        p.alloc_role = ar;
        p.free_role = fr;
        p.alloc_site = alloc_site;
        p.free_site = free_site;
        out->pairs.push_back(std::move(p));
      }
      CrossPair& p = out->pairs[it->second];
      p.count += SampledCount{v.count};
      p.bytes += SampledCount{v.bytes};
      p.thread_bounded += SampledCount{v.thread_bounded};
      p.edge_bounded += SampledCount{v.edge_bounded};
      p.size_classes[static_cast<int>(k.size_class)] += v.count;
      if (const Timeline* tl = results[t].timelines.Find(k)) {
        p.timeline.resize(kTimelineBuckets);
        for (int b = 0; b < kTimelineBuckets; ++b) p.timeline[b] += tl->buckets[b];
      }
    });
  }
  std::sort(out->pairs.begin(), out->pairs.end(), [](const CrossPair& a, const CrossPair& b) {
    if (a.count != b.count) return a.count > b.count;
    return a.key < b.key;
  });
}

// Asymmetry per label and size class, over all traces, with the
// cross-thread site behind each, into out->asymmetry (by net descending).
void CountAsymmetry(TraceSet& set, const std::vector<PairingResult>& results,
                    const AnalysisOptions& options, Analysis* out) {
  std::map<std::pair<std::string, int>, AsymmetryRow> rows;
  for (size_t t = 0; t < results.size(); ++t) {
    const ProcessTrace& trace = *set.traces()[t];
    std::unordered_map<uint32_t, std::string> labels;  // by StreamIndex::value
    results[t].by_class.ForEach([&](const ThreadClass& k, const AllocsFrees& v) {
      if (v.allocs == 0 && v.frees == 0) return;
      auto [it, inserted] = labels.try_emplace(k.thread.value);
      if (inserted) it->second = ThreadLabel(trace, trace.stream(k.thread).tid, options.by);
      int c = static_cast<int>(k.size_class);
      AsymmetryRow& r = rows[{it->second, c}];
      r.role = it->second;
      r.size_class = c;
      r.allocs += SampledCount{v.allocs};
      r.frees += SampledCount{v.frees};
    });
  }
  for (auto& [k, r] : rows) {
    r.net = static_cast<int64_t>(r.allocs.sampled) - static_cast<int64_t>(r.frees.sampled);
    if (r.net == 0) continue;
    // The cross-thread site behind it: for a draining role, where it
    // allocates objects others free; for an overflowing one, where it frees
    // objects others allocated.
    for (const CrossPair& p : out->pairs) {
      const std::string& role = r.net > 0 ? p.alloc_role : p.free_role;
      if (role != r.role) continue;
      auto c = p.size_classes.find(r.size_class);
      if (c == p.size_classes.end() || c->second <= r.top_site_count.sampled) continue;
      r.top_site_count = SampledCount{c->second};
      r.top_site = r.net > 0 ? p.alloc_site.key : p.free_site.key;
    }
    out->asymmetry.push_back(r);
  }
  std::sort(out->asymmetry.begin(), out->asymmetry.end(),
            [](const AsymmetryRow& a, const AsymmetryRow& b) {
              uint64_t x = a.net < 0 ? -a.net : a.net, y = b.net < 0 ? -b.net : b.net;
              if (x != y) return x > y;
              return std::tie(a.role, a.size_class) < std::tie(b.role, b.size_class);
            });
}

}  // namespace

bool Analyze(TraceSet& set, const AnalysisOptions& options, SymbolResolver* resolver,
             Analysis* out, std::string* error) {
  *out = Analysis();
  out->warnings = set.warnings();
  if (!CheckSampling(set, options, error)) return false;
  if (!set.traces().empty()) out->sample_period = PeriodOf(*set.traces()[0]);
  std::vector<PairingResult> results(set.traces().size());
  if (!PairTraces(set, options, &results, out, error)) return false;
  SamplingWarnings(*out, results, &out->warnings);

  std::unique_ptr<SymbolResolver> default_resolver;
  if (!resolver) {
    default_resolver = MakeDefaultResolver(set);
    resolver = default_resolver.get();
  }
  std::unique_ptr<SiteBuilder> sites = SiteBuilder::Create(options.sites, resolver, error);
  if (!sites) return false;
  for (size_t t = 0; t < results.size(); ++t) {
    AssignEntryRoles(*set.traces()[t], t, results[t].entry_stack, *resolver);
  }

  AlignTimelines(options, results, out);
  MergeCrossPairs(set, results, options, *sites, out);
  CountSiteObjects(set, results, *sites, out);
  CountAsymmetry(set, results, options, out);

  TopLoneSites(set, results, &PairingResult::live, options, *sites, &out->live);
  TopLoneSites(set, results, &PairingResult::live_window_end, options, *sites,
               &out->live_at_window_end);
  TopLoneSites(set, results, &PairingResult::unknown_frees, options, *sites,
               &out->unknown_frees);
  TopLoneSites(set, results, &PairingResult::double_frees, options, *sites,
               &out->double_frees);
  if (!AttributeForkFrees(set, results, *sites, options.by, &out->fork_frees, error)) {
    return false;
  }
  if (!CollectCentral(set, options.by, options.central_sites, *sites, &out->central, error)) {
    return false;
  }
  for (std::string& w : resolver->Warnings()) out->warnings.push_back(std::move(w));
  return true;
}

bool AnalyzeFiles(const std::vector<std::string>& paths, const AnalysisOptions& options,
                  Analysis* out, std::string* error, ReadProgress* progress) {
  TraceSet set;
  set.set_progress(progress);
  for (const std::string& p : paths) {
    if (!set.Add(p, error)) return false;
  }
  return Analyze(set, options, nullptr, out, error);
}

std::string GroupedCount(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace crossfree::analyzer
