// SPDX-License-Identifier: Apache-2.0
// The end-to-end targets' cross-thread hand-off: producers Push objects they
// allocated, a consumer Pops and deletes them. Any thread may call either;
// Pop blocks until an object is there. The queue does not own the objects
// between Push and Pop (the targets count every one).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

template <class T>
class HandOffQueue {
 public:
  void Push(T* item) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(item);
    cv_.notify_one();
  }

  T* Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !items_.empty(); });
    T* item = items_.front();
    items_.pop_front();
    return item;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T*> items_;
};
