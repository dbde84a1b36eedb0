// SPDX-License-Identifier: Apache-2.0
// OutboundCall: the client-side state of one call, from the caller's request
// to the callback. Embedded in the RpcController that owns it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ev.h>
#include <google/protobuf/message_lite.h>

#include "rpc/connection.h"
#include "rpc/header_codec.h"
#include "rpc/remote_method.h"
#include "rpc/response_callback.h"
#include "rpc/rpc_controller.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"
#include "rpc/transfer.h"

namespace crossfree::rpc {

class Connection;
class Messenger;
class RpcController;

// The parsed response of a call: header, the frame it came in and views of
// the body and sidecars inside that frame.
struct CallResponse {
  ParsedResponseHeader header;
  std::unique_ptr<InboundTransfer> transfer;
  std::string_view body_pb;
  std::vector<std::string_view> sidecars;
};

// Owner: exactly one, the RpcController it is embedded in (fix 5: no shared
// ownership, so the thread that made the call's buffers frees them). The
// client reactor holds raw pointers only while the call is in flight, and
// touches nothing after running the callback.
// Threads: Prepare* on the caller thread; everything else on the client
// reactor until the callback; afterwards the owner (caller) again. A sync
// caller that owns its connection's read side (Connection::ReadOwnResponse)
// parses the response and runs the callback itself, on its thread, in place
// of the reactor.
class OutboundCall final : public TransferCallbacks {
 public:
  // The call's life, public as RpcController::state() (rpc_controller.h).
  using State = CallState;
  static const char* StateName(State s);

  explicit OutboundCall(RpcController* controller) : controller_(controller) {}
  ~OutboundCall();
  OutboundCall(const OutboundCall&) = delete;
  OutboundCall& operator=(const OutboundCall&) = delete;

  // Caller thread: serializes the request body and keeps the rest.
  Status Prepare(const Sockaddr& remote, const RemoteMethod* method,
                 const google::protobuf::MessageLite& request,
                 google::protobuf::MessageLite* response, ResponseCallback callback,
                 std::chrono::nanoseconds timeout);
  // Owner thread, only when finished: frees the per-call state.
  void Reset();

  // --- client reactor thread only (or the caller, under the connection's
  // mutex, in Connection::TrySendCallDirect) ---
  // Builds the header for `call_id` and fills transfer().
  void SerializeHeader(int32_t call_id);
  OutboundTransfer* transfer() { return &transfer_; }
  void NotifyTransferFinished() override;
  void NotifyTransferAborted(const Status& status) override;
  // Parses the response (status from the header/body) and finishes the call.
  // `conn` (the call's connection) gets the response frame back for reuse
  // unless the call keeps it (sidecars, legacy_client_transfer). On the
  // reactor, a call with caller_may_read lets `conn` lend its read side
  // between the recycling and the callback (Connection::MaybeParkReadSide):
  // after the callback the caller may already be sending its next call.
  void HandleResponse(CallResponse* response, Connection* conn);
  // Runs the callback once; the call must no longer be referenced by any
  // connection. The callback may free the call.
  void Finish(State state, const Status& status);
  // The timer armed when the call is queued; fires AbandonCall(TimedOut).
  void ArmTimer(struct ev_loop* loop, Connection* conn);
  void StopTimer();
  // Connection::TrySendCallDirect: the call is on `conn` without a timer.
  void SetDirectConnection(Connection* conn) {
    timer_loop_ = nullptr;
    timer_conn_ = conn;
    timer_armed_ = false;
  }
  // Client reactor: the caller saw the deadline pass on a call sent without
  // a timer; abandons it with TimedOut as the timer would, unless finished.
  void TimeOut();
  // Cancel() support: handles a cancel request posted to the reactor.
  void HandleCancelTask();

  State state() const { return state_.load(std::memory_order_acquire); }
  void set_state(State s) { state_.store(s, std::memory_order_release); }
  bool is_finished() const { return state() >= State::kFinishedSuccess; }
  const Status& status() const { return status_; }
  const Sockaddr& remote() const { return remote_; }
  const RemoteMethod* method() const { return method_; }
  int32_t call_id() const { return call_id_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  bool has_deadline() const { return has_deadline_; }
  uint32_t timeout_millis() const { return timeout_millis_; }
  // Set by Connection::AbandonCall while the frame is still being written.
  void set_deferred_status(State s, const Status& st) {
    deferred_state_ = s;
    deferred_status_ = st;
    has_deferred_ = true;
  }
  bool in_awaiting_map = false;
  // The client reactor the call was posted to (set by Proxy before posting).
  class Reactor* reactor = nullptr;
  // Sync calls posted to the reactor: the reactor stores the call's
  // connection here, so the caller's proxy can send its next call directly.
  bool want_connection = false;
  ConnectionRef connection_for_caller;
  // Outbound sidecars (owned by the controller), sent after the body.
  const std::vector<std::string>* outbound_sidecars = nullptr;

  // Caller side of Cancel(): counts cancel tasks not yet run, so the
  // reactor defers the callback until they have run. A caller that reads its
  // own response (Connection::ReadOwnResponse) finishes the call on its own
  // thread only after closing it to cancels (ClaimForReader); Cancel() then
  // posts nothing. Reset to 0 by Prepare.
  std::atomic<int> pending_cancels{0};
  static constexpr int kClosedToCancels = -(1 << 30);
  // The reading caller, under the connection's mutex: true if no cancel is
  // pending, and from now on none will be posted.
  bool ClaimForReader() {
    int zero = 0;
    return pending_cancels.compare_exchange_strong(zero, kClosedToCancels,
                                                   std::memory_order_acq_rel);
  }
  // Set by SyncRequest when the messenger lets sync callers read their own
  // responses: after the reactor delivered this call's response it may lend
  // the read side (Connection::MaybeParkReadSide). Caller thread, before the
  // call is sent.
  bool caller_may_read = false;

  // Results, read by the owner after the callback.
  const CallResponse* response() const;
  const ErrorStatusPB* error() const { return error_.get(); }

 private:
  static void TimerCallback(struct ev_loop* loop, ev_timer* w, int revents);

  RpcController* const controller_;
  Sockaddr remote_;
  const RemoteMethod* method_ = nullptr;
  google::protobuf::MessageLite* response_pb_ = nullptr;
  // The serialized request body: in frame_inline_ (body_inline_) when it
  // fits, else here.
  std::string request_body_;
  size_t body_size_ = 0;
  bool body_inline_ = false;
  ResponseCallback callback_;
  ResponseCallback* legacy_callback_ = nullptr;  // legacy_client_transfer: boxed on C
  std::chrono::steady_clock::time_point deadline_{};
  bool has_deadline_ = false;
  uint32_t timeout_millis_ = 0;
  std::chrono::nanoseconds timeout_{0};

  std::atomic<State> state_{State::kReady};
  Status status_;
  int32_t call_id_ = -1;

  // The request frame: a small body is serialized by Prepare at
  // kInlineHeaderBytes, and SerializeHeader (on whichever thread sends it)
  // writes the head bytes (prefix, header, body varint) right before it,
  // so the frame is one slice and the body needs no string. A larger body
  // is in request_body_ and the head starts at 0. A head longer than
  // kInlineHeaderBytes (long method names) goes to header_heap_, freed as
  // soon as the frame is sent.
  static constexpr size_t kInlineHeaderBytes = 160;
  static constexpr size_t kInlineBodyBytes = 256;
  uint8_t frame_inline_[kInlineHeaderBytes + kInlineBodyBytes];
  std::unique_ptr<uint8_t[]> header_heap_;
  OutboundTransfer transfer_;

  ev_timer timer_;
  bool timer_armed_ = false;
  struct ev_loop* timer_loop_ = nullptr;
  Connection* timer_conn_ = nullptr;

  bool has_deferred_ = false;
  State deferred_state_ = State::kReady;
  Status deferred_status_;
  bool finish_pending_cancel_ = false;
  State pending_finish_state_ = State::kReady;

  // The response: a member moved into (fixed) or a heap object made on the
  // client reactor (legacy_call_response).
  CallResponse response_;
  CallResponse* legacy_response_ = nullptr;
  std::unique_ptr<ErrorStatusPB> error_;
};

}  // namespace crossfree::rpc
