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
};

// Owner: the Messenger. Workers are named "worker-N" (N unique within the
// messenger). Threads: QueueInboundCall from reactors; Start/Shutdown from
// the messenger's owner.
class ServicePool {
 public:
  ServicePool(std::unique_ptr<ServiceIf> service, const ServicePoolOptions& options,
              int first_worker_index, std::string worker_prefix);
  ~ServicePool();

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

  // Reactor thread: queues the call, or answers ERROR_SERVER_TOO_BUSY
  // ("service queue is full") when the queue is full, unless the call's
  // deadline is earlier than a queued call's: that one is answered instead.
  void QueueInboundCall(InboundCall* call);

  const std::string& service_name() const { return service_->service_name(); }
  uint64_t queue_overflows() const { return overflows_.load(std::memory_order_relaxed); }
  int queued_calls() { return queue_.queued(); }
  uint64_t expired_in_queue() const { return expired_.load(std::memory_order_relaxed); }
  // Calls skipped because they were cancelled (client gone) before a
  // worker got to them.
  uint64_t cancelled_in_queue() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  void RunWorker(int index);

  std::unique_ptr<ServiceIf> service_;
  const ServicePoolOptions options_;
  const int first_worker_index_;
  const std::string worker_prefix_;
  ServiceQueue queue_;
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
