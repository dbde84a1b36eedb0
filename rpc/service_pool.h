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
#include "rpc/service_pool_options.h"
#include "rpc/service_queue.h"
#include "rpc/status.h"

namespace crossfree::rpc {

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
