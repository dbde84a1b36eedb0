// SPDX-License-Identifier: Apache-2.0
// rpc-bench: client and server in one process over loopback, calling the
// CalculatorService (Add, or Echo with --payload_bytes) in a closed loop, in
// the fixed or a legacy allocation pattern. Modeled on Kudu's rpc-bench.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <queue>
#include <random>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "crossfree_version.h"

#include "bench/bench_result.h"
#include "bench/loop_flags.h"
#include "rpc/alloc_pattern.h"
#include "rpc/calculator_service.h"
#include "rpc/histogram.h"
#include "rpc/logging.h"
#include "rpc/messenger.h"
#include "rpc/reactor.h"

// Provided by libcrossfree-rpc-alloc-count.so when it is preloaded; absent
// (null) otherwise.

namespace crossfree::rpc {
namespace {

// The closed loop's flags (mode, client threads, calls in flight, run
// time) are grpc_bench's too (bench/loop_flags.h).
struct Flags : bench::LoopFlags {
  int server_reactors = 4;
  int worker_threads = 1;
  double progress_seconds = 0;  // > 0: print req/s every this many seconds
  // Sync: > 0 makes each client thread stop after this many calls (the run is
  // then as long as they take, not run_seconds): a fixed amount of work, for
  // counting instructions per call under callgrind.
  int64_t calls = 0;
  int payload_bytes = 0;
  std::string alloc_pattern = "fixed";
  AllocPattern legacy;  // the --legacy_* switches, added to alloc_pattern's
  int queue_length = 200;
  bool inline_handlers = false;
  bool caller_reads = false;
  bool connection_threads = false;
};

using Clock = std::chrono::steady_clock;

uint64_t MicrosSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
}

// True for the answer of a full server queue: worth retrying later.
bool IsServerTooBusy(const RpcController& c) {
  return c.status().IsServiceUnavailable() && c.error_response() != nullptr &&
         c.error_response()->code() == ErrorStatusPB::ERROR_SERVER_TOO_BUSY;
}

// Backoff before retry number `attempt` (1, 2, ...) of a rejected call, as
// KRPC's proxies retry SERVER_TOO_BUSY: exponential from 1 ms, capped at
// 64 ms, with up to 50% random jitter so that rejected callers do not come
// back in lockstep.
std::chrono::microseconds RetryDelay(int attempt, std::minstd_rand* rng) {
  int64_t base = int64_t{1000} << std::min(attempt - 1, 6);
  std::uniform_int_distribution<int64_t> jitter(0, base / 2);
  return std::chrono::microseconds(base + jitter(*rng));
}

class Workload;

// Async mode: re-issues rejected calls after their backoff, from its own
// thread (a caller thread, like the one that started the chains), so the
// client reactor never sleeps.
class Retrier {
 public:
  Retrier() : thread_([this] { Run(); }) {}
  ~Retrier() { Stop(); }
  void Schedule(Workload* w, Clock::time_point at);
  // Drops the pending retries (their chains end) and joins the thread.
  void Stop();

 private:
  struct Entry {
    Clock::time_point at;
    Workload* w;
    bool operator>(const Entry& o) const { return at > o.at; }
  };
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  bool stop_ = false;
  std::thread thread_;
};

// One closed-loop caller. Sync: a thread; async: a chain of calls, each
// issued from the previous one's callback on the client reactor.
class Workload {
 public:
  Workload(std::shared_ptr<Messenger> client, const Sockaddr& server, const Flags& f,
           std::atomic<bool>* stop, Log2Histogram* latency, Retrier* retrier, uint32_t seed)
      : proxy_(std::move(client), server),
        flags_(f),
        stop_(stop),
        latency_(latency),
        retrier_(retrier),
        rng_(seed) {
    if (f.payload_bytes > 0) echo_req_.set_data(std::string(f.payload_bytes, 'p'));
  }

  void RunSync() {
    int attempt = 0;
    uint64_t limit = flags_.calls > 0 ? static_cast<uint64_t>(flags_.calls) : UINT64_MAX;
    while (!stop_->load(std::memory_order_relaxed) && calls() < limit) {
      RpcController c;
      c.set_timeout(std::chrono::seconds(10));
      Clock::time_point t0 = Clock::now();
      Status s = IssueSync(&c);
      if (!s.ok() && IsServerTooBusy(c)) {
        rejections_.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(RetryDelay(++attempt, &rng_));
        continue;
      }
      if (!s.ok() || !CheckResult()) Die(s);
      attempt = 0;
      latency_->Record(MicrosSince(t0));
      calls_++;
    }
  }

  void StartAsync() { IssueAsync(); }
  // Retrier thread: the backoff is over.
  void Retry() { IssueAsync(false); }
  // Retrier thread: the run ended while this chain waited for a retry.
  void Abandon() { in_flight_.store(false, std::memory_order_release); }
  // Calls still running (0 or 1).
  bool idle() const { return !in_flight_.load(std::memory_order_acquire); }
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  uint64_t rejections() const { return rejections_.load(std::memory_order_relaxed); }

 private:
  Status IssueSync(RpcController* c) {
    Next();
    if (flags_.payload_bytes > 0) return proxy_.Echo(echo_req_, &echo_resp_, c);
    return proxy_.Add(add_req_, &add_resp_, c);
  }

  // `fresh`: a new call (next arguments, new latency clock), not a retry.
  void IssueAsync(bool fresh = true) {
    if (stop_->load(std::memory_order_relaxed)) {
      in_flight_.store(false, std::memory_order_release);
      return;
    }
    in_flight_.store(true, std::memory_order_release);
    controller_.Reset();
    controller_.set_timeout(std::chrono::seconds(10));
    if (fresh) {
      Next();
      t0_ = Clock::now();
    }
    if (flags_.payload_bytes > 0) {
      proxy_.EchoAsync(echo_req_, &echo_resp_, &controller_, [this] { OnDone(); });
    } else {
      proxy_.AddAsync(add_req_, &add_resp_, &controller_, [this] { OnDone(); });
    }
  }

  void OnDone() {
    if (!controller_.status().ok()) {
      if (stop_->load()) {
        in_flight_.store(false, std::memory_order_release);
        return;
      }
      if (IsServerTooBusy(controller_)) {
        // More calls in flight than the server queues: back off and retry
        // the same call (its latency includes the wait).
        rejections_.fetch_add(1, std::memory_order_relaxed);
        retrier_->Schedule(this, Clock::now() + RetryDelay(++attempt_, &rng_));
        return;
      }
      Die(controller_.status());
    }
    attempt_ = 0;
    if (!CheckResult()) Die(Status::Corruption("wrong result"));
    latency_->Record(MicrosSince(t0_));
    calls_.fetch_add(1, std::memory_order_relaxed);
    IssueAsync();
  }

  void Next() {
    add_req_.set_x(x_++);
    add_req_.set_y(1000);
  }
  bool CheckResult() const {
    if (flags_.payload_bytes > 0) return echo_resp_.data().size() == size_t(flags_.payload_bytes);
    return add_resp_.result() == add_req_.x() + add_req_.y();
  }
  [[noreturn]] static void Die(const Status& s) {
    fprintf(stderr, "rpc-bench: call failed: %s\n", s.ToString().c_str());
    std::exit(1);
  }

  test::CalculatorServiceProxy proxy_;
  const Flags& flags_;
  std::atomic<bool>* stop_;
  Log2Histogram* latency_;
  test::AddRequestPB add_req_;
  test::AddResponsePB add_resp_;
  test::EchoRequestPB echo_req_;
  test::EchoResponsePB echo_resp_;
  RpcController controller_;
  Clock::time_point t0_;
  uint32_t x_ = 0;
  Retrier* retrier_;
  std::minstd_rand rng_;
  int attempt_ = 0;  // async: retries of the current call so far
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> rejections_{0};
  std::atomic<bool> in_flight_{false};
};

void Retrier::Schedule(Workload* w, Clock::time_point at) {
  std::lock_guard<std::mutex> l(mu_);
  if (stop_) {
    w->Abandon();
    return;
  }
  heap_.push(Entry{at, w});
  cv_.notify_one();
}

void Retrier::Run() {
  SetCurrentThreadName("retrier");
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (heap_.empty()) {
      cv_.wait(l);
      continue;
    }
    Entry e = heap_.top();
    if (Clock::now() < e.at) {
      cv_.wait_until(l, e.at);
      continue;
    }
    heap_.pop();
    l.unlock();
    e.w->Retry();
    l.lock();
  }
}

void Retrier::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    stop_ = true;
    while (!heap_.empty()) {
      heap_.top().w->Abandon();
      heap_.pop();
    }
    cv_.notify_one();
  }
  thread_.join();
}


// --mode pingpong: the physical limit of one blocking call at a time. Each
// of --client_threads pairs of threads bounces a 40-byte message (about an
// Add request) over its own TCP connection on 127.0.0.1 with blocking
// read/write: one round trip = two writes, two reads, two wake-ups. No RPC
// code is involved; the output has the same summary and RESULT lines.
bool ReadFull(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}
bool WriteFull(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int RunPingPong(const Flags& f) {
  constexpr size_t kMsg = 40;
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof(a);
  if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(lfd, 128) != 0 ||
      ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen) != 0) {
    perror("rpc-bench: pingpong listen");
    return 1;
  }
  std::atomic<bool> stop{false};
  std::vector<std::atomic<uint64_t>> counts(f.client_threads);
  std::vector<std::thread> threads;
  std::vector<int> fds;
  int one = 1;
  for (int i = 0; i < f.client_threads; ++i) {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      perror("rpc-bench: pingpong connect");
      return 1;
    }
    int s = ::accept(lfd, nullptr, nullptr);
    if (s < 0) {
      perror("rpc-bench: pingpong accept");
      return 1;
    }
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fds.push_back(c);
    fds.push_back(s);
    threads.emplace_back([s, i] {
      SetCurrentThreadName("pong-" + std::to_string(i));
      char buf[kMsg];
      while (ReadFull(s, buf, kMsg) && WriteFull(s, buf, kMsg)) {
      }
    });
    threads.emplace_back([c, i, &stop, &counts] {
      SetCurrentThreadName("ping-" + std::to_string(i));
      char buf[kMsg];
      memset(buf, 'p', kMsg);
      while (!stop.load(std::memory_order_relaxed)) {
        if (!WriteFull(c, buf, kMsg) || !ReadFull(c, buf, kMsg)) break;
        counts[i].fetch_add(1, std::memory_order_relaxed);
      }
      ::shutdown(c, SHUT_WR);
    });
  }
  auto total = [&] {
    uint64_t n = 0;
    for (auto& c : counts) n += c.load(std::memory_order_relaxed);
    return n;
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  bench::RusageWindow usage;
  uint64_t n0 = total();
  usage.Start();
  Clock::time_point t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(f.run_seconds));
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  uint64_t n = total() - n0;
  usage.Stop();
  stop.store(true);
  for (auto& t : threads) t.join();
  for (int fd : fds) ::close(fd);
  ::close(lfd);
  double reqs = static_cast<double>(n);
  printf("rpc-bench configuration\n  mode: pingpong (raw blocking TCP, %zu-byte messages)\n"
         "  client_threads: %d\n  run_seconds: %g\n",
         kMsg, f.client_threads, f.run_seconds);
  bench::PrintResultsHead(reqs, elapsed, usage);
  printf("RESULT mode=pingpong pattern=none client_threads=%d worker_threads=0 server_reactors=0 "
         "payload_bytes=%zu ",
         f.client_threads, kMsg);
  bench::PrintResultRates(reqs, elapsed, usage);
  printf(" vol_ctxsw_per_req=%.4f allocs_per_req=-1 p50_us=0 p99_us=0 rejections=0\n",
         usage.voluntary_ctxsw() / reqs);
  fflush(stdout);
  return 0;
}

// Run's steps, in its order.

// The server messenger with the calculator service, listening on a
// loopback port (*addr).
Status StartServer(const Flags& f, std::shared_ptr<Messenger>* server, Sockaddr* addr) {
  MessengerOptions so;
  so.name = "server";
  so.num_reactors = f.server_reactors;
  so.connection_threads = f.connection_threads;
  Status s = Messenger::Create(so, server);
  if (s.ok()) {
    ServicePoolOptions po;
    po.num_workers = f.worker_threads;
    po.queue_length = f.queue_length;
    if (f.inline_handlers) po.inline_methods = {"Add", "Echo"};
    s = (*server)->RegisterService(std::make_unique<test::CalculatorService>(), po);
  }
  if (s.ok()) s = (*server)->StartAcceptor("127.0.0.1", 0, addr);
  return s;
}

// The client messengers and their call chains. Sync: one messenger (one
// reactor) per client thread, as in Kudu. Async: --client_threads
// messengers, each with --async_call_concurrency call chains. False, said
// on stderr, when a messenger cannot be created.
bool StartClients(const Flags& f, const Sockaddr& addr, std::atomic<bool>* stop,
                  Log2Histogram* latency, Retrier* retrier,
                  std::vector<std::shared_ptr<Messenger>>* clients,
                  std::vector<std::unique_ptr<Workload>>* workloads) {
  for (int i = 0; i < f.client_threads; ++i) {
    MessengerOptions co;
    co.name = "client";
    co.num_reactors = 1;
    co.reactor_prefix = "cli-reactor";
    co.caller_reads_sync_responses = f.caller_reads;
    std::shared_ptr<Messenger> m;
    Status s = Messenger::Create(co, &m);
    if (!s.ok()) {
      fprintf(stderr, "rpc-bench: client setup failed: %s\n", s.ToString().c_str());
      return false;
    }
    clients->push_back(m);
    int per = f.mode == "async" ? f.async_call_concurrency : 1;
    for (int k = 0; k < per; ++k) {
      workloads->push_back(std::make_unique<Workload>(
          m, addr, f, stop, latency, retrier, static_cast<uint32_t>(workloads->size() + 1)));
    }
  }
  return true;
}

void PrintConfiguration(const Flags& f, const AllocPattern& pattern) {
  printf("rpc-bench configuration\n");
  printf("  mode: %s\n", f.mode.c_str());
  if (f.mode == "async") {
    printf("  client_reactors: %d\n  async_call_concurrency: %d\n", f.client_threads,
           f.async_call_concurrency);
  } else {
    printf("  client_threads: %d\n", f.client_threads);
  }
  printf("  worker_threads: %d\n  server_reactors: %d\n  payload_bytes: %d\n", f.worker_threads,
         f.server_reactors, f.payload_bytes);
  printf("  method: %s\n  alloc_pattern: %s\n  run_seconds: %g\n",
         f.payload_bytes > 0 ? "Echo" : "Add", pattern.ToString().c_str(), f.run_seconds);
  printf("  inline_handlers: %s\n  caller_reads: %s\n  connection_threads: %s\n",
         f.inline_handlers ? "yes" : "no", f.caller_reads ? "yes" : "no",
         f.connection_threads ? "yes" : "no");
}

// Waits out --run_seconds printing one line per interval on stderr:
// throughput over time, for a run that something (crossfree record -p)
// attaches to and detaches from.
template <typename CallsNow>
void RunWithProgress(const Flags& f, CallsNow calls_now) {
  const Clock::time_point t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(f.run_seconds));
  uint64_t last_calls = calls_now();
  Clock::time_point last = t0;
  while (Clock::now() < end) {
    std::this_thread::sleep_until(std::min(
        end, last + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(f.progress_seconds))));
    const Clock::time_point now = Clock::now();
    const uint64_t c = calls_now();
    fprintf(stderr, "PROGRESS t=%.2f reqs_per_sec=%.1f\n",
            std::chrono::duration<double>(now - t0).count(),
            (c - last_calls) / std::chrono::duration<double>(now - last).count());
    last_calls = c;
    last = now;
  }
}

// The counting preload's cross-thread pair lines ("    <role> -> <role>:
// <count>"), each with its count per request.
void PrintPairLines(const char* report, double reqs) {
  const char* line = report;
  while (*line != '\0') {
    const char* end = strchr(line, '\n');
    std::string l(line, end != nullptr ? end - line : strlen(line));
    size_t colon = l.rfind(':');
    if (colon != std::string::npos && l.find("(none)") == std::string::npos) {
      double n = atof(l.c_str() + colon + 1);
      printf("%s (%.3f per req)\n", l.c_str(), n / reqs);
    } else {
      printf("%s\n", l.c_str());
    }
    if (end == nullptr) break;
    line = end + 1;
  }
}

// The results: the human-readable block, then one RESULT line.
void PrintResults(const Flags& f, const AllocPattern& pattern, const bench::Window& window,
                  bench::RusageWindow& usage, bool counting, uint64_t rejections,
                  Log2Histogram& latency, Messenger& server) {
  const double elapsed = window.elapsed_s;
  const long allocs = window.allocs;
  double reqs = static_cast<double>(window.calls);
  bench::PrintResultsHead(reqs, elapsed, usage);
  // Over the whole run (ramp included): calls the server rejected with
  // SERVER_TOO_BUSY and that were retried after a backoff.
  printf("  Rejected (SERVER_TOO_BUSY, retried): %llu\n",
         static_cast<unsigned long long>(rejections));
  if (counting) {
    printf("  Heap allocs per req: %.2f\n", allocs / reqs);
    printf("  Cross-thread pairs (alloc role -> free role: count, per req):\n");
    PrintPairLines(window.pairs.c_str(), reqs);
  }
  printf("client latency_us: %s", latency.ToString("us").c_str());
  Log2Histogram load, active;
  for (auto& r : server.reactors()) {
    load.Merge(r->load_percent());
    active.Merge(r->active_latency_us());
  }
  printf("server reactor_load_percent: %s", load.ToString("%").c_str());
  printf("server reactor_active_latency_us: %s", active.ToString("us").c_str());
  // One machine-readable line for scripts (and for comparing with other
  // RPC systems): key=value pairs, no spaces in values.
  printf("RESULT mode=%s pattern=%s client_threads=%d worker_threads=%d server_reactors=%d "
         "payload_bytes=%d ",
         f.mode.c_str(), pattern.ToString().c_str(), f.client_threads, f.worker_threads,
         f.server_reactors, f.payload_bytes);
  bench::PrintResultRates(reqs, elapsed, usage);
  printf(" vol_ctxsw_per_req=%.4f allocs_per_req=%.3f p50_us=%llu p99_us=%llu rejections=%llu "
         "inline_handlers=%d caller_reads=%d connection_threads=%d\n",
         usage.voluntary_ctxsw() / reqs, counting ? allocs / reqs : -1.0,
         static_cast<unsigned long long>(latency.PercentileUpperBound(50)),
         static_cast<unsigned long long>(latency.PercentileUpperBound(99)),
         static_cast<unsigned long long>(rejections), f.inline_handlers ? 1 : 0,
         f.caller_reads ? 1 : 0, f.connection_threads ? 1 : 0);
  fflush(stdout);
}

int Run(const Flags& f) {
  if (f.mode == "pingpong") return RunPingPong(f);
  AllocPattern pattern;
  Status s = AllocPattern::FromName(f.alloc_pattern, &pattern);
  if (!s.ok()) {
    fprintf(stderr, "rpc-bench: %s\n", s.ToString().c_str());
    return 2;
  }
  pattern.Add(f.legacy);
  SetAllocPattern(pattern);

  std::shared_ptr<Messenger> server;
  Sockaddr addr;
  s = StartServer(f, &server, &addr);
  if (!s.ok()) {
    fprintf(stderr, "rpc-bench: server setup failed: %s\n", s.ToString().c_str());
    return 1;
  }
  std::atomic<bool> stop{false};
  Log2Histogram latency;
  Retrier retrier;
  std::vector<std::shared_ptr<Messenger>> clients;
  std::vector<std::unique_ptr<Workload>> workloads;
  if (!StartClients(f, addr, &stop, &latency, &retrier, &clients, &workloads)) return 1;
  PrintConfiguration(f, pattern);

  const bool counting = bench::AllocCounting();
  bench::RusageWindow usage;
  std::vector<std::thread> threads;
  // Warm-up happens inside the run (connections open on the first call);
  // the measurement window starts after a short ramp.
  if (f.mode == "async") {
    for (auto& w : workloads) w->StartAsync();
  } else {
    for (size_t i = 0; i < workloads.size(); ++i) {
      threads.emplace_back([&, i] {
        SetCurrentThreadName("client-" + std::to_string(i));
        workloads[i]->RunSync();
      });
    }
  }
  bool fixed_calls = f.mode == "sync" && f.calls > 0;
  if (!fixed_calls) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto calls_now = [&] {
    uint64_t n = 0;
    for (auto& w : workloads) n += w->calls();
    return n;
  };
  const bench::Window window = bench::MeasureWindow(usage, calls_now, [&] {
    if (fixed_calls) {
      for (auto& t : threads) t.join();
      threads.clear();
    } else if (f.progress_seconds > 0) {
      RunWithProgress(f, calls_now);
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(f.run_seconds));
    }
  });
  uint64_t rejections = 0;
  for (auto& w : workloads) rejections += w->rejections();
  stop.store(true);
  for (auto& t : threads) t.join();
  retrier.Stop();
  for (auto& w : workloads) {
    while (!w->idle()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  PrintResults(f, pattern, window, usage, counting, rejections, latency, *server);
  for (auto& c : clients) c->Shutdown();
  server->Shutdown();
  return 0;
}

}  // namespace
}  // namespace crossfree::rpc

int main(int argc, char** argv) {
  crossfree::rpc::Flags f;
  CLI::App app{"rpc-bench: closed-loop RPC benchmark over loopback (client and server in one "
               "process)"};
  app.set_version_flag("--version", "rpc-bench " CROSSFREE_VERSION);
  crossfree::bench::AddLoopOptions(
      app, &f, {"sync", "async", "pingpong"},
      {.mode = "sync, async, or pingpong (raw blocking TCP round trips, no RPC: the limit)",
       .client_threads = "Sync: client threads (each with its own 1-reactor messenger). "
                         "Async: client messengers/reactors",
       .client = "messenger"});
  app.add_option("--server_reactors", f.server_reactors, "Server reactor threads")
      ->check(CLI::PositiveNumber);
  app.add_option("--worker_threads", f.worker_threads, "Server service-pool workers")
      ->check(CLI::PositiveNumber);
  app.add_option("--progress_seconds", f.progress_seconds,
                 "Print the req/s of each interval this long on stderr while running "
                 "(PROGRESS lines; 0 = none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--calls", f.calls,
                 "Sync: each client thread makes this many calls, then the run ends "
                 "(instead of --run_seconds; no ramp: for instruction counts)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--payload_bytes", f.payload_bytes,
                 "0: call Add; N > 0: call Echo with N bytes each way")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--queue_length", f.queue_length, "Server service queue length")
      ->check(CLI::PositiveNumber);
  app.add_option("--alloc_pattern", f.alloc_pattern,
                 "fixed (all KUDU-1865 fixes) or legacy (all historical patterns)")
      ->check(CLI::IsMember({"fixed", "legacy"}));
  for (const crossfree::rpc::AllocPatternSwitch& s : crossfree::rpc::kAllocPatternSwitches) {
    app.add_flag(std::string("--") + s.name, f.legacy.*s.member, s.help);
  }
  app.add_flag("--inline_handlers", f.inline_handlers,
               "Server: run Add and Echo on the reactor that read the request, which writes "
               "the response too (ServicePoolOptions::inline_methods; no worker hand-off)");
  app.add_flag("--caller_reads", f.caller_reads,
               "Client: a sync caller alone on its connection reads its response from the "
               "socket itself (MessengerOptions::caller_reads_sync_responses; no client "
               "reactor wake-up)");
  app.add_flag("--connection_threads", f.connection_threads,
               "Server: each connection served by its own thread with blocking I/O, the "
               "handler run on it (MessengerOptions::connection_threads; no reactor, no "
               "worker, no epoll_wait per call)");
  CLI11_PARSE(app, argc, argv);
  return crossfree::rpc::Run(f);
}
