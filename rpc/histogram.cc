// SPDX-License-Identifier: Apache-2.0
// Log2Histogram implementation.
#include "rpc/histogram.h"

#include <bit>
#include <cstdio>

namespace crossfree::rpc {

void Log2Histogram::Record(uint64_t value) {
  int b = value == 0 ? 0 : std::bit_width(value);
  if (b >= kBuckets) b = kBuckets - 1;
  buckets_[b].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  uint64_t m = max_.load(std::memory_order_relaxed);
  while (value > m && !max_.compare_exchange_weak(m, value, std::memory_order_relaxed)) {
  }
}

void Log2Histogram::Merge(const Log2Histogram& o) {
  for (int i = 0; i < kBuckets; ++i) {
    buckets_[i].fetch_add(o.buckets_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  count_.fetch_add(o.count(), std::memory_order_relaxed);
  sum_.fetch_add(o.sum_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  uint64_t om = o.max();
  uint64_t m = max_.load(std::memory_order_relaxed);
  while (om > m && !max_.compare_exchange_weak(m, om, std::memory_order_relaxed)) {
  }
}

double Log2Histogram::mean() const {
  uint64_t c = count();
  return c == 0 ? 0.0 : static_cast<double>(sum_.load(std::memory_order_relaxed)) / c;
}

uint64_t Log2Histogram::PercentileUpperBound(double p) const {
  uint64_t c = count();
  if (c == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(p / 100.0 * c + 0.5);
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i].load(std::memory_order_relaxed);
    if (seen >= rank) return i == 0 ? 0 : (uint64_t{1} << i) - 1;
  }
  return max();
}

std::string Log2Histogram::ToString(const char* unit) const {
  char line[160];
  snprintf(line, sizeof(line), "count=%llu mean=%.1f%s p50<=%llu p99<=%llu p99.9<=%llu max=%llu\n",
           static_cast<unsigned long long>(count()), mean(), unit,
           static_cast<unsigned long long>(PercentileUpperBound(50)),
           static_cast<unsigned long long>(PercentileUpperBound(99)),
           static_cast<unsigned long long>(PercentileUpperBound(99.9)),
           static_cast<unsigned long long>(max()));
  std::string out = line;
  for (int i = 0; i < kBuckets; ++i) {
    uint64_t n = buckets_[i].load(std::memory_order_relaxed);
    if (n == 0) continue;
    uint64_t lo = i == 0 ? 0 : uint64_t{1} << (i - 1);
    uint64_t hi = i == 0 ? 1 : uint64_t{1} << i;
    snprintf(line, sizeof(line), "  [%llu, %llu)%s %llu\n", static_cast<unsigned long long>(lo),
             static_cast<unsigned long long>(hi), unit, static_cast<unsigned long long>(n));
    out += line;
  }
  return out;
}

}  // namespace crossfree::rpc
