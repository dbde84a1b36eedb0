// SPDX-License-Identifier: Apache-2.0
// Which signals may switch recording on and off (CROSSFREE_TOGGLE_SIGNAL,
// `crossfree record --toggle-signal`): part of the contract between the
// tracer, which refuses any other, and `record`, which says so before it
// starts the command; so it lives here, in the ground both stand on.
// Header only; any thread.
#pragma once

#include <signal.h>

namespace crossfree {

// SIGKILL and SIGSTOP cannot be caught; SIGSEGV, SIGBUS, SIGFPE and SIGILL
// belong to the program's crash handling.
constexpr bool UsableToggleSignal(long sig) {
  return sig >= 1 && sig < 65 && sig != SIGKILL && sig != SIGSTOP && sig != SIGSEGV &&
         sig != SIGBUS && sig != SIGFPE && sig != SIGILL;
}

}  // namespace crossfree
