// SPDX-License-Identifier: Apache-2.0
// `crossfree record`'s lines on stderr. Record supervises a command and
// writes its traces: a reader of its stderr that went away (`record ...
// 2>&1 | grep -q X`) or a stderr that was closed must not end it half way.
// Record ignores SIGPIPE (the command gets its own disposition back before
// exec: IgnorePipeSignal), and a line that cannot be written is dropped,
// where fmt::print would throw.
//
// Threading: Say and WriteStderr from any thread; the others from record's
// main thread at its start, and RestorePipeSignal in the command's child.
#pragma once

#include <string>
#include <utility>

#include <fmt/core.h>

namespace crossfree::analyzer::record {

// Writes text to file descriptor 2, retrying after EINTR and partial
// writes; gives up silently at the first other error.
void WriteStderr(const std::string& text);

template <typename... T>
void Say(fmt::format_string<T...> format, T&&... args) {
  WriteStderr(fmt::format(format, std::forward<T>(args)...));
}

// At record's start, for the whole run: SIGPIPE ignored in record, its
// previous disposition kept for the command (RestorePipeSignal, in the
// child before exec), so that the command behaves as it would untraced.
void IgnorePipeSignal();
void RestorePipeSignal();

// At record's start: opens /dev/null, close-on-exec, on each of 0, 1 and 2
// that is closed. Record's own descriptors (the hand-off region, sockets,
// trace files) then never take those numbers, which the command inherits
// (a closed stdout became the hand-off region, and the command's output
// overwrote it), and the command still finds them closed.
void ReserveStandardDescriptors();

}  // namespace crossfree::analyzer::record
