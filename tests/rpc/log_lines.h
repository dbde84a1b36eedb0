// SPDX-License-Identifier: Apache-2.0
// Test helper for tests/rpc: the rpc/ log lines of a test, captured through
// SetLogSinkForTests, for tests that wait on or count what the code logs.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "rpc/logging.h"

namespace crossfree::rpc::testing {

// Captures every rpc/ log line while it lives (the sink is process-wide;
// ctest runs each test case in a process of its own, so one at a time).
// Any thread may log; any thread may read.
class LogLines {
 public:
  LogLines() {
    SetLogSinkForTests([this](std::string_view line) {
      std::lock_guard<std::mutex> l(mu_);
      lines_ += std::string(line) + "\n";
    });
  }
  ~LogLines() { SetLogSinkForTests(nullptr); }
  LogLines(const LogLines&) = delete;
  LogLines& operator=(const LogLines&) = delete;

  std::string All() {
    std::lock_guard<std::mutex> l(mu_);
    return lines_;
  }
  bool Has(const std::string& text) { return All().find(text) != std::string::npos; }
  // Lines that contain `text`.
  int Count(const std::string& text) {
    const std::string all = All();
    int n = 0;
    size_t begin = 0;
    for (size_t end = all.find('\n'); end != std::string::npos; end = all.find('\n', begin)) {
      if (std::string_view(all).substr(begin, end - begin).find(text) != std::string_view::npos) ++n;
      begin = end + 1;
    }
    return n;
  }

 private:
  std::mutex mu_;
  std::string lines_;
};

}  // namespace crossfree::rpc::testing
