// SPDX-License-Identifier: Apache-2.0
// CalculatorService: the implementation of rpc_test_service.proto used by
// rpc-bench and tests/rpc.
#pragma once

#include <atomic>

#include "rpc/rpc_test_service.crpc.h"

namespace crossfree::rpc::test {

// Thread-safe; handlers run on worker threads.
//  Add:   result = x + y, answered on the worker.
//  Echo:  data echoed; request sidecars echoed as response sidecars on demand.
//  Sleep: sleeps, then answers on the worker or (deferred) on the
//         messenger's deferred pool; can fail with ERROR_APPLICATION; stops
//         early with ERROR_APPLICATION "Sleep cancelled" when the call is
//         cancelled (client gone).
class CalculatorService : public CalculatorServiceIf {
 public:
  void Add(const AddRequestPB* req, AddResponsePB* resp, RpcContext* context) override;
  void Echo(const EchoRequestPB* req, EchoResponsePB* resp, RpcContext* context) override;
  void Sleep(const SleepRequestPB* req, SleepResponsePB* resp, RpcContext* context) override;

  // Number of handler invocations, for tests.
  int calls_handled() const { return calls_.load(); }
  // Sleep calls that stopped early because they were cancelled.
  int sleeps_cancelled() const { return cancelled_.load(); }
  // Sleep calls whose sleep has begun and not ended: the event a test waits
  // for before it acts on "a handler is running" (no sleep in the test). A
  // process running the service (rpc-server --verbose) logs the same two
  // events as info lines "CalculatorService: Sleep started" and
  // "CalculatorService: Sleep cancelled".
  int sleeps_running() const { return running_.load(); }

 private:
  std::atomic<int> calls_{0};
  std::atomic<int> cancelled_{0};
  std::atomic<int> running_{0};
};

}  // namespace crossfree::rpc::test
