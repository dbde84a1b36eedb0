// SPDX-License-Identifier: Apache-2.0
// Tracer: OwnAllocationScope (own_allocation.h). Raw system calls only: no
// allocation, no lock.
#include "tracer/own_allocation.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace crossfree::tracer {

thread_local constinit OwnAllocationBuffer tls_own_allocation
    __attribute__((tls_model("initial-exec"))) = {nullptr, nullptr};

namespace {
// The open scope's buffer when its owner gave none: empty, but not null.
unsigned char g_no_buffer[16];
bool g_disabled = false;
}  // namespace

void DisableOwnAllocationScopes() { __atomic_store_n(&g_disabled, true, __ATOMIC_RELEASE); }

OwnAllocationScope::OwnAllocationScope(unsigned char* buffer, size_t size) {
  if (__atomic_load_n(&g_disabled, __ATOMIC_ACQUIRE)) return;
  if (InOwnAllocationScope()) return;  // the outer scope serves this one
  // Raw rt_sigprocmask: the kernel's 8-byte set, no libc wrapper state.
  const uint64_t all[2] = {~uint64_t{0}, 0};
  if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, all, saved_mask_, 8) != 0) return;
  if (buffer == nullptr) {
    buffer = g_no_buffer;
    size = 0;
  }
  tls_own_allocation = {buffer, buffer + size};
  opened_ = true;
}

OwnAllocationScope::~OwnAllocationScope() {
  if (!opened_) return;
  tls_own_allocation = {nullptr, nullptr};
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, saved_mask_, nullptr, 8);
}

}  // namespace crossfree::tracer
