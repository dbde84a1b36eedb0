// SPDX-License-Identifier: Apache-2.0
// Threads with the smallest stack pthread allows (PTHREAD_STACK_MIN) that
// allocate: the tracer's static TLS comes out of each thread's stack, so a
// tracer with kilobytes of TLS makes pthread_create fail (EINVAL) or the
// thread overflow. Prints "ok N" when every thread ran.
#include <limits.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void* Work(void*) {
  for (int i = 0; i < 200; ++i) {
    void* p = std::malloc(32 + i);
    std::memset(p, 1, 32);
    std::free(p);
  }
  return reinterpret_cast<void*>(1);
}

}  // namespace

int main() {
  int ran = 0;
  for (int t = 0; t < 8; ++t) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
    pthread_t th;
    int rc = pthread_create(&th, &attr, Work, nullptr);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      std::printf("pthread_create: %s\n", std::strerror(rc));
      return 1;
    }
    void* result = nullptr;
    pthread_join(th, &result);
    ran += result != nullptr;
  }
  std::printf("ok %d\n", ran);
  return ran == 8 ? 0 : 1;
}
