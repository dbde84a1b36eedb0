// SPDX-License-Identifier: Apache-2.0
// Tracer: recording windows (CROSSFREE_DELAY_MS, CROSSFREE_DURATION_MS,
// CROSSFREE_TOGGLE_SIGNAL; `crossfree record --delay/--duration/
// --toggle-signal`). Outside a window the hooks forward at the cost of
// plain interposition (with sampling, a free still drops its object from
// the live set); when a window closes every thread's buffer is written,
// so the file is complete and valid while the program runs on.
//
// How a change happens: no tracer thread and no timer signal. A deadline
// (delay elapsed, duration elapsed) is noticed by the next allocation or
// free of any thread: while open, by the recorded events, which read the
// clock anyway; while closed, by every 64th hook call of a thread and,
// under `record`, by the first call of any thread after record moved the
// region's window nudge at the delay's end (recorder.h). The
// toggle signal's handler makes the change itself when the thread it
// interrupted is outside the tracer and already has a buffer; otherwise it
// leaves a request that the next hook call carries out. A program that
// makes no allocation at all keeps its window as it is until it does.
//
// The change itself (ChangeWindow) is serialised by a flag, never waited
// on: a thread that finds another one changing the window goes on.
#pragma once

#include <atomic>
#include <cstdint>

#include "format/trace_format.h"
#include "tracer/settings.h"

namespace crossfree::tracer {

// Start-up (InitRecorder, single-threaded): decides whether recording
// starts open and installs the toggle handler. process_start_ns is the
// tracer's start, the delay's origin unless settings.start_ns is set.
void InitWindow(const Settings& settings, uint64_t process_start_ns);

// Attach mode (attach.h): a session's trace is windowed and opens with
// the session (cause kAttach); no delay, duration or toggle signal.
void BeginAttachedWindow();
void EndAttachedWindow();

// Whether recording is open now.
bool WindowOpen();

// Whether this process's trace gets header flag kHeaderFlagWindowed (it
// starts closed, or its windows are in records): at start-up, or in a
// fork child, which inherits the parent's window as it is.
bool TraceStartsWindowed(bool fork_child);
// A fork child whose trace is windowed and whose inherited window is open
// starts its trace with an open record of this cause.
bool ForkChildOpenRecord(format::WindowCause* cause);
void WindowAtForkChild();

// Closed window (g_recording 0, phase active): called by ShouldRecordSlow,
// which hooks reach on one call in kOffPollCalls of their thread, or on a
// window nudge (recorder.h); checks the deadline, carries out a pending
// toggle request and takes the nudge.
void PollClosedWindow();

// The channel (channel.cc) points the nudge at its region's word when it
// attaches one (start-up, a fork child: single-threaded) and back at the
// tracer's own zero (null) when it lets it go; the value there now counts
// as taken. IgnoreWindowNudge takes it when there is no window to open
// (the tracer stopped).
void WatchWindowNudge(const std::atomic<uint32_t>* word);
void IgnoreWindowNudge();

// Open window: the next deadline (UINT64_MAX when none). The recorder
// compares each recorded event's timestamp with it.
extern uint64_t g_window_deadline_ns;
void WindowDeadlinePassed(uint64_t now);

}  // namespace crossfree::tracer
