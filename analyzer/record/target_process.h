// SPDX-License-Identifier: Apache-2.0
// What `crossfree record -p` reads about the target process before it
// injects (attach_inject.cc): its mappings, a module's dynamic symbols and
// load bias, where code is unsafe to interrupt, and what each thread is
// asleep in (which threads may be made to call dlopen); ReadText and
// DescriptorLink also serve record's hand-off (record_channel.cc,
// record_children.cc). Reads /proc and ELF files only; any thread may
// call anything here.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crossfree::analyzer::record {

// The last component of a path: "libc.so.6" of "/lib/x86_64-linux-gnu/libc.so.6".
std::string Basename(const std::string& path);

// The whole of a (small, /proc) text file; "" when it cannot be read.
std::string ReadText(const std::string& path);

// What descriptor fd of process pid refers to (the /proc/PID/fd/FD link:
// "/memfd:NAME (deleted)", "anon_inode:[pidfd]", a path); "" when it
// cannot be read.
std::string DescriptorLink(pid_t pid, int fd);

// One line of /proc/PID/maps.
struct Mapping {
  uint64_t lo, hi, offset;
  bool exec;
  std::string path;
};
std::vector<Mapping> ReadMaps(pid_t pid);

// A defined dynamic function symbol's st_value in an ELF file, or nullopt.
std::optional<uint64_t> DynamicSymbol(const std::string& path, const char* name);

// The load bias of the object mapped from path in the target, from its
// executable mapping and the file's (file: the same object as seen from
// here) program headers.
std::optional<uint64_t> LoadBias(const std::vector<Mapping>& maps, const std::string& path,
                                 const std::string& file);

// Code a thread must not be stopped in before it calls dlopen (libc, the
// loader, the C++ runtime, allocators, the tracer): it may hold their locks.
bool UnsafeCode(const std::string& path);
// pc is in a mapping of safe code (false for no mapping: JIT or garbage).
bool PcIsSafe(const std::vector<Mapping>& maps, uint64_t pc);
// A thread stopped at sp has room below it for the injected code's data
// and dlopen's frames.
bool EnoughStack(const std::vector<Mapping>& maps, uint64_t sp);

// Ranks of a thread by where it sleeps; lower is safer.
enum Rank { kRestartable = 0, kEpoll = 1, kCondWait = 2, kOther = 3, kUnusable = 9 };

struct Candidate {
  pid_t tid;
  Rank rank;
  long nr;  // the system call it sleeps in, -1 when none
};
// Where thread tid of pid sleeps (/proc/PID/task/TID/syscall).
Candidate Classify(pid_t pid, pid_t tid);

// rax of a system call the kernel will restart (-ERESTART*).
bool IsRestartCode(long long rax);
bool IsEpoll(long long nr);

}  // namespace crossfree::analyzer::record
