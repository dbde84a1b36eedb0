// SPDX-License-Identifier: Apache-2.0
// End-to-end target (issue 31, item 9): the parent makes 1000 blocks in
// ParentMake, forks, and the child frees them in ChildRelease, as nginx's
// workers free what the master allocated.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {
void* blocks[1000];

__attribute__((noinline)) void ParentMake() {
  for (auto& b : blocks) b = std::malloc(48);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void ChildRelease() {
  for (auto& b : blocks) std::free(b);
  asm volatile("" ::: "memory");
}
}  // namespace

int main() {
  ParentMake();
  pid_t pid = fork();
  if (pid == 0) {
    ChildRelease();
    std::exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::printf("child freed 1000\n");
  return 0;
}
