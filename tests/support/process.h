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

// GCC says which sanitizer a build has with __SANITIZE_*__, clang with
// __has_feature(*_sanitizer): one test of both, for the two below.
#if defined(__has_feature)
#define CROSSFREE_TEST_HAS_FEATURE(f) __has_feature(f)
#else
#define CROSSFREE_TEST_HAS_FEATURE(f) 0
#endif

// Whether this build is instrumented with AddressSanitizer (scripts/test
// --asan). Then so is every program the build makes, but the tracer.
#if defined(__SANITIZE_ADDRESS__) || CROSSFREE_TEST_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Whether this build is instrumented with ThreadSanitizer (scripts/test
// --tsan). Then so is every program the build makes, but the tracer and
// the programs the tracer tests preload it into.
#if defined(__SANITIZE_THREAD__) || CROSSFREE_TEST_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// address_space under TSan: not set, for the same reason as under ASan
// below (TSan maps its shadow at start-up), and TSan has no bound of its
// own to put in its place: a child of a TSan build has the time bound
// alone.
// address_space under ASan: not set as RLIMIT_AS, because ASan reserves
// terabytes of address space for its shadow memory at start-up, so under
// any bound a test could choose the child dies before main ("ASan failed to
// allocate ... ReserveShadowMemoryRange failed"). The child gets ASan's own
// bound of the same size instead, hard_rss_limit_mb appended to its
// ASAN_OPTIONS: ASan's background thread checks the resident set about every
// 0.1 s and ends the child (exit 1, with a report) once it passes. Programs
// built without ASan (sh, ls) get no memory bound in that build.
struct ProcessLimits {
  double timeout_s = 30;           // SIGKILL after this; timed_out is set
  uint64_t address_space = 0;      // RLIMIT_AS in bytes; 0 = unlimited (ASan, TSan builds: above)
  std::vector<std::string> env;    // NAME=VALUE added to (or replacing in) the environment
  // Removed from the environment (before env is added): NAME, or PREFIX*
  // for every name that starts with PREFIX.
  std::vector<std::string> unset_env;
  std::string stdin_path = "/dev/null";
};

struct ProcessResult {
  bool started = false;   // false: the command could not be run (error says why), e.g. exec failed
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

// Runs argv[0] (searched in PATH) with the given arguments, in a process
// group of its own (a timeout kills the group); waits for it. Any thread.
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
