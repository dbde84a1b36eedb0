// SPDX-License-Identifier: Apache-2.0
// crossfree-capture-bench: frames per capture, share of captures that reach
// the scenario's root frame, and ns per capture, for each unwind mode, on
// call chains through our own frame-pointer code and through Debian's libc
// and libstdc++ (built without frame pointers).
//
// The program replaces the global operator new with a minimal "hook" that
// forwards to malloc and, while a measurement is on, captures the stack the
// way the tracer does. CaptureStack is timed with the TSC around each call
// (calibrated against CLOCK_MONOTONIC) and the median capture is reported,
// which a busy machine's preemptions do not move. "stray" counts recorded
// frames that lie in no loaded object (dladdr finds none): junk read as a
// return address through a frame pointer that was none; it must be 0.
#include <dlfcn.h>
#include <link.h>
#include <time.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <string>

#include "tracer/stacks.h"

namespace {

bool g_capture = false;
bool g_in_hook = false;
uint64_t g_captures = 0;
uint64_t g_frames = 0;
uint64_t g_reached_root = 0;
uint64_t g_stray = 0;
uint64_t* g_ticks = nullptr;  // per capture, malloc'd up front
uint64_t g_ticks_cap = 0;
uintptr_t g_root_begin = 0;
uintptr_t g_root_end = 0;

__attribute__((noinline)) void Record(const uint64_t* frames, int depth) {
  ++g_captures;
  g_frames += depth;
  for (int i = 0; i < depth; ++i) {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(frames[i] - 1), &info) == 0) ++g_stray;
  }
  for (int i = 0; i < depth; ++i) {
    if (frames[i] > g_root_begin && frames[i] <= g_root_end) {
      ++g_reached_root;
      break;
    }
  }
}

}  // namespace

// The benchmark's allocation hook. Frame pointer kept (project flags).
__attribute__((noinline)) void* operator new(size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  if (g_capture && !g_in_hook) {
    g_in_hook = true;
    uint64_t frames[64];
    uint64_t t0 = __rdtsc();
    int depth = crossfree::tracer::CaptureStack(__builtin_return_address(0),
                                                __builtin_frame_address(0), frames, 64);
    uint64_t ticks = __rdtsc() - t0;
    if (g_captures < g_ticks_cap) g_ticks[g_captures] = ticks;
    Record(frames, depth);
    g_in_hook = false;
  }
  asm volatile("" ::: "memory");
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

extern "C" {

// ---- Scenarios: each allocates `n` times through the given code. -------

__attribute__((noipa)) void OwnChain(int levels) {
  if (levels > 0) {
    OwnChain(levels - 1);
    asm volatile("" ::: "memory");
    return;
  }
  char* p = new char[48];
  asm volatile("" : : "r"(p) : "memory");
  delete[] p;
}

__attribute__((noipa)) int CompareAllocating(const void* a, const void* b) {
  char* p = new char[32];
  asm volatile("" : : "r"(p) : "memory");
  delete[] p;
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

__attribute__((noipa)) void QsortChain() {
  int values[4] = {3, 1, 2, 0};
  qsort(values, 4, sizeof(int), CompareAllocating);
  asm volatile("" ::: "memory");
}

__attribute__((noipa)) void StringChain() {
  std::string s;
  s.append(200, 'x');  // basic_string<char>::_M_replace_aux etc. live in libstdc++.so
  asm volatile("" : : "r"(s.data()) : "memory");
}

__attribute__((noipa)) void StreamChain() {
  std::ostringstream os;
  os << "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789";
  asm volatile("" ::: "memory");
}

// The root every scenario runs under; a capture "reaches the root" when one
// of its frames is a return address inside this function.
__attribute__((noipa)) void BenchRoot(int scenario, int n) {
  for (int i = 0; i < n; ++i) {
    switch (scenario) {
      case 0: OwnChain(12); break;
      case 1: QsortChain(); break;
      case 2: StringChain(); break;
      case 3: StreamChain(); break;
    }
    asm volatile("" ::: "memory");
  }
}

}  // extern "C"

namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Result {
  double ns_per_capture;
  double frames;
  double reached;
  uint64_t stray;
};

double g_ns_per_tick = 0;

void CalibrateTsc() {
  double t0 = Now();
  uint64_t c0 = __rdtsc();
  while (Now() - t0 < 0.05) {
  }
  g_ns_per_tick = (Now() - t0) * 1e9 / static_cast<double>(__rdtsc() - c0);
}

Result Run(int scenario, int n) {
  g_captures = g_frames = g_reached_root = g_stray = 0;
  g_capture = true;
  BenchRoot(scenario, n);
  g_capture = false;
  Result r{0, 0, 0, g_stray};
  if (g_captures == 0) return r;
  uint64_t count = g_captures < g_ticks_cap ? g_captures : g_ticks_cap;
  std::sort(g_ticks, g_ticks + count);
  r.ns_per_capture = static_cast<double>(g_ticks[count / 2]) * g_ns_per_tick;
  r.frames = static_cast<double>(g_frames) / g_captures;
  r.reached = 100.0 * static_cast<double>(g_reached_root) / g_captures;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  CalibrateTsc();
  g_ticks_cap = static_cast<uint64_t>(n) * 4;  // qsort allocates several times per round
  g_ticks = static_cast<uint64_t*>(std::malloc(g_ticks_cap * sizeof(uint64_t)));
  Dl_info info;
  ElfW(Sym)* sym = nullptr;
  if (dladdr1(reinterpret_cast<void*>(BenchRoot), &info, reinterpret_cast<void**>(&sym),
              RTLD_DL_SYMENT) == 0 || sym == nullptr) {
    std::fprintf(stderr, "capture-bench: cannot find BenchRoot's size (link with -rdynamic)\n");
    return 1;
  }
  g_root_begin = reinterpret_cast<uintptr_t>(BenchRoot);
  g_root_end = g_root_begin + sym->st_size;

  const char* scenarios[] = {"own code, fp (13 frames)", "qsort callback (libc)",
                             "std::string growth (libstdc++)", "std::ostringstream (libstdc++)"};
  const char* modes[] = {"fp", "libunwind", "hybrid"};
  std::printf("%-32s %-10s %10s %10s %12s %8s\n", "chain", "mode", "frames", "root %",
              "median ns", "stray");
  uint64_t stray_total = 0;
  for (int s = 0; s < 4; ++s) {
    for (const char* mode_name : modes) {
      crossfree::tracer::UnwindMode mode;
      crossfree::tracer::ParseUnwindMode(mode_name, &mode);
      if (!crossfree::tracer::InitStacks(mode, 64)) {
        std::printf("%-32s %-10s init failed\n", scenarios[s], mode_name);
        continue;
      }
      Run(s, 1000);  // warm caches
      Result r = Run(s, n);
      std::printf("%-32s %-10s %10.1f %10.1f %12.1f %8llu\n", scenarios[s], mode_name, r.frames,
                  r.reached, r.ns_per_capture, static_cast<unsigned long long>(r.stray));
      if (r.stray != 0) stray_total += r.stray;
    }
  }
  if (stray_total != 0) {
    std::fprintf(stderr, "capture-bench: %llu recorded frames lie in no loaded object\n",
                 static_cast<unsigned long long>(stray_total));
    return 1;
  }
  return 0;
}
