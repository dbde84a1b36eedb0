// SPDX-License-Identifier: Apache-2.0
// CalculatorService implementation.
#include "rpc/calculator_service.h"

#include <chrono>
#include <thread>

namespace crossfree::rpc::test {

void CalculatorService::Add(const AddRequestPB* req, AddResponsePB* resp, RpcContext* context) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  resp->set_result(req->x() + req->y());
  context->RespondSuccess();
}

void CalculatorService::Echo(const EchoRequestPB* req, EchoResponsePB* resp,
                             RpcContext* context) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  resp->set_data(req->data());
  if (req->echo_sidecars()) {
    for (int i = 0; i < context->num_inbound_sidecars(); ++i) {
      std::string_view sc;
      Status s = context->GetInboundSidecar(i, &sc);
      int idx;
      if (s.ok()) s = context->AddOutboundSidecar(std::string(sc), &idx);
      if (!s.ok()) {
        context->RespondFailure(s);
        return;
      }
    }
  }
  context->RespondSuccess();
}

void CalculatorService::Sleep(const SleepRequestPB* req, SleepResponsePB* resp,
                              RpcContext* context) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  resp->set_had_deadline(context->has_deadline());
  auto finish = [req, context] {
    std::this_thread::sleep_for(std::chrono::microseconds(req->sleep_micros()));
    if (req->has_fail_with()) {
      context->RespondFailure(Status::RuntimeError(req->fail_with()));
    } else {
      context->RespondSuccess();
    }
  };
  if (req->deferred()) {
    std::thread(finish).detach();
  } else {
    finish();
  }
}

}  // namespace crossfree::rpc::test
