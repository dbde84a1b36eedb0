// SPDX-License-Identifier: Apache-2.0
// The trace files a run of `crossfree record` leaves (the main trace, its
// forks', children's and exec'd images') and what each holds, for record's
// closing summary. Reads files only; any thread.
#pragma once

#include <time.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "format/trace_format.h"

namespace crossfree::analyzer::record {

struct TraceCounts {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  bool fork_child = false;
  uint64_t events = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  std::set<uint32_t> threads;  // when decoded
  uint64_t thread_count = 0;
  bool complete = true;
  std::string problem;
  uint32_t sample_period = 0;  // header: > 1 when sampled
};

// Counts a trace's events: from the totals the tracer wrote when the file
// ends with them, else by decoding every chunk. header_only: the header's
// fields only. Nullopt when it is no trace.
std::optional<TraceCounts> CountTrace(const std::string& path, bool header_only);

// The window records of the given cause in the trace at path (a --toggle-
// signal's: the signal reached the tracer), decoded chunk by chunk up to
// the first damaged one; 0 when it is no trace. Reads every chunk: for the
// traces that recorded no event, which are small.
uint64_t CountWindowRecords(const std::string& path, format::WindowCause cause);

// Whether the file ends with the totals its tracer writes when the process
// exits (exit, _exit, the end of main): false when a signal killed it first.
bool EndsWithTotals(const std::string& path);

// The regular files prefix<digits and dots>suffix in dir, modified at or
// after `since`.
std::vector<std::string> ListCandidates(const std::string& dir, const std::string& prefix,
                                        const std::string& suffix, time_t since);

// crossfree.<pid>.trace.<n> files in dir (later images after exec, without
// -o), modified at or after `since`.
std::vector<std::string> ListTraceImages(const std::string& dir, time_t since);

// Files "<base>.<digits>[.<digits>...]" in dir that are crossfree traces:
// the forks, children and exec'd images of an earlier run with -o base.
std::vector<std::string> StaleTraces(const std::string& dir, const std::string& base);

}  // namespace crossfree::analyzer::record
