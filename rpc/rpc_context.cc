// SPDX-License-Identifier: Apache-2.0
// RpcContext implementation.
#include "rpc/rpc_context.h"

#include "rpc/connection.h"
#include "rpc/deferred_pool.h"
#include "rpc/inbound_call.h"
#include "rpc/messenger.h"
#include "rpc/reactor.h"
#include "rpc/serialization.h"

namespace crossfree::rpc {

RpcContext::RpcContext(InboundCall* call, google::protobuf::MessageLite* request,
                       google::protobuf::MessageLite* response, bool legacy)
    : call_(call), request_(request), response_(response), legacy_(legacy) {}

void RpcContext::ReleaseMessages() {
  if (!legacy_) {
    // Fix 4: made on the call's message arena by the worker that ran the
    // handler; a synchronous handler responds on that same worker, so any
    // heap block or string of theirs dies where it was born.
    call_->ReleaseMessages();
  }
  request_ = nullptr;
  response_ = nullptr;
}

void RpcContext::Done() {
  InboundCall* call = call_;
  if (legacy_) delete this;  // KRPC: the context deletes itself.
  // Last: the call (and an embedded context) may be gone after this.
  call->QueueResponse();
}

void RpcContext::RespondSuccess() {
  call_->PrepareSuccess(*response_, &outbound_sidecars_);
  ReleaseMessages();
  Done();
}

void RpcContext::RespondFailure(const Status& status) {
  RespondRpcFailure(ErrorStatusPB::ERROR_APPLICATION, status);
}

void RpcContext::RespondRpcFailure(ErrorStatusPB::RpcErrorCodePB code, const Status& status) {
  call_->PrepareFailure(code, status);
  ReleaseMessages();
  Done();
}

Status RpcContext::GetInboundSidecar(int idx, std::string_view* out) const {
  const auto& sc = call_->inbound_sidecars();
  if (idx < 0 || static_cast<size_t>(idx) >= sc.size()) {
    return Status::NotFound("no inbound sidecar " + std::to_string(idx) + " (the request has " +
                            std::to_string(sc.size()) + ")");
  }
  *out = sc[idx];
  return Status::OK();
}

int RpcContext::num_inbound_sidecars() const {
  return static_cast<int>(call_->inbound_sidecars().size());
}

Status RpcContext::AddOutboundSidecar(std::string data, int* idx) {
  return AppendOutboundSidecar(&outbound_sidecars_, std::move(data), idx);
}

bool RpcContext::cancelled() const { return call_->cancelled(); }

bool RpcContext::Defer(std::function<void()> work) {
  DeferredPool* pool = call_->messenger()->deferred_pool();
  RpcContext* self = this;
  Status s = pool->Submit([self, work = std::move(work)](const Status& st) {
    if (st.ok()) {
      work();
    } else {
      self->RespondRpcFailure(ErrorStatusPB::FATAL_SERVER_SHUTTING_DOWN,
                              Status::ServiceUnavailable(st.message()));
    }
  });
  if (!s.ok()) {
    RespondRpcFailure(ErrorStatusPB::ERROR_SERVER_TOO_BUSY, s);
    return false;
  }
  return true;
}

bool RpcContext::has_deadline() const { return call_->has_deadline(); }
std::chrono::steady_clock::time_point RpcContext::deadline() const { return call_->deadline(); }
int32_t RpcContext::call_id() const { return call_->call_id(); }

}  // namespace crossfree::rpc
