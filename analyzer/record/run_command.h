// SPDX-License-Identifier: Apache-2.0
// `crossfree record -- CMD`: runs CMD with libcrossfree-trace.so preloaded
// (first, then every --preload library, then an inherited LD_PRELOAD) and
// supervises it like a shell would (command_process.h); its chunks come
// back through shared memory (record_handoff.h) and are written here:
//  - before the run, trace files FILE.* left by an earlier run with the same
//    -o are removed (and listed), so one run's files never mix with
//    another's;
//  - record waits for CMD and returns its status, 128 + N when a signal
//    killed it; 127 (not found) or 126 when it could not be started;
//  - processes the command leaves running are waited for too, up to
//    wait_children_s;
//  - after the run, one summary for all the run's traces (forks and exec'd
//    images included): the biggest first, then a total line;
//  - when no trace could be written, it says why and exits 2 if CMD itself
//    succeeded.
// `crossfree record -p PID` attaches instead (attach_record.h).
//
// Threading: record's main thread; RunRecord owns the process's signal
// handlers while it runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace crossfree::analyzer::record {

struct RecordOptions {
  std::string output;  // -o; empty: ./crossfree.<pid>.trace
  std::string unwind;  // empty: the tracer's default
  int depth = 0;       // 0: the tracer's default
  bool no_stacks = false;
  uint32_t sample = 0;  // 0: not given
  double delay_s = -1;  // < 0: not given
  double duration_s = -1;
  std::string toggle_signal;
  std::vector<std::string> preloads;
  std::vector<std::string> command;
  double wait_children_s = 60;
  // --time-resolution: times rounded down to multiples of it in the traces
  // record writes (docs/trace-format.md 7.1); 1: nanoseconds.
  uint32_t time_resolution_ns = 1;
};

// Returns record's exit status (exit_codes.h and the command's).
int RunRecord(const RecordOptions& options);

}  // namespace crossfree::analyzer::record
