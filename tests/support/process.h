// SPDX-License-Identifier: Apache-2.0
// Test support: runs a command as a child process with bounded time and
// memory and collects what it did. For tests that check a command's exit
// status, signal, output and resource use (the CLI on hostile traces, the
// tracer on real programs).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace crossfree::testing {

struct ProcessLimits {
  double timeout_s = 30;           // SIGKILL after this; timed_out is set
  uint64_t address_space = 0;      // RLIMIT_AS in bytes; 0 = unlimited
  std::vector<std::string> env;    // NAME=VALUE added to (or replacing in) the environment
  std::string stdin_path = "/dev/null";
};

struct ProcessResult {
  bool started = false;   // false: the command could not be run (error says why)
  bool timed_out = false;
  int exit_code = -1;     // when it exited
  int signal = 0;         // when a signal ended it
  uint64_t max_rss_kib = 0;
  std::string out;        // stdout
  std::string err;        // stderr
  std::string error;

  bool exited() const { return started && signal == 0 && !timed_out; }
  // "exit 2", "killed by SIGSEGV", "timed out": for test messages.
  std::string Describe() const;
};

// Runs argv[0] (searched in PATH) with the given arguments.
ProcessResult RunProcess(const std::vector<std::string>& argv, const ProcessLimits& limits = {});

// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// the object goes away.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Reads and writes a whole file; Write REQUIREs success.
std::string ReadFileText(const std::string& path);
void WriteFileBytes(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace crossfree::testing
