// SPDX-License-Identifier: Apache-2.0
// Tests for CaptureStack in every mode: a known chain of frame-pointer
// functions, a chain through libc's qsort (no frame pointers), a fresh
// thread, and broken frame chains.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tracer/stacks.h"
#include "tracer/unwind_cfi.h"

// Exported (the test binary links with -rdynamic) so that dladdr can name
// them; noipa keeps GCC from inlining, cloning or tail-calling them.
extern "C" {

// Mimics an allocation hook: passes its own return and frame address.
__attribute__((noipa)) int CfTestHook(uint64_t* frames, int max_depth) {
  int depth = crossfree::tracer::CaptureStack(__builtin_return_address(0),
                                              __builtin_frame_address(0), frames, max_depth);
  asm volatile("" ::: "memory");  // no tail call: the hook's frame must stay
  return depth;
}

__attribute__((noipa)) int CfTestF3(uint64_t* frames, int max_depth) {
  int depth = CfTestHook(frames, max_depth);
  asm volatile("" ::: "memory");
  return depth;
}

__attribute__((noipa)) int CfTestF2(uint64_t* frames, int max_depth) {
  int depth = CfTestF3(frames, max_depth);
  asm volatile("" ::: "memory");
  return depth;
}

__attribute__((noipa)) int CfTestF1(uint64_t* frames, int max_depth) {
  int depth = CfTestF2(frames, max_depth);
  asm volatile("" ::: "memory");
  return depth;
}

// libc's own qsort, not whatever `qsort` resolves to: under AddressSanitizer
// that is ASan's interceptor, which calls the comparator through a wrapper
// of its own, so frames of libasan.so would sit between it and libc's.
using QsortFn = void (*)(void*, size_t, size_t, int (*)(const void*, const void*));
QsortFn LibcQsort() {
  static const QsortFn fn = [] {
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    return reinterpret_cast<QsortFn>(libc != nullptr ? dlsym(libc, "qsort") : nullptr);
  }();
  return fn;
}

uint64_t cf_test_qsort_frames[64];
int cf_test_qsort_depth = 0;

__attribute__((noipa)) int CfTestCompare(const void* a, const void* b) {
  if (cf_test_qsort_depth == 0) cf_test_qsort_depth = CfTestHook(cf_test_qsort_frames, 64);
  asm volatile("" ::: "memory");
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

__attribute__((noipa)) int CfTestQsortCaller() {
  int values[32];
  for (int i = 0; i < 32; ++i) values[i] = (i * 7919) % 32;
  cf_test_qsort_depth = 0;
  LibcQsort()(values, 32, sizeof(int), CfTestCompare);
  asm volatile("" ::: "memory");
  return values[0];
}

// A hook called with a hand-made frame address, to check that a broken
// chain is survived.
__attribute__((noipa)) int CfTestHookWithFrame(void* frame, uint64_t* frames, int max_depth) {
  int depth = crossfree::tracer::CaptureStack(__builtin_return_address(0), frame, frames,
                                              max_depth);
  asm volatile("" ::: "memory");
  return depth;
}

}  // extern "C"

// 32 distinct functions (distinct return addresses) that no other test
// walks, so the race test below meets a cold rule cache.
template <int N>
__attribute__((noipa)) int CfTestColdChain(uint64_t* frames, int max_depth) {
  int depth;
  if constexpr (N == 0) {
    depth = CfTestHook(frames, max_depth);
  } else {
    depth = CfTestColdChain<N - 1>(frames, max_depth);
  }
  asm volatile("" ::: "memory");
  return depth;
}

namespace crossfree::tracer {
namespace {

// The exported function that contains code address pc, or null.
void* FunctionOf(uint64_t pc) {
  Dl_info info;
  // pc is a return address: the call is the byte before it.
  if (dladdr(reinterpret_cast<void*>(pc - 1), &info) == 0) return nullptr;
  return info.dli_saddr;
}

bool InLibc(uint64_t pc) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(pc - 1), &info) == 0 || info.dli_fname == nullptr) {
    return false;
  }
  return std::strstr(info.dli_fname, "libc.so") != nullptr;
}

void* Fn(int (*f)(uint64_t*, int)) { return reinterpret_cast<void*>(f); }

// The unwind mode of that name (as CROSSFREE_UNWIND and --unwind take it).
UnwindMode Mode(const char* name) {
  UnwindMode mode = UnwindMode::kHybrid;
  INFO("unwind mode " << name);
  REQUIRE(ParseUnwindMode(name, &mode));
  return mode;
}

void CheckKnownChain(const char* mode) {
  INFO("mode " << mode);
  REQUIRE(InitStacks(Mode(mode), 64));
  uint64_t frames[64] = {};
  // Twice: the first capture may fill caches, the second reads them.
  for (int round = 0; round < 2; ++round) {
    std::memset(frames, 0, sizeof(frames));
    int depth = CfTestF1(frames, 64);
    REQUIRE(depth >= 4);
    CHECK(FunctionOf(frames[0]) == Fn(CfTestF3));  // the hook's caller, not the hook
    CHECK(FunctionOf(frames[1]) == Fn(CfTestF2));
    CHECK(FunctionOf(frames[2]) == Fn(CfTestF1));
    for (int i = 0; i < depth; ++i) {
      CHECK(FunctionOf(frames[i]) != reinterpret_cast<void*>(CfTestHook));
    }
  }
  // max_depth is honoured.
  std::memset(frames, 0, sizeof(frames));
  CHECK(CfTestF1(frames, 2) == 2);
  CHECK(FunctionOf(frames[1]) == Fn(CfTestF2));
  CHECK(frames[2] == 0);
}

TEST_CASE("CaptureStack records the hook's caller first, then its callers") {
  CheckKnownChain("fp");
  CheckKnownChain("libunwind");
  CheckKnownChain("hybrid");
}

TEST_CASE("CaptureStack works on a thread's first capture") {
  for (const char* mode : {"fp", "libunwind", "hybrid"}) {
    INFO("mode " << mode);
    REQUIRE(InitStacks(Mode(mode), 64));
    uint64_t frames[64] = {};
    int depth = 0;
    std::thread thread([&] { depth = CfTestF1(frames, 64); });
    thread.join();
    REQUIRE(depth >= 3);
    CHECK(FunctionOf(frames[0]) == Fn(CfTestF3));
    CHECK(FunctionOf(frames[1]) == Fn(CfTestF2));
    CHECK(FunctionOf(frames[2]) == Fn(CfTestF1));
  }
}

// libc is built without frame pointers: qsort's frames sit between the
// comparator and CfTestQsortCaller.
int FindQsortCaller() {
  for (int i = 1; i < cf_test_qsort_depth; ++i) {
    if (FunctionOf(cf_test_qsort_frames[i]) == reinterpret_cast<void*>(CfTestQsortCaller)) {
      return i;
    }
  }
  return -1;
}

TEST_CASE("CaptureStack through qsort: DWARF modes reach the caller beyond libc") {
  REQUIRE(LibcQsort() != nullptr);
  for (const char* mode : {"libunwind", "hybrid"}) {
    INFO("mode " << mode);
    REQUIRE(InitStacks(Mode(mode), 64));
    for (int round = 0; round < 2; ++round) {
      CfTestQsortCaller();
      REQUIRE(cf_test_qsort_depth >= 3);
      CHECK(FunctionOf(cf_test_qsort_frames[0]) == reinterpret_cast<void*>(CfTestCompare));
      int caller = FindQsortCaller();
      REQUIRE(caller >= 2);  // at least one libc frame in between
      for (int i = 1; i < caller; ++i) CHECK(InLibc(cf_test_qsort_frames[i]));
    }
  }
  // The frame-pointer walk only promises the comparator itself; whatever
  // else it finds must be a plausible code address, and it must not crash.
  REQUIRE(InitStacks(UnwindMode::kFramePointer, 64));
  CfTestQsortCaller();
  REQUIRE(cf_test_qsort_depth >= 1);
  CHECK(FunctionOf(cf_test_qsort_frames[0]) == reinterpret_cast<void*>(CfTestCompare));
}

TEST_CASE("CaptureStack: hybrid's libunwind fallback and its CFI cache agree") {
  // A thread that misses the rule cache while another thread fills it
  // finishes the capture with libunwind. Force that, then compare with the
  // capture that fills and then reads the cache.
  REQUIRE(InitStacks(UnwindMode::kHybrid, 64));
  uint64_t fallback[64] = {};
  uint64_t filled[64] = {};
  uint64_t cached[64] = {};
  CfiStats before = GetCfiStats();
  REQUIRE(HoldCfiFillLockForTests(true));
  int fallback_depth = CfTestColdChain<31>(fallback, 64);
  REQUIRE(HoldCfiFillLockForTests(false));
  CHECK(GetCfiStats().fallbacks == before.fallbacks + 1);
  CHECK(GetCfiStats().rules == before.rules);
  int filled_depth = CfTestColdChain<31>(filled, 64);
  CHECK(GetCfiStats().rules > before.rules);
  int cached_depth = CfTestColdChain<31>(cached, 64);
  REQUIRE(fallback_depth >= 33);
  CHECK(FunctionOf(fallback[0]) == reinterpret_cast<void*>(&CfTestColdChain<0>));
  CHECK(FunctionOf(fallback[31]) == reinterpret_cast<void*>(&CfTestColdChain<31>));
  REQUIRE(filled_depth == fallback_depth);
  REQUIRE(cached_depth == fallback_depth);
  for (int i = 0; i < fallback_depth; ++i) {
    if (i == 32) continue;  // the three call sites in this test differ
    INFO("frame " << i);
    CHECK(filled[i] == fallback[i]);
    CHECK(cached[i] == fallback[i]);
  }
  CHECK(FunctionOf(fallback[32]) == FunctionOf(filled[32]));
}

TEST_CASE("CaptureStack: threads racing through cold code get identical stacks") {
  REQUIRE(InitStacks(UnwindMode::kHybrid, 64));
  constexpr int kThreads = 4;
  uint64_t frames[kThreads][64] = {};
  int depths[kThreads] = {};
  std::atomic<int> ready{0};
  std::thread threads[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    threads[t] = std::thread([&, t] {
      uint64_t warm[4];
      CfTestHook(warm, 1);  // the thread's stack bounds, outside the race
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      depths[t] = CfTestColdChain<15>(frames[t], 64);
    });
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(depths[0] >= 17);
  CHECK(FunctionOf(frames[0][0]) == reinterpret_cast<void*>(&CfTestColdChain<0>));
  CHECK(FunctionOf(frames[0][15]) == reinterpret_cast<void*>(&CfTestColdChain<15>));
  for (int t = 1; t < kThreads; ++t) {
    INFO("thread " << t);
    REQUIRE(depths[t] == depths[0]);
    // Every frame is the same code on every thread (same lambda, same
    // std::thread start-up).
    for (int i = 0; i < depths[0]; ++i) CHECK(frames[t][i] == frames[0][i]);
  }
}

TEST_CASE("CaptureStack survives broken frame chains") {
  for (const char* mode : {"fp", "hybrid"}) {
    INFO("mode " << mode);
    REQUIRE(InitStacks(Mode(mode), 64));
    uint64_t frames[64] = {};
    // A frame record outside the stack (on the heap): nothing is read.
    auto* heap_record = static_cast<uintptr_t*>(std::malloc(64));
    heap_record[0] = 0x1234;
    heap_record[1] = 0x5678;
    CHECK(CfTestHookWithFrame(heap_record, frames, 64) == 1);
    std::free(heap_record);
    // Misaligned and null frame addresses.
    alignas(16) uintptr_t record[4] = {0, 0, 0, 0};
    CHECK(CfTestHookWithFrame(reinterpret_cast<char*>(record) + 3, frames, 64) == 1);
    CHECK(CfTestHookWithFrame(nullptr, frames, 64) == 1);
    // A record on the stack whose saved fp points downwards / to garbage.
    record[0] = reinterpret_cast<uintptr_t>(record) - 64;
    record[1] = 0x401000;
    int depth = CfTestHookWithFrame(record, frames, 64);
    CHECK(depth >= 1);
    CHECK(depth <= 64);
    record[0] = 0xdeadbeefdeadbeef;
    depth = CfTestHookWithFrame(record, frames, 64);
    CHECK(depth >= 1);
    CHECK(depth <= 64);
  }
}

}  // namespace
}  // namespace crossfree::tracer

namespace crossfree::tracer {
namespace {

// Issue 31: code without frame pointers leaves rbp pointing at data, and
// the word above it (a canary, a heap pointer, text) was recorded as a
// return address. A walk that follows frame pointers ends at the first
// word outside every module's executable segments.
TEST_CASE("CaptureStack ends a frame-pointer walk at a word that is no return address") {
  for (const char* mode : {"fp", "hybrid"}) {
    INFO("mode " << mode);
    REQUIRE(InitStacks(Mode(mode), 64));
    void* heap = std::malloc(32);
    const uintptr_t junk[] = {
        0x8a3c2f6d11e49200,                       // a stack canary
        reinterpret_cast<uintptr_t>(heap),        // a heap pointer
        0x6f6c6c6568202c6f,                       // ASCII text
        0x8000000000001234,                       // not canonical
    };
    for (uintptr_t word : junk) {
      INFO("junk word " << std::hex << word);
      // Records in this frame (above the hook's): chain[0..1] is the record
      // handed to the hook, whose saved fp leads to chain[2..3], whose
      // "return address" is junk; chain[4..5] follows with a real one.
      alignas(16) uintptr_t chain[8] = {};
      chain[0] = reinterpret_cast<uintptr_t>(&chain[2]);
      chain[2] = reinterpret_cast<uintptr_t>(&chain[4]);
      chain[3] = word;
      chain[4] = 0;
      chain[5] = reinterpret_cast<uintptr_t>(&CfTestF2) + 4;
      uint64_t frames[64] = {};
      int depth = CfTestHookWithFrame(chain, frames, 64);
      CHECK(depth == 1);
      for (int i = 0; i < depth; ++i) CHECK(frames[i] != word);
      // A real return address first, then junk: the walk keeps the first.
      chain[3] = reinterpret_cast<uintptr_t>(&CfTestF1) + 4;
      chain[5] = word;
      std::memset(frames, 0, sizeof(frames));
      depth = CfTestHookWithFrame(chain, frames, 64);
      CHECK(depth == 2);
      CHECK(frames[1] == reinterpret_cast<uintptr_t>(&CfTestF1) + 4);
      for (int i = 0; i < depth; ++i) CHECK(frames[i] != word);
    }
    std::free(heap);
  }
}

}  // namespace
}  // namespace crossfree::tracer
