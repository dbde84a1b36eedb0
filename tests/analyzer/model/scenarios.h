// SPDX-License-Identifier: Apache-2.0
// Test fixtures: fixed synthetic runs of a small RPC-like program (before and
// after a fix) and a fake symbol resolver that names their frames, shared by
// the golden tests and the make_traces tool.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/model/sites.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer::testing {

// Main pid; threads: main (pid), worker-0/1 (pid+1, +2), reactor-0/1 (+3, +4).
inline constexpr uint32_t kScenarioPid = 4000;

// "before": outbound calls made by workers and freed by reactors, responses
// made by reactors and freed by workers, slices vectors crossing, plus
// same-thread churn, a live allocation, an unknown free and a double free.
SyntheticTrace BuildBeforeRun();
// "after": the call objects no longer cross, the slices pair grew, and a new
// pair appeared.
SyntheticTrace BuildAfterRun();

// Resolves the scenario's return addresses to fixed names (and files).
class FakeResolver : public SymbolResolver {
 public:
  FakeResolver();
  const std::vector<SymbolFrame>& Resolve(size_t trace_index, uint64_t address) override;

 private:
  std::map<uint64_t, std::vector<SymbolFrame>> table_;
  std::map<uint64_t, std::vector<SymbolFrame>> unknown_;
};

}  // namespace crossfree::analyzer::testing
