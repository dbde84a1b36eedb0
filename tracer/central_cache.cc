// SPDX-License-Identifier: Apache-2.0
// Tracer: the four tcmalloc central free-list interposers (central_cache.h).
// Verified against gperftools 2.10 (Debian libtcmalloc.so.4) with nm -D and
// objdump: all four are exported and every call inside the library goes
// through its PLT, so the first definition in the global scope (ours, when
// preloaded first) wins. Member functions take `this` first.
//
// Which calls are recorded (docs/guide/central.md, "What is recorded"):
//  - tcmalloc makes these calls from inside malloc/free. Our allocation
//    hooks call the real function with the recursion guard held, so the
//    guard is normally set here even though the TARGET's allocation caused
//    the transfer. The guard therefore does not decide; RecordCentral skips
//    a call only while this thread is inside the tracer's own record path
//    (its buffer is busy), i.e. the tracer's bookkeeping triggered it.
//  - calls made while the tracer resolves these very functions (dlsym may
//    allocate) are forwarded and not recorded (t_resolving).
// The object count of a Fetch/Release is the sum of what the nested
// RemoveRange returned / InsertRange took during it (no struct layouts).
#include "tracer/central_cache.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <atomic>

#include "format/trace_format.h"
#include "tracer/recorder.h"
#include "tracer/sys.h"

namespace crossfree::tracer {
namespace {

using format::CentralOp;

using FetchFn = void* (*)(void*, unsigned, int, void* (*)(size_t));
using ReleaseFn = void (*)(void*, void*, unsigned, int);
using InsertFn = void (*)(void*, void*, void*, int);
using RemoveFn = int (*)(void*, void**, void**, int);

constexpr char kFetchName[] = "_ZN8tcmalloc11ThreadCache21FetchFromCentralCacheEjiPFPvmE";
constexpr char kReleaseName[] = "_ZN8tcmalloc11ThreadCache21ReleaseToCentralCacheEPNS0_8FreeListEji";
constexpr char kInsertName[] = "_ZN8tcmalloc15CentralFreeList11InsertRangeEPvS1_i";
constexpr char kRemoveName[] = "_ZN8tcmalloc15CentralFreeList11RemoveRangeEPPvS2_i";

std::atomic<FetchFn> g_fetch{nullptr};
std::atomic<ReleaseFn> g_release{nullptr};
std::atomic<InsertFn> g_insert{nullptr};
std::atomic<RemoveFn> g_remove{nullptr};

__thread int t_resolving __attribute__((tls_model("initial-exec"))) = 0;
// Objects moved by the Insert/RemoveRange calls nested in the current
// Fetch/Release of this thread.
__thread uint64_t t_moved __attribute__((tls_model("initial-exec"))) = 0;
// Size class + 1 of the Fetch/Release this thread is in, 0 outside one.
// CentralFreeList keeps its class private, so the nested Insert/RemoveRange
// records take it from here (an InsertRange outside a Release, e.g. a free
// on a thread whose cache is gone, records class 0).
__thread uint32_t t_class_plus1 __attribute__((tls_model("initial-exec"))) = 0;

// dlsym(RTLD_NEXT) finds the next definition in the global scope. If the
// caller's library was dlopen'ed RTLD_LOCAL it is not there: then look the
// name up in the object that called us (it defines all four).
void* Lookup(const char* name, void* caller) {
  void* sym = dlsym(RTLD_NEXT, name);
  if (sym == nullptr) {
    Dl_info info;
    if (dladdr(caller, &info) != 0 && info.dli_fname != nullptr) {
      if (void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) {
        sym = dlsym(handle, name);
        dlclose(handle);
      }
    }
  }
  if (sym == nullptr) {
    MessageLine().Add("cannot find the real ").Add(name).Add(" (dlsym RTLD_NEXT); aborting").Print();
    abort();
  }
  return sym;
}

template <typename Fn>
Fn Next(std::atomic<Fn>& cache, const char* name, void* caller) {
  Fn fn = cache.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  ++t_resolving;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  {
    GuardScope guard;  // dlsym's own allocations are the tracer's, not the target's
    fn = reinterpret_cast<Fn>(Lookup(name, caller));
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  --t_resolving;
  cache.store(fn, std::memory_order_release);
  return fn;
}

inline void Record(CentralOp op, unsigned size_class, uint64_t count, const CallSite& site) {
  if (t_resolving != 0) return;
  ErrnoSaver saved;
  RecordCentral(op, size_class, count, site);
}

}  // namespace
}  // namespace crossfree::tracer

#define CROSSFREE_SITE \
  ::crossfree::tracer::CallSite { __builtin_return_address(0), __builtin_frame_address(0) }
#define CROSSFREE_HOOK extern "C" __attribute__((visibility("default")))

using crossfree::tracer::g_fetch;
using crossfree::tracer::g_insert;
using crossfree::tracer::g_release;
using crossfree::tracer::g_remove;
using crossfree::tracer::kFetchName;
using crossfree::tracer::kInsertName;
using crossfree::tracer::kReleaseName;
using crossfree::tracer::kRemoveName;
using crossfree::tracer::Next;
using crossfree::tracer::Record;
using crossfree::tracer::t_class_plus1;
using crossfree::tracer::t_moved;
using crossfree::format::CentralOp;

// ThreadCache::FetchFromCentralCache(uint32 cl, int32 byte_size, oom handler).
CROSSFREE_HOOK void* _ZN8tcmalloc11ThreadCache21FetchFromCentralCacheEjiPFPvmE(
    void* self, unsigned cl, int byte_size, void* (*oom_handler)(size_t)) {
  auto real = Next(g_fetch, kFetchName, __builtin_return_address(0));
  uint64_t outer = t_moved;
  t_moved = 0;
  uint32_t outer_class = t_class_plus1;
  t_class_plus1 = cl + 1;
  void* result = real(self, cl, byte_size, oom_handler);
  t_class_plus1 = outer_class;
  uint64_t moved = t_moved;
  t_moved = outer;
  Record(CentralOp::kFetch, cl, moved, CROSSFREE_SITE);
  return result;
}

// ThreadCache::ReleaseToCentralCache(FreeList* src, uint32 cl, int N).
CROSSFREE_HOOK void _ZN8tcmalloc11ThreadCache21ReleaseToCentralCacheEPNS0_8FreeListEji(
    void* self, void* list, unsigned cl, int n) {
  auto real = Next(g_release, kReleaseName, __builtin_return_address(0));
  uint64_t outer = t_moved;
  t_moved = 0;
  uint32_t outer_class = t_class_plus1;
  t_class_plus1 = cl + 1;
  real(self, list, cl, n);
  t_class_plus1 = outer_class;
  uint64_t moved = t_moved;
  t_moved = outer;
  Record(CentralOp::kRelease, cl, moved, CROSSFREE_SITE);
}

// CentralFreeList::InsertRange(void* start, void* end, int N).
CROSSFREE_HOOK void _ZN8tcmalloc15CentralFreeList11InsertRangeEPvS1_i(void* self, void* start,
                                                                      void* end, int n) {
  auto real = Next(g_insert, kInsertName, __builtin_return_address(0));
  real(self, start, end, n);
  if (n > 0) t_moved += static_cast<uint64_t>(n);
  Record(CentralOp::kInsertRange, t_class_plus1 != 0 ? t_class_plus1 - 1 : 0, n > 0 ? static_cast<uint64_t>(n) : 0, CROSSFREE_SITE);
}

// CentralFreeList::RemoveRange(void** start, void** end, int N) -> objects.
CROSSFREE_HOOK int _ZN8tcmalloc15CentralFreeList11RemoveRangeEPPvS2_i(void* self, void** start,
                                                                     void** end, int n) {
  auto real = Next(g_remove, kRemoveName, __builtin_return_address(0));
  int got = real(self, start, end, n);
  if (got > 0) t_moved += static_cast<uint64_t>(got);
  Record(CentralOp::kRemoveRange, t_class_plus1 != 0 ? t_class_plus1 - 1 : 0, got > 0 ? static_cast<uint64_t>(got) : 0, CROSSFREE_SITE);
  return got;
}
