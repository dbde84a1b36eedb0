// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`: loads libcrossfree-trace.so into a running
// process with ptrace and calls its attach entry point (docs/design.md,
// "Attaching to a running process"). One thread of the target is stopped
// for well under a millisecond, to point it at code that loads the tracer
// and returns by itself; every other thread runs on.
//
// Single-threaded use from the record command; no global state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace crossfree::analyzer::record {

struct InjectResult {
  bool ok = false;
  std::string error;        // one line, what happened and what to do
  int entry_result = -1;    // crossfree_attach's return value when called
  pid_t tid = 0;            // the thread that was stopped
  uint32_t threads = 0;     // threads of the target
  double stopped_ms = 0;    // how long threads were held in ptrace stops, in all
  double calls_ms = 0;      // then the chosen thread's run of dlopen and the entry point
  uint32_t attempts = 0;    // threads stopped and let go before one fit
  bool already_loaded = false;
  // The thread's priority was raised for the loading (root: nice -20);
  // its nice value before, which its children (the tracer's control
  // thread) should run at.
  bool raised_nice = false;
  int old_nice = 0;
};

// Why this process may not ptrace pid, in one line with what to do, or ""
// when nothing is known to forbid it.
std::string PtracePermissionProblem(pid_t pid);

// Loads library (an absolute path) into pid and calls its entry point
// with record_pid. listener is record's bound and listening control
// socket (attach_protocol.h): the injected code reports on a connection
// to it, which this accepts; the tracer's own connection is left queued.
// The stopped thread is let go within a few hundred microseconds, either
// untouched or pointed at code that brings it back by itself.
InjectResult InjectTracer(pid_t pid, const std::string& library, pid_t record_pid, int listener);

}  // namespace crossfree::analyzer::record
