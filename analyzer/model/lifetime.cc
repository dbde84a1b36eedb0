// SPDX-License-Identifier: Apache-2.0
// Model: object lifetimes (see lifetime.h).
#include "analyzer/model/lifetime.h"

#include <algorithm>

namespace crossfree::analyzer {

int Lifetime::Bucket(uint64_t ns) {
  if (ns < 16) return static_cast<int>(ns);
  int e = 63 - __builtin_clzll(ns);
  int sub = static_cast<int>((ns >> (e - 3)) & 7);
  return 16 + (e - 4) * 8 + sub;
}

uint64_t Lifetime::BucketFloor(int bucket) {
  if (bucket < 16) return static_cast<uint64_t>(bucket);
  int e = (bucket - 16) / 8 + 4;
  uint64_t sub = static_cast<uint64_t>((bucket - 16) % 8);
  return (uint64_t{1} << e) + (sub << (e - 3));
}

void Lifetime::Add(uint64_t ns) {
  int b = Bucket(ns);
  if (count_ == 0) {
    min_ = max_ = ns;
    first_ = b;
    counts_.assign(1, 0);
  } else {
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
    if (b < first_) {
      counts_.insert(counts_.begin(), static_cast<size_t>(first_ - b), 0);
      first_ = b;
    } else if (b - first_ >= static_cast<int>(counts_.size())) {
      counts_.resize(static_cast<size_t>(b - first_ + 1), 0);
    }
  }
  counts_[static_cast<size_t>(b - first_)] += 1;
  ++count_;
}

void Lifetime::Merge(const Lifetime& o) {
  if (o.count_ == 0) return;
  if (count_ == 0) {
    *this = o;
    return;
  }
  int first = std::min(first_, o.first_);
  int last = std::max(first_ + static_cast<int>(counts_.size()),
                      o.first_ + static_cast<int>(o.counts_.size()));
  std::vector<uint64_t> merged(static_cast<size_t>(last - first), 0);
  for (size_t i = 0; i < counts_.size(); ++i) merged[first_ - first + i] += counts_[i];
  for (size_t i = 0; i < o.counts_.size(); ++i) merged[o.first_ - first + i] += o.counts_[i];
  counts_ = std::move(merged);
  first_ = first;
  count_ += o.count_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

uint64_t Lifetime::ValueAtRank(uint64_t rank) const {
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      return std::clamp(BucketFloor(first_ + static_cast<int>(i)), min_, max_);
    }
  }
  return max_;
}

LifetimeSummary Lifetime::Summary() const {
  LifetimeSummary s;
  s.count = count_;
  if (count_ == 0) return s;
  s.min_ns = min_;
  s.max_ns = max_;
  // Nearest-rank quantiles: the value at rank ceil(q * n).
  s.median_ns = ValueAtRank((count_ + 1) / 2);
  s.p99_ns = ValueAtRank((count_ * 99 + 99) / 100);
  auto octave = [](uint64_t ns) { return ns < 2 ? 0 : 63 - __builtin_clzll(ns); };
  s.first_octave = octave(min_);
  s.octaves.assign(static_cast<size_t>(octave(max_) - s.first_octave + 1), 0);
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    int o = octave(BucketFloor(first_ + static_cast<int>(i)));
    s.octaves[static_cast<size_t>(o - s.first_octave)] += counts_[i];
  }
  return s;
}

}  // namespace crossfree::analyzer
