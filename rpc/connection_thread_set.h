// SPDX-License-Identifier: Apache-2.0
// ConnectionThreadSet: the messenger's connection threads
// (MessengerOptions::connection_threads), started by the acceptor and
// joined at shutdown.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "rpc/sockaddr.h"

namespace crossfree::rpc {

class ConnectionThread;
class Messenger;

// Owner: the Messenger. Threads: Start from the acceptor; BeginShutdown,
// WaitIdle, CancelCalls and Shutdown from Messenger::Shutdown; OnThreadExit
// from each connection thread at its end. Everything under mu_.
// Bounds: the acceptor counts each connection against max_connections
// before Start (Messenger::TryAddServerConnection); the count drops when
// its thread ends. An ended thread is joined (and its object deleted) by
// the next thread that ends, or by Shutdown: at most one ended thread
// waits to be joined, so threads <= max_connections + 1.
class ConnectionThreadSet {
 public:
  explicit ConnectionThreadSet(Messenger* messenger) : messenger_(messenger) {}
  ~ConnectionThreadSet() { Shutdown(); }
  ConnectionThreadSet(const ConnectionThreadSet&) = delete;
  ConnectionThreadSet& operator=(const ConnectionThreadSet&) = delete;

  // Acceptor thread: serves the accepted, counted, blocking socket `fd` on
  // a new thread. If no thread can be started (or the set is stopping),
  // closes fd and counts the connection out.
  void Start(int fd, const Sockaddr& remote);
  // Stops reading: every thread stops after its current call, idle ones at
  // once (their sockets are shut down for reading). Idempotent.
  void BeginShutdown();
  // Until every thread has ended, at most until `deadline`; true if so.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  // The shutdown grace period is over: calls being handled read as
  // cancelled.
  void CancelCalls();
  // BeginShutdown, waits for every thread to end (at most
  // kEndByThemselves, then their sockets are shut down both ways, failing
  // any send still going on; a handler still running is waited for,
  // however long it takes) and joins them. Idempotent.
  void Shutdown();

  // A connection thread, last thing: closes its socket, counts it out and
  // joins the thread that ended before it.
  void OnThreadExit(ConnectionThread* t);
  // Threads running (for tests).
  int running() const;

 private:
  static constexpr std::chrono::milliseconds kEndByThemselves{1000};

  Messenger* const messenger_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // live_ became empty
  std::vector<ConnectionThread*> live_;
  ConnectionThread* last_exited_ = nullptr;  // ended, not joined yet
  bool stopping_ = false;
  uint64_t next_index_ = 0;  // thread names
};

}  // namespace crossfree::rpc
