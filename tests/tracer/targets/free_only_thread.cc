// SPDX-License-Identifier: Apache-2.0
// Threads that only free: main allocates 1000 blocks (tt_alloc_block), a
// thread frees them all (tt_free_block) and prints how many malloc-family
// calls reached the allocator behind the tracer from that thread
// ("thread allocations: N", counted by count_calls_preload.c, preloaded
// after the tracer); then the same again with a second thread. The program
// makes no such call on those threads, so N is what the tracer sent to the
// program's allocator.
#include <pthread.h>
#include <stdlib.h>

#include "target_util.h"

namespace {
constexpr int kBlocks = 1000;
void* blocks[kBlocks];
unsigned long (*thread_allocations)() = nullptr;
}  // namespace

extern "C" TT_FN void tt_free_block(void* p) { free(p); }
extern "C" TT_FN void* tt_alloc_block() { return malloc(48); }

extern "C" TT_FN void* tt_free_all(void*) {
  const unsigned long before = thread_allocations();
  for (void* p : blocks) tt_free_block(p);
  printf("thread allocations: %lu\n", thread_allocations() - before);
  return nullptr;
}

int main() {
  thread_allocations = reinterpret_cast<unsigned long (*)()>(
      dlsym(RTLD_DEFAULT, "tt_count_calls_thread_allocations"));
  if (thread_allocations == nullptr) {
    fprintf(stderr, "count_calls_preload.c is not preloaded\n");
    return 2;
  }
  TT_REPORT(tt_alloc_block);
  TT_REPORT(tt_free_block);
  for (int round = 0; round < 2; ++round) {
    for (void*& p : blocks) p = tt_alloc_block();
    pthread_t t;
    if (pthread_create(&t, nullptr, tt_free_all, nullptr) != 0) return 3;
    pthread_join(t, nullptr);
  }
  return 0;
}
