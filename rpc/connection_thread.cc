// SPDX-License-Identifier: Apache-2.0
// ConnectionThread implementation: the blocking recv / handle / send loop.
#include "rpc/connection_thread.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>

#include "rpc/connection_thread_set.h"
#include "rpc/inbound_call.h"
#include "rpc/logging.h"
#include "rpc/messenger.h"
#include "rpc/notification.h"
#include "rpc/socket_io.h"
#include "rpc/transfer.h"

namespace crossfree::rpc {

ConnectionThread::ConnectionThread(ConnectionThreadSet* set, Messenger* messenger, int fd,
                                   const Sockaddr& remote, std::string name)
    : set_(set), messenger_(messenger), fd_(fd), remote_(remote), name_(std::move(name)) {}

ConnectionThread::~ConnectionThread() {
  if (fd_ >= 0) ::close(fd_);  // never started
}

bool ConnectionThread::Start(int* err) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStackBytes);
  *err = pthread_create(&thread_, &attr, &ConnectionThread::ThreadMain, this);
  pthread_attr_destroy(&attr);
  started_ = *err == 0;
  return started_;
}

void* ConnectionThread::ThreadMain(void* self) {
  static_cast<ConnectionThread*>(self)->Run();
  return nullptr;
}

void ConnectionThread::Join() {
  if (started_) pthread_join(thread_, nullptr);
  started_ = false;
}

bool ConnectionThread::closed() const {
  if (closed_.load(std::memory_order_relaxed)) return true;
  pollfd p{fd_, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
    closed_.store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void ConnectionThread::ShutdownSocket(int how) {
  if (fd_ >= 0) ::shutdown(fd_, how);
}

void ConnectionThread::CloseSocket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void ConnectionThread::ResponseReady() { ready_->Notify(); }

void ConnectionThread::RecycleInboundTransfer(std::unique_ptr<InboundTransfer> t) {
  if (t->buffer_capacity() > kMaxKeptBufferBytes) return;  // freed here, where it grew
  t->Reset();
  inbound_ = std::move(t);
}

void ConnectionThread::Run() {
  SetCurrentThreadName(name_);
  Status why = Serve();
  if (bad_data_) {
    Log(LogLevel::kWarning, "closing connection from " + remote_.ToString() +
                                ": received bad data: " + why.ToString());
  } else if (!stopping()) {
    Log(LogLevel::kInfo, "closing connection from " + remote_.ToString() + ": " + why.ToString());
  }
  // Made on this thread, freed on it.
  call_.reset();
  inbound_.reset();
  read_buf_.reset();
  set_->OnThreadExit(this);  // last: may be joined and deleted from here on
}

Status ConnectionThread::Serve() {
  const MessengerOptions& o = messenger_->options();
  // Once per connection: recv() then waits at most one slice, so the
  // timeouts below need no clock read per call and no extra system call.
  const timeval slice{0, kSliceMs * 1000};
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof(slice)) != 0) {
    return Status::NetworkError("setsockopt(SO_RCVTIMEO) failed", errno);
  }
  read_buf_.reset(new uint8_t[kReadBufferSize]);
  call_ = std::make_unique<InboundCall>(this);
  size_t pos = 0;
  size_t len = 0;
  int quiet_ms = 0;  // silence of the peer, counted in slices
  for (;;) {
    // Frames already read first (a client may send several at once; they
    // are answered one after the other).
    while (pos < len) {
      if (!conn_header_.complete()) {
        size_t used = 0;
        Status s = conn_header_.Consume(read_buf_.get() + pos, len - pos, &used);
        pos += used;
        if (!s.ok()) return BadData(s);
        continue;
      }
      if (inbound_ == nullptr) {
        inbound_.reset(new InboundTransfer(o.max_message_size, messenger_->buffer_budget()));
      }
      size_t used = 0;
      Status s = inbound_->Consume(read_buf_.get() + pos, len - pos, &used);
      pos += used;
      if (!s.ok()) return BadData(s);
      if (inbound_->blocked_on_memory()) {
        CROSSFREE_RETURN_NOT_OK(WaitForBudget(&quiet_ms));
        continue;
      }
      if (inbound_->complete()) CROSSFREE_RETURN_NOT_OK(HandleFrame());
    }
    // A large body is read straight into its buffer, as a reactor does:
    // no copy, and the buffer grows by what arrives.
    uint8_t* dst = read_buf_.get();
    size_t room = kReadBufferSize;
    const bool direct = inbound_ != nullptr && inbound_->body_remaining() >= kReadBufferSize;
    if (direct) {
      room = inbound_->PrepareDirectRead(kReadBufferSize, &dst);
      if (room == 0) {
        CROSSFREE_RETURN_NOT_OK(WaitForBudget(&quiet_ms));
        continue;
      }
    }
    // Stopping: only what has arrived already (answered "shutting down" by
    // the pools), never a wait.
    ssize_t n = SocketRecv(fd_, dst, room, stopping() ? MSG_DONTWAIT : 0);
    if (n > 0) {
      quiet_ms = 0;
      if (direct) {
        inbound_->BodyAdvance(static_cast<size_t>(n));
        if (inbound_->complete()) CROSSFREE_RETURN_NOT_OK(HandleFrame());
      } else {
        pos = 0;
        len = static_cast<size_t>(n);
      }
      continue;
    }
    if (n == 0) {
      // The client closed, or the messenger's shutdown did (SHUT_RD).
      return Status::NetworkError("recv got EOF from " + remote_.ToString(), ESHUTDOWN);
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::NetworkError("recv error from " + remote_.ToString(), errno);
    }
    // A slice passed without a byte.
    if (stopping()) return Status::ServiceUnavailable("server shutting down");
    quiet_ms += kSliceMs;
    const bool mid_frame = !conn_header_.complete() ||
                           (inbound_ != nullptr && inbound_->started());
    if (mid_frame) {
      if (o.frame_timeout_ms > 0 && quiet_ms >= o.frame_timeout_ms) {
        return Status::TimedOut(
            std::string(!conn_header_.complete() ? "the connection header"
                                                                  : "a frame") +
            " from " + remote_.ToString() + " made no progress for " + std::to_string(quiet_ms) +
            " ms (frame timeout " + std::to_string(o.frame_timeout_ms) + " ms)");
      }
    } else if (o.idle_timeout_ms > 0 && quiet_ms >= o.idle_timeout_ms) {
      return Status::TimedOut("connection from " + remote_.ToString() + " was idle for " +
                              std::to_string(quiet_ms) + " ms (idle timeout " +
                              std::to_string(o.idle_timeout_ms) + " ms)");
    }
  }
}

Status ConnectionThread::WaitForBudget(int* quiet_ms) {
  // As a reactor connection does (its tick checks every 100 ms); the frame
  // timeout runs meanwhile.
  if (stopping()) return Status::ServiceUnavailable("server shutting down");
  ::poll(nullptr, 0, kSliceMs);
  *quiet_ms += kSliceMs;
  const int frame_timeout_ms = messenger_->options().frame_timeout_ms;
  if (frame_timeout_ms > 0 && *quiet_ms >= frame_timeout_ms) {
    return Status::TimedOut("a frame from " + remote_.ToString() + " made no progress for " +
                            std::to_string(*quiet_ms) +
                            " ms (frame timeout, waiting for buffer memory)");
  }
  return Status::OK();
}

Status ConnectionThread::HandleFrame() {
  InboundCall* call = call_.get();
  call->Reuse(std::move(inbound_));
  Status s = call->Parse();
  if (!s.ok()) {
    call->Recycle();
    messenger_->CountInboundCallReleased();
    return BadData(s);
  }
  // Inline handlers respond before HandleInboundCallHere returns (Wait is a
  // load then); a deferred one responds from the deferred pool, which the
  // messenger's shutdown drains, so this wait ends.
  Notification ready;
  ready_ = &ready;
  messenger_->HandleInboundCallHere(call, &last_pool_);
  ready.Wait();
  s = WriteResponse(call->response_transfer());
  call->Recycle();  // gives the frame's transfer back (RecycleInboundTransfer)
  messenger_->CountInboundCallReleased();
  return s;
}

Status ConnectionThread::WriteResponse(OutboundTransfer* t) {
  const int frame_timeout_ms = messenger_->options().frame_timeout_ms;
  int stalled_ms = 0;
  for (;;) {
    // Non-blocking send (MSG_DONTWAIT): a small response fits the socket
    // buffer and goes in one call; a full buffer (the client is not
    // reading) is waited for below in slices, so a stop request or the
    // frame timeout ends the wait.
    Status s = t->Write(fd_);
    if (!s.ok()) return s.CloneAndPrepend("error sending to " + remote_.ToString());
    if (t->done()) return Status::OK();
    pollfd p{fd_, POLLOUT, 0};
    int n = ::poll(&p, 1, kSliceMs);
    if (n < 0 && errno != EINTR) {
      return Status::NetworkError("poll on connection from " + remote_.ToString(), errno);
    }
    if (n > 0) {
      stalled_ms = 0;  // room (or an error, which the next write reports)
      continue;
    }
    if (stopping()) {
      return Status::ServiceUnavailable("server shutting down; " + remote_.ToString() +
                                        " does not read its response");
    }
    stalled_ms += kSliceMs;
    if (frame_timeout_ms > 0 && stalled_ms >= frame_timeout_ms) {
      return Status::TimedOut(remote_.ToString() + " read nothing of its response for " +
                              std::to_string(stalled_ms) + " ms (frame timeout)");
    }
  }
}

}  // namespace crossfree::rpc
