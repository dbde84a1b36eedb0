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
// pthread_getattr_np, which allocates (served by an OwnAllocationScope,
// real_alloc.h, not by the program's allocator) and on the main thread
// reads /proc/self/maps: call it inside the tracer's recursion guard, or
// once from InitStacks / thread start. A nested call on the same thread while the
// bounds are being computed gets {0, 0}.
// While the thread is inside pthread_getattr_np (the target's call, see
// crossfree_in_getattr), the bounds are not computed now: glibc holds the
// thread's lock there and allocates (our hook runs), and our own
// pthread_getattr_np call would wait for that lock forever. That call
// returns {0, 0} and a later one computes them.
StackBounds CurrentThreadStackBounds();

// The per-thread cache behind CurrentThreadStackBounds. Trivial type, so TLS
// needs no constructor call (which could allocate) and the initial-exec
// model gives a plain %fs-relative access. constinit on this declaration
// too: without it every other file must assume a dynamic initializer and
// tests gcc's TLS init function before each access.
struct ThreadBoundsCache {
  uintptr_t low;
  uintptr_t high;
  int state;  // 0 = unknown, 1 = computing, 2 = ready, 3 = failed
};
extern thread_local constinit ThreadBoundsCache tls_stack_bounds __attribute__((tls_model("initial-exec")));

// CurrentThreadStackBounds with its common case (already computed) inline:
// the hook path asks for the bounds twice per event.
inline StackBounds ThreadStackBoundsFast() {
  const ThreadBoundsCache& c = tls_stack_bounds;
  if (__builtin_expect(c.state == 2, 1)) return {c.low, c.high};
  return CurrentThreadStackBounds();
}

// True if fp may be dereferenced as a frame record {saved fp, return
// address} on a stack with the given bounds: [fp, fp + 16) lies inside
// [low, high). Written so that no term can wrap around (fp + 16 would for
// fp = -8 or -16, and the walk would then read address 0).
inline bool PlausibleFrame(uintptr_t fp, const StackBounds& b) {
  return (fp & 7) == 0 && b.low <= b.high && b.high - b.low >= 16 && fp >= b.low &&
         fp <= b.high - 16;
}

// The part of the current stack that a walk may read: [sp, top of the stack
// the caller runs on), where sp is this function's own frame (live, so
// mapped, whatever frame address the caller was handed). Everything in it
// is mapped: a stack is mapped from its running frame up to its top. Which
// stack the caller runs on:
//  - the thread's own (pthread bounds): its top;
//  - the alternate signal stack, while a handler runs on it (sigaltstack(2)
//    says so: one system call, only off the thread's stack): its top;
//  - anything else (a makecontext/swapcontext coroutine, a thread created
//    with clone(2) that shares this thread's TLS): its top is unknown, and
//    only the rest of the page holding sp is known to be mapped.
// A frame record handed to a walker must then lie inside these bounds
// (PlausibleFrame) before it is read.
StackBounds CurrentWalkBounds();

// True if fp lies on the calling thread's own stack (its pthread bounds).
// False when the bounds are unknown.
inline bool OnThreadStack(uintptr_t fp) {
  const StackBounds thread = ThreadStackBoundsFast();
  return thread.high != 0 && fp >= thread.low && fp < thread.high;
}

// Walks saved frame pointers outward from frame record `fp` (whose return
// address is NOT recorded: it is the frame the caller already has).
// Appends the return addresses of the following frames to frames[depth..max)
// and returns the new depth. Every load is proven inside `bounds` first
// (PlausibleFrame); the walk stops at a null, misaligned, out-of-bounds or
// non-increasing frame pointer (so a self-loop or cycle ends it), or a
// return address below 4 KiB or outside every module's executable segments
// (code_ranges.h: junk read through a frame pointer that is not one).
// If last_fp is not null it receives the last frame record used (the one
// whose return address was recorded last), for handing over to DWARF.
int WalkFramePointers(uintptr_t fp, const StackBounds& bounds, uint64_t* frames,
                      int depth, int max, uintptr_t* last_fp);

}  // namespace crossfree::tracer
