// SPDX-License-Identifier: Apache-2.0
// Analysis: a pool of emptied vectors for buffers that are filled and
// dropped at a high rate from several threads (the pairing pass's decoded
// chunk parts). Allocating each one afresh made it grow by doubling
// (a memcpy per step) and, for buffers above malloc's mmap threshold or
// freed on another thread than the one that allocated them, an mmap, page
// faults on first touch and an munmap per chunk; a reused buffer is already
// grown and mapped, and often still in cache.
//
// Memory: the pool holds only vectors given back and not yet taken again,
// so it never holds more than were in use at once (whatever bounds that,
// bounds the pool), and it drops a vector whose capacity is above
// max_capacity, so a rare large buffer does not stay. Nothing is sized in
// advance: a taken vector grows as its user fills it.
//
// Thread safety: Take() and Give() may be called from any thread at once
// (one mutex, taken once per buffer, not per element).
#pragma once

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace crossfree::analyzer {

template <typename T>
class VectorPool {
 public:
  explicit VectorPool(size_t max_capacity) : max_capacity_(max_capacity) {}

  // An empty vector, with the capacity of one given back when there is one.
  std::vector<T> Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return {};
    std::vector<T> v = std::move(free_.back());
    free_.pop_back();
    return v;
  }

  // Keeps v (emptied) for a later Take(), or frees it when its capacity is
  // above max_capacity. Callers move their vector in, which empties it.
  void Give(std::vector<T> v) {
    if (v.capacity() == 0) return;
    if (v.capacity() > max_capacity_) {
      std::vector<T>().swap(v);
      return;
    }
    v.clear();
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(v));
  }

 private:
  const size_t max_capacity_;
  std::mutex mutex_;
  std::vector<std::vector<T>> free_;
};

}  // namespace crossfree::analyzer
