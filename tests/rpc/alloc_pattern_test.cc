// SPDX-License-Identifier: Apache-2.0
// Proves, per KUDU-1865 fix, that a unary call makes no cross-thread
// allocation in the fixed pattern and exactly the historical pairs when that
// fix is switched back (counted in-process by alloc_counter.cc).
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/alloc_pattern.h"
#include "rpc/logging.h"
#include "bench/rpc/alloc_counter.h"
#include "tests/rpc/rpc_test_util.h"

namespace crossfree::rpc {
namespace {

using Pairs = std::map<std::string, long>;
constexpr int kCalls = 200;
constexpr long kOneOffAllocations = 10;

std::string Show(const Pairs& p) {
  std::string out;
  for (auto& [k, v] : p) out += "  " + k + ": " + std::to_string(v) + "\n";
  return out.empty() ? "  (none)\n" : out;
}

// The opt-in fast paths (docs/guide/rpc.md, "Fewer thread hand-offs").
struct FastPaths {
  bool inline_handlers = false;  // Add runs on the server reactor
  bool caller_reads = false;     // the caller reads its own responses
  bool connection_threads = false;  // the server serves the connection on its own thread
};

// Runs kCalls sync Add calls (1 client thread, 1 client reactor, 1 server
// reactor, 1 worker) under `pattern` and returns the cross-thread pairs.
// `allocs_by_role`, if given, gets the allocations of those calls by thread.
Pairs CountSyncCalls(const AllocPattern& pattern, Pairs* allocs_by_role = nullptr,
                     FastPaths fast = {}) {
  SetAllocPattern(pattern);
  SetCurrentThreadName("client-0");
  MessengerOptions so;
  so.name = "server";
  so.num_reactors = 1;
  so.connection_threads = fast.connection_threads;
  ServicePoolOptions po;
  po.num_workers = 1;
  if (fast.inline_handlers) po.inline_methods = {"Add"};
  auto server = testing::StartServer(so, po);
  auto client = testing::StartClient(1, 50 * 1024 * 1024, fast.caller_reads);
  test::CalculatorServiceProxy proxy(client, server.address);
  test::AddRequestPB req;
  req.set_x(7);
  req.set_y(35);
  test::AddResponsePB resp;
  // Warm up: connection, reused buffers, lazily grown containers.
  for (int i = 0; i < 50; ++i) {
    RpcController c;
    REQUIRE(proxy.Add(req, &resp, &c).ok());
  }
  testing::StartAllocRecording();
  for (int i = 0; i < kCalls; ++i) {
    RpcController c;
    Status s = proxy.Add(req, &resp, &c);
    REQUIRE(s.ok());
    REQUIRE(resp.result() == 42);
  }
  // The server frees a call after writing its response, and a client reactor
  // may free the last of a response (legacy_client_transfer's callback box)
  // after waking the caller: wait until both have released every call, so
  // the counts are exact however late those threads run.
  constexpr uint64_t kAllCalls = 50 + kCalls;
  bool server_released = testing::WaitFor(
      [&] { return server.messenger->inbound_calls_released() >= kAllCalls; });
  bool client_released = testing::WaitFor([&] {
    return client->reactor_handled_responses() + client->caller_read_responses() >= kAllCalls;
  });
  INFO("server calls released: " << server.messenger->inbound_calls_released()
       << ", client responses handled by a reactor: " << client->reactor_handled_responses()
       << ", read by their caller: " << client->caller_read_responses());
  REQUIRE(server_released);
  REQUIRE(client_released);
  Pairs pairs = testing::StopAllocRecording();
  if (allocs_by_role != nullptr) *allocs_by_role = testing::RecordedAllocationsByRole();
  // The fast path was really taken: all but a few calls read by the caller.
  if (fast.caller_reads) CHECK(client->caller_read_responses() >= 50 + kCalls - 5);
  client->Shutdown();
  server.messenger->Shutdown();
  SetAllocPattern(AllocPattern::Fixed());
  return pairs;
}

Pairs PerCall(std::initializer_list<std::pair<const std::string, long>> per_call) {
  Pairs p(per_call);
  for (auto& [k, v] : p) v *= kCalls;
  return p;
}

// Calls made with `pattern` leave exactly the pairs `per_call` gives for
// each call.
void CheckPairsPerCall(const AllocPattern& pattern,
                       std::initializer_list<std::pair<const std::string, long>> per_call) {
  Pairs got = CountSyncCalls(pattern);
  INFO("pairs:\n" << Show(got));
  CHECK(got == PerCall(per_call));
}

// With the one legacy switch `legacy` on.
void CheckLegacySwitch(bool AllocPattern::*legacy,
                       std::initializer_list<std::pair<const std::string, long>> per_call) {
  AllocPattern p;
  p.*legacy = true;
  CheckPairsPerCall(p, per_call);
}

TEST_CASE("fixed pattern: zero cross-thread pairs per call", "[rpc][alloc]") {
  FastPaths fast;
  SECTION("KRPC topology (reactors plus a worker)") {}
  SECTION("inline handlers") { fast.inline_handlers = true; }
  SECTION("caller reads") { fast.caller_reads = true; }
  SECTION("inline handlers and caller reads") {
    fast.inline_handlers = true;
    fast.caller_reads = true;
  }
  SECTION("connection threads and caller reads") {
    fast.connection_threads = true;
    fast.caller_reads = true;
  }
  SECTION("connection threads") { fast.connection_threads = true; }
  Pairs by_role;
  Pairs got = CountSyncCalls(AllocPattern::Fixed(), &by_role, fast);
  INFO("pairs:\n" << Show(got));
  CHECK(got.empty());
  // The exact heap allocations (operator new) per call by thread role, so
  // the figure cannot regress silently (docs/guide/rpc.md lists them by site).
  // A role's count is kCalls * (its per-call figure) plus at most a few
  // one-off allocations of the run (not per call).
  INFO("allocations by role:\n" << Show(by_role));
  Pairs per_call;
  for (auto& [role, n] : by_role) {
    CHECK(n % kCalls <= kOneOffAllocations);
    if (n / kCalls > 0) per_call[role] = n / kCalls;
  }
  CHECK(per_call == Pairs{});
  CHECK(testing::RecordedAllocations() / kCalls == 0);
}

TEST_CASE("legacy_reactor_tasks: one heap task C -> CR and one W -> SR per call", "[rpc][alloc]") {
  CheckLegacySwitch(&AllocPattern::legacy_reactor_tasks,
                    {{"client-N -> cli-reactor-N", 1}, {"worker-N -> reactor-N", 1}});
}

TEST_CASE("legacy_call_response: one CallResponse CR -> C per call", "[rpc][alloc]") {
  CheckLegacySwitch(&AllocPattern::legacy_call_response, {{"cli-reactor-N -> client-N", 1}});
}

TEST_CASE("legacy_response_transfer: buffer, transfer and callbacks W -> SR per call",
          "[rpc][alloc]") {
  CheckLegacySwitch(&AllocPattern::legacy_response_transfer, {{"worker-N -> reactor-N", 3}});
}

TEST_CASE("legacy_messages: the arena block W -> SR per call", "[rpc][alloc]") {
  CheckLegacySwitch(&AllocPattern::legacy_messages, {{"worker-N -> reactor-N", 1}});
}

TEST_CASE("legacy_client_transfer: response transfer+buffer CR -> C, callback box C -> CR",
          "[rpc][alloc]") {
  CheckLegacySwitch(&AllocPattern::legacy_client_transfer,
                    {{"cli-reactor-N -> client-N", 2}, {"client-N -> cli-reactor-N", 1}});
}

TEST_CASE("all legacy switches together add up", "[rpc][alloc]") {
  CheckPairsPerCall(AllocPattern::Legacy(), {{"client-N -> cli-reactor-N", 2},
                                              {"cli-reactor-N -> client-N", 3},
                                              {"worker-N -> reactor-N", 5}});
}

}  // namespace
}  // namespace crossfree::rpc
