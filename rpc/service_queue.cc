// SPDX-License-Identifier: Apache-2.0
// ServiceQueue implementation.
#include "rpc/service_queue.h"

#include <algorithm>

#include "rpc/futex.h"
#include "rpc/inbound_call.h"

namespace crossfree::rpc {

ServiceQueue::ServiceQueue(int capacity, int max_consumers) : capacity_(capacity) {
  heap_.reserve(capacity);
  idle_.reserve(max_consumers);
}

ServiceQueue*& ServiceQueue::current() {
  static thread_local ServiceQueue* q = nullptr;
  return q;
}

bool ServiceQueue::Later(const Entry& a, const Entry& b) {
  if (a.deadline != b.deadline) return a.deadline > b.deadline;
  return a.seq > b.seq;
}

bool ServiceQueue::Put(InboundCall* call, InboundCall** evicted) {
  *evicted = nullptr;
  Consumer* c = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (shut_down_) return false;
    if (!idle_.empty()) {
      c = idle_.back();
      idle_.pop_back();
      c->call = call;
    } else {
      auto deadline = call->has_deadline() ? call->deadline()
                                           : std::chrono::steady_clock::time_point::max();
      if (static_cast<int>(heap_.size()) >= capacity_) {
        if (heap_.empty()) return false;
        // The latest deadline is a leaf of the min-heap: scan (capacity is
        // small) and let an earlier-deadline call take its place.
        auto latest = std::max_element(heap_.begin(), heap_.end(),
                                       [](const Entry& a, const Entry& b) { return Later(b, a); });
        if (!(deadline < latest->deadline)) return false;
        *evicted = latest->call;
        heap_.erase(latest);
        std::make_heap(heap_.begin(), heap_.end(), &ServiceQueue::Later);
      }
      heap_.push_back(Entry{deadline, next_seq_++, call});
      std::push_heap(heap_.begin(), heap_.end(), &ServiceQueue::Later);
      approx_queued_.store(static_cast<int>(heap_.size()), std::memory_order_relaxed);
      return true;
    }
  }
  c->wake.store(1, std::memory_order_release);
  FutexWake(&c->wake, 1);
  return true;
}

InboundCall* ServiceQueue::BlockingGet(Consumer* me) {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (me->call != nullptr) {
      InboundCall* c = me->call;
      me->call = nullptr;
      return c;
    }
    if (shut_down_) return nullptr;
    if (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), &ServiceQueue::Later);
      InboundCall* c = heap_.back().call;
      heap_.pop_back();
      approx_queued_.store(static_cast<int>(heap_.size()), std::memory_order_relaxed);
      return c;
    }
    idle_.push_back(me);
    me->wake.store(0, std::memory_order_relaxed);
    l.unlock();
    while (me->wake.load(std::memory_order_acquire) == 0) FutexWait(&me->wake, 0);
    l.lock();
    if (me->call == nullptr) {
      idle_.erase(std::remove(idle_.begin(), idle_.end(), me), idle_.end());
    }
  }
}

int ServiceQueue::queued() {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(heap_.size());
}

std::vector<InboundCall*> ServiceQueue::Shutdown() {
  std::vector<InboundCall*> left;
  std::vector<Consumer*> idle;
  {
    std::lock_guard<std::mutex> l(mu_);
    shut_down_ = true;
    for (Entry& e : heap_) left.push_back(e.call);
    heap_.clear();
    approx_queued_.store(0, std::memory_order_relaxed);
    idle = idle_;
  }
  for (Consumer* c : idle) {
    c->wake.store(1, std::memory_order_release);
    FutexWake(&c->wake, 1);
  }
  return left;
}

}  // namespace crossfree::rpc
