// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`: the state an injected thread returns to its own
// code with (inject_trampoline.h, step 5): an rt_sigreturn frame holding
// its registers, and its vector and x87 state in the kernel's
// signal-frame layout. Built by attach_inject.cc while the thread is
// stopped; written below its stack pointer with the trampoline's data.
//
// Single-threaded use from the record command. The first call of
// ReadReturnVectorState sends this process one SIGURG (its handler set
// and put back around it) to learn the kernel's signal-frame bytes.
#pragma once
#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>
#include <vector>

#include "analyzer/record/inject_trampoline.h"

namespace crossfree::analyzer::record {

// Stopped thread tid's vector and x87 state, as rt_sigreturn reads it from
// a signal frame, into *fpstate. False when ptrace could not read it
// (errno as ptrace left it).
bool ReadReturnVectorState(pid_t tid, std::vector<uint8_t>* fpstate);

// The frame that brings the thread back with registers `back`, its
// vector state (ReadReturnVectorState's bytes) at fp_addr in the target.
RtSigframe ReturnFrame(const user_regs_struct& back, uint64_t fp_addr);

}  // namespace crossfree::analyzer::record
