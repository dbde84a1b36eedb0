// SPDX-License-Identifier: Apache-2.0
// Tracer: frame-pointer walking and per-thread stack bounds.
#include "tracer/unwind_fp.h"

#include <pthread.h>
#include <signal.h>

#include "tracer/code_ranges.h"
#include "tracer/own_allocation.h"

// Non-zero while this thread runs pthread_getattr_np (interpose_process.cc).
extern "C" {
__thread int crossfree_in_getattr __attribute__((tls_model("initial-exec"))) = 0;
}

namespace crossfree::tracer {
thread_local constinit ThreadBoundsCache tls_stack_bounds
    __attribute__((tls_model("initial-exec"))) = {0, 0, 0};

StackBounds CurrentThreadStackBounds() {
  ThreadBoundsCache& c = tls_stack_bounds;
  if (__builtin_expect(c.state == 2, 1)) return {c.low, c.high};
  if (c.state != 0 || __atomic_load_n(&crossfree_in_getattr, __ATOMIC_RELAXED) != 0) {
    return {0, 0};
  }
  c.state = 1;  // a nested hook on this thread sees "unknown", not a loop
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  {
    // What pthread_getattr_np allocates (about 250 bytes; on the main
    // thread about 1.6 KiB more for fopen) comes from here, not from the
    // program's allocator (real_alloc.h).
    alignas(16) unsigned char buffer[3072];
    OwnAllocationScope own(buffer, sizeof(buffer));
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      if (pthread_attr_getstack(&attr, &addr, &size) != 0) size = 0;
      pthread_attr_destroy(&attr);
    }
  }
  if (size == 0) {
    c.state = 3;
    return {0, 0};
  }
  c.low = reinterpret_cast<uintptr_t>(addr);
  c.high = c.low + size;
  c.state = 2;
  return {c.low, c.high};
}

__attribute__((noinline)) StackBounds CurrentWalkBounds() {
  const auto sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const StackBounds thread = ThreadStackBoundsFast();
  if (thread.high != 0 && sp >= thread.low && sp < thread.high) return {sp, thread.high};
  stack_t alt;
  if (sigaltstack(nullptr, &alt) == 0 && (alt.ss_flags & SS_ONSTACK) != 0) {
    const auto lo = reinterpret_cast<uintptr_t>(alt.ss_sp);
    uintptr_t hi = 0;
    if (!__builtin_add_overflow(lo, alt.ss_size, &hi) && sp >= lo && sp < hi) return {sp, hi};
  }
  // Unknown stack: only the page holding our own frame is known to be
  // mapped. sp is a real stack address, far below 2^64 - 4096: no wrap.
  constexpr uintptr_t kPage = 4096;
  return {sp, (sp | (kPage - 1)) + 1};
}


int WalkFramePointers(uintptr_t fp, const StackBounds& bounds_in, uint64_t* frames,
                      int depth, int max, uintptr_t* last_fp) {
  // A local copy: the stores to frames (also uint64_t) could otherwise
  // alias the bounds and make every check reload them.
  const StackBounds bounds = bounds_in;
  if (!PlausibleFrame(fp, bounds)) return depth;
  // fp passed, so low <= high and high - low >= 16: for every later record
  // PlausibleFrame is exactly these three tests (top cannot wrap).
  const uintptr_t low = bounds.low;
  const uintptr_t top = bounds.high - 16;
  while (depth < max) {
    // fp passed PlausibleFrame: both words of its record are in bounds.
    uintptr_t next = reinterpret_cast<const uintptr_t*>(fp)[0];
    if (next <= fp || (next & 7) != 0 || next < low || next > top) break;
    uintptr_t ret = reinterpret_cast<const uintptr_t*>(next)[1];
    // A word that is no return address (code without frame pointers left
    // rbp pointing at data): the chain is broken here.
    if (ret < 4096 || !InCode(ret)) break;
    frames[depth++] = ret;
    fp = next;
  }
  if (last_fp != nullptr) *last_fp = fp;
  return depth;
}

}  // namespace crossfree::tracer
