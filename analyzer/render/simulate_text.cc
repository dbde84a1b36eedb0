// SPDX-License-Identifier: Apache-2.0
// The text of `crossfree simulate`: the gperftools transfer view (groups,
// size classes, the sites that fetch and release) and the cost view of any
// allocator model (totals, groups, pairs with lifetimes and CPUs).
#include <fmt/core.h>

#include <string>

#include "analyzer/render/output.h"
#include "analyzer/render/text.h"

namespace crossfree::analyzer::simulate {

using analyzer::render::Commas;
using analyzer::render::Fit;
using analyzer::FrameName;
using analyzer::render::SiteText;
using analyzer::render::SizeClassLabel;

namespace {

std::string CountsRow(const std::string& name, size_t threads, const TransferCounts& c) {
  return fmt::format("{:<24} {:>7} {:>12} {:>12} {:>10} {:>11} {:>10} {:>11} {:>9} {:>9} {:>7} {:>9}\n",
                     analyzer::render::Fit(name, 24), threads, analyzer::render::Commas(c.allocations),
                     analyzer::render::Commas(c.frees), analyzer::render::Commas(c.fetch_calls),
                     analyzer::render::Commas(c.fetched_objects), analyzer::render::Commas(c.release_calls),
                     analyzer::render::Commas(c.released_objects),
                     analyzer::render::Commas(c.release_calls_by_cause[0]),
                     analyzer::render::Commas(c.release_calls_by_cause[1]),
                     analyzer::render::Commas(c.release_calls_by_cause[2]),
                     analyzer::render::Commas(c.direct_central_frees));
}

std::string SitesText(const std::vector<SiteTransfers>& sites, const char* what,
                      const char* label) {
  std::string out;
  for (size_t i = 0; i < sites.size(); ++i) {
    const SiteTransfers& s = sites[i];
    out += fmt::format("  {:>2}. {} {} ({} objects)  [{}]\n", i + 1, analyzer::render::Commas(s.calls),
                       what, analyzer::render::Commas(s.objects), s.group);
    out += analyzer::render::SiteText(s.site, label, 6, 110);
  }
  return out.empty() ? "  (none)\n" : out;
}

std::string CostRow(const std::string& name, const std::string& threads, uint64_t allocs,
                    uint64_t frees, const CostCounts& c) {
  using analyzer::render::Commas;
  return fmt::format("{:<24} {:>7} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10}\n",
                     Fit(name, 24), threads, allocs == ~uint64_t{0} ? "" : Commas(allocs),
                     frees == ~uint64_t{0} ? "" : Commas(frees), Commas(c[CostKind::kRefill]),
                     Commas(c[CostKind::kFlush]), Commas(c[CostKind::kLock]),
                     Commas(c[CostKind::kAtomic]), Commas(c[CostKind::kRemoteFree]),
                     Commas(c.Total()));
}

std::string LifetimeText(const analyzer::LifetimeSummary& l) {
  using analyzer::render::DurationText;
  if (l.count == 0) return "no frees";
  return fmt::format("min {}, median {}, p99 {}, max {}", DurationText(l.min_ns),
                     DurationText(l.median_ns), DurationText(l.p99_ns), DurationText(l.max_ns));
}

std::string SameCpuText(const analyzer::CpuFigures& c) {
  if (c.known == 0) return "same CPU: n/a (the trace records no CPU)";
  return fmt::format("same CPU: {} of {} frees ({:.0f}%){}", Commas(c.same), Commas(c.known),
                     c.same_percent,
                     c.unknown ? fmt::format(", {} unknown", Commas(c.unknown)) : "");
}

std::string RenderCostText(const SimulationResult& r, const SimulateOptions& options) {
  const CostSimulation& m = *r.cost;
  std::string out = fmt::format("crossfree simulate: {} ({})\n", m.allocator,
                                m.validation.Label());
  out += fmt::format("  validation: {}\n", m.validation.how);
  std::string settings;
  for (const auto& [k, v] : m.settings) {
    settings += fmt::format("{}{}={}", settings.empty() ? "" : ", ", k, v);
  }
  out += fmt::format("  settings ({}): {}\n", m.settings_source, settings);
  for (const SimTraceInfo& t : r.traces) {
    out += fmt::format("trace {}: pid {}, {} threads, {} events{}\n", t.path, t.pid, t.threads,
                       Commas(t.events), t.truncated ? " (truncated)" : "");
  }
  const CostCounts& c = m.totals;
  out += fmt::format(
      "\npredicted costs: {} refills ({} objects), {} flushes ({} objects), {} locks, {} atomics, "
      "{} remote frees\n",
      Commas(c[CostKind::kRefill]), Commas(c.refilled_objects), Commas(c[CostKind::kFlush]),
      Commas(c.flushed_objects), Commas(c[CostKind::kLock]), Commas(c[CostKind::kAtomic]),
      Commas(c[CostKind::kRemoteFree]));
  out += fmt::format(
      "  of the {} synchronisations (locks + atomics): {} on cross-thread pairs, {} at thread "
      "exits, {} by objects never freed; {} unknown frees skipped, {} reallocs in place\n\n",
      Commas(c.Total()), Commas(m.cross_thread.Total()), Commas(m.thread_exit.Total()),
      Commas(m.live_at_end.Total()), Commas(r.unknown_frees), Commas(r.inplace_reallocs));
  out += fmt::format("{:<24} {:>7} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10}\n",
                     options.by == analyzer::GroupBy::kRole ? "role" : "thread", "threads",
                     "allocs", "frees", "refills", "flushes", "locks", "atomics", "remote-frees",
                     "sync");
  for (const CostGroupResult& g : m.groups) {
    out += CostRow(g.name, std::to_string(g.threads), g.allocations, g.frees, g.cost);
  }
  out += CostRow("total", std::to_string(m.threads), m.allocations, m.frees, c);
  out += fmt::format("\n{:<24} {:>7} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10}\n",
                     "size class", "", "", "", "refills", "flushes", "locks", "atomics",
                     "remote-frees", "sync");
  for (const CostClassResult& k : m.classes) {
    if (k.cost.Total() == 0) continue;
    std::string name = k.bytes ? fmt::format("{} ({} B)", k.cl, k.bytes)
                               : fmt::format("{} (large)", k.cl);
    out += CostRow(name, "", ~uint64_t{0}, ~uint64_t{0}, k.cost);
  }
  out += fmt::format("\nTop pairs by cost ({} of {}; lifetimes from allocation to free):\n",
                     m.pairs.size(), m.pair_count);
  for (size_t i = 0; i < m.pairs.size(); ++i) {
    const CostPairResult& p = m.pairs[i];
    out += fmt::format("  {:>2}. {} -> {}{}: {} objects, {} synchronisations ({} refills, {} "
                       "flushes, {} locks, {} atomics, {} remote frees)\n",
                       i + 1, p.alloc_group, p.free_group, p.cross_thread ? "" : " (same thread)",
                       Commas(p.objects), Commas(p.cost.Total()), Commas(p.cost[CostKind::kRefill]),
                       Commas(p.cost[CostKind::kFlush]), Commas(p.cost[CostKind::kLock]),
                       Commas(p.cost[CostKind::kAtomic]), Commas(p.cost[CostKind::kRemoteFree]));
    out += fmt::format("      lifetime: {}; {}\n", LifetimeText(p.lifetime), SameCpuText(p.cpu));
    out += SiteText(p.alloc_site, "alloc: ", 6, 110);
    out += SiteText(p.free_site, "free:  ", 6, 110);
  }
  if (m.pairs.empty()) out += "  (none)\n";
  return out;
}

}  // namespace

std::string RenderSimulationText(const SimulationResult& r, const SimulateOptions& options) {
  if (r.cost) return RenderCostText(r, options);
  std::string out = fmt::format(
      "crossfree simulate: gperftools 2.10 thread caches (max total {}, batches of at most {} "
      "objects)\n",
      analyzer::render::HumanBytes(options.model.gperftools.max_total_thread_cache_bytes),
      options.model.gperftools.transfer_num_objects);
  for (const SimTraceInfo& t : r.traces) {
    out += fmt::format("trace {}: pid {}, {} threads, {} events{}\n", t.path, t.pid, t.threads,
                       analyzer::render::Commas(t.events), t.truncated ? " (truncated)" : "");
  }
  const TransferCounts& c = r.totals;
  out += fmt::format(
      "\npredicted central free-list transfers: {} fetches ({} objects; {} short), {} releases "
      "({} objects)\n",
      analyzer::render::Commas(c.fetch_calls), analyzer::render::Commas(c.fetched_objects),
      analyzer::render::Commas(c.short_fetches),
      analyzer::render::Commas(c.release_calls), analyzer::render::Commas(c.released_objects));
  out += fmt::format(
      "  releases: {} list too long, {} scavenge, {} thread exit; {} frees without a thread "
      "cache\n",
      analyzer::render::Commas(c.release_calls_by_cause[0]), analyzer::render::Commas(c.release_calls_by_cause[1]),
      analyzer::render::Commas(c.release_calls_by_cause[2]), analyzer::render::Commas(c.direct_central_frees));
  out += fmt::format(
      "  {} allocations ({} large, page heap), {} frees, {} unknown frees skipped, {} reallocs in "
      "place\n\n",
      analyzer::render::Commas(c.allocations), analyzer::render::Commas(c.large_allocations),
      analyzer::render::Commas(c.frees), analyzer::render::Commas(r.unknown_frees),
      analyzer::render::Commas(r.inplace_reallocs));
  out += fmt::format("{:<24} {:>7} {:>12} {:>12} {:>10} {:>11} {:>10} {:>11} {:>9} {:>9} {:>7} {:>9}\n",
                     options.by == analyzer::GroupBy::kRole ? "role" : "thread", "threads",
                     "allocs", "frees", "fetches", "fetched", "releases", "released",
                     "too-long", "scavenge", "exit", "no-cache");
  for (const GroupResult& g : r.groups) out += CountsRow(g.name, g.threads, g.counts);
  out += CountsRow("total", r.threads, c);
  out += "\nTop fetch sites (the allocation whose thread-cache miss fetched a batch):\n";
  out += SitesText(r.fetch_sites, "fetches", "alloc: ");
  out += "\nTop release sites (the free that overflowed its list or cache):\n";
  out += SitesText(r.release_sites, "releases", "free: ");
  return out;
}

}  // namespace crossfree::analyzer::simulate
