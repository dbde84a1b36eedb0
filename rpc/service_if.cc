// SPDX-License-Identifier: Apache-2.0
// ServiceIf::Handle: method dispatch for generated services.
#include "rpc/service_if.h"

#include "rpc/alloc_pattern.h"
#include "rpc/inbound_call.h"
#include "rpc/rpc_context.h"

namespace crossfree::rpc {

int ServiceIf::FindMethod(std::string_view name) const {
  for (size_t i = 0; i < methods_.size(); ++i) {
    if (methods_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

void ServiceIf::Handle(InboundCall* call) {
  int i = call->method_index();
  Handle(call, i != InboundCall::kMethodNotLookedUp ? i : FindMethod(call->method_name()));
}

void ServiceIf::Handle(InboundCall* call, int method_index) {
  if (method_index < 0 || static_cast<size_t>(method_index) >= methods_.size()) {
    call->RespondFailure(ErrorStatusPB::ERROR_NO_SUCH_METHOD,
                         Status::NotFound("no such method " + std::string(call->method_name()) +
                                          " in service " + service_name()));
    return;
  }
  const MethodInfo* method = &methods_[method_index];
  const bool legacy = GetAllocPattern().legacy_messages;
  // Legacy: messages on the call's arena (blocks allocated here, on the
  // worker, and freed by the reactor with the call). Fixed: constructed in
  // memory of the call (or on an arena whose first block is there); the
  // responder destroys them (RpcContext::ReleaseMessages).
  google::protobuf::MessageLite* req;
  google::protobuf::MessageLite* resp;
  if (legacy) {
    req = method->new_request(call->arena());
    resp = method->new_response(call->arena());
  } else {
    call->ConstructMessages(*method, &req, &resp);
  }
  RpcContext* ctx = call->CreateContext(req, resp, legacy);
  std::string_view body = call->body_pb();
  // ParsePartial + IsInitialized: the same check as ParseFromArray without
  // protobuf logging every bad request.
  if (!req->ParsePartialFromArray(body.data(), static_cast<int>(body.size()))) {
    ctx->RespondRpcFailure(ErrorStatusPB::ERROR_INVALID_REQUEST,
                           Status::InvalidArgument("invalid parameter for call " +
                                                   service_name() + "." + std::string(call->method_name()) +
                                                   ": unparsable request body"));
    return;
  }
  if (!req->IsInitialized()) {
    ctx->RespondRpcFailure(ErrorStatusPB::ERROR_INVALID_REQUEST,
                           Status::InvalidArgument("invalid parameter for call " +
                                                   service_name() + "." + std::string(call->method_name()) +
                                                   ": missing required fields: " +
                                                   req->InitializationErrorString()));
    return;
  }
  method->handler(this, req, resp, ctx);
}

}  // namespace crossfree::rpc
