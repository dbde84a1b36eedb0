// SPDX-License-Identifier: Apache-2.0
// Tracer: a scope in which the tracer's own allocations bypass the
// program's allocator. Any thread may open one for itself.
#pragma once

#include <cstddef>
#include <cstdint>

namespace crossfree::tracer {

// The tracer's own allocations. Some library calls the tracer needs
// allocate (pthread_getattr_np, for a thread's stack bounds: a cpu set, an
// attribute extension, and on the main thread fopen's FILE and buffer;
// libdw and libelf, for CFI). Sent to the program's allocator, they would
// change what the program does: under jemalloc a thread's first malloc
// creates its tcache, so a thread that only frees would stop locking the
// owner's bins. Inside an OwnAllocationScope the malloc family serves this
// thread from the buffer the scope's owner provides (on its stack; none
// for long-lived blocks), then from the tracer's bootstrap arena (ArenaAlloc,
// real_alloc.h: the allocation hooks read the scope there); when both are
// full the allocation fails (libdw then has no CFI for that frame, and the
// stack ends there). Those blocks never reach the program's allocator.
// Signals are blocked for the scope: a handler's malloc must not get a
// block that dies with the scope. Only the thread that opened the scope
// uses it; an inner scope on the same thread leaves the outer one as is.
//
// Under attach (record -p) the scopes stay closed: there the program's
// calls reach the hooks only through the GOT entries the tracer rewrote,
// so a block the hooks served from the arena could later be freed by a
// call that bypasses them (straight into the program's allocator).
class OwnAllocationScope {
 public:
  // buffer may be null (size 0): blocks then come from the arena.
  OwnAllocationScope(unsigned char* buffer, size_t size);
  ~OwnAllocationScope();
  OwnAllocationScope(const OwnAllocationScope&) = delete;
  OwnAllocationScope& operator=(const OwnAllocationScope&) = delete;

 private:
  bool opened_ = false;
  uint64_t saved_mask_[2];  // the kernel's sigset_t: 64 signals, room for 128
};

// This thread's open scope: [cur, end) of its buffer; cur is null outside a
// scope. Initial-exec TLS, read by the allocation hooks' full path.
struct OwnAllocationBuffer {
  unsigned char* cur;
  unsigned char* end;
};
// Keeps every later scope closed (attach mode). Called once, before the
// first hook runs.
void DisableOwnAllocationScopes();

extern thread_local constinit OwnAllocationBuffer tls_own_allocation
    __attribute__((tls_model("initial-exec")));
inline bool InOwnAllocationScope() { return tls_own_allocation.cur != nullptr; }

}  // namespace crossfree::tracer
