// SPDX-License-Identifier: Apache-2.0
// Simulate: a run's simulation (see simulate.h): each trace replayed
// (replay.h), the threads' counts aggregated by group, the busiest transfer
// sites ranked (site_ranking.h).
#include "analyzer/simulate/simulate.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <memory>

#include "analyzer/model/analysis.h"
#include "analyzer/pairing/add_counts.h"
#include "analyzer/simulate/cost_replay.h"
#include "analyzer/simulate/replay.h"
#include "analyzer/simulate/site_ranking.h"

namespace crossfree::analyzer::simulate {

using analyzer::ProcessTrace;
using analyzer::TraceSet;

void TransferCounts::Add(const TransferCounts& o) {
  using C = TransferCounts;
  AddCounts(*this, o, &C::allocations, &C::frees, &C::large_allocations, &C::fetch_calls,
            &C::fetched_objects, &C::short_fetches, &C::release_calls, &C::released_objects,
            &C::release_calls_by_cause, &C::direct_central_frees);
}

namespace {

// One replayed trace's line of the result and its share of the totals
// (either replay: both give events, unknown frees and in-place reallocs).
template <typename Replay>
void AddTraceFigures(const ProcessTrace& trace, const Replay& replay, SimulationResult* out) {
  SimTraceInfo info;
  info.path = trace.path;
  info.pid = trace.pid();
  info.threads = trace.ThreadsWithEvents();
  info.events = replay.events;
  info.truncated = trace.truncated;
  out->traces.push_back(info);
  out->unknown_frees += replay.unknown_frees;
  out->inplace_reallocs += replay.inplace_reallocs;
}

// A symbolic pair being merged from raw ones.
struct MergedPair {
  CostPairResult result;
  analyzer::Lifetime lifetime;
  CpuCounts cpu;
};

// The cost replay of every trace, merged by group, class and symbolic pair.
bool SimulateCosts(TraceSet& set, const SimulateOptions& options,
                   analyzer::SymbolResolver* resolver, SimulationResult* out,
                   std::string* error) {
  CostSimulation cost;
  cost.settings_source = options.settings_source;
  const ModelSettings& model = options.model;
  // A model built only to check the settings (an error names the setting,
  // not a trace) and to ask its class sizes.
  struct NullSink : CostSink {
    void OnCost(CostKind, int, uint64_t, uint64_t) override {}
  } null_sink;
  auto probe = MakeAllocatorModel(*options.allocator, model, &null_sink, error);
  if (!probe) return false;
  auto builder = analyzer::SiteBuilder::Create(options.sites, resolver, error);
  if (!builder) return false;
  std::map<std::string, CostGroupResult> groups;
  std::map<int, CostClassResult> classes;
  std::map<std::pair<bool, std::string>, MergedPair> pairs;  // (cross, key)
  for (size_t t = 0; t < set.traces().size(); ++t) {
    ProcessTrace& trace = *set.traces()[t];
    CostReplayResult replay;
    if (!ReplayCosts(trace, *options.allocator, model, &replay, error)) {
      *error = fmt::format("{}: {}", trace.path, *error);
      return false;
    }
    cost.allocator = replay.allocator;
    cost.settings = replay.settings;
    cost.validation = replay.validation;
    AddTraceFigures(trace, replay, out);
    cost.live_at_end.Add(replay.live_at_end);
    analyzer::AssignEntryRoles(trace, t, replay.entry_stack, *resolver);
    std::vector<std::string> labels;
    for (size_t s = 0; s < trace.streams.size(); ++s) {
      const StreamCost& st = replay.streams[s];
      labels.push_back(analyzer::ThreadLabel(trace, trace.streams[s].tid, options.by));
      CostGroupResult& g = groups[labels.back()];
      g.name = labels.back();
      g.threads += 1;
      g.allocations += st.allocations;
      g.frees += st.frees;
      g.cost.Add(st.cost);
      g.thread_exit.Add(st.thread_exit);
      cost.totals.Add(st.cost);
      cost.thread_exit.Add(st.thread_exit);
      for (const auto& [cl, c] : st.by_class) classes[cl].cost.Add(c);
    }
    for (const auto& [k, p] : replay.pairs) {
      bool cross = k.alloc_stream != k.free_stream;
      if (!cross && p.cost.Total() == 0) continue;
      const analyzer::Site& alloc_site = builder->Get(t, trace, k.alloc_stack);
      const analyzer::Site& free_site = builder->Get(t, trace, k.free_stack);
      const std::string& ag = labels[k.alloc_stream];
      const std::string& fg = labels[k.free_stream];
      std::string key = analyzer::PairKeyText(ag, fg, alloc_site.key, free_site.key);
      MergedPair& m = pairs[{cross, key}];
      if (m.result.objects == 0 && m.result.key.empty()) {
        m.result.key = key;
        m.result.alloc_group = ag;
        m.result.free_group = fg;
        m.result.alloc_site = alloc_site;
        m.result.free_site = free_site;
        m.result.cross_thread = cross;
      }
      m.result.objects += p.objects;
      m.result.bytes += p.bytes;
      m.result.cost.Add(p.cost);
      m.cpu.Add(p.cpu);
      m.lifetime.Merge(p.lifetime);
      if (cross) cost.cross_thread.Add(p.cost);
    }
  }
  {
    const auto& m = probe;
    if (cost.allocator.empty()) {
      cost.allocator = m->Allocator();
      cost.settings = m->Settings();
      cost.validation = m->validation();
    }
    for (auto& [cl, c] : classes) {
      c.cl = cl;
      c.bytes = m->ClassSize(cl);
      cost.classes.push_back(c);
    }
  }
  for (auto& [name, g] : groups) {
    cost.threads += g.threads;
    cost.allocations += g.allocations;
    cost.frees += g.frees;
    cost.groups.push_back(std::move(g));
  }
  std::stable_sort(cost.groups.begin(), cost.groups.end(),
                   [](const CostGroupResult& a, const CostGroupResult& b) {
                     return a.cost.Total() > b.cost.Total();
                   });
  for (auto& [k, m] : pairs) {
    m.result.lifetime = m.lifetime.Summary();
    m.result.cpu = analyzer::CpuFiguresOf(m.cpu.same, m.cpu.other, m.cpu.unknown);
    if (m.result.cpu.known > 0) cost.cpus_known = true;
    if (k.first) cost.cross_pairs[k.second] = m.result;
    cost.pairs.push_back(std::move(m.result));
  }
  cost.pair_count = cost.pairs.size();
  std::stable_sort(cost.pairs.begin(), cost.pairs.end(),
                   [](const CostPairResult& a, const CostPairResult& b) {
                     if (a.cost.Total() != b.cost.Total()) return a.cost.Total() > b.cost.Total();
                     if (a.objects != b.objects) return a.objects > b.objects;
                     return a.key < b.key;
                   });
  if (options.top != 0 && cost.pairs.size() > options.top) cost.pairs.resize(options.top);
  for (const std::string& w : resolver->Warnings()) out->warnings.push_back(w);
  out->cost = std::move(cost);
  return true;
}

}  // namespace

bool Simulate(TraceSet& set, const SimulateOptions& options, analyzer::SymbolResolver* resolver,
              SimulationResult* out, std::string* error) {
  *out = SimulationResult();
  out->warnings = set.warnings();
  // The model replays every allocation and free of every thread cache: a
  // sample of them would drive it into other states, and no scaling fixes
  // that.
  for (const auto& trace : set.traces()) {
    uint32_t period = trace->header.fields.sample_period;
    if (period > 1) {
      *error = fmt::format(
          "{}: sampled trace (1 allocation in {} traced): the allocator models (simulate, "
          "report --allocator) need every event; record the run without sampling",
          trace->path, period);
      return false;
    }
  }
  std::unique_ptr<analyzer::SymbolResolver> default_resolver;
  if (!resolver) {
    default_resolver = analyzer::MakeDefaultResolver(set);
    resolver = default_resolver.get();
  }
  if (!options.allocator->simulates_transfers || options.pairs) {
    return SimulateCosts(set, options, resolver, out, error);
  }
  std::map<std::string, GroupResult> groups;
  std::vector<RawSite> fetch_raw, release_raw;
  for (size_t t = 0; t < set.traces().size(); ++t) {
    ProcessTrace& trace = *set.traces()[t];
    ReplayResult replay;
    if (!ReplayTrace(trace, options, &replay, error)) return false;
    AddTraceFigures(trace, replay, out);
    analyzer::AssignEntryRoles(trace, t, replay.entry_stack, *resolver);
    for (size_t s = 0; s < trace.streams.size(); ++s) {
      const ThreadTransfers& st = replay.threads[s];
      std::string name = analyzer::ThreadLabel(trace, trace.streams[s].tid, options.by);
      GroupResult& g = groups[name];
      g.name = name;
      g.threads += 1;
      g.counts.Add(st.counts);
      for (const auto& [cl, c] : st.by_class) g.by_class[cl].Add(c);
      out->totals.Add(st.counts);
    }
    for (const auto& [k, v] : replay.fetch_sites) fetch_raw.push_back({t, k, v});
    for (const auto& [k, v] : replay.release_sites) release_raw.push_back({t, k, v});
  }
  const SizeMap map(options.model.gperftools.transfer_num_objects);
  for (auto& [name, g] : groups) {
    out->threads += g.threads;
    for (const auto& [cl, c] : g.by_class) {
      out->class_bytes[cl] = cl < map.num_classes() ? map.ClassSize(cl) : 0;
    }
    out->groups.push_back(std::move(g));
  }
  std::stable_sort(out->groups.begin(), out->groups.end(),
                   [](const GroupResult& a, const GroupResult& b) {
                     return a.counts.fetch_calls + a.counts.release_calls >
                            b.counts.fetch_calls + b.counts.release_calls;
                   });

  auto builder = analyzer::SiteBuilder::Create(options.sites, resolver, error);
  if (!builder) return false;
  out->fetch_sites = TopSites(std::move(fetch_raw), set, options, *builder);
  out->release_sites = TopSites(std::move(release_raw), set, options, *builder);
  for (const std::string& w : resolver->Warnings()) out->warnings.push_back(w);
  return true;
}

bool SimulateFiles(const std::vector<std::string>& paths, const SimulateOptions& options,
                   SimulationResult* out, std::string* error) {
  TraceSet set;
  for (const std::string& path : paths) {
    if (!set.Add(path, error)) return false;
  }
  return Simulate(set, options, nullptr, out, error);
}


}  // namespace crossfree::analyzer::simulate
