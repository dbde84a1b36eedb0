// SPDX-License-Identifier: Apache-2.0
// CalculatorService implementation.
#include "rpc/calculator_service.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "rpc/logging.h"

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
  auto finish = [this, req, context] {
    // Sleeps in slices, so a call whose client went away stops early (the
    // server's worker is then free for the next call).
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(req->sleep_micros());
    running_.fetch_add(1);
    Log(LogLevel::kInfo, "CalculatorService: Sleep started");
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      if (now >= until) break;
      if (context->cancelled()) {
        running_.fetch_sub(1);
        cancelled_.fetch_add(1, std::memory_order_relaxed);
        Log(LogLevel::kInfo, "CalculatorService: Sleep cancelled");
        context->RespondFailure(Status::Aborted("Sleep cancelled: the call was cancelled"));
        return;
      }
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          until - now, std::chrono::milliseconds(10)));
    }
    running_.fetch_sub(1);
    if (req->has_fail_with()) {
      context->RespondFailure(Status::RuntimeError(req->fail_with()));
    } else {
      context->RespondSuccess();
    }
  };
  if (req->deferred()) {
    context->Defer(finish);  // answers SERVER_TOO_BUSY itself when the pool is full
  } else {
    finish();
  }
}

}  // namespace crossfree::rpc::test
