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
// A slot holds its key, its value and whether it is used side by side, so
// a lookup reads one place (one cache line for small keys and values), not
// three arrays.
template <typename Key, typename Value, typename Hash>
class FlatMap {
 public:
  FlatMap() { Rehash(16); }

  // Returns the value for key, default-constructing it on first use.
  Value& operator[](const Key& key) {
    if (size_ >= grow_at_) Rehash(slots_.size() * 2);
    size_t i = Hash()(key) & mask_;
    while (slots_[i].used) {
      if (slots_[i].key == key) return slots_[i].value;
      i = (i + 1) & mask_;
    }
    Slot& s = slots_[i];
    s.used = true;
    s.key = key;
    s.value = Value();
    ++size_;
    return s.value;
  }

  Value* Find(const Key& key) {
    size_t i = Hash()(key) & mask_;
    while (slots_[i].used) {
      if (slots_[i].key == key) return &slots_[i].value;
      i = (i + 1) & mask_;
    }
    return nullptr;
  }
  const Value* Find(const Key& key) const { return const_cast<FlatMap*>(this)->Find(key); }

  size_t size() const { return size_; }

  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& s : slots_) {
      if (s.used) fn(s.key, s.value);
    }
  }
  // The same with the values open to change (not the keys).
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (Slot& s : slots_) {
      if (s.used) fn(static_cast<const Key&>(s.key), s.value);
    }
  }

 private:
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };

  void Rehash(size_t capacity) {
    std::vector<Slot> slots(capacity);
    size_t mask = capacity - 1;
    for (Slot& old : slots_) {
      if (!old.used) continue;
      size_t j = Hash()(old.key) & mask;
      while (slots[j].used) j = (j + 1) & mask;
      slots[j] = std::move(old);
    }
    slots_.swap(slots);
    mask_ = mask;
    // Grow before an insert would make it more than 3/4 full (kept, not
    // recomputed by every lookup).
    grow_at_ = capacity / 4 * 3;
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t grow_at_ = 0;
  size_t size_ = 0;
};

}  // namespace crossfree::analyzer
