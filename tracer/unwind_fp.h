// SPDX-License-Identifier: Apache-2.0
// Tracer: frame-pointer stack walking with per-thread stack bounds, the
// building block of the fp and hybrid unwind modes.
#pragma once

#include <cstdint>

namespace crossfree::tracer {

// The calling thread's stack, [low, high). Both 0 when unknown.
struct StackBounds {
  uintptr_t low;
  uintptr_t high;
};

// Returns the calling thread's stack bounds, computed on the thread's first
// call and cached in initial-exec TLS. The first call uses
// pthread_getattr_np, which allocates (and on the main thread reads
// /proc/self/maps): call it inside the tracer's recursion guard, or once
// from InitStacks / thread start. A nested call on the same thread while the
// bounds are being computed gets {0, 0}.
StackBounds CurrentThreadStackBounds();

// True if fp may be dereferenced as a frame record {saved fp, return
// address} on a stack with the given bounds.
inline bool PlausibleFrame(uintptr_t fp, const StackBounds& b) {
  return (fp & 7) == 0 && fp >= b.low && fp + 16 <= b.high;
}

// Walks saved frame pointers outward from frame record `fp` (whose return
// address is NOT recorded: it is the frame the caller already has).
// Appends the return addresses of the following frames to frames[depth..max)
// and returns the new depth. Stops at a null, misaligned, out-of-bounds or
// non-increasing frame pointer, or a return address below 4 KiB.
// If last_fp is not null it receives the last frame record used (the one
// whose return address was recorded last), for handing over to DWARF.
int WalkFramePointers(uintptr_t fp, const StackBounds& bounds, uint64_t* frames,
                      int depth, int max, uintptr_t* last_fp);

}  // namespace crossfree::tracer
