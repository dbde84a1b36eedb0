// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`: loads libcrossfree-trace.so into a running
// process with ptrace and calls its attach entry point (docs/design.md,
// "Attaching to a running process"). One thread of the target is stopped,
// for the dlopen and one short call; every other thread runs on.
//
// Single-threaded use from the record command; no global state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace crossfree::analyzer::cli {

struct InjectResult {
  bool ok = false;
  std::string error;        // one line, what happened and what to do
  int entry_result = -1;    // crossfree_attach's return value when called
  pid_t tid = 0;            // the thread that was stopped
  uint32_t threads = 0;     // threads of the target
  double stopped_ms = 0;    // how long that thread was kept from its own code, in all
  double calls_ms = 0;      // of which running dlopen and the entry point
  uint32_t attempts = 0;    // threads stopped and let go before one fit
  bool already_loaded = false;
};

// Why this process may not ptrace pid, in one line with what to do, or ""
// when nothing is known to forbid it.
std::string PtracePermissionProblem(pid_t pid);

// Loads library (an absolute path) into pid and calls its entry point
// with record_pid. On any failure the stopped thread gets its registers
// back and is let go.
InjectResult InjectTracer(pid_t pid, const std::string& library, pid_t record_pid);

}  // namespace crossfree::analyzer::cli
