// SPDX-License-Identifier: Apache-2.0
// Connection implementation: reading frames, writing transfers, matching
// responses to calls, and closing on any protocol violation.
#include "rpc/connection.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cassert>
#include <cstring>

#include "rpc/acceptor.h"
#include "rpc/inbound_call.h"
#include "rpc/logging.h"
#include "rpc/messenger.h"
#include "rpc/outbound_call.h"
#include "rpc/reactor.h"

namespace crossfree::rpc {

namespace {

// The connection header transfer needs no completion handling.
class NoopCallbacks final : public TransferCallbacks {
 public:
  void NotifyTransferFinished() override {}
  void NotifyTransferAborted(const Status&) override {}
};
NoopCallbacks g_noop_callbacks;

// Keeps a connection alive while one of its handlers runs, because a handler
// may close it (and a closed connection may lose its last reference).
class ScopedRef {
 public:
  explicit ScopedRef(Connection* c) : c_(c) { c_->AddRef(); }
  ~ScopedRef() { c_->Release(); }

 private:
  Connection* c_;
};

}  // namespace

Connection::Connection(Reactor* reactor, Direction direction, int fd, const sockaddr_in& remote)
    : reactor_(reactor), direction_(direction), fd_(fd), remote_(remote) {
  read_buf_.reset(new uint8_t[kReadBufferSize]);
  spare_transfers_.reserve(kMaxPooledTransfers);
  if (direction_ == Direction::kServer) spare_calls_.reserve(kMaxPooledCalls);
  ev_io_init(&read_watcher_, &Connection::ReadCallback, fd_, EV_READ);
  read_watcher_.data = this;
  ev_io_init(&write_watcher_, &Connection::WriteCallback, fd_, EV_WRITE);
  write_watcher_.data = this;
}

Connection::~Connection() {
  FreeSpareCalls();
  if (fd_ >= 0) ::close(fd_);
}

void Connection::FreeSpareCalls() {
  for (InboundCall* c : spare_calls_) delete c;
  spare_calls_.clear();
}

bool Connection::TakeBackInboundCall(InboundCall* call) {
  assert(reactor_->IsCurrentThread());
  if (shut_down_ || spare_calls_.size() >= kMaxPooledCalls) return false;
  // Push before Recycle: Recycle drops the call's reference, which may be
  // the last one and delete this connection (and its pool) with it.
  spare_calls_.push_back(call);
  if (!call->Recycle()) {
    spare_calls_.pop_back();
    return false;
  }
  return true;
}

std::string Connection::RemoteToString() const { return AddressToString(remote_); }

void Connection::RecycleInboundTransfer(std::unique_ptr<InboundTransfer> t) {
  assert(reactor_->IsCurrentThread());
  if (shut_down_ || spare_transfers_.size() >= kMaxPooledTransfers ||
      t->buffer_capacity() > kMaxPooledBufferBytes ||
      spare_transfer_bytes_ + t->buffer_capacity() > kMaxPooledBufferTotal) {
    return;  // freed here, on the reactor that made it
  }
  t->Reset();
  spare_transfer_bytes_ += t->buffer_capacity();
  spare_transfers_.push_back(std::move(t));
}

void Connection::Start(bool connecting) {
  connecting_ = connecting;
  ev_io_start(reactor_->loop(), &read_watcher_);
  if (direction_ == Direction::kClient) {
    WriteConnHeader(conn_header_);
    conn_header_transfer_.Reset();
    conn_header_transfer_.AddSlice(conn_header_, kConnHeaderLength);
    conn_header_transfer_.set_callbacks(&g_noop_callbacks);
    EnqueueTransfer(&conn_header_transfer_);
  }
}

void Connection::ReadCallback(struct ev_loop*, ev_io* w, int) {
  static_cast<Connection*>(w->data)->HandleReadable();
}

void Connection::WriteCallback(struct ev_loop*, ev_io* w, int) {
  static_cast<Connection*>(w->data)->HandleWritable();
}

void Connection::EnqueueTransfer(OutboundTransfer* t) {
  t->next_in_queue = nullptr;
  if (out_tail_ == nullptr) {
    out_head_ = out_tail_ = t;
  } else {
    out_tail_->next_in_queue = t;
    out_tail_ = t;
  }
  if (connecting_) {
    if (!write_watcher_active_) {
      ev_io_start(reactor_->loop(), &write_watcher_);
      write_watcher_active_ = true;
    }
    return;
  }
  // Send at once when the queue was idle; otherwise the write watcher is on.
  if (out_head_ == t) {
    ScopedRef ref(this);
    WriteQueued();
  }
}

void Connection::WriteQueued() {
  while (out_head_ != nullptr && !shut_down_) {
    OutboundTransfer* t = out_head_;
    Status s = t->Write(fd_);
    if (!s.ok()) {
      reactor_->DestroyConnection(this, s.CloneAndPrepend("error sending to " + RemoteToString()));
      return;
    }
    if (!t->done()) {
      if (!write_watcher_active_) {
        ev_io_start(reactor_->loop(), &write_watcher_);
        write_watcher_active_ = true;
      }
      return;
    }
    out_head_ = t->next_in_queue;
    if (out_head_ == nullptr) out_tail_ = nullptr;
    t->next_in_queue = nullptr;
    t->callbacks()->NotifyTransferFinished();
  }
  if (write_watcher_active_ && !shut_down_) {
    ev_io_stop(reactor_->loop(), &write_watcher_);
    write_watcher_active_ = false;
  }
}

void Connection::HandleWritable() {
  ScopedRef ref(this);
  if (connecting_) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      reactor_->DestroyConnection(
          this, Status::NetworkError("connect to " + RemoteToString() + " failed", err));
      return;
    }
    connecting_ = false;
  }
  WriteQueued();
}

void Connection::HandleReadable() {
  ScopedRef ref(this);
  const size_t max_size = reactor_->messenger()->max_message_size();
  while (!shut_down_) {
    if (read_pos_ == read_len_) {
      // A large body is read straight into its buffer, skipping the copy.
      if (inbound_ != nullptr && inbound_->body_remaining() >= kReadBufferSize) {
        ssize_t n = ::read(fd_, inbound_->body_write_ptr(), inbound_->body_remaining());
        if (n > 0) {
          inbound_->BodyAdvance(static_cast<size_t>(n));
          if (inbound_->complete() && !HandleFrame(std::move(inbound_))) return;
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n < 0 && errno == EINTR) continue;
        int err = n == 0 ? ESHUTDOWN : errno;
        reactor_->DestroyConnection(
            this, Status::NetworkError(n == 0 ? "recv got EOF from " + RemoteToString()
                                              : "recv error from " + RemoteToString(),
                                       err));
        return;
      }
      ssize_t n = ::read(fd_, read_buf_.get(), kReadBufferSize);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR) continue;
        int err = errno;
        reactor_->DestroyConnection(
            this, Status::NetworkError("recv error from " + RemoteToString(), err));
        return;
      }
      if (n == 0) {
        reactor_->DestroyConnection(
            this, Status::NetworkError("recv got EOF from " + RemoteToString(), ESHUTDOWN));
        return;
      }
      read_pos_ = 0;
      read_len_ = static_cast<size_t>(n);
    }
    if (direction_ == Direction::kServer && conn_header_received_ < kConnHeaderLength) {
      size_t n = std::min(kConnHeaderLength - conn_header_received_, read_len_ - read_pos_);
      memcpy(conn_header_ + conn_header_received_, read_buf_.get() + read_pos_, n);
      conn_header_received_ += n;
      read_pos_ += n;
      if (conn_header_received_ == kConnHeaderLength) {
        Status s = ValidateConnHeader(conn_header_);
        if (!s.ok()) {
          FailWithBadData(s);
          return;
        }
      }
      continue;
    }
    if (inbound_ == nullptr) {
      if (!spare_transfers_.empty()) {
        inbound_ = std::move(spare_transfers_.back());
        spare_transfers_.pop_back();
        spare_transfer_bytes_ -= inbound_->buffer_capacity();
      } else {
        inbound_.reset(new InboundTransfer(max_size));
      }
    }
    size_t used = 0;
    Status s = inbound_->Consume(read_buf_.get() + read_pos_, read_len_ - read_pos_, &used);
    read_pos_ += used;
    if (!s.ok()) {
      FailWithBadData(s);
      return;
    }
    if (inbound_->complete() && !HandleFrame(std::move(inbound_))) return;
  }
}

void Connection::FailWithBadData(const Status& s) {
  Log(LogLevel::kWarning, "closing connection " +
                              std::string(direction_ == Direction::kServer ? "from " : "to ") +
                              RemoteToString() + ": received bad data: " + s.ToString());
  reactor_->DestroyConnection(this, s);
}

bool Connection::HandleFrame(std::unique_ptr<InboundTransfer> transfer) {
  if (direction_ == Direction::kServer) return HandleInboundCall(std::move(transfer));
  return HandleCallResponse(std::move(transfer));
}

bool Connection::HandleInboundCall(std::unique_ptr<InboundTransfer> transfer) {
  InboundCall* call;
  if (!spare_calls_.empty()) {
    call = spare_calls_.back();
    spare_calls_.pop_back();
    call->Reuse(std::move(transfer));
  } else {
    call = new InboundCall(this, std::move(transfer));
  }
  Status s = call->Parse();
  if (!s.ok()) {
    InboundCall::Destroy(call);
    FailWithBadData(s);
    return false;
  }
  if (!calls_being_handled_.Insert(call->call_id(), call)) {
    int32_t id = call->call_id();
    InboundCall::Destroy(call);
    FailWithBadData(Status::InvalidArgument("duplicate call id " + std::to_string(id) +
                                            " while that call is still in flight"));
    return false;
  }
  reactor_->messenger()->QueueInboundCall(call);
  return !shut_down_;
}

bool Connection::HandleCallResponse(std::unique_ptr<InboundTransfer> transfer) {
  CallResponse resp;
  std::string_view body;
  Status s = ParseFrame(transfer->frame(), &resp.header, &body);
  if (!s.ok()) {
    FailWithBadData(s.CloneAndPrepend("invalid RPC response"));
    return false;
  }
  s = SplitSidecars(body, resp.header.sidecar_offsets(), &resp.body_pb, &resp.sidecars,
                    kMaxSidecars);
  if (!s.ok()) {
    FailWithBadData(s.CloneAndPrepend("invalid RPC response"));
    return false;
  }
  OutboundCall* call = awaiting_response_.Find(resp.header.call_id());
  if (call == nullptr) {
    // A call that timed out or was cancelled: its late response is dropped.
    Log(LogLevel::kInfo, "ignoring response for unknown call id " +
                             std::to_string(resp.header.call_id()) + " from " + RemoteToString());
    return true;
  }
  if (call->state() != OutboundCall::State::kSent) {
    FailWithBadData(Status::Corruption("response for call id " +
                                       std::to_string(resp.header.call_id()) +
                                       " arrived before its request was fully sent"));
    return false;
  }
  awaiting_response_.Erase(call->call_id());
  call->in_awaiting_map = false;
  call->StopTimer();
  resp.transfer = std::move(transfer);
  call->HandleResponse(&resp, this);
  return !shut_down_;
}

void Connection::QueueOutboundCall(OutboundCall* call) {
  assert(reactor_->IsCurrentThread());
  if (shut_down_) {
    call->Finish(OutboundCall::State::kFinishedError,
                 Status::NetworkError("connection to " + RemoteToString() + " is closed"));
    return;
  }
  if (call->has_deadline() && std::chrono::steady_clock::now() >= call->deadline()) {
    call->Finish(OutboundCall::State::kTimedOut,
                 Status::TimedOut(call->method()->method_name + " RPC to " + RemoteToString() +
                                  " timed out before it was sent"));
    return;
  }
  int32_t id = next_call_id_;
  next_call_id_ = next_call_id_ == INT32_MAX ? 0 : next_call_id_ + 1;
  call->SerializeHeader(id, &scratch_request_header_);
  awaiting_response_.Erase(id);  // a stale entry after call id wrap-around
  awaiting_response_.Insert(id, call);
  call->in_awaiting_map = true;
  call->set_state(OutboundCall::State::kOnOutboundQueue);
  call->ArmTimer(reactor_->loop(), this);
  EnqueueTransfer(call->transfer());
}

void Connection::AbandonCall(OutboundCall* call, const Status& status) {
  assert(reactor_->IsCurrentThread());
  OutboundCall::State st =
      status.IsTimedOut() ? OutboundCall::State::kTimedOut : OutboundCall::State::kCancelled;
  if (call->in_awaiting_map) {
    awaiting_response_.Erase(call->call_id());
    call->in_awaiting_map = false;
  }
  call->StopTimer();
  if (call->state() == OutboundCall::State::kOnOutboundQueue) {
    OutboundTransfer* t = call->transfer();
    if (t->started()) {
      // Part of the frame is on the wire: the rest must follow, or the stream
      // breaks. The call finishes when the transfer does.
      call->set_state(OutboundCall::State::kSending);
      call->set_deferred_status(st, status);
      return;
    }
    // Unlink it from the queue.
    OutboundTransfer* prev = nullptr;
    for (OutboundTransfer* cur = out_head_; cur != nullptr; cur = cur->next_in_queue) {
      if (cur == t) {
        if (prev == nullptr) {
          out_head_ = cur->next_in_queue;
        } else {
          prev->next_in_queue = cur->next_in_queue;
        }
        if (out_tail_ == cur) out_tail_ = prev;
        cur->next_in_queue = nullptr;
        break;
      }
      prev = cur;
    }
  }
  call->Finish(st, status);
}

void Connection::QueueResponseForCall(InboundCall* call) {
  assert(reactor_->IsCurrentThread());
  calls_being_handled_.Erase(call->call_id());
  if (shut_down_) {
    delete call;  // no pool once shut down
    return;
  }
  EnqueueTransfer(call->response_transfer());
}

void Connection::Shutdown(const Status& why) {
  if (shut_down_) return;
  shut_down_ = true;
  ev_io_stop(reactor_->loop(), &read_watcher_);
  if (write_watcher_active_) {
    ev_io_stop(reactor_->loop(), &write_watcher_);
    write_watcher_active_ = false;
  }
  ::close(fd_);
  fd_ = -1;
  inbound_.reset();
  spare_transfers_.clear();
  spare_transfer_bytes_ = 0;
  FreeSpareCalls();
  OutboundTransfer* t = out_head_;
  out_head_ = out_tail_ = nullptr;
  while (t != nullptr) {
    OutboundTransfer* next = t->next_in_queue;
    t->next_in_queue = nullptr;
    t->callbacks()->NotifyTransferAborted(why);
    t = next;
  }
  if (direction_ == Direction::kClient) {
    // Finishing a call runs its callback, which may touch this connection:
    // take the calls out of the map first.
    CallIdMap<OutboundCall> waiting;
    waiting.Swap(awaiting_response_);
    waiting.ForEach([&why](int32_t, OutboundCall* call) {
      call->in_awaiting_map = false;
      call->StopTimer();
      call->Finish(OutboundCall::State::kFinishedError, why);
    });
  }
  // Server calls still at the workers find shut_down_ when they respond.
}

}  // namespace crossfree::rpc
