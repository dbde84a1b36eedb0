// SPDX-License-Identifier: Apache-2.0
// libcrossfree-rpc-alloc-count.so: LD_PRELOAD it into rpc-bench to count
// operator new calls and cross-thread new/delete pairs in the measured window
// (rpc-bench finds these two functions through weak references).
#include <cstdio>
#include <cstring>

#include "bench/rpc/alloc_counter.h"

extern "C" __attribute__((visibility("default"))) void crossfree_alloc_count_start() {
  crossfree::rpc::testing::StartAllocRecording();
}

// Stops counting. Writes "  <role> -> <role>: <count>" lines into report and
// returns the number of allocations made while counting.
extern "C" __attribute__((visibility("default"))) long crossfree_alloc_count_stop(char* report,
                                                                                  size_t len) {
  long allocs = crossfree::rpc::testing::RecordedAllocations();
  auto pairs = crossfree::rpc::testing::StopAllocRecording();
  std::string out;
  for (auto& [k, v] : pairs) out += "    " + k + ": " + std::to_string(v) + "\n";
  if (out.empty()) out = "    (none)\n";
  snprintf(report, len, "%s", out.c_str());
  return allocs;
}
