// SPDX-License-Identifier: Apache-2.0
// Tracer: the next definitions of the interposed functions (dlsym RTLD_NEXT)
// and the bootstrap arena that answers allocations made while dlsym itself
// runs. Resolved once, on the first hook call of any thread; afterwards the
// table is read-only. Any thread may call anything here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace crossfree::tracer {

struct RealFunctions {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  void* (*reallocarray)(void*, size_t, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  size_t (*malloc_usable_size)(void*);
  // C++ operators, null when no later object defines them (a process
  // without libstdc++); the hooks then fall back to the malloc family.
  void* (*op_new)(size_t);
  void* (*op_new_array)(size_t);
  void* (*op_new_nothrow)(size_t, const void*);
  void* (*op_new_array_nothrow)(size_t, const void*);
  void* (*op_new_aligned)(size_t, size_t);
  void* (*op_new_array_aligned)(size_t, size_t);
  void* (*op_new_aligned_nothrow)(size_t, size_t, const void*);
  void* (*op_new_array_aligned_nothrow)(size_t, size_t, const void*);
  void (*op_delete)(void*);
  void (*op_delete_array)(void*);
  void (*op_delete_sized)(void*, size_t);
  void (*op_delete_array_sized)(void*, size_t);
  void (*op_delete_aligned)(void*, size_t);
  void (*op_delete_array_aligned)(void*, size_t);
  void (*op_delete_sized_aligned)(void*, size_t, size_t);
  void (*op_delete_array_sized_aligned)(void*, size_t, size_t);
  void (*op_delete_nothrow)(void*, const void*);
  void (*op_delete_array_nothrow)(void*, const void*);
  void (*op_delete_aligned_nothrow)(void*, size_t, const void*);
  void (*op_delete_array_aligned_nothrow)(void*, size_t, const void*);
  // Threads and names.
  int (*pthread_setname_np)(unsigned long, const char*);
  int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
  int (*pthread_getattr_np)(unsigned long, void*);
  int (*pipe2)(int*, int);
  [[noreturn]] void (*exit_now)(int);  // _exit
  int (*execve)(const char*, char* const[], char* const[]);
  int (*execv)(const char*, char* const[]);
  int (*execvp)(const char*, char* const[]);
  int (*execvpe)(const char*, char* const[], char* const[]);
};

namespace internal {
extern RealFunctions g_real;
extern int g_real_state;  // 2 once resolved
bool ResolveSlow();
}  // namespace internal

// True once the table is resolved; resolves on first use. While resolution
// runs (dlsym), it returns false and the malloc-family hooks serve requests
// from the arena.
inline bool RealResolved() {
  if (__atomic_load_n(&internal::g_real_state, __ATOMIC_ACQUIRE) == 2) return true;
  return internal::ResolveSlow();
}

// The resolved table (entries null while resolution runs).
inline const RealFunctions& Real() {
  RealResolved();
  return internal::g_real;
}

// Bootstrap arena: a static bump allocator for dlsym's early allocations.
// Arena blocks are never handed to the real allocator: free ignores them,
// realloc copies them out.
void* ArenaAlloc(size_t size, size_t alignment);
bool InArena(const void* p);
size_t ArenaBlockSize(const void* p);

}  // namespace crossfree::tracer
