// SPDX-License-Identifier: Apache-2.0
// Analyzer: compares the cross-thread pairs of two runs by symbolic key, with
// counts normalized per 1000 allocations of each run (runs differ in length),
// as the before/after tables of the KUDU-1865 fixes. Stateless.
#pragma once

#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace crossfree::analyzer {


enum class DiffStatus { kGone, kNew, kGrown, kShrunk, kUnchanged };
const char* DiffStatusName(DiffStatus status);

struct DiffRow {
  DiffStatus status = DiffStatus::kUnchanged;
  const CrossPair* before = nullptr;  // null for kNew
  const CrossPair* after = nullptr;   // null for kGone
  double before_rate = 0;             // frees per 1000 allocations
  double after_rate = 0;
  const CrossPair& pair() const { return after ? *after : *before; }
};

struct DiffResult {
  // Grouped by status (gone, new, grown, shrunk, unchanged), each by the
  // larger of the two rates, descending, then key.
  std::vector<DiffRow> rows;
  double min_change = 0.1;
};

// A pair present in both runs is grown/shrunk when its rate changed by more
// than min_change (a fraction: 0.1 = 10%). The analyses must outlive the result.
DiffResult ComputeDiff(const Analysis& before, const Analysis& after, double min_change);


}  // namespace crossfree::analyzer
