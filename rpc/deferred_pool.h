// SPDX-License-Identifier: Apache-2.0
// DeferredPool: a bounded set of threads for work that a handler moves off
// its service-pool worker (RpcContext::Defer), so that a slow call does not
// occupy a worker and never costs a thread of its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rpc/status.h"

namespace crossfree::rpc {

// Called exactly once: with OK on a pool thread, or with Aborted on the
// thread that shuts the pool down if it never got to run.
using DeferredTask = std::function<void(const Status&)>;

// Owner: the Messenger. At most `max_threads` threads, started on demand
// (a messenger that never defers has none) and kept until shutdown; at most
// `queue_length` tasks waiting. Threads: Submit from any thread; shutdown
// from the messenger's owner.
class DeferredPool {
 public:
  DeferredPool(std::string thread_prefix, int max_threads, int queue_length);
  ~DeferredPool();
  DeferredPool(const DeferredPool&) = delete;
  DeferredPool& operator=(const DeferredPool&) = delete;

  // Queues `task`. ServiceUnavailable (and `task` is left untouched) when
  // the queue is full or the pool is shutting down.
  Status Submit(DeferredTask&& task);

  // Stops taking tasks and calls the queued ones with Aborted (on this
  // thread); running tasks go on.
  void BeginShutdown();
  // Waits until no task runs, at most until `deadline`; true if none does.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  // BeginShutdown, then waits for the running tasks and joins the threads.
  void Shutdown();

  int threads() const;
  int max_threads() const { return max_threads_; }

 private:
  void Run();

  const std::string prefix_;
  const int max_threads_;
  const int queue_length_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<DeferredTask> queue_;
  std::vector<std::thread> threads_;
  int idle_threads_ = 0;
  int running_ = 0;
  bool shutting_down_ = false;
};

}  // namespace crossfree::rpc
