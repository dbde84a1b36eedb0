// SPDX-License-Identifier: Apache-2.0
// Acceptor implementation: blocking poll on the listening socket plus an
// eventfd used to stop.
#include "rpc/acceptor.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc/connection_thread_set.h"
#include "rpc/logging.h"
#include "rpc/messenger.h"
#include "rpc/reactor.h"

namespace crossfree::rpc {

Acceptor::~Acceptor() { Shutdown(); }

Status Acceptor::Start(const std::string& host, uint16_t port, Sockaddr* bound) {
  Sockaddr addr;
  CROSSFREE_RETURN_NOT_OK(Sockaddr::Parse(host, port, &addr));
  // Non-blocking: a connection reset between poll() and accept() must not
  // block the thread.
  listen_fd_ = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return Status::NetworkError("socket() failed", errno);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (addr.is_ipv6()) setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (::bind(listen_fd_, addr.addr(), addr.addr_len()) < 0) {
    int err = errno;
    return Status::NetworkError("bind to " + addr.ToString() + " failed", err);
  }
  if (::listen(listen_fd_, 512) < 0) return Status::NetworkError("listen failed", errno);
  socklen_t len = Sockaddr::kStorageLen;
  getsockname(listen_fd_, addr.mutable_addr(), &len);
  if (bound != nullptr) *bound = addr;
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::RuntimeError("eventfd failed", errno);
  thread_ = std::thread([this] { Run(); });
  return Status::OK();
}

void Acceptor::Shutdown() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
    (void)ignored;
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

void Acceptor::Run() {
  SetCurrentThreadName(messenger_->options().acceptor_name);
  const MessengerOptions& o = messenger_->options();
  RateLimitedLog failure_log(1000);
  RateLimitedLog limit_log(1000);
  bool backing_off = false;
  // Connection-thread mode: the socket stays blocking (its thread blocks
  // in recv() on it); the reactors' sockets are non-blocking.
  ConnectionThreadSet* threads = messenger_->connection_thread_set();
  const int accept_flags = threads != nullptr ? SOCK_CLOEXEC : SOCK_NONBLOCK | SOCK_CLOEXEC;
  for (;;) {
    // While backing off only the wake-up fd is watched, for a while.
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    int n = ::poll(fds, backing_off ? 1 : 2, backing_off ? o.accept_backoff_ms : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "acceptor poll failed; stopping");
      return;
    }
    if (fds[0].revents != 0) return;
    if (backing_off) {
      backing_off = false;
      continue;
    }
    if ((fds[1].revents & POLLIN) == 0) continue;
    Sockaddr remote;
    socklen_t len = Sockaddr::kStorageLen;
    int fd = ::accept4(listen_fd_, remote.mutable_addr(), &len, accept_flags);
    if (fd < 0) {
      int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) continue;
      accept_failures_.fetch_add(1, std::memory_order_relaxed);
      // Out of descriptors or memory: the connection stays queued and poll
      // would report it again at once. Any other error is backed off too,
      // so no error can make this loop spin.
      backing_off = o.accept_backoff_ms > 0;
      int suppressed = 0;
      if (failure_log.ShouldLog(&suppressed)) {
        std::string msg = Status::NetworkError("accept failed", err).ToString() +
                          "; not accepting for " + std::to_string(o.accept_backoff_ms) + " ms";
        if (suppressed > 0) {
          msg += " (" + std::to_string(suppressed) + " more failures not logged)";
        }
        Log(LogLevel::kWarning, msg);
      }
      continue;
    }
    if (!messenger_->TryAddServerConnection()) {
      ::close(fd);
      rejected_.fetch_add(1, std::memory_order_relaxed);
      int suppressed = 0;
      if (limit_log.ShouldLog(&suppressed)) {
        std::string msg = "rejected connection from " + remote.ToString() + ": " +
                          std::to_string(o.max_connections) +
                          " connections open (max_connections)";
        if (suppressed > 0) msg += " (" + std::to_string(suppressed) + " more not logged)";
        Log(LogLevel::kWarning, msg);
      }
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (threads != nullptr) {
      threads->Start(fd, remote);  // owns fd and the connection count from here
      continue;
    }
    Reactor* reactor = messenger_->ReactorFor(remote);
    Messenger* m = messenger_;
    reactor->ScheduleTask([reactor, m, fd, remote](const Status& s) {
      if (s.ok()) {
        reactor->RegisterInboundSocket(fd, remote);
      } else {
        ::close(fd);
        m->RemoveServerConnection();
      }
    });
  }
}

}  // namespace crossfree::rpc
