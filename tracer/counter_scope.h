// SPDX-License-Identifier: Apache-2.0
// Tracer: raises one of the calling thread's scope counters (the recursion
// guard, the in-unwinder mark) for a scope. Any thread; hook-path safe (two
// relaxed stores, no call). The counter must be the calling thread's own
// (a __thread variable) and outlive the scope.
#pragma once

namespace crossfree::tracer {

// The signal fences keep the compiler from sinking or dropping the stores
// around the calls in the scope: a signal handler on this thread reads the
// counter.
class CounterScope {
 public:
  explicit CounterScope(int& counter) : counter_(counter) {
    __atomic_store_n(&counter_, counter_ + 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  }
  ~CounterScope() {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&counter_, counter_ - 1, __ATOMIC_RELAXED);
  }
  CounterScope(const CounterScope&) = delete;
  CounterScope& operator=(const CounterScope&) = delete;

 private:
  int& counter_;
};

}  // namespace crossfree::tracer
