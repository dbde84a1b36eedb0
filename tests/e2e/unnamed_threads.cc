// SPDX-License-Identifier: Apache-2.0
// End-to-end target: threads that never name themselves, started as
// std::thread(producer, ...) and std::thread(consumer, ...). 3000 objects are
// made (new) on the producer and deleted on the consumer; the report must
// call the roles "producer" and "consumer", after their entry functions.
#include <cstdio>
#include <thread>

#include "tests/e2e/hand_off_queue.h"

namespace {

struct Item {
  char payload[96];
};

HandOffQueue<Item> queue;
constexpr int kItems = 3000;

__attribute__((noinline)) void producer(int n) {
  for (int i = 0; i < n; ++i) queue.Push(new Item);
}

__attribute__((noinline)) void consumer(int n) {
  for (int i = 0; i < n; ++i) delete queue.Pop();
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
