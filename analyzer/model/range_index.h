// SPDX-License-Identifier: Apache-2.0
// Analyzer model: the half-open address ranges of a symbolizer lookup
// (modules' segments, a compilation unit's function DIEs), possibly
// overlapping, with one value each, answering "which ranges contain this
// address" in O(log n + ranges that reach it).
//
// Ranges are kept sorted by start (ties: by value) with the largest end of
// each range and all before it, so a lookup walks back from the last range
// starting at or before the address and stops at the first whose running
// end does not reach it. Plain value type: build it on one thread (Add,
// then Build), then any number of threads may look it up while nobody
// changes it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace crossfree::analyzer {

template <typename Value>
class RangeIndex {
 public:
  // Adds [start, end); lookups see it after the next Build.
  void Add(uint64_t start, uint64_t end, Value value) { ranges_.push_back({start, end, 0, value}); }
  void Clear() { ranges_.clear(); }

  void Build() {
    std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) {
      return a.start != b.start ? a.start < b.start : a.value < b.value;
    });
    uint64_t max_end = 0;
    for (Range& r : ranges_) {
      max_end = std::max(max_end, r.end);
      r.max_end = max_end;
    }
  }

  // Calls visit(value) for every range containing address, the one that
  // starts last first.
  template <typename Visit>
  void ForEachContaining(uint64_t address, Visit visit) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                               [](uint64_t a, const Range& r) { return a < r.start; });
    while (it != ranges_.begin()) {
      --it;
      if (it->max_end <= address) break;  // no earlier range reaches address
      if (address < it->end) visit(it->value);
    }
  }

 private:
  struct Range {
    uint64_t start;
    uint64_t end;      // exclusive
    uint64_t max_end;  // max end of this and every earlier range
    Value value;
  };
  std::vector<Range> ranges_;
};

}  // namespace crossfree::analyzer
