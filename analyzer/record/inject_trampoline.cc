// SPDX-License-Identifier: Apache-2.0
// The trampoline's machine code (see inject_trampoline.h). It is data in
// this program (read-only, never run here): record copies its bytes into
// the target. Only relative jumps and rbx-relative loads, so it runs at
// any address.
#include "analyzer/record/inject_trampoline.h"

#include <cstddef>

namespace crossfree::analyzer::record {

static_assert(offsetof(TrampolineBlock, dlopen_fn) == 0);
static_assert(offsetof(TrampolineBlock, dlsym_fn) == 8);
static_assert(offsetof(TrampolineBlock, dlerror_fn) == 16);
static_assert(offsetof(TrampolineBlock, record_pid) == 24);
static_assert(offsetof(TrampolineBlock, dlopen_flags) == 32);
static_assert(offsetof(TrampolineBlock, path) == 40);
static_assert(offsetof(TrampolineBlock, entry_name) == 48);
static_assert(offsetof(TrampolineBlock, sockaddr) == 56);
static_assert(offsetof(TrampolineBlock, sockaddr_len) == 64);
static_assert(offsetof(TrampolineBlock, restore_nice) == 72);
static_assert(offsetof(TrampolineBlock, old_nice) == 80);
static_assert(offsetof(TrampolineBlock, frame) == 88);
static_assert(offsetof(TrampolineBlock, all_signals) == 96);
static_assert(offsetof(TrampolineBlock, report_nonce) == kTrampolineReportOffset);
static_assert(offsetof(TrampolineBlock, stage) == 112);
static_assert(offsetof(TrampolineBlock, handle) == 120);
static_assert(offsetof(TrampolineBlock, entry_rc) == 128);
static_assert(offsetof(TrampolineBlock, message) == 136);
static_assert(kTrampolineReportSize == 288);
static_assert(offsetof(KernelUcontext, uc_stack) == 16);
static_assert(offsetof(KernelUcontext, uc_mcontext) == 40);
static_assert(offsetof(KernelUcontext, uc_sigmask) == 296);
static_assert(sizeof(KernelUcontext) == 304);
static_assert(offsetof(RtSigframe, uc) == 8);

// System call numbers (x86-64): rt_sigprocmask 14, rt_sigreturn 15,
// close 3, socket 41, connect 42, sendto 44, sigaltstack 131,
// setpriority 141. Signals stay blocked from the first instruction after
// the mask is set until rt_sigreturn, so no handler of the program runs
// on this code's stack and none returns into it after record has seen
// the report.
asm(R"(
  .pushsection .rodata.crossfree_trampoline, "a"
  .balign 16
crossfree_trampoline_start:
  .intel_syntax noprefix
  cld
  mov eax, 14
  xor edi, edi
  lea rsi, [rbx + 96]
  mov rdx, [rbx + 88]
  add rdx, 296
  mov r10d, 8
  syscall
  mov eax, 131
  xor edi, edi
  mov rsi, [rbx + 88]
  add rsi, 16
  syscall
  mov eax, 41
  mov edi, 1
  mov esi, 0x80001
  xor edx, edx
  syscall
  test rax, rax
  js 8f
  mov r12, rax
  mov eax, 42
  mov rdi, r12
  mov rsi, [rbx + 56]
  mov rdx, [rbx + 64]
  syscall
  test rax, rax
  jnz 7f
  mov qword ptr [rbx + 112], 1
  mov rdi, [rbx + 40]
  mov rsi, [rbx + 32]
  call qword ptr [rbx + 0]
  mov [rbx + 120], rax
  test rax, rax
  jnz 2f
  mov qword ptr [rbx + 112], 2
  call qword ptr [rbx + 16]
  test rax, rax
  jz 6f
  lea rdi, [rbx + 136]
  mov ecx, 255
1:
  mov dl, [rax]
  test dl, dl
  jz 6f
  mov [rdi], dl
  inc rax
  inc rdi
  dec ecx
  jnz 1b
  jmp 6f
2:
  mov qword ptr [rbx + 112], 3
  mov rdi, rax
  mov rsi, [rbx + 48]
  call qword ptr [rbx + 8]
  test rax, rax
  jz 6f
  mov qword ptr [rbx + 112], 4
  mov rdi, [rbx + 24]
  call rax
  mov [rbx + 128], rax
  mov qword ptr [rbx + 112], 5
6:
  mov eax, 44
  mov rdi, r12
  lea rsi, [rbx + 104]
  mov edx, 288
  mov r10d, 0x4000
  xor r8d, r8d
  xor r9d, r9d
  syscall
7:
  mov eax, 3
  mov rdi, r12
  syscall
8:
  cmp qword ptr [rbx + 72], 0
  je 9f
  mov eax, 141
  xor edi, edi
  xor esi, esi
  mov rdx, [rbx + 80]
  syscall
9:
  mov rsp, [rbx + 88]
  mov eax, 15
  syscall
  ud2
  .att_syntax prefix
crossfree_trampoline_end:
  .popsection
)");

extern "C" const char crossfree_trampoline_start[];
extern "C" const char crossfree_trampoline_end[];

std::string TrampolineCode() {
  return std::string(crossfree_trampoline_start,
                     static_cast<size_t>(crossfree_trampoline_end - crossfree_trampoline_start));
}

}  // namespace crossfree::analyzer::record
