// SPDX-License-Identifier: Apache-2.0
// Model: what `report --allocator` / `--lifetimes` add to each cross-thread
// pair: the chosen allocator model's cost of its objects, their lifetimes
// and whether their frees ran on the allocation's CPU. Computed by the cost
// replay (analyzer/simulate/report_costs.h), keyed like the pairs
// (CrossPair::key); the renderers only print these figures.
//
// A value type; not shared between threads.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "analyzer/model/lifetime.h"

namespace crossfree::analyzer {

struct PairCostFigures {
  uint64_t sync = 0;  // locks + atomics (CostCounts::Total)
  uint64_t refills = 0;
  uint64_t flushes = 0;
  uint64_t locks = 0;
  uint64_t atomics = 0;
  uint64_t remote_frees = 0;
  LifetimeSummary lifetime;
  uint64_t same_cpu = 0;   // frees on the allocation's CPU
  uint64_t other_cpu = 0;  // on another CPU; both 0: the trace records no CPU
  bool cpu_known() const { return same_cpu + other_cpu > 0; }
};

struct PairCosts {
  // The model ("jemalloc-5.3.0"), empty for --lifetimes alone (no costs).
  std::string allocator;
  bool validated = false;
  std::string validation_label;  // "validated", "partly validated", "NOT VALIDATED"
  std::string validation;        // one line (AllocatorModel::validation)
  std::string settings;    // "name=value, ..." and where they came from
  std::map<std::string, PairCostFigures> by_key;  // CrossPair::key -> figures
  bool with_costs() const { return !allocator.empty(); }
  const PairCostFigures* Find(const std::string& key) const {
    auto it = by_key.find(key);
    return it == by_key.end() ? nullptr : &it->second;
  }
};

}  // namespace crossfree::analyzer
