// SPDX-License-Identifier: Apache-2.0
// Abusive clients against a real rpc-server process over loopback, one test
// per attack class. Each checks numbers read from /proc/PID (resident
// memory, descriptors, threads, CPU time), that well-behaved clients still
// get their answers during or after the attack, and that the server's
// descriptors return to their baseline. Each runs for a few seconds.
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/calculator_service.h"
#include "rpc/messenger.h"
#include "rpc/outbound_call.h"
#include "rpc/serialization.h"
#include "tests/rpc/rpc_test_util.h"
#include "tests/rpc/server_process.h"

namespace crossfree::rpc {
namespace {

using namespace std::chrono_literals;
// The test helpers (rpc_test_util.h) and the test service's messages.
using namespace testing;
using namespace test;

// The bound the issue states: 256 MB. Under ThreadSanitizer the server's
// RSS also holds TSan's shadow and history of every byte the server
// touched (its buffers included: 274 MiB measured once for the stalled
// frames), so there the bound is doubled; the builds without TSan check
// the real one.
#if defined(__SANITIZE_THREAD__)
constexpr long kRssBoundKb = 2 * 256 * 1024;
#else
constexpr long kRssBoundKb = 256 * 1024;
#endif

// CROSSFREE_ATTACK_FAST=1 (ctest's second run of this binary, rpc.inline.*,
// see tests/rpc/CMakeLists.txt): every server runs Add and Echo inline on
// its reactors, and the well-behaved clients read their own responses
// (WellBehavedCalls). The bounds must hold the same.
// CROSSFREE_ATTACK_THREADS=1 (rpc.threads.*): every server serves each
// connection on a thread of its own (--connection_threads); the same
// attacks, the same bounds.
// Under AddressSanitizer freed memory waits in a quarantine (256 MB by
// default) before it is reused, so a server that allocates and frees at
// once would have ASan's quarantine counted as its own RSS: the Add flood
// frees three small blocks per call as soon as it made them (6 MiB peak
// RSS without ASan, 280 MiB with the default quarantine, 25 MiB with none).
// The spawned servers get a 16 MB quarantine: the bound then measures what
// the server keeps, and ASan still sees use after free within that window.
void LimitAsanQuarantineOfServers() {
#if defined(__SANITIZE_ADDRESS__)
  const char* current = getenv("ASAN_OPTIONS");
  std::string options = current != nullptr ? current : "";
  if (options.find("quarantine_size_mb") != std::string::npos) return;
  if (!options.empty()) options += ':';
  options += "quarantine_size_mb=16";
  setenv("ASAN_OPTIONS", options.c_str(), 1);
#endif
}

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> args) {
  LimitAsanQuarantineOfServers();
  if (testing::FastPathsRequested()) args.push_back("--inline_methods=Add,Echo");
  if (testing::ConnectionThreadsRequested()) args.push_back("--connection_threads");
  std::string error;
  auto p = ServerProcess::Start(args, &error);
  INFO(error);
  REQUIRE(p != nullptr);
  return p;
}

// Polls `pred` until it holds or `limit` passes. The limit only guards
// against a hang: it is never what a test measures.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::seconds limit = 60s) {
  auto deadline = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

void CloseAll(std::vector<int>* fds) {
  for (int fd : *fds) ::close(fd);
  fds->clear();
}

// Each of `conns` connections sends batch(0), batch(1), ... (batches of
// frames with call ids unique over the run) for `seconds`, never reading a
// byte. Returns the bytes sent; *max_rss_kb gets the server's peak resident
// size, sampled every 50 ms; *closed counts connections the server closed;
// `during` runs half way through.
template <typename Batch, typename During>
uint64_t Flood(ServerProcess* server, Batch batch, int conns, double seconds, long* max_rss_kb,
               int* closed, During during) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0};
  std::atomic<int> closed_by_server{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < conns; ++i) {
    threads.emplace_back([&] {
      int fd = RawConnect(server->address());
      if (fd < 0) return;
      // Short send timeouts so the flooder notices `stop` while blocked.
      timeval tv{0, 100000};
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
      std::string buf = ConnHeader() + batch(0);
      uint64_t next = 1;
      size_t off = 0;
      while (!stop.load()) {
        ssize_t n = ::send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
        if (n > 0) {
          sent += static_cast<uint64_t>(n);
          off += static_cast<size_t>(n);
          if (off == buf.size()) {
            buf = batch(next++);
            off = 0;
          }
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          closed_by_server++;
          break;
        }
      }
      ::close(fd);
    });
  }
  *max_rss_kb = 0;
  auto t0 = Clock::now();
  bool ran_during = false;
  while (SecondsSince(t0) < seconds) {
    *max_rss_kb = std::max(*max_rss_kb, server->RssKb());
    if (!ran_during && SecondsSince(t0) >= seconds / 2) {
      ran_during = true;
      during();
    }
    std::this_thread::sleep_for(50ms);  // the RSS sampling interval, not a synchronisation
  }
  *max_rss_kb = std::max(*max_rss_kb, server->RssKb());
  stop = true;
  for (auto& t : threads) t.join();
  *closed = closed_by_server.load();
  return sent.load();
}

TEST_CASE("attack: clients that never read their responses cannot grow the server past 256 MB",
          "[rpc][attack]") {
  // The configuration of the report: 4 reactors, 1 worker, defaults.
  std::vector<std::string> args = {"--reactors", "4", "--workers", "1"};
  // Only to show that this test can fail: CROSSFREE_ATTACK_EXTRA_ARGS="..."
  // adds server flags (e.g. the limits set to 0).
  if (const char* extra = getenv("CROSSFREE_ATTACK_EXTRA_ARGS")) {
    std::istringstream in(extra);
    std::string a;
    while (in >> a) args.push_back(a);
  }
  auto server = StartServer(args);
  const int base_fds = server->FdCount();
  const long base_rss = server->RssKb();
  std::string during_result = "not run";
  auto check_during = [&] { during_result = WellBehavedCalls(server->address(), 20); };
  // Two connections send `what` batches for `seconds`: the server stays
  // under the bound, reads more than min_sent bytes, throttles them rather
  // than disconnecting them, and serves a well-behaved client meanwhile.
  auto flood = [&](const char* what, auto batch, double seconds, uint64_t min_sent) {
    long max_rss = 0;
    int closed = 0;
    uint64_t sent = Flood(server.get(), batch, 2, seconds, &max_rss, &closed, check_during);
    // Printed, not only on failure: docs/results/rpc.md quotes it.
    WARN(what << " flood: sent " << sent / (1024 * 1024) << " MiB in " << seconds
              << " s; server RSS " << base_rss / 1024 << " -> max " << max_rss / 1024 << " MiB");
    CHECK(max_rss < kRssBoundKb);
    CHECK(sent > min_sent);  // the server did read for a while
    CHECK(closed == 0);      // throttled, not disconnected
    CHECK(during_result == "");
  };

  SECTION("64 KiB Echo requests") {
    test::EchoRequestPB echo;
    echo.set_data(std::string(64 * 1024, 'e'));
    const std::string body = echo.SerializeAsString();
    auto batch = [&](uint64_t n) { return RequestFrame(static_cast<int32_t>(n), "Echo", body); };
    flood("Echo", batch, 3.0, 8 * 1024 * 1024);
  }
  SECTION("Add requests") {
    const std::string body = testing::AddBody(7, 35);
    auto batch = [&](uint64_t n) {
      std::string b;
      for (uint64_t i = 0; i < 1000; ++i) {
        b += RequestFrame(static_cast<int32_t>((n * 1000 + i) % INT32_MAX), "Add", body);
      }
      return b;
    };
    flood("Add", batch, 2.0, 1024 * 1024);
  }
  CHECK(WellBehavedCalls(server->address(), 20) == "");
  CHECK(server->WaitFdCount(base_fds, 3s) == base_fds);
}

TEST_CASE("attack: stalled partial frames are timed out and an announced length reserves nothing",
          "[rpc][attack]") {
  auto server = StartServer({"--frame_timeout_ms", "1000", "--verbose"});
  const int base_fds = server->FdCount();
  const long base_data = server->VmDataKb();
  std::vector<int> fds;
  // 20 connections announce a frame of exactly the 50 MiB limit and send
  // nothing more.
  const uint32_t limit = 50 * 1024 * 1024;
  uint8_t prefix[4];
  EncodeBigEndian32(limit - 4, prefix);
  std::string max_prefix(reinterpret_cast<char*>(prefix), 4);
  for (int i = 0; i < 20; ++i) {
    int fd = RawConnect(server->address());
    REQUIRE(fd >= 0);
    REQUIRE(SendAll(fd, ConnHeader() + max_prefix));
    fds.push_back(fd);
  }
  // The server has read every prefix (nothing left in its sockets), so a
  // reservation made on a prefix would show now.
  REQUIRE(Eventually([&] { return server->UnreadBytes() == 0; }));
  long data = server->VmDataKb();
  WARN("stall: VmData " << base_data / 1024 << " -> " << data / 1024
                        << " MiB after 20 prefixes of 50 MiB frames");
  // Reserving on the prefix alone would add 20 x 50 MiB = 1000 MiB.
  CHECK(data - base_data < 100 * 1024);
  // 12 more send 4 MiB of such a frame and stall.
  std::string part = max_prefix + std::string(4 * 1024 * 1024, 'x');
  for (int i = 0; i < 12; ++i) {
    int fd = RawConnect(server->address());
    REQUIRE(fd >= 0);
    REQUIRE(SendAll(fd, ConnHeader() + part));
    fds.push_back(fd);
  }
  auto t_stall = Clock::now();
  // Read by the server (the 4 MiB are in its buffers, not in the sockets).
  REQUIRE(Eventually([&] { return server->UnreadBytes() == 0; }));
  long rss = server->RssKb();
  WARN("stall: RSS " << rss / 1024 << " MiB with 12 x 4 MiB more stalled");
  CHECK(rss < kRssBoundKb);
  // A well-behaved client is served while they stall.
  CHECK(WellBehavedCalls(server->address(), 10) == "");
  // Closed by the frame timeout, which the server names for each (the
  // 30 s deadline only guards against a hang; a lower bound only).
  int closed = 0;
  for (int fd : fds) closed += WaitClosed(fd, 30s) ? 1 : 0;
  double took = SecondsSince(t_stall);
  WARN("stall: all closed " << took << " s after the stall");
  CHECK(closed == 32);
  CHECK(took >= 0.9);  // not before the timeout
  CloseAll(&fds);
  CHECK(server->CountStderrLines("made no progress") == 32);
  CHECK(WellBehavedCalls(server->address(), 10) == "");
  CHECK(server->WaitFdCount(base_fds, 3s) == base_fds);
}

TEST_CASE("attack: connections that send nothing, or only the header, are closed",
          "[rpc][attack]") {
  auto server = StartServer({"--frame_timeout_ms", "1000", "--idle_timeout_ms", "1000"});
  const int base_fds = server->FdCount();
  std::vector<int> fds;
  auto t0 = Clock::now();
  for (int i = 0; i < 200; ++i) {
    int fd = RawConnect(server->address());
    REQUIRE(fd >= 0);
    if (i % 2 == 1) REQUIRE(SendAll(fd, ConnHeader()));
    fds.push_back(fd);
  }
  // Not before the timeout: none is closed 0.8 s after the first connect.
  // (No check that all 200 are open at once: where accepting is slow, as
  // with connection threads under TSan, 1 s after the first accept some
  // are closed before the last are accepted. A slow accept only delays a
  // close, and only an accepted connection can be closed by the server.)
  std::this_thread::sleep_until(t0 + 800ms);
  int early = 0;
  for (int fd : fds) early += IsClosed(fd) ? 1 : 0;
  CHECK(early == 0);
  // The deadline only guards against a hang; a lower bound only.
  int closed = 0;
  for (int fd : fds) closed += WaitClosed(fd, 30s) ? 1 : 0;
  double took = SecondsSince(t0);
  CHECK(closed == 200);
  CHECK(took >= 0.9);
  CloseAll(&fds);
  CHECK(server->WaitFdCount(base_fds, 3s) == base_fds);
  CHECK(WellBehavedCalls(server->address(), 10) == "");
}

TEST_CASE("attack: connections beyond max_connections are closed at once", "[rpc][attack]") {
  auto server = StartServer({"--max_connections", "20"});
  const int base_fds = server->FdCount();
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) {
    int fd = RawConnect(server->address());
    REQUIRE(fd >= 0);
    REQUIRE(SendAll(fd, ConnHeader()));
    fds.push_back(fd);
    // In order: the first 20 are accepted before the rest arrive.
    if (i == 19) REQUIRE(server->WaitFdCount(base_fds + 20, 2s) == base_fds + 20);
  }
  int closed = 0;
  for (int i = 20; i < 40; ++i) closed += WaitClosed(fds[i], 3s) ? 1 : 0;
  CHECK(closed == 20);
  int still_open = 0;
  for (int i = 0; i < 20; ++i) still_open += testing::IsClosed(fds[i]) ? 0 : 1;
  CHECK(still_open == 20);
  CHECK(server->FdCount() == base_fds + 20);
  // Rate-limited: one line per second, not one per connection.
  int lines = server->CountStderrLines("max_connections");
  CHECK(lines >= 1);
  CHECK(lines <= 3);
  CloseAll(&fds);
  CHECK(server->WaitFdCount(base_fds, 3s) == base_fds);
  CHECK(WellBehavedCalls(server->address(), 10) == "");
}

TEST_CASE("attack: running out of file descriptors does not make the acceptor spin",
          "[rpc][attack]") {
  auto server = StartServer({"--accept_backoff_ms", "100"});
  const int base_fds = server->FdCount();
  // Under UBSan (scripts/test --asan), a vptr check whose type cache misses
  // reads the vtable through a pipe it opens (IsAccessibleMemoryRange): in a
  // process without a free descriptor it reports a valid object as having
  // an invalid vptr and stops the server. One connection made, used and
  // closed while the server has descriptors puts the types of the
  // connection's life in the cache, so the checks below hit it.
  int first = RawConnect(server->address());
  REQUIRE(first >= 0);
  ::close(first);
  REQUIRE(WellBehavedCalls(server->address(), 1) == "");
  REQUIRE(server->WaitFdCount(base_fds, 3s) == base_fds);
  // Leave the server 10 descriptors.
  rlimit old_limit;
  REQUIRE(prlimit(server->pid(), RLIMIT_NOFILE, nullptr, &old_limit) == 0);
  rlimit tight = old_limit;
  tight.rlim_cur = static_cast<rlim_t>(server->MaxFd() + 1 + 10);
  REQUIRE(prlimit(server->pid(), RLIMIT_NOFILE, &tight, nullptr) == 0);
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) {
    int fd = RawConnect(server->address());  // the kernel completes it in the backlog
    REQUIRE(fd >= 0);
    fds.push_back(fd);
  }
  // No spin: the server counts its failed accepts (the logged lines plus
  // the "N more failures not logged" they report), and with the 100 ms
  // accept back-off (MessengerOptions::accept_backoff_ms) it can fail at
  // most once per 100 ms while it waits. A spinning acceptor fails
  // thousands of times a second. The bound grows with the time observed,
  // so a slow machine loosens it instead of failing it; no CPU time or
  // clock threshold decides. Observed until the third line (the log lets
  // one line through per second).
  auto t0 = Clock::now();
  REQUIRE(Eventually([&] { return server->CountStderrLines("accept failed") >= 3; }));
  const double observed = SecondsSince(t0);
  const std::string err = server->Stderr();
  int lines = 0;
  long failed_accepts = 0;
  std::istringstream err_lines(err);
  for (std::string line; std::getline(err_lines, line);) {
    if (line.find("accept failed") == std::string::npos) continue;
    ++lines;
    ++failed_accepts;
    size_t open = line.rfind(" (");
    if (open != std::string::npos && line.find("more failures not logged") != std::string::npos) {
      failed_accepts += std::stol(line.substr(open + 2));
    }
  }
  WARN("fd exhaustion: " << failed_accepts << " failed accepts in " << lines << " lines over "
                         << observed << " s");
  CHECK(server->FdCount() <= base_fds + 10);
  CHECK(failed_accepts <= static_cast<long>(observed / 0.1) + 5);
  CHECK(lines <= static_cast<int>(observed) + 2);  // at most one line per second
  CHECK(server->Stderr().find("Too many open files") != std::string::npos);
  CloseAll(&fds);
  REQUIRE(prlimit(server->pid(), RLIMIT_NOFILE, &old_limit, nullptr) == 0);
  // The backlog drains (each connection is accepted, then seen closed).
  CHECK(server->WaitFdCount(base_fds, 4s) == base_fds);
  CHECK(WellBehavedCalls(server->address(), 10) == "");
  CHECK(server->WaitFdCount(base_fds, 3s) == base_fds);
}

TEST_CASE("attack: a handler whose client disconnects sees the cancellation", "[rpc][attack]") {
  // One worker and one deferred thread: a 20 s call that is not cancelled
  // blocks the next one for 20 s.
  auto server = StartServer({"--workers", "1", "--deferred_threads", "1", "--verbose"});
  const int base_fds = server->FdCount();
  int round = 0;
  for (bool deferred : {false, true}) {
    ++round;
    INFO((deferred ? "deferred" : "on the worker"));
    test::SleepRequestPB sleep;
    sleep.set_sleep_micros(20 * 1000 * 1000);
    sleep.set_deferred(deferred);
    int fd = RawConnect(server->address());
    REQUIRE(fd >= 0);
    REQUIRE(SendAll(fd, ConnHeader() + RequestFrame(0, "Sleep", sleep.SerializeAsString())));
    // The handler is running: the server says so (--verbose).
    REQUIRE(Eventually([&] { return server->CountStderrLines("Sleep started") == round; }));
    ::close(fd);
    // The 20 s sleep is cancelled, and says so; the server's only worker
    // (and deferred thread) is free again.
    CHECK(Eventually([&] { return server->CountStderrLines("Sleep cancelled") == round; }));
    CHECK(WellBehavedCalls(server->address(), 5) == "");
    if (deferred) {
      // The deferred thread is free again: a deferred call gets through.
      std::shared_ptr<Messenger> m;
      MessengerOptions o;
      o.num_reactors = 1;
      REQUIRE(Messenger::Create(o, &m).ok());
      test::CalculatorServiceProxy proxy(m, server->address());
      test::SleepRequestPB quick;
      quick.set_sleep_micros(1000);
      quick.set_deferred(true);
      test::SleepResponsePB resp;
      RpcController c;
      c.set_timeout(5s);
      Status s = proxy.Sleep(quick, &resp, &c);
      INFO(s.ToString());
      CHECK(s.ok());
      m->Shutdown();
    }
  }
  CHECK(server->WaitFdCount(base_fds, 3s) == base_fds);
}

TEST_CASE("attack: 300 deferred calls run on a bounded pool, not a thread each",
          "[rpc][attack]") {
  auto server = StartServer({"--workers", "1", "--deferred_threads", "4"});
  const int base_fds = server->FdCount();
  const int base_threads = server->Threads();
  std::shared_ptr<Messenger> m;
  MessengerOptions o;
  o.num_reactors = 1;
  REQUIRE(Messenger::Create(o, &m).ok());
  test::CalculatorServiceProxy proxy(m, server->address());
  constexpr int kCalls = 300;
  std::vector<std::unique_ptr<RpcController>> ctl;
  std::vector<test::SleepResponsePB> resp(kCalls);
  std::atomic<int> done{0};
  test::SleepRequestPB req;
  req.set_sleep_micros(10000);
  req.set_deferred(true);
  for (int i = 0; i < kCalls; ++i) {
    ctl.push_back(std::make_unique<RpcController>());
    ctl.back()->set_timeout(10s);
    proxy.SleepAsync(req, &resp[i], ctl.back().get(), [&done] { done++; });
  }
  int max_threads = 0;
  auto t0 = Clock::now();
  // Samples the thread count until the calls are done; the 10 s is a
  // deadline, not a synchronisation.
  while (done.load() < kCalls && SecondsSince(t0) < 10) {
    max_threads = std::max(max_threads, server->Threads());
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(done.load() == kCalls);
  int ok = 0;
  for (auto& c : ctl) ok += c->status().ok() ? 1 : 0;
  WARN("deferred: server threads " << base_threads << " -> max " << max_threads << "; " << ok
                                    << " of " << kCalls << " OK in " << SecondsSince(t0)
                                    << " s");
  CHECK(ok == kCalls);
  CHECK(max_threads <= base_threads + 4);
  CHECK(max_threads >= base_threads + 1);  // the pool did start threads
  m->Shutdown();
  CHECK(server->WaitFdCount(base_fds, 3s) == base_fds);
}

TEST_CASE("attack: a connection header with non-zero reserved bytes is rejected",
          "[rpc][attack]") {
  auto server = StartServer({});
  const int base_fds = server->FdCount();
  int fd = RawConnect(server->address());
  REQUIRE(fd >= 0);
  REQUIRE(SendAll(fd, ConnHeader(/*reserved=*/1) + RequestFrame(0, "Add", testing::AddBody(1, 2))));
  // Closed without an answer.
  char buf[64];
  ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  CHECK(n <= 0);
  ::close(fd);
  CHECK(server->CountStderrLines("reserved bytes must be zero") == 1);
  CHECK(WellBehavedCalls(server->address(), 5) == "");
  CHECK(server->WaitFdCount(base_fds, 3s) == base_fds);
}

TEST_CASE("rpc-server: SIGTERM finishes or fails the calls in flight with a clear status",
          "[rpc][attack]") {
  auto server = StartServer({"--workers", "1", "--shutdown_grace_ms", "300", "--verbose"});
  std::shared_ptr<Messenger> m;
  MessengerOptions o;
  o.num_reactors = 1;
  REQUIRE(Messenger::Create(o, &m).ok());
  test::CalculatorServiceProxy proxy(m, server->address());
  test::SleepRequestPB long_sleep, short_sleep;
  long_sleep.set_sleep_micros(20 * 1000 * 1000);
  short_sleep.set_sleep_micros(0);
  test::SleepResponsePB r1, r2;
  RpcController running, queued;
  std::atomic<int> done{0};
  proxy.SleepAsync(long_sleep, &r1, &running, [&done] { done++; });
  REQUIRE(Eventually([&] { return server->CountStderrLines("Sleep started") == 1; }));
  proxy.SleepAsync(short_sleep, &r2, &queued, [&done] { done++; });
  // Queued: written, and (reactors) read by the server. With connection
  // threads it stays in the socket until the running call ends, which the
  // server answers at shutdown as a queued call.
  REQUIRE(Eventually([&] { return queued.state() == OutboundCall::State::kSent; }));
  if (!testing::ConnectionThreadsRequested()) {
    REQUIRE(Eventually([&] { return server->UnreadBytes() == 0; }));
  }
  // Without the cancel after the 300 ms grace the 20 s sleep would end OK:
  // the "cancelled" status below is the verdict. 60 s only guards a hang.
  int status = server->Stop(SIGTERM, 60s);
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  REQUIRE(Eventually([&] { return done.load() == 2; }));
  INFO("running: " << running.status().ToString() << "; queued: " << queued.status().ToString());
  // The running call was cancelled after the grace period and said so.
  CHECK(running.status().IsRemoteError());
  CHECK(running.status().message().find("cancelled") != std::string::npos);
  CHECK(queued.status().IsServiceUnavailable());
  m->Shutdown();
}

bool HaveIpv6Loopback() {
  int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  Sockaddr a;
  bool ok = Sockaddr::Parse("::1", 0, &a).ok() && ::bind(fd, a.addr(), a.addr_len()) == 0;
  ::close(fd);
  return ok;
}

std::string RunClient(const std::string& args, int* rc) {
  std::string cmd = std::string(CROSSFREE_RPC_CLIENT) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

TEST_CASE("rpc-server and rpc-client work over IPv4 and IPv6", "[rpc][attack]") {
  // IPv6 runs unless CROSSFREE_TEST_NO_IPV6=1 says the machine has no ::1
  // (CONTRIBUTING.md; .ci/run never sets it): a missing ::1 otherwise fails.
  std::vector<std::string> binds = {"127.0.0.1"};
  const char* no_ipv6 = getenv("CROSSFREE_TEST_NO_IPV6");
  if (no_ipv6 != nullptr && std::string(no_ipv6) == "1") {
    WARN("CROSSFREE_TEST_NO_IPV6=1: the IPv6 half is not run");
  } else {
    INFO("::1 cannot be bound; set CROSSFREE_TEST_NO_IPV6=1 on a machine without IPv6");
    REQUIRE(HaveIpv6Loopback());
    binds.push_back("::1");
  }
  for (const std::string& bind : binds) {
    auto server = StartServer({"--bind", bind});
    INFO(server->listening_line());
    CHECK(server->listening_line().find(bind == "::1" ? "[::1]:" : "127.0.0.1:") !=
          std::string::npos);
    const std::string at = "--server '" + server->address().ToString() + "' ";
    int rc = -1;
    std::string out = RunClient(at + "CalculatorService Add 'x: 7 y: 35'", &rc);
    CHECK(rc == 0);
    CHECK(out == "result: 42\n");
    out = RunClient(at + "crossfree.rpc.test.CalculatorService Sleep "
                         "'sleep_micros: 1 fail_with: \"the disk is on fire\"'",
                    &rc);
    CHECK(rc == 1);
    CHECK(out.find("the disk is on fire") != std::string::npos);
    CHECK(out.find("ERROR_APPLICATION") != std::string::npos);
    out = RunClient(at + "CalculatorService Add 'x: 7'", &rc);
    CHECK(rc == 2);
    CHECK(out.find("missing required fields: y") != std::string::npos);
    CHECK(server->Stop(SIGINT, 5s) == 0);
  }
}

}  // namespace
}  // namespace crossfree::rpc
