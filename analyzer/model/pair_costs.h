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

// Where a pair's frees ran compared with their allocations, as printed.
struct CpuFigures {
  uint64_t same = 0;     // frees on the allocation's CPU
  uint64_t other = 0;    // on another CPU
  uint64_t unknown = 0;  // either event has no CPU
  uint64_t known = 0;    // same + other; 0: the trace records no CPU
  // 100 x same / known (0 when known is 0), in that order of operations:
  // the figure the outputs round to whole percents.
  double same_percent = 0;
};
inline CpuFigures CpuFiguresOf(uint64_t same, uint64_t other, uint64_t unknown) {
  CpuFigures f{same, other, unknown, same + other, 0};
  if (f.known) f.same_percent = 100.0 * static_cast<double>(same) / static_cast<double>(f.known);
  return f;
}

struct PairCostFigures {
  uint64_t sync = 0;  // locks + atomics (CostCounts::Total)
  uint64_t refills = 0;
  uint64_t flushes = 0;
  uint64_t locks = 0;
  uint64_t atomics = 0;
  uint64_t remote_frees = 0;
  LifetimeSummary lifetime;
  CpuFigures cpu;
  bool cpu_known() const { return cpu.known > 0; }
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
