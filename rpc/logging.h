// SPDX-License-Identifier: Apache-2.0
// Minimal logging for rpc/: one line per event to stderr, prefixed with the
// level and the calling thread's name; tests may capture the lines.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace crossfree::rpc {

enum class LogLevel { kInfo, kWarning, kError };

// Thread-safe. Formats "[W reactor-0] message" and writes it to stderr
// (suppressed below the threshold set by SetMinLogLevel) and to the test sink.
void Log(LogLevel level, std::string_view message);
void SetMinLogLevel(LogLevel level);

// Test hook: every logged line is also handed to `sink` (nullptr to remove).
// The sink runs on the logging thread and must be thread-safe.
void SetLogSinkForTests(std::function<void(std::string_view)> sink);

// Lets one line through per interval and counts the ones held back, so a
// condition that repeats thousands of times a second (accept failing with
// EMFILE) leaves a readable log. Thread: one owner (not synchronized).
class RateLimitedLog {
 public:
  explicit RateLimitedLog(int interval_ms) : interval_(interval_ms) {}
  // True if a line may be logged now; *suppressed gets the number of lines
  // held back since the last one that was.
  bool ShouldLog(int* suppressed);

 private:
  const std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
  bool logged_once_ = false;
  int suppressed_ = 0;
};

// Sets the calling thread's name (at most 15 characters are kept by Linux).
void SetCurrentThreadName(const std::string& name);

}  // namespace crossfree::rpc
