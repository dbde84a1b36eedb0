// SPDX-License-Identifier: Apache-2.0
// InboundCall: the server-side state of one call, from the received frame to
// the written response. Created and destroyed by its owner: the server
// reactor of its connection, or the connection's ConnectionThread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/arena.h>
#include <google/protobuf/message_lite.h>

#include "rpc/connection.h"
#include "rpc/header_codec.h"
#include "rpc/rpc_context.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/service_if.h"
#include "rpc/status.h"
#include "rpc/transfer.h"

namespace crossfree::rpc {

class ConnectionThread;
class LegacyResponseCallbacks;
class Messenger;

// Owner: its Connection's reactor (or a ConnectionThread, below). The
// reactor allocates it when a request
// frame arrives (or takes one from the connection's InboundCallPool) and,
// after the response is written (or the connection dies), returns it to
// that pool or deletes it (Destroy), so in the fixed pattern the call,
// its request buffer, its embedded RpcContext and its embedded response
// transfer are all allocated and freed by the same server reactor thread.
// Threads: Parse, Recycle, Reuse and the TransferCallbacks on the owner's
// thread (checked with CROSSFREE_DCHECK where the owner is a reactor); the
// thread that runs the handler (a worker, the reactor for inline methods,
// the connection thread) reads the request, and any thread may respond,
// once; after responding the responder must not touch the call. While live (not pooled)
// it holds a ConnectionRef, so a response made after the connection closed
// still finds it.
// Connection-thread mode (MessengerOptions::connection_threads): the call
// belongs to a ConnectionThread instead (connection() is nullptr). That
// thread makes it once per connection, lends it each request frame
// (Reuse), runs the handler, writes the response itself and Recycles it;
// QueueResponse only tells it that the response is ready, and the frame
// goes back to it (ConnectionThread::RecycleInboundTransfer). Destroy is
// never called on such a call.
class InboundCall final : public TransferCallbacks {
 public:
  InboundCall(Connection* conn, std::unique_ptr<InboundTransfer> transfer);
  // Connection-thread mode: a call with no frame yet, as if pooled (Reuse
  // starts each call).
  explicit InboundCall(ConnectionThread* owner);
  ~InboundCall();
  InboundCall(const InboundCall&) = delete;
  InboundCall& operator=(const InboundCall&) = delete;

  // The end of a call, in place of delete: on the connection's reactor the
  // connection counts it out and pools or deletes it
  // (Connection::ReleaseInboundCall); on any other thread (a reactor that
  // is shutting down aborted the response task) it is deleted.
  static void Destroy(InboundCall* call);

  // InboundCallPool (reactor thread) or the ConnectionThread. CanRecycle: false if the call is
  // too big to keep (many sidecars, long names). Recycle: frees the
  // per-call state (as the destructor would) and drops the connection
  // reference, but keeps the object, its parsed-header storage and its
  // buffers' capacity. Reuse: starts a new call on `transfer` and takes a
  // connection reference again.
  bool CanRecycle() const;
  void Recycle();
  void Reuse(std::unique_ptr<InboundTransfer> transfer);

  // Cancellation, polled by the handler through RpcContext: true once the
  // client's connection closed, or once the messenger's shutdown grace
  // period ended (Cancel, on the reactor). Any thread, while the call is
  // live (it holds a connection reference).
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const;

  // The owner's thread: parses header, method and sidecars. Corruption naming
  // the problem; the connection then closes.
  Status Parse();

  int32_t call_id() const { return header_.call_id; }
  // Views into the request frame, valid until the call responds.
  std::string_view service_name() const { return header_.service_name; }
  std::string_view method_name() const { return header_.method_name; }
  std::string_view body_pb() const { return body_pb_; }
  // Views into the request frame, valid until the call responds.
  const std::vector<std::string_view>& inbound_sidecars() const { return sidecars_; }
  bool has_deadline() const { return has_deadline_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  std::chrono::steady_clock::time_point arrival() const { return arrival_; }
  // nullptr in connection-thread mode.
  Connection* connection() const { return conn_; }
  // The messenger that received the call (any thread, while live).
  Messenger* messenger() const;
  // The index of the call's method in its service (ServiceIf::FindMethod),
  // once a service pool looked it up on the reactor (to decide whether it
  // runs inline), so the worker does not look it up again;
  // kMethodNotLookedUp before.
  static constexpr int kMethodNotLookedUp = -2;
  int method_index() const { return method_index_; }
  void set_method_index(int i) { method_index_ = i; }

  // Responding, from any thread, once: Prepare* serializes the response (or
  // the error) into the call; QueueResponse then posts the call back to its
  // reactor (or writes it directly, Connection::TryWriteResponseDirect, or
  // hands it to its ConnectionThread) and must be the responder's last
  // touch of the call.
  // `sidecars` are moved into the call.
  void PrepareSuccess(const google::protobuf::MessageLite& response,
                      std::vector<std::string>* sidecars);
  void PrepareFailure(ErrorStatusPB::RpcErrorCodePB code, const Status& status);
  void QueueResponse();
  // PrepareFailure + QueueResponse.
  void RespondFailure(ErrorStatusPB::RpcErrorCodePB code, const Status& status);

  // Worker thread: the context for a generated service handler. Fixed: the
  // context is embedded in the call. Legacy (legacy_messages): new'ed here and
  // deleted by the responder, and messages go on arena(), whose blocks this
  // thread allocates and the reactor frees with the call.
  RpcContext* CreateContext(google::protobuf::MessageLite* request,
                            google::protobuf::MessageLite* response, bool legacy);
  google::protobuf::Arena* arena();
  // Fixed pattern, on the thread that runs the handler: the request and
  // response of `method`, constructed without an arena in this call's
  // message block when both fit (the common small-message case: no arena
  // to set up or tear down, no heap), else on a fresh arena whose first
  // block is that block (blocks beyond it are allocated by this thread and
  // freed by ReleaseMessages).
  void ConstructMessages(const MethodInfo& method, google::protobuf::MessageLite** request,
                         google::protobuf::MessageLite** response);
  // The responder (the handler's thread for synchronous handlers), after
  // serializing the response: destroys the messages (and frees any arena
  // blocks), so they die on the thread that made them, as the
  // new/delete'd messages did before (fix 4). Also run when the call ends
  // without a response having been made.
  void ReleaseMessages();

  // The writer's thread (the reactor, a direct writer under the
  // connection's mutex, or the connection thread): the transfer to write
  // and the result of writing it.
  OutboundTransfer* response_transfer() { return response_transfer_ptr_; }
  void NotifyTransferFinished() override;
  void NotifyTransferAborted(const Status& status) override;

  // Connection::direct_done_ link (guarded by the connection's mu_).
  InboundCall* next_direct_done = nullptr;

 private:
  friend class LegacyResponseCallbacks;
  // Writes the frame (prefix, header, body) and lists it with the sidecars
  // in the response transfer.
  void PrepareResponse(bool is_error, const google::protobuf::MessageLite& body);
  // Frees what a call owns beyond its object (shared by ~ and Recycle).
  void ReleaseCallState();

  Connection* const conn_;           // nullptr in connection-thread mode
  ConnectionThread* const thread_conn_ = nullptr;  // that mode's owner
  ConnectionRef conn_ref_;  // empty while pooled
  bool pooled_ = false;     // in the connection's pool
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<InboundTransfer> transfer_;
  ParsedRequestHeader header_;
  int method_index_ = kMethodNotLookedUp;
  std::string_view body_pb_;
  std::vector<std::string_view> sidecars_;
  std::chrono::steady_clock::time_point arrival_;
  std::chrono::steady_clock::time_point deadline_{};
  bool has_deadline_ = false;

  std::optional<RpcContext> context_;
  std::optional<google::protobuf::Arena> arena_;
  // Fixed pattern: enough for the header of protobuf's arena plus small
  // request/response messages (AddRequestPB + AddResponsePB use ~100 bytes).
  static constexpr size_t kMessageArenaBytes = 512;
  static constexpr size_t kMessageBlockAlign = 16;
  alignas(kMessageBlockAlign) char message_arena_block_[kMessageArenaBytes];
  std::optional<google::protobuf::Arena> message_arena_;
  // Messages constructed in message_arena_block_ (no arena), destroyed by
  // ReleaseMessages; nullptr otherwise.
  google::protobuf::MessageLite* placed_request_ = nullptr;
  google::protobuf::MessageLite* placed_response_ = nullptr;

  // Response (fixed pattern): small responses go in the inline buffer, larger
  // ones reuse the request buffer when it is big enough.
  static constexpr size_t kInlineResponseBytes = 256;
  uint8_t response_inline_[kInlineResponseBytes];
  std::unique_ptr<uint8_t[]> response_heap_;
  std::vector<std::string> outbound_sidecars_;
  OutboundTransfer response_transfer_;
  OutboundTransfer* response_transfer_ptr_ = nullptr;
  // Legacy response pieces, new'ed by the responder and deleted by the reactor.
  std::string* legacy_buffer_ = nullptr;
  OutboundTransfer* legacy_transfer_ = nullptr;
  LegacyResponseCallbacks* legacy_callbacks_ = nullptr;
};

}  // namespace crossfree::rpc
