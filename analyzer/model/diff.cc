// SPDX-License-Identifier: Apache-2.0
// Analyzer: `crossfree diff` (see diff.h).
#include "analyzer/model/diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>

#include "analyzer/model/gate.h"

namespace crossfree::analyzer {

const char* DiffStatusName(DiffStatus status) {
  switch (status) {
    case DiffStatus::kGone: return "gone";
    case DiffStatus::kNew: return "new";
    case DiffStatus::kGrown: return "grown";
    case DiffStatus::kShrunk: return "shrunk";
    case DiffStatus::kUnchanged: return "unchanged";
    case DiffStatus::kBounded: return "bounded";
  }
  return "?";
}

namespace {

// A run's per-call objects per unit: per operation when both runs have
// operations (DiffResult::per_operation), else per 1000 allocations.
// Both over the steady state's units (Analysis::SteadyUnits), as per-call
// counts are.
Estimate RateOf(const Analysis& a, uint64_t count, bool per_operation) {
  return per_operation ? a.PerSteadyUnit(count) : a.Rate(count).Scaled(1.0 / a.SteadyShare());
}
double UnitsOf(const Analysis& a, bool per_operation) {
  return (per_operation ? static_cast<double>(a.operations) : a.Allocations() / 1000.0) *
         a.SteadyShare();
}

}  // namespace

DiffResult ComputeDiff(const Analysis& before, const Analysis& after, double min_change) {
  DiffResult d;
  d.min_change = min_change;
  d.sampled = before.sampled() || after.sampled();
  d.per_operation = before.per_operation() && after.per_operation();
  std::unordered_map<std::string, const CrossPair*> after_by_key;
  for (const CrossPair& p : after.pairs) after_by_key[p.key] = &p;
  std::vector<DiffRow> rows;
  for (const CrossPair& p : before.pairs) {
    DiffRow row;
    row.before = &p;
    if (auto it = after_by_key.find(p.key); it != after_by_key.end()) {
      row.after = it->second;
      after_by_key.erase(it);
    }
    rows.push_back(row);
  }
  for (const CrossPair& p : after.pairs) {
    if (!after_by_key.count(p.key)) continue;
    DiffRow row;
    row.after = &p;
    rows.push_back(row);
  }
  for (DiffRow& row : rows) {
    row.before_steady = row.before ? row.before->steady() : SampledCount{};
    row.before_bounded = row.before ? row.before->bounded() : SampledCount{};
    row.after_steady = row.after ? row.after->steady() : SampledCount{};
    row.after_bounded = row.after ? row.after->bounded() : SampledCount{};
    row.before_estimate = RateOf(before, row.before_steady.sampled, d.per_operation);
    row.after_estimate = RateOf(after, row.after_steady.sampled, d.per_operation);
    row.before_rate = row.before_estimate.value;
    row.after_rate = row.after_estimate.value;
    row.before_figures = before.Figures(row.before ? *row.before : CrossPair{});
    row.after_figures = after.Figures(row.after ? *row.after : CrossPair{});
    bool per_call = (row.before && row.before->lifecycle() == Lifecycle::kPerCall) ||
                    (row.after && row.after->lifecycle() == Lifecycle::kPerCall);
    bool apart = !row.before_estimate.Overlaps(row.after_estimate);
    row.significant = d.sampled ? apart : true;
    if (!per_call) {
      row.status = DiffStatus::kBounded;
    } else if (row.after_steady.sampled == 0) {
      row.status = DiffStatus::kGone;
    } else if (row.before_steady.sampled == 0) {
      row.status = DiffStatus::kNew;
    } else if (row.after_rate > row.before_rate * (1 + min_change) &&
               (d.sampled ? row.after_estimate.low > row.before_estimate.high
                          : PoissonUpperTail(row.after_steady.sampled,
                                             row.before_rate * UnitsOf(after, d.per_operation)) <
                                kSignificance)) {
      row.status = DiffStatus::kGrown;
    } else if (row.after_rate < row.before_rate * (1 - min_change) &&
               (d.sampled ? row.after_estimate.high < row.before_estimate.low
                          : PoissonUpperTail(row.before_steady.sampled,
                                             row.after_rate * UnitsOf(before, d.per_operation)) <
                                kSignificance)) {
      row.status = DiffStatus::kShrunk;
    } else {
      row.status = DiffStatus::kUnchanged;
      row.significant = false;
    }
    d.rows.push_back(row);
  }
  d.central = DiffCentral(before.central, before.Allocations(), after.central, after.Allocations());
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    if (a.status != b.status) return a.status < b.status;
    double x = std::max(a.before_rate, a.after_rate), y = std::max(b.before_rate, b.after_rate);
    if (a.status == DiffStatus::kBounded) {
      x = static_cast<double>(std::max(a.before_bounded, a.after_bounded).sampled);
      y = static_cast<double>(std::max(b.before_bounded, b.after_bounded).sampled);
    }
    if (x != y) return x > y;
    return a.pair().key < b.pair().key;
  });
  return d;
}

}  // namespace crossfree::analyzer
