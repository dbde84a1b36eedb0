// SPDX-License-Identifier: Apache-2.0
// Tracer: the calls a thread makes when it is about to wait for a long
// time (event loops, sleeps, accept, waiting for children or signals).
// Each writes the calling thread's buffered events first, when it has any
// and has written none for the age bound (CROSSFREE_FLUSH_MS; the waits
// for a signal alone: whenever it has any), then forwards untouched.
// Without this, a process whose every thread goes idle
// keeps its last events buffered until its next allocation, which may
// never come: SIGKILL would lose them. With it, each thread loses at most
// the events of one age bound (docs/guide/tracer.md, "Thread exit and
// process exit"). A busy server pays one clock read per such call and one
// write per thread per age bound.
//
// The flush never blocks and never calls a cancellation point (the write is
// a raw syscall), so cancellation and the real call's errno are as without
// the tracer.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracer/real_alloc.h"
#include "tracer/recorder.h"

using crossfree::tracer::FlushBeforeBlocking;
using crossfree::tracer::FlushBeforeSignalWait;
using crossfree::tracer::Real;

#define CROSSFREE_BLOCKING extern "C" __attribute__((visibility("default")))

// Forwards to the next definition; ENOSYS if there is none (glibc always
// has them: that would be a broken process already).
#define CROSSFREE_FORWARD_AFTER(flush, field, ...) \
  flush;                                           \
  auto next = Real().field;                        \
  if (next == nullptr) {                           \
    errno = ENOSYS;                                \
    return -1;                                     \
  }                                                \
  return next(__VA_ARGS__)
#define CROSSFREE_FORWARD(field, ...) \
  CROSSFREE_FORWARD_AFTER(FlushBeforeBlocking(), field, __VA_ARGS__)
// The waits for a signal and nothing else (pause, sigsuspend,
// sigwaitinfo): no event loop calls them per request, and a process often
// waits in them to be killed, so they write whatever is buffered, however
// recent the thread's last write (FlushBeforeBlocking's bound would keep
// the events of a thread that wrote just before, for good).
#define CROSSFREE_FORWARD_SIGNAL_WAIT(field, ...) \
  CROSSFREE_FORWARD_AFTER(FlushBeforeSignalWait(), field, __VA_ARGS__)

CROSSFREE_BLOCKING int epoll_wait(int fd, struct epoll_event* events, int n, int timeout) {
  CROSSFREE_FORWARD(epoll_wait, fd, events, n, timeout);
}
CROSSFREE_BLOCKING int epoll_pwait(int fd, struct epoll_event* events, int n, int timeout,
                                   const sigset_t* mask) {
  CROSSFREE_FORWARD(epoll_pwait, fd, events, n, timeout, mask);
}
CROSSFREE_BLOCKING int poll(struct pollfd* fds, nfds_t n, int timeout) {
  CROSSFREE_FORWARD(poll, fds, n, timeout);
}
CROSSFREE_BLOCKING int ppoll(struct pollfd* fds, nfds_t n, const struct timespec* timeout,
                             const sigset_t* mask) {
  CROSSFREE_FORWARD(ppoll, fds, n, timeout, mask);
}
CROSSFREE_BLOCKING int select(int n, fd_set* r, fd_set* w, fd_set* e, struct timeval* timeout) {
  CROSSFREE_FORWARD(select, n, r, w, e, timeout);
}
CROSSFREE_BLOCKING int pselect(int n, fd_set* r, fd_set* w, fd_set* e,
                               const struct timespec* timeout, const sigset_t* mask) {
  CROSSFREE_FORWARD(pselect, n, r, w, e, timeout, mask);
}
CROSSFREE_BLOCKING int accept(int fd, struct sockaddr* addr, socklen_t* len) {
  CROSSFREE_FORWARD(accept, fd, addr, len);
}
CROSSFREE_BLOCKING int accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
  CROSSFREE_FORWARD(accept4, fd, addr, len, flags);
}
CROSSFREE_BLOCKING int nanosleep(const struct timespec* want, struct timespec* left) {
  CROSSFREE_FORWARD(nanosleep, want, left);
}
CROSSFREE_BLOCKING int clock_nanosleep(clockid_t clock, int flags, const struct timespec* want,
                                       struct timespec* left) {
  FlushBeforeBlocking();
  auto next = Real().clock_nanosleep;
  if (next == nullptr) return ENOSYS;  // returns the error, errno untouched
  return next(clock, flags, want, left);
}
CROSSFREE_BLOCKING unsigned int sleep(unsigned int seconds) {
  FlushBeforeBlocking();
  auto next = Real().sleep;
  return next != nullptr ? next(seconds) : seconds;
}
CROSSFREE_BLOCKING int usleep(useconds_t usec) { CROSSFREE_FORWARD(usleep, usec); }
CROSSFREE_BLOCKING int pause(void) { CROSSFREE_FORWARD_SIGNAL_WAIT(pause); }
CROSSFREE_BLOCKING int sigsuspend(const sigset_t* mask) {
  CROSSFREE_FORWARD_SIGNAL_WAIT(sigsuspend, mask);
}
CROSSFREE_BLOCKING int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  CROSSFREE_FORWARD_SIGNAL_WAIT(sigwaitinfo, set, info);
}
CROSSFREE_BLOCKING int sigtimedwait(const sigset_t* set, siginfo_t* info,
                                    const struct timespec* timeout) {
  CROSSFREE_FORWARD(sigtimedwait, set, info, timeout);
}
CROSSFREE_BLOCKING pid_t waitpid(pid_t pid, int* status, int options) {
  CROSSFREE_FORWARD(waitpid, pid, status, options);
}
CROSSFREE_BLOCKING pid_t wait(int* status) { CROSSFREE_FORWARD(wait, status); }
CROSSFREE_BLOCKING pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  CROSSFREE_FORWARD(wait4, pid, status, options, usage);
}
CROSSFREE_BLOCKING int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  CROSSFREE_FORWARD(waitid, type, id, info, options);
}
