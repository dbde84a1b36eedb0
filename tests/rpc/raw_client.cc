// SPDX-License-Identifier: Apache-2.0
// Raw-socket RPC clients for the tests (see raw_client.h).
#include "tests/rpc/raw_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rpc/calculator_service.h"
#include "rpc/serialization.h"

namespace crossfree::rpc::testing {

int RawConnect(const Sockaddr& addr) {
  int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (::connect(fd, addr.addr(), addr.addr_len()) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool RecvExactly(int fd, size_t n, std::string* out) {
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd, out->data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

std::string ConnHeader(uint8_t reserved) {
  uint8_t h[kConnHeaderLength];
  WriteConnHeader(h);
  h[5] = reserved;
  return std::string(reinterpret_cast<char*>(h), kConnHeaderLength);
}

std::string RequestFrame(int32_t call_id, const std::string& method, const std::string& body) {
  RequestHeader h;
  h.set_call_id(call_id);
  h.mutable_remote_method()->set_service_name(test::CalculatorServiceIf::kServiceName);
  h.mutable_remote_method()->set_method_name(method);
  FrameLayout l = ComputeFrameLayout(h, body.size(), 0);
  std::string out(l.head_bytes, '\0');
  SerializeFrameHeader(l, h, reinterpret_cast<uint8_t*>(out.data()));
  return out + body;
}

std::string AddBody(uint32_t x, uint32_t y) {
  test::AddRequestPB r;
  r.set_x(x);
  r.set_y(y);
  return r.SerializeAsString();
}

bool WaitClosed(int fd, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  for (;;) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, left) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0 && (errno == ECONNRESET || errno == EPIPE)) return true;  // reset
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
  }
}

bool IsClosed(int fd) { return WaitClosed(fd, std::chrono::milliseconds(1)); }

int ListenOnLoopback(sockaddr_in* address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  *address = sockaddr_in{};
  address->sin_family = AF_INET;
  address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(*address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(address), sizeof(*address)) != 0 ||
      ::listen(fd, 4) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(address), &len) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

}  // namespace crossfree::rpc::testing
