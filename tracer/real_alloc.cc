// SPDX-License-Identifier: Apache-2.0
// Tracer: dlsym(RTLD_NEXT) resolution of the real functions and the
// bootstrap arena (see real_alloc.h).
#include "tracer/real_alloc.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <atomic>

#include "tracer/sys.h"

namespace crossfree::tracer {
namespace {

constexpr int kUnresolved = 0;
constexpr int kResolving = 1;
constexpr int kResolved = 2;

// dlsym allocates a little (its error buffer, on some paths a TLS block).
// 256 KiB is far more than glibc needs; when it runs out, allocations fail
// with ENOMEM rather than reaching the real allocator half-resolved.
constexpr size_t kArenaBytes = 256 * 1024;
alignas(64) unsigned char g_arena[kArenaBytes];
std::atomic<size_t> g_arena_used{0};

// Each arena block is preceded by its size, so realloc can copy it out.
struct ArenaHeader {
  size_t size;
  size_t pad;
};

template <typename T>
void Lookup(T* slot, const char* name, bool required) {
  void* sym = dlsym(RTLD_NEXT, name);
  if (sym == nullptr && required) {
    MessageLine().Add("cannot find the real ").Add(name).Add(" (dlsym RTLD_NEXT); aborting").Print();
    abort();
  }
  *slot = reinterpret_cast<T>(sym);
}

void Resolve() {
  int expected = kUnresolved;
  if (!__atomic_compare_exchange_n(&internal::g_real_state, &expected, kResolving, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return;
  }
  RealFunctions r{};
  Lookup(&r.malloc, "malloc", true);
  Lookup(&r.free, "free", true);
  Lookup(&r.calloc, "calloc", true);
  Lookup(&r.realloc, "realloc", true);
  Lookup(&r.reallocarray, "reallocarray", false);
  Lookup(&r.posix_memalign, "posix_memalign", true);
  Lookup(&r.aligned_alloc, "aligned_alloc", false);
  Lookup(&r.memalign, "memalign", false);
  Lookup(&r.valloc, "valloc", false);
  Lookup(&r.pvalloc, "pvalloc", false);
  Lookup(&r.malloc_usable_size, "malloc_usable_size", false);
  Lookup(&r.op_new, "_Znwm", false);
  Lookup(&r.op_new_array, "_Znam", false);
  Lookup(&r.op_new_nothrow, "_ZnwmRKSt9nothrow_t", false);
  Lookup(&r.op_new_array_nothrow, "_ZnamRKSt9nothrow_t", false);
  Lookup(&r.op_new_aligned, "_ZnwmSt11align_val_t", false);
  Lookup(&r.op_new_array_aligned, "_ZnamSt11align_val_t", false);
  Lookup(&r.op_new_aligned_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t", false);
  Lookup(&r.op_new_array_aligned_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t", false);
  Lookup(&r.op_delete, "_ZdlPv", false);
  Lookup(&r.op_delete_array, "_ZdaPv", false);
  Lookup(&r.op_delete_sized, "_ZdlPvm", false);
  Lookup(&r.op_delete_array_sized, "_ZdaPvm", false);
  Lookup(&r.op_delete_aligned, "_ZdlPvSt11align_val_t", false);
  Lookup(&r.op_delete_array_aligned, "_ZdaPvSt11align_val_t", false);
  Lookup(&r.op_delete_sized_aligned, "_ZdlPvmSt11align_val_t", false);
  Lookup(&r.op_delete_array_sized_aligned, "_ZdaPvmSt11align_val_t", false);
  Lookup(&r.op_delete_nothrow, "_ZdlPvRKSt9nothrow_t", false);
  Lookup(&r.op_delete_array_nothrow, "_ZdaPvRKSt9nothrow_t", false);
  Lookup(&r.op_delete_aligned_nothrow, "_ZdlPvSt11align_val_tRKSt9nothrow_t", false);
  Lookup(&r.op_delete_array_aligned_nothrow, "_ZdaPvSt11align_val_tRKSt9nothrow_t", false);
  Lookup(&r.pthread_setname_np, "pthread_setname_np", false);
  Lookup(&r.prctl, "prctl", false);
  Lookup(&r.pthread_getattr_np, "pthread_getattr_np", false);
  Lookup(&r.pipe2, "pipe2", false);
  Lookup(&r.exit_now, "_exit", false);
  Lookup(&r.execve, "execve", false);
  Lookup(&r.execv, "execv", false);
  Lookup(&r.execvp, "execvp", false);
  Lookup(&r.execvpe, "execvpe", false);
  internal::g_real = r;
  __atomic_store_n(&internal::g_real_state, kResolved, __ATOMIC_RELEASE);
}

}  // namespace

namespace internal {

RealFunctions g_real;
int g_real_state = kUnresolved;

bool ResolveSlow() {
  Resolve();
  return __atomic_load_n(&g_real_state, __ATOMIC_ACQUIRE) == kResolved;
}

}  // namespace internal

void* ArenaAlloc(size_t size, size_t alignment) {
  if (alignment < 16) alignment = 16;
  if (alignment > 4096 || (alignment & (alignment - 1)) != 0) return nullptr;
  size_t used = g_arena_used.load(std::memory_order_relaxed);
  for (;;) {
    uintptr_t base = reinterpret_cast<uintptr_t>(g_arena);
    uintptr_t start = base + used + sizeof(ArenaHeader);
    start = (start + alignment - 1) & ~(uintptr_t{alignment} - 1);
    uintptr_t end = start + size;
    if (size > kArenaBytes || end > base + kArenaBytes) return nullptr;
    if (g_arena_used.compare_exchange_weak(used, end - base, std::memory_order_relaxed)) {
      auto* header = reinterpret_cast<ArenaHeader*>(start - sizeof(ArenaHeader));
      header->size = size;
      return reinterpret_cast<void*>(start);  // static storage: already zero
    }
  }
}

bool InArena(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto base = reinterpret_cast<uintptr_t>(g_arena);
  return a >= base && a < base + kArenaBytes;
}

size_t ArenaBlockSize(const void* p) {
  return reinterpret_cast<const ArenaHeader*>(static_cast<const unsigned char*>(p) -
                                              sizeof(ArenaHeader))->size;
}

}  // namespace crossfree::tracer
