// SPDX-License-Identifier: Apache-2.0
// `crossfree record --delay`: the moment the delay ends (see window_alarm.h).
#include "analyzer/record/window_alarm.h"

#include <signal.h>

#include <chrono>
#include <utility>

namespace crossfree::analyzer::record {

WindowAlarm::WindowAlarm(uint64_t at_ns, std::function<void()> fire) {
  // libstdc++'s steady_clock is CLOCK_MONOTONIC, the clock at_ns counts.
  const std::chrono::steady_clock::time_point at{std::chrono::nanoseconds(at_ns)};
  thread_ = std::thread([this, at, fire = std::move(fire)] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    std::unique_lock<std::mutex> lock(mu_);
    // One wait, up to the deadline or the destructor; a spurious wake-up
    // waits again for what is left.
    if (wake_.wait_until(lock, at, [this] { return stop_; })) return;
    lock.unlock();
    fire();
  });
}

WindowAlarm::~WindowAlarm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace crossfree::analyzer::record
