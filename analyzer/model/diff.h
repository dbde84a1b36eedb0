// SPDX-License-Identifier: Apache-2.0
// Analyzer: compares the cross-thread pairs of two runs by symbolic key, as
// the before/after tables of the KUDU-1865 fixes. Stateless.
//
// Per-call pairs (CrossPair::lifecycle(), in either run) are compared by
// their steady-state objects per unit of each run: per operation when both
// runs' operations are known, else per 1000 allocations (runs differ in
// length). Bounded pairs (one-off in every run that has them: start-up,
// shutdown, once per thread) have no rate that means anything, and are
// listed with their counts, not compared.
//
// A per-call pair is grown or shrunk when its rate changed by more than
// min_change and the change is not noise: unsampled, the count is
// implausible under the other run's rate (Poisson tail below
// kSignificance, gate.h); sampled (estimate.h), the two 95% intervals do
// not overlap. A pair whose per-call objects only one run has is gone or
// new; `significant` says whether the other run's interval (of a count of
// 0) excludes the rate seen.
#pragma once

#include <string>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/model/central.h"

namespace crossfree::analyzer {


enum class DiffStatus { kGone, kNew, kGrown, kShrunk, kUnchanged, kBounded };
const char* DiffStatusName(DiffStatus status);

struct DiffRow {
  DiffStatus status = DiffStatus::kUnchanged;
  const CrossPair* before = nullptr;  // null for kNew
  const CrossPair* after = nullptr;   // null for kGone
  double before_rate = 0;             // per-call objects per unit (DiffResult)
  double after_rate = 0;
  SampledCount before_steady;         // per-call and bounded objects
  SampledCount after_steady;
  SampledCount before_bounded;
  SampledCount after_bounded;
  Estimate before_estimate;           // the rates, with their 95% intervals
  Estimate after_estimate;
  // The pair's figures in each run (Analysis::Figures; those of no objects
  // in the run that lacks it), for the renderers.
  PairFigures before_figures;
  PairFigures after_figures;
  // The intervals do not overlap (always true for a change between
  // unsampled runs, and for gone/new pairs of unsampled runs).
  bool significant = true;
  const CrossPair& pair() const { return after ? *after : *before; }
};

struct DiffResult {
  // Grouped by status (gone, new, grown, shrunk, unchanged, bounded), each
  // by the larger of the two rates (counts for bounded), descending, then key.
  std::vector<DiffRow> rows;
  double min_change = 0.1;
  bool sampled = false;        // either run is sampled
  bool per_operation = false;  // rates per operation (both runs' operations known)
  // The runs' central free-list transfers side by side (central.h).
  CentralDiff central;
};

// min_change is a fraction (0.1 = 10%). The analyses must outlive the
// result. Rates are per operation only when both runs have operations.
DiffResult ComputeDiff(const Analysis& before, const Analysis& after, double min_change);


}  // namespace crossfree::analyzer
