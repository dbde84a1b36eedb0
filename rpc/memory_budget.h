// SPDX-License-Identifier: Apache-2.0
// MemoryBudget: the bytes of connection buffers one messenger may hold
// (receive buffers of server connections and responses waiting in their
// send queues), shared by all its reactors.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace crossfree::rpc {

// Owner: the Messenger (it outlives every connection and transfer that
// charges it). Threads: any; one relaxed atomic counter. Charges happen when
// a buffer grows or a response stays queued, not per call on the hot path.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) : limit_(static_cast<int64_t>(limit)) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Takes `n` bytes if that stays within the limit; false (nothing taken)
  // otherwise. A limit of 0 means unlimited.
  bool TryCharge(size_t n) {
    int64_t want = static_cast<int64_t>(n);
    int64_t cur = used_.load(std::memory_order_relaxed);
    do {
      if (limit_ > 0 && cur + want > limit_) return false;
    } while (!used_.compare_exchange_weak(cur, cur + want, std::memory_order_relaxed));
    return true;
  }
  // Takes `n` bytes even beyond the limit: memory that exists already
  // (a response the handler made) and only needs to be counted.
  void ForceCharge(size_t n) { used_.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed); }
  void Release(size_t n) { used_.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed); }

  bool exhausted() const { return limit_ > 0 && used_.load(std::memory_order_relaxed) >= limit_; }
  size_t used() const {
    int64_t u = used_.load(std::memory_order_relaxed);
    return u > 0 ? static_cast<size_t>(u) : 0;
  }
  size_t limit() const { return static_cast<size_t>(limit_); }

 private:
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
};

}  // namespace crossfree::rpc
