// SPDX-License-Identifier: Apache-2.0
// Tracer: libunwind-based capture (UNW_LOCAL_ONLY).
#define UNW_LOCAL_ONLY
#include "tracer/unwind_libunwind.h"

#include <libunwind.h>

#include <cstring>

#include "tracer/counter_scope.h"

extern "C" {
__thread int crossfree_in_unwinder __attribute__((tls_model("initial-exec"))) = 0;
}

namespace crossfree::tracer {
namespace {

// Marks the scope in which libunwind runs for the tracer.
class InUnwinder : CounterScope {
 public:
  InUnwinder() : CounterScope(crossfree_in_unwinder) {}
};

// How many frames (our own and the hook's) may sit between unw_getcontext
// and the hook's caller before we give up looking for the caller.
constexpr int kMaxSkippedFrames = 32;
// Deepest stack this mode returns (format::kMaxStackDepth plus the slack
// the tracer asks for when it drops allocator frames).
constexpr int kMaxDepth = 256 + 64;

}  // namespace

bool InitLibunwind() {
  InUnwinder in_unwinder;
  // The default global cache takes a lock and masks signals on every
  // lookup; a per-thread cache avoids both.
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  uint64_t frames[8];
  int depth = CaptureWithLibunwind(
      reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
      reinterpret_cast<uintptr_t>(__builtin_frame_address(0)), frames, 8);
  return depth > 0;
}

__attribute__((noinline)) int CaptureWithLibunwind(uintptr_t hook_return_address,
                                                   uintptr_t hook_frame_address,
                                                   uint64_t* frames, int max_depth) {
  if (max_depth <= 0) return 0;
  (void)hook_frame_address;
  // unw_backtrace takes libunwind's fast path (a per-thread cache of frame
  // layouts per address, x86-64 only) and is far cheaper than unw_step.
  // It starts at this function: drop entries up to the hook's return
  // address, which the caller's frame is the first to execute at.
  if (max_depth > kMaxDepth) max_depth = kMaxDepth;
  InUnwinder in_unwinder;
  void* ips[kMaxDepth + kMaxSkippedFrames];
  int n = unw_backtrace(ips, max_depth + kMaxSkippedFrames);
  for (int i = 0; i < n && i < kMaxSkippedFrames; ++i) {
    if (reinterpret_cast<uintptr_t>(ips[i]) != hook_return_address) continue;
    int depth = 0;
    for (int j = i; j < n && depth < max_depth; ++j) {
      frames[depth++] = reinterpret_cast<uintptr_t>(ips[j]);
    }
    return depth;
  }
  return -1;
}

int ContinueWithLibunwind(uintptr_t ip, uintptr_t sp, uintptr_t bp, const StackBounds& bounds,
                          uint64_t* frames, int depth, int max_depth) {
  if (depth >= max_depth || sp < bounds.low || sp >= bounds.high) return depth;
  InUnwinder in_unwinder;
  // On x86-64 unw_context_t is a ucontext_t: seed it with the three
  // registers that CFA rules in practice depend on. libunwind treats the
  // seeded frame as interrupted at rip, so point rip into the call
  // instruction (ip - 1) for the right unwind rule.
  unw_context_t context;
  std::memset(&context, 0, sizeof(context));
  if (unw_getcontext(&context) != 0) return depth;
  context.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(ip - 1);
  context.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(sp);
  context.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(bp);
  unw_cursor_t cursor;
  if (unw_init_local(&cursor, &context) != 0) return depth;
  uintptr_t last_sp = sp;
  while (depth < max_depth && unw_step(&cursor) > 0) {
    unw_word_t next_ip = 0;
    unw_word_t next_sp = 0;
    if (unw_get_reg(&cursor, UNW_REG_IP, &next_ip) < 0 || next_ip < 4096) break;
    if (unw_get_reg(&cursor, UNW_REG_SP, &next_sp) < 0 || next_sp <= last_sp ||
        next_sp > bounds.high) {
      break;
    }
    frames[depth++] = next_ip;
    last_sp = next_sp;
  }
  return depth;
}

}  // namespace crossfree::tracer
