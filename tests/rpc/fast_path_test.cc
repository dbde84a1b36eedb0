// SPDX-License-Identifier: Apache-2.0
// The two opt-in fast paths: handlers run inline on the server reactor
// (ServicePoolOptions::inline_methods) and sync callers reading their own
// responses (MessengerOptions::caller_reads_sync_responses). Against the
// real server, and against a scripted raw server for what a real one does
// not send (a response for another call id, garbage, a close mid-call).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/outbound_call.h"
#include "rpc/proxy.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"
#include "tests/rpc/log_lines.h"
#include "tests/rpc/raw_client.h"
#include "tests/rpc/rpc_test_util.h"

namespace crossfree::rpc {
namespace {

// The test helpers (rpc_test_util.h) and the test service's messages.
using namespace testing;
using namespace test;
using namespace std::chrono_literals;

const std::vector<std::string> kInline = {"Add", "Echo"};
constexpr bool kCallerReads = true;

// A server running kInline on its reactors (`reactors` of them, 2 workers,
// a queue of `queue`) and a client whose callers read their own responses,
// with a proxy from one to the other. One call is made first: from then on
// the client's read side is lent to its callers.
struct CallerReadsSetup {
  TestServer server;
  std::shared_ptr<Messenger> client;
  CalculatorServiceProxy proxy;

  explicit CallerReadsSetup(int reactors = 1, int queue = 50)
      : server(StartServer(reactors, 2, queue, kMaxMsg, kInline)),
        client(StartClient(1, kMaxMsg, kCallerReads)),
        proxy(client, server.address) {
    AddResponsePB resp;
    REQUIRE(Add(&proxy, 1, 1, &resp).ok());
  }
};

TEST_CASE("fast paths: inline handlers and caller reads give the same answers", "[rpc][fast]") {
  for (bool inline_handlers : {false, true}) {
    for (bool caller_reads : {false, true}) {
      INFO("inline " << inline_handlers << ", caller reads " << caller_reads);
      auto server = StartServer(2, 2, 50, kMaxMsg,
                                inline_handlers ? kInline : std::vector<std::string>{});
      auto client = StartClient(1, kMaxMsg, caller_reads);
      CalculatorServiceProxy proxy(client, server.address);
      for (uint32_t i = 0; i < 100; ++i) {
        AddResponsePB resp;
        AddRequestPB req;
        req.set_x(i);
        req.set_y(1000);
        RpcController c;
        Status s = proxy.Add(req, &resp, &c);
        INFO(s.ToString());
        REQUIRE(s.ok());
        CHECK(resp.result() == i + 1000);
        CHECK(c.call_id() == static_cast<int32_t>(i));
      }
      // The first call opens the connection through the reactor; every
      // later one is read by its caller.
      CHECK(client->caller_read_responses() == (caller_reads ? 99u : 0u));
      // Large frames in both directions (partial writes, direct reads into
      // the frame buffer on the reactor; the caller reads in 64 KiB steps).
      CheckLargeEcho(&proxy);
      AddResponsePB resp;
      REQUIRE(Add(&proxy, 1, 2, &resp).ok());
      CHECK(resp.result() == 3);
    }
  }
}

TEST_CASE("inline handlers: errors, deferral and registration", "[rpc][fast]") {
  // Sleep inline too: only its deferred form is used, which returns at once.
  auto server = StartServer(1, 1, 50, kMaxMsg, {"Add", "Echo", "Sleep"});
  auto client = StartClient(1, kMaxMsg, kCallerReads);
  CalculatorServiceProxy proxy(client, server.address);
  Proxy raw(client, server.address);
  SECTION("invalid request, unknown method, application error") {
    RemoteMethod add{test::CalculatorServiceIf::kServiceName, "Add"};
    EchoRequestPB wrong;
    wrong.set_data("not numbers");
    AddResponsePB resp;
    RpcController c1;
    Status s = raw.SyncRequest(add, wrong, &resp, &c1);
    REQUIRE(c1.error_response() != nullptr);
    CHECK(c1.error_response()->code() == ErrorStatusPB::ERROR_INVALID_REQUEST);
    RemoteMethod mul{test::CalculatorServiceIf::kServiceName, "Multiply"};
    RpcController c2;
    s = raw.SyncRequest(mul, wrong, &resp, &c2);
    REQUIRE(c2.error_response() != nullptr);
    CHECK(c2.error_response()->code() == ErrorStatusPB::ERROR_NO_SUCH_METHOD);
    SleepRequestPB fail = SleepReq(0);
    fail.set_deferred(true);
    fail.set_fail_with("the disk is on fire");
    SleepResponsePB sresp;
    RpcController c3;
    s = proxy.Sleep(fail, &sresp, &c3);
    CHECK(s.IsRemoteError());
    CHECK(s.message().find("the disk is on fire") != std::string::npos);
    REQUIRE(c3.error_response() != nullptr);
    CHECK(c3.error_response()->code() == ErrorStatusPB::ERROR_APPLICATION);
  }
  SECTION("a handler that defers answers from the deferred pool; the reactor goes on") {
    // A deferred sleep longer than the Adds' 10 s timeout: were the reactor
    // held by it, the Adds would time out. No clock decides: the events are
    // "the Adds succeeded" and "the sleep had not ended by then".
    SleepRequestPB slow = SleepReq(60 * 1000 * 1000);
    slow.set_deferred(true);
    SleepResponsePB sresp;
    RpcController slow_c;
    std::atomic<bool> slow_done{false};
    proxy.SleepAsync(slow, &sresp, &slow_c, [&] { slow_done = true; });
    REQUIRE(WaitFor([&] { return server.service->sleeps_running() == 1; }));
    // The reactor that ran the deferring handler serves other calls meanwhile.
    AddResponsePB resp;
    for (int i = 0; i < 20; ++i) REQUIRE(Add(&proxy, i, 1, &resp).ok());
    CHECK_FALSE(slow_done.load());
    CHECK(server.service->sleeps_running() == 1);
    // The client going away cancels the deferred sleep on the server.
    client->Shutdown();
    REQUIRE(WaitFor([&] { return slow_done.load(); }));
    CHECK(slow_c.status().IsAborted());
    CHECK(WaitFor([&] { return server.service->sleeps_cancelled() == 1; }));
  }
  SECTION("an unknown inline method is refused at registration") {
    ServicePoolOptions po;
    po.inline_methods = {"Add", "Divide"};
    Status s = server.messenger->RegisterService(std::make_unique<test::CalculatorService>(), po);
    // The name is taken already; a fresh messenger shows the inline check.
    CHECK(!s.ok());
    std::shared_ptr<Messenger> m;
    MessengerOptions o;
    o.num_reactors = 1;
    REQUIRE(Messenger::Create(o, &m).ok());
    s = m->RegisterService(std::make_unique<test::CalculatorService>(), po);
    CHECK(s.IsInvalidArgument());
    CHECK(s.message().find("Divide") != std::string::npos);
  }
}

TEST_CASE("caller reads: timeouts, never before the deadline, late responses are dropped",
          "[rpc][fast]") {
  CallerReadsSetup setup;
  LogLines log;
  AddResponsePB resp;
  for (auto timeout : {std::chrono::nanoseconds(1), std::chrono::nanoseconds(200ms),
                       std::chrono::nanoseconds(700ms)}) {
    RpcController c;
    c.set_timeout(timeout);
    SleepResponsePB sresp;
    auto t0 = Clock::now();
    Status s = setup.proxy.Sleep(SleepReq(1000000), &sresp, &c);
    double took = SecondsSince(t0);
    INFO(s.ToString());
    CHECK(s.IsTimedOut());
    CHECK(took >= std::chrono::duration<double>(timeout).count());
    // The connection serves on, read by callers again.
    uint64_t before = setup.client->caller_read_responses();
    REQUIRE(Add(&setup.proxy, 2, 3, &resp).ok());
    CHECK(resp.result() == 5);
    AddResponsePB resp2;
    REQUIRE(Add(&setup.proxy, 4, 3, &resp2).ok());
    CHECK(resp2.result() == 7);
    CHECK(setup.client->caller_read_responses() > before);
  }
  // The late Sleep responses arrive while callers read: dropped by id.
  // Wait until the server has answered every call it got: none queued, and
  // each one it ran or skipped as expired released (its response written).
  // The 1 ns call may never have been sent, so the count comes from the
  // server. No clock: the 1 s sleeps end by themselves.
  Messenger& server = *setup.server.messenger;
  REQUIRE(WaitFor([&] {
    return server.queued_calls() == 0 &&
           server.inbound_calls_released() ==
               static_cast<uint64_t>(setup.server.service->calls_handled()) +
                   server.expired_in_queue();
  }));
  // Adds: one in the setup, two per timeout; every Sleep answered is late.
  const int late = setup.server.service->calls_handled() - 7 +
                   static_cast<int>(server.expired_in_queue());
  REQUIRE(late >= 2);  // the 200 ms and 700 ms calls were surely sent
  for (int i = 0; i < 10; ++i) {
    REQUIRE(Add(&setup.proxy, i, 10, &resp).ok());
    CHECK(resp.result() == static_cast<uint32_t>(i + 10));
  }
  // Written before the Adds, so read (by a caller or the reactor) and
  // dropped before the first Add's response.
  INFO(log.All());
  CHECK(log.Count("ignoring response for unknown call id") == late);
}

TEST_CASE("caller reads: Cancel() from another thread ends the call Aborted", "[rpc][fast]") {
  CallerReadsSetup setup;
  AddResponsePB resp;
  for (int round = 0; round < 3; ++round) {
    RpcController c;
    SleepResponsePB sresp;
    // 100 ms: the caller polls by then; 1 ms and at once: it may still be in
    // its first blocking recv (Connection::kBlockingReadSliceUs), which a
    // cancel ends at the slice's end. Counted from the request being sent:
    // Cancel() is for calls in flight (state() is an acquire load).
    const auto delay = round == 0 ? 100ms : round == 1 ? 1ms : 0ms;
    std::thread canceller([&c, delay] {
      // Polls until the call is posted (the Sleep below posts it at once;
      // the test's timeout is the bound).
      while (c.state() == OutboundCall::State::kReady) std::this_thread::sleep_for(50us);
      // Not a synchronisation: where in the call the cancel lands (the
      // verdict is Aborted at any of them, see below).
      std::this_thread::sleep_for(delay);
      c.Cancel();
    });
    // A 60 s sleep and no timeout: only the cancel can end the call before
    // it answers OK, so Aborted is the verdict, with no clock.
    Status s = setup.proxy.Sleep(SleepReq(60 * 1000 * 1000), &sresp, &c);
    canceller.join();
    INFO(s.ToString());
    CHECK(s.IsAborted());
    CHECK(c.state() == OutboundCall::State::kCancelled);
    REQUIRE(Add(&setup.proxy, 2, 2, &resp).ok());
    CHECK(resp.result() == 4);
  }
  // The client going away cancels the server's sleeps.
  setup.client->Shutdown();
  CHECK(WaitFor([&] { return setup.server.service->sleeps_running() == 0; }));
}

TEST_CASE("caller reads: concurrent callers and async calls share the connection",
          "[rpc][fast]") {
  CallerReadsSetup setup(2, 500);
  AddResponsePB warm;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  // A slow sync call whose caller reads while the others' responses come
  // in: it hands those to the reactor.
  threads.emplace_back([&] {
    for (int i = 0; i < 3; ++i) {
      SleepResponsePB sresp;
      RpcController c;
      c.set_timeout(10s);
      if (!setup.proxy.Sleep(SleepReq(100000), &sresp, &c).ok()) ++failures;
    }
  });
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < 300; ++i) {
        AddResponsePB resp;
        if (!Add(&setup.proxy, i, t * 1000, &resp).ok() || resp.result() != i + t * 1000) ++failures;
      }
    });
  }
  // Async calls meanwhile: the reactor must get the read side back for them.
  constexpr int kAsync = 200;
  std::vector<AddResponsePB> aresp(kAsync);
  std::vector<std::unique_ptr<RpcController>> actl;
  testing::CallbackCounter counter(kAsync);
  for (int i = 0; i < kAsync; ++i) {
    actl.push_back(std::make_unique<RpcController>());
    actl.back()->set_timeout(10s);
    AddRequestPB req;
    req.set_x(i);
    req.set_y(7);
    setup.proxy.AddAsync(req, &aresp[i], actl.back().get(), [&counter, i] { counter.Done(i); });
    // Pacing, not a synchronisation: spreads the async calls over the sync
    // callers' run so that both kinds are in flight together (the checks
    // hold whichever way they interleave).
    if (i % 50 == 0) std::this_thread::sleep_for(5ms);
  }
  for (auto& th : threads) th.join();
  REQUIRE(counter.WaitAll(10s));
  CHECK_FALSE(counter.any_twice());
  for (int i = 0; i < kAsync; ++i) {
    INFO(actl[i]->status().ToString());
    CHECK(actl[i]->status().ok());
    CHECK(aresp[i].result() == static_cast<uint32_t>(i + 7));
  }
  CHECK(failures.load() == 0);
  // Alone again: the next caller reads its own response again.
  uint64_t before = setup.client->caller_read_responses();
  for (int i = 0; i < 5; ++i) REQUIRE(Add(&setup.proxy, 1, 2, &warm).ok());
  CHECK(setup.client->caller_read_responses() >= before + 4);
}

TEST_CASE("caller reads: the client's shutdown while a caller reads fails the call",
          "[rpc][fast]") {
  CallerReadsSetup setup;
  AddResponsePB resp;
  // Once the server runs the sleep, the caller is reading (or about to).
  std::thread stopper([&] {
    WaitFor([&] { return setup.server.service->sleeps_running() == 1; });
    setup.client->Shutdown();
  });
  RpcController c;
  SleepResponsePB sresp;
  // 60 s and no timeout: only the shutdown can end the call Aborted.
  Status s = setup.proxy.Sleep(SleepReq(60 * 1000 * 1000), &sresp, &c);
  stopper.join();
  INFO(s.ToString());
  CHECK(s.IsAborted());
  CHECK(WaitFor([&] { return setup.server.service->sleeps_running() == 0; }));
}

// A scripted server on a raw socket: accepts one connection, reads the
// connection header, then answers each request frame with
// script(call id, &out) (out: bytes to send; return false to close).
class RawServer {
 public:
  using Script = std::function<bool(int call_index, int32_t call_id, std::string* out)>;
  explicit RawServer(Script script) : script_(std::move(script)) {
    sockaddr_in a;
    lfd_ = testing::ListenOnLoopback(&a);
    INFO(strerror(errno));
    REQUIRE(lfd_ >= 0);
    REQUIRE(Sockaddr::Parse("127.0.0.1", ntohs(a.sin_port), &addr_).ok());
    thread_ = std::thread([this] { Run(); });
  }
  ~RawServer() {
    ::shutdown(lfd_, SHUT_RDWR);
    int fd = conn_fd_.load();
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);  // ends its read loop
    thread_.join();
    if (fd >= 0) ::close(fd);
    ::close(lfd_);
  }
  const Sockaddr& address() const { return addr_; }

  static std::string Response(int32_t call_id, uint32_t result) {
    ResponseHeader h;
    h.set_call_id(call_id);
    AddResponsePB body;
    body.set_result(result);
    FrameLayout l = ComputeFrameLayout(h, body.ByteSizeLong(), 0);
    std::string out(l.head_bytes, '\0');
    SerializeFrameHeader(l, h, reinterpret_cast<uint8_t*>(out.data()));
    return out + body.SerializeAsString();
  }

 private:
  static bool ReadN(int fd, std::string* out, size_t n) {
    out->resize(n);
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd, out->data() + got, n - got);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }
  void Run() {
    int fd = ::accept(lfd_, nullptr, nullptr);
    if (fd < 0) return;
    conn_fd_ = fd;
    std::string buf;
    if (ReadN(fd, &buf, kConnHeaderLength)) {
      for (int i = 0;; ++i) {
        if (!ReadN(fd, &buf, kFrameLengthPrefix)) break;
        uint32_t len = DecodeBigEndian32(reinterpret_cast<const uint8_t*>(buf.data()));
        if (!ReadN(fd, &buf, len)) break;
        RequestHeader h;
        std::string_view body;
        if (!ParseFrame(buf, &h, &body).ok()) break;
        std::string out;
        bool go_on = script_(i, h.call_id(), &out);
        if (!out.empty() && ::send(fd, out.data(), out.size(), MSG_NOSIGNAL) < 0) break;
        if (!go_on) break;
      }
    }
    ::shutdown(fd, SHUT_RDWR);  // closed by the destructor, after the join
  }

  Script script_;
  int lfd_ = -1;
  std::atomic<int> conn_fd_{-1};
  Sockaddr addr_;
  std::thread thread_;
};

TEST_CASE("caller reads: against a scripted server", "[rpc][fast]") {
  auto client = StartClient(1, kMaxMsg, kCallerReads);
  SECTION("a response for an unknown call id first is dropped") {
    RawServer server([](int, int32_t id, std::string* out) {
      *out = RawServer::Response(id + 1000, 1) + RawServer::Response(id, 100 + id);
      return true;
    });
    CalculatorServiceProxy proxy(client, server.address());
    for (int i = 0; i < 5; ++i) {
      AddResponsePB resp;
      Status s = Add(&proxy, 0, 0, &resp);
      INFO(s.ToString());
      REQUIRE(s.ok());
      CHECK(resp.result() == static_cast<uint32_t>(100 + i));
    }
    CHECK(client->caller_read_responses() >= 4);
  }
  SECTION("the server closes the connection mid-call") {
    RawServer server([](int index, int32_t id, std::string* out) {
      if (index == 0) *out = RawServer::Response(id, 1);
      return index == 0;  // the second request: close without answering
    });
    CalculatorServiceProxy proxy(client, server.address());
    AddResponsePB resp;
    REQUIRE(Add(&proxy, 0, 0, &resp).ok());
    // Not TimedOut: the close itself ended the call (no clock needed).
    Status s = Add(&proxy, 0, 0, &resp, 60s);
    INFO(s.ToString());
    CHECK(s.IsNetworkError());
    CHECK(s.message().find("EOF") != std::string::npos);
  }
  SECTION("garbage instead of a response closes the connection and fails the call") {
    RawServer server([](int index, int32_t id, std::string* out) {
      if (index == 0) {
        *out = RawServer::Response(id, 1);
      } else {
        *out = std::string("\x00\x00\x00\x05\xff\xff\xff\xff\xff", 9);  // header varint overflow
      }
      return true;
    });
    CalculatorServiceProxy proxy(client, server.address());
    AddResponsePB resp;
    REQUIRE(Add(&proxy, 0, 0, &resp).ok());
    // Not TimedOut: the bad frame itself ended the call (no clock needed).
    Status s = Add(&proxy, 0, 0, &resp, 60s);
    INFO(s.ToString());
    CHECK(!s.ok());
    CHECK(!s.IsTimedOut());
    CHECK(s.message().find("invalid RPC response") != std::string::npos);
  }
}

}  // namespace
}  // namespace crossfree::rpc
