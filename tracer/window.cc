// SPDX-License-Identifier: Apache-2.0
// Tracer: recording windows (see window.h).
#include "tracer/window.h"

#include <errno.h>
#include <signal.h>

#include <algorithm>
#include <atomic>

#include "tracer/clock.h"
#include "tracer/recorder.h"
#include "tracer/recorder_internal.h"
#include "tracer/sys.h"

namespace crossfree::tracer {

uint64_t g_window_deadline_ns = UINT64_MAX;

namespace {
const std::atomic<uint32_t> kNoNudges{0};
}  // namespace
const std::atomic<uint32_t>* g_window_nudge = &kNoNudges;
std::atomic<uint32_t> g_window_nudge_taken{0};

namespace {

struct WindowGlobals {
  bool windowed = false;          // the trace starts closed
  std::atomic<int> open{1};
  std::atomic<int> changing{0};   // ChangeWindow in progress (a flag, not a lock)
  std::atomic<uint32_t> toggles{0};  // toggle signals not yet carried out
  uint64_t open_at_ns = UINT64_MAX;  // closed: when the delay ends
  uint64_t duration_ns = 0;
  int toggle_signal = 0;
  format::WindowCause open_cause = format::WindowCause::kDelay;
  bool changed = false;  // the window opened or closed at least once
};
WindowGlobals w;

// Owners in the middle of a record when a window closes finish it within
// microseconds; a thread stopped by a debugger must not stall the program.
constexpr uint64_t kCloseWaitNs = 50'000'000;

void SetRecording(int value) { __atomic_store_n(&g_recording, value, __ATOMIC_RELEASE); }

// Opens or closes the window. Guard held; caller holds w.changing.
void ChangeWindow(bool open, format::WindowCause cause) {
  if (internal::g.phase.load(std::memory_order_acquire) != internal::kActive) return;
  const uint64_t now = NowNs();
  w.changed = true;
  if (open) {
    // The record first, then recording: every event is later than it.
    internal::WriteOwnWindowRecord(format::WindowState::kOpen, cause, now);
    // A delay's window lasts from the delay's end, however late a hook
    // noticed it (a closed window is polled on every kOffPollCalls-th call
    // of a thread: a program that allocates rarely notices late), so that
    // every process of the command records the same stretch of time; a
    // toggle's from the signal, which is carried out when it arrives.
    const uint64_t from = cause == format::WindowCause::kDelay ? w.open_at_ns : now;
    w.open_cause = cause;
    w.open_at_ns = UINT64_MAX;
    g_window_deadline_ns = w.duration_ns != 0 ? from + w.duration_ns : UINT64_MAX;
    w.open.store(1, std::memory_order_release);
    SetRecording(1);
  } else {
    // A duration's window ends at its deadline, however late a hook
    // noticed it (FinishEvent records nothing from the deadline on), so
    // that, as with the delay, every process of the command records the
    // same stretch of time.
    const uint64_t at =
        cause == format::WindowCause::kDuration ? std::min(now, g_window_deadline_ns) : now;
    SetRecording(0);
    w.open.store(0, std::memory_order_release);
    g_window_deadline_ns = UINT64_MAX;
    internal::WriteOwnWindowRecord(format::WindowState::kClosed, cause, at);
    internal::FlushAllStates(kCloseWaitNs);
  }
}

// Carries out what is due: toggle requests, the delay's end, the
// duration's end. Returns without waiting if another thread is at it.
void Settle(uint64_t now) {
  int expected = 0;
  if (!w.changing.compare_exchange_strong(expected, 1, std::memory_order_acquire)) return;
  GuardScope guard;
  int saved_errno = errno;
  // Toggles first: each one flips the window.
  uint32_t toggles = w.toggles.exchange(0, std::memory_order_acq_rel);
  for (uint32_t i = 0; i < toggles; ++i) {
    ChangeWindow(w.open.load(std::memory_order_relaxed) == 0, format::WindowCause::kSignal);
  }
  const bool open = w.open.load(std::memory_order_relaxed) != 0;
  if (!open && now >= w.open_at_ns) {
    if (w.duration_ns != 0 && now >= w.open_at_ns + w.duration_ns) {
      // The whole window passed before a hook looked: nothing of it can be
      // recorded any more, and opening now would record a stretch outside
      // it. Closed for good, as InitWindow leaves an image exec'd after
      // the window (a toggle signal still opens it).
      w.open_at_ns = UINT64_MAX;
    } else {
      ChangeWindow(true, format::WindowCause::kDelay);
    }
  } else if (open && now >= g_window_deadline_ns) {
    ChangeWindow(false, format::WindowCause::kDuration);
  }
  // Open with a request handled: back from 2 to 1.
  if (w.open.load(std::memory_order_relaxed) != 0 &&
      internal::g.phase.load(std::memory_order_acquire) == internal::kActive) {
    SetRecording(1);
  }
  errno = saved_errno;
  w.changing.store(0, std::memory_order_release);
  // A signal that arrived while we were changing (its handler found the
  // flag taken, and the SetRecording(1) above may have undone its 2):
  // make the next hook call take the slow path, which carries it out.
  if (w.toggles.load(std::memory_order_acquire) != 0) {
    int one = 1;
    __atomic_compare_exchange_n(&g_recording, &one, 2, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
  }
}

void OnToggleSignal(int) {
  int saved_errno = errno;
  w.toggles.fetch_add(1, std::memory_order_acq_rel);
  int one = 1;
  __atomic_compare_exchange_n(&g_recording, &one, 2, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  if (internal::ReadyForWindowChangeInHandler()) Settle(NowNs());
  errno = saved_errno;
}

}  // namespace

void InitWindow(const Settings& s, uint64_t process_start_ns) {
  w.duration_ns = s.duration_ns;
  w.toggle_signal = s.toggle_signal;
  const uint64_t origin = s.start_ns != 0 ? s.start_ns : process_start_ns;
  const uint64_t now = NowNs();
  const bool has_delay = s.delay_ns != 0;
  // Closed at start: a delay that has not elapsed, or a toggle signal
  // without a delay (the first signal opens the window).
  if (has_delay && now < origin + s.delay_ns) {
    w.windowed = true;
    w.open.store(0, std::memory_order_relaxed);
    w.open_at_ns = origin + s.delay_ns;
  } else if (!has_delay && s.toggle_signal != 0) {
    w.windowed = true;
    w.open.store(0, std::memory_order_relaxed);
  } else {
    // Open from the start (an exec'd image whose delay has already
    // elapsed is open, and keeps the command's duration), or, when that
    // duration is over too, closed for good.
    const uint64_t opened = has_delay ? origin + s.delay_ns : origin;
    if (s.duration_ns != 0 && now >= opened + s.duration_ns && s.toggle_signal == 0) {
      w.windowed = true;
      w.open.store(0, std::memory_order_relaxed);
    } else if (s.duration_ns != 0) {
      g_window_deadline_ns = opened + s.duration_ns;
    }
  }
  if (s.toggle_signal != 0) {
    struct sigaction sa = {};
    sa.sa_handler = OnToggleSignal;
    sigemptyset(&sa.sa_mask);
    // SA_RESTART: a read() or a futex wait the signal interrupts goes on
    // by itself (sleeps and some waits still return EINTR: signal(7)).
    sa.sa_flags = SA_RESTART;
    if (sigaction(s.toggle_signal, &sa, nullptr) != 0) {
      MessageLine().Add("cannot install the toggle signal handler: ").Add(ErrnoName(errno)).Print();
    }
  }
}

void BeginAttachedWindow() {
  w.windowed = true;
  w.changed = true;
  w.duration_ns = 0;
  w.toggle_signal = 0;
  w.open_at_ns = UINT64_MAX;
  w.open_cause = format::WindowCause::kAttach;
  g_window_deadline_ns = UINT64_MAX;
  w.toggles.store(0, std::memory_order_relaxed);
  w.open.store(1, std::memory_order_release);
}

void EndAttachedWindow() { w.open.store(0, std::memory_order_release); }

bool WindowOpen() { return w.open.load(std::memory_order_acquire) != 0; }

void PollClosedWindow() {
  // Reached on one call in kOffPollCalls of each thread, or on a nudge
  // from record (ShouldRecord).
  const uint32_t nudge = g_window_nudge->load(std::memory_order_acquire);
  if (w.toggles.load(std::memory_order_relaxed) != 0) Settle(NowNs());
  if (w.open.load(std::memory_order_acquire) != 0 || w.open_at_ns == UINT64_MAX) {
    g_window_nudge_taken.store(nudge, std::memory_order_relaxed);
    return;
  }
  const uint64_t now = NowNs();
  const uint64_t open_at = w.open_at_ns;
  if (now >= open_at) Settle(now);
  // record reads CLOCK_MONOTONIC, this clock the TSC calibrated against
  // it (clock.h): a nudge that comes before the delay's end by this clock
  // stays untaken, so that the next calls look at the clock again until
  // it ends (the clocks differ by the calibration error, ~1e-5 of the
  // time since start-up).
  if (now >= open_at) g_window_nudge_taken.store(nudge, std::memory_order_relaxed);
}

void WatchWindowNudge(const std::atomic<uint32_t>* word) {
  g_window_nudge = word != nullptr ? word : &kNoNudges;
  g_window_nudge_taken.store(g_window_nudge->load(std::memory_order_acquire),
                             std::memory_order_relaxed);
}

void IgnoreWindowNudge() {
  g_window_nudge_taken.store(g_window_nudge->load(std::memory_order_relaxed),
                             std::memory_order_relaxed);
}

void WindowDeadlinePassed(uint64_t now) { Settle(now); }

void WindowAtForkChild() {
  w.changing.store(0, std::memory_order_relaxed);  // the changer was another thread
  w.toggles.store(0, std::memory_order_relaxed);
}

bool TraceStartsWindowed(bool fork_child) {
  if (!fork_child) return w.windowed;
  return w.windowed || w.changed || w.open.load(std::memory_order_relaxed) == 0;
}

bool ForkChildOpenRecord(format::WindowCause* cause) {
  if (!TraceStartsWindowed(true) || w.open.load(std::memory_order_relaxed) == 0) return false;
  *cause = w.open_cause;
  return true;
}

}  // namespace crossfree::tracer
