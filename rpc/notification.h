// SPDX-License-Identifier: Apache-2.0
// Notification: a one-shot flag on a futex, for a thread that waits for
// exactly one event from another (the sync caller's wake-up).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

#include "rpc/futex.h"

namespace crossfree::rpc {

// One thread Notify()s, once; one thread waits. The notifier wakes the
// waiter exactly once (one FUTEX_WAKE, and none at all when the waiter is
// not asleep yet), and the waiter, once woken, does not block again on a
// mutex the notifier still holds. Usually lives on the waiter's stack:
// Notify's last touch is the FUTEX_WAKE on its address, which is harmless
// even if the waiter has returned meanwhile (the word is still mapped stack
// memory; a stray wake-up of a later futex there is spurious, and every
// futex waiter tolerates those).
// Threads: Notify from any thread; Wait/WaitUntil from one thread.
class Notification {
 public:
  void Notify() {
    if (state_.exchange(kDone, std::memory_order_acq_rel) == kSleeping) {
      FutexWake(&state_, 1);
    }
  }
  bool notified() const { return state_.load(std::memory_order_acquire) == kDone; }
  void Wait() { WaitUntil(nullptr); }
  // False if `deadline` (steady clock; nullptr: none) passed first.
  bool WaitUntil(const std::chrono::steady_clock::time_point* deadline) {
    for (;;) {
      uint32_t s = state_.load(std::memory_order_acquire);
      if (s == kDone) return true;
      if (s == kIdle &&
          !state_.compare_exchange_strong(s, kSleeping, std::memory_order_acq_rel)) {
        continue;  // notified meanwhile
      }
      timespec ts;
      timespec* tsp = nullptr;
      if (deadline != nullptr) {
        auto left = *deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::nanoseconds(0)) return state_.load() == kDone;
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        tsp = &ts;
      }
      FutexWait(&state_, kSleeping, tsp);
    }
  }

 private:
  static constexpr uint32_t kIdle = 0, kSleeping = 1, kDone = 2;
  std::atomic<uint32_t> state_{kIdle};
};

}  // namespace crossfree::rpc
