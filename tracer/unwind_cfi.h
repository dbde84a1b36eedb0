// SPDX-License-Identifier: Apache-2.0
// Tracer: the hybrid unwinder. Walks the stack with per-return-address
// unwind rules taken from the modules' DWARF CFI (.eh_frame, read with
// elfutils libdw) and cached process-wide, so that after warm-up each frame
// costs one hash lookup and two loads, frame pointer or not.
#pragma once

#include <cstdint>

#include "tracer/unwind_fp.h"

namespace crossfree::tracer {

// Maps the rule cache. Call once from InitStacks (allocates through mmap
// only). Returns false if the mapping fails.
bool InitCfiUnwinder();

// Unwinds outward from the frame that executes at return address `pc` with
// stack pointer `sp` and frame pointer `fp` (pc itself is already recorded
// in frames[depth-1]). Appends return addresses and returns the new depth.
//
// Per frame: the rule for pc is looked up in a lock-free cache. On a miss
// the rule is computed from the module's CFI, which allocates (malloc,
// through libdw) and takes the loader lock (dl_iterate_phdr), so the caller
// must run inside the tracer's recursion guard; a process-wide try-lock
// serialises those fills and a thread that finds it taken does not wait, it
// continues with libunwind instead. Frames with rules outside the simple
// "CFA = rsp/rbp + offset, rbp and return address saved at CFA offsets"
// form (signal trampolines, hand-written assembly) are also handed to
// libunwind, which continues only while the stack pointer stays inside
// bounds. Code without any CFI (JIT, hand-written assembly) is walked by
// frame pointer, only through records inside bounds. Every address this
// walker reads is checked against `bounds` (CurrentWalkBounds: from
// the current frame to the top of the current stack) first, without overflow.
//
// use_memo: reuse what this thread's previous walk found for the frames
// that did not change, proven frame by frame (the walk memo in
// unwind_cfi.cc); the result is the same either way. false walks every
// frame from its rule (the stack check mode compares the two).
int WalkWithCfi(uintptr_t pc, uintptr_t sp, uintptr_t fp, const StackBounds& bounds,
                uint64_t* frames, int depth, int max_depth, bool use_memo = true);

// Turns the walk memo off for every walk (benchmarks: the cost without it).
void SetWalkMemo(bool enabled);

// Cache statistics for tests and benchmarks: rules computed so far, and
// frames handed over to libunwind.
struct CfiStats {
  uint64_t rules;
  uint64_t fallbacks;
};
CfiStats GetCfiStats();

// Tests only: while held, every cache miss behaves as if another thread were
// filling the cache (the capture continues with libunwind). Returns false if
// the lock could not be taken or released.
bool HoldCfiFillLockForTests(bool hold);

}  // namespace crossfree::tracer
