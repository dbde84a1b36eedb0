// SPDX-License-Identifier: Apache-2.0
// Sockaddr implementation: numeric parsing and formatting only (no DNS).
#include "rpc/sockaddr.h"

#include <arpa/inet.h>

#include <cstring>

namespace crossfree::rpc {

Sockaddr::Sockaddr(const sockaddr_in& a) { u_.v4 = a; }
Sockaddr::Sockaddr(const sockaddr_in6& a) { u_.v6 = a; }

Status Sockaddr::Parse(const std::string& host_in, uint16_t port, Sockaddr* out) {
  *out = Sockaddr();
  std::string host = host_in;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (inet_pton(AF_INET, host.c_str(), &out->u_.v4.sin_addr) == 1) {
    out->u_.v4.sin_family = AF_INET;
    out->u_.v4.sin_port = htons(port);
    return Status::OK();
  }
  if (inet_pton(AF_INET6, host.c_str(), &out->u_.v6.sin6_addr) == 1) {
    out->u_.v6.sin6_family = AF_INET6;
    out->u_.v6.sin6_port = htons(port);
    return Status::OK();
  }
  *out = Sockaddr();
  return Status::InvalidArgument("not a numeric IPv4 or IPv6 address: '" + host_in + "'");
}

Status Sockaddr::ParseHostPort(const std::string& hp, Sockaddr* out) {
  size_t colon = hp.rfind(':');
  if (colon == std::string::npos || colon + 1 == hp.size()) {
    return Status::InvalidArgument("expected HOST:PORT (IPv6 as [::1]:PORT), got '" + hp + "'");
  }
  std::string host = hp.substr(0, colon);
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return Status::InvalidArgument("an IPv6 host needs brackets, as in [::1]:PORT; got '" + hp +
                                   "'");
  }
  char* end = nullptr;
  unsigned long port = strtoul(hp.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port > 65535) {
    return Status::InvalidArgument("bad port in '" + hp + "'");
  }
  return Parse(host, static_cast<uint16_t>(port), out);
}

uint16_t Sockaddr::port() const {
  if (is_ipv6()) return ntohs(u_.v6.sin6_port);
  if (family() == AF_INET) return ntohs(u_.v4.sin_port);
  return 0;
}

void Sockaddr::set_port(uint16_t port) {
  if (is_ipv6()) {
    u_.v6.sin6_port = htons(port);
  } else {
    u_.v4.sin_port = htons(port);
  }
}

std::string Sockaddr::HostToString() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (is_ipv6()) {
    inet_ntop(AF_INET6, &u_.v6.sin6_addr, buf, sizeof(buf));
  } else if (family() == AF_INET) {
    inet_ntop(AF_INET, &u_.v4.sin_addr, buf, sizeof(buf));
  }
  return buf;
}

std::string Sockaddr::ToString() const {
  if (is_ipv6()) return "[" + HostToString() + "]:" + std::to_string(port());
  return HostToString() + ":" + std::to_string(port());
}

bool Sockaddr::operator==(const Sockaddr& o) const {
  if (family() != o.family()) return false;
  if (is_ipv6()) {
    return u_.v6.sin6_port == o.u_.v6.sin6_port &&
           u_.v6.sin6_scope_id == o.u_.v6.sin6_scope_id &&
           memcmp(&u_.v6.sin6_addr, &o.u_.v6.sin6_addr, sizeof(in6_addr)) == 0;
  }
  if (family() == AF_INET) {
    return u_.v4.sin_port == o.u_.v4.sin_port && u_.v4.sin_addr.s_addr == o.u_.v4.sin_addr.s_addr;
  }
  return true;
}

uint64_t Sockaddr::Hash() const {
  uint64_t h = static_cast<uint64_t>(family()) << 48 | port();
  if (is_ipv6()) {
    uint64_t w[2];
    memcpy(w, &u_.v6.sin6_addr, sizeof(w));
    h ^= w[0] * 0x9E3779B97F4A7C15ull;
    h ^= (w[1] + u_.v6.sin6_scope_id) * 0xC2B2AE3D27D4EB4Full;
  } else if (family() == AF_INET) {
    h ^= uint64_t{u_.v4.sin_addr.s_addr} << 16;
  }
  return h * 0x9E3779B97F4A7C15ull;
}

}  // namespace crossfree::rpc
