// SPDX-License-Identifier: Apache-2.0
// Connection, the paths on which a thread other than the reactor touches a
// connection (connection.h, "Direct writes" and "The read side lent to a
// sync caller"), with the reactor's side of each hand-over: a worker or a
// sync caller writing its frame itself, the reactor adopting a partly
// written one and ending directly answered calls, and a sync caller reading
// its own response through the connection's FrameReader. Everything else
// (connection.cc) runs on the reactor.
#include "rpc/connection.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rpc/dcheck.h"
#include "rpc/inbound_call.h"
#include "rpc/logging.h"
#include "rpc/messenger.h"
#include "rpc/notification.h"
#include "rpc/outbound_call.h"
#include "rpc/reactor.h"

namespace crossfree::rpc {

// --- Direct writes -----------------------------------------------------------

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
  DestroyDirectDone(list);
}

void Connection::DestroyDirectDone(InboundCall* list) {
  while (list != nullptr) {
    InboundCall* next = list->next_direct_done;
    list->next_direct_done = nullptr;
    calls_being_handled_.Erase(list->call_id());
    InboundCall::Destroy(list);
    list = next;
  }
}

// --- The read side lent to a sync caller --------------------------------------

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
  // in the read buffer; the frame it kept is delivered first, from here.
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
  if (Status s = ParseResponse(frame->frame(), &resp); !s.ok()) {
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
  const bool has_deadline = call->has_deadline();
  const std::chrono::steady_clock::time_point deadline = call->deadline();
  for (;;) {
    // Frames already read (by this caller, a previous one, or the reactor
    // before it lent the read side) first.
    for (;;) {
      std::unique_ptr<InboundTransfer> frame;
      Status s;
      const FrameReader::Next next = reader_.NextFrame(&frame, &s);
      // A client's frames are charged to no budget.
      CROSSFREE_DCHECK(next != FrameReader::Next::kBlockedOnMemory);
      if (next != FrameReader::Next::kFrame && next != FrameReader::Next::kBad) break;
      if (next == FrameReader::Next::kBad) {
        HandBackReadSide(nullptr, HandBack::kNone, false, nullptr,
                         Status::Corruption(s.message()));
        return false;
      }
      const int r = TakeLentFrame(call, std::move(frame));
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
    // No spinning: the wait sleeps in the kernel. A Cancel() meanwhile
    // (abandon_requested_) wakes a poll, or is seen when the blocking slice
    // ends.
    int err = 0;
    switch (reader_.WaitForBytes(fd, wake_fd, &block, tsp, &err)) {
      case FrameReader::Wait::kBytes:
      case FrameReader::Wait::kNothing:  // the checks above decide
        continue;
      case FrameReader::Wait::kPollError:
        HandBackReadSide(nullptr, HandBack::kNone, false, nullptr,
                         Status::NetworkError("poll on connection to " + RemoteToString(), err));
        return false;
      case FrameReader::Wait::kEof:
      case FrameReader::Wait::kRecvError:
        // The reactor closes the connection with it (if it did not
        // already), which fails the call.
        HandBackReadSide(nullptr, HandBack::kNone, false, nullptr, RecvFailed(err));
        return false;
    }
  }
}

}  // namespace crossfree::rpc
