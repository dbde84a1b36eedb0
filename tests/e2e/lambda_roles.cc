// SPDX-License-Identifier: Apache-2.0
// End-to-end target for roles found on real programs (issue 31, items 1-3):
// - two producers started as std::thread([]{...}) from two different
//   functions, each lambda making 1500 blocks through the same helper;
// - a consumer started with pthread_create whose entry function lives in
//   worker::(anonymous namespace), as node's PlatformWorkerThread;
// - the main thread makes 1000 blocks too (its role must be "main" even
//   when the program is started through a symlink with another name).
// The consumer frees everything.
#include <pthread.h>

#include <cstdio>
#include <thread>

#include "tests/e2e/hand_off_queue.h"

namespace {

struct Item {
  char payload[80];
};

HandOffQueue<Item> queue;
int expected_total = 0;

__attribute__((noinline)) Item* MakeItem() { return new Item; }

__attribute__((noinline)) void Push(Item* item) { queue.Push(item); }

}  // namespace

namespace worker {
namespace {

void* PlatformWorkerThread(void* arg) {
  int n = *static_cast<int*>(arg);
  for (int i = 0; i < n; ++i) delete queue.Pop();
  return nullptr;
}

}  // namespace
}  // namespace worker

__attribute__((noinline)) std::thread ProducerLoop() {
  return std::thread([] {
    for (int i = 0; i < 1500; ++i) Push(MakeItem());
  });
}

__attribute__((noinline)) std::thread RefillLoop() {
  return std::thread([] {
    for (int i = 0; i < 1500; ++i) Push(MakeItem());
  });
}

int main() {
  expected_total = 1500 + 1500 + 1000;
  pthread_t consumer;
  pthread_create(&consumer, nullptr, worker::PlatformWorkerThread, &expected_total);
  std::thread a = ProducerLoop();
  a.join();
  std::thread b = RefillLoop();
  b.join();
  for (int i = 0; i < 1000; ++i) Push(MakeItem());
  pthread_join(consumer, nullptr);
  std::printf("expected: lambda producers 1500+1500, main 1000\n");
  return 0;
}
