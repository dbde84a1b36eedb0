// SPDX-License-Identifier: Apache-2.0
// Test fixture helpers for tests/rpc.
#include "tests/rpc/rpc_test_util.h"

#include <catch2/catch.hpp>

namespace crossfree::rpc::testing {

TestServer StartServer(int reactors, int workers, int queue_length, size_t max_message_size) {
  TestServer s;
  MessengerOptions o;
  o.name = "server";
  o.num_reactors = reactors;
  o.max_message_size = max_message_size;
  Status st = Messenger::Create(o, &s.messenger);
  REQUIRE(st.ok());
  auto svc = std::make_unique<test::CalculatorService>();
  s.service = svc.get();
  ServicePoolOptions po;
  po.num_workers = workers;
  po.queue_length = queue_length;
  st = s.messenger->RegisterService(std::move(svc), po);
  REQUIRE(st.ok());
  st = s.messenger->StartAcceptor("127.0.0.1", 0, &s.address);
  REQUIRE(st.ok());
  return s;
}

std::shared_ptr<Messenger> StartClient(int reactors, size_t max_message_size) {
  MessengerOptions o;
  o.name = "client";
  o.num_reactors = reactors;
  o.reactor_prefix = "cli-reactor";
  o.max_message_size = max_message_size;
  std::shared_ptr<Messenger> m;
  Status st = Messenger::Create(o, &m);
  REQUIRE(st.ok());
  return m;
}

}  // namespace crossfree::rpc::testing
