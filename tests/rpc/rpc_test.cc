// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the RPC core over loopback: sync and async calls,
// call ids, sidecars, timeouts, cancellation, shutdown and overload.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/outbound_call.h"
#include "rpc/proxy.h"
#include "rpc/reactor.h"
#include "tests/rpc/rpc_test_util.h"

namespace crossfree::rpc {
namespace {

// The test helpers (rpc_test_util.h) and the test service's messages.
using namespace testing;
using namespace test;
using namespace std::chrono_literals;

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

TEST_CASE("many concurrent async calls each get their answer once", "[rpc]") {
  auto server = StartServer(2, 2, 500);
  auto client = StartClient(2);
  CalculatorServiceProxy proxy(client, server.address);
  constexpr int kCalls = 300;
  std::vector<AddResponsePB> resps(kCalls);
  std::vector<std::unique_ptr<RpcController>> ctls;
  CallbackCounter counter(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    ctls.push_back(std::make_unique<RpcController>());
    AddRequestPB req;
    req.set_x(i);
    req.set_y(2 * i);
    proxy.AddAsync(req, &resps[i], ctls[i].get(), [&counter, i] { counter.Done(i); });
  }
  REQUIRE(counter.WaitAll(10s));
  CHECK_FALSE(counter.any_twice());
  for (int i = 0; i < kCalls; ++i) {
    INFO("call " << i << ": " << ctls[i]->status().ToString());
    REQUIRE(ctls[i]->status().ok());
    CHECK(resps[i].result() == static_cast<uint32_t>(3 * i));
  }
  // One connection, ids 0..kCalls-1 in some order.
  std::vector<bool> seen(kCalls, false);
  for (auto& c : ctls) {
    REQUIRE(c->call_id() >= 0);
    REQUIRE(c->call_id() < kCalls);
    seen[c->call_id()] = true;
  }
  CHECK(std::count(seen.begin(), seen.end(), true) == kCalls);
}

TEST_CASE("large sidecars travel both ways", "[rpc]") {
  auto server = StartServer();
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  std::vector<std::string> sidecars = {std::string(), std::string(123, 'a'),
                                       std::string(3 * 1024 * 1024, 'b'),
                                       std::string(2000 * 1024, 'c'), std::string(456, 'd')};
  for (size_t i = 0; i < sidecars[2].size(); i += 4096) sidecars[2][i] = static_cast<char>(i / 4096);
  RpcController c;
  for (const std::string& sc : sidecars) {
    int idx;
    REQUIRE(c.AddOutboundSidecar(sc, &idx).ok());
  }
  EchoRequestPB req;
  req.set_data(std::string(100000, 'x'));
  req.set_echo_sidecars(true);
  EchoResponsePB resp;
  Status s = proxy.Echo(req, &resp, &c);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(resp.data() == req.data());
  REQUIRE(c.num_inbound_sidecars() == static_cast<int>(sidecars.size()));
  for (size_t i = 0; i < sidecars.size(); ++i) {
    std::string_view got;
    REQUIRE(c.GetInboundSidecar(static_cast<int>(i), &got).ok());
    CHECK(got == sidecars[i]);
  }
  std::string_view none;
  CHECK(c.GetInboundSidecar(5, &none).IsNotFound());
}

TEST_CASE("timeouts end TimedOut, never before the deadline", "[rpc]") {
  auto server = StartServer(1, 2);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  SleepResponsePB resp;
  for (auto timeout : {std::chrono::nanoseconds(1), std::chrono::nanoseconds(200ms),
                       std::chrono::nanoseconds(1500ms)}) {
    RpcController c;
    c.set_timeout(timeout);
    auto t0 = std::chrono::steady_clock::now();
    Status s = proxy.Sleep(SleepReq(2000000), &resp, &c);
    double took = SecondsSince(t0);
    INFO(s.ToString());
    CHECK(s.IsTimedOut());
    // Never before the deadline (a guarantee, not a speed measurement).
    CHECK(took >= std::chrono::duration<double>(timeout).count());
  }
  // A long timeout that is not reached: success, and the server saw it.
  RpcController c;
  c.set_timeout(5s);
  Status s = proxy.Sleep(SleepReq(1000), &resp, &c);
  REQUIRE(s.ok());
  CHECK(resp.had_deadline());
}

TEST_CASE("the server skips calls that expired in its queue", "[rpc]") {
  auto server = StartServer(1, 1);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  RpcController slow;
  SleepResponsePB r1, r2;
  CallbackCounter counter(2);
  proxy.SleepAsync(SleepReq(400000), &r1, &slow, [&] { counter.Done(0); });
  REQUIRE(WaitFor([&] { return server.service->calls_handled() == 1; }));
  RpcController quick;
  quick.set_timeout(100ms);
  proxy.SleepAsync(SleepReq(0), &r2, &quick, [&] { counter.Done(1); });
  REQUIRE(counter.WaitAll(5s));
  CHECK(slow.status().ok());
  CHECK(quick.status().IsTimedOut());
  // One worker, one queue in arrival order: once an Add sent after the quick
  // call is answered, the worker has dealt with the quick call, which it
  // must have skipped (Add's own call makes the count 2, not 3).
  AddRequestPB add_req;
  add_req.set_x(1);
  add_req.set_y(2);
  AddResponsePB add;
  RpcController after;
  after.set_timeout(10s);
  REQUIRE(proxy.Add(add_req, &add, &after).ok());
  CHECK(server.service->calls_handled() == 2);
}

TEST_CASE("cancellation ends calls Aborted in every state, once", "[rpc]") {
  auto server = StartServer(1, 2);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  SECTION("sent and waiting for the response") {
    RpcController c;
    SleepResponsePB resp;
    CallbackCounter counter(1);
    proxy.SleepAsync(SleepReq(1000000), &resp, &c, [&] { counter.Done(0); });
    REQUIRE(WaitFor([&] { return c.state() == OutboundCall::State::kSent; }));
    c.Cancel();
    REQUIRE(counter.WaitAll(5s));
    // Aborted, not OK: it finished before the server's 1 s sleep ended.
    CHECK(c.status().IsAborted());
    CHECK(c.state() == OutboundCall::State::kCancelled);
  }
  SECTION("queued or being written (a 20 MB request) and queued behind it") {
    RpcController big, small;
    EchoRequestPB req;
    req.set_data(std::string(20 * 1024 * 1024, 'z'));
    EchoResponsePB resp;
    AddResponsePB add_resp;
    CallbackCounter counter(2);
    proxy.EchoAsync(req, &resp, &big, [&] { counter.Done(0); });
    AddRequestPB add;
    add.set_x(1);
    add.set_y(2);
    proxy.AddAsync(add, &add_resp, &small, [&] { counter.Done(1); });
    big.Cancel();
    small.Cancel();
    REQUIRE(counter.WaitAll(10s));
    CHECK_FALSE(counter.any_twice());
    CHECK(big.status().IsAborted());
    CHECK(small.status().IsAborted());
    // The connection is still usable: the next call works.
    RpcController next;
    REQUIRE(proxy.Add(add, &add_resp, &next).ok());
    CHECK(add_resp.result() == 3);
  }
  SECTION("after it finished: no effect") {
    RpcController c;
    AddRequestPB add;
    add.set_x(4);
    add.set_y(5);
    AddResponsePB add_resp;
    REQUIRE(proxy.Add(add, &add_resp, &c).ok());
    c.Cancel();
    // A cancel acts through a task on the call's reactor: once every task
    // queued so far has run there, whatever it would do is done.
    for (auto& r : client->reactors()) r->RunAndWait(nullptr);
    CHECK(c.status().ok());
    CHECK(add_resp.result() == 9);
  }
}

TEST_CASE("responses may come from any thread, application errors carry the message", "[rpc]") {
  auto server = StartServer();
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  SleepRequestPB req = SleepReq(1000);
  req.set_deferred(true);
  SleepResponsePB resp;
  RpcController c;
  REQUIRE(proxy.Sleep(req, &resp, &c).ok());
  req.set_fail_with("the disk is on fire");
  RpcController c2;
  Status s = proxy.Sleep(req, &resp, &c2);
  CHECK(s.IsRemoteError());
  CHECK(s.message().find("the disk is on fire") != std::string::npos);
  REQUIRE(c2.error_response() != nullptr);
  CHECK(c2.error_response()->code() == ErrorStatusPB::ERROR_APPLICATION);
}

TEST_CASE("unknown service, unknown method and unparsable body get RPC errors", "[rpc]") {
  auto server = StartServer();
  auto client = StartClient();
  Proxy proxy(client, server.address);
  AddRequestPB add;
  add.set_x(1);
  add.set_y(1);
  AddResponsePB resp;
  {
    RemoteMethod m{"no.such.Service", "Add"};
    RpcController c;
    Status s = proxy.SyncRequest(m, add, &resp, &c);
    CHECK(s.IsRemoteError());
    REQUIRE(c.error_response() != nullptr);
    CHECK(c.error_response()->code() == ErrorStatusPB::ERROR_NO_SUCH_SERVICE);
    CHECK(s.message().find("no.such.Service") != std::string::npos);
  }
  {
    RemoteMethod m{test::CalculatorServiceIf::kServiceName, "Multiply"};
    RpcController c;
    Status s = proxy.SyncRequest(m, add, &resp, &c);
    REQUIRE(c.error_response() != nullptr);
    CHECK(c.error_response()->code() == ErrorStatusPB::ERROR_NO_SUCH_METHOD);
    CHECK(s.message().find("Multiply") != std::string::npos);
  }
  {
    // An Echo request sent to Add: x and y are missing.
    RemoteMethod m{test::CalculatorServiceIf::kServiceName, "Add"};
    EchoRequestPB wrong;
    wrong.set_data("not numbers");
    RpcController c;
    Status s = proxy.SyncRequest(m, wrong, &resp, &c);
    REQUIRE(c.error_response() != nullptr);
    CHECK(c.error_response()->code() == ErrorStatusPB::ERROR_INVALID_REQUEST);
    CHECK(s.message().find("missing required fields") != std::string::npos);
  }
  // The connection still serves.
  RpcController c;
  REQUIRE(test::CalculatorServiceProxy(client, server.address).Add(add, &resp, &c).ok());
  CHECK(resp.result() == 2);
}

TEST_CASE("request frames of every layout reach the server", "[rpc]") {
  // OutboundCall puts a body of at most 256 bytes right after its head in one
  // buffer, a larger one in a string, and a head of more than 160 bytes
  // (long names) on the heap: each combination, and the bodies around 256.
  auto server = StartServer();
  auto client = StartClient();
  Proxy proxy(client, server.address);
  CalculatorServiceProxy calc(client, server.address);
  for (size_t n : {0, 1, 250, 251, 252, 253, 254, 255, 256, 257, 1000}) {
    EchoRequestPB req;
    req.set_data(std::string(n, 'e'));
    EchoResponsePB resp;
    RpcController c;
    INFO("request body " << req.ByteSizeLong() << " bytes");
    REQUIRE(calc.Echo(req, &resp, &c).ok());
    CHECK(resp.data() == req.data());
  }
  const std::string long_name(300, 'M');
  RemoteMethod m{test::CalculatorServiceIf::kServiceName, long_name};
  for (size_t n : {1, 1000}) {
    EchoRequestPB req;
    req.set_data(std::string(n, 'e'));
    EchoResponsePB resp;
    RpcController c;
    Status s = proxy.SyncRequest(m, req, &resp, &c);
    REQUIRE(c.error_response() != nullptr);
    CHECK(c.error_response()->code() == ErrorStatusPB::ERROR_NO_SUCH_METHOD);
    CHECK(s.message().find(long_name) != std::string::npos);
  }
}

TEST_CASE("a full service queue answers SERVER_TOO_BUSY", "[rpc]") {
  auto server = StartServer(1, 1, /*queue_length=*/1);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  RpcController c[3];
  SleepResponsePB resp[3];
  CallbackCounter counter(3);
  proxy.SleepAsync(SleepReq(300000), &resp[0], &c[0], [&counter] { counter.Done(0); });
  REQUIRE(WaitFor([&] { return server.service->calls_handled() == 1; }));  // at the worker
  proxy.SleepAsync(SleepReq(300000), &resp[1], &c[1], [&counter] { counter.Done(1); });
  REQUIRE(WaitFor([&] { return server.messenger->queued_calls() == 1; }));  // queued
  proxy.SleepAsync(SleepReq(300000), &resp[2], &c[2], [&counter] { counter.Done(2); });
  REQUIRE(counter.WaitAll(5s));
  CHECK(c[0].status().ok());
  CHECK(c[1].status().ok());
  CHECK(c[2].status().IsServiceUnavailable());
  REQUIRE(c[2].error_response() != nullptr);
  CHECK(c[2].error_response()->code() == ErrorStatusPB::ERROR_SERVER_TOO_BUSY);
  CHECK(c[2].status().message().find("service queue is full") != std::string::npos);
  CHECK(server.messenger->queue_overflows() == 1);
}

TEST_CASE("a full queue gives an earlier deadline the place of a later one", "[rpc]") {
  auto server = StartServer(1, 1, /*queue_length=*/1);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  RpcController busy, no_deadline, urgent;
  SleepResponsePB resp[3];
  CallbackCounter counter(3);
  proxy.SleepAsync(SleepReq(300000), &resp[0], &busy, [&counter] { counter.Done(0); });
  REQUIRE(WaitFor([&] { return server.service->calls_handled() == 1; }));  // at the worker
  proxy.SleepAsync(SleepReq(0), &resp[1], &no_deadline, [&counter] { counter.Done(1); });
  REQUIRE(WaitFor([&] { return server.messenger->queued_calls() == 1; }));  // queued
  urgent.set_timeout(5s);
  proxy.SleepAsync(SleepReq(0), &resp[2], &urgent, [&counter] { counter.Done(2); });
  REQUIRE(counter.WaitAll(5s));
  CHECK(busy.status().ok());
  CHECK(urgent.status().ok());
  CHECK(no_deadline.status().IsServiceUnavailable());
  CHECK(no_deadline.status().message().find("earlier deadline") != std::string::npos);
  CHECK(server.messenger->queue_overflows() == 1);
}

TEST_CASE("server shutdown with calls in flight: the running one finishes, queued ones fail",
          "[rpc]") {
  auto server = StartServer(1, 1);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  RpcController c[4];
  SleepResponsePB resp[4];
  CallbackCounter counter(4);
  for (int i = 0; i < 4; ++i) {
    proxy.SleepAsync(SleepReq(200000), &resp[i], &c[i], [&counter, i] { counter.Done(i); });
  }
  REQUIRE(WaitFor([&] {
    return server.service->calls_handled() == 1 && server.messenger->queued_calls() == 3;
  }));
  server.messenger->Shutdown();
  REQUIRE(counter.WaitAll(5s));
  CHECK_FALSE(counter.any_twice());
  int ok = 0, unavailable = 0;
  for (auto& ctl : c) {
    if (ctl.status().ok()) ok++;
    if (ctl.status().IsServiceUnavailable()) unavailable++;
  }
  CHECK(ok == 1);
  CHECK(unavailable == 3);
  // A new call finds no server.
  RpcController after;
  Status s = proxy.Sleep(SleepReq(0), &resp[0], &after);
  CHECK(s.IsNetworkError());
}

TEST_CASE("client shutdown with calls queued aborts each callback once", "[rpc]") {
  auto server = StartServer(1, 1);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  constexpr int kCalls = 5;
  RpcController c[kCalls];
  SleepResponsePB resp[kCalls];
  CallbackCounter counter(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    proxy.SleepAsync(SleepReq(300000), &resp[i], &c[i], [&counter, i] { counter.Done(i); });
  }
  // The first runs on the server's one worker, the others wait behind it.
  REQUIRE(WaitFor([&] { return server.service->sleeps_running() == 1; }));
  client->Shutdown();
  REQUIRE(counter.WaitAll(5s));
  CHECK_FALSE(counter.any_twice());
  for (auto& ctl : c) {
    INFO(ctl.status().ToString());
    CHECK(ctl.status().IsAborted());
  }
  // After shutdown, calls fail at once with Aborted.
  RpcController late;
  CHECK(proxy.Sleep(SleepReq(0), &resp[0], &late).IsAborted());
}

// The fixed pattern's direct writes (Connection::TrySendCallDirect and
// TryWriteResponseDirect): after the first call a proxy's sync calls are
// written by the calling thread, responses by the worker. Frames too large for
// the socket buffers are left partly written and finished by the reactor
// (AdoptPartialWrite); callers on several threads share one connection; and a
// connection that closes under the proxy makes calls fail, not hang.
TEST_CASE("direct writes: shared proxy, large frames, closed connection", "[rpc]") {
  auto server = StartServer(1, 2);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < 200; ++i) {
        AddRequestPB req;
        req.set_x(i);
        req.set_y(static_cast<uint32_t>(t) * 1000);
        AddResponsePB resp;
        RpcController c;
        c.set_timeout(10s);
        if (!proxy.Add(req, &resp, &c).ok() || resp.result() != req.x() + req.y()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  for (size_t bytes : {size_t{64} << 10, size_t{8} << 20}) {
    EchoRequestPB req;
    req.set_data(std::string(bytes, 'd'));
    EchoResponsePB resp;
    RpcController c;
    c.set_timeout(20s);
    Status s = proxy.Echo(req, &resp, &c);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(resp.data() == req.data());
  }
  server.messenger->Shutdown();
  AddResponsePB resp;
  Status s = Add(&proxy, 1, 2, &resp, 60s);
  INFO(s.ToString());
  // Not timed out: the closed server ends the call by itself.
  CHECK(s.IsNetworkError());
  // The server is gone: the connection the client still had ends at EOF or
  // is reset, or a new one is refused.
  CHECK((s.ToString().find("Connection refused") != std::string::npos ||
         s.ToString().find("got EOF") != std::string::npos ||
         s.ToString().find("Connection reset by peer") != std::string::npos));
}

TEST_CASE("a reactor's Shutdown from its own thread stops the process, saying why", "[rpc]") {
  // reactor.h's rule, held in every build: Shutdown run by a task on the
  // reactor would join the reactor's own thread. In a child process (forked
  // before this one starts a thread) whose stderr the test reads to its end.
  int err[2];
  REQUIRE(pipe(err) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The abort must end the child: not Catch's handler of it (nor TSan
    // complaining about what that handler calls).
    signal(SIGABRT, SIG_DFL);
    dup2(err[1], 2);
    close(err[0]);
    close(err[1]);
    MessengerOptions o;
    o.num_reactors = 1;
    std::shared_ptr<Messenger> m;
    if (!Messenger::Create(o, &m).ok()) _exit(3);
    Reactor* r = m->reactors()[0].get();
    r->ScheduleTask([r](const Status&) { r->Shutdown(); });
    for (;;) pause();  // the reactor thread ends the process
  }
  close(err[1]);
  std::string text;
  // The deadline only guards against a hang (the contract broken silently).
  const auto deadline = Clock::now() + 60s;
  bool eof = false;
  while (!eof) {
    pollfd p{err[0], POLLIN, 0};
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0 || poll(&p, 1, left) <= 0) break;
    char buf[4096];
    const ssize_t n = read(err[0], buf, sizeof buf);
    eof = n <= 0;  // the child's last descriptor closed: it is exiting
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  close(err[0]);
  if (!eof) kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO(text);
  REQUIRE(eof);  // else: still running after 60 s
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(text.find("Shutdown() called from the reactor's own thread") != std::string::npos);
}

}  // namespace
}  // namespace crossfree::rpc
