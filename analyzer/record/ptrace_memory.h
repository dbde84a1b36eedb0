// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`'s access to a stopped target thread: waiting for
// it, and reading and writing the target's memory (through /proc, or
// ptrace word by word). The caller is the thread's ptrace tracer.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace crossfree::analyzer::record {

// CLOCK_MONOTONIC in milliseconds.
double MonotonicMs();

// Waits for a state change of tid, at most timeout_ms, on SIGCHLD
// (blocked by the caller) rather than by polling.
bool WaitFor(pid_t tid, int* status, double timeout_ms);

// Writes n bytes at addr of the target through the stopped thread tid:
// one write through /proc/PID/task/TID/mem (which may write read-only code
// pages for its tracer), or word by word with PTRACE_POKEDATA.
bool WriteTarget(pid_t pid, pid_t tid, uint64_t addr, const void* data, size_t n);
// Reads n bytes at addr through /proc/PID/mem (errno set on failure).
bool ReadTarget(pid_t pid, uint64_t addr, void* data, size_t n);
// One word at addr, through the stopped thread tid.
std::optional<uint64_t> PeekWord(pid_t tid, uint64_t addr);

}  // namespace crossfree::analyzer::record
