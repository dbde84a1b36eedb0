// SPDX-License-Identifier: Apache-2.0
// Tracer, attach mode: the recording session that `crossfree record -p
// PID` opens in a running process (docs/design.md, "Attaching to a running
// process"). attach.cc owns the entry point and the control thread;
// lifecycle.cc starts and ends the recording itself (it owns the trace
// file and start-up).
//
// A process is in one of two modes for its lifetime: preloaded (the
// tracer was in the initial link map ahead of libc: interposition by
// symbol order, recording from start-up) or attach (dlopen'ed later: the
// constructor does nothing, and recording runs only between
// StartAttachedRecording and StopAttachedRecording, any number of times).
//
// Threads: Start/Stop are called by the control thread only, one session
// at a time; the hooks run concurrently in every other thread.
#pragma once

#include <cstdint>

#include "tracer/settings.h"

namespace crossfree::tracer {

// Set by the constructor when the tracer was loaded after libc (dlopen):
// it then interposes nothing by symbol order and starts nothing itself.
bool LoadedForAttach();
void SetLoadedForAttach();

// Opens a trace at settings.output_template (a plain path, created
// exclusively), windowed, with an open window record; every thread
// records from now on (once the GOT entries reach the hooks). False,
// with a one-line reason in *why, when no recording could start.
bool StartAttachedRecording(const Settings& settings, const char** why);

struct AttachedTotals {
  uint64_t events = 0;
  uint32_t threads = 0;  // that wrote an event
  uint32_t threads_skipped = 0;
  bool write_failed = false;
};

// Closes the window (record of cause kAttach), writes every thread's
// buffer and the totals, closes the file. Hooks still running forward.
// Idempotent: false when no session was recording (the process exited,
// exec'd, or the trace failed meanwhile); totals->write_failed is set
// either way (a write failed: the trace is incomplete).
bool StopAttachedRecording(AttachedTotals* totals);

// Fork child of an attached process (single-threaded, from the atfork
// handler): closes the child's copy of the control socket and sends
// messages to stderr again. The child is not traced.
void AttachAtForkChild();

// Whether the current session still records (false after an exec, an
// exit flush or a write error ended it).
bool AttachedRecordingActive();

}  // namespace crossfree::tracer
