// SPDX-License-Identifier: Apache-2.0
// Why `crossfree record -p` may not ptrace a process, in one line that
// names the cause and says what to do (docs/guide/tracer.md, "Attaching
// to a running process"). GatherPtraceFacts reads the facts from /proc;
// the explanation is a pure function of them, so that every cause can be
// tested on any machine, including the kernel.yama.ptrace_scope ones on a
// kernel without Yama. Any thread.
#pragma once

#include <sys/types.h>

#include <string>

namespace crossfree::analyzer::record {

struct PtraceFacts {
  pid_t pid = 0;                 // the target
  long target_uid = -1;          // its effective uid; -1 unknown, -2 real != effective (setuid)
  long own_euid = 0;             // crossfree's
  bool cap_sys_ptrace = false;   // crossfree's effective CAP_SYS_PTRACE
  int yama_scope = -1;           // kernel.yama.ptrace_scope; -1: no Yama
  long tracer_pid = 0;           // the target's TracerPid
  std::string tracer_comm;       // and that tracer's name
  long own_pid = 0;
  bool in_container = false;     // crossfree runs in a container
  int seize_errno = 0;           // PTRACE_SEIZE's errno; 0 before trying
};

// What /proc says about ptrace permissions on pid, with PTRACE_SEIZE's
// errno (0 before trying).
PtraceFacts GatherPtraceFacts(pid_t pid, int seize_errno);

// "" when nothing in the facts forbids attaching (and no error yet).
std::string ExplainPtraceRefusal(const PtraceFacts& f);

}  // namespace crossfree::analyzer::record
