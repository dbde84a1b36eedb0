// SPDX-License-Identifier: Apache-2.0
// Futex wait/wake on a std::atomic<uint32_t>: the one-syscall-each-side
// hand-off of the sync caller's wake-up (Proxy) and of the worker's hand-off
// slot (ServiceQueue), where a mutex plus condition variable costs a third
// futex call per hand-off (glibc re-locks the mutex as contended after a
// condition wait, so its unlock always issues FUTEX_WAKE).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace crossfree::rpc {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit atomics");

// Sleeps while *word == expected, at most `relative` (nullptr: no limit).
// Returns early, spuriously or not; callers re-check their condition.
inline void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
                      const timespec* relative = nullptr) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, relative,
          nullptr, 0);
}

// Wakes up to `n` threads sleeping on `word`. Harmless on a word nobody
// waits on, and on memory that is still mapped but no longer used as this
// word (a thread sleeping on a reused word sees a spurious wake-up).
inline void FutexWake(std::atomic<uint32_t>* word, int n) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr,
          0);
}

}  // namespace crossfree::rpc
