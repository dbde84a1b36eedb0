// SPDX-License-Identifier: Apache-2.0
// Target (issue 31, item 5): a program that closes every descriptor above
// 2 mid-run, as daemons and process supervisors do.
//   tt_close_fds loop|close_range|raw_close_range|closefrom|reuse [MINE]
//   tt_close_fds direct MINE TRACE
// Makes 1000 blocks in tt_before (kept live), closes fds 3..1024 (a loop of
// close, glibc's close_range or closefrom, or the raw close_range system
// call that no hook sees); "reuse" then opens MINE and dup2's it onto
// every descriptor 3..1023, so that whatever number the tracer had is now
// the program's own file. Then 1000 blocks in tt_after, all freed.
// "direct" finds the descriptor open on TRACE in /proc/self/fd and prints
// what close(), dup2(MINE, it) and close_range(3, ~0) did to it, one line
// each ("close 0 Success, trace still open", "dup2 ok, trace still open", "close_range
// trace still open"; "trace not open" when there is none).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

// The lowest descriptor open on path, or -1.
int FindOpen(const char* path) {
  char real[PATH_MAX];
  if (realpath(path, real) == nullptr) return -1;
  for (int fd = 0; fd < 4096; ++fd) {
    char link[64];
    char target[PATH_MAX];
    std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strcmp(target, real) == 0) return fd;
  }
  return -1;
}

// The "direct" mode: what the program sees of the tracer's descriptor.
int Direct(const char* mine_path, const char* trace_path) {
  int fd = FindOpen(trace_path);
  if (fd < 0) {
    std::printf("trace not open\n");
    return 0;
  }
  errno = 0;
  int rc = close(fd);
  const int close_errno = errno;
  std::printf("close %d %s, trace %s\n", rc,
              close_errno == EBADF ? "EBADF" : std::strerror(close_errno),
              FindOpen(trace_path) >= 0 ? "still open" : "closed");
  int mine = open(mine_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (mine < 0) return 3;
  rc = dup2(mine, fd);
  std::printf("dup2 %s, trace %s\n", rc == fd ? "ok" : "failed",
              FindOpen(trace_path) >= 0 ? "still open" : "closed");
  rc = close_range(3, ~0u, 0);
  std::printf("close_range %d, trace %s\n", rc,
              FindOpen(trace_path) >= 0 ? "still open" : "closed");
  std::fflush(stdout);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  TT_REPORT(tt_before);
  TT_REPORT(tt_after);
  fflush(stdout);
  tt_before();
  if (std::strcmp(argv[1], "direct") == 0) {
    if (argc < 4) return 2;
    int rc = Direct(argv[2], argv[3]);
    if (rc != 0) return rc;
  } else if (std::strcmp(argv[1], "raw_close_range") == 0) {
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
      for (int fd = 3; fd <= 1024; ++fd) close(fd);  // kernel before 5.9
    }
  } else if (std::strcmp(argv[1], "close_range") == 0) {
    if (close_range(3, ~0u, 0) != 0) {
      for (int fd = 3; fd <= 1024; ++fd) close(fd);  // kernel before 5.9
    }
  } else if (std::strcmp(argv[1], "closefrom") == 0) {
    closefrom(3);
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
