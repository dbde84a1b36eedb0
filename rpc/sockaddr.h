// SPDX-License-Identifier: Apache-2.0
// Sockaddr: a TCP endpoint, IPv4 or IPv6, as the RPC core passes it around
// (listen address, connection peer, call destination).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "rpc/status.h"

namespace crossfree::rpc {

// A value type (trivially copyable, 28 bytes), so calls and connections
// carry it without allocating. Thread: any; no shared state.
class Sockaddr {
 public:
  Sockaddr() = default;  // family AF_UNSPEC: matches nothing, connects nowhere
  Sockaddr(const sockaddr_in& a);   // NOLINT(runtime/explicit): IPv4 callers
  Sockaddr(const sockaddr_in6& a);  // NOLINT(runtime/explicit)

  // A numeric IPv4 ("127.0.0.1") or IPv6 ("::1", also "[::1]") host and a
  // port. No name lookup. InvalidArgument naming the bad host.
  static Status Parse(const std::string& host, uint16_t port, Sockaddr* out);
  // "HOST:PORT", with IPv6 hosts in brackets ("[::1]:8080").
  static Status ParseHostPort(const std::string& host_port, Sockaddr* out);

  int family() const { return u_.sa.sa_family; }
  bool is_ipv6() const { return family() == AF_INET6; }
  uint16_t port() const;
  void set_port(uint16_t port);
  const sockaddr* addr() const { return &u_.sa; }
  sockaddr* mutable_addr() { return &u_.sa; }
  socklen_t addr_len() const { return is_ipv6() ? sizeof(sockaddr_in6) : sizeof(sockaddr_in); }
  // Size of the storage, for accept()/getsockname().
  static constexpr socklen_t kStorageLen = sizeof(sockaddr_in6);

  // "127.0.0.1:80", "[::1]:80".
  std::string ToString() const;
  // The host part alone: "127.0.0.1", "::1".
  std::string HostToString() const;

  bool operator==(const Sockaddr& o) const;
  bool operator!=(const Sockaddr& o) const { return !(*this == o); }
  // Mixes family, address and port; for hash maps and reactor choice.
  uint64_t Hash() const;

 private:
  union {
    sockaddr sa;
    sockaddr_in v4;
    sockaddr_in6 v6;
  } u_{};
};

struct SockaddrHash {
  size_t operator()(const Sockaddr& a) const { return static_cast<size_t>(a.Hash()); }
};

}  // namespace crossfree::rpc
