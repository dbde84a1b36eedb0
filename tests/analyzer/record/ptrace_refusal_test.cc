// SPDX-License-Identifier: Apache-2.0
// The one-line explanations of a refused attach (analyzer/cli/
// ptrace_refusal.h), fed with the facts of each cause: the causes this
// machine cannot produce (Yama's scopes on a kernel without Yama, a
// seccomp or security-module refusal) are covered here; the user and
// capability ones also end to end in tests/tracer/attach_test.cc.
#include "analyzer/record/ptrace_refusal.h"

#include <cerrno>

#include <catch2/catch.hpp>

namespace crossfree::analyzer::record {
namespace {

PtraceFacts SameUser() {
  PtraceFacts f;
  f.pid = 4242;
  f.own_pid = 100;
  f.target_uid = 1000;
  f.own_euid = 1000;
  return f;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("nothing known forbids: no message until ptrace itself refuses") {
  PtraceFacts f = SameUser();
  CHECK(ExplainPtraceRefusal(f).empty());
  f.yama_scope = 0;
  CHECK(ExplainPtraceRefusal(f).empty());
  f.yama_scope = 1;
  f.cap_sys_ptrace = true;  // scope 1 with the capability: allowed
  CHECK(ExplainPtraceRefusal(f).empty());
  f = SameUser();
  f.tracer_pid = 100;  // traced by ourselves already
  CHECK(ExplainPtraceRefusal(f).empty());
}

TEST_CASE("another tracer names it and says to detach it") {
  PtraceFacts f = SameUser();
  f.tracer_pid = 777;
  f.tracer_comm = "gdb";
  const std::string m = ExplainPtraceRefusal(f);
  CHECK(Has(m, "already traced by process 777 (gdb)"));
  CHECK(Has(m, "detach that first"));
}

TEST_CASE("kernel.yama.ptrace_scope: each scope its cause and its remedy") {
  PtraceFacts f = SameUser();
  f.yama_scope = 3;
  CHECK(Has(ExplainPtraceRefusal(f), "kernel.yama.ptrace_scope=3"));
  CHECK(Has(ExplainPtraceRefusal(f), "crossfree record -- CMD"));
  f.cap_sys_ptrace = true;  // even root cannot, until reboot
  CHECK(Has(ExplainPtraceRefusal(f), "kernel.yama.ptrace_scope=3"));
  f = SameUser();
  f.yama_scope = 2;
  CHECK(Has(ExplainPtraceRefusal(f), "kernel.yama.ptrace_scope=2"));
  CHECK(Has(ExplainPtraceRefusal(f), "run crossfree as root (sudo)"));
  f.in_container = true;
  CHECK(Has(ExplainPtraceRefusal(f), "--cap-add=SYS_PTRACE"));
  f = SameUser();
  f.yama_scope = 1;
  const std::string m = ExplainPtraceRefusal(f);
  CHECK(Has(m, "kernel.yama.ptrace_scope=1"));
  CHECK(Has(m, "own descendants"));
  CHECK(Has(m, "sudo crossfree record -p 4242"));
  CHECK(Has(m, "sudo sysctl kernel.yama.ptrace_scope=0"));
}

TEST_CASE("another user: same user or root, and root without CAP_SYS_PTRACE: the capability") {
  PtraceFacts f = SameUser();
  f.target_uid = 65534;
  std::string m = ExplainPtraceRefusal(f);
  CHECK(Has(m, "process 4242 runs as user 65534 and crossfree as user 1000"));
  CHECK(Has(m, "same user as the process, or as root"));
  f.target_uid = -2;
  CHECK(Has(ExplainPtraceRefusal(f), "another user (setuid)"));
  f.target_uid = 65534;
  f.cap_sys_ptrace = true;  // root or the capability: allowed
  CHECK(ExplainPtraceRefusal(f).empty());
  f.cap_sys_ptrace = false;
  f.own_euid = 0;
  m = ExplainPtraceRefusal(f);
  CHECK(Has(m, "crossfree as root but without CAP_SYS_PTRACE"));
  CHECK(Has(m, "plain sudo"));
  f.in_container = true;
  m = ExplainPtraceRefusal(f);
  CHECK(Has(m, "in a container without CAP_SYS_PTRACE"));
  CHECK(Has(m, "--cap-add=SYS_PTRACE"));
  CHECK(Has(m, "securityContext.capabilities.add"));
}

TEST_CASE("EPERM with nothing else known: container, else seccomp or a security module") {
  PtraceFacts f = SameUser();
  f.seize_errno = EPERM;
  f.in_container = true;
  CHECK(Has(ExplainPtraceRefusal(f), "container, which has no CAP_SYS_PTRACE"));
  f.in_container = false;
  std::string m = ExplainPtraceRefusal(f);
  CHECK(Has(m, "seccomp filter or a security module"));
  CHECK(!Has(m, "ptrace_scope"));  // no Yama: not named
  f.yama_scope = 0;
  CHECK(Has(ExplainPtraceRefusal(f), "user and kernel.yama.ptrace_scope allow it"));
  f.seize_errno = ESRCH;
  CHECK(Has(ExplainPtraceRefusal(f), "PTRACE_SEIZE) of process 4242 failed"));
}

}  // namespace
}  // namespace crossfree::analyzer::record
