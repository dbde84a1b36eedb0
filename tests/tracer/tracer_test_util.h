// SPDX-License-Identifier: Apache-2.0
// Tracer tests: run a target under LD_PRELOAD and read its trace back.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "format/trace_reader.h"

namespace crossfree::tracer_test {

struct RunResult {
  int exit_code = -1;  // 128 + signal if killed; -1 if it did not start or timed out
  std::string out;
  std::string err;     // ends with a line saying so if it did not start or timed out
};

// Runs argv with env_extra ("K=V", replacing the same name) added to a clean
// copy of our environment (LD_PRELOAD and CROSSFREE_* removed first).
// preload is the full LD_PRELOAD value, or empty for none. Runs through
// tests/support's RunProcess, bounded by kRunTimeoutSeconds and
// kRunAddressSpace.
RunResult Run(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra,
              const std::string& preload);

// A hang, not a loaded machine, must trip it (ctest stops a whole test at 300 s).
constexpr double kRunTimeoutSeconds = 240;
// RLIMIT_AS of each run: far above what the targets and the real programs
// (g++, python3, git) map, low enough that a runaway child fails instead of
// swapping the machine.
constexpr uint64_t kRunAddressSpace = uint64_t{8} << 30;

// A fresh empty directory under $TMPDIR (or /tmp), removed at exit.
std::string MakeTempDir();

// Starts argv (argv[0] searched in PATH) in the background, not waited for:
// stdout to the file `out`, stderr to the file `err` (kept when err is
// empty), the environment `env` (this process's when null). Returns its
// pid, or -1 when it could not be started. For tests that must signal a
// command while it runs; Run is for the others.
pid_t SpawnInBackground(const std::vector<std::string>& argv, const std::string& out,
                        const std::string& err, const std::vector<std::string>* env = nullptr);

// Path of a built target program.
std::string TargetPath(const std::string& name);

// Runs target `name` traced into <dir>/trace; returns the run.
RunResult RunTraced(const std::string& name, const std::string& dir,
                    const std::vector<std::string>& args = {},
                    const std::vector<std::string>& env_extra = {},
                    const std::string& extra_preload = "");

struct Trace {
  format::FileHeader header;
  std::vector<format::Event> events;  // file order
  std::map<uint32_t, std::vector<uint64_t>> stacks;
  std::map<uint32_t, std::vector<std::string>> thread_names;
  std::set<uint32_t> thread_exits;
  std::vector<format::Module> modules;
  std::map<uint32_t, std::vector<uint32_t>> chunk_sequences;  // per tid, file order
  std::map<uint32_t, format::ThreadCounts> counts;  // sampled traces: per tid, summed
  bool complete = false;
  std::string error;
};

// Decodes every chunk of reader into visitor, in file order, calling
// on_chunk (when given) for each chunk before its records. False with
// *error set at the first chunk that is not whole or does not decode.
bool DecodeAll(format::TraceReader& reader, format::RecordVisitor& visitor, std::string* error,
               const std::function<void(const format::Chunk&)>& on_chunk = {});

// The whole file as bytes ("" when it cannot be read).
std::string ReadAll(const std::string& path);

// The number just before the first match of the regex what in text
// ("<n> what"), e.g. a count in record's hand-off line; -1 when none.
long long NumberBefore(const std::string& text, const std::string& what);

// Reads and fully decodes a trace; complete is false on any problem.
Trace LoadTrace(const std::string& path);
// LoadTrace, the trace REQUIREd complete (the failure names the path and
// the reader's error).
Trace LoadCompleteTrace(const std::string& path);

// "fn NAME START SIZE" lines printed by the targets.
struct FnRange {
  uint64_t start = 0;
  uint64_t size = 0;
  bool Contains(uint64_t pc) const { return pc >= start && pc < start + size; }
};
std::map<std::string, FnRange> ParseFunctions(const std::string& out);

// The first frame of an event's stack, or 0 if it has none.
uint64_t FirstFrame(const Trace& trace, const format::Event& event);

// Events whose first frame lies inside fn.
std::vector<format::Event> EventsFrom(const Trace& trace, const FnRange& fn);

// Counts lines of text.
int CountLines(const std::string& text);

}  // namespace crossfree::tracer_test
