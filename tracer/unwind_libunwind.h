// SPDX-License-Identifier: Apache-2.0
// Tracer: DWARF unwinding through libunwind (local address space only), for
// the libunwind and hybrid modes.
#pragma once

#include <cstdint>

#include "tracer/unwind_fp.h"

// Non-zero while this thread runs libunwind for the tracer. libunwind
// validates addresses by writing them into a pipe it creates with pipe2:
// the pipe2 hook (interpose_process.cc) moves those descriptors to 500 and
// above, out of the way of the target's own (which would otherwise start at
// 5, and which libunwind would read from and write into once the target
// reused the numbers).
extern "C" __thread int crossfree_in_unwinder __attribute__((tls_model("initial-exec")));

namespace crossfree::tracer {

// Sets per-thread caching for the local address space and runs one warm-up
// unwind, so that libunwind's own first-use allocations happen here (at
// tracer start-up) rather than inside a hook. Returns false if libunwind
// cannot unwind this process.
bool InitLibunwind();

// Unwinds the current thread with libunwind, skipping every frame up to and
// including the hook's own (identified by its return address and frame
// address), so frames[0] = hook_return_address. Returns the depth, or -1 if
// the hook's caller frame was not found (the caller then falls back to
// frame pointers).
int CaptureWithLibunwind(uintptr_t hook_return_address,
                         uintptr_t hook_frame_address, uint64_t* frames,
                         int max_depth);

// Continues an unwind from a known register state (the frame that will
// resume at return address `ip`, with stack pointer `sp` and frame pointer
// `bp`), appending return addresses after frames[depth-1]; `ip` itself must
// already be recorded. Stops as soon as a step leaves `bounds` (the stack
// pointer must stay inside it and grow). libunwind validates the loads of
// frames without CFI itself (a probe write of the address to a pipe).
// Returns the new depth.
int ContinueWithLibunwind(uintptr_t ip, uintptr_t sp, uintptr_t bp, const StackBounds& bounds,
                          uint64_t* frames, int depth, int max_depth);

}  // namespace crossfree::tracer
