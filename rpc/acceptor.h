// SPDX-License-Identifier: Apache-2.0
// Acceptor: the thread that accepts TCP connections on a listening socket
// and hands each one to the reactor chosen by its remote address.
#pragma once

#include <netinet/in.h>

#include <string>
#include <thread>

#include "rpc/status.h"

namespace crossfree::rpc {

class Messenger;

// Owner: the Messenger. Thread: runs its own thread named "acceptor";
// Start/Shutdown from the messenger's owner.
class Acceptor {
 public:
  explicit Acceptor(Messenger* messenger) : messenger_(messenger) {}
  ~Acceptor();

  // Binds and listens on host:port (port 0 picks one); *bound gets the
  // address actually bound. Then starts the thread.
  Status Start(const std::string& host, uint16_t port, sockaddr_in* bound);
  // Stops accepting and joins the thread. Idempotent.
  void Shutdown();

 private:
  void Run();

  Messenger* const messenger_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd that tells the thread to stop
  std::thread thread_;
};

// Parses "a.b.c.d" + port into *out. InvalidArgument naming the bad host.
Status ParseAddress(const std::string& host, uint16_t port, sockaddr_in* out);
std::string AddressToString(const sockaddr_in& addr);

}  // namespace crossfree::rpc
