// SPDX-License-Identifier: Apache-2.0
// Test fixture helpers for tests/rpc.
#include "tests/rpc/rpc_test_util.h"

#include <catch2/catch.hpp>

namespace crossfree::rpc::testing {

TestServer StartServer(int reactors, int workers, int queue_length, size_t max_message_size,
                       std::vector<std::string> inline_methods) {
  MessengerOptions o;
  o.name = "server";
  o.num_reactors = reactors;
  o.max_message_size = max_message_size;
  ServicePoolOptions po;
  po.num_workers = workers;
  po.queue_length = queue_length;
  po.inline_methods = std::move(inline_methods);
  return StartServer(o, po);
}

TestServer StartServer(const MessengerOptions& options, const ServicePoolOptions& po) {
  TestServer s;
  Status st = Messenger::Create(options, &s.messenger);
  REQUIRE(st.ok());
  auto svc = std::make_unique<test::CalculatorService>();
  s.service = svc.get();
  st = s.messenger->RegisterService(std::move(svc), po);
  REQUIRE(st.ok());
  st = s.messenger->StartAcceptor("127.0.0.1", 0, &s.address);
  REQUIRE(st.ok());
  return s;
}

std::shared_ptr<Messenger> StartClient(int reactors, size_t max_message_size, bool caller_reads) {
  MessengerOptions o;
  o.name = "client";
  o.num_reactors = reactors;
  o.reactor_prefix = "cli-reactor";
  o.max_message_size = max_message_size;
  o.caller_reads_sync_responses = caller_reads;
  std::shared_ptr<Messenger> m;
  Status st = Messenger::Create(o, &m);
  REQUIRE(st.ok());
  return m;
}

Status Add(test::CalculatorServiceProxy* proxy, uint32_t x, uint32_t y, test::AddResponsePB* resp,
           std::chrono::nanoseconds timeout) {
  test::AddRequestPB req;
  req.set_x(x);
  req.set_y(y);
  RpcController c;
  c.set_timeout(timeout);
  return proxy->Add(req, resp, &c);
}

void CheckLargeEcho(test::CalculatorServiceProxy* proxy) {
  test::EchoRequestPB echo;
  echo.set_data(std::string(3 << 20, 'e'));
  test::EchoResponsePB echo_resp;
  RpcController c;
  c.set_timeout(std::chrono::seconds(20));
  REQUIRE(proxy->Echo(echo, &echo_resp, &c).ok());
  CHECK(echo_resp.data() == echo.data());
}

void CallbackCounter::Done(int index) {
  std::lock_guard<std::mutex> l(mu_);
  runs_[index]++;
  total_++;
  cv_.notify_all();
}

bool CallbackCounter::WaitAll(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, timeout, [this] { return total_ >= static_cast<int>(runs_.size()); });
}

int CallbackCounter::total() const {
  std::lock_guard<std::mutex> l(mu_);
  return total_;
}

bool CallbackCounter::any_twice() const {
  std::lock_guard<std::mutex> l(mu_);
  for (int r : runs_) {
    if (r > 1) return true;
  }
  return false;
}

}  // namespace crossfree::rpc::testing
