// SPDX-License-Identifier: Apache-2.0
// Tracer: which signals may switch recording on and off
// (CROSSFREE_TOGGLE_SIGNAL, `crossfree record --toggle-signal`). Shared by
// the tracer, which refuses any other, and by `record`, which says so
// before it starts the command. Header only; any thread.
#pragma once

#include <signal.h>

namespace crossfree::tracer {

// SIGKILL and SIGSTOP cannot be caught; SIGSEGV, SIGBUS, SIGFPE and SIGILL
// belong to the program's crash handling.
constexpr bool UsableToggleSignal(long sig) {
  return sig >= 1 && sig < 65 && sig != SIGKILL && sig != SIGSTOP && sig != SIGSEGV &&
         sig != SIGBUS && sig != SIGFPE && sig != SIGILL;
}

}  // namespace crossfree::tracer
