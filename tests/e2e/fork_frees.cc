// SPDX-License-Identifier: Apache-2.0
// End-to-end target (issue 31, item 9): the parent makes 1000 blocks in
// ParentMake and forks 7 children, one after the other; child k frees the
// first 1000 - 100 k of them in ChildRelease, as nginx's workers free what
// the master allocated: 7 fork pairs of 1000, 900, ... 400 frees.
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

__attribute__((noinline)) void ChildRelease(int count) {
  for (int i = 0; i < count; ++i) std::free(blocks[i]);
  asm volatile("" ::: "memory");
}
}  // namespace

int main() {
  ParentMake();
  for (int k = 0; k < 7; ++k) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      ChildRelease(1000 - 100 * k);
      std::exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  std::printf("7 children freed 4900\n");
  return 0;
}
