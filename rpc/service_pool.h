// SPDX-License-Identifier: Apache-2.0
// ServicePool: one registered service, its queue and its worker threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rpc/service_if.h"
#include "rpc/service_queue.h"
#include "rpc/status.h"

namespace crossfree::rpc {

struct ServicePoolOptions {
  int num_workers = 1;
  int queue_length = 200;
  // Methods (by name) whose handlers run inline: on the server reactor
  // thread that read the request, which then writes the response itself,
  // skipping the hand-off to a worker and back (two thread wake-ups per
  // call fewer). Empty (the default) is the KRPC topology: every call goes
  // through the queue to a worker. Only for handlers that never block (no
  // I/O, no locks held long, no sleeping): while one runs, every other
  // connection of that reactor waits. A handler may still RpcContext::Defer
  // the slow part to the deferred pool. Inline calls skip the queue, so
  // queue_length does not bound them; the per-connection bounds
  // (MessengerOptions) do. Unknown names make RegisterService fail. With
  // MessengerOptions::connection_threads every method runs on the
  // connection's own thread, whatever this says (and the workers idle).
  std::vector<std::string> inline_methods;
};

// Owner: the Messenger. Workers are named "worker-N" (N unique within the
// messenger). Threads: QueueInboundCall from reactors (it runs inline
// methods right there); Start/Shutdown from the messenger's owner.
class ServicePool {
 public:
  ServicePool(std::unique_ptr<ServiceIf> service, const ServicePoolOptions& options,
              int first_worker_index, std::string worker_prefix);
  ~ServicePool();

  // InvalidArgument if an inline method is not a method of the service.
  Status Start();
  // Closes the queue and answers every queued call with
  // FATAL_SERVER_SHUTTING_DOWN; each worker stops after its current call.
  // Idempotent.
  void BeginShutdown();
  // Waits until every worker has stopped, at most until `deadline`; true if
  // they all have.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  // BeginShutdown, then joins the workers. Idempotent.
  void Shutdown();

  // Reactor thread: runs an inline method's handler now, on this thread;
  // queues any other call, or answers ERROR_SERVER_TOO_BUSY ("service queue
  // is full") when the queue is full, unless the call's deadline is earlier
  // than a queued call's: that one is answered instead.
  void QueueInboundCall(InboundCall* call);
  // A connection thread (MessengerOptions::connection_threads): runs the
  // call's handler now, on this thread, for any method (the thread is the
  // connection's own: blocking there stalls only that connection), or
  // answers FATAL_SERVER_SHUTTING_DOWN once the pool is shutting down.
  void HandleInboundCallHere(InboundCall* call);

  const std::string& service_name() const { return service_->service_name(); }
  uint64_t queue_overflows() const { return overflows_.load(std::memory_order_relaxed); }
  int queued_calls() { return queue_.queued(); }
  uint64_t expired_in_queue() const { return expired_.load(std::memory_order_relaxed); }
  // Calls skipped because they were cancelled (client gone) before a
  // worker got to them.
  uint64_t cancelled_in_queue() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  void RunWorker(int index);
  // Answers a call that is not worth running (expired deadline, client
  // gone) and returns true; false if it should run.
  bool AnswerIfStale(InboundCall* call);
  // Answers FATAL_SERVER_SHUTTING_DOWN.
  void AnswerShuttingDown(InboundCall* call);
  // The index of the call's method if the pool runs it inline, else -1.
  // Stores the index it looked up in the call (InboundCall::method_index).
  int InlineMethodIndex(InboundCall* call) const;

  std::unique_ptr<ServiceIf> service_;
  const ServicePoolOptions options_;
  const int first_worker_index_;
  const std::string worker_prefix_;
  ServiceQueue queue_;
  // inline_[i]: method i of the service runs inline (empty when none does,
  // so the KRPC configuration pays no lookup).
  std::vector<bool> inline_;
  // Hand-off slots, one per worker, alive as long as the pool (a reactor may
  // still be notifying one while its worker exits).
  std::vector<std::unique_ptr<ServiceQueue::Consumer>> consumers_;
  std::vector<std::thread> workers_;
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> joined_{false};
  std::atomic<uint64_t> overflows_{0};
  std::atomic<uint64_t> expired_{0};
  std::atomic<uint64_t> cancelled_{0};
  std::mutex exit_mu_;
  std::condition_variable exit_cv_;
  int workers_exited_ = 0;
};

}  // namespace crossfree::rpc
