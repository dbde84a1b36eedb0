// SPDX-License-Identifier: Apache-2.0
// What rpc-bench (rpc/rpc_bench.cc) and grpc_bench (bench/grpc) measure and
// print the same way: the process's CPU time and context switches over the
// measured window, the summary lines made of them and the RESULT line's
// rate fields. Header-only: bench/grpc is a separate CMake project.
#pragma once

#include <sys/resource.h>
#include <sys/time.h>

#include <cstdio>

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

}  // namespace crossfree::bench
