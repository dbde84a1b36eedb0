// SPDX-License-Identifier: Apache-2.0
// Connection: one TCP socket, its framing state and the calls on it. Lives on
// exactly one reactor thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ev.h>

#include "rpc/call_id_map.h"
#include "rpc/inbound_call_pool.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"
#include "rpc/transfer.h"

namespace crossfree::rpc {

class InboundCall;
class MemoryBudget;
class OutboundCall;
class Reactor;

// Owner: shared through ConnectionRef. Its Reactor holds one while the
// connection is open; each live server InboundCall holds another, so a call
// answered after the connection closed can still reach it; a handler of the
// connection holds one while it runs, because the handler may close it. The
// last reference deletes it (normally on the reactor thread).
// Thread: every method runs on the reactor thread (checked with
// CROSSFREE_DCHECK where it matters); only ConnectionRef's counting is
// thread-safe.
//
// Client side: QueueOutboundCall assigns the call id, serializes the request
// header, arms the call timer and queues the request frame; responses are
// matched to calls by id. Server side: the first 8 bytes must be a valid
// connection header; each frame becomes an InboundCall handed to the
// Messenger; responses come back through QueueResponseForCall.
// Any protocol violation closes the connection with a logged reason.
//
// Server bounds (MessengerOptions): reading stops (the read watcher is
// stopped; nothing is queued instead) while the connection has
// max_calls_in_flight_per_connection calls, or
// max_queued_response_bytes_per_connection bytes of responses not yet
// written, or while the messenger's buffer budget refuses to grow a receive
// buffer; it resumes when the cause goes away. The reactor's tick closes a
// connection whose current frame (or connection header) makes no progress
// for frame_timeout_ms, or that has no call and receives nothing for
// idle_timeout_ms. Once closed, its calls still being handled read as
// cancelled (closed()).
class Connection {
 public:
  enum class Direction { kClient, kServer };

  Connection(Reactor* reactor, Direction direction, int fd, const Sockaddr& remote);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts watching the socket. Client: `connecting` if connect() returned
  // EINPROGRESS; the connection header is queued first.
  void Start(bool connecting);

  // Client, reactor thread only: sends `call` (or fails it right away).
  void QueueOutboundCall(OutboundCall* call);
  // Client, reactor thread only: the call's timer fired or it was cancelled.
  // Finishes it with `status` now, or after its frame is sent if the frame is
  // partly written already.
  void AbandonCall(OutboundCall* call, const Status& status);

  // Direct writes (fixed pattern, DirectWrites()): a thread other than the
  // reactor writes a frame to the socket itself when the connection is open,
  // connected and has nothing queued or partly written, saving the hand-off
  // to the reactor and its wake-up. Both return false, having changed
  // nothing, when they cannot (the caller then posts to the reactor as
  // before); true when the frame is written, or partly written and handed to
  // the reactor to finish (AdoptPartialWrite). mu_ serializes them with the
  // reactor's writes, so frames never interleave on the wire.
  //
  // Client, the caller's thread (a sync call; not the reactor): assigns the
  // call id, registers the call and writes its request. The call gets no
  // libev timer: the caller enforces its deadline (OutboundCall::TimeOut).
  bool TrySendCallDirect(OutboundCall* call);
  // Server, the responder's thread (a worker; not the reactor): writes the
  // response the call has prepared. The reactor ends the call later, on its
  // thread, before it reads the next bytes of the connection (or at its
  // tick, or at once when reading is paused for the call limit), so the call
  // and its buffers are still freed by the reactor that made them.
  bool TryWriteResponseDirect(InboundCall* call);

  // Server, reactor thread only: sends the response the call has prepared,
  // or ends the call if the connection is closed.
  void QueueResponseForCall(InboundCall* call);
  // Server, reactor thread only (InboundCall::Destroy): the call is over
  // (response written or dropped). Counts it out, resumes reading if the
  // call limit was what stopped it, and keeps the call in the pool or
  // deletes it. May drop the last reference to this connection: the caller
  // must not touch the connection afterwards unless it holds a reference.
  void ReleaseInboundCall(InboundCall* call);
  // Server, reactor thread only, while the reactor runs normally (the
  // messenger's shutdown grace period ended): marks every call still being
  // handled as cancelled (RpcContext::cancelled()).
  void CancelInboundCalls();

  // Reactor thread only, from the reactor's tick (`now` is the loop time in
  // seconds): applies the frame-progress and idle timeouts (closing the
  // connection) and resumes reading stopped for memory once the budget has
  // room.
  void OnTick(double now);

  // Reactor thread only: closes the socket; fails waiting client calls and
  // aborts queued transfers with `why`; server calls still being handled
  // then see closed(). Idempotent.
  void Shutdown(const Status& why);
  bool is_shut_down() const { return shut_down_; }
  // Any thread holding a reference: true once the connection is closed, so
  // its calls can no longer be answered (InboundCall::cancelled()). A flag
  // rather than a walk over the calls: a call may already be gone on the
  // thread that answered it when the connection closes.
  bool closed() const { return closed_.load(std::memory_order_relaxed); }

  Reactor* reactor() const { return reactor_; }
  Direction direction() const { return direction_; }
  const Sockaddr& remote() const { return remote_; }
  std::string RemoteToString() const { return remote_.ToString(); }
  int fd() const { return fd_; }
  // Reactor thread only: whether reading is stopped, for tests and logs.
  bool read_paused() const { return read_paused_ != 0; }

  // Reactor thread only: a frame transfer whose object and buffer were made
  // by this reactor, returned here once its frame is no longer needed (the
  // response parsed on a client, the InboundCall done on a server). Kept for
  // the next frame if the pool has room and its buffer is at most
  // kMaxPooledBufferBytes, else freed.
  void RecycleInboundTransfer(std::unique_ptr<InboundTransfer> t);

 private:
  friend class ConnectionRef;
  ~Connection();
  void AddRef() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Why reading is stopped (bits of read_paused_).
  static constexpr uint8_t kPauseCalls = 1;     // too many calls in flight
  static constexpr uint8_t kPauseOutBytes = 2;  // too many response bytes queued
  static constexpr uint8_t kPauseMemory = 4;    // the messenger's budget is spent

  static void ReadCallback(struct ev_loop* loop, ev_io* w, int revents);
  static void WriteCallback(struct ev_loop* loop, ev_io* w, int revents);
  void HandleReadable();
  void HandleWritable();
  // Writes queued transfers until EAGAIN; enables/disables the write watcher.
  void WriteQueued();
  void EnqueueTransfer(OutboundTransfer* t);
  // Reactor: takes over the transfer a direct writer left partly written
  // (`call`: its server call, or nullptr on a client), puts it at the head of
  // the queue and writes on; nothing if the connection closed meanwhile.
  void AdoptPartialWrite(OutboundTransfer* t, InboundCall* call);
  // Server reactor: ends the calls whose responses workers wrote directly.
  void ReleaseDirectlyAnswered();
  // Returns false if the connection was shut down while handling the frame.
  bool HandleFrame(std::unique_ptr<InboundTransfer> transfer);
  bool HandleCallResponse(std::unique_ptr<InboundTransfer> transfer);
  bool HandleInboundCall(std::unique_ptr<InboundTransfer> transfer);
  void FailWithBadData(const Status& s);
  // Server: recomputes the call and response-byte pause bits.
  void UpdateBackPressure();
  // Starts or stops the read watcher for the new set of pause bits.
  void SetReadPause(uint8_t reasons);
  // Server: makes the budget's count of this connection's queued response
  // bytes match out_bytes_ (no atomic operation when nothing stays queued).
  void SyncOutCharge();

  Reactor* const reactor_;
  const Direction direction_;
  int fd_;
  const Sockaddr remote_;
  std::atomic<int> refs_{0};
  bool shut_down_ = false;
  // shut_down_, readable from any thread. On a line of its own: workers read
  // it for every call, and refs_ next to it changes with every call.
  alignas(64) std::atomic<bool> closed_{false};
  bool connecting_ = false;
  ev_io read_watcher_;
  ev_io write_watcher_;
  bool write_watcher_active_ = false;

  // Bounds (copied from MessengerOptions; server side).
  MemoryBudget* const budget_;  // nullptr on client connections
  const int max_calls_in_flight_;
  const size_t max_out_bytes_;
  const double frame_timeout_s_;  // 0: none
  const double idle_timeout_s_;   // 0: none
  uint8_t read_paused_ = 0;
  int calls_in_flight_ = 0;       // server: InboundCalls not yet released
  size_t out_bytes_ = 0;          // bytes of queued transfers not fully written
  size_t out_charged_ = 0;        // of them, counted in budget_
  double last_progress_ = 0;      // loop time of the last byte received
  double last_activity_ = 0;      // ... or of the last call ending

  // Reading: a per-connection buffer allocated once, so a small frame costs
  // one memcpy rather than one read() per part.
  static constexpr size_t kReadBufferSize = 64 * 1024;
  std::unique_ptr<uint8_t[]> read_buf_;
  size_t read_pos_ = 0;
  size_t read_len_ = 0;
  std::unique_ptr<InboundTransfer> inbound_;
  // Spare transfers for the next frames (see RecycleInboundTransfer): made
  // and freed on this reactor only, so no lock. A server needs one per call
  // in flight on the connection (the request frame lives until the response
  // is written), a client one. Retains at most kMaxPooledTransfers objects
  // and kMaxPooledBufferTotal bytes of buffers per connection.
  static constexpr size_t kMaxPooledTransfers = 64;
  static constexpr size_t kMaxPooledBufferBytes = 8 * 1024;
  static constexpr size_t kMaxPooledBufferTotal = 64 * 1024;
  std::vector<std::unique_ptr<InboundTransfer>> spare_transfers_;
  size_t spare_transfer_bytes_ = 0;
  // Server: finished calls for the next requests (enough for 64 calls in
  // flight, ~90 KiB); cleared by Shutdown.
  static constexpr size_t kMaxPooledCalls = 64;
  InboundCallPool call_pool_;
  size_t conn_header_received_ = 0;  // server: bytes of the connection header seen
  uint8_t conn_header_[kConnHeaderLength];

  // Writing: intrusive FIFO of transfers; the head may be partly written.
  OutboundTransfer* out_head_ = nullptr;
  OutboundTransfer* out_tail_ = nullptr;
  OutboundTransfer conn_header_transfer_;  // client: the connection header

  // Guards what direct writers (TrySendCallDirect, TryWriteResponseDirect)
  // share with the reactor: the socket writes and fd_ (closing), the links
  // of the out-queue (the reactor changes them only under it; direct writers
  // read them), connecting_ (written under it), the client's call ids,
  // scratch header and awaiting_response_, and the direct_* fields below.
  // Never held while a callback runs.
  std::mutex mu_;
  // A transfer a direct writer left partly written: nobody writes until the
  // reactor adopted it (AdoptPartialWrite).
  OutboundTransfer* direct_partial_ = nullptr;
  InboundCall* direct_partial_call_ = nullptr;  // server: its call
  // Server: calls whose response a worker wrote, for the reactor to end
  // (intrusive, through InboundCall::next_direct_done).
  InboundCall* direct_done_ = nullptr;
  // Server: set while reading is paused for the call limit; a worker that
  // adds to direct_done_ then wakes the reactor (once).
  bool wake_on_direct_done_ = false;
  bool direct_wake_pending_ = false;

  // Client: calls sent or queued, by call id.
  int32_t next_call_id_ = 0;
  CallIdMap<OutboundCall> awaiting_response_;
  RequestHeader scratch_request_header_;  // reused to serialize request headers
  // Server: calls being handled, by call id.
  CallIdMap<InboundCall> calls_being_handled_;
};

// A counted reference to a Connection: adds one when made from a pointer,
// drops it when destroyed or reset; move-only. Replaces manual
// AddRef/Release so that every early return drops what it took.
// Thread: any (the count is atomic); what the holder may do with the
// connection is still governed by Connection's thread rules.
class ConnectionRef {
 public:
  ConnectionRef() = default;
  explicit ConnectionRef(Connection* c) : c_(c) {
    if (c_ != nullptr) c_->AddRef();
  }
  ConnectionRef(ConnectionRef&& o) noexcept : c_(o.c_) { o.c_ = nullptr; }
  ConnectionRef& operator=(ConnectionRef&& o) noexcept {
    if (this != &o) {
      reset();
      c_ = o.c_;
      o.c_ = nullptr;
    }
    return *this;
  }
  ConnectionRef(const ConnectionRef&) = delete;
  ConnectionRef& operator=(const ConnectionRef&) = delete;
  ~ConnectionRef() { reset(); }

  // Drops the reference (which may delete the connection).
  void reset() {
    Connection* c = c_;
    c_ = nullptr;
    if (c != nullptr) c->Release();
  }
  Connection* get() const { return c_; }
  Connection* operator->() const { return c_; }
  explicit operator bool() const { return c_ != nullptr; }

 private:
  Connection* c_ = nullptr;
};

}  // namespace crossfree::rpc
