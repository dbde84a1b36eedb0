// SPDX-License-Identifier: Apache-2.0
// Simulate: per-pair costs and lifetimes for report (see report_costs.h).
#include "analyzer/simulate/report_costs.h"

#include <fmt/core.h>

namespace crossfree::analyzer::simulate {

bool AddPairCosts(const std::vector<std::string>& paths, const AllocatorEntry* allocator,
                  const ModelSettings& model, const std::string& settings_source,
                  const analyzer::AnalysisOptions& analysis_options, analyzer::Analysis* analysis,
                  std::string* error) {
  SimulateOptions options;
  // Lifetimes alone need no allocator: the model that costs nothing.
  options.allocator = allocator ? allocator : &NoAllocator();
  options.pairs = true;
  options.model = model;
  options.settings_source = settings_source;
  options.by = analysis_options.by;
  options.sites = analysis_options.sites;
  options.top = 1;  // the ranked list is not used; cross_pairs holds every pair
  SimulationResult result;
  if (!SimulateFiles(paths, options, &result, error)) return false;
  const CostSimulation& m = *result.cost;
  analyzer::PairCosts costs;
  if (allocator) {
    costs.allocator = m.allocator;
    costs.validated = m.validation.validated;
    costs.validation_label = m.validation.Label();
    costs.validation = m.validation.how;
    for (const auto& [k, v] : m.settings) {
      costs.settings += fmt::format("{}{}={}", costs.settings.empty() ? "" : ", ", k, v);
    }
    costs.settings += fmt::format(" ({})", m.settings_source);
  }
  for (const analyzer::CrossPair& p : analysis->pairs) {
    auto it = m.cross_pairs.find(p.key);
    if (it == m.cross_pairs.end()) continue;
    const CostPairResult& c = it->second;
    analyzer::PairCostFigures f;
    f.sync = c.cost.Total();
    f.refills = c.cost[CostKind::kRefill];
    f.flushes = c.cost[CostKind::kFlush];
    f.locks = c.cost[CostKind::kLock];
    f.atomics = c.cost[CostKind::kAtomic];
    f.remote_frees = c.cost[CostKind::kRemoteFree];
    f.lifetime = c.lifetime;
    f.cpu = c.cpu;
    costs.by_key[p.key] = f;
  }
  analysis->pair_costs = std::move(costs);
  return true;
}

}  // namespace crossfree::analyzer::simulate
