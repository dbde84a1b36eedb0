// SPDX-License-Identifier: Apache-2.0
// Acceptor implementation: blocking poll on the listening socket plus an
// eventfd used to stop.
#include "rpc/acceptor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc/logging.h"
#include "rpc/messenger.h"

namespace crossfree::rpc {

Status ParseAddress(const std::string& host, uint16_t port, sockaddr_in* out) {
  *out = sockaddr_in{};
  out->sin_family = AF_INET;
  out->sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &out->sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address: '" + host + "'");
  }
  return Status::OK();
}

std::string AddressToString(const sockaddr_in& addr) {
  char buf[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &addr.sin_addr, buf, sizeof(buf));
  return std::string(buf) + ":" + std::to_string(ntohs(addr.sin_port));
}

Acceptor::~Acceptor() { Shutdown(); }

Status Acceptor::Start(const std::string& host, uint16_t port, sockaddr_in* bound) {
  sockaddr_in addr;
  CROSSFREE_RETURN_NOT_OK(ParseAddress(host, port, &addr));
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::NetworkError("socket() failed", errno);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    int err = errno;
    return Status::NetworkError("bind to " + AddressToString(addr) + " failed", err);
  }
  if (::listen(listen_fd_, 512) < 0) return Status::NetworkError("listen failed", errno);
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
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
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "acceptor poll failed; stopping");
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    sockaddr_in remote;
    socklen_t len = sizeof(remote);
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&remote), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        Log(LogLevel::kWarning, "accept failed: " + Status::NetworkError("", errno).ToString());
      }
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Reactor* reactor = messenger_->ReactorFor(remote);
    reactor->ScheduleTask([reactor, fd, remote](const Status& s) {
      if (s.ok()) {
        reactor->RegisterInboundSocket(fd, remote);
      } else {
        ::close(fd);
      }
    });
  }
}

}  // namespace crossfree::rpc
