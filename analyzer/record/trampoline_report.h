// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`: waiting for the injected trampoline's report
// (inject_trampoline.h, step 4) on record's control socket. The report
// comes on its own connection, the first to reach the socket from the
// target; the tracer's own connection comes after and is left queued.
//
// Single-threaded use from the record command (attach_inject.cc).
#pragma once
#include <sys/types.h>

#include <cstdint>

#include "analyzer/record/inject_trampoline.h"

namespace crossfree::analyzer::record {

// How waiting for the report ended.
struct ReportWait {
  TrampolineBlock report;  // its report fields, when have_report
  bool have_report = false;
  bool accepted = false;  // a connection from the target was accepted
  bool exited = false;    // the target exited (its pidfd), or hung up
};

// Accepts connections on listener from process pid (its peer credentials;
// others are closed) and reads a report from each until one carries
// nonce, pid exits (pidfd readable; pidfd may be -1) or MonotonicMs()
// passes deadline. A report whose nonce is not this injection's comes
// from an older one whose record died before its thread ran (a stopped
// process): read and dropped. on_first_accept runs once, right after the
// first connection from pid is accepted (record's kill-point tests).
ReportWait AwaitTrampolineReport(pid_t pid, int listener, int pidfd, double deadline,
                                 uint64_t nonce, void (*on_first_accept)());

}  // namespace crossfree::analyzer::record
