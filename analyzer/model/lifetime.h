// SPDX-License-Identifier: Apache-2.0
// Model: how long a pair's objects lived, from allocation to free, in ns:
// a log-linear histogram (exact below 16 ns, then eight buckets per power of
// two, so a bucket spans at most 12.5% of its values) with the exact
// minimum and maximum. The figures every renderer prints (min, median, p99,
// max, and the distribution by power of two) are computed here
// (Lifetime::Summary), never in a renderer.
//
// A value type; not shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace crossfree::analyzer {

struct LifetimeSummary {
  uint64_t count = 0;
  uint64_t min_ns = 0;
  uint64_t median_ns = 0;  // the bucket's lower bound, within [min, max]
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
  // Objects per power of two: octaves[i] counts lifetimes in
  // [2^(first_octave + i), 2^(first_octave + i + 1)) ns (octave 0 holds 0 and 1 ns).
  int first_octave = 0;
  std::vector<uint64_t> octaves;

  // The bounds of octave i, for the distribution's labels: it starts at
  // 2^(first_octave + i) ns and ends before twice that; the lowest lifetime
  // it holds is its start, or 0 for octave 0.
  uint64_t OctaveStartNs(size_t i) const { return uint64_t{1} << (first_octave + i); }
  uint64_t OctaveEndNs(size_t i) const { return uint64_t{2} << (first_octave + i); }
  uint64_t OctaveLowestNs(size_t i) const {
    return first_octave + i == 0 ? 0 : OctaveStartNs(i);
  }
  bool operator==(const LifetimeSummary&) const = default;
};

class Lifetime {
 public:
  void Add(uint64_t ns);
  void Merge(const Lifetime& o);
  uint64_t count() const { return count_; }
  LifetimeSummary Summary() const;

  // The bucket of a value, and the smallest value in a bucket.
  static int Bucket(uint64_t ns);
  static uint64_t BucketFloor(int bucket);

 private:
  uint64_t ValueAtRank(uint64_t rank) const;  // rank from 1

  uint64_t count_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  int first_ = 0;                 // bucket of counts_[0]
  std::vector<uint64_t> counts_;  // from bucket first_, grown as needed
};

}  // namespace crossfree::analyzer
