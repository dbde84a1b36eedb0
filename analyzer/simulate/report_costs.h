// SPDX-License-Identifier: Apache-2.0
// Simulate: the per-pair figures `report --allocator` and `--lifetimes` add
// to an analysis (analyzer/model/pair_costs.h), from one cost replay of the
// same traces (cost_replay.h), joined to the report's cross-thread pairs by
// their key.
//
// Used from one thread.
#pragma once

#include <string>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/simulate/simulate.h"

namespace crossfree::analyzer::simulate {

// allocator: a row of the allocator table (allocators.h), or null for
// lifetimes and CPUs only.
// options: the analysis's sites and grouping (so the keys match). False
// with *error (a bad setting, a sampled trace, a malformed chunk).
bool AddPairCosts(const std::vector<std::string>& paths, const AllocatorEntry* allocator,
                  const ModelSettings& model, const std::string& settings_source,
                  const analyzer::AnalysisOptions& options, analyzer::Analysis* analysis,
                  std::string* error);

}  // namespace crossfree::analyzer::simulate
