// SPDX-License-Identifier: Apache-2.0
// Simulate: a run's simulation (see simulate.h): each trace replayed
// (replay.h), the threads' counts aggregated by group, the busiest transfer
// sites ranked (site_ranking.h).
#include "analyzer/simulate/simulate.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <memory>

#include "analyzer/simulate/replay.h"
#include "analyzer/simulate/site_ranking.h"

namespace crossfree::analyzer::simulate {

using analyzer::ProcessTrace;
using analyzer::TraceSet;

void TransferCounts::Add(const TransferCounts& o) {
  allocations += o.allocations;
  frees += o.frees;
  large_allocations += o.large_allocations;
  fetch_calls += o.fetch_calls;
  fetched_objects += o.fetched_objects;
  short_fetches += o.short_fetches;
  release_calls += o.release_calls;
  released_objects += o.released_objects;
  for (int i = 0; i < kReleaseCauseCount; ++i) {
    release_calls_by_cause[i] += o.release_calls_by_cause[i];
  }
  direct_central_frees += o.direct_central_frees;
}

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
          "{}: sampled trace (1 allocation in {} traced): simulate needs every event; record "
          "the run without sampling",
          trace->path, period);
      return false;
    }
  }
  std::unique_ptr<analyzer::SymbolResolver> default_resolver;
  if (!resolver) {
    default_resolver = analyzer::MakeDefaultResolver(set);
    resolver = default_resolver.get();
  }
  std::map<std::string, GroupResult> groups;
  std::vector<RawSite> fetch_raw, release_raw;
  for (size_t t = 0; t < set.traces().size(); ++t) {
    ProcessTrace& trace = *set.traces()[t];
    ReplayResult replay;
    if (!ReplayTrace(trace, options, &replay, error)) return false;
    SimTraceInfo info;
    info.path = trace.path;
    info.pid = trace.pid();
    info.threads = trace.streams.size();
    info.events = replay.events;
    info.truncated = trace.truncated;
    out->traces.push_back(info);
    out->unknown_frees += replay.unknown_frees;
    out->inplace_reallocs += replay.inplace_reallocs;
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
  for (auto& [name, g] : groups) out->groups.push_back(std::move(g));
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
