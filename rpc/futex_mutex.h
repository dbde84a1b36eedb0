// SPDX-License-Identifier: Apache-2.0
// FutexMutex: a non-recursive mutex on one futex word, for the locks taken on
// every call of the fast path (Connection::mu_, Proxy::conn_mu_).
// Why: those locks are almost never contended, and an uncontended
// pthread_mutex_lock/unlock pair still does mutex type dispatch and owner
// and counter bookkeeping; here it is one compare-and-swap and one
// exchange. Contended, a waiter sleeps in the kernel (FUTEX_WAIT),
// as glibc's default mutex does: no spinning.
// The three states (0 free, 1 held, 2 held and maybe waited on) are the
// classic futex mutex: unlock issues FUTEX_WAKE only when someone may sleep.
// Threads: any; a BasicLockable for std::lock_guard / std::unique_lock.
// Memory order: lock acquires and unlock releases the word, so the critical
// sections are ordered as with std::mutex (ThreadSanitizer sees the same
// edges through the atomics).
#pragma once

#include <atomic>
#include <cstdint>

#include "rpc/futex.h"

namespace crossfree::rpc {

class FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  void lock() {
    uint32_t c = kFree;
    if (word_.compare_exchange_strong(c, kHeld, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
      return;
    }
    LockContended(c);
  }

  bool try_lock() {
    uint32_t c = kFree;
    return word_.compare_exchange_strong(c, kHeld, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }

  void unlock() {
    if (word_.exchange(kFree, std::memory_order_release) == kWaited) FutexWake(&word_, 1);
  }

 private:
  static constexpr uint32_t kFree = 0;
  static constexpr uint32_t kHeld = 1;
  static constexpr uint32_t kWaited = 2;

  // `c`: the value the fast path saw (not free). Marks the word waited on
  // and sleeps until an unlock frees it; a thread that gets it this way
  // leaves it marked, so its own unlock wakes the next sleeper (at worst one
  // spurious FUTEX_WAKE).
  void LockContended(uint32_t c) {
    if (c != kWaited) c = word_.exchange(kWaited, std::memory_order_acquire);
    while (c != kFree) {
      FutexWait(&word_, kWaited);
      c = word_.exchange(kWaited, std::memory_order_acquire);
    }
  }

  std::atomic<uint32_t> word_{kFree};
};

}  // namespace crossfree::rpc
