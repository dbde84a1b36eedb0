// SPDX-License-Identifier: Apache-2.0
// What rpc-bench (bench/rpc/rpc_bench.cc) and grpc_bench (bench/grpc) measure and
// print the same way: the process's CPU time and context switches over the
// measured window, the summary lines made of them and the RESULT line's
// rate fields. Header-only: bench/grpc is a separate CMake project.
#pragma once

#include <sys/resource.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

// The allocation-counting preload (bench/rpc/alloc_count_preload.cc), when
// it is loaded: counts operator new calls and cross-thread pairs between
// start and stop; null otherwise.
extern "C" void crossfree_alloc_count_start() __attribute__((weak));
extern "C" long crossfree_alloc_count_stop(char* report, size_t len) __attribute__((weak));

namespace crossfree::bench {

// getrusage(RUSAGE_SELF) at the start and at the end of the window.
class RusageWindow {
 public:
  void Start() { getrusage(RUSAGE_SELF, &start_); }
  void Stop() { getrusage(RUSAGE_SELF, &stop_); }

  double user_us() const { return (Seconds(stop_.ru_utime) - Seconds(start_.ru_utime)) * 1e6; }
  double sys_us() const { return (Seconds(stop_.ru_stime) - Seconds(start_.ru_stime)) * 1e6; }
  double ctxsw() const {
    return (stop_.ru_nvcsw + stop_.ru_nivcsw) - (start_.ru_nvcsw + start_.ru_nivcsw);
  }
  double voluntary_ctxsw() const { return double(stop_.ru_nvcsw - start_.ru_nvcsw); }

 private:
  static double Seconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }
  rusage start_{};
  rusage stop_{};
};

// The summary's first lines: "results", then calls per second and the CPU
// time and context switches per call.
inline void PrintResultsHead(double reqs, double elapsed, const RusageWindow& w) {
  printf("results\n");
  printf("  Reqs/sec: %.1f\n", reqs / elapsed);
  printf("  User CPU per req: %.2f us\n", w.user_us() / reqs);
  printf("  Sys CPU per req: %.2f us\n", w.sys_us() / reqs);
  printf("  Ctx Sw. per req: %.3f\n", w.ctxsw() / reqs);
}

// The RESULT line's rate fields, from reqs_per_sec to ctxsw_per_req, with
// no leading or trailing space.
inline void PrintResultRates(double reqs, double elapsed, const RusageWindow& w) {
  printf("reqs_per_sec=%.1f user_us_per_req=%.3f sys_us_per_req=%.3f ctxsw_per_req=%.4f",
         reqs / elapsed, w.user_us() / reqs, w.sys_us() / reqs, w.ctxsw() / reqs);
}

// What one measured window saw.
struct Window {
  double elapsed_s = 0;   // wall time
  uint64_t calls = 0;     // calls completed in the window
  long allocs = -1;       // operator new calls, -1 without the counting preload
  std::string pairs;      // the preload's cross-thread pair lines
};

inline bool AllocCounting() {
  return crossfree_alloc_count_start != nullptr && crossfree_alloc_count_stop != nullptr;
}

// The window both benchmarks measure, in one order so their figures
// compare: read the call counter, start rusage and the allocation count,
// wait (sleep or join), then read them all back in reverse. calls_now()
// returns the calls completed so far; wait() returns when the window ends.
template <typename CallsNow, typename Wait>
Window MeasureWindow(RusageWindow& usage, CallsNow&& calls_now, Wait&& wait) {
  using Clock = std::chrono::steady_clock;
  const bool counting = AllocCounting();
  Window w;
  const uint64_t calls0 = calls_now();
  usage.Start();
  if (counting) crossfree_alloc_count_start();
  const Clock::time_point t0 = Clock::now();
  wait();
  w.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  w.calls = calls_now() - calls0;
  if (counting) {
    char report[4096] = "";
    w.allocs = crossfree_alloc_count_stop(report, sizeof(report));
    w.pairs = report;
  }
  usage.Stop();
  return w;
}

}  // namespace crossfree::bench
