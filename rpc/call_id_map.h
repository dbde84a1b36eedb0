// SPDX-License-Identifier: Apache-2.0
// CallIdMap: a flat open-addressing map from call id to a call pointer, used
// by Connection instead of std::unordered_map so that adding a call costs no
// heap node (the node was one heap allocation per call on each side).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace crossfree::rpc {

// Owner: one Connection; thread: its reactor only (no lock). Values must not
// be null (null marks an empty slot). The slot array starts at kInitialSlots
// and doubles when half full; it never shrinks, so its size is bounded by
// twice the largest number of calls ever in flight on the connection.
// Growing allocates on the owning reactor thread and frees there.
template <typename V>
class CallIdMap {
 public:
  static constexpr size_t kInitialSlots = 64;

  CallIdMap() : slots_(new Slot[kInitialSlots]()), mask_(kInitialSlots - 1) {}
  CallIdMap(const CallIdMap&) = delete;
  CallIdMap& operator=(const CallIdMap&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Returns the value for `id`, or nullptr.
  V* Find(int32_t id) const {
    for (size_t i = Home(id);; i = (i + 1) & mask_) {
      if (slots_[i].value == nullptr) return nullptr;
      if (slots_[i].id == id) return slots_[i].value;
    }
  }

  // Adds id -> value; false (and no change) if `id` is already present.
  bool Insert(int32_t id, V* value) {
    if ((size_ + 1) * 2 > mask_ + 1) Grow();
    for (size_t i = Home(id);; i = (i + 1) & mask_) {
      if (slots_[i].value == nullptr) {
        slots_[i] = Slot{id, value};
        ++size_;
        return true;
      }
      if (slots_[i].id == id) return false;
    }
  }

  // Removes `id`; returns whether it was present. Backward-shift deletion
  // keeps probe chains intact without tombstones.
  bool Erase(int32_t id) {
    size_t i = Home(id);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].value == nullptr) return false;
      if (slots_[i].id == id) break;
    }
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j].value != nullptr; j = (j + 1) & mask_) {
      size_t home = Home(slots_[j].id);
      // j may move into the hole unless its home lies in (hole, j].
      bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return true;
  }

  // Calls f(id, value) for every entry; f must not modify the map.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i <= mask_; ++i) {
      if (slots_[i].value != nullptr) f(slots_[i].id, slots_[i].value);
    }
  }

  void Swap(CallIdMap& other) {
    std::swap(slots_, other.slots_);
    std::swap(mask_, other.mask_);
    std::swap(size_, other.size_);
  }

 private:
  struct Slot {
    int32_t id = 0;
    V* value = nullptr;
  };

  size_t Home(int32_t id) const {
    return static_cast<size_t>((static_cast<uint64_t>(static_cast<uint32_t>(id)) *
                                0x9E3779B97F4A7C15ull) >>
                               32) &
           mask_;
  }

  void Grow() {
    std::unique_ptr<Slot[]> old = std::move(slots_);
    size_t old_slots = mask_ + 1;
    slots_.reset(new Slot[old_slots * 2]());
    mask_ = old_slots * 2 - 1;
    size_ = 0;
    for (size_t i = 0; i < old_slots; ++i) {
      if (old[i].value != nullptr) Insert(old[i].id, old[i].value);
    }
  }

  std::unique_ptr<Slot[]> slots_;
  size_t mask_;
  size_t size_ = 0;
};

}  // namespace crossfree::rpc
