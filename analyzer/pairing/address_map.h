// SPDX-License-Identifier: Apache-2.0
// Analyzer: the pairing pass's table of addresses (pairing.cc). One per
// pairing worker, used by that worker's thread only.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "analyzer/pairing/size_class.h"
#include "analyzer/pairing/stream_index.h"

namespace crossfree::analyzer::internal {

// The state of every address seen, open addressing with linear probing in
// one array (one cache line touched per lookup), address 0 = empty slot.
// Freed addresses stay, so a second free is told from an unknown one.
constexpr uint8_t kLive = 1;
constexpr uint8_t kFreed = 2;
constexpr uint8_t kLiveBeforeWindow = 3;  // allocated before the analysis window

// Recording epochs: the number of window closes seen before an event. An
// address whose last event is of an earlier epoch than the current one had a
// closed stretch in between, in which the tracer saw nothing.
constexpr uint32_t kMaxEpoch = 0xffff;

struct AddressState {
  uint64_t address;
  uint64_t size;
  uint32_t stack;
  StreamIndex thread;
  uint8_t state;   // 0 (new), kLive or kFreed
  // SizeClassIndex(size) while kLive, worked out once at the allocation:
  // the pair its free makes is keyed by it.
  uint8_t size_class;
  uint16_t epoch;  // of the address's last event, saturated at kMaxEpoch
  uint32_t alloc_tick;  // while kLive: when it was allocated (Shared::tick_shift)
};
static_assert(sizeof(AddressState) == 32);
static_assert(kSizeClassCount <= 256);  // AddressState::size_class

class AddressMap {
 public:
  AddressMap() { Resize(1u << 16); }

  AddressState& FindOrInsert(uint64_t address) {
    size_t i = Index(address);
    for (;;) {
      AddressState& s = slots_[i];
      if (s.address == address) return s;
      if (s.address == 0) {
        // Grown only when an address is added, not checked for every lookup.
        if (size_ >= grow_at_) {
          Resize(slots_.size() * 2);
          return FindOrInsert(address);
        }
        s.address = address;
        s.state = 0;
        ++size_;
        return s;
      }
      i = (i + 1) & mask_;
    }
  }

  // The address's state, null when it was never seen. Adds nothing.
  const AddressState* Find(uint64_t address) const {
    for (size_t i = Index(address);; i = (i + 1) & mask_) {
      const AddressState& s = slots_[i];
      if (s.address == address) return &s;
      if (s.address == 0) return nullptr;
    }
  }

  void Prefetch(uint64_t address) const { __builtin_prefetch(&slots_[Index(address)]); }

  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const AddressState& s : slots_) {
      if (s.address != 0) fn(s);
    }
  }

 private:
  // Fibonacci hashing: the multiply spreads the low bits upward. The
  // address is first rotated right by 4, past the bits malloc's 16-byte
  // alignment leaves 0: multiplied in place, a stride of 64 bytes (a
  // typical slab of equal objects) made runs of neighbouring slots and
  // about 3 probes per lookup at half load, against 1.1 rotated. Rotated,
  // not shifted, so that addresses apart by less than 16 still differ.
  size_t Index(uint64_t address) const {
    return static_cast<size_t>((std::rotr(address, 4) * 0x9e3779b97f4a7c15ULL) >> shift_);
  }

  void Resize(size_t capacity) {
    std::vector<AddressState> old;
    old.swap(slots_);
    slots_.assign(capacity, AddressState{});
    mask_ = capacity - 1;
    shift_ = 64 - __builtin_ctzll(capacity);
    grow_at_ = capacity / 4 * 3;  // at most 3/4 full: probe sequences stay short
    size_ = 0;
    for (const AddressState& s : old) {
      if (s.address != 0) FindOrInsert(s.address) = s;
    }
  }

  std::vector<AddressState> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t grow_at_ = 0;
  size_t size_ = 0;
};

}  // namespace crossfree::analyzer::internal
