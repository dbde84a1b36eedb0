// SPDX-License-Identifier: Apache-2.0
// DeferredPool implementation.
#include "rpc/deferred_pool.h"

#include "rpc/logging.h"

namespace crossfree::rpc {

DeferredPool::DeferredPool(std::string thread_prefix, int max_threads, int queue_length)
    : prefix_(std::move(thread_prefix)), max_threads_(max_threads), queue_length_(queue_length) {}

DeferredPool::~DeferredPool() { Shutdown(); }

Status DeferredPool::Submit(DeferredTask&& task) {
  std::unique_lock<std::mutex> l(mu_);
  if (shutting_down_) return Status::ServiceUnavailable("the deferred-work pool is shutting down");
  if (static_cast<int>(queue_.size()) >= queue_length_ || max_threads_ <= 0) {
    return Status::ServiceUnavailable("the deferred-work pool is full: " +
                                      std::to_string(queue_.size()) + " tasks waiting for " +
                                      std::to_string(max_threads_) + " threads");
  }
  queue_.push_back(std::move(task));
  work_cv_.notify_one();
  // Start a thread only when the idle ones cannot take every queued task.
  if (idle_threads_ < static_cast<int>(queue_.size()) &&
      static_cast<int>(threads_.size()) < max_threads_) {
    int index = static_cast<int>(threads_.size());
    threads_.emplace_back([this, index] {
      SetCurrentThreadName(prefix_ + "-" + std::to_string(index));
      Run();
    });
  }
  return Status::OK();
}

void DeferredPool::Run() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    while (queue_.empty() && !shutting_down_) {
      ++idle_threads_;
      work_cv_.wait(l);
      --idle_threads_;
    }
    if (queue_.empty()) return;  // shutting down, nothing left
    DeferredTask task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    l.unlock();
    task(Status::OK());
    task = nullptr;  // its captures die here, outside the lock
    l.lock();
    --running_;
    if (running_ == 0) idle_cv_.notify_all();
  }
}

void DeferredPool::BeginShutdown() {
  std::deque<DeferredTask> left;
  {
    std::lock_guard<std::mutex> l(mu_);
    shutting_down_ = true;
    left.swap(queue_);
  }
  work_cv_.notify_all();
  for (DeferredTask& t : left) t(Status::Aborted("the deferred-work pool is shutting down"));
}

bool DeferredPool::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(mu_);
  return idle_cv_.wait_until(l, deadline, [this] { return running_ == 0; });
}

void DeferredPool::Shutdown() {
  BeginShutdown();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> l(mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

int DeferredPool::threads() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(threads_.size());
}

}  // namespace crossfree::rpc
