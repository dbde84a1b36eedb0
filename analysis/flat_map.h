// SPDX-License-Identifier: Apache-2.0
// Analyzer: a small open-addressing hash map (linear probing, no erase) for
// the pairing hot path, where std::unordered_map's node allocations and
// pointer chasing cost more than the pairing itself. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace crossfree::analyzer {

inline uint64_t MixBits(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// Key needs operator== and a Hash functor returning a well-mixed uint64_t.
template <typename Key, typename Value, typename Hash>
class FlatMap {
 public:
  FlatMap() { Rehash(16); }

  // Returns the value for key, default-constructing it on first use.
  Value& operator[](const Key& key) {
    if (size_ >= grow_at_) Rehash(capacity_ * 2);
    size_t i = Hash()(key) & mask_;
    while (used_[i]) {
      if (keys_[i] == key) return values_[i];
      i = (i + 1) & mask_;
    }
    used_[i] = 1;
    keys_[i] = key;
    values_[i] = Value();
    ++size_;
    return values_[i];
  }

  Value* Find(const Key& key) {
    size_t i = Hash()(key) & mask_;
    while (used_[i]) {
      if (keys_[i] == key) return &values_[i];
      i = (i + 1) & mask_;
    }
    return nullptr;
  }
  const Value* Find(const Key& key) const { return const_cast<FlatMap*>(this)->Find(key); }

  size_t size() const { return size_; }

  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < capacity_; ++i) {
      if (used_[i]) fn(keys_[i], values_[i]);
    }
  }
  // The same with the values open to change (not the keys).
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (size_t i = 0; i < capacity_; ++i) {
      if (used_[i]) fn(static_cast<const Key&>(keys_[i]), values_[i]);
    }
  }

 private:
  void Rehash(size_t capacity) {
    std::vector<Key> keys(capacity);
    std::vector<Value> values(capacity);
    std::vector<uint8_t> used(capacity, 0);
    size_t mask = capacity - 1;
    for (size_t i = 0; i < capacity_; ++i) {
      if (!used_[i]) continue;
      size_t j = Hash()(keys_[i]) & mask;
      while (used[j]) j = (j + 1) & mask;
      used[j] = 1;
      keys[j] = std::move(keys_[i]);
      values[j] = std::move(values_[i]);
    }
    keys_.swap(keys);
    values_.swap(values);
    used_.swap(used);
    capacity_ = capacity;
    mask_ = mask;
    // Grow before an insert would make it more than 3/4 full (kept, not
    // recomputed by every lookup).
    grow_at_ = capacity / 4 * 3;
  }

  std::vector<Key> keys_;
  std::vector<Value> values_;
  std::vector<uint8_t> used_;
  size_t capacity_ = 0;
  size_t mask_ = 0;
  size_t grow_at_ = 0;
  size_t size_ = 0;
};

}  // namespace crossfree::analyzer
