// SPDX-License-Identifier: Apache-2.0
// Analyzer: `crossfree diff` (see diff.h).
#include "analyzer/model/diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>

namespace crossfree::analyzer {

const char* DiffStatusName(DiffStatus status) {
  switch (status) {
    case DiffStatus::kGone: return "gone";
    case DiffStatus::kNew: return "new";
    case DiffStatus::kGrown: return "grown";
    case DiffStatus::kShrunk: return "shrunk";
    case DiffStatus::kUnchanged: return "unchanged";
  }
  return "?";
}

DiffResult ComputeDiff(const Analysis& before, const Analysis& after, double min_change) {
  DiffResult d;
  d.min_change = min_change;
  d.sampled = before.sampled() || after.sampled();
  std::unordered_map<std::string, const CrossPair*> after_by_key;
  for (const CrossPair& p : after.pairs) after_by_key[p.key] = &p;
  for (const CrossPair& p : before.pairs) {
    DiffRow row;
    row.before = &p;
    row.before_rate = before.PerThousand(p.count);
    row.before_estimate = before.Rate(p.count);
    auto it = after_by_key.find(p.key);
    if (it == after_by_key.end()) {
      row.status = DiffStatus::kGone;
      row.after_estimate = after.Rate(0);  // what a count of 0 allows
      row.significant = !row.before_estimate.Overlaps(row.after_estimate);
    } else {
      row.after = it->second;
      row.after_rate = after.PerThousand(it->second->count);
      row.after_estimate = after.Rate(it->second->count);
      after_by_key.erase(it);
      // For unsampled runs the intervals are the rates themselves, and
      // these are the plain min_change comparisons.
      bool apart = !row.before_estimate.Overlaps(row.after_estimate);
      if (row.after_rate > row.before_rate * (1 + min_change) &&
          (!d.sampled || row.after_estimate.low > row.before_estimate.high)) {
        row.status = DiffStatus::kGrown;
      } else if (row.after_rate < row.before_rate * (1 - min_change) &&
                 (!d.sampled || row.after_estimate.high < row.before_estimate.low)) {
        row.status = DiffStatus::kShrunk;
      }
      row.significant = !d.sampled || apart;
    }
    d.rows.push_back(row);
  }
  for (const CrossPair& p : after.pairs) {
    if (!after_by_key.count(p.key)) continue;
    DiffRow row;
    row.status = DiffStatus::kNew;
    row.after = &p;
    row.after_rate = after.PerThousand(p.count);
    row.after_estimate = after.Rate(p.count);
    row.before_estimate = before.Rate(0);
    row.significant = !row.before_estimate.Overlaps(row.after_estimate);
    d.rows.push_back(row);
  }
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    if (a.status != b.status) return a.status < b.status;
    double x = std::max(a.before_rate, a.after_rate), y = std::max(b.before_rate, b.after_rate);
    if (x != y) return x > y;
    return a.pair().key < b.pair().key;
  });
  return d;
}

}  // namespace crossfree::analyzer
