// SPDX-License-Identifier: Apache-2.0
// Tracer test target: 2000 objects of 12347 bytes made (new) on thread
// "producer" and deleted on thread "consumer". main names the producer
// with pthread_setname_np; the consumer names itself with prctl.
#include <pthread.h>
#include <sys/prctl.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "target_util.h"

namespace {

struct Item {
  char data[12347];
};

constexpr int kItems = 2000;
std::mutex mu;
std::condition_variable cv;
Item* slots[kItems];
int produced = 0;
bool named = false;

}  // namespace

extern "C" {
TT_FN Item* tt_produce() { return new Item; }
TT_FN void tt_consume(Item* item) { delete item; }
}

int main() {
  TT_REPORT(tt_produce);
  TT_REPORT(tt_consume);
  std::thread producer([] {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [] { return named; });
    }
    for (int i = 0; i < kItems; ++i) {
      Item* item = tt_produce();
      item->data[0] = 1;
      std::lock_guard<std::mutex> lock(mu);
      slots[produced++] = item;
      cv.notify_all();
    }
  });
  pthread_setname_np(producer.native_handle(), "producer");
  {
    std::lock_guard<std::mutex> lock(mu);
    named = true;
    cv.notify_all();
  }
  std::thread consumer([] {
    prctl(PR_SET_NAME, "consumer", 0, 0, 0);
    for (int i = 0; i < kItems; ++i) {
      Item* item;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [i] { return produced > i; });
        item = slots[i];
      }
      tt_consume(item);
    }
  });
  producer.join();
  consumer.join();
  printf("result %d\n", kItems);
  return 0;
}
