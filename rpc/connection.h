// SPDX-License-Identifier: Apache-2.0
// Connection: one TCP socket, its framing state and the calls on it. Belongs
// to exactly one reactor; a sync caller or a worker may write (and a sync
// caller read) through it from its own thread, under its mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ev.h>

#include "rpc/call_id_map.h"
#include "rpc/frame_reader.h"
#include "rpc/futex_mutex.h"
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
struct CallResponse;
class Reactor;
class ServicePool;

// Owner: shared through ConnectionRef. Its Reactor holds one while the
// connection is open; each live server InboundCall holds another, so a call
// answered after the connection closed can still reach it; a handler of the
// connection holds one while it runs, because the handler may close it. The
// last reference deletes it (normally on the reactor thread).
// Thread: each method says where it runs. The reactor thread runs the
// rest (its event callbacks, OnTick, tasks), checked with CROSSFREE_DCHECK.
// The exceptions run on other threads: TrySendCallDirect and
// ReadOwnResponse on a sync caller's, TryWriteResponseDirect on a
// responder's (DCHECKed: not the reactor), RecycleInboundTransfer on
// whoever owns the read side; closed(), reactor(), direction() and
// remote() on any thread holding a reference (fd(), is_shut_down() and
// read_paused() are the reactor's). mu_ says what those paths share with
// the reactor. ConnectionRef's counting is thread-safe.
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
  // `caller_reads` (nullptr: not wanted) is set to true when the caller now
  // owns the read side and must call ReadOwnResponse (see below).
  bool TrySendCallDirect(OutboundCall* call, bool* caller_reads = nullptr);

  // --- The read side lent to a sync caller (client connections with
  // MessengerOptions::caller_reads_sync_responses) ---
  // "The read side" is reader_ (the socket's reads, the read buffer, the
  // frame being assembled, the transfer pool) and lent_frame_. Exactly one
  // owner at a time, recorded in read_side_ under mu_:
  //  - kReactor: the reactor reads (its read watcher runs). The default.
  //  - kParked: lent, nobody reads; the read watcher is stopped (pause bit
  //    kPauseLent). Only the reactor parks: after it delivered the response
  //    of a sync call (OutboundCall::caller_may_read) and no other call is
  //    outstanding, nothing is queued and nothing is partly written.
  //  - kCaller: one sync caller reads (reader_call_ is its call). Only a
  //    caller in TrySendCallDirect takes a parked read side, when its
  //    request is fully written and it is the only call outstanding.
  // The caller that reads gives the read side back when its own response
  // is parsed: parked again if no other call is outstanding, else to the
  // reactor (a task, ReclaimReadSide). The reactor takes a parked read side
  // back itself when it queues a call (async, or a sync call it was posted)
  // and at a tick with no caller since the previous one (so that an idle
  // connection still notices the server closing it). A direct sender that
  // does not take the parked read side (a partly written request) hands it
  // to the reactor. Transitions happen under mu_ only, so the previous
  // owner's accesses happen before the next owner's.
  //
  // Client, the caller's thread, only right after TrySendCallDirect gave it
  // the read side: reads (a blocking recv, or poll + recv, see
  // reads_block_; frames parsed by reader_) until its own response
  // arrives, parses it and finishes the
  // call (its callback runs on this thread) and returns true. Returns false
  // having handed the read side to the reactor, which then finishes the
  // call (the caller waits for its callback as on the ordinary path) when:
  // a frame of another outstanding call arrives (kept in lent_frame_ for
  // the reactor to deliver); the call has a Cancel() pending (the reactor
  // handles that ordering); the reactor asked for the call back
  // (AbandonCall: a cancel request, woken through wake_fd_ if polling, at
  // the end of the blocking slice if in recv); the deadline
  // passed (the reactor times the call out before it reads again); the
  // socket reports EOF or an error, or a frame is malformed (the reactor
  // closes the connection, failing the call). Responses for unknown call
  // ids (calls that timed out) are dropped, as the reactor does. If the
  // reactor shuts the connection down meanwhile (Shutdown), it fails the
  // call from the call map, shuts the socket down to wake this thread (in
  // recv or poll),
  // and leaves the descriptor's close() to this thread (a descriptor
  // number must not be reused while a thread polls it).
  bool ReadOwnResponse(OutboundCall* call);
  // Client, reactor thread only: lends the read side (kReactor -> kParked)
  // if lending is on and nothing else is outstanding. From
  // OutboundCall::HandleResponse of a sync call, before its callback.
  void MaybeParkReadSide();
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
  // seconds). Server: applies the frame-progress and idle timeouts (closing
  // the connection) and resumes reading stopped for memory once the budget
  // has room. Client: takes back a read side parked since the last tick
  // with no caller taking it.
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

  // The owner of the read side (the reactor, or the sync caller it is lent
  // to): a frame transfer whose object and buffer were made by this
  // connection's read side, returned here once its frame is no longer
  // needed (the response parsed on a client, the InboundCall done on a
  // server). Kept for the next frame if the pool has room and its buffer is
  // at most kMaxPooledBufferBytes, else freed.
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
  static constexpr uint8_t kPauseLent = 8;      // client: the read side is lent (not kReactor)

  enum class ReadSide : uint8_t { kReactor, kParked, kCaller };
  // Why a caller hands the read side back (ReclaimReadSide's `reason`).
  enum class HandBack : uint8_t { kNone, kTimedOut, kCancelled };

  static void ReadCallback(struct ev_loop* loop, ev_io* w, int revents);
  static void WriteCallback(struct ev_loop* loop, ev_io* w, int revents);
  void HandleReadable();
  void HandleWritable();
  // Writes queued transfers until EAGAIN; enables/disables the write watcher.
  // `held` (optional) is a lock of mu_ the caller already took, so a
  // transfer queued on an idle connection is linked and written in one
  // critical section. Reactor thread.
  void WriteQueued(std::unique_lock<FutexMutex> held = {});
  void EnqueueTransfer(OutboundTransfer* t);
  // Reactor: takes over the transfer a direct writer left partly written
  // (`call`: its server call, or nullptr on a client), puts it at the head of
  // the queue and writes on; nothing if the connection closed meanwhile.
  void AdoptPartialWrite(OutboundTransfer* t, InboundCall* call);
  // Server reactor: ends the calls whose responses workers wrote directly.
  void ReleaseDirectlyAnswered();
  // Reactor thread: forgets and destroys every call of a list taken from
  // direct_done_ (linked through InboundCall::next_direct_done).
  void DestroyDirectDone(InboundCall* list);
  // Returns false if the connection was shut down while handling the frame.
  bool HandleFrame(std::unique_ptr<InboundTransfer> transfer);
  bool HandleCallResponse(std::unique_ptr<InboundTransfer> transfer);
  bool HandleInboundCall(std::unique_ptr<InboundTransfer> transfer);
  // Server, reactor thread, no call in flight: frees what the pools hold
  // beyond what an idle connection keeps (kMaxPooledCalls).
  void TrimPools();
  void FailWithBadData(const Status& s);
  // A response frame's header, body and sidecars (views into `frame`), for
  // whichever thread owns the read side: the reactor or a reading caller.
  static Status ParseResponse(std::string_view frame, CallResponse* resp);
  // A recv() that returned 0 (err 0) or failed with errno `err`.
  Status RecvFailed(int err) const;
  // Client, reactor, once the connection is connected: with lending on,
  // clears O_NONBLOCK and sets SO_RCVTIMEO to kBlockingReadSliceUs, so that
  // a reading caller can wait in recv() itself rather than in poll() and
  // then read() (one syscall per call fewer). Every other access passes
  // MSG_DONTWAIT, so nothing else ever blocks on the descriptor. On failure
  // the socket stays non-blocking and callers poll (reads_block_ false).
  void MakeReadsBlocking();
  // Client, reactor: after the read side came back (read_side_ kReactor,
  // kPauseLent still set): closes the connection on the caller's error, or
  // restarts reading and delivers the frame the caller kept.
  void ResumeLentReads();
  // Client, reactor: the task a caller posts when it hands the read side
  // back. `call` (with kTimedOut or kCancelled) is abandoned first, if still
  // outstanding, then reading resumes.
  void ReclaimReadSide(OutboundCall* call, HandBack reason);
  // Client, the reading caller: gives the read side up (to the reactor, or
  // parked when `may_park` and nothing else is outstanding), keeping
  // `frame` and `error` for the reactor. Waits until the reactor task ran
  // when it names `call` (the task touches it). If the connection was shut
  // down meanwhile, only closes the descriptor Shutdown left open (Shutdown
  // failed the call).
  void HandBackReadSide(OutboundCall* call, HandBack reason, bool may_park,
                        std::unique_ptr<InboundTransfer> frame, const Status& error);
  // Client, the reading caller: a complete frame read from the socket.
  // 1: it was the caller's response (call finished), 0: dropped (unknown
  // call id), -1: the read side was handed back.
  int TakeLentFrame(OutboundCall* call, std::unique_ptr<InboundTransfer> frame);
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

  // Spare frame transfers (the read side's pool, see
  // RecycleInboundTransfer): a server needs one per call in flight on the
  // connection (the request frame lives until the response is written), a
  // client one. At most pool_limit_ (below) are kept.
  static constexpr size_t kMaxPooledTransfers = 64;  // a client's limit
  // Server: finished calls for the next requests; cleared by Shutdown.
  // Both pools hold up to as many as may be in flight (one read from a
  // flooding client starts them all at once; a smaller pool would send the
  // rest to malloc and back each time), at least 64 and at most
  // kMaxPooledCallsCap. A pool never holds more than were live together,
  // so it adds nothing to the peak; what a burst left beyond 64 is freed at
  // the first tick with no call in flight (OnTick), so an idle connection
  // keeps ~90 KiB of calls.
  static constexpr size_t kMaxPooledCalls = 64;  // kept when idle
  static constexpr size_t kMaxPooledCallsCap = 1024;
  const size_t pool_limit_;
  InboundCallPool call_pool_;
  // The read side: socket reads, read buffer, the frame being assembled
  // and the pool of frame transfers; see ReadOwnResponse for who owns it.
  FrameReader reader_;
  ConnHeaderReceiver conn_header_in_;  // server
  uint8_t conn_header_[kConnHeaderLength];  // client: the header it sends

  // Writing: intrusive FIFO of transfers; the head may be partly written.
  OutboundTransfer* out_head_ = nullptr;
  OutboundTransfer* out_tail_ = nullptr;
  OutboundTransfer conn_header_transfer_;  // client: the connection header

  // Guards what direct writers (TrySendCallDirect, TryWriteResponseDirect)
  // share with the reactor: the socket writes and fd_ (closing), the links
  // of the out-queue (the reactor changes them only under it; direct writers
  // read them), connecting_ (written under it), the client's call ids and
  // awaiting_response_, and the direct_* fields below.
  // Never held while a callback runs.
  FutexMutex mu_;
  // A transfer a direct writer left partly written: nobody writes until the
  // reactor adopted it (AdoptPartialWrite).
  OutboundTransfer* direct_partial_ = nullptr;
  InboundCall* direct_partial_call_ = nullptr;  // server: its call
  // Server: calls whose response a worker wrote, for the reactor to end
  // (intrusive, through InboundCall::next_direct_done).
  InboundCall* direct_done_ = nullptr;
  // direct_done_ != nullptr, readable without mu_ (written under it): lets
  // the reactor skip the lock in ReleaseDirectlyAnswered.
  std::atomic<bool> has_direct_done_{false};
  // Server: set while reading is paused for the call limit; a worker that
  // adds to direct_done_ then wakes the reactor (once).
  bool wake_on_direct_done_ = false;
  bool direct_wake_pending_ = false;

  // Client, lending the read side (see ReadOwnResponse). read_side_,
  // reader_call_, abandon_requested_, lent_frame_, lent_error_,
  // close_on_return_fd_, reads_block_ and lent_takes_ are guarded by mu_.
  const bool lend_reads_;  // MessengerOptions::caller_reads_sync_responses
  ReadSide read_side_ = ReadSide::kReactor;
  OutboundCall* reader_call_ = nullptr;
  // The reactor wants reader_call_ back (a cancel): the reader hands back.
  bool abandon_requested_ = false;
  // A frame the reader read for another call, for the reactor to deliver.
  std::unique_ptr<InboundTransfer> lent_frame_;
  // What the reader found wrong (bad data, a socket error): the reactor
  // closes the connection with it. OK: nothing.
  Status lent_error_;
  // Shutdown while a caller reads: the descriptor it polls, closed by that
  // caller when it hands back (or by the destructor).
  int close_on_return_fd_ = -1;
  // An eventfd the reactor writes to wake the reading caller out of poll()
  // (made when the read side is first parked; -1 before).
  int wake_fd_ = -1;
  // The descriptor is blocking with a receive timeout (MakeReadsBlocking):
  // a reading caller's first wait is a recv() of at most
  // kBlockingReadSliceUs; after it, and whenever less than
  // kBlockingReadMinLeftUs remain to the call's deadline (the receive
  // timeout counts in kernel ticks, poll() is exact), it polls the socket
  // and wake_fd_. So a Cancel() of a call being read takes effect within
  // the slice, a deadline as precisely as before, and a slow call costs
  // one wake-up more.
  static constexpr long kBlockingReadSliceUs = 5000;
  static constexpr long kBlockingReadMinLeftUs = 25000;
  bool reads_block_ = false;
  // Read-side state (the owner of the read side reads them without mu_):
  // fd_, wake_fd_ and reads_block_ as they were when a caller was granted
  // the read side, written then under mu_ by that same caller, so that
  // ReadOwnResponse needs no lock of its own to start reading.
  int reader_fd_ = -1;
  int reader_wake_fd_ = -1;
  bool reader_blocks_ = false;
  // Times a caller took the read side; the tick takes a parked read side
  // back when it did not change since the previous tick (reactor's copy).
  uint64_t lent_takes_ = 0;
  uint64_t lent_takes_seen_ = 0;

  // Client: calls sent or queued, by call id.
  int32_t next_call_id_ = 0;
  CallIdMap<OutboundCall> awaiting_response_;
  // Server: calls being handled, by call id.
  CallIdMap<InboundCall> calls_being_handled_;
  // Server: the service pool of the previous call (Messenger::QueueInboundCall).
  ServicePool* last_service_pool_ = nullptr;
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
