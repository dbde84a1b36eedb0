// SPDX-License-Identifier: Apache-2.0
// Target (issue 31, item 5): a program that closes every descriptor above
// 2 mid-run, as daemons and process supervisors do.
//   tt_close_fds loop|close_range|reuse [MINE]
// Makes 1000 blocks in tt_before (kept live), closes fds 3..1024 (a loop of
// close, or close_range(2)); "reuse" then opens MINE and dup2's it onto
// every descriptor 3..1023, so that whatever number the tracer had is now
// the program's own file. Then 1000 blocks in tt_after, all freed.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "target_util.h"

extern "C" {

void* blocks[2000];

TT_FN void tt_before() {
  for (int i = 0; i < 1000; ++i) blocks[i] = malloc(40);
}

TT_FN void tt_after() {
  for (int i = 1000; i < 2000; ++i) blocks[i] = malloc(40);
}

}  // extern "C"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  TT_REPORT(tt_before);
  TT_REPORT(tt_after);
  fflush(stdout);
  tt_before();
  if (std::strcmp(argv[1], "close_range") == 0) {
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
      for (int fd = 3; fd <= 1024; ++fd) close(fd);  // kernel before 5.9
    }
  } else {
    for (int fd = 3; fd <= 1024; ++fd) close(fd);
  }
  if (std::strcmp(argv[1], "reuse") == 0 && argc > 2) {
    int mine = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (mine < 0) return 3;
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != mine) dup2(mine, fd);
    }
  }
  tt_after();
  for (int i = 0; i < 2000; ++i) free(blocks[i]);
  return 0;
}
