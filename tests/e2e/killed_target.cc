// SPDX-License-Identifier: Apache-2.0
// End-to-end target (issue 31, item 6): makes 2000 blocks, frees 1000 of
// them on another thread, prints "ready" and waits to be killed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

int main() {
  static void* blocks[2000];
  for (int i = 0; i < 2000; ++i) blocks[i] = std::malloc(64);
  std::thread([] {
    for (int i = 0; i < 1000; ++i) std::free(blocks[i]);
  }).join();
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}
