// SPDX-License-Identifier: Apache-2.0
// The explanations of a refused ptrace (see ptrace_refusal.h). The
// order follows the kernel's checks: a tracer already there, Yama's
// scope 3, the user and capability check, Yama's scopes 2 and 1; what is
// left when the kernel still says EPERM is a security module or a
// seccomp filter.
#include "analyzer/record/ptrace_refusal.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fmt/core.h>

#include "analyzer/record/target_process.h"

namespace crossfree::analyzer::record {
namespace {

constexpr char kContainerAdvice[] =
    "start the container with --cap-add=SYS_PTRACE (docker, podman) or add SYS_PTRACE to "
    "securityContext.capabilities.add (Kubernetes)";

std::string UserOf(long uid) {
  return uid == -2 ? std::string("another user (setuid)") : fmt::format("user {}", uid);
}

}  // namespace

std::string ExplainPtraceRefusal(const PtraceFacts& f) {
  if (f.tracer_pid != 0 && f.tracer_pid != f.own_pid) {
    return fmt::format("process {} is already traced by process {} ({}): a debugger or strace "
                       "holds it; detach that first",
                       f.pid, f.tracer_pid, f.tracer_comm);
  }
  if (f.yama_scope == 3) {
    return "ptrace is disabled on this machine (kernel.yama.ptrace_scope=3, until reboot): "
           "attaching is impossible; run the program under `crossfree record -- CMD`";
  }
  const bool other_user = f.target_uid != -1 && f.target_uid != f.own_euid;
  if (other_user && !f.cap_sys_ptrace) {
    if (f.own_euid == 0 && f.in_container) {
      return fmt::format("process {} runs as {} and crossfree as root in a container without "
                         "CAP_SYS_PTRACE, which attaching to another user's process needs: {}",
                         f.pid, UserOf(f.target_uid), kContainerAdvice);
    }
    if (f.own_euid == 0) {
      return fmt::format("process {} runs as {} and crossfree as root but without "
                         "CAP_SYS_PTRACE (dropped from its capability sets), which attaching to "
                         "another user's process needs: run crossfree with that capability "
                         "(plain sudo), or as user {}",
                         f.pid, UserOf(f.target_uid),
                         f.target_uid >= 0 ? std::to_string(f.target_uid) : "the process's");
    }
    return fmt::format("process {} runs as {} and crossfree as user {}: run crossfree as the "
                       "same user as the process, or as root (sudo)",
                       f.pid, UserOf(f.target_uid), f.own_euid);
  }
  if (f.yama_scope == 2 && !f.cap_sys_ptrace) {
    return f.in_container
               ? fmt::format("kernel.yama.ptrace_scope=2 lets only processes with "
                             "CAP_SYS_PTRACE attach, and this container has none: {}",
                             kContainerAdvice)
               : std::string("kernel.yama.ptrace_scope=2 lets only processes with "
                             "CAP_SYS_PTRACE attach: run crossfree as root (sudo)");
  }
  if (f.yama_scope == 1 && !f.cap_sys_ptrace) {
    return fmt::format("kernel.yama.ptrace_scope=1 lets a process attach only to its own "
                       "descendants: run `sudo crossfree record -p {}`, or allow it with "
                       "`sudo sysctl kernel.yama.ptrace_scope=0`",
                       f.pid);
  }
  if (f.seize_errno == 0) return "";
  if (f.seize_errno == EPERM && !f.cap_sys_ptrace && f.in_container) {
    return fmt::format("ptrace of process {} was refused (EPERM) in this container, which has "
                       "no CAP_SYS_PTRACE: {}",
                       f.pid, kContainerAdvice);
  }
  if (f.seize_errno == EPERM) {
    return fmt::format("ptrace of process {} was refused (EPERM) although the user{} allow it: "
                       "a seccomp filter or a security module (AppArmor, SELinux) forbids "
                       "ptrace here, or the process made itself undumpable; run crossfree as "
                       "root with CAP_SYS_PTRACE outside that profile",
                       f.pid, f.yama_scope >= 0 ? " and kernel.yama.ptrace_scope" : "");
  }
  return fmt::format("ptrace(PTRACE_SEIZE) of process {} failed: {}", f.pid,
                     std::strerror(f.seize_errno));
}

namespace {

bool HasCapSysPtrace() {
  std::istringstream in(ReadText("/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      unsigned long long caps = std::strtoull(line.c_str() + 7, nullptr, 16);
      return (caps >> 19) & 1;  // CAP_SYS_PTRACE
    }
  }
  return false;
}

bool InContainer() {
  if (access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0) return true;
  const std::string cg = ReadText("/proc/1/cgroup");
  return cg.find("docker") != std::string::npos || cg.find("kubepods") != std::string::npos ||
         cg.find("containerd") != std::string::npos || cg.find("lxc") != std::string::npos;
}

}  // namespace

PtraceFacts GatherPtraceFacts(pid_t pid, int seize_errno) {
  PtraceFacts f;
  f.pid = pid;
  f.own_pid = getpid();
  f.own_euid = static_cast<long>(geteuid());
  f.cap_sys_ptrace = HasCapSysPtrace();
  f.in_container = InContainer();
  f.seize_errno = seize_errno;
  std::istringstream in(ReadText(fmt::format("/proc/{}/status", pid)));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("TracerPid:", 0) == 0) f.tracer_pid = std::strtol(line.c_str() + 10, nullptr, 10);
    if (line.rfind("Uid:", 0) == 0) {
      std::istringstream u(line.substr(4));
      long real = -1, effective = -1;
      u >> real >> effective;
      f.target_uid = real != effective ? -2 : effective;
    }
  }
  if (f.tracer_pid != 0) {
    f.tracer_comm = ReadText(fmt::format("/proc/{}/comm", f.tracer_pid));
    if (!f.tracer_comm.empty() && f.tracer_comm.back() == '\n') f.tracer_comm.pop_back();
  }
  const std::string scope = ReadText("/proc/sys/kernel/yama/ptrace_scope");
  if (!scope.empty()) f.yama_scope = std::atoi(scope.c_str());
  return f;
}

}  // namespace crossfree::analyzer::record
