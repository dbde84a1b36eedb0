// SPDX-License-Identifier: Apache-2.0
// Waiting for and reading and writing a stopped target thread
// (ptrace_memory.h).
#include "analyzer/record/ptrace_memory.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/core.h>

namespace crossfree::analyzer::record {

double MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

bool WaitFor(pid_t tid, int* status, double timeout_ms) {
  const double deadline = MonotonicMs() + timeout_ms;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    pid_t r = waitpid(tid, status, __WALL | WNOHANG);
    if (r == tid) return true;
    if (r < 0 && errno != EINTR) return false;
    const double left = deadline - MonotonicMs();
    if (left <= 0) return false;
    timespec ts{static_cast<time_t>(left / 1000),
                static_cast<long>(std::fmod(left, 1000.0) * 1e6)};
    sigtimedwait(&chld, nullptr, &ts);
  }
}

namespace {

bool PokeBytes(pid_t tid, uint64_t addr, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word = 0;
    const size_t k = std::min<size_t>(8, n - i);
    if (k < 8) {
      errno = 0;
      long old = ptrace(PTRACE_PEEKDATA, tid, addr + i, nullptr);
      if (errno != 0) return false;
      word = static_cast<uint64_t>(old);
    }
    std::memcpy(&word, p + i, k);
    if (ptrace(PTRACE_POKEDATA, tid, addr + i, reinterpret_cast<void*>(word)) != 0) return false;
  }
  return true;
}

}  // namespace

bool WriteTarget(pid_t pid, pid_t tid, uint64_t addr, const void* data, size_t n) {
  int fd = open(fmt::format("/proc/{}/task/{}/mem", pid, tid).c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    const ssize_t w = pwrite(fd, data, n, static_cast<off_t>(addr));
    close(fd);
    if (w == static_cast<ssize_t>(n)) return true;
  }
  return PokeBytes(tid, addr, data, n);
}

bool ReadTarget(pid_t pid, uint64_t addr, void* data, size_t n) {
  int fd = open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t r = pread(fd, data, n, static_cast<off_t>(addr));
  const int error = errno;
  close(fd);
  errno = error;
  return r == static_cast<ssize_t>(n);
}

std::optional<uint64_t> PeekWord(pid_t tid, uint64_t addr) {
  errno = 0;
  long v = ptrace(PTRACE_PEEKDATA, tid, addr, nullptr);
  if (errno != 0) return std::nullopt;
  return static_cast<uint64_t>(v);
}

}  // namespace crossfree::analyzer::record
