// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p PID`: attach to a running process, record a window,
// detach (docs/guide/tracer.md, "Attaching to a running process").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace crossfree::analyzer::record {

struct AttachOptions {
  pid_t pid = 0;
  std::string output;       // "" : ./crossfree.<pid>.trace
  std::string unwind;       // "" : the tracer's default
  int depth = 0;            // 0 : default
  bool no_stacks = false;
  uint32_t sample = 0;      // 0 : every allocation
  double duration_s = -1;   // < 0 : until SIGINT/SIGTERM
  std::string library;      // the tracer library (absolute)
};

// Runs the whole session; returns the exit status (0, or 2 with one line
// on stderr saying what went wrong and what to do).
int RunAttach(const AttachOptions& options);

}  // namespace crossfree::analyzer::record
