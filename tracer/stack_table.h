// SPDX-License-Identifier: Apache-2.0
// Tracer: lock-free, append-only table that interns call stacks and hands
// out dense ids (1, 2, 3, ...). Backs InternStack() in stacks.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace crossfree::tracer {

// StackTable maps a stack (array of return addresses) to a process-wide id.
//
// Memory: one anonymous mmap made by Init() (MAP_NORESERVE, so only touched
// pages cost RAM): an open-addressing slot array and an arena for frames.
// Nothing is ever freed or moved, so a published entry stays valid forever.
//
// Threads: Init() once, before any other call, from one thread. Intern() is
// safe from any thread concurrently, lock-free, and never allocates. An
// inserter claims an empty slot with a CAS on its hash word, so exactly one
// caller per distinct stack gets is_new; other threads seeing a slot that
// is claimed but not yet published spin briefly (the publisher is running a
// short memcpy), and give up with kNoStack after a bounded wait so that a
// signal handler interrupting the publisher on the same thread cannot hang.
//
// Full table (no slot, arena or id left): Intern() returns 0 (kNoStack) and
// counts the drop in Dropped().
class StackTable {
 public:
  constexpr StackTable() = default;
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;
  // Trivial destructor on purpose: the process-wide table must stay mapped
  // while hooks run during exit (no atexit registration, no munmap). A
  // table made by a test calls Release() to unmap.
  ~StackTable() = default;
  void Release();
  // Empties the table (ids start at 1 again), keeping its mapping. Only
  // while no thread interns (attach: between two sessions).
  void Reset();

  // Reserves room for max_stacks stacks holding max_frames frames in total.
  // Returns false if mmap fails or the table was initialised already.
  bool Init(uint32_t max_stacks, uint64_t max_frames);
  bool initialized() const { return slots_ != nullptr; }

  // Returns the id of frames[0..depth), 0 if depth <= 0, the table is not
  // initialised, or it is full. *is_new is true for the one caller that
  // created the entry.
  uint32_t Intern(const uint64_t* frames, int depth, bool* is_new);

  // Copies the frames of stack `id` into out (up to max) and returns the
  // depth, or 0 for an unknown id. Any thread; for tests and diagnostics.
  int Lookup(uint32_t id, uint64_t* out, int max) const;

  uint32_t Count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t Dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> hash;   // 0 = empty; set once by the claiming CAS
    std::atomic<uint32_t> id;     // 0 = being published, kDeadId = abandoned
    uint32_t depth;
    uint64_t frames_offset;       // index into frames_
  };
  static constexpr uint32_t kDeadId = 0xffffffffu;

  Slot* slots_ = nullptr;
  uint64_t slot_mask_ = 0;
  uint64_t* frames_ = nullptr;
  uint64_t max_frames_ = 0;
  uint32_t max_stacks_ = 0;
  // id -> slot index, so Lookup() is O(1).
  uint32_t* by_id_ = nullptr;
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;

  std::atomic<uint64_t> frames_used_{0};
  std::atomic<uint32_t> next_id_{1};
  std::atomic<uint32_t> count_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace crossfree::tracer
