// SPDX-License-Identifier: Apache-2.0
// Tracer: the next definitions of the interposed functions (dlsym RTLD_NEXT)
// and the bootstrap arena that answers allocations made while dlsym itself
// runs. Resolved once, on the first hook call of any thread; afterwards the
// table is read-only. Any thread may call anything here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tracer/hook_table.h"
#include "tracer/own_allocation.h"

namespace crossfree::tracer {

// The next definition of every hook (hook_table.h), one pointer per row.
struct RealFunctions {
#define CROSSFREE_REAL_FIELD(field, symbol, required, ret, params) ret(*field) params;
  CROSSFREE_NEXT_HOOKS(CROSSFREE_REAL_FIELD)
#undef CROSSFREE_REAL_FIELD
};

namespace internal {
extern RealFunctions g_real;
extern int g_real_state;  // 2 once resolved
extern bool g_std_operators_direct;
// Attach mode (attach.h): resolve with RTLD_DEFAULT instead of RTLD_NEXT.
// Set by the control thread before the first resolution.
extern bool g_resolve_global;
bool ResolveSlow();
}  // namespace internal

// True once the table is resolved; never resolves (the hooks' fast paths,
// which fall back to a full path that does).
inline bool RealResolvedAlready() {
  return __atomic_load_n(&internal::g_real_state, __ATOMIC_ACQUIRE) == 2;
}

// True once the table is resolved; resolves on first use. While resolution
// runs (dlsym), it returns false and the malloc-family hooks serve requests
// from the arena.
inline bool RealResolved() { return RealResolvedAlready() || internal::ResolveSlow(); }

// Attach mode: the definition of name that the program's calls reach,
// dlsym(RTLD_DEFAULT) unless that is the executable's canonical PLT entry
// (a non-PIE program that takes the function's address), which would call
// through a GOT entry the tracer rewrites: then the first object in load
// order that defines it. Null when none does.
void* GlobalDefinition(const char* name);

// The resolved table (entries null while resolution runs).
inline const RealFunctions& Real() {
  RealResolved();
  return internal::g_real;
}

// Whether the plain operators new/new[] (throwing and nothrow) and the
// unaligned deletes may go straight to the real malloc and free instead of
// through libstdc++'s definitions. Those only call malloc (with a
// new-handler loop on failure) and free, by way of ::operator new,
// ::operator delete, malloc and free as the global scope resolves them;
// calling the real malloc and free directly is the same call without a
// second pass through the hooks, but only when all four of those resolve
// to this library (no executable or earlier preload defines its own) and
// the next operators are libstdc++'s. Decided once, by the resolver.
inline bool StdOperatorsDirect() { return internal::g_std_operators_direct; }

// Bootstrap arena: a static bump allocator for dlsym's early allocations
// and those of an OwnAllocationScope (own_allocation.h). Arena blocks are
// never handed to the real allocator: free gives back only the newest block
// (ArenaRelease) and ignores the others, realloc copies them out. Inside an
// OwnAllocationScope, ArenaAlloc takes the scope's buffer first. Every
// block it returns is zero-filled (calloc relies on it); null when full.
void* ArenaAlloc(size_t size, size_t alignment);
// The arena's bytes (real_alloc.cc). InArena is inline: every free asks.
// 16 MiB of zero-fill address space (bss): a page costs memory only once
// used. dlsym takes a few KiB; libdw's CFI data (OwnAllocationScope in
// unwind_cfi.cc) the rest: 99 KiB under git log, 163 KiB under python3,
// 543 KiB under cc1plus compiling a 3 MB translation unit.
inline constexpr size_t kArenaBytes = 16 * 1024 * 1024;
extern unsigned char g_arena[kArenaBytes];
inline bool InArena(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto base = reinterpret_cast<uintptr_t>(g_arena);
  return a - base < kArenaBytes;  // one compare: below base wraps around
}
size_t ArenaBlockSize(const void* p);
// Gives p's bytes back when p is the arena's newest block; else nothing.
void ArenaRelease(void* p);

}  // namespace crossfree::tracer
