// SPDX-License-Identifier: Apache-2.0
// Tracer: call-stack capture and process-wide stack interning.
//
// Called from the allocation hooks, on any thread, possibly from a signal
// handler or during early start-up: nothing here may allocate through the
// hooked malloc, take a lock that a hooked thread could hold, or use stdio.
// Memory comes from mmap at init time.
#pragma once

#include <cstdint>

namespace crossfree::tracer {

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
// on a thread reads its stack bounds (pthread_getattr_np allocates), and in
// hybrid mode the first capture through a new module reads its CFI (libdw
// allocates, dl_iterate_phdr takes the loader lock).
int CaptureStack(void* hook_return_address, void* hook_frame_address,
                 uint64_t* frames, int max_depth);

// Check mode (CROSSFREE_STACK_CHECK=1): every hybrid capture also walks the
// whole stack from its rules, without reusing the thread's previous walk,
// and aborts the process with a message on any difference. For tests: it
// makes each capture cost two walks.
void SetStackCheck(bool enabled);

// Returns the process-wide id of this stack, or format::kNoStack when depth
// is 0 or the table is full (counted, reported at exit). *is_new is set for exactly one caller per distinct stack: that
// caller must write the stack's definition into its own chunk. Lock-free.
uint32_t InternStack(const uint64_t* frames, int depth, bool* is_new);

// Distinct stacks interned so far (ids 1..N are in use). For tests and the
// tracer's exit summary.
uint32_t InternedStackCount();

// Stacks that could not be interned (table full, or a stalled publisher):
// their events carry kNoStack. For the tracer's exit summary.
uint64_t DroppedStackCount();

}  // namespace crossfree::tracer
