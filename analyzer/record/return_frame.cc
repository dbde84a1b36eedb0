// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`: the rt_sigreturn frame and vector state an
// injected thread returns with (see return_frame.h).
#include "analyzer/record/return_frame.h"

#include <elf.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <ucontext.h>

#include <algorithm>
#include <cstring>

namespace crossfree::analyzer::record {
namespace {

// The software bytes the kernel writes into a signal frame's FXSAVE area
// (struct _fpx_sw_bytes), and which rt_sigreturn checks before it
// restores more than the legacy x87/SSE state.
constexpr uint32_t kFpXstateMagic1 = 0x46505853, kFpXstateMagic2 = 0x46505845;
struct FpSwBytes {
  uint32_t magic1;
  uint32_t extended_size;
  uint64_t xfeatures;
  uint32_t xstate_size;
  uint32_t padding[7];
};
static_assert(sizeof(FpSwBytes) == 48);

FpSwBytes g_own_sw;

void CopySwBytes(int, siginfo_t*, void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto* fp = reinterpret_cast<const uint8_t*>(uc->uc_mcontext.fpregs);
  if (fp != nullptr) std::memcpy(&g_own_sw, fp + 464, sizeof(g_own_sw));
}

// This process's own, from a signal it sends itself once (same kernel,
// same CPU features).
FpSwBytes OwnSignalFrameSwBytes() {
  static const FpSwBytes bytes = [] {
    struct sigaction sa = {}, old = {};
    sa.sa_sigaction = CopySwBytes;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    g_own_sw = {};
    if (sigaction(SIGURG, &sa, &old) == 0) {
      sigset_t urg, prev;
      sigemptyset(&urg);
      sigaddset(&urg, SIGURG);
      pthread_sigmask(SIG_UNBLOCK, &urg, &prev);
      raise(SIGURG);
      pthread_sigmask(SIG_SETMASK, &prev, nullptr);
      sigaction(SIGURG, &old, nullptr);
    }
    return g_own_sw;
  }();
  return bytes;
}

}  // namespace

// PTRACE_GETREGSET gives the XSAVE layout; rt_sigreturn also checks the
// software bytes and the end marker added here. Without XSAVE, the
// 512-byte FXSAVE area (rt_sigreturn then restores it alone).
bool ReadReturnVectorState(pid_t tid, std::vector<uint8_t>* fpstate) {
  fpstate->assign(64 * 1024, 0);
  iovec iov{fpstate->data(), fpstate->size()};
  constexpr size_t kSwBytes = 464;  // the FXSAVE area's software-reserved bytes
  const FpSwBytes own = OwnSignalFrameSwBytes();
  if (own.magic1 == kFpXstateMagic1 &&
      ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_X86_XSTATE), &iov) == 0 &&
      iov.iov_len >= 576) {
    // ptrace puts XCR0 where a signal frame has these bytes: the frame's
    // own, as the kernel writes them for this machine, go there instead
    // (the size no larger than what ptrace gave).
    FpSwBytes sw = own;
    sw.xstate_size = std::min<uint32_t>(sw.xstate_size, static_cast<uint32_t>(iov.iov_len));
    sw.extended_size = sw.xstate_size + 4;
    fpstate->resize(sw.xstate_size + 4);
    std::memcpy(fpstate->data() + kSwBytes, &sw, sizeof(sw));
    std::memcpy(fpstate->data() + sw.xstate_size, &kFpXstateMagic2, 4);
    return true;
  }
  fpstate->assign(512, 0);
  if (ptrace(PTRACE_GETFPREGS, tid, nullptr, fpstate->data()) != 0) return false;
  std::memset(fpstate->data() + kSwBytes, 0, sizeof(FpSwBytes));
  return true;
}

RtSigframe ReturnFrame(const user_regs_struct& back, uint64_t fp_addr) {
  RtSigframe frame{};
  frame.uc.uc_flags = 0x1 | 0x2 | 0x4;  // UC_FP_XSTATE, UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS
  sigcontext& sc = frame.uc.uc_mcontext;
  sc.r8 = back.r8;
  sc.r9 = back.r9;
  sc.r10 = back.r10;
  sc.r11 = back.r11;
  sc.r12 = back.r12;
  sc.r13 = back.r13;
  sc.r14 = back.r14;
  sc.r15 = back.r15;
  sc.rdi = back.rdi;
  sc.rsi = back.rsi;
  sc.rbp = back.rbp;
  sc.rbx = back.rbx;
  sc.rdx = back.rdx;
  sc.rax = back.rax;
  sc.rcx = back.rcx;
  sc.rsp = back.rsp;
  sc.rip = back.rip;
  sc.eflags = back.eflags;
  sc.cs = static_cast<uint16_t>(back.cs);
  sc.__pad0 = static_cast<uint16_t>(back.ss);
  sc.fpstate = reinterpret_cast<struct _fpstate*>(fp_addr);
  return frame;
}

}  // namespace crossfree::analyzer::record
