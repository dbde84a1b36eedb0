// SPDX-License-Identifier: Apache-2.0
// The traced command as `crossfree record`'s child process, supervised the
// way a shell supervises a job: signals sent to record are passed on, the
// command is waited for and its status named, and the processes it leaves
// running (record is their subreaper) are reaped within a bound.
//
// Threading: record's main thread. SignalForwarding installs process-wide
// handlers: one object at a time, Install before fork, SetChild after it,
// Restore (or the destructor) when the command has been reaped.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace crossfree::analyzer::record {

// SIGINT, SIGTERM, SIGHUP and SIGQUIT, while installed: blocked from
// Install until SetChild (so that none is lost before the child's pid is
// known), then passed to the child, except those the kernel sent the whole
// terminal's process group (^C), which the command got already.
class SignalForwarding {
 public:
  void Install();
  // In the child after fork: the old handlers and mask, before exec.
  void RestoreInChild();
  // In record: the command's pid; pending signals are forwarded now.
  void SetChild(pid_t pid);
  // The command was reaped: forward no more.
  void ClearChild();
  void Restore();
  ~SignalForwarding() { Restore(); }

 private:
  bool installed_ = false;
  struct sigaction old_actions_[4];
  sigset_t old_mask_;
};

// In the child between fork and exec: a copy of fd that the command
// inherits, numbered kInheritedFdMin or above when such a number is free
// (else fd itself, made inheritable). A wrapper script's `exec 3>file`
// before it execs the real program would otherwise replace the number the
// tracer's environment names, and the program would lose the hand-off.
inline constexpr int kInheritedFdMin = 400;
int InheritedDescriptor(int fd);

// "SIGTERM", or "signal N".
std::string SignalName(int sig);
uint64_t MonotonicNowNs();

// Waits for the command; its exit status, or 128 + N (named on stderr)
// when signal N killed it.
int WaitForChild(pid_t pid, const std::string& name);

// Whether record got a SIGINT or SIGTERM (passed on to the command, or
// sent to the terminal's whole group): the run is to end.
bool StopSignalReceived();

// After the command exited: reaps the processes it left running until none
// is left or budget_s passed. When some are left, says so in one line: how
// long it waited and why no longer (`bound`: "--wait-children", or the
// stop signal), how many ended meanwhile, and which are still running; when
// none is, how many it waited for (if any).
void WaitForDescendants(double budget_s, const std::string& bound);

// True if path names a dynamically linked ELF executable (one LD_PRELOAD
// can reach); unknown counts as true.
bool LoadsPreloads(const std::string& path);

// The command's executable as execvp would find it, or "" if not found.
std::string ResolveCommand(const std::string& cmd);

// A signal given as a number, "USR2" or "SIGUSR2", or "RTMIN+N"; 0 if unknown.
int ParseSignal(const std::string& text);

}  // namespace crossfree::analyzer::record
