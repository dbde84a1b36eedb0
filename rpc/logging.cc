// SPDX-License-Identifier: Apache-2.0
// Logging implementation: a mutex serializes writers and the test sink.
#include "rpc/logging.h"

#include <pthread.h>

#include <cstdio>
#include <mutex>

namespace crossfree::rpc {

namespace {
std::mutex g_log_mu;
std::function<void(std::string_view)> g_sink;
LogLevel g_min_level = LogLevel::kWarning;
}  // namespace

void Log(LogLevel level, std::string_view message) {
  char name[32] = "?";
  pthread_getname_np(pthread_self(), name, sizeof(name));
  const char tag = level == LogLevel::kInfo ? 'I' : level == LogLevel::kWarning ? 'W' : 'E';
  std::string line;
  line.reserve(message.size() + 32);
  line += '[';
  line += tag;
  line += ' ';
  line += name;
  line += "] ";
  line += message;
  std::lock_guard<std::mutex> l(g_log_mu);
  if (g_sink) g_sink(line);
  if (level >= g_min_level) fprintf(stderr, "%s\n", line.c_str());
}

void SetMinLogLevel(LogLevel level) {
  std::lock_guard<std::mutex> l(g_log_mu);
  g_min_level = level;
}

void SetLogSinkForTests(std::function<void(std::string_view)> sink) {
  std::lock_guard<std::mutex> l(g_log_mu);
  g_sink = std::move(sink);
}

bool RateLimitedLog::ShouldLog(int* suppressed) {
  auto now = std::chrono::steady_clock::now();
  if (logged_once_ && now - last_ < interval_) {
    ++suppressed_;
    return false;
  }
  logged_once_ = true;
  last_ = now;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

void SetCurrentThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace crossfree::rpc
