// SPDX-License-Identifier: Apache-2.0
// grpc_bench: rpc-bench's sync closed loop on gRPC C++ (client and server in
// one process over 127.0.0.1, the same Add method), printing rpc-bench's
// summary lines so scripts/bench/rpc-vs-grpc parses both the same way.
#include <pthread.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "calculator.grpc.pb.h"
#include "bench/bench_result.h"
#include "bench/loop_flags.h"
#include "rpc/histogram.h"

// Provided by bench/'s libcrossfree-rpc-alloc-count.so when it is preloaded
// (the same weak hooks rpc-bench uses); null otherwise. That preload counts
// operator new only, not malloc, so it misses most of gRPC core (C code that
// allocates with gpr_malloc -> malloc): prefer `crossfree record` for gRPC.

namespace crossfree::grpcbench {
namespace {

using rpc::test::AddRequestPB;
using rpc::test::AddResponsePB;

// The closed loop's flags (mode, client threads, calls in flight, run
// time) are rpc-bench's (bench/loop_flags.h); async mode's chains are of
// callback-API calls, one client per channel.
struct Flags : bench::LoopFlags {
  std::string server_api = "sync";
  // Sync server only; 0 keeps gRPC's default.
  int sync_cqs = 0;
  int sync_min_pollers = 0;
  int sync_max_pollers = 0;
  // > 0: every Nth call the handler allocates a small object and hands it
  // to the "handoff" thread, which frees it: a per-call cross-thread pair
  // planted in a third-party server, for the gate's rerun checks
  // (scripts/validate/gate-reruns). 0: none.
  int handoff_every = 0;
  // > 0: every call the handler allocates a small object at one site and
  // hands this share of them (evenly spread over the calls) to the
  // "handoff" thread, freeing the others itself: a site of which a known
  // share crosses threads, as a timing-dependent site's does (the gate
  // judges its crossing share; 0.15 -> 1 must fail). 0: none.
  double handoff_share = 0;
  // > 0: every Nth call the handler starts a thread that allocates a small
  // object and exits, then joins it and frees the object: one-off
  // (thread-bounded) cross-thread objects that grow with the calls, as a
  // thread-per-request server's do (the gate's --bounded-effect). 0: none.
  int spawn_every = 0;
};

// What a handler hands over: ONE allocation (a std::vector would be two,
// itself and its buffer, both at the handler's site, and would double the
// planted rate: --handoff_every 10 read 0.2 objects per call before).
using Box = std::array<int64_t, 4>;

// The receiving end of Flags::handoff_every and handoff_share: one thread
// that frees what handlers give it. Any thread may call MaybeGive; Stop
// joins.
class Handoff {
 public:
  Handoff(int every, double share) : every_(every), share_(share) {
    if (every_ > 0 || share_ > 0) thread_ = std::thread([this] { Drain(); });
  }
  ~Handoff() { Stop(); }

  // Called by a handler once per call.
  void MaybeGive(int64_t value) {
    if (share_ > 0) {
      // One allocation site for the objects given and those kept: the gate
      // sees one site of which share_ crosses. Call n gives when the
      // running total floor(n x share) steps up.
      const uint64_t n = shared_calls_.fetch_add(1, std::memory_order_relaxed);
      auto* box = new Box{value, value, value, value};
      if (static_cast<uint64_t>(static_cast<double>(n + 1) * share_) ==
          static_cast<uint64_t>(static_cast<double>(n) * share_)) {
        delete box;
      } else {
        Give(box);
      }
    }
    if (every_ <= 0 || calls_.fetch_add(1, std::memory_order_relaxed) % every_ != 0) return;
    Give(new Box{value, value, value, value});
  }

  void Stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }

 private:
  void Give(Box* box) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(box);
    ready_.notify_one();
  }

  void Drain() {
    pthread_setname_np(pthread_self(), "handoff");
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      while (!queue_.empty()) {
        delete queue_.front();
        queue_.pop_front();
      }
      if (stop_) return;
    }
  }

  const int every_;
  const double share_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> shared_calls_{0};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Box*> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// Flags::spawn_every: a thread per Nth call, whose one object the handler
// frees after joining it (freed after its allocating thread exited: the
// gate counts it as bounded, one-off). Any handler thread may call it.
class ThreadPerCall {
 public:
  explicit ThreadPerCall(int every) : every_(every) {}

  void MaybeSpawn(int64_t value) {
    if (every_ <= 0 || calls_.fetch_add(1, std::memory_order_relaxed) % every_ != 0) return;
    // One allocation per thread (a vector would be two: it and its
    // buffer), so that the site grows by exactly 1 / every_ per call.
    int64_t* box = nullptr;
    std::thread worker([&box, value] {
      pthread_setname_np(pthread_self(), "per-call");
      box = new int64_t(value);
    });
    worker.join();
    delete box;
  }

 private:
  const int every_;
  std::atomic<uint64_t> calls_{0};
};

using Clock = std::chrono::steady_clock;

// The histogram rpc-bench uses (rpc/histogram.h, compiled in by
// CMakeLists.txt), so the p50/p99 lines of the two benchmarks are the same.
using rpc::Log2Histogram;

// The handler both server flavours run: result = x + y.
void Add(const AddRequestPB& req, AddResponsePB* resp) { resp->set_result(req.x() + req.y()); }

// Sync API: the handler runs on one of the sync server's polling threads.
class SyncCalculator final : public CalculatorService::Service {
 public:
  SyncCalculator(Handoff* handoff, ThreadPerCall* spawner)
      : handoff_(handoff), spawner_(spawner) {}

 private:
  grpc::Status Add(grpc::ServerContext*, const AddRequestPB* req, AddResponsePB* resp) override {
    grpcbench::Add(*req, resp);
    handoff_->MaybeGive(req->x());
    spawner_->MaybeSpawn(req->x());
    return grpc::Status::OK;
  }
  Handoff* handoff_;
  ThreadPerCall* spawner_;
};

// Callback API: the handler runs inline on a gRPC event thread and finishes
// the call at once (no extra thread hop).
class CallbackCalculator final : public CalculatorService::CallbackService {
  grpc::ServerUnaryReactor* Add(grpc::CallbackServerContext* ctx, const AddRequestPB* req,
                                AddResponsePB* resp) override {
    grpcbench::Add(*req, resp);
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// One sync closed-loop caller with its own channel (and TCP connection), as
// rpc-bench gives each client thread its own messenger.
class Workload {
 public:
  Workload(const std::string& target, std::atomic<bool>* stop, Log2Histogram* latency)
      : stop_(stop), latency_(latency) {
    grpc::ChannelArguments args;
    // Without this, channels with equal arguments share one subchannel (one
    // TCP connection) through gRPC's global subchannel pool.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
    // Connected before the clock starts: with 16 channels opening at once,
    // gRPC 1.51 now and then fails a first connect ("failed to connect to
    // all addresses"), and a call made then fails at once instead of
    // waiting; WaitForConnected retries with the channel's own backoff.
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      Die("channel to " + target + " not connected after 10 s");
    }
    stub_ = CalculatorService::NewStub(channel);
  }

  void Run() {
    while (!stop_->load(std::memory_order_relaxed)) {
      // A new context per call, with rpc-bench's 10 s timeout.
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      req_.set_x(x_++);
      req_.set_y(1000);
      Clock::time_point t0 = Clock::now();
      grpc::Status s = stub_->Add(&ctx, req_, &resp_);
      if (!s.ok()) Die(s.error_message());
      if (resp_.result() != req_.x() + req_.y()) Die("wrong result");
      latency_->Record(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
      calls_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  CalculatorService::Stub* stub() { return stub_.get(); }
  void Count() { calls_.fetch_add(1, std::memory_order_relaxed); }

 private:
  [[noreturn]] static void Die(const std::string& why) {
    fprintf(stderr, "grpc_bench: call failed: %s\n", why.c_str());
    std::exit(1);
  }

  std::unique_ptr<CalculatorService::Stub> stub_;
  std::atomic<bool>* stop_;
  Log2Histogram* latency_;
  AddRequestPB req_;
  AddResponsePB resp_;
  uint32_t x_ = 0;
  std::atomic<uint64_t> calls_{0};
};

// Async mode: one chain of calls on a Workload's channel, each issued from
// the completion of the previous one (on gRPC's callback threads).
class AsyncChain {
 public:
  AsyncChain(Workload* w, std::atomic<bool>* stop, Log2Histogram* latency,
             std::atomic<int>* in_flight)
      : w_(w), stop_(stop), latency_(latency), in_flight_(in_flight) {}
  void Start() {
    in_flight_->fetch_add(1);
    Issue();
  }

 private:
  void Issue() {
    if (stop_->load(std::memory_order_relaxed)) {
      in_flight_->fetch_sub(1);
      return;
    }
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    req_.set_x(x_++);
    req_.set_y(1000);
    t0_ = Clock::now();
    w_->stub()->async()->Add(ctx_.get(), &req_, &resp_, [this](grpc::Status s) {
      if (!s.ok()) {
        fprintf(stderr, "grpc_bench: call failed: %s\n", s.error_message().c_str());
        std::exit(1);
      }
      latency_->Record(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0_).count());
      w_->Count();
      Issue();
    });
  }

  Workload* w_;
  std::atomic<bool>* stop_;
  Log2Histogram* latency_;
  std::atomic<int>* in_flight_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  AddRequestPB req_;
  AddResponsePB resp_;
  uint32_t x_ = 0;
  Clock::time_point t0_;
};


int Run(const Flags& f) {
  Handoff handoff(f.handoff_every, f.handoff_share);
  ThreadPerCall spawner(f.spawn_every);
  SyncCalculator sync_service(&handoff, &spawner);
  CallbackCalculator callback_service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  if (f.server_api == "sync") {
    builder.RegisterService(&sync_service);
    using Opt = grpc::ServerBuilder::SyncServerOption;
    if (f.sync_cqs > 0) builder.SetSyncServerOption(Opt::NUM_CQS, f.sync_cqs);
    if (f.sync_min_pollers > 0) builder.SetSyncServerOption(Opt::MIN_POLLERS, f.sync_min_pollers);
    if (f.sync_max_pollers > 0) builder.SetSyncServerOption(Opt::MAX_POLLERS, f.sync_max_pollers);
  } else {
    builder.RegisterService(&callback_service);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    fprintf(stderr, "grpc_bench: server setup failed (could not listen on 127.0.0.1)\n");
    return 1;
  }
  std::string target = "127.0.0.1:" + std::to_string(port);

  std::atomic<bool> stop{false};
  Log2Histogram latency;
  std::vector<std::unique_ptr<Workload>> workloads;
  for (int i = 0; i < f.client_threads; ++i) {
    workloads.push_back(std::make_unique<Workload>(target, &stop, &latency));
  }

  printf("grpc_bench configuration\n");
  printf("  mode: %s\n  client_threads: %d\n  server_api: %s\n", f.mode.c_str(),
         f.client_threads, f.server_api.c_str());
  if (f.mode == "async") printf("  async_call_concurrency: %d\n", f.async_call_concurrency);
  if (f.server_api == "sync") {
    printf("  sync_cqs: %d\n  sync_min_pollers: %d\n  sync_max_pollers: %d  (0 = gRPC default)\n",
           f.sync_cqs, f.sync_min_pollers, f.sync_max_pollers);
  }
  printf("  method: Add\n  grpc_version: %s\n  run_seconds: %g\n", grpc::Version().c_str(),
         f.run_seconds);

  const bool counting = bench::AllocCounting();
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<AsyncChain>> chains;
  std::atomic<int> in_flight{0};
  if (f.mode == "async") {
    for (auto& w : workloads) {
      for (int k = 0; k < f.async_call_concurrency; ++k) {
        chains.push_back(std::make_unique<AsyncChain>(w.get(), &stop, &latency, &in_flight));
      }
    }
    for (auto& c : chains) c->Start();
  } else {
    for (size_t i = 0; i < workloads.size(); ++i) {
      threads.emplace_back([&, i] {
        std::string name = "client-" + std::to_string(i);
        pthread_setname_np(pthread_self(), name.c_str());
        workloads[i]->Run();
      });
    }
  }
  auto calls_now = [&] {
    uint64_t n = 0;
    for (auto& w : workloads) n += w->calls();
    return n;
  };
  // The same window as rpc-bench: connections open during a 100 ms ramp,
  // then calls and rusage are sampled around run_seconds of sleep.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  bench::RusageWindow usage;
  const bench::Window window = bench::MeasureWindow(usage, calls_now, [&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(f.run_seconds));
  });
  const double elapsed = window.elapsed_s;
  const uint64_t calls = window.calls;
  const long allocs = window.allocs;
  const char* report = window.pairs.c_str();
  stop.store(true);
  for (auto& t : threads) t.join();
  while (in_flight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  double reqs = static_cast<double>(calls);
  bench::PrintResultsHead(reqs, elapsed, usage);
  printf("  Calls in window: %llu\n", static_cast<unsigned long long>(calls));
  printf("  Total calls: %llu\n", static_cast<unsigned long long>(calls_now()));
  if (counting) {
    printf("  Heap allocs per req (operator new only): %.2f\n", allocs / reqs);
    printf("  Cross-thread pairs (alloc role -> free role: count):\n%s", report);
  }
  printf("client latency_us: %s", latency.ToString("us").c_str());
  // rpc-bench's machine-readable line, with pattern=grpc-<api>.
  printf("RESULT mode=%s pattern=grpc-%s client_threads=%d worker_threads=0 server_reactors=0 "
         "payload_bytes=0 ",
         f.mode.c_str(), f.server_api.c_str(), f.client_threads);
  bench::PrintResultRates(reqs, elapsed, usage);
  printf(" allocs_per_req=%.3f p50_us=%llu p99_us=%llu calls=%llu total_calls=%llu\n",
         counting ? allocs / reqs : -1.0,
         static_cast<unsigned long long>(latency.PercentileUpperBound(50)),
         static_cast<unsigned long long>(latency.PercentileUpperBound(99)),
         static_cast<unsigned long long>(calls), static_cast<unsigned long long>(calls_now()));
  fflush(stdout);
  workloads.clear();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}

}  // namespace
}  // namespace crossfree::grpcbench

int main(int argc, char** argv) {
  crossfree::grpcbench::Flags f;
  CLI::App app{"grpc_bench: rpc-bench's sync closed loop on gRPC C++ (client and server in one "
               "process over 127.0.0.1)"};
  crossfree::bench::AddLoopOptions(
      app, &f, {"sync", "async"},
      {.mode = "sync (a blocking caller per client thread) or async (callback-API chains)",
       .client_threads = "Client threads, each with its own channel and TCP connection",
       .client = "channel"});
  app.add_option("--server_api", f.server_api,
                 "sync (handler on a sync-server polling thread) or callback (handler inline "
                 "on a gRPC event thread)")
      ->check(CLI::IsMember({"sync", "callback"}));
  app.add_option("--sync_cqs", f.sync_cqs, "Sync server: completion queues (0 = gRPC default)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--sync_min_pollers", f.sync_min_pollers,
                 "Sync server: minimum polling threads per queue (0 = gRPC default)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--sync_max_pollers", f.sync_max_pollers,
                 "Sync server: maximum polling threads per queue (0 = gRPC default)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--handoff_every", f.handoff_every,
                 "Sync server: every Nth call hands a small object to a thread that frees it "
                 "(a planted per-call cross-thread pair; 0 = none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--handoff_share", f.handoff_share,
                 "Sync server: every call allocates a small object and hands this share of "
                 "them to the thread that frees them, freeing the rest itself (a site of which "
                 "a known share crosses threads; 0 = none)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--spawn_every", f.spawn_every,
                 "Sync server: every Nth call starts a thread that allocates a small object the "
                 "handler frees after joining it (one-off objects growing with the calls, as a "
                 "thread-per-request server's; 0 = none)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  return crossfree::grpcbench::Run(f);
}
