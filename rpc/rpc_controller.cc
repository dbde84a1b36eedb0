// SPDX-License-Identifier: Apache-2.0
// RpcController implementation.
#include "rpc/rpc_controller.h"

#include "rpc/outbound_call.h"
#include "rpc/reactor.h"
#include "rpc/serialization.h"

namespace crossfree::rpc {

RpcController::RpcController() : call_(this) {}
RpcController::~RpcController() = default;

bool RpcController::finished() const { return call_->is_finished(); }
const Status& RpcController::status() const { return call_->status(); }
const ErrorStatusPB* RpcController::error_response() const { return call_->error(); }
CallState RpcController::state() const { return call_->state(); }
int32_t RpcController::call_id() const { return call_->call_id(); }

Status RpcController::AddOutboundSidecar(std::string data, int* idx) {
  return AppendOutboundSidecar(&outbound_sidecars_, std::move(data), idx);
}

void RpcController::Cancel() {
  OutboundCall* call = call_.get();
  // reactor is set when the call is posted; kReady before that.
  if (call->is_finished() || call->reactor == nullptr) return;
  if (call->pending_cancels.fetch_add(1, std::memory_order_acq_rel) < 0) {
    // Closed to cancels: the caller reading its own response is finishing
    // the call (OutboundCall::ClaimForReader); there is nothing to cancel.
    call->pending_cancels.fetch_sub(1, std::memory_order_acq_rel);
    return;
  }
  call->reactor->ScheduleTask([call](const Status& st) {
    if (st.ok()) {
      call->HandleCancelTask();
    } else {
      // Reactor shutting down: its connections already failed the call; only
      // release a callback deferred for this task.
      call->pending_cancels.fetch_sub(1, std::memory_order_acq_rel);
    }
  });
}

Status RpcController::GetInboundSidecar(int idx, std::string_view* out) const {
  const CallResponse* r = call_->response();
  if (idx < 0 || static_cast<size_t>(idx) >= r->sidecars.size()) {
    return Status::NotFound("no inbound sidecar " + std::to_string(idx) + " (the response has " +
                            std::to_string(r->sidecars.size()) + ")");
  }
  *out = r->sidecars[idx];
  return Status::OK();
}

int RpcController::num_inbound_sidecars() const {
  return static_cast<int>(call_->response()->sidecars.size());
}

void RpcController::Reset() {
  call_->Reset();
  call_->reactor = nullptr;
  outbound_sidecars_.clear();
  timeout_ = std::chrono::nanoseconds(0);
}

}  // namespace crossfree::rpc
