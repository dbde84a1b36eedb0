// SPDX-License-Identifier: Apache-2.0
// Connection implementation: reading frames, writing transfers, matching
// responses to calls, and closing on any protocol violation.
#include "rpc/connection.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "rpc/alloc_pattern.h"
#include "rpc/dcheck.h"
#include "rpc/inbound_call.h"
#include "rpc/logging.h"
#include "rpc/memory_budget.h"
#include "rpc/messenger.h"
#include "rpc/notification.h"
#include "rpc/outbound_call.h"
#include "rpc/reactor.h"
#include "rpc/socket_io.h"

namespace crossfree::rpc {

namespace {

// The connection header transfer needs no completion handling.
class NoopCallbacks final : public TransferCallbacks {
 public:
  void NotifyTransferFinished() override {}
  void NotifyTransferAborted(const Status&) override {}
};
NoopCallbacks g_noop_callbacks;

// A response frame's header, body and sidecars (views into `frame`), for
// whichever thread owns the read side: the reactor or a reading caller.
Status ParseCallResponse(std::string_view frame, CallResponse* resp) {
  std::string_view body;
  Status s = ParseFrame(frame, &resp->header, &body);
  if (s.ok()) {
    s = SplitSidecars(body, resp->header.sidecar_offsets, &resp->body_pb, &resp->sidecars,
                      kMaxSidecars);
  }
  return s.ok() ? s : s.CloneAndPrepend("invalid RPC response");
}

}  // namespace

Connection::Connection(Reactor* reactor, Direction direction, int fd, const Sockaddr& remote)
    : reactor_(reactor),
      direction_(direction),
      fd_(fd),
      remote_(remote),
      budget_(direction == Direction::kServer ? reactor->messenger()->buffer_budget() : nullptr),
      max_calls_in_flight_(reactor->messenger()->options().max_calls_in_flight_per_connection),
      max_out_bytes_(reactor->messenger()->options().max_queued_response_bytes_per_connection),
      frame_timeout_s_(reactor->messenger()->options().frame_timeout_ms / 1000.0),
      idle_timeout_s_(reactor->messenger()->options().idle_timeout_ms / 1000.0),
      pool_limit_(direction == Direction::kServer
                      ? std::clamp<size_t>(max_calls_in_flight_ > 0
                                               ? static_cast<size_t>(max_calls_in_flight_)
                                               : kMaxPooledCallsCap,
                                           kMaxPooledCalls, kMaxPooledCallsCap)
                      : kMaxPooledTransfers),
      call_pool_(direction == Direction::kServer ? pool_limit_ : 0),
      lend_reads_(direction == Direction::kClient &&
                  reactor->messenger()->options().caller_reads_sync_responses &&
                  DirectWrites()) {
  read_buf_.reset(new uint8_t[kReadBufferSize]);
  spare_transfers_.reserve(pool_limit_);
  ev_io_init(&read_watcher_, &Connection::ReadCallback, fd_, EV_READ);
  read_watcher_.data = this;
  ev_io_init(&write_watcher_, &Connection::WriteCallback, fd_, EV_WRITE);
  write_watcher_.data = this;
}

Connection::~Connection() {
  call_pool_.Clear();
  SyncOutCharge();
  if (fd_ >= 0) ::close(fd_);
  if (close_on_return_fd_ >= 0) ::close(close_on_return_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Connection::RecycleInboundTransfer(std::unique_ptr<InboundTransfer> t) {
  // closed() rather than shut_down_: a caller that owns the read side may
  // be here while the reactor shuts the connection down.
  if (closed() || spare_transfers_.size() >= pool_limit_ ||
      t->buffer_capacity() > kMaxPooledBufferBytes ||
      spare_transfer_bytes_ + t->buffer_capacity() > kMaxPooledBufferTotal) {
    return;  // freed here, on the reactor that made it
  }
  t->Reset();
  spare_transfer_bytes_ += t->buffer_capacity();
  spare_transfers_.push_back(std::move(t));
}

void Connection::Start(bool connecting) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  {
    std::lock_guard<FutexMutex> l(mu_);
    connecting_ = connecting;
  }
  last_progress_ = last_activity_ = ev_now(reactor_->loop());
  ev_io_start(reactor_->loop(), &read_watcher_);
  if (!connecting) MakeReadsBlocking();
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
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  t->next_in_queue = nullptr;
  out_bytes_ += t->total_bytes();
  std::unique_lock<FutexMutex> l(mu_);
  if (out_tail_ == nullptr) {
    out_head_ = out_tail_ = t;
  } else {
    out_tail_->next_in_queue = t;
    out_tail_ = t;
  }
  if (connecting_) {
    l.unlock();
    if (!write_watcher_active_) {
      ev_io_start(reactor_->loop(), &write_watcher_);
      write_watcher_active_ = true;
    }
    return;
  }
  // Send at once when the queue was idle (still holding mu_: the write is
  // the same critical section as the link); otherwise the write watcher is on.
  if (out_head_ == t) {
    ConnectionRef ref(this);
    WriteQueued(std::move(l));
  } else {
    l.unlock();
    UpdateBackPressure();
    SyncOutCharge();
  }
}

void Connection::WriteQueued(std::unique_lock<FutexMutex> l) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  CROSSFREE_DCHECK(!l.owns_lock() || l.mutex() == &mu_);
  while (!shut_down_) {
    if (!l.owns_lock()) {
      // Only this thread changes the queue links (under mu_, which direct
      // writers take to read them), so an empty queue needs no lock to see.
      if (out_head_ == nullptr) break;
      l = std::unique_lock<FutexMutex>(mu_);
    }
    OutboundTransfer* t = out_head_;
    // A direct writer's partial frame goes first: AdoptPartialWrite, a task
    // already queued, puts it at the head and comes back here.
    if (t == nullptr || direct_partial_ != nullptr) break;
    Status s = t->Write(fd_);
    if (!s.ok()) {
      l.unlock();
      reactor_->DestroyConnection(this, s.CloneAndPrepend("error sending to " + RemoteToString()));
      return;
    }
    if (!t->done()) {
      l.unlock();
      if (!write_watcher_active_) {
        ev_io_start(reactor_->loop(), &write_watcher_);
        write_watcher_active_ = true;
      }
      // The peer is not reading fast enough: stop reading its requests
      // once too much is queued, and count what stays queued.
      UpdateBackPressure();
      SyncOutCharge();
      return;
    }
    out_head_ = t->next_in_queue;
    if (out_head_ == nullptr) out_tail_ = nullptr;
    l.unlock();
    t->next_in_queue = nullptr;
    out_bytes_ -= t->total_bytes();
    t->callbacks()->NotifyTransferFinished();
  }
  if (l.owns_lock()) l.unlock();
  if (write_watcher_active_ && !shut_down_) {
    ev_io_stop(reactor_->loop(), &write_watcher_);
    write_watcher_active_ = false;
  }
  UpdateBackPressure();
  SyncOutCharge();
}

void Connection::HandleWritable() {
  ConnectionRef ref(this);
  if (connecting_) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      reactor_->DestroyConnection(
          this, Status::NetworkError("connect to " + RemoteToString() + " failed", err));
      return;
    }
    {
      std::lock_guard<FutexMutex> l(mu_);
      connecting_ = false;
    }
    MakeReadsBlocking();
  }
  WriteQueued();
}

bool Connection::TryWriteResponseDirect(InboundCall* call) {
  CROSSFREE_DCHECK(!reactor_->IsCurrentThread());
  OutboundTransfer* t = call->response_transfer();
  bool adopt = false;
  bool wake = false;
  {
    std::lock_guard<FutexMutex> l(mu_);
    if (fd_ < 0 || connecting_ || out_head_ != nullptr || direct_partial_ != nullptr) return false;
    Status s = t->Write(fd_);
    // Nothing written (EAGAIN, or an error the reactor will meet too): the
    // ordinary path takes it.
    if (!t->started()) return false;
    if (!t->done()) {
      direct_partial_ = t;
      direct_partial_call_ = call;
      adopt = true;
    } else {
      call->next_direct_done = direct_done_;
      direct_done_ = call;
      has_direct_done_.store(true, std::memory_order_release);
      wake = wake_on_direct_done_ && !direct_wake_pending_;
      if (wake) direct_wake_pending_ = true;
    }
  }
  // From here on the call may be gone (the reactor ends it): only `this`.
  if (adopt) {
    reactor_->ScheduleTask([ref = ConnectionRef(this), t, call](const Status& st) {
      // Not run: the connection's Shutdown aborts the partial transfer.
      if (st.ok()) ref->AdoptPartialWrite(t, call);
    });
  } else if (wake) {
    reactor_->ScheduleTask([ref = ConnectionRef(this)](const Status& st) {
      if (st.ok()) ref->ReleaseDirectlyAnswered();
    });
  }
  return true;
}

bool Connection::TrySendCallDirect(OutboundCall* call, bool* caller_reads) {
  CROSSFREE_DCHECK(!reactor_->IsCurrentThread());
  OutboundTransfer* t = call->transfer();
  bool unpark = false;
  {
    std::lock_guard<FutexMutex> l(mu_);
    if (fd_ < 0 || connecting_ || out_head_ != nullptr || direct_partial_ != nullptr) return false;
    const int32_t id = next_call_id_;
    call->SerializeHeader(id);
    Status s = t->Write(fd_);
    if (!t->started()) {
      // Nothing on the wire: leave it to the reactor (which serializes the
      // header again). The header buffer, if any, was made on this thread.
      call->NotifyTransferAborted(s);
      return false;
    }
    next_call_id_ = next_call_id_ == INT32_MAX ? 0 : next_call_id_ + 1;
    // Registered before the lock drops, so the reactor (which looks responses
    // up under mu_) always finds the call.
    awaiting_response_.Erase(id);  // a stale entry after call id wrap-around
    awaiting_response_.Insert(id, call);
    call->in_awaiting_map = true;
    call->SetDirectConnection(this);
    if (read_side_ == ReadSide::kParked) {
      // Parked means no other call is outstanding: this caller may read its
      // response itself, if it wants to and its request is all out;
      // otherwise the reactor must read it.
      if (caller_reads != nullptr && t->done() && awaiting_response_.size() == 1) {
        read_side_ = ReadSide::kCaller;
        reader_call_ = call;
        ++lent_takes_;
        // What ReadOwnResponse needs, taken under this lock so that it does
        // not lock again (see reader_fd_).
        reader_fd_ = fd_;
        reader_wake_fd_ = wake_fd_;
        reader_blocks_ = reads_block_;
        *caller_reads = true;
      } else {
        read_side_ = ReadSide::kReactor;
        unpark = t->done();  // else the AdoptPartialWrite task below resumes reading
      }
    }
    if (t->done()) {
      call->NotifyTransferFinished();  // kSent
    } else {
      call->set_state(OutboundCall::State::kOnOutboundQueue);
      direct_partial_ = t;
    }
  }
  if (t->done()) {
    if (unpark) {
      reactor_->ScheduleTask([ref = ConnectionRef(this)](const Status& st) {
        if (st.ok()) ref->ResumeLentReads();
      });
    }
    return true;
  }
  reactor_->ScheduleTask([ref = ConnectionRef(this), t](const Status& st) {
    // Not run: the connection's Shutdown fails the call from its map.
    if (st.ok()) ref->AdoptPartialWrite(t, nullptr);
  });
  return true;
}

void Connection::AdoptPartialWrite(OutboundTransfer* t, InboundCall* call) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  {
    std::lock_guard<FutexMutex> l(mu_);
    if (direct_partial_ != t) return;  // Shutdown aborted it already
    direct_partial_ = nullptr;
    direct_partial_call_ = nullptr;
    t->next_in_queue = out_head_;
    out_head_ = t;
    if (out_tail_ == nullptr) out_tail_ = t;
  }
  out_bytes_ += t->total_bytes();
  if (call != nullptr) calls_being_handled_.Erase(call->call_id());
  ConnectionRef ref(this);
  WriteQueued();
  // A client request a caller sent while the read side was parked: the
  // caller handed it to us (TrySendCallDirect); read the response.
  if (direction_ == Direction::kClient && !shut_down_) ResumeLentReads();
}

void Connection::ReleaseDirectlyAnswered() {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  // Runs before every read of a server connection: skip the lock when no
  // worker wrote a response since the last run (inline handlers, the
  // reactor path). A worker that writes one stores the flag before its
  // response reaches the client, so before the client's next request is
  // read here.
  if (!has_direct_done_.load(std::memory_order_acquire)) return;
  InboundCall* list;
  {
    std::lock_guard<FutexMutex> l(mu_);
    list = direct_done_;
    direct_done_ = nullptr;
    direct_wake_pending_ = false;
    has_direct_done_.store(false, std::memory_order_relaxed);
  }
  if (list == nullptr) return;
  ConnectionRef ref(this);  // the last call may hold the last other reference
  while (list != nullptr) {
    InboundCall* next = list->next_direct_done;
    list->next_direct_done = nullptr;
    calls_being_handled_.Erase(list->call_id());
    InboundCall::Destroy(list);
    list = next;
  }
}

void Connection::HandleReadable() {
  ConnectionRef ref(this);
  // Calls answered directly by workers end first: their ids and their
  // places in the call limit are free again before new frames are parsed.
  if (direction_ == Direction::kServer) ReleaseDirectlyAnswered();
  const size_t max_size = reactor_->messenger()->max_message_size();
  // read_paused_ is checked per frame: a pause that starts in the middle of
  // a read leaves the rest of the bytes in read_buf_ for the resume.
  // A read that returned less than it asked for emptied the socket: the next
  // one would only say EAGAIN, so stop there (libev's epoll is level
  // triggered: bytes that arrive later wake the loop again). That saves one
  // read() per frame in the ping-pong of sync calls.
  bool drained = false;
  while (!shut_down_ && read_paused_ == 0) {
    if (read_pos_ == read_len_) {
      if (drained) return;
      // A large body is read straight into its buffer, skipping the copy.
      if (inbound_ != nullptr && inbound_->body_remaining() >= kReadBufferSize) {
        uint8_t* dst = nullptr;
        size_t room = inbound_->PrepareDirectRead(kReadBufferSize, &dst);
        if (room == 0) {
          SetReadPause(read_paused_ | kPauseMemory);
          return;
        }
        ssize_t n = SocketRecv(fd_, dst, room, MSG_DONTWAIT);
        if (n > 0) {
          drained = static_cast<size_t>(n) < room;
          last_progress_ = last_activity_ = ev_now(reactor_->loop());
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
      // MSG_DONTWAIT: the socket itself may be blocking (MakeReadsBlocking).
      ssize_t n = SocketRecv(fd_, read_buf_.get(), kReadBufferSize, MSG_DONTWAIT);
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
      drained = static_cast<size_t>(n) < kReadBufferSize;
      last_progress_ = last_activity_ = ev_now(reactor_->loop());
      read_pos_ = 0;
      read_len_ = static_cast<size_t>(n);
    }
    if (direction_ == Direction::kServer && !conn_header_in_.complete()) {
      size_t used = 0;
      Status s = conn_header_in_.Consume(read_buf_.get() + read_pos_, read_len_ - read_pos_, &used);
      read_pos_ += used;
      if (!s.ok()) {
        FailWithBadData(s);
        return;
      }
      continue;
    }
    if (inbound_ == nullptr) {
      if (!spare_transfers_.empty()) {
        inbound_ = std::move(spare_transfers_.back());
        spare_transfers_.pop_back();
        spare_transfer_bytes_ -= inbound_->buffer_capacity();
      } else {
        inbound_.reset(new InboundTransfer(max_size, budget_));
      }
    }
    size_t used = 0;
    Status s = inbound_->Consume(read_buf_.get() + read_pos_, read_len_ - read_pos_, &used);
    read_pos_ += used;
    if (!s.ok()) {
      FailWithBadData(s);
      return;
    }
    if (inbound_->blocked_on_memory()) {
      // The rest stays in read_buf_; the tick resumes once the budget has room.
      SetReadPause(read_paused_ | kPauseMemory);
      return;
    }
    if (inbound_->complete() && !HandleFrame(std::move(inbound_))) return;
  }
}

void Connection::UpdateBackPressure() {
  if (direction_ != Direction::kServer || shut_down_) return;
  uint8_t want = read_paused_ & kPauseMemory;
  if (max_calls_in_flight_ > 0 && calls_in_flight_ >= max_calls_in_flight_) want |= kPauseCalls;
  if (max_out_bytes_ > 0 && out_bytes_ >= max_out_bytes_) want |= kPauseOutBytes;
  if (want != read_paused_) SetReadPause(want);
}

void Connection::SetReadPause(uint8_t reasons) {
  if (shut_down_) return;
  const uint8_t ours = kPauseCalls | kPauseOutBytes;
  if ((read_paused_ & ours) != 0 && (reasons & ours) == 0) {
    // The peer was not stalling while we refused to read: restart its clock.
    last_progress_ = ev_now(reactor_->loop());
  }
  const bool was = read_paused_ != 0;
  read_paused_ = reasons;
  if (!was && reasons != 0) {
    ev_io_stop(reactor_->loop(), &read_watcher_);
  } else if (was && reasons == 0) {
    ev_io_start(reactor_->loop(), &read_watcher_);
    // Frames may be waiting in read_buf_ already: run the read handler from
    // the loop (not from here, which may be deep inside a write or a call's
    // end).
    ev_feed_event(reactor_->loop(), &read_watcher_, EV_READ);
  }
  if (direction_ != Direction::kServer) return;
  // Paused for the call limit: only ending calls resumes reading, so calls
  // answered directly must now wake the reactor.
  const bool want_wake = (reasons & kPauseCalls) != 0;
  bool any = false;
  {
    std::lock_guard<FutexMutex> l(mu_);
    wake_on_direct_done_ = want_wake;
    any = direct_done_ != nullptr;
  }
  if (want_wake && any) ReleaseDirectlyAnswered();
}

void Connection::SyncOutCharge() {
  if (budget_ == nullptr || out_bytes_ == out_charged_) return;
  if (out_bytes_ > out_charged_) {
    budget_->ForceCharge(out_bytes_ - out_charged_);
  } else {
    budget_->Release(out_charged_ - out_bytes_);
  }
  out_charged_ = out_bytes_;
}

void Connection::OnTick(double now) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  if (shut_down_) return;
  if (direction_ == Direction::kClient) {
    if (!lend_reads_) return;
    bool unpark = false;
    {
      std::lock_guard<FutexMutex> l(mu_);
      unpark = read_side_ == ReadSide::kParked && lent_takes_ == lent_takes_seen_;
      if (unpark) read_side_ = ReadSide::kReactor;
      lent_takes_seen_ = lent_takes_;
    }
    // Idle: watch the socket again, so a server closing the connection is
    // seen now rather than by the next call.
    if (unpark) ResumeLentReads();
    return;
  }
  ConnectionRef ref(this);  // DestroyConnection below drops the reactor's
  ReleaseDirectlyAnswered();
  if (calls_in_flight_ == 0) TrimPools();
  if ((read_paused_ & kPauseMemory) != 0 && !budget_->exhausted()) {
    SetReadPause(read_paused_ & ~kPauseMemory);
  }
  if ((read_paused_ & (kPauseCalls | kPauseOutBytes)) != 0) {
    // We are not reading: that is no stall of the peer's.
    last_progress_ = now;
    return;
  }
  const bool mid_frame = !conn_header_in_.complete() ||
                         (inbound_ != nullptr && inbound_->started());
  if (mid_frame) {
    if (frame_timeout_s_ > 0 && now - last_progress_ >= frame_timeout_s_) {
      char buf[96];
      snprintf(buf, sizeof(buf), " made no progress for %.3f s (frame timeout %.3f s)",
               now - last_progress_, frame_timeout_s_);
      std::string what = !conn_header_in_.complete()
                             ? "the connection header from "
                             : "a frame from ";
      Log(LogLevel::kInfo, "closing connection from " + RemoteToString() + ": " + what +
                               RemoteToString() + buf);
      reactor_->DestroyConnection(this, Status::TimedOut(what + RemoteToString() + buf));
    }
    return;
  }
  if (calls_in_flight_ == 0 && out_head_ == nullptr && idle_timeout_s_ > 0 &&
      now - last_activity_ >= idle_timeout_s_) {
    char buf[96];
    snprintf(buf, sizeof(buf), " was idle for %.3f s (idle timeout %.3f s)",
             now - last_activity_, idle_timeout_s_);
    Log(LogLevel::kInfo, "closing connection from " + RemoteToString() + buf);
    reactor_->DestroyConnection(this,
                                Status::TimedOut("connection from " + RemoteToString() + buf));
  }
}

void Connection::TrimPools() {
  call_pool_.Trim(kMaxPooledCalls);
  while (spare_transfers_.size() > kMaxPooledTransfers) {
    spare_transfer_bytes_ -= spare_transfers_.back()->buffer_capacity();
    spare_transfers_.pop_back();
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
  InboundCall* call = call_pool_.Get(this, std::move(transfer));
  ++calls_in_flight_;
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
  UpdateBackPressure();
  reactor_->messenger()->QueueInboundCall(call, &last_service_pool_);
  return !shut_down_;
}

void Connection::ReleaseInboundCall(InboundCall* call) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  --calls_in_flight_;
  last_activity_ = ev_now(reactor_->loop());
  UpdateBackPressure();
  // Last: deleting the call may drop the last reference to this connection.
  if (shut_down_ || !call_pool_.Put(call)) delete call;
}

void Connection::CancelInboundCalls() {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  calls_being_handled_.ForEach([](int32_t, InboundCall* call) { call->Cancel(); });
}

bool Connection::HandleCallResponse(std::unique_ptr<InboundTransfer> transfer) {
  CallResponse resp;
  if (Status s = ParseCallResponse(transfer->frame(), &resp); !s.ok()) {
    FailWithBadData(s);
    return false;
  }
  OutboundCall* call;
  bool early = false;
  {
    std::lock_guard<FutexMutex> l(mu_);
    call = awaiting_response_.Find(resp.header.call_id);
    if (call != nullptr) {
      if (call->state() != OutboundCall::State::kSent) {
        early = true;
      } else {
        awaiting_response_.Erase(call->call_id());
        call->in_awaiting_map = false;
      }
    }
  }
  if (call == nullptr) {
    // A call that timed out or was cancelled: its late response is dropped.
    Log(LogLevel::kInfo, "ignoring response for unknown call id " +
                             std::to_string(resp.header.call_id) + " from " + RemoteToString());
    return true;
  }
  if (early) {
    FailWithBadData(Status::Corruption("response for call id " +
                                       std::to_string(resp.header.call_id) +
                                       " arrived before its request was fully sent"));
    return false;
  }
  call->StopTimer();
  resp.transfer = std::move(transfer);
  call->HandleResponse(&resp, this);  // may park the read side (caller_may_read)
  return !shut_down_;
}

void Connection::QueueOutboundCall(OutboundCall* call) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
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
  bool unpark = false;
  {
    std::lock_guard<FutexMutex> l(mu_);
    int32_t id = next_call_id_;
    next_call_id_ = next_call_id_ == INT32_MAX ? 0 : next_call_id_ + 1;
    call->SerializeHeader(id);
    awaiting_response_.Erase(id);  // a stale entry after call id wrap-around
    awaiting_response_.Insert(id, call);
    call->in_awaiting_map = true;
    call->set_state(OutboundCall::State::kOnOutboundQueue);
    // We will read this call's response: take a parked read side back. A
    // caller reading (kCaller) hands it back once its own response is in,
    // or as soon as this call's response reaches it first.
    if (read_side_ == ReadSide::kParked) {
      read_side_ = ReadSide::kReactor;
      unpark = true;
    }
  }
  if (unpark) ResumeLentReads();
  call->ArmTimer(reactor_->loop(), this);
  EnqueueTransfer(call->transfer());
}

void Connection::AbandonCall(OutboundCall* call, const Status& status) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  OutboundCall::State st =
      status.IsTimedOut() ? OutboundCall::State::kTimedOut : OutboundCall::State::kCancelled;
  std::unique_lock<FutexMutex> l(mu_);
  if (read_side_ == ReadSide::kCaller && reader_call_ == call) {
    // Its caller is reading the response and alone may finish the call:
    // ask it to hand the call back (HandBack::kCancelled), after which
    // ReclaimReadSide abandons it here. Only Cancel() comes here: a call
    // its caller reads has no libev timer.
    abandon_requested_ = true;
    l.unlock();
    uint64_t one = 1;
    ssize_t n = ::write(wake_fd_, &one, sizeof(one));
    (void)n;  // an eventfd write fails only on overflow: already signalled
    return;
  }
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
        out_bytes_ -= cur->total_bytes();
        break;
      }
      prev = cur;
    }
  }
  l.unlock();
  call->Finish(st, status);
}

void Connection::QueueResponseForCall(InboundCall* call) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  calls_being_handled_.Erase(call->call_id());
  if (shut_down_) {
    InboundCall::Destroy(call);  // no pool once shut down
    return;
  }
  EnqueueTransfer(call->response_transfer());
}

void Connection::Shutdown(const Status& why) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  if (shut_down_) return;
  shut_down_ = true;
  closed_.store(true, std::memory_order_relaxed);
  ev_io_stop(reactor_->loop(), &read_watcher_);
  read_paused_ = 0;
  if (write_watcher_active_) {
    ev_io_stop(reactor_->loop(), &write_watcher_);
    write_watcher_active_ = false;
  }
  OutboundTransfer* t;
  OutboundTransfer* partial;
  InboundCall* partial_call;
  InboundCall* done;
  // Finishing a call runs its callback, which may touch this connection:
  // take the calls out of the map first.
  CallIdMap<OutboundCall> waiting;
  bool lent = false;
  {
    // Direct writers check fd_ under mu_: none writes to a closed (or
    // reused) descriptor, and none starts once this is done.
    std::lock_guard<FutexMutex> l(mu_);
    lent = read_side_ == ReadSide::kCaller;
    if (lent) {
      // A caller polls and reads this descriptor (ReadOwnResponse): wake it
      // with EOF and let it close the descriptor when it hands back, so the
      // number cannot be reused under it. The read side stays its own.
      ::shutdown(fd_, SHUT_RDWR);
      close_on_return_fd_ = fd_;
    } else {
      ::close(fd_);
      read_side_ = ReadSide::kReactor;
      lent_frame_.reset();
    }
    fd_ = -1;
    t = out_head_;
    out_head_ = out_tail_ = nullptr;
    partial = direct_partial_;
    partial_call = direct_partial_call_;
    direct_partial_ = nullptr;
    direct_partial_call_ = nullptr;
    done = direct_done_;
    direct_done_ = nullptr;
    has_direct_done_.store(false, std::memory_order_relaxed);
    if (direction_ == Direction::kClient) waiting.Swap(awaiting_response_);
  }
  if (!lent) {
    inbound_.reset();
    spare_transfers_.clear();
    spare_transfer_bytes_ = 0;
  }
  call_pool_.Clear();
  out_bytes_ = 0;
  SyncOutCharge();
  while (t != nullptr) {
    OutboundTransfer* next = t->next_in_queue;
    t->next_in_queue = nullptr;
    t->callbacks()->NotifyTransferAborted(why);
    t = next;
  }
  if (partial != nullptr) {
    if (partial_call != nullptr) calls_being_handled_.Erase(partial_call->call_id());
    partial->callbacks()->NotifyTransferAborted(why);
  }
  while (done != nullptr) {
    InboundCall* next = done->next_direct_done;
    done->next_direct_done = nullptr;
    calls_being_handled_.Erase(done->call_id());
    InboundCall::Destroy(done);
    done = next;
  }
  if (direction_ == Direction::kClient) {
    waiting.ForEach([&why](int32_t, OutboundCall* call) {
      call->in_awaiting_map = false;
      call->StopTimer();
      call->Finish(OutboundCall::State::kFinishedError, why);
    });
  }
  // Server calls still at the workers find shut_down_ when they respond;
  // until then their handlers see closed() (RpcContext::cancelled()).
}

// --- The read side lent to a sync caller (see connection.h) ---------------

void Connection::MakeReadsBlocking() {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  if (!lend_reads_ || fd_ < 0) return;
  // Once per connection (3 syscalls), so that no call pays one: every other
  // reader and writer of this descriptor passes MSG_DONTWAIT.
  const timeval slice{0, static_cast<suseconds_t>(kBlockingReadSliceUs)};
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof(slice)) != 0 ||
      ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return;  // stays non-blocking: callers poll first (still correct)
  }
  std::lock_guard<FutexMutex> l(mu_);
  reads_block_ = true;
}

void Connection::MaybeParkReadSide() {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  if (!lend_reads_ || shut_down_ || (read_paused_ & kPauseLent) != 0) return;
  {
    std::lock_guard<FutexMutex> l(mu_);
    if (read_side_ != ReadSide::kReactor || connecting_ || !awaiting_response_.empty() ||
        out_head_ != nullptr || direct_partial_ != nullptr) {
      return;
    }
    if (wake_fd_ < 0) {
      wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (wake_fd_ < 0) return;  // no way to interrupt a reader: keep reading here
    }
    read_side_ = ReadSide::kParked;
  }
  // Stops the read watcher; HandleReadable's loop sees the pause and stops
  // before touching the read side again.
  SetReadPause(read_paused_ | kPauseLent);
}

void Connection::ResumeLentReads() {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  if (shut_down_ || (read_paused_ & kPauseLent) == 0) return;
  std::unique_ptr<InboundTransfer> frame;
  Status error;
  {
    std::lock_guard<FutexMutex> l(mu_);
    if (read_side_ != ReadSide::kReactor) return;  // parked or lent again
    frame = std::move(lent_frame_);
    error = std::move(lent_error_);
    lent_error_ = Status::OK();
  }
  ConnectionRef ref(this);
  if (!error.ok()) {
    if (error.IsCorruption() || error.IsInvalidArgument()) {
      FailWithBadData(error);
    } else {
      reactor_->DestroyConnection(this, error);
    }
    return;
  }
  // Restarts the watcher and feeds it one event, for bytes the caller left
  // in read_buf_; the frame it kept is delivered first, from here.
  SetReadPause(read_paused_ & ~kPauseLent);
  if (frame != nullptr) HandleFrame(std::move(frame));
}

void Connection::ReclaimReadSide(OutboundCall* call, HandBack reason) {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  // Shut down: Shutdown failed every outstanding call (and the call may be
  // gone): touch nothing.
  if (shut_down_) return;
  // Before reading again: the call's response must not be delivered after
  // we decided to abandon it. in_awaiting_map: nobody finished it meanwhile
  // (a Cancel() task that ran before this one does).
  if (call != nullptr && call->in_awaiting_map) {
    if (reason == HandBack::kTimedOut) {
      call->TimeOut();
    } else if (reason == HandBack::kCancelled) {
      AbandonCall(call, Status::Aborted("call cancelled"));
    }
  }
  ResumeLentReads();
}

void Connection::HandBackReadSide(OutboundCall* call, HandBack reason, bool may_park,
                                  std::unique_ptr<InboundTransfer> frame, const Status& error) {
  CROSSFREE_DCHECK(!reactor_->IsCurrentThread());
  {
    std::lock_guard<FutexMutex> l(mu_);
    reader_call_ = nullptr;
    abandon_requested_ = false;
    if (close_on_return_fd_ >= 0) {
      // Shut down while we read: it failed the call; the descriptor is ours
      // to close. The read side is dead.
      ::close(close_on_return_fd_);
      close_on_return_fd_ = -1;
      read_side_ = ReadSide::kReactor;
      return;
    }
    if (may_park && frame == nullptr && error.ok() && awaiting_response_.empty()) {
      read_side_ = ReadSide::kParked;
      return;
    }
    read_side_ = ReadSide::kReactor;
    lent_frame_ = std::move(frame);
    lent_error_ = error;
  }
  if (call == nullptr || reason == HandBack::kNone) {
    reactor_->ScheduleTask([ref = ConnectionRef(this)](const Status& st) {
      // Not run: the reactor is shutting down, which closes the connection.
      if (st.ok()) ref->ReclaimReadSide(nullptr, HandBack::kNone);
    });
    return;
  }
  // The task touches the call: wait until it ran, so the call (finished by
  // then, or by the reactor's shutdown) outlives it.
  Notification ran;
  Notification* ran_p = &ran;
  reactor_->ScheduleTask([ref = ConnectionRef(this), call, reason, ran_p](const Status& st) {
    if (st.ok()) ref->ReclaimReadSide(call, reason);
    ran_p->Notify();
  });
  ran.Wait();
}

int Connection::TakeLentFrame(OutboundCall* call, std::unique_ptr<InboundTransfer> frame) {
  CallResponse resp;
  if (Status s = ParseCallResponse(frame->frame(), &resp); !s.ok()) {
    // The reactor closes the connection, as if it had read this itself.
    HandBackReadSide(nullptr, HandBack::kNone, false, nullptr, s);
    return -1;
  }
  const int32_t id = resp.header.call_id;
  OutboundCall* found;
  {
    std::lock_guard<FutexMutex> l(mu_);
    found = awaiting_response_.Find(id);
    // Ours, and no Cancel() is pending (from here on none will be posted):
    // finish it here. Anything else is the reactor's to deliver, with its
    // ordering of responses, cancels and the "response before request"
    // check.
    if (found != nullptr && found == call && found->state() == OutboundCall::State::kSent &&
        found->ClaimForReader()) {
      awaiting_response_.Erase(id);
      call->in_awaiting_map = false;
    } else if (found != nullptr) {
      found = nullptr;
      call = nullptr;
    }
  }
  if (call == nullptr) {
    HandBackReadSide(nullptr, HandBack::kNone, false, std::move(frame), Status::OK());
    return -1;
  }
  if (found == nullptr) {
    Log(LogLevel::kInfo, "ignoring response for unknown call id " + std::to_string(id) +
                             " from " + RemoteToString());
    RecycleInboundTransfer(std::move(frame));
    return 0;
  }
  resp.transfer = std::move(frame);
  // Parses into the caller's response, recycles the frame into the read
  // side's pool (still ours) and runs the callback here.
  reactor_->messenger()->CountCallerReadResponse();
  call->HandleResponse(&resp, this);
  HandBackReadSide(nullptr, HandBack::kNone, true, nullptr, Status::OK());
  return 1;
}

bool Connection::ReadOwnResponse(OutboundCall* call) {
  CROSSFREE_DCHECK(!reactor_->IsCurrentThread());
#if CROSSFREE_DCHECK_IS_ON()
  {
    std::lock_guard<FutexMutex> l(mu_);
    CROSSFREE_DCHECK(read_side_ == ReadSide::kCaller && reader_call_ == call);
  }
#endif
  // Taken by TrySendCallDirect under mu_ a moment ago, on this thread. If
  // Shutdown ran since, the descriptor is still open (close_on_return_fd_,
  // shut down: reads say EOF) and keeps its number until we hand back.
  const int fd = reader_fd_;
  const int wake_fd = reader_wake_fd_;
  // The first wait is a blocking recv() (one syscall, as in a plain
  // blocking client) bounded by SO_RCVTIMEO; once that slice passed without
  // the response, poll() on the socket and the eventfd, with the exact
  // deadline, for the rest of the call.
  bool block = reader_blocks_;
  // abandon_requested_ was false when the read side was granted (every hand
  // back clears it): the first check is after the first wait, under the
  // lock, like every later one. A Cancel() before that wakes the poll
  // (wake_fd_) or is seen when the blocking slice ends, as during it.
  bool abandon = false;
  bool first_wait = true;
  const size_t max_size = reactor_->messenger()->max_message_size();
  const bool has_deadline = call->has_deadline();
  const std::chrono::steady_clock::time_point deadline = call->deadline();
  for (;;) {
    // Frames already read (by this caller, a previous one, or the reactor
    // before it lent the read side) first.
    while (read_pos_ < read_len_) {
      if (inbound_ == nullptr) {
        if (!spare_transfers_.empty()) {
          inbound_ = std::move(spare_transfers_.back());
          spare_transfers_.pop_back();
          spare_transfer_bytes_ -= inbound_->buffer_capacity();
        } else {
          inbound_.reset(new InboundTransfer(max_size, budget_));
        }
      }
      size_t used = 0;
      Status s = inbound_->Consume(read_buf_.get() + read_pos_, read_len_ - read_pos_, &used);
      read_pos_ += used;
      if (!s.ok()) {
        HandBackReadSide(nullptr, HandBack::kNone, false, nullptr,
                         Status::Corruption(s.message()));
        return false;
      }
      if (!inbound_->complete()) continue;
      int r = TakeLentFrame(call, std::move(inbound_));
      if (r != 0) return r > 0;
    }
    if (!first_wait) {
      std::lock_guard<FutexMutex> l(mu_);
      abandon = abandon_requested_;
    }
    first_wait = false;
    if (abandon) {
      HandBackReadSide(call, HandBack::kCancelled, false, nullptr, Status::OK());
      return false;
    }
    timespec ts;
    timespec* tsp = nullptr;
    if (has_deadline) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds(0)) {
        HandBackReadSide(call, HandBack::kTimedOut, false, nullptr, Status::OK());
        return false;
      }
      // The receive timeout is coarse (kernel ticks): near the deadline,
      // poll with its exact timeout instead.
      if (left < std::chrono::microseconds(kBlockingReadMinLeftUs)) block = false;
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      ts.tv_sec = ns / 1000000000;
      ts.tv_nsec = ns % 1000000000;
      tsp = &ts;
    }
    ssize_t r;
    if (block) {
      // Sleeps in the kernel until the response, EOF (Shutdown), or the end
      // of the slice: no spinning. A Cancel() meanwhile (abandon_requested_)
      // is seen when the slice ends.
      r = SocketRecv(fd, read_buf_.get(), kReadBufferSize, 0);
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        block = false;  // a slow call: poll from now on
        continue;
      }
    } else {
      // Sleeps in the kernel until the response (or EOF, or the reactor's
      // wake-up) arrives: no spinning.
      pollfd pfd[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
      int n = ::ppoll(pfd, 2, tsp, nullptr);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        HandBackReadSide(nullptr, HandBack::kNone, false, nullptr,
                         Status::NetworkError("poll on connection to " + RemoteToString(), err));
        return false;
      }
      if (n == 0) continue;  // the deadline check above decides
      if (pfd[1].revents != 0) {
        uint64_t v;
        ssize_t d = ::read(wake_fd, &v, sizeof(v));  // drain; the flag says why
        (void)d;
      }
      if (pfd[0].revents == 0) continue;
      // MSG_DONTWAIT: the descriptor may be blocking (MakeReadsBlocking).
      r = SocketRecv(fd, read_buf_.get(), kReadBufferSize, MSG_DONTWAIT);
    }
    if (r > 0) {
      read_pos_ = 0;
      read_len_ = static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    // EOF or an error: the reactor closes the connection with it (if it did
    // not already), which fails the call.
    int err = r == 0 ? ESHUTDOWN : errno;
    HandBackReadSide(nullptr, HandBack::kNone, false, nullptr,
                     Status::NetworkError(r == 0 ? "recv got EOF from " + RemoteToString()
                                                 : "recv error from " + RemoteToString(),
                                          err));
    return false;
  }
}

}  // namespace crossfree::rpc
