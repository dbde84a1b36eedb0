// SPDX-License-Identifier: Apache-2.0
// record's stderr lines, SIGPIPE and standard descriptors (messages.h).
#include "analyzer/record/messages.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace crossfree::analyzer::record {
namespace {

struct sigaction g_old_pipe_action;
bool g_pipe_ignored = false;

}  // namespace

void WriteStderr(const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void IgnorePipeSignal() {
  if (g_pipe_ignored) return;
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  g_pipe_ignored = sigaction(SIGPIPE, &ignore, &g_old_pipe_action) == 0;
}

void RestorePipeSignal() {
  if (g_pipe_ignored) sigaction(SIGPIPE, &g_old_pipe_action, nullptr);
}

void ReserveStandardDescriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // The lowest free number: fd itself, as the ones below it are open.
    const int got = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (got >= 0 && got != fd) close(got);
  }
}

}  // namespace crossfree::analyzer::record
