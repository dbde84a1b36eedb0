// SPDX-License-Identifier: Apache-2.0
// End-to-end target (issue 31, item 8): 4 threads whose pthread-key
// destructor (created after the tracer's, so run after it) frees and
// allocates, as Thrift's and gRPC's thread-locals do. `record` must count
// 5 threads, not 9.
#include <pthread.h>

#include <cstdio>
#include <cstdlib>

namespace {
pthread_key_t key;

void* Kept(void* p) {
  asm volatile("" : : "r"(p) : "memory");  // no allocation elided
  return p;
}

void Destroy(void* p) {
  std::free(p);
  void* q = Kept(std::malloc(24));  // and one more event after the tracer's destructor
  std::free(q);
}

void* Worker(void*) {
  pthread_setspecific(key, std::malloc(32));
  for (int i = 0; i < 100; ++i) std::free(Kept(std::malloc(16)));
  return nullptr;
}
}  // namespace

int main() {
  pthread_key_create(&key, Destroy);
  pthread_t t[4];
  for (auto& th : t) pthread_create(&th, nullptr, Worker, nullptr);
  for (auto& th : t) pthread_join(th, nullptr);
  std::printf("threads: 5\n");
  return 0;
}
