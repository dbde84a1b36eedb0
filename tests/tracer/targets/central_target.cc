// SPDX-License-Identifier: Apache-2.0
// Central test target: a "producer" thread allocates kObjects blocks of 64
// bytes, then (after it has exited) a "consumer" thread frees them all, so
// under tcmalloc the producer fetches from the central free list and the
// consumer releases to it (it allocates one block of its own first). Both
// threads exit before the process does.
#include <pthread.h>

#include <cstdlib>
#include <cstring>

namespace {

constexpr int kObjects = 20000;
void* g_blocks[kObjects];

void* Produce(void*) {
  pthread_setname_np(pthread_self(), "producer");
  for (void*& b : g_blocks) {
    b = malloc(64);
    std::memset(b, 1, 64);
  }
  return nullptr;
}

void* Consume(void*) {
  pthread_setname_np(pthread_self(), "consumer");
  // One block of its own gives the consumer a tcmalloc thread cache, whose
  // overflows release to the central list in batches. A thread that never
  // allocated has none: tcmalloc puts each block it frees straight into the
  // central list, one InsertRange per block.
  void* own = malloc(64);
  for (void* b : g_blocks) free(b);
  free(own);
  return nullptr;
}

}  // namespace

int main() {
  pthread_t t;
  if (pthread_create(&t, nullptr, Produce, nullptr) != 0) return 1;
  pthread_join(t, nullptr);
  if (pthread_create(&t, nullptr, Consume, nullptr) != 0) return 1;
  pthread_join(t, nullptr);
  return 0;
}
