// SPDX-License-Identifier: Apache-2.0
// RpcController: per-call options (timeout, sidecars) in, and results
// (status, error, sidecars) out; owns the call's client-side state.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/outbound_call.h"
#include "rpc/status.h"

namespace crossfree::rpc {

// One controller serves one call at a time; Reset() it to reuse it.
// Owner: the caller. It must stay alive until the call's callback has run
// (sync calls guarantee that by returning after it).
// Threads: set options and read results on the owner's thread; Cancel() from
// any thread while the call is in flight.
class RpcController {
 public:
  RpcController() : call_(this) {}
  RpcController(const RpcController&) = delete;
  RpcController& operator=(const RpcController&) = delete;

  // Zero (the default) means no timeout.
  void set_timeout(std::chrono::nanoseconds timeout) { timeout_ = timeout; }
  std::chrono::nanoseconds timeout() const { return timeout_; }

  // Attaches a sidecar to the request; *idx gets its index. InvalidArgument
  // beyond kMaxSidecars.
  Status AddOutboundSidecar(std::string data, int* idx);

  // Asks the client reactor to cancel the call: it then finishes with
  // Aborted ("call cancelled") unless it already finished. A call being
  // written finishes once its frame is out.
  void Cancel();

  // True once the callback ran (or is running).
  bool finished() const { return call_.is_finished(); }
  // The call's outcome: OK, or the local or remote error. RemoteError means
  // the server answered with an ErrorStatusPB (see error_response()).
  const Status& status() const { return call_.status(); }
  const ErrorStatusPB* error_response() const { return call_.error(); }
  OutboundCall::State state() const { return call_.state(); }
  int32_t call_id() const { return call_.call_id(); }

  // Response sidecar `idx`; the view lives as long as the controller is not
  // reset. NotFound when out of range.
  Status GetInboundSidecar(int idx, std::string_view* out) const;
  int num_inbound_sidecars() const;

  // Owner thread, once finished (or never started): readies the controller
  // for another call and frees the previous call's state.
  void Reset();

  OutboundCall* call() { return &call_; }
  const std::vector<std::string>& outbound_sidecars() const { return outbound_sidecars_; }

 private:
  std::chrono::nanoseconds timeout_{0};
  std::vector<std::string> outbound_sidecars_;
  OutboundCall call_;
};

}  // namespace crossfree::rpc
