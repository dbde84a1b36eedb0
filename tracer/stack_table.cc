// SPDX-License-Identifier: Apache-2.0
// Tracer: lock-free stack interning table (see stack_table.h).
#include "tracer/stack_table.h"

#include <sched.h>
#include <sys/mman.h>

#include <cstring>

namespace crossfree::tracer {
namespace {

// 64-bit FNV-1a over the frames followed by a final avalanche; never 0 so
// that 0 can mean "empty slot".
uint64_t HashFrames(const uint64_t* frames, int depth) {
  uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(depth);
  for (int i = 0; i < depth; ++i) {
    h ^= frames[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h == 0 ? 1 : h;
}

size_t RoundUpToPage(size_t n) { return (n + 4095) & ~size_t{4095}; }

}  // namespace

void StackTable::Release() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
  slots_ = nullptr;
  frames_ = nullptr;
  by_id_ = nullptr;
}

void StackTable::Reset() {
  if (mapping_ == nullptr) return;
  // Private anonymous pages read as zero again after MADV_DONTNEED: every
  // slot empty, and the pages cost nothing until touched.
  madvise(mapping_, mapping_bytes_, MADV_DONTNEED);
  frames_used_.store(0, std::memory_order_relaxed);
  next_id_.store(1, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
}

bool StackTable::Init(uint32_t max_stacks, uint64_t max_frames) {
  if (slots_ != nullptr || max_stacks == 0 || max_frames == 0) return false;
  // Load factor at most 1/2 keeps probe sequences short.
  uint64_t slots = 16;
  while (slots < 2ull * max_stacks) slots <<= 1;
  size_t slot_bytes = RoundUpToPage(slots * sizeof(Slot));
  size_t by_id_bytes = RoundUpToPage((uint64_t{max_stacks} + 1) * sizeof(uint32_t));
  size_t frame_bytes = RoundUpToPage(max_frames * sizeof(uint64_t));
  size_t total = slot_bytes + by_id_bytes + frame_bytes;
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  char* base = static_cast<char*>(p);
  mapping_ = p;
  mapping_bytes_ = total;
  // Anonymous memory is zero: every slot starts empty (hash 0, id 0).
  by_id_ = reinterpret_cast<uint32_t*>(base + slot_bytes);
  frames_ = reinterpret_cast<uint64_t*>(base + slot_bytes + by_id_bytes);
  max_frames_ = max_frames;
  max_stacks_ = max_stacks;
  slot_mask_ = slots - 1;
  slots_ = reinterpret_cast<Slot*>(base);
  return true;
}

uint32_t StackTable::Intern(const uint64_t* frames, int depth, bool* is_new) {
  *is_new = false;
  if (depth <= 0 || slots_ == nullptr) return 0;
  const uint64_t hash = HashFrames(frames, depth);
  const size_t bytes = static_cast<size_t>(depth) * sizeof(uint64_t);
  for (uint64_t probe = 0; probe <= slot_mask_; ++probe) {
    Slot& slot = slots_[(hash + probe) & slot_mask_];
    uint64_t seen = slot.hash.load(std::memory_order_acquire);
    if (seen == 0) {
      if (slot.hash.compare_exchange_strong(seen, hash, std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
        // We own this slot: reserve frames, then an id, then publish.
        uint64_t offset = frames_used_.fetch_add(depth, std::memory_order_relaxed);
        if (offset + depth > max_frames_) {
          slot.id.store(kDeadId, std::memory_order_release);
          dropped_.fetch_add(1, std::memory_order_relaxed);
          return 0;
        }
        uint32_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
        if (id > max_stacks_) {
          slot.id.store(kDeadId, std::memory_order_release);
          dropped_.fetch_add(1, std::memory_order_relaxed);
          return 0;
        }
        std::memcpy(frames_ + offset, frames, bytes);
        slot.depth = static_cast<uint32_t>(depth);
        slot.frames_offset = offset;
        by_id_[id] = static_cast<uint32_t>((hash + probe) & slot_mask_);
        slot.id.store(id, std::memory_order_release);
        count_.fetch_add(1, std::memory_order_relaxed);
        *is_new = true;
        return id;
      }
      // Lost the race; `seen` now holds the winner's hash.
    }
    if (seen != hash) continue;
    uint32_t id = slot.id.load(std::memory_order_acquire);
    for (int spins = 0; id == 0; ++spins) {
      if (spins > 100000) {  // publisher stalled (e.g. we interrupted it)
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return 0;
      }
      if (spins > 64) sched_yield();
      id = slot.id.load(std::memory_order_acquire);
    }
    if (id == kDeadId) continue;
    if (slot.depth == static_cast<uint32_t>(depth) &&
        std::memcmp(frames_ + slot.frames_offset, frames, bytes) == 0) {
      return id;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

int StackTable::Lookup(uint32_t id, uint64_t* out, int max) const {
  if (slots_ == nullptr || id == 0 || id > max_stacks_) return 0;
  if (id >= next_id_.load(std::memory_order_acquire)) return 0;
  const Slot& slot = slots_[by_id_[id]];
  if (slot.id.load(std::memory_order_acquire) != id) return 0;
  int depth = static_cast<int>(slot.depth);
  if (depth > max) depth = max;
  std::memcpy(out, frames_ + slot.frames_offset, depth * sizeof(uint64_t));
  return depth;
}

}  // namespace crossfree::tracer
