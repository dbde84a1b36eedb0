// SPDX-License-Identifier: Apache-2.0
// The code `crossfree record -p` makes one thread of the target run to
// load the tracer, and the data it reads (docs/design.md, "Attaching to a
// running process"). The thread runs it on its own, untraced: record
// stops the thread only to point it here and lets it go at once, so the
// target never depends on record being alive to get its thread back.
//
// What the code does, with the thread's registers: rbx = the block below,
// rsp = a 16-byte aligned stack under the block; everything else as it
// was when stopped:
//   1. blocks every signal, keeping the thread's mask in the frame's
//      uc_sigmask, and stores its sigaltstack in the frame's uc_stack;
//   2. connects a socket to record's control socket; if that fails
//      (record is gone) it goes straight to 5;
//   3. dlopen(path, flags); on failure copies dlerror()'s text into the
//      report; else dlsym(handle, entry) and calls entry(record_pid);
//   4. sends the report on the socket and closes it;
//   5. puts the thread's nice value back when record raised it, and
//      returns to the thread's own code with rt_sigreturn on the frame
//      record prepared: every general register, the flags, the vector and
//      x87 state, the signal mask and the alternate stack as they were
//      when stopped, the interrupted system call set to run again.
// The code is position independent and the same bytes for every attach:
// it is written once into the unused tail of an executable page of the
// target and reused after; a copy being run while it is written again
// sees the same bytes.
//
// Plain data and one pure function; used by the injector only.
#pragma once

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <string>

namespace crossfree::analyzer::record {

// The block the trampoline reads (record fills the first part) and
// writes (the report, which it also sends). Offsets are fixed: the code
// in inject_trampoline.cc uses them as numbers.
struct TrampolineBlock {
  uint64_t dlopen_fn = 0;     // 0
  uint64_t dlsym_fn = 0;      // 8
  uint64_t dlerror_fn = 0;    // 16
  uint64_t record_pid = 0;    // 24: the entry point's argument
  uint64_t dlopen_flags = 0;  // 32
  uint64_t path = 0;          // 40: char*, the library
  uint64_t entry_name = 0;    // 48: char*, the entry point's name
  uint64_t sockaddr = 0;      // 56: sockaddr_un*, record's control socket
  uint64_t sockaddr_len = 0;  // 64
  uint64_t restore_nice = 0;  // 72: 1 when record raised the thread's priority
  uint64_t old_nice = 0;      // 80: the nice value to put back
  uint64_t frame = 0;         // 88: the rt_sigreturn frame's ucontext
  uint64_t all_signals = ~uint64_t{0};  // 96: the mask blocked meanwhile
  // The report, bytes [104, 392): sent to record as they are.
  uint64_t report_nonce = 0;  // 104: record's tag for this injection
  uint64_t stage = 0;         // 112: how far it got (TrampolineStage)
  uint64_t handle = 0;        // 120: dlopen's result
  uint64_t entry_rc = 0;      // 128: the entry point's result
  char message[256] = {};     // 136: dlerror()'s text when dlopen failed
};

inline constexpr size_t kTrampolineReportOffset = 104;
inline constexpr size_t kTrampolineReportSize = sizeof(TrampolineBlock) - kTrampolineReportOffset;

enum TrampolineStage : uint64_t {
  kStageConnected = 1,  // record answered; dlopen is next
  kStageDlopenFailed = 2,
  kStageNoEntry = 3,    // dlsym found no entry point
  kStageEntryCalled = 4,
  kStageDone = 5,       // entry_rc holds the entry point's result
};

// The kernel's rt_sigreturn frame on x86-64 (not glibc's ucontext_t,
// whose signal mask is 128 bytes): rsp points at uc when rt_sigreturn
// runs.
struct KernelUcontext {
  uint64_t uc_flags;
  uint64_t uc_link;
  stack_t uc_stack;               // 16: filled by the trampoline
  struct sigcontext uc_mcontext;  // 40
  uint64_t uc_sigmask;            // 296: filled by the trampoline
};
struct RtSigframe {
  uint64_t pretcode;
  KernelUcontext uc;
  uint8_t info[128];  // siginfo, unused by rt_sigreturn but inside its bounds check
};

// The trampoline's bytes.
std::string TrampolineCode();

}  // namespace crossfree::analyzer::record
