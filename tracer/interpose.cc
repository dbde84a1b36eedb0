// SPDX-License-Identifier: Apache-2.0
// Tracer: the interposed allocation symbols (malloc family and every
// operator new/delete). Each public function is a one-line instance of one
// of four hook shapes below; all bookkeeping lives in recorder.cc.
//
// Rules every shape follows:
//  - the real function runs with the recursion guard held, so whatever it
//    allocates inside (libstdc++'s operator new calling malloc, tcmalloc's
//    MallocHook callbacks) forwards untraced: one call, one event;
//  - allocations are stamped after the real call returns, frees before it;
//  - the return value is the real one, and errno is what the real function
//    left (bookkeeping runs inside an ErrnoSaver);
//  - when sampling (sampler.h), every allocation and free is counted and
//    only a sampled allocation, or the free of a sampled object, goes on
//    to the recorder; a free while recording is off still takes its object
//    out of the live set, so a reused address is never mistaken for it.
//    The hooks a sampled run calls most try the unsampled fast path first
//    (the real call and its count, nothing else);
//  - the stack is captured from the public function's own frame
//    (CROSSFREE_SITE), so frames[0] is the code that called it. The tracer
//    is built with -fno-optimize-sibling-calls so that frame stays live.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <new>

#include "tracer/clock.h"
#include "tracer/cpu.h"
#include "tracer/real_alloc.h"
#include "tracer/recorder.h"
#include "tracer/sampler.h"
#include "tracer/sys.h"

#define CROSSFREE_SITE \
  ::crossfree::tracer::CallSite { __builtin_return_address(0), __builtin_frame_address(0) }
// The same site as two arguments, for a hook's out-of-line full path
// (two registers, where a CallSite would go through memory).
#define CROSSFREE_SITE_ARGS __builtin_return_address(0), __builtin_frame_address(0)
#define CROSSFREE_HOOK extern "C" __attribute__((visibility("default")))
#define CROSSFREE_CXX_HOOK __attribute__((visibility("default")))
#define CROSSFREE_INLINE inline __attribute__((always_inline))
#define CROSSFREE_OUT_OF_LINE __attribute__((noinline))

extern "C" void* crossfree_guarded_new(void* (*next)(size_t), size_t size);
extern "C" void* crossfree_guarded_new_aligned(void* (*next)(size_t, size_t), size_t size,
                                               size_t align);

namespace crossfree::tracer {
namespace {

using format::AllocFn;
using format::FreeFn;

// Null while the real functions are still being resolved (then dlsym is
// running) and inside the tracer's own OwnAllocationScope (real_alloc.h):
// then the allocation hooks answer from the bootstrap arena (ArenaAlloc)
// and free does nothing.
CROSSFREE_INLINE const RealFunctions* Resolved() {
  if (InOwnAllocationScope()) return nullptr;
  return RealResolved() ? &internal::g_real : nullptr;  // Real() would check again
}

// The unsampled fast path (sampler.h), taken first by the hooks that a
// sampled run calls most (malloc, calloc, the plain operators new and
// delete, free): the real call under the guard and its count, before any
// of the shapes below builds its call site. Each returns false (or null)
// when the call must take the full path instead.
CROSSFREE_INLINE bool UnsampledFree(void* p) {
  if (!FreeUnsampled(p) || InArena(p) || !RealResolvedAlready()) return false;
  CountFree();
  GuardScope guard;
  internal::g_real.free(p);
  return true;
}

// A plain delete whose next definition is libstdc++'s (StdOperatorsDirect).
CROSSFREE_INLINE bool UnsampledPlainDelete(void* p) {
  return StdOperatorsDirect() && UnsampledFree(p);
}

// malloc and calloc: done, failed or not (a failure counts nothing, as on
// the full path).
template <typename Call>
CROSSFREE_INLINE bool UnsampledAlloc(void** out, Call&& call) {
  if (!NextAllocationUnsampled() || !RealResolvedAlready()) return false;
  {
    GuardScope guard;
    *out = call();
  }
  if (*out != nullptr) CountUnsampledAllocation();
  return true;
}

// A plain operator new: null when not taken or when malloc failed (then
// the full path runs libstdc++'s new for its new-handler loop).
CROSSFREE_INLINE void* UnsampledPlainNew(size_t n) {
  void* p = nullptr;
  if (!StdOperatorsDirect() ||
      !UnsampledAlloc(&p, [n] { return internal::g_real.malloc(n != 0 ? n : 1); })) {
    return nullptr;
  }
  return p;
}

// Shape 1: an allocation that cannot throw. call() returns the new block.
template <typename Call>
CROSSFREE_INLINE void* Alloc(AllocFn fn, const CallSite& site, uint64_t size, Call&& call) {
  if (!ShouldRecord()) return call();
  GuardScope guard;
  void* p = call();
  if (p != nullptr && KeepAllocation(p)) {
    ErrnoSaver saved;
    RecordAlloc(fn, p, size, site);
  }
  return p;
}

// Shape 2: a throwing operator new. next(guarded) calls the next
// definition, holding the guard through guarded_call.c when asked, so the
// guard is released even if it throws.
template <typename Next>
CROSSFREE_INLINE void* ThrowingNew(AllocFn fn, const CallSite& site, uint64_t size, Next&& next) {
  if (!ShouldRecord()) return next(false);
  void* p = next(true);
  if (p != nullptr) {
    GuardScope guard;
    if (KeepAllocation(p)) {
      ErrnoSaver saved;
      RecordAlloc(fn, p, size, site);
    }
  }
  return p;
}

// Shape 3: a free. call() releases the block; size is the sized-delete
// argument or 0. Bootstrap-arena blocks are never passed on.
template <typename Call>
CROSSFREE_INLINE void Free(FreeFn fn, const CallSite& site, void* p, uint64_t size, Call&& call) {
  if (InArena(p)) {
    ArenaRelease(p);
    return;
  }
  if (p == nullptr || !ShouldRecord()) {
    ForgetSampled(p);
    call();
    return;
  }
  GuardScope guard;
  if (KeepFree(p)) {
    ErrnoSaver saved;
    const uint64_t ts = NowNs();
    RecordFree(fn, ts, CurrentCpu(), p, size, site);
  }
  call();
}

// Shape 4 when sampling, for old != NULL (guard held). A sampled block is
// followed: its realloc is recorded and the new block takes its place in
// the live set. The new block of an unsampled one is counted but never
// sampled: every block of a realloc chain is then traced exactly when the
// chain's first allocation was, with probability 1/N like every other
// allocation (a fresh draw here would trace such blocks more often, and
// the analyzer's N x observed would over-estimate their pairs).
template <typename Call>
CROSSFREE_INLINE void* SampledRealloc(AllocFn fn, const CallSite& site, void* old,
                                      uint64_t size, Call&& call) {
  StartSampledThreadOnce();
  const bool followed = LiveRemove(old);
  const uint64_t ts_free = followed ? NowNs() : 0;
  const uint32_t cpu_free = followed ? CurrentCpu() : format::kUnknownCpu;
  void* p = call();
  ErrnoSaver saved;
  if (p == nullptr) {
    if (size != 0) {  // failed: old is still live
      if (followed) LiveInsert(reinterpret_cast<uint64_t>(old));
      return p;
    }
    CountFree();
    if (followed) RecordFree(FreeFn::kRealloc, ts_free, cpu_free, old, 0, site);
    return p;
  }
  CountFree();
  sampler_internal::Bump(&t_sample.allocs);
  if (!followed) return p;
  if (!LiveInsert(reinterpret_cast<uint64_t>(p))) {
    // No room to follow the new block: record the free half only, and
    // count the new block as a dropped sample.
    sampler_internal::Bump(&t_sample.dropped);
    RecordFree(FreeFn::kRealloc, ts_free, cpu_free, old, 0, site);
    return p;
  }
  RecordRealloc(fn, ts_free, old, p, size, site);
  return p;
}

// Shape 4: realloc/reallocarray. realloc(NULL, n) is an allocation; a
// realloc(p, 0) that returns NULL freed p; any other NULL is a failure and
// records nothing (p is still live).
template <typename Call>
CROSSFREE_INLINE void* Realloc(AllocFn fn, const CallSite& site, void* old, uint64_t size,
                               Call&& call) {
  if (!ShouldRecord()) {
    if (!ForgetSampled(old)) return call();
    // Window closed, old was sampled: out of the set before the call; if
    // the call fails, old is still live and goes back.
    void* p = call();
    if (p == nullptr && size != 0) LiveInsert(reinterpret_cast<uint64_t>(old));
    return p;
  }
  GuardScope guard;
  if (old == nullptr) {
    void* p = call();
    if (p != nullptr && KeepAllocation(p)) {
      ErrnoSaver saved;
      RecordAlloc(fn, p, size, site);
    }
    return p;
  }
  if (Sampling()) return SampledRealloc(fn, site, old, size, call);
  uint64_t ts_free = NowNs();
  const uint32_t cpu_free = CurrentCpu();
  void* p = call();
  ErrnoSaver saved;
  if (p != nullptr) {
    RecordRealloc(fn, ts_free, old, p, size, site);
  } else if (size == 0) {
    RecordFree(FreeFn::kRealloc, ts_free, cpu_free, old, 0, site);
  }
  return p;
}

// Where the next operator new/delete is absent (no libstdc++ in the
// process), the malloc family stands in.
// With StdOperatorsDirect, a plain new is the real malloc of at least one
// byte, as libstdc++'s is; only when that fails does libstdc++'s own run,
// for its new-handler loop and its std::bad_alloc.
CROSSFREE_INLINE void* DirectNew(const RealFunctions* r, size_t n) {
  GuardScope guard;
  return r->malloc(n != 0 ? n : 1);
}

CROSSFREE_INLINE void* NextNew(const RealFunctions* r, void* (*next)(size_t), size_t n,
                               bool guarded) {
  if (r == nullptr) return ArenaAlloc(n, 16);
  if (next != nullptr) {
    if (StdOperatorsDirect()) {
      if (void* p = DirectNew(r, n)) return p;
    }
    return guarded ? crossfree_guarded_new(next, n) : next(n);
  }
  GuardScope guard;
  return r->malloc(n);
}

CROSSFREE_INLINE void* NextNewAligned(const RealFunctions* r, void* (*next)(size_t, size_t),
                                      size_t n, size_t align, bool guarded) {
  if (r == nullptr) return ArenaAlloc(n, align);
  if (next != nullptr) return guarded ? crossfree_guarded_new_aligned(next, n, align) : next(n, align);
  GuardScope guard;
  void* p = nullptr;
  return r->posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, n) == 0 ? p : nullptr;
}

CROSSFREE_INLINE void* NothrowNew(const RealFunctions* r, void* (*next)(size_t, const void*),
                                  size_t n, const std::nothrow_t& tag) {
  if (r == nullptr) return ArenaAlloc(n, 16);
  if (next == nullptr) return r->malloc(n);
  if (StdOperatorsDirect()) {
    if (void* p = DirectNew(r, n)) return p;
  }
  return next(n, &tag);
}

CROSSFREE_INLINE void* NothrowNewAligned(const RealFunctions* r,
                                         void* (*next)(size_t, size_t, const void*), size_t n,
                                         size_t align, const std::nothrow_t& tag) {
  if (r == nullptr) return ArenaAlloc(n, align);
  if (next != nullptr) return next(n, align, &tag);
  void* p = nullptr;
  return r->posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, n) == 0 ? p : nullptr;
}

// Forwards a delete to `next` when present, else to the real free.
template <typename Next, typename... Args>
CROSSFREE_INLINE void NextDelete(const RealFunctions* r, Next next, void* p, Args... args) {
  if (r == nullptr) return;
  if (next != nullptr) {
    next(p, args...);
  } else {
    r->free(p);
  }
}

// An unaligned delete: libstdc++'s is free(p) (StdOperatorsDirect).
template <typename Next, typename... Args>
CROSSFREE_INLINE void NextPlainDelete(const RealFunctions* r, Next next, void* p, Args... args) {
  if (r != nullptr && next != nullptr && StdOperatorsDirect()) {
    r->free(p);
    return;
  }
  NextDelete(r, next, p, args...);
}

CROSSFREE_INLINE uint64_t MulOrMax(size_t a, size_t b) {
  size_t out;
  return __builtin_mul_overflow(a, b, &out) ? UINT64_MAX : out;
}

}  // namespace
}  // namespace crossfree::tracer

using crossfree::tracer::Alloc;
using crossfree::tracer::ArenaAlloc;
using crossfree::tracer::ArenaBlockSize;
using crossfree::tracer::CallSite;
using crossfree::tracer::Free;
using crossfree::tracer::InArena;
using crossfree::tracer::internal::g_real;
using crossfree::tracer::MulOrMax;
using crossfree::tracer::NextDelete;
using crossfree::tracer::NextNew;
using crossfree::tracer::NextNewAligned;
using crossfree::tracer::NextPlainDelete;
using crossfree::tracer::NothrowNew;
using crossfree::tracer::NothrowNewAligned;
using crossfree::tracer::RealFunctions;
using crossfree::tracer::Realloc;
using crossfree::tracer::Resolved;
using crossfree::tracer::ThrowingNew;
using crossfree::tracer::UnsampledAlloc;
using crossfree::tracer::UnsampledFree;
using crossfree::tracer::UnsampledPlainDelete;
using crossfree::tracer::UnsampledPlainNew;
using crossfree::format::AllocFn;
using crossfree::format::FreeFn;

// ---- The C allocation functions ------------------------------------------

// The hooks with an unsampled fast path keep their full path in a function
// of its own (Traced*), handed the hook's call site, so that the fast path
// does not pay for that code's register saves.
namespace {
CROSSFREE_OUT_OF_LINE void* TracedMalloc(size_t n, void* return_address, void* frame_address) {
  const CallSite site{return_address, frame_address};
  const RealFunctions* r = Resolved();
  if (r == nullptr) return ArenaAlloc(n, 16);
  return Alloc(AllocFn::kMalloc, site, n, [=] { return r->malloc(n); });
}
}  // namespace

CROSSFREE_HOOK void* malloc(size_t n) {
  if (void* p; UnsampledAlloc(&p, [n] { return g_real.malloc(n); })) {
    return p;
  }
  return TracedMalloc(n, CROSSFREE_SITE_ARGS);
}

namespace {
CROSSFREE_OUT_OF_LINE void TracedFree(void* p, void* return_address, void* frame_address) {
  const CallSite site{return_address, frame_address};
  const RealFunctions* r = Resolved();
  Free(FreeFn::kFree, site, p, 0, [=] {
    if (r != nullptr) r->free(p);
  });
}
}  // namespace

CROSSFREE_HOOK void free(void* p) {
  if (UnsampledFree(p)) return;
  TracedFree(p, CROSSFREE_SITE_ARGS);
}

namespace {
CROSSFREE_OUT_OF_LINE void* TracedCalloc(size_t n, size_t size, void* return_address,
                                         void* frame_address) {
  const CallSite site{return_address, frame_address};
  const RealFunctions* r = Resolved();
  if (r == nullptr) return MulOrMax(n, size) == UINT64_MAX ? nullptr : ArenaAlloc(n * size, 16);
  return Alloc(AllocFn::kCalloc, site, MulOrMax(n, size), [=] { return r->calloc(n, size); });
}
}  // namespace

CROSSFREE_HOOK void* calloc(size_t n, size_t size) {
  if (void* p; UnsampledAlloc(&p, [n, size] { return g_real.calloc(n, size); })) {
    return p;
  }
  return TracedCalloc(n, size, CROSSFREE_SITE_ARGS);
}

CROSSFREE_HOOK void* realloc(void* p, size_t n) {
  const RealFunctions* r = Resolved();
  if (r == nullptr || InArena(p)) {
    // A bootstrap block moves to the real heap (or to a new arena block).
    void* q = r == nullptr ? ArenaAlloc(n, 16)
                           : Alloc(AllocFn::kRealloc, CROSSFREE_SITE, n, [=] { return r->malloc(n); });
    if (q != nullptr && p != nullptr) {
      size_t old = ArenaBlockSize(p);
      __builtin_memcpy(q, p, old < n ? old : n);
    }
    return q;
  }
  return Realloc(AllocFn::kRealloc, CROSSFREE_SITE, p, n, [=] { return r->realloc(p, n); });
}

CROSSFREE_HOOK void* reallocarray(void* p, size_t n, size_t size) {
  const RealFunctions* r = Resolved();
  uint64_t bytes = MulOrMax(n, size);
  if (r == nullptr || InArena(p) || r->reallocarray == nullptr) {
    if (bytes == UINT64_MAX) {
      errno = ENOMEM;
      return nullptr;
    }
    return realloc(p, bytes);
  }
  return Realloc(AllocFn::kReallocArray, CROSSFREE_SITE, p, bytes,
                 [=] { return r->reallocarray(p, n, size); });
}

CROSSFREE_HOOK int posix_memalign(void** out, size_t align, size_t n) {
  const RealFunctions* r = Resolved();
  if (r == nullptr) {
    void* p = ArenaAlloc(n, align);
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
  }
  int rc = 0;
  Alloc(AllocFn::kPosixMemalign, CROSSFREE_SITE, n, [=, &rc]() -> void* {
    rc = r->posix_memalign(out, align, n);
    return rc == 0 ? *out : nullptr;
  });
  return rc;
}

CROSSFREE_HOOK void* aligned_alloc(size_t align, size_t n) {
  const RealFunctions* r = Resolved();
  if (r == nullptr || r->aligned_alloc == nullptr) return ArenaAlloc(n, align);
  return Alloc(AllocFn::kAlignedAlloc, CROSSFREE_SITE, n, [=] { return r->aligned_alloc(align, n); });
}

CROSSFREE_HOOK void* memalign(size_t align, size_t n) {
  const RealFunctions* r = Resolved();
  if (r == nullptr || r->memalign == nullptr) return ArenaAlloc(n, align);
  return Alloc(AllocFn::kMemalign, CROSSFREE_SITE, n, [=] { return r->memalign(align, n); });
}

CROSSFREE_HOOK void* valloc(size_t n) {
  const RealFunctions* r = Resolved();
  if (r == nullptr || r->valloc == nullptr) return ArenaAlloc(n, 4096);
  return Alloc(AllocFn::kValloc, CROSSFREE_SITE, n, [=] { return r->valloc(n); });
}

CROSSFREE_HOOK void* pvalloc(size_t n) {
  const RealFunctions* r = Resolved();
  if (r == nullptr || r->pvalloc == nullptr) return ArenaAlloc(n, 4096);
  return Alloc(AllocFn::kPvalloc, CROSSFREE_SITE, n, [=] { return r->pvalloc(n); });
}

CROSSFREE_HOOK size_t malloc_usable_size(void* p) {
  if (InArena(p)) return ArenaBlockSize(p);
  const RealFunctions* r = Resolved();
  return r != nullptr && r->malloc_usable_size != nullptr ? r->malloc_usable_size(p) : 0;
}

// ---- operator new ---------------------------------------------------------

namespace {
// The traced half of operator new and new[], which differ only in the
// function the event names and the next definition called. A template, so
// each is still its own function with the constants folded in.
template <AllocFn kFn, void* (*RealFunctions::*kNext)(size_t)>
CROSSFREE_OUT_OF_LINE void* TracedPlainNew(size_t n, void* return_address, void* frame_address) {
  const CallSite site{return_address, frame_address};
  const RealFunctions* r = Resolved();
  return ThrowingNew(kFn, site, n, [=](bool guarded) {
    return NextNew(r, r ? r->*kNext : nullptr, n, guarded);
  });
}
}  // namespace

CROSSFREE_CXX_HOOK void* operator new(size_t n) {
  if (void* p = UnsampledPlainNew(n)) return p;
  return TracedPlainNew<AllocFn::kNew, &RealFunctions::op_new>(n, CROSSFREE_SITE_ARGS);
}

CROSSFREE_CXX_HOOK void* operator new[](size_t n) {
  if (void* p = UnsampledPlainNew(n)) return p;
  return TracedPlainNew<AllocFn::kNewArray, &RealFunctions::op_new_array>(n, CROSSFREE_SITE_ARGS);
}

CROSSFREE_CXX_HOOK void* operator new(size_t n, std::align_val_t al) {
  const RealFunctions* r = Resolved();
  return ThrowingNew(AllocFn::kNew, CROSSFREE_SITE, n, [=](bool guarded) {
    return NextNewAligned(r, r ? r->op_new_aligned : nullptr, n, static_cast<size_t>(al), guarded);
  });
}

CROSSFREE_CXX_HOOK void* operator new[](size_t n, std::align_val_t al) {
  const RealFunctions* r = Resolved();
  return ThrowingNew(AllocFn::kNewArray, CROSSFREE_SITE, n, [=](bool guarded) {
    return NextNewAligned(r, r ? r->op_new_array_aligned : nullptr, n, static_cast<size_t>(al),
                          guarded);
  });
}

CROSSFREE_CXX_HOOK void* operator new(size_t n, const std::nothrow_t& tag) noexcept {
  const RealFunctions* r = Resolved();
  return Alloc(AllocFn::kNew, CROSSFREE_SITE, n,
               [=, &tag] { return NothrowNew(r, r ? r->op_new_nothrow : nullptr, n, tag); });
}

CROSSFREE_CXX_HOOK void* operator new[](size_t n, const std::nothrow_t& tag) noexcept {
  const RealFunctions* r = Resolved();
  return Alloc(AllocFn::kNewArray, CROSSFREE_SITE, n,
               [=, &tag] { return NothrowNew(r, r ? r->op_new_array_nothrow : nullptr, n, tag); });
}

CROSSFREE_CXX_HOOK void* operator new(size_t n, std::align_val_t al,
                                      const std::nothrow_t& tag) noexcept {
  const RealFunctions* r = Resolved();
  return Alloc(AllocFn::kNew, CROSSFREE_SITE, n, [=, &tag] {
    return NothrowNewAligned(r, r ? r->op_new_aligned_nothrow : nullptr, n,
                             static_cast<size_t>(al), tag);
  });
}

CROSSFREE_CXX_HOOK void* operator new[](size_t n, std::align_val_t al,
                                        const std::nothrow_t& tag) noexcept {
  const RealFunctions* r = Resolved();
  return Alloc(AllocFn::kNewArray, CROSSFREE_SITE, n, [=, &tag] {
    return NothrowNewAligned(r, r ? r->op_new_array_aligned_nothrow : nullptr, n,
                             static_cast<size_t>(al), tag);
  });
}

// ---- operator delete ------------------------------------------------------

namespace {
// The traced half of operator delete and delete[] (unsized), as for new.
template <FreeFn kFn, void (*RealFunctions::*kNext)(void*)>
CROSSFREE_OUT_OF_LINE void TracedPlainDelete(void* p, void* return_address, void* frame_address) {
  const CallSite site{return_address, frame_address};
  const RealFunctions* r = Resolved();
  Free(kFn, site, p, 0, [=] { NextPlainDelete(r, r ? r->*kNext : nullptr, p); });
}
}  // namespace

CROSSFREE_CXX_HOOK void operator delete(void* p) noexcept {
  if (UnsampledPlainDelete(p)) return;
  TracedPlainDelete<FreeFn::kDelete, &RealFunctions::op_delete>(p, CROSSFREE_SITE_ARGS);
}

CROSSFREE_CXX_HOOK void operator delete[](void* p) noexcept {
  if (UnsampledPlainDelete(p)) return;
  TracedPlainDelete<FreeFn::kDeleteArray, &RealFunctions::op_delete_array>(p, CROSSFREE_SITE_ARGS);
}

namespace {
// The same for the sized operator delete and delete[].
template <FreeFn kFn, void (*RealFunctions::*kNext)(void*, size_t)>
CROSSFREE_OUT_OF_LINE void TracedSizedDelete(void* p, size_t n, void* return_address,
                                            void* frame_address) {
  const CallSite site{return_address, frame_address};
  const RealFunctions* r = Resolved();
  Free(kFn, site, p, n, [=] { NextPlainDelete(r, r ? r->*kNext : nullptr, p, n); });
}
}  // namespace

CROSSFREE_CXX_HOOK void operator delete(void* p, size_t n) noexcept {
  if (UnsampledPlainDelete(p)) return;
  TracedSizedDelete<FreeFn::kDelete, &RealFunctions::op_delete_sized>(p, n, CROSSFREE_SITE_ARGS);
}

CROSSFREE_CXX_HOOK void operator delete[](void* p, size_t n) noexcept {
  if (UnsampledPlainDelete(p)) return;
  TracedSizedDelete<FreeFn::kDeleteArray, &RealFunctions::op_delete_array_sized>(
      p, n, CROSSFREE_SITE_ARGS);
}

CROSSFREE_CXX_HOOK void operator delete(void* p, std::align_val_t al) noexcept {
  const RealFunctions* r = Resolved();
  Free(FreeFn::kDelete, CROSSFREE_SITE, p, 0, [=] {
    NextDelete(r, r ? r->op_delete_aligned : nullptr, p, static_cast<size_t>(al));
  });
}

CROSSFREE_CXX_HOOK void operator delete[](void* p, std::align_val_t al) noexcept {
  const RealFunctions* r = Resolved();
  Free(FreeFn::kDeleteArray, CROSSFREE_SITE, p, 0, [=] {
    NextDelete(r, r ? r->op_delete_array_aligned : nullptr, p, static_cast<size_t>(al));
  });
}

CROSSFREE_CXX_HOOK void operator delete(void* p, size_t n, std::align_val_t al) noexcept {
  const RealFunctions* r = Resolved();
  Free(FreeFn::kDelete, CROSSFREE_SITE, p, n, [=] {
    NextDelete(r, r ? r->op_delete_sized_aligned : nullptr, p, n, static_cast<size_t>(al));
  });
}

CROSSFREE_CXX_HOOK void operator delete[](void* p, size_t n, std::align_val_t al) noexcept {
  const RealFunctions* r = Resolved();
  Free(FreeFn::kDeleteArray, CROSSFREE_SITE, p, n, [=] {
    NextDelete(r, r ? r->op_delete_array_sized_aligned : nullptr, p, n, static_cast<size_t>(al));
  });
}

CROSSFREE_CXX_HOOK void operator delete(void* p, const std::nothrow_t& tag) noexcept {
  const RealFunctions* r = Resolved();
  Free(FreeFn::kDelete, CROSSFREE_SITE, p, 0, [=, &tag] {
    NextPlainDelete(r, r ? r->op_delete_nothrow : nullptr, p, static_cast<const void*>(&tag));
  });
}

CROSSFREE_CXX_HOOK void operator delete[](void* p, const std::nothrow_t& tag) noexcept {
  const RealFunctions* r = Resolved();
  Free(FreeFn::kDeleteArray, CROSSFREE_SITE, p, 0, [=, &tag] {
    NextPlainDelete(r, r ? r->op_delete_array_nothrow : nullptr, p, static_cast<const void*>(&tag));
  });
}

CROSSFREE_CXX_HOOK void operator delete(void* p, std::align_val_t al,
                                        const std::nothrow_t& tag) noexcept {
  const RealFunctions* r = Resolved();
  Free(FreeFn::kDelete, CROSSFREE_SITE, p, 0, [=, &tag] {
    NextDelete(r, r ? r->op_delete_aligned_nothrow : nullptr, p, static_cast<size_t>(al),
               static_cast<const void*>(&tag));
  });
}

CROSSFREE_CXX_HOOK void operator delete[](void* p, std::align_val_t al,
                                          const std::nothrow_t& tag) noexcept {
  const RealFunctions* r = Resolved();
  Free(FreeFn::kDeleteArray, CROSSFREE_SITE, p, 0, [=, &tag] {
    NextDelete(r, r ? r->op_delete_array_aligned_nothrow : nullptr, p, static_cast<size_t>(al),
               static_cast<const void*>(&tag));
  });
}
