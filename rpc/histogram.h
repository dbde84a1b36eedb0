// SPDX-License-Identifier: Apache-2.0
// Log2Histogram: a lock-free histogram with power-of-two buckets, used for
// reactor load/latency and by rpc-bench for call latency.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace crossfree::rpc {

// Bucket i counts values v with 2^(i-1) <= v < 2^i (bucket 0 counts 0).
// Record() may be called from any thread; readers see a consistent-enough
// snapshot for reporting (counters are relaxed atomics).
class Log2Histogram {
 public:
  static constexpr int kBuckets = 64;

  void Record(uint64_t value);
  // Adds another histogram's counts into this one.
  void Merge(const Log2Histogram& other);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }
  double mean() const;
  // Upper bound of the bucket holding the p-th percentile (0 < p <= 100).
  uint64_t PercentileUpperBound(double p) const;
  // "count=N mean=M p50<=A p99<=B max=C" followed by one line per non-empty
  // bucket "  [lo, hi) count".
  std::string ToString(const char* unit) const;

 private:
  std::atomic<uint64_t> buckets_[kBuckets] = {};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
};

}  // namespace crossfree::rpc
