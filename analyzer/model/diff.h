// SPDX-License-Identifier: Apache-2.0
// Analyzer: compares the cross-thread pairs of two runs by symbolic key, with
// counts normalized per 1000 allocations of each run (runs differ in length),
// as the before/after tables of the KUDU-1865 fixes. Stateless.
//
// Sampled runs (estimate.h): each rate is an estimate with a 95% interval,
// and a pair counts as grown or shrunk only when the two intervals do not
// overlap (and the estimates differ by more than min_change). Two 95%
// intervals that do not overlap mean a difference at a level stricter than
// 5%: the rule errs toward "unchanged". An unsampled run's interval is its
// exact rate, so between two unsampled runs the rule is the plain
// min_change one. A pair only one run's sample shows is gone or new as
// before; `significant` says whether the other run's interval (of a count
// of 0) excludes the rate seen.
#pragma once

#include <string>
#include <vector>

#include "analyzer/model/analysis.h"

namespace crossfree::analyzer {


enum class DiffStatus { kGone, kNew, kGrown, kShrunk, kUnchanged };
const char* DiffStatusName(DiffStatus status);

struct DiffRow {
  DiffStatus status = DiffStatus::kUnchanged;
  const CrossPair* before = nullptr;  // null for kNew
  const CrossPair* after = nullptr;   // null for kGone
  double before_rate = 0;             // frees per 1000 allocations
  double after_rate = 0;
  Estimate before_estimate;           // the rates, with their 95% intervals
  Estimate after_estimate;
  // The intervals do not overlap (always true for a change between
  // unsampled runs, and for gone/new pairs of unsampled runs).
  bool significant = true;
  const CrossPair& pair() const { return after ? *after : *before; }
};

struct DiffResult {
  // Grouped by status (gone, new, grown, shrunk, unchanged), each by the
  // larger of the two rates, descending, then key.
  std::vector<DiffRow> rows;
  double min_change = 0.1;
  bool sampled = false;  // either run is sampled
};

// A pair present in both runs is grown/shrunk when its rate changed by more
// than min_change (a fraction: 0.1 = 10%). The analyses must outlive the result.
DiffResult ComputeDiff(const Analysis& before, const Analysis& after, double min_change);


}  // namespace crossfree::analyzer
