// SPDX-License-Identifier: Apache-2.0
// End-to-end target: threads that never name themselves, started as
// std::thread(producer, ...) and std::thread(consumer, ...). 3000 objects are
// made (new) on the producer and deleted on the consumer; the report must
// call the roles "producer" and "consumer", after their entry functions.
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

namespace {

struct Item {
  char payload[96];
};

std::mutex mu;
std::condition_variable cv;
std::deque<Item*> queue;
constexpr int kItems = 3000;

__attribute__((noinline)) void producer(int n) {
  for (int i = 0; i < n; ++i) {
    Item* item = new Item;
    std::lock_guard<std::mutex> lock(mu);
    queue.push_back(item);
    cv.notify_one();
  }
}

__attribute__((noinline)) void consumer(int n) {
  for (int i = 0; i < n; ++i) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [] { return !queue.empty(); });
    Item* item = queue.front();
    queue.pop_front();
    lock.unlock();
    delete item;
  }
}

}  // namespace

int main() {
  std::thread c(consumer, kItems);
  std::thread p(producer, kItems);
  p.join();
  c.join();
  std::printf("expected: cross_thread>=%d\n", kItems);
  return 0;
}
