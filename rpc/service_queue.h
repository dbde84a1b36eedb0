// SPDX-License-Identifier: Apache-2.0
// ServiceQueue: the bounded queue between a server reactor and its service
// pool's workers, with LIFO hand-off to idle workers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace crossfree::rpc {

class InboundCall;

// Put() hands the call straight to the most recently idle worker (its cache
// is warmest) or, when all are busy, adds it to a deadline-ordered heap of
// at most `capacity` calls (earliest deadline first, then arrival). When the
// heap is full, a call with an earlier deadline than the latest queued one
// takes its place, and the evicted call is returned to be rejected. The heap
// storage and the per-worker slots are allocated once, so queueing a call
// allocates nothing.
// Threads: Put from reactor threads, BlockingGet from workers, Shutdown from
// anyone; all thread-safe.
class ServiceQueue {
 public:
  // Per-worker hand-off slot, owned by the worker thread. `call` is guarded
  // by the queue's mutex; the worker sleeps on `wake` (a futex word, set to 1
  // by Put or Shutdown) without holding that mutex, so a hand-off costs one
  // FUTEX_WAKE and one FUTEX_WAIT.
  struct Consumer {
    std::atomic<uint32_t> wake{0};
    InboundCall* call = nullptr;
  };

  ServiceQueue(int capacity, int max_consumers);

  // False when the queue is full or shut down (the caller answers the call).
  // On true, *evicted is a call pushed out to make room (or nullptr); the
  // caller answers it.
  bool Put(InboundCall* call, InboundCall** evicted);
  // Blocks until a call is available; nullptr after Shutdown.
  InboundCall* BlockingGet(Consumer* me);
  // Wakes every worker; returns the calls still queued for the caller to
  // answer.
  std::vector<InboundCall*> Shutdown();

  int capacity() const { return capacity_; }
  // Calls waiting in the heap (not yet handed to a worker).
  int queued();
  // The same without the lock (any thread; a hint, possibly stale).
  int approx_queued() const { return approx_queued_.load(std::memory_order_relaxed); }
  // The queue whose call the current thread is handling (set by the worker
  // loop; nullptr on other threads): lets a responder see its backlog.
  static ServiceQueue*& current();

 private:
  struct Entry {
    std::chrono::steady_clock::time_point deadline;
    uint64_t seq;
    InboundCall* call;
  };
  static bool Later(const Entry& a, const Entry& b);

  const int capacity_;
  std::mutex mu_;
  bool shut_down_ = false;
  uint64_t next_seq_ = 0;
  std::vector<Entry> heap_;          // reserved to capacity_
  std::vector<Consumer*> idle_;      // reserved to max_consumers, LIFO
  std::atomic<int> approx_queued_{0};  // heap_.size(), stored under mu_
};

}  // namespace crossfree::rpc
