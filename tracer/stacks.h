// SPDX-License-Identifier: Apache-2.0
// Tracer: call-stack capture and process-wide stack interning.
//
// Called from the allocation hooks, on any thread, possibly from a signal
// handler or during early start-up: nothing here may allocate through the
// hooked malloc, take a lock that a hooked thread could hold, or use stdio.
// Memory comes from mmap at init time.
#pragma once

#include <cstdint>

#include "tracer/unwind_cfi.h"

namespace crossfree::tracer {

// One thread's capture state, kept in its mmap'd thread state (zero bytes
// = empty; any thread may take it over later: everything in it stays true).
// Per-thread stacks already interned: a stack seen again is compared frame
// by frame with the copy here and takes its id without hashing or probing
// the process-wide table (direct-mapped on the innermost frames and the
// depth; a hit needs every frame equal).
inline constexpr int kThreadStackSlots = 32;
inline constexpr int kThreadStackFrames = 32;
struct ThreadStackSlot {
  uint32_t id;  // 0: empty
  uint32_t depth;
  uint64_t frames[kThreadStackFrames];
};
struct CaptureCache {
  WalkMemo walk;
  ThreadStackSlot stacks[kThreadStackSlots];
};

enum class UnwindMode : uint8_t {
  kFramePointer,  // walk rbp chains; cheapest, stops in code without frame pointers
  kLibunwind,     // libunwind (DWARF CFI), works everywhere, slower
  kHybrid,        // frame pointers while the chain is sound, DWARF below (default)
};

// Parses "fp", "libunwind", "hybrid". Returns false for anything else.
bool ParseUnwindMode(const char* text, UnwindMode* mode);

// One-time set-up, called from the tracer's constructor before any hook
// records a stack; may be called again to switch modes (tests, benchmarks).
// max_depth is the depth the tracer records (a hint: each CaptureStack call
// honours its own max_depth, so a caller may ask for extra frames that it
// drops afterwards). Returns false if the mode cannot work (the tracer then
// records without stacks). Allocates (libunwind, libdw): call it inside the
// tracer's recursion guard.
bool InitStacks(UnwindMode mode, int max_depth);

// Captures the stack of the code that called a hook. The hook passes its own
// __builtin_return_address(0) and __builtin_frame_address(0): frames[0] is
// that return address (the allocating caller, never a tracer frame) and the
// walk continues from the hook's frame outward. Returns the depth written.
// The hook must keep a frame pointer (-fno-omit-frame-pointer) and must not
// tail-call. Call it inside the tracer's recursion guard: the first capture
// on a thread reads its stack bounds (pthread_getattr_np allocates, from an
// OwnAllocationScope), and in
// hybrid mode the first capture through a new module reads its CFI (libdw
// allocates, dl_iterate_phdr takes the loader lock).
//
// cache: the calling thread's CaptureCache (see below), or null. With it,
// hybrid mode replays the frames unchanged since the thread's previous
// capture (unwind_cfi.h, the walk memo) and InternStack looks in the
// thread's own table first; results are the same either way.
struct CaptureCache;
int CaptureStack(void* hook_return_address, void* hook_frame_address,
                 uint64_t* frames, int max_depth, CaptureCache* cache = nullptr);

// Attach mode, between two sessions (no thread interns): forgets every
// interned stack, so that the next trace defines each stack it uses.
// Threads' CaptureCache tables must be emptied too (they hold ids).
void ResetInternedStacks();

// Check mode (CROSSFREE_STACK_CHECK=1): every hybrid capture also walks the
// whole stack from its rules, without reusing the thread's previous walk,
// and aborts the process with a message on any difference. For tests: it
// makes each capture cost two walks.
void SetStackCheck(bool enabled);

// True in check mode (SetStackCheck).
bool StackCheckEnabled();

// The stack id of the capture just made with cache, without interning it
// again: true, with *id, when that capture's walk only replayed a memo
// whole (its frames equal those of the capture the memo described before)
// and the id of that capture was remembered with the same want (the
// capture's max_depth) and skip (whatever else turns the frames into the
// interned stack, compared as a pointer). Only the thread owning cache.
inline bool RememberedStackId(const CaptureCache& cache, int want, const void* skip,
                              uint32_t* id);
// Remembers id as the stack of the capture just made with cache, for the
// next capture that replays the same memo whole.
inline void RememberStackId(CaptureCache& cache, int want, const void* skip, uint32_t id);

// Returns the process-wide id of this stack, or format::kNoStack when depth
// is 0 or the table is full (counted, reported at exit). *is_new is set for exactly one caller per distinct stack: that
// caller must write the stack's definition into its own chunk. Lock-free.
uint32_t InternStack(const uint64_t* frames, int depth, bool* is_new,
                     CaptureCache* cache = nullptr);

// Distinct stacks interned so far (ids 1..N are in use). For tests and the
// tracer's exit summary.
uint32_t InternedStackCount();

// Stacks that could not be interned (table full, or a stalled publisher):
// their events carry kNoStack. For the tracer's exit summary.
uint64_t DroppedStackCount();

// ---- Inline definitions (called once per event by the recorder). ----

inline bool RememberedStackId(const CaptureCache& cache, int want, const void* skip,
                              uint32_t* id) {
  const MemoSteps* memo = cache.walk.last;
  if (memo == nullptr || cache.walk.whole == 0 || memo->id_valid == 0 ||
      memo->id_want != want || memo->id_skip != skip) {
    return false;
  }
  *id = memo->stack_id;
  return true;
}

inline void RememberStackId(CaptureCache& cache, int want, const void* skip, uint32_t id) {
  MemoSteps* memo = cache.walk.last;
  if (memo == nullptr) return;
  memo->stack_id = id;
  memo->id_want = want;
  memo->id_skip = skip;
  memo->id_valid = 1;
}

}  // namespace crossfree::tracer
