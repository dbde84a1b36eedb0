// SPDX-License-Identifier: Apache-2.0
// Connection: one TCP socket, its framing state and the calls on it. Lives on
// exactly one reactor thread.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ev.h>

#include "rpc/call_id_map.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"
#include "rpc/status.h"
#include "rpc/transfer.h"

namespace crossfree::rpc {

class InboundCall;
class OutboundCall;
class Reactor;

// Owner: its Reactor holds one reference; each server InboundCall holds
// another, so a call answered after the connection closed can still reach
// it. The last Release() deletes it (normally on the reactor thread).
// Thread: every method except AddRef/Release runs on the reactor thread.
//
// Client side: QueueOutboundCall assigns the call id, serializes the request
// header, arms the call timer and queues the request frame; responses are
// matched to calls by id. Server side: the first 8 bytes must be a valid
// connection header; each frame becomes an InboundCall handed to the
// Messenger; responses come back through QueueResponseForCall.
// Any protocol violation closes the connection with a logged reason.
class Connection {
 public:
  enum class Direction { kClient, kServer };

  Connection(Reactor* reactor, Direction direction, int fd, const sockaddr_in& remote);
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

  // Server, reactor thread only: sends the response the call has prepared,
  // or deletes the call if the connection is closed.
  void QueueResponseForCall(InboundCall* call);

  // Reactor thread only: closes the socket; fails waiting client calls and
  // aborts queued transfers with `why`. Idempotent.
  void Shutdown(const Status& why);
  bool is_shut_down() const { return shut_down_; }

  void AddRef() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  Reactor* reactor() const { return reactor_; }
  Direction direction() const { return direction_; }
  const sockaddr_in& remote() const { return remote_; }
  std::string RemoteToString() const;
  int fd() const { return fd_; }

  // Reactor thread only: a frame transfer whose object and buffer were made
  // by this reactor, returned here once its frame is no longer needed (the
  // response parsed on a client, the InboundCall done on a server). Kept for
  // the next frame if the pool has room and its buffer is at most
  // kMaxPooledBufferBytes, else freed.
  void RecycleInboundTransfer(std::unique_ptr<InboundTransfer> t);
  // Server, reactor thread only (InboundCall::Destroy): keeps a finished
  // call for the next request if the connection is open and the pool has
  // room; false if the caller must delete it.
  bool TakeBackInboundCall(InboundCall* call);

 private:
  ~Connection();

  static void ReadCallback(struct ev_loop* loop, ev_io* w, int revents);
  static void WriteCallback(struct ev_loop* loop, ev_io* w, int revents);
  void HandleReadable();
  void HandleWritable();
  // Writes queued transfers until EAGAIN; enables/disables the write watcher.
  void WriteQueued();
  void EnqueueTransfer(OutboundTransfer* t);
  // Returns false if the connection was shut down while handling the frame.
  bool HandleFrame(std::unique_ptr<InboundTransfer> transfer);
  bool HandleCallResponse(std::unique_ptr<InboundTransfer> transfer);
  bool HandleInboundCall(std::unique_ptr<InboundTransfer> transfer);
  void FailWithBadData(const Status& s);
  // Finishes a client call that is no longer referenced by the queue.
  void CompleteClientCall(OutboundCall* call, const Status& s);

  Reactor* const reactor_;
  const Direction direction_;
  int fd_;
  const sockaddr_in remote_;
  std::atomic<int> refs_{1};
  bool shut_down_ = false;
  bool connecting_ = false;
  ev_io read_watcher_;
  ev_io write_watcher_;
  bool write_watcher_active_ = false;

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
  // Server: finished InboundCalls (about 1.4 KiB each) kept for the next
  // requests, so a call costs no allocation for its object, its parsed
  // header's submessage and strings. Reactor only; at most kMaxPooledCalls
  // (enough for 64 calls in flight per connection, ~90 KiB); freed on this
  // reactor by Shutdown (or the destructor).
  static constexpr size_t kMaxPooledCalls = 64;
  std::vector<InboundCall*> spare_calls_;
  void FreeSpareCalls();
  size_t conn_header_received_ = 0;  // server: bytes of the connection header seen
  uint8_t conn_header_[kConnHeaderLength];

  // Writing: intrusive FIFO of transfers; the head may be partly written.
  OutboundTransfer* out_head_ = nullptr;
  OutboundTransfer* out_tail_ = nullptr;
  OutboundTransfer conn_header_transfer_;  // client: the connection header

  // Client: calls sent or queued, by call id.
  int32_t next_call_id_ = 0;
  CallIdMap<OutboundCall> awaiting_response_;
  RequestHeader scratch_request_header_;  // reused to serialize request headers
  // Server: calls being handled, by call id.
  CallIdMap<InboundCall> calls_being_handled_;
};

}  // namespace crossfree::rpc
