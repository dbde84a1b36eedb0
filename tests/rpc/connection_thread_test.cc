// SPDX-License-Identifier: Apache-2.0
// MessengerOptions::connection_threads: each server connection served by a
// thread of its own with blocking I/O. Calls, errors, the bounds (connection
// cap, frame size, idle and frame timeouts, a client that never reads),
// cancellation, shutdown and descriptors. The wire-level bad input and the
// RPC-level error codes are checked in both topologies by bad_input_test.cc.
#include <dirent.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/connection_thread_set.h"
#include "rpc/logging.h"
#include "rpc/outbound_call.h"
#include "rpc/proxy.h"
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


MessengerOptions ThreadOptions() {
  MessengerOptions o;
  o.name = "server";
  o.num_reactors = 1;
  o.connection_threads = true;
  return o;
}

testing::TestServer StartThreadServer(const MessengerOptions& o = ThreadOptions()) {
  ServicePoolOptions po;
  po.num_workers = 1;
  return testing::StartServer(o, po);
}

int OpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  REQUIRE(d != nullptr);
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n - 3;  // ".", ".." and the directory's own descriptor
}

int running(const testing::TestServer& s) {
  return s.messenger->connection_thread_set()->running();
}

TEST_CASE("connection threads: sync and async calls, several connections", "[rpc][threads]") {
  const int base_fds = OpenFds();
  {
    auto server = StartThreadServer();
    for (bool caller_reads : {false, true}) {
      INFO("caller reads " << caller_reads);
      auto client = StartClient(1, kMaxMsg, caller_reads);
      CalculatorServiceProxy proxy(client, server.address);
      for (uint32_t i = 0; i < 200; ++i) {
        AddResponsePB resp;
        Status s = Add(&proxy, i, 1000, &resp);
        INFO(s.ToString());
        REQUIRE(s.ok());
        CHECK(resp.result() == i + 1000);
      }
      CHECK(client->caller_read_responses() == (caller_reads ? 199u : 0u));
      // Large frames both ways: the receive buffer grows, the response goes
      // out in several sends.
      CheckLargeEcho(&proxy);
      // Deferred handlers respond from another thread; the connection's
      // thread waits and writes.
      SleepRequestPB sleep = SleepReq(1000);
      sleep.set_deferred(true);
      SleepResponsePB sresp;
      RpcController c2;
      REQUIRE(proxy.Sleep(sleep, &sresp, &c2).ok());
      client->Shutdown();
    }
    // 4 client threads, each with its own connection (and thread), at once.
    {
      std::vector<std::shared_ptr<Messenger>> clients;
      for (int i = 0; i < 4; ++i) clients.push_back(StartClient(1, kMaxMsg, i % 2 == 1));
      std::atomic<int> ok{0};
      std::vector<std::thread> threads;
      for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&, i] {
          CalculatorServiceProxy proxy(clients[i], server.address);
          for (uint32_t k = 0; k < 300; ++k) {
            AddResponsePB resp;
            if (Add(&proxy, k, static_cast<uint32_t>(i), &resp).ok() &&
                resp.result() == k + static_cast<uint32_t>(i)) {
              ok++;
            }
          }
        });
      }
      for (auto& t : threads) t.join();
      CHECK(ok.load() == 4 * 300);
      CHECK(running(server) == 4);
      CHECK(server.messenger->server_connections() == 4);
      // Async calls pipelined on one connection: answered one at a time,
      // in order.
      CalculatorServiceProxy proxy(clients[0], server.address);
      constexpr int kAsync = 100;
      std::vector<AddResponsePB> resp(kAsync);
      std::vector<std::unique_ptr<RpcController>> ctl;
      testing::CallbackCounter done(kAsync);
      for (int i = 0; i < kAsync; ++i) {
        AddRequestPB req;
        req.set_x(static_cast<uint32_t>(i));
        req.set_y(1);
        ctl.push_back(std::make_unique<RpcController>());
        ctl.back()->set_timeout(10s);
        proxy.AddAsync(req, &resp[i], ctl.back().get(), [&done, i] { done.Done(i); });
      }
      REQUIRE(done.WaitAll(10s));
      int async_ok = 0;
      for (int i = 0; i < kAsync; ++i) {
        async_ok += ctl[i]->status().ok() && resp[i].result() == static_cast<uint32_t>(i) + 1;
      }
      CHECK(async_ok == kAsync);
      CHECK_FALSE(done.any_twice());
      for (auto& c : clients) c->Shutdown();
    }
    // Each connection's thread ends when its client goes.
    CHECK(WaitFor([&] { return running(server) == 0; }));
    CHECK(server.messenger->server_connections() == 0);
    server.messenger->Shutdown();
  }
  CHECK(WaitFor([&] { return OpenFds() == base_fds; }));
}

TEST_CASE("connection threads: max_connections is required and enforced", "[rpc][threads]") {
  MessengerOptions o = ThreadOptions();
  o.max_connections = 0;
  std::shared_ptr<Messenger> m;
  Status s = Messenger::Create(o, &m);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message().find("max_connections") != std::string::npos);

  o.max_connections = 3;
  auto server = StartThreadServer(o);
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    fds.push_back(RawConnect(server.address));
    REQUIRE(fds.back() >= 0);
    REQUIRE(SendAll(fds.back(), ConnHeader()));
  }
  REQUIRE(WaitFor([&] { return running(server) == 3; }));
  // Beyond the cap: accepted and closed at once, no thread.
  int extra = RawConnect(server.address);
  REQUIRE(extra >= 0);
  CHECK(WaitClosed(extra, 5s));
  ::close(extra);
  CHECK(running(server) == 3);
  // A slot frees when a connection goes.
  ::close(fds.back());
  fds.pop_back();
  REQUIRE(WaitFor([&] { return server.messenger->server_connections() == 2; }));
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  AddResponsePB resp;
  REQUIRE(Add(&proxy, 40, 2, &resp).ok());
  CHECK(resp.result() == 42);
  for (int fd : fds) ::close(fd);
  client->Shutdown();
  server.messenger->Shutdown();
}

TEST_CASE("connection threads: idle and frame timeouts close, frames are bounded",
          "[rpc][threads]") {
  MessengerOptions o = ThreadOptions();
  o.idle_timeout_ms = 300;
  o.frame_timeout_ms = 300;
  o.max_message_size = 64 * 1024;
  auto server = StartThreadServer(o);
  // A raw connection sends `bytes` and then nothing: a timeout closes it
  // within `wait` and not before it (a lower bound only; `wait` fails the
  // test only if the close never comes).
  auto check_timed_out = [&](const std::string& bytes, std::chrono::milliseconds wait) {
    int fd = RawConnect(server.address);
    REQUIRE(fd >= 0);
    if (!bytes.empty()) REQUIRE(SendAll(fd, bytes));
    auto t0 = Clock::now();
    CHECK(WaitClosed(fd, wait));
    CHECK(SecondsSince(t0) >= 0.25);
    ::close(fd);
  };
  const std::string frame = RequestFrame(0, "Add", AddBody(1, 2));
  SECTION("idle after the header, and after a call") {
    check_timed_out(ConnHeader() + frame, 30s);  // WaitClosed reads the response first
  }
  SECTION("nothing sent: the connection header's frame timeout") { check_timed_out("", 5s); }
  SECTION("a stalled partial frame") {
    check_timed_out(ConnHeader() + frame.substr(0, frame.size() - 2), 5s);
  }
  SECTION("a frame over max_message_size closes at its prefix") {
    int fd = RawConnect(server.address);
    REQUIRE(fd >= 0);
    uint8_t prefix[4];
    EncodeBigEndian32(1024 * 1024, prefix);
    LogLines log;
    REQUIRE(SendAll(fd, ConnHeader() + std::string(reinterpret_cast<char*>(prefix), 4)));
    CHECK(WaitClosed(fd, 30s));
    // At once, not by a timeout: the reason the server gives is the frame's
    // size, logged as bad data, and no timeout is named.
    REQUIRE(WaitFor([&] { return log.Has("closing connection from"); }));
    INFO(log.All());
    CHECK(log.Has("received bad data"));
    CHECK_FALSE(log.Has("made no progress"));
    CHECK_FALSE(log.Has("was idle"));
    ::close(fd);
  }
  CHECK(WaitFor([&] { return running(server) == 0; }));
  server.messenger->Shutdown();
}

TEST_CASE("connection threads: a handler sees its client disconnect", "[rpc][threads]") {
  auto server = StartThreadServer();
  for (bool deferred : {false, true}) {
    INFO((deferred ? "deferred" : "on the connection thread"));
    const int before = server.service->sleeps_cancelled();
    SleepRequestPB sleep = SleepReq(20 * 1000 * 1000);
    sleep.set_deferred(deferred);
    int fd = RawConnect(server.address);
    REQUIRE(fd >= 0);
    REQUIRE(SendAll(fd, ConnHeader() + RequestFrame(0, "Sleep", sleep.SerializeAsString())));
    REQUIRE(WaitFor([&] { return running(server) == 1; }));
    REQUIRE(WaitFor([&] { return server.service->sleeps_running() == 1; }));
    ::close(fd);
    // The 20 s sleep counts as cancelled only if the disconnect ended it.
    CHECK(WaitFor([&] { return server.service->sleeps_cancelled() == before + 1; }));
    CHECK(WaitFor([&] { return running(server) == 0; }));
    CHECK(server.service->sleeps_running() == 0);
  }
  server.messenger->Shutdown();
}

TEST_CASE("connection threads: shutdown is prompt with idle and never-reading clients",
          "[rpc][threads]") {
  const int base_fds = OpenFds();
  {
    MessengerOptions o = ThreadOptions();
    // Must not be waited for: no handler runs. Were it waited for, the
    // messenger would log that handlers were still running after it.
    o.shutdown_grace_ms = 60000;
    auto server = StartThreadServer(o);
    // An idle client (connected, one call done) ...
    auto client = StartClient();
    CalculatorServiceProxy proxy(client, server.address);
    AddResponsePB resp;
    REQUIRE(Add(&proxy, 1, 2, &resp).ok());
    // ... and one that floods 64 KiB Echo requests and never reads, until
    // the server's thread is stuck in its send.
    int flood = RawConnect(server.address);
    REQUIRE(flood >= 0);
    timeval tv{0, 100000};
    setsockopt(flood, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    EchoRequestPB echo;
    echo.set_data(std::string(64 * 1024, 'e'));
    std::string batch = ConnHeader();
    for (int i = 0; i < 16; ++i) batch += RequestFrame(i, "Echo", echo.SerializeAsString());
    std::atomic<bool> stop{false};
    std::atomic<bool> blocked{false};  // a send timed out: the server stopped reading
    std::thread flooder([&] {
      std::string b = batch;
      int next = 16;
      while (!stop.load()) {
        size_t off = 0;
        while (off < b.size() && !stop.load()) {
          ssize_t n = ::send(flood, b.data() + off, b.size() - off, MSG_NOSIGNAL);
          if (n > 0) {
            off += static_cast<size_t>(n);
          } else if (n < 0 && errno == EAGAIN) {
            blocked = true;
          } else if (n < 0 && errno != EINTR) {
            return;
          }
        }
        b = RequestFrame(next++, "Echo", echo.SerializeAsString());
      }
    });
    // The buffers fill up: the server's thread is stuck in its send.
    REQUIRE(WaitFor([&] { return blocked.load(); }));
    REQUIRE(running(server) == 2);
    LogLines log;
    server.messenger->Shutdown();
    INFO(log.All());
    CHECK_FALSE(log.Has("shutdown grace period"));
    CHECK(running(server) == 0);
    stop = true;
    flooder.join();
    ::close(flood);
    // The idle client sees its connection closed.
    Status s = Add(&proxy, 1, 2, &resp);
    INFO(s.ToString());
    CHECK(s.IsNetworkError());
    // The server is gone: the connection the client still had ends at EOF or
    // is reset, or a new one is refused.
    CHECK((s.ToString().find("Connection refused") != std::string::npos ||
           s.ToString().find("got EOF") != std::string::npos ||
           s.ToString().find("Connection reset by peer") != std::string::npos));
    client->Shutdown();
  }
  CHECK(WaitFor([&] { return OpenFds() == base_fds; }));
}

TEST_CASE("connection threads: shutdown cancels a running handler after the grace period",
          "[rpc][threads]") {
  MessengerOptions o = ThreadOptions();
  o.shutdown_grace_ms = 200;
  auto server = StartThreadServer(o);
  auto client = StartClient();
  CalculatorServiceProxy proxy(client, server.address);
  SleepRequestPB long_sleep = SleepReq(20 * 1000 * 1000);
  SleepRequestPB short_sleep = SleepReq(0);
  SleepResponsePB r1, r2;
  RpcController running_call, queued_call;
  running_call.set_timeout(10s);
  queued_call.set_timeout(10s);
  testing::CallbackCounter done(2);
  proxy.SleepAsync(long_sleep, &r1, &running_call, [&done] { done.Done(0); });
  REQUIRE(WaitFor([&] { return server.service->sleeps_running() == 1; }));
  // Sent, but not read before the first call ends (one call at a time):
  // written to the loopback socket, so in the server's receive queue.
  proxy.SleepAsync(short_sleep, &r2, &queued_call, [&done] { done.Done(1); });
  REQUIRE(WaitFor([&] { return queued_call.state() == OutboundCall::State::kSent; }));
  // Without the cancel after the grace period the 20 s sleep would end OK
  // (Shutdown waits for it): the "cancelled" status below is the verdict.
  server.messenger->Shutdown();
  REQUIRE(done.WaitAll(5s));
  INFO("running: " << running_call.status().ToString()
                   << "; queued: " << queued_call.status().ToString());
  CHECK(running_call.status().IsRemoteError());
  CHECK(running_call.status().message().find("cancelled") != std::string::npos);
  // The frame that had arrived is answered, as a queued call is.
  CHECK(queued_call.status().IsServiceUnavailable());
  client->Shutdown();
}

}  // namespace
}  // namespace crossfree::rpc
