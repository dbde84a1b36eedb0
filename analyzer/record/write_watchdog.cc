// SPDX-License-Identifier: Apache-2.0
#include "analyzer/record/write_watchdog.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "analyzer/record/exit_codes.h"

namespace crossfree::analyzer::record {
namespace {

std::atomic<uint64_t> g_bytes_written{0};
std::atomic<int> g_writes_under_way{0};

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The last words, without stdio (a thread stuck in write may hold no stdio
// lock, but nothing here should depend on that) and without blocking on a
// stderr nobody reads: the message is shorter than PIPE_BUF, so a pipe
// that polls writable takes it whole.
void SayAndExit(const char* step, uint64_t stall_ns, uint64_t written) {
  char message[512];
  const int n = std::snprintf(
      message, sizeof message,
      "crossfree record: %s: the trace file took no bytes for %llu s (a write that does not "
      "return: a hung file system?); ending now: what record still held is lost, the %llu "
      "bytes written are readable up to their last whole chunk; exit %d\n",
      step, static_cast<unsigned long long>(stall_ns / 1'000'000'000u),
      static_cast<unsigned long long>(written), kExitEventsLost);
  pollfd p = {STDERR_FILENO, POLLOUT, 0};
  if (n > 0 && poll(&p, 1, 500) == 1 && (p.revents & POLLOUT) != 0) {
    ssize_t ignored = write(STDERR_FILENO, message, static_cast<size_t>(n));
    (void)ignored;
  }
  _exit(kExitEventsLost);
}

}  // namespace

void NoteWriteBegins() { g_writes_under_way.fetch_add(1, std::memory_order_relaxed); }

void NoteWriteEnds(uint64_t n) {
  g_bytes_written.fetch_add(n, std::memory_order_relaxed);
  g_writes_under_way.fetch_sub(1, std::memory_order_relaxed);
}

WriteWatchdog::WriteWatchdog(const char* step, uint64_t stall_ns)
    : step_(step), stall_ns_(stall_ns), thread_([this] { Watch(); }) {}

WriteWatchdog::~WriteWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void WriteWatchdog::Watch() {
  uint64_t seen = g_bytes_written.load(std::memory_order_relaxed);
  uint64_t since = MonotonicNs();
  std::unique_lock<std::mutex> lock(mu_);
  // Checks ten times per bound: progress restarts the clock, so a slow
  // disk that keeps writing is never cut off, only one that stopped.
  const auto tick = std::chrono::nanoseconds(stall_ns_ / 10);
  while (!cv_.wait_for(lock, tick, [this] { return done_; })) {
    const uint64_t now_written = g_bytes_written.load(std::memory_order_relaxed);
    const uint64_t now = MonotonicNs();
    // No write under way (compressing, or nothing left): no stall, and
    // the clock restarts.
    if (now_written != seen || g_writes_under_way.load(std::memory_order_relaxed) == 0) {
      seen = now_written;
      since = now;
    } else if (now - since >= stall_ns_) {
      SayAndExit(step_, stall_ns_, now_written);
    }
  }
}

void StallIfTesting() {
  static const uint64_t limit = [] {
    const char* v = std::getenv("CROSSFREE_RECORD_TEST_STALL_WRITES");
    return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : UINT64_MAX;
  }();
  if (g_bytes_written.load(std::memory_order_relaxed) < limit) return;
  for (;;) pause();  // a hung mount: the write never returns
}

}  // namespace crossfree::analyzer::record
