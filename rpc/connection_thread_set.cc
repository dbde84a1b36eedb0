// SPDX-License-Identifier: Apache-2.0
// ConnectionThreadSet implementation.
#include "rpc/connection_thread_set.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "rpc/connection_thread.h"
#include "rpc/logging.h"
#include "rpc/messenger.h"

namespace crossfree::rpc {

void ConnectionThreadSet::Start(int fd, const Sockaddr& remote) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) {
    ::close(fd);
    messenger_->RemoveServerConnection();
    return;
  }
  auto* t = new ConnectionThread(this, messenger_, fd, remote,
                                 messenger_->options().connection_thread_prefix + "-" +
                                     std::to_string(next_index_++));
  t->set_index = live_.size();
  live_.push_back(t);
  // Under mu_: the thread's OnThreadExit waits for it, so it cannot end
  // before it is listed.
  int err = 0;
  if (!t->Start(&err)) {
    live_.pop_back();
    delete t;  // closes fd
    messenger_->RemoveServerConnection();
    Log(LogLevel::kWarning, "rejected connection from " + remote.ToString() + ": " +
                                Status::RuntimeError("cannot start its thread", err).ToString());
  }
}

void ConnectionThreadSet::OnThreadExit(ConnectionThread* t) {
  ConnectionThread* prev;
  {
    std::lock_guard<std::mutex> l(mu_);
    t->CloseSocket();
    ConnectionThread* last = live_.back();
    live_[t->set_index] = last;
    last->set_index = t->set_index;
    live_.pop_back();
    prev = last_exited_;
    last_exited_ = t;
    messenger_->RemoveServerConnection();
    if (live_.empty()) cv_.notify_all();
  }
  // Outside the lock: prev has ended its Run (it listed itself as exited)
  // and only returns from its thread function now.
  if (prev != nullptr) {
    prev->Join();
    delete prev;
  }
}

void ConnectionThreadSet::BeginShutdown() {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) return;
  stopping_ = true;
  for (ConnectionThread* t : live_) {
    t->RequestStop();
    t->ShutdownSocket(SHUT_RD);
  }
}

bool ConnectionThreadSet::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_until(l, deadline, [this] { return live_.empty(); });
}

void ConnectionThreadSet::CancelCalls() {
  std::lock_guard<std::mutex> l(mu_);
  for (ConnectionThread* t : live_) t->Cancel();
}

void ConnectionThreadSet::Shutdown() {
  BeginShutdown();
  ConnectionThread* last;
  {
    std::unique_lock<std::mutex> l(mu_);
    // Threads end by themselves once their call is answered (a stuck send
    // gives up within a slice of the stop request): wait a little for the
    // responses of cancelled calls to go out, then shut the sockets down
    // both ways, which fails whatever send is still going on.
    if (!cv_.wait_for(l, kEndByThemselves, [this] { return live_.empty(); })) {
      for (ConnectionThread* t : live_) t->ShutdownSocket(SHUT_RDWR);
    }
    cv_.wait(l, [this] { return live_.empty(); });
    last = last_exited_;
    last_exited_ = nullptr;
  }
  // Each ended thread joined the one before it: joining the last joins all.
  if (last != nullptr) {
    last->Join();
    delete last;
  }
}

int ConnectionThreadSet::running() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(live_.size());
}

}  // namespace crossfree::rpc
