// SPDX-License-Identifier: Apache-2.0
// The control channel between `crossfree record -p PID` and the tracer it
// loads into PID (docs/design.md, "Attaching to a running process").
//
// record binds the abstract unix socket AttachSocketName(PID) (which is
// also the lock that refuses a second record on the same process), makes
// one thread of PID call crossfree_attach(record's pid), which connects
// to it, checks the peer is that pid (SO_PEERCRED) and starts the
// tracer's control thread; then:
//   record -> tracer   one AttachRequest
//   tracer -> record   one line: "ok <text>\n" (recording) or "error <text>\n"
//   record -> tracer   one byte kDetachByte when the window ends
//   tracer -> record   one line "detached <text>\n" once the trace is written,
//                      or "ended <text>\n" when the recording ended by itself
//                      (exit, exec, a write error): the tracer then keeps
//                      the socket open (up to 10 s) so that it closes with
//                      the process image, and record tells exit from exec
// End of file on either side ends the session: the tracer unhooks and
// writes what it has when record disappears (killed, crashed); record
// reports the target gone when the tracer's end closes (exit, exec).
//
// Plain data, no code beyond the name helper: included by the tracer and
// by the CLI.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/decimal.h"

namespace crossfree::attach {

inline constexpr uint32_t kRequestMagic = 0x43464154;  // "CFAT"
inline constexpr uint32_t kRequestVersion = 2;
inline constexpr char kDetachByte = 'D';
// The exported entry point the injector calls (extern "C").
inline constexpr char kEntrySymbol[] = "crossfree_attach";

struct AttachRequest {
  uint32_t magic = kRequestMagic;
  uint32_t version = kRequestVersion;
  char output[4096] = {};  // absolute trace path, created exclusively
  int32_t unwind = -1;     // -1: hybrid (default), else tracer::UnwindMode
  int32_t depth = 0;       // 0: default
  int32_t stacks = 1;
  uint32_t sample = 1;     // 1: every allocation
  uint32_t flush_ms = 1000;
  // The control thread is created by the thread record made load the
  // tracer, and inherits the priority record raised that thread to for
  // the loading (root: nice -20). When set, the control thread takes
  // control_nice (the nice value that thread had before) as soon as it
  // reads this request, so that the session's work competes with the
  // program's threads as an ordinary thread of the program does.
  int32_t set_control_nice = 0;
  int32_t control_nice = 0;
};

// Ends the text of a "detached" or "ended" reply when the tracer could not
// write the whole trace (a write failed): record then says the trace is
// incomplete and exits 3, as after events dropped under a command.
inline constexpr char kIncompleteNote[] = "the trace could not be written completely";

// crossfree_attach's return value: one of these in the low byte, errno
// (when one applies) in the next ones.
enum AttachResult : int {
  kAttachStarted = 0,
  kAttachPreloaded = 1,   // the process runs with the tracer preloaded
  kAttachBusy = 2,        // a session is still active (or ending)
  kAttachNoChannel = 3,   // socket/connect failed (errno)
  kAttachWrongPeer = 4,   // the socket's peer is not the caller's record
  kAttachNoThread = 5,    // pthread_create failed (errno)
};

// Abstract socket name (without its leading NUL) for target pid. Returns
// its length.
// its length (0 when cap is too small). No libc: the tracer calls it.
inline size_t AttachSocketName(uint32_t pid, char* out, size_t cap) {
  static constexpr char kPrefix[] = "crossfree-attach-";
  char digits[20];
  const size_t nd = format::FormatDecimal(pid, digits);
  const size_t n = sizeof(kPrefix) - 1 + nd;
  if (n + 1 > cap) return 0;
  for (size_t i = 0; i + 1 < sizeof(kPrefix); ++i) out[i] = kPrefix[i];
  for (size_t i = 0; i < nd; ++i) out[sizeof(kPrefix) - 1 + i] = digits[i];
  out[n] = '\0';
  return n;
}

}  // namespace crossfree::attach
