// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`: the injected trampoline's report, read from
// record's control socket (see trampoline_report.h).
#include "analyzer/record/trampoline_report.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "analyzer/record/ptrace_memory.h"

namespace crossfree::analyzer::record {
namespace {

// A connection to the control socket from the target (its peer
// credentials), or -1 at the deadline or when it exited (wait->exited).
int AcceptFromTarget(pid_t pid, int listener, int pidfd, double deadline, ReportWait* wait) {
  int conn = -1;
  while (conn < 0) {
    const double left = deadline - MonotonicMs();
    if (left <= 0) break;
    pollfd p[2] = {{listener, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int n = poll(p, pidfd >= 0 ? 2 : 1, static_cast<int>(left) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0 && (p[1].revents & POLLIN) != 0) {
      wait->exited = true;
      break;
    }
    if (n <= 0 || (p[0].revents & POLLIN) == 0) continue;
    int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ucred peer{};
    socklen_t len = sizeof(peer);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 && peer.pid == pid) {
      conn = fd;
    } else {
      close(fd);  // not the target: someone else knocking
    }
  }
  return conn;
}

// The report's bytes from conn into wait->report, until the deadline;
// how many arrived.
size_t ReadReport(int conn, int pidfd, double deadline, ReportWait* wait) {
  auto* bytes = reinterpret_cast<char*>(&wait->report) + kTrampolineReportOffset;
  size_t got = 0;
  while (got < kTrampolineReportSize) {
    const double left = deadline - MonotonicMs();
    if (left <= 0) break;
    pollfd p[2] = {{conn, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int n = poll(p, pidfd >= 0 ? 2 : 1, static_cast<int>(left) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    if ((p[0].revents & (POLLIN | POLLHUP)) == 0) {
      wait->exited = true;
      break;
    }
    const ssize_t r = recv(conn, bytes + got, kTrampolineReportSize - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

ReportWait AwaitTrampolineReport(pid_t pid, int listener, int pidfd, double deadline,
                                 uint64_t nonce, void (*on_first_accept)()) {
  ReportWait wait;
  while (!wait.have_report && !wait.exited) {
    const int conn = AcceptFromTarget(pid, listener, pidfd, deadline, &wait);
    if (conn < 0) break;
    if (!wait.accepted) on_first_accept();
    wait.accepted = true;
    const size_t got = ReadReport(conn, pidfd, deadline, &wait);
    close(conn);
    wait.have_report = got == kTrampolineReportSize && wait.report.report_nonce == nonce;
  }
  return wait;
}

}  // namespace crossfree::analyzer::record
