// SPDX-License-Identifier: Apache-2.0
// RpcController: per-call options (timeout, sidecars) in, and results
// (status, error, sidecars) out; owns the call's client-side state.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/in_place.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/status.h"

namespace crossfree::rpc {

class OutboundCall;

// Where a call is in its life (RpcController::state()).
enum class CallState {
  kReady,            // prepared by the caller, not yet on a reactor
  kOnOutboundQueue,  // queued on a connection (or waiting for connect)
  kSending,          // partly written
  kSent,             // written, waiting for the response
  kFinishedSuccess,
  kFinishedError,
  kTimedOut,
  kCancelled,
};

// One controller serves one call at a time; Reset() it to reuse it.
// Owner: the caller. It must stay alive until the call's callback has run
// (sync calls guarantee that by returning after it).
// Threads: set options and read results on the owner's thread; Cancel() from
// any thread while the call is in flight.
class RpcController {
 public:
  RpcController();
  ~RpcController();
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
  bool finished() const;
  // The call's outcome: OK, or the local or remote error. RemoteError means
  // the server answered with an ErrorStatusPB (see error_response()).
  const Status& status() const;
  const ErrorStatusPB* error_response() const;
  CallState state() const;
  int32_t call_id() const;

  // Response sidecar `idx`; the view lives as long as the controller is not
  // reset. NotFound when out of range.
  Status GetInboundSidecar(int idx, std::string_view* out) const;
  int num_inbound_sidecars() const;

  // Owner thread, once finished (or never started): readies the controller
  // for another call and frees the previous call's state.
  void Reset();

  // The call's client-side state, for the RPC core (outbound_call.h).
  OutboundCall* call() { return call_.get(); }
  const std::vector<std::string>& outbound_sidecars() const { return outbound_sidecars_; }

 private:
  std::chrono::nanoseconds timeout_{0};
  std::vector<std::string> outbound_sidecars_;
  // The OutboundCall, in place: no allocation per controller, and its
  // definition (and the core's internals it includes) stays out of this
  // header. rpc_controller.cc checks that it fits.
  static constexpr size_t kCallBytes = 1040;
  InPlace<OutboundCall, kCallBytes, alignof(std::max_align_t)> call_;
};

}  // namespace crossfree::rpc
