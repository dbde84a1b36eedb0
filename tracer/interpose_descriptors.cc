// SPDX-License-Identifier: Apache-2.0
// Tracer: close, close_range, closefrom, dup2 and dup3, so that a program
// that closes every descriptor (daemons, supervisors, zygotes) or dup2's
// onto a high number neither closes nor takes over the tracer's own
// descriptors (owned_fds.h says what the program sees). Calls the tracer
// makes itself (under its guard, or from inside libunwind for the tracer)
// are forwarded untouched and forget the descriptor they close.
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

#include "tracer/owned_fds.h"
#include "tracer/real_alloc.h"
#include "tracer/recorder.h"

extern "C" __thread int crossfree_in_unwinder __attribute__((tls_model("initial-exec")));

using crossfree::tracer::Real;

namespace {

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

bool TracerIsCalling() {
  return __atomic_load_n(&crossfree_tracer_guard, __ATOMIC_RELAXED) != 0 ||
         __atomic_load_n(&crossfree_in_unwinder, __ATOMIC_RELAXED) != 0;
}

int NextClose(int fd) {
  if (auto next = Real().close; next != nullptr) return next(fd);
  return static_cast<int>(syscall(SYS_close, fd));
}

int NextCloseRange(unsigned first, unsigned last, int flags) {
  if (auto next = Real().close_range; next != nullptr) return next(first, last, flags);
  return static_cast<int>(syscall(SYS_close_range, first, last, flags));
}

// close_range over [first, last] less the tracer's descriptors in it.
int CloseRangeAround(unsigned first, unsigned last, int flags) {
  int owned[crossfree::tracer::kMaxOwnedFds];
  const int n = crossfree::tracer::OwnedFdsIn(first, last, owned);
  if (n == 0) return NextCloseRange(first, last, flags);
  int rc = 0;
  int first_errno = 0;
  auto close_gap = [&](unsigned from, unsigned to) {
    if (NextCloseRange(from, to, flags) != 0 && rc == 0) {
      rc = -1;
      first_errno = errno;
    }
    // CLOSE_RANGE_UNSHARE: the first call unshared the table already.
    flags &= ~static_cast<int>(CLOSE_RANGE_UNSHARE);
  };
  unsigned from = first;
  for (int i = 0; i < n; ++i) {
    const unsigned fd = static_cast<unsigned>(owned[i]);  // <= INT_MAX: fd + 1 cannot wrap
    if (fd > from) close_gap(from, fd - 1);
    from = fd + 1;
  }
  if (from <= last) close_gap(from, last);
  if (rc != 0) errno = first_errno;
  return rc;
}

template <typename Dup>
int DupOnto(int oldfd, int newfd, Dup&& dup) {
  if (TracerIsCalling()) return dup();
  if (crossfree::tracer::IsOwnedFd(oldfd)) {
    errno = EBADF;  // not a descriptor of the program's
    return -1;
  }
  if (oldfd == newfd || !crossfree::tracer::MoveOwnedFd(newfd)) return dup();
  // newfd still holds the tracer's old duplicate: the dup replaces it, or
  // on failure it is closed here, leaving the numbers as without us.
  const int rc = dup();
  if (rc < 0) {
    const int saved = errno;
    syscall(SYS_close, newfd);
    errno = saved;
  }
  return rc;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int close(int fd) {
  if (TracerIsCalling()) {
    crossfree::tracer::DisownFd(fd);
    return NextClose(fd);
  }
  // Succeeds and leaves it open: a program that closes what it finds in
  // /proc/self/fd (Chromium's crashpad, Python's close_fds) sees the
  // tracer's descriptors listed there and takes a failure for an error it
  // reports; close_range and closefrom, below, succeed over them too.
  if (crossfree::tracer::IsOwnedFd(fd)) return 0;
  return NextClose(fd);
}

extern "C" __attribute__((visibility("default"))) int close_range(unsigned first, unsigned last,
                                                                  int flags) {
  // CLOSE_RANGE_CLOEXEC only marks close-on-exec, which the tracer's
  // descriptors are already.
  if (TracerIsCalling() || (flags & static_cast<int>(CLOSE_RANGE_CLOEXEC)) != 0 || first > last) {
    return NextCloseRange(first, last, flags);
  }
  return CloseRangeAround(first, last, flags);
}

extern "C" __attribute__((visibility("default"))) void closefrom(int lowfd) {
  const unsigned first = lowfd < 0 ? 0u : static_cast<unsigned>(lowfd);
  if (!TracerIsCalling() && (CloseRangeAround(first, UINT_MAX, 0) == 0 || errno != ENOSYS)) {
    return;
  }
  // No close_range in this kernel (before 5.9): glibc's own fallback, which
  // closes the tracer's descriptors too; the trace file then reopens.
  if (auto next = Real().closefrom; next != nullptr) next(lowfd);
}

extern "C" __attribute__((visibility("default"))) int dup2(int oldfd, int newfd) {
  return DupOnto(oldfd, newfd, [&] {
    if (auto next = Real().dup2; next != nullptr) return next(oldfd, newfd);
    return static_cast<int>(syscall(SYS_dup2, oldfd, newfd));
  });
}

extern "C" __attribute__((visibility("default"))) int dup3(int oldfd, int newfd, int flags) {
  return DupOnto(oldfd, newfd, [&] {
    if (auto next = Real().dup3; next != nullptr) return next(oldfd, newfd, flags);
    return static_cast<int>(syscall(SYS_dup3, oldfd, newfd, flags));
  });
}
