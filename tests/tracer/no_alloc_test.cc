// SPDX-License-Identifier: Apache-2.0
// Checks the hook-path rule "no allocation through malloc": this test binary
// interposes malloc/calloc/realloc/free (forwarding to glibc's __libc_*) and
// counts calls made while a capture or an intern is running, in each mode,
// once the thread and the caches are warm.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <thread>

#include "format/trace_format.h"
#include "tracer/stacks.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
}

namespace {
// Plain globals: the interposed functions must not touch C++ runtime state.
thread_local bool tls_counting = false;
thread_local long tls_calls = 0;
}  // namespace

extern "C" {
void* malloc(size_t n) {
  if (tls_counting) ++tls_calls;
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  if (tls_counting) ++tls_calls;
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  if (tls_counting) ++tls_calls;
  return __libc_realloc(p, n);
}
void free(void* p) {
  if (tls_counting && p != nullptr) ++tls_calls;
  __libc_free(p);
}

__attribute__((noipa)) int CfNoAllocHook(uint64_t* frames, int max_depth) {
  int depth = crossfree::tracer::CaptureStack(__builtin_return_address(0),
                                              __builtin_frame_address(0), frames, max_depth);
  asm volatile("" ::: "memory");
  return depth;
}

__attribute__((noipa)) int CfNoAllocCompare(const void* a, const void* b) {
  uint64_t frames[64];
  bool is_new = false;
  int depth = CfNoAllocHook(frames, 64);
  crossfree::tracer::InternStack(frames, depth, &is_new);
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}
}  // extern "C"

namespace crossfree::tracer {
namespace {

// Captures and interns through qsort (libc, no frame pointers) and a direct
// call; returns the malloc-family calls made during the measured rounds.
void Rounds(int rounds) {
  int values[8];
  uint64_t frames[64];
  bool is_new = false;
  for (int i = 0; i < rounds; ++i) {
    for (int j = 0; j < 8; ++j) values[j] = (j * 5 + i) % 8;
    qsort(values, 8, sizeof(int), CfNoAllocCompare);
    int depth = CfNoAllocHook(frames, 64);
    InternStack(frames, depth, &is_new);
  }
}

long CountAllocations(int rounds) {
  // Warm-up with the same inputs: the thread's stack bounds, libunwind's
  // per-thread cache and the CFI rules of every return address reached
  // (computing a new rule allocates, through libdw) are set up once.
  // Both passes must call Rounds from the same site so that they reach the
  // same return addresses: a volatile bound keeps GCC from unrolling.
  volatile int passes = 2;
  for (int pass = 0; pass < passes; ++pass) {
    tls_calls = 0;
    tls_counting = pass == 1;
    Rounds(rounds);
    tls_counting = false;
  }
  return tls_calls;
}

TEST_CASE("The malloc counter of this test binary works") {
  tls_calls = 0;
  tls_counting = true;
  void* p = malloc(24);
  asm volatile("" : : "r"(p) : "memory");
  free(p);
  tls_counting = false;
  CHECK(tls_calls == 2);
}

TEST_CASE("Warm CaptureStack and InternStack never call malloc") {
  for (const char* name : {"fp", "libunwind", "hybrid"}) {
    INFO("mode " << name);
    UnwindMode mode;
    REQUIRE(ParseUnwindMode(name, &mode));
    REQUIRE(InitStacks(mode, 64));
    CHECK(CountAllocations(200) == 0);
    long on_thread = -1;
    std::thread thread([&] { on_thread = CountAllocations(200); });
    thread.join();
    CHECK(on_thread == 0);
  }
}

}  // namespace
}  // namespace crossfree::tracer
