// SPDX-License-Identifier: Apache-2.0
// Connection implementation: reading frames, writing transfers, matching
// responses to calls, and closing on any protocol violation.
#include "rpc/connection.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "rpc/alloc_pattern.h"
#include "rpc/dcheck.h"
#include "rpc/inbound_call.h"
#include "rpc/logging.h"
#include "rpc/memory_budget.h"
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
      reader_(reactor->messenger()->max_message_size(), budget_, pool_limit_),
      lend_reads_(direction == Direction::kClient &&
                  reactor->messenger()->options().caller_reads_sync_responses &&
                  DirectWrites()) {
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
  if (!closed()) reader_.Recycle(std::move(t));
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
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
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

void Connection::HandleReadable() {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  ConnectionRef ref(this);
  // Calls answered directly by workers end first: their ids and their
  // places in the call limit are free again before new frames are parsed.
  if (direction_ == Direction::kServer) ReleaseDirectlyAnswered();
  // read_paused_ is checked per frame: a pause that starts in the middle of
  // a read leaves the rest of the bytes buffered for the resume.
  // A read that returned less than it asked for emptied the socket: the next
  // one would only say EAGAIN, so stop there (libev's epoll is level
  // triggered: bytes that arrive later wake the loop again). That saves one
  // read() per frame in the ping-pong of sync calls.
  bool drained = false;
  while (!shut_down_ && read_paused_ == 0) {
    const bool header_done = direction_ != Direction::kServer || conn_header_in_.complete();
    if (!header_done && reader_.buffered()) {
      if (Status s = reader_.ConsumeConnHeader(&conn_header_in_); !s.ok()) {
        FailWithBadData(s);
        return;
      }
      continue;
    }
    std::unique_ptr<InboundTransfer> frame;
    Status s;
    switch (header_done ? reader_.NextFrame(&frame, &s) : FrameReader::Next::kNeedBytes) {
      case FrameReader::Next::kFrame:
        if (!HandleFrame(std::move(frame))) return;
        continue;
      case FrameReader::Next::kBad:
        FailWithBadData(s);
        return;
      case FrameReader::Next::kBlockedOnMemory:
        // The rest stays buffered; the tick resumes once the budget has room.
        SetReadPause(read_paused_ | kPauseMemory);
        return;
      case FrameReader::Next::kNeedBytes:
        break;
    }
    if (drained) return;
    // MSG_DONTWAIT: the socket itself may be blocking (MakeReadsBlocking).
    const ssize_t n = reader_.Recv(fd_, MSG_DONTWAIT, &drained);
    if (n > 0) {
      last_progress_ = last_activity_ = ev_now(reactor_->loop());
      continue;
    }
    if (n == FrameReader::kNoMemory) {
      SetReadPause(read_paused_ | kPauseMemory);
      return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    reactor_->DestroyConnection(this, RecvFailed(n == 0 ? 0 : errno));
    return;
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
    // Frames may be waiting in the read buffer already: run the read handler from
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
  const bool mid_frame = !conn_header_in_.complete() || reader_.mid_frame();
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
  reader_.Trim(kMaxPooledTransfers);
}

void Connection::FailWithBadData(const Status& s) {
  Log(LogLevel::kWarning, "closing connection " +
                              std::string(direction_ == Direction::kServer ? "from " : "to ") +
                              RemoteToString() + ": received bad data: " + s.ToString());
  reactor_->DestroyConnection(this, s);
}

bool Connection::HandleFrame(std::unique_ptr<InboundTransfer> transfer) {
  if (direction_ == Direction::kServer) return HandleInboundCall(std::move(transfer));
  // Counted once HandleCallResponse has returned: its frame and response
  // freed, the call's callback run (and, in legacy_client_transfer, its box
  // deleted).
  bool ok = HandleCallResponse(std::move(transfer));
  reactor_->messenger()->CountReactorHandledResponse();
  return ok;
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
  Messenger* messenger = reactor_->messenger();  // outlives its reactors' connections
  // Last: deleting the call may drop the last reference to this connection.
  if (shut_down_ || !call_pool_.Put(call)) delete call;
  messenger->CountInboundCallReleased();
}

void Connection::CancelInboundCalls() {
  CROSSFREE_DCHECK(reactor_->IsCurrentThread());
  calls_being_handled_.ForEach([](int32_t, InboundCall* call) { call->Cancel(); });
}

bool Connection::HandleCallResponse(std::unique_ptr<InboundTransfer> transfer) {
  CallResponse resp;
  if (Status s = ParseResponse(transfer->frame(), &resp); !s.ok()) {
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
  if (!lent) reader_.Clear();
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
  DestroyDirectDone(done);
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

Status Connection::ParseResponse(std::string_view frame, CallResponse* resp) {
  std::string_view body;
  Status s = ParseFrame(frame, &resp->header, &body);
  if (s.ok()) {
    s = SplitSidecars(body, resp->header.sidecar_offsets, &resp->body_pb, &resp->sidecars,
                      kMaxSidecars);
  }
  return s.ok() ? s : s.CloneAndPrepend("invalid RPC response");
}

Status Connection::RecvFailed(int err) const {
  // err 0: the peer closed (recv returned 0).
  return err == 0 ? Status::NetworkError("recv got EOF from " + RemoteToString(), ESHUTDOWN)
                  : Status::NetworkError("recv error from " + RemoteToString(), err);
}

}  // namespace crossfree::rpc
