// SPDX-License-Identifier: Apache-2.0
// End-to-end target (issue 31, item 6): makes 2000 blocks, frees 1000 of
// them on another thread, prints "ready" and waits to be killed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

int main() {
  static void* blocks[2000];
  // A hooked wait writes what main has buffered so far: main's last write
  // is then a few milliseconds before its pause below, within the age
  // bound, and pause must still write the 2000 allocations (a wait for a
  // signal alone writes whatever is buffered, however recent the last
  // write; before, they stayed buffered for good).
  usleep(1);
  for (int i = 0; i < 2000; ++i) blocks[i] = std::malloc(64);
  std::thread([] {
    for (int i = 0; i < 1000; ++i) std::free(blocks[i]);
  }).join();
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}
