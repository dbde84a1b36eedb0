// SPDX-License-Identifier: Apache-2.0
// RpcContext: what a service handler gets to answer one call.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/message_lite.h>

#include "rpc/rpc_header.pb.h"
#include "rpc/status.h"

namespace crossfree::rpc {

class InboundCall;

// Owner: the InboundCall (embedded; fixed pattern) or itself (legacy_messages:
// new'ed on the worker, deletes itself when it responds).
// Threads: the handler gets it on a worker thread; RespondSuccess /
// RespondFailure may be called from any thread, exactly once, at any time.
// After responding, neither the context nor the request/response messages
// may be touched.
class RpcContext {
 public:
  RpcContext(InboundCall* call, google::protobuf::MessageLite* request,
             google::protobuf::MessageLite* response, bool legacy);
  RpcContext(const RpcContext&) = delete;
  RpcContext& operator=(const RpcContext&) = delete;

  // Sends the response message (with any sidecars added).
  void RespondSuccess();
  // Sends ERROR_APPLICATION with the status text.
  void RespondFailure(const Status& status);
  // Sends the given RPC-level error code.
  void RespondRpcFailure(ErrorStatusPB::RpcErrorCodePB code, const Status& status);

  // Request sidecar `idx`: a view valid until the call responds.
  Status GetInboundSidecar(int idx, std::string_view* out) const;
  int num_inbound_sidecars() const;
  // Adds a response sidecar; *idx gets its index.
  Status AddOutboundSidecar(std::string data, int* idx);

  // True once the call's answer can no longer reach anyone: the client's
  // connection closed (or the server's shutdown grace period ran out). A
  // long handler should poll it, stop early and still respond (with any
  // status; the response is dropped). Any thread.
  bool cancelled() const;

  // Moves the rest of the handler off the service-pool worker: `work` runs
  // on the messenger's bounded deferred pool (MessengerOptions::
  // deferred_threads, deferred_queue_length) and must respond. When the
  // pool is full this answers ERROR_SERVER_TOO_BUSY itself and returns
  // false (`work` is dropped unrun); when the server shuts down before
  // `work` ran, it answers FATAL_SERVER_SHUTTING_DOWN. Worker thread, before
  // responding.
  bool Defer(std::function<void()> work);

  // The client's deadline, if it sent a timeout.
  bool has_deadline() const;
  std::chrono::steady_clock::time_point deadline() const;
  int32_t call_id() const;

 private:
  // Fixed pattern: the messages live in the call's message block (or on an
  // arena whose first block it is, more blocks from the handler's thread);
  // they are destroyed here, by the responder (the handler's thread for
  // synchronous handlers).
  // Legacy: they live on the call's heap arena, freed with the call.
  void ReleaseMessages();
  void Done();

  InboundCall* call_;
  google::protobuf::MessageLite* request_;
  google::protobuf::MessageLite* response_;
  const bool legacy_;
  std::vector<std::string> outbound_sidecars_;
};

}  // namespace crossfree::rpc
