// SPDX-License-Identifier: Apache-2.0
// Acceptor: the thread that accepts TCP connections on a listening socket
// and hands each one to the reactor chosen by its remote address.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "rpc/sockaddr.h"
#include "rpc/status.h"

namespace crossfree::rpc {

class Messenger;

// Owner: the Messenger. Thread: runs its own thread named "acceptor";
// Start/Shutdown from the messenger's owner.
// Bounds (MessengerOptions): beyond max_connections open server
// connections, a new connection is accepted and closed at once. When
// accept() fails for lack of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM)
// the pending connection stays in the backlog, so polling again would
// spin: the acceptor stops watching the socket for accept_backoff_ms and
// logs at most one line per second with the number of failures.
class Acceptor {
 public:
  explicit Acceptor(Messenger* messenger) : messenger_(messenger) {}
  ~Acceptor();

  // Binds and listens on host:port (IPv4 or IPv6; port 0 picks one);
  // *bound gets the address actually bound. Then starts the thread.
  Status Start(const std::string& host, uint16_t port, Sockaddr* bound);
  // Stops accepting and joins the thread. Idempotent.
  void Shutdown();

  // Counters (any thread), for tests and logs.
  uint64_t accept_failures() const { return accept_failures_.load(std::memory_order_relaxed); }
  uint64_t rejected_over_limit() const { return rejected_.load(std::memory_order_relaxed); }

 private:
  void Run();

  Messenger* const messenger_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd that tells the thread to stop
  std::thread thread_;
  std::atomic<uint64_t> accept_failures_{0};
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace crossfree::rpc
