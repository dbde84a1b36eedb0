// SPDX-License-Identifier: Apache-2.0
// Tracer test target for fork children under `crossfree record`'s hand-off:
// each child records a known number of events on three threads, two of
// which then go idle where the tracer never writes on its own.
//
//   fork_handoff_target N [kill]
//                           the parent makes 100 malloc/free pairs
//                           (tt_fh_parent: 200 events), then forks N
//                           children. Child i (0-based) makes 100 * (i + 1)
//                           pairs on its main thread (tt_fh_child: 200 *
//                           (i + 1) events) and starts idle_workers.h's
//                           "hf-futex" (1,000 pairs, tt_handoff_futex: 2,000
//                           events, then a condition variable nobody
//                           signals) and "hf-read" (1,500 pairs,
//                           tt_handoff_read: 3,000 events, then a read of a
//                           pipe nobody writes). When both are idle
//                           it writes "child <i> <pid>\n", tells the parent
//                           (a byte on a pipe) and waits for the parent's
//                           release pipe to end, then returns from main (a
//                           clean exit, its threads still blocked). Once
//                           every child is idle the parent, with "kill",
//                           SIGKILLs the last one; then it closes the
//                           release pipe, reaps every child and writes
//                           "reaped <pid> <status>\n" for each.
//   fork_handoff_target refuse N
//                           more children than `record` adopts at once
//                           (shm::kMaxChildRegions), all alive at
//                           once: the parent makes tt_fh_parent's 200 events
//                           and forks N (at most kMaxChildren). Child i
//                           (0-based) makes 10 * (i + 1) pairs on its only
//                           thread (tt_fh_child: 20 * (i + 1) events), then
//                           writes "held <i> <pid> <what>\n", what being
//                           "region" when it holds a hand-off region (record
//                           adopted it) or "file <path>" for each regular
//                           file it holds open beyond stdio (its own trace,
//                           when refused), tells the parent and waits for the
//                           release pipe to end, as above. The parent then
//                           reaps them ("reaped <pid> <status>\n").
//   fork_handoff_target forge
//                           first offers `record` four forged regions on the
//                           hand-off socket (CROSSFREE_CHANNEL_SOCKET), as a
//                           wild program could: a 3-byte message without
//                           descriptors; an unsealed memfd; a sealed one
//                           whose control block is zeros; a well-formed one
//                           with the parent's pidfd instead of its own. Then
//                           it runs as "fork_handoff_target 1" does.
//   fork_handoff_target raw
//                           a child made by the raw fork system call
//                           (syscall(SYS_clone, SIGCHLD): no atfork
//                           handler runs in it, as in Chromium's zygote):
//                           the parent makes tt_fh_parent's 200 events,
//                           raw-forks, then makes 1,000 more pairs
//                           (tt_fh_parent: 2,200 events in all) while the
//                           child makes 2,000 pairs (tt_fh_child: 4,000
//                           events) on its only thread, writes "child 0
//                           <pid>\n" and exits (exit(3): the tracer's exit
//                           flush runs). The parent reaps it ("reaped <pid>
//                           <status>\n").
// Output goes through write(2), after the fn lines.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/shm_channel.h"
#include "idle_workers.h"
#include "target_util.h"

extern "C" {

TT_FN void tt_fh_parent(int pairs) { TtMallocFreePairs(pairs, 40, 0); }

TT_FN void tt_fh_child(int pairs) { TtMallocFreePairs(pairs, 56, 63); }

}  // extern "C"

namespace {

using namespace idle_workers;

// The most children one run forks.
constexpr int kMaxChildren = 128;

// Child i of "refuse": 10 * (i + 1) pairs, then says what it holds (see
// the top), with no allocation of its own after the pairs: only stack
// buffers, readlink and fstat.
int RefuseChild(int index, int release, int ready) {
  tt_fh_child(10 * (index + 1));
  char line[1024];
  int n = snprintf(line, sizeof(line), "held %d %d", index, static_cast<int>(getpid()));
  for (int fd = 3; fd < 1024; ++fd) {
    char proc[64], target[512];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    const ssize_t len = readlink(proc, target, sizeof(target) - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    struct stat st;
    const char* name = crossfree::shm::kMemfdName;
    if (strncmp(target, "/memfd:", 7) == 0 && strncmp(target + 7, name, strlen(name)) == 0) {
      n += snprintf(line + n, sizeof(line) - n, " region");
    } else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      n += snprintf(line + n, sizeof(line) - n, " file %s", target);
    }
    if (n >= static_cast<int>(sizeof(line)) - 2) return 5;
  }
  snprintf(line + n, sizeof(line) - n, "\n");
  Say(line);  // one write(2), below PIPE_BUF: lines of children do not mix
  char c = 'r';
  if (write(ready, &c, 1) != 1) return 4;
  while (read(release, &c, 1) > 0) {
  }
  return 0;
}

int Child(int index, int release, int ready) {
  tt_fh_child(100 * (index + 1));
  if (pipe(g_idle_pipe) != 0) return 3;
  pthread_barrier_init(&g_done, nullptr, 3);
  Start(kFutex);
  Start(kRead);
  pthread_barrier_wait(&g_done);
  char line[64];
  snprintf(line, sizeof(line), "child %d %d\n", index, static_cast<int>(getpid()));
  Say(line);
  char c = 'r';
  if (write(ready, &c, 1) != 1) return 4;
  while (read(release, &c, 1) > 0) {
  }
  return 0;
}

namespace shm = crossfree::shm;

bool Offer(int sock, int memfd, int pidfd) {
  shm::RegionOffer offer;
  offer.Init(static_cast<uint32_t>(getpid()), memfd, pidfd);
  const bool sent = sendmsg(sock, &offer.header, MSG_NOSIGNAL) ==
                    static_cast<ssize_t>(sizeof(offer.message));
  close(memfd);
  close(pidfd);
  return sent;
}

// A memfd of the channel's name, bytes long; sealed or not.
int Region(size_t bytes, bool sealed) {
  const int fd = memfd_create(shm::kMemfdName, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return -1;
  if (sealed) fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
  return fd;
}

int Forge() {
  const char* v = getenv(shm::kSocketEnv);
  if (v == nullptr) return 5;
  const int sock = atoi(v);
  const int self = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (send(sock, "bad", 3, MSG_NOSIGNAL) != 3) return 6;
  const size_t bytes = shm::kBuffersOffset + (size_t{1} << 20);
  if (!Offer(sock, Region(bytes, false), dup(self))) return 7;
  if (!Offer(sock, Region(bytes, true), dup(self))) return 8;
  // Well formed but for the pidfd: the parent's.
  const int good = Region(bytes, true);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, good, 0);
  if (base == MAP_FAILED) return 9;
  shm::Control* ctl = shm::ControlOf(base);
  ctl->magic = shm::kChannelMagic;
  ctl->version = shm::kChannelVersion;
  ctl->region_bytes = bytes;
  ctl->origin = shm::kOriginForkChild;
  ctl->attached_pid.store(static_cast<uint32_t>(getpid()));
  munmap(base, bytes);
  if (!Offer(sock, good, static_cast<int>(syscall(SYS_pidfd_open, getppid(), 0)))) return 10;
  close(self);
  return 0;
}

// The "raw" mode. The child runs on one thread and calls nothing that
// glibc's fork would have had to prepare (no pthread_create, no stdio).
int RawFork() {
  tt_fh_parent(100);
  const long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) return 3;
  if (pid == 0) {
    tt_fh_child(2000);
    char line[64];
    snprintf(line, sizeof(line), "child 0 %ld\n", syscall(SYS_getpid));
    Say(line);
    exit(0);
  }
  tt_fh_parent(1000);
  int status = 0;
  if (waitpid(static_cast<pid_t>(pid), &status, 0) != pid) return 4;
  char line[64];
  snprintf(line, sizeof(line), "reaped %ld %d\n", pid, status);
  Say(line);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  TT_REPORT(tt_fh_parent);
  TT_REPORT(tt_fh_child);
  TT_REPORT(tt_handoff_futex);
  TT_REPORT(tt_handoff_read);
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "raw") == 0) return RawFork();
  if (argc > 1 && strcmp(argv[1], "forge") == 0) {
    if (int rc = Forge(); rc != 0) return rc;
    argc = 1;
  }
  const bool refuse = argc > 2 && strcmp(argv[1], "refuse") == 0;
  if (refuse) {
    --argc;
    ++argv;
  }
  int n = argc > 1 ? atoi(argv[1]) : 1;
  if (n > kMaxChildren) n = kMaxChildren;
  tt_fh_parent(100);
  const bool kill_last = argc > 2 && strcmp(argv[2], "kill") == 0;
  int release[2], ready[2];
  if (pipe(release) != 0 || pipe(ready) != 0) return 1;
  pid_t pids[kMaxChildren];
  for (int i = 0; i < n; ++i) {
    pids[i] = fork();
    if (pids[i] < 0) return 3;
    if (pids[i] == 0) {
      close(release[1]);
      close(ready[0]);
      return refuse ? RefuseChild(i, release[0], ready[1]) : Child(i, release[0], ready[1]);
    }
  }
  close(release[0]);
  close(ready[1]);
  char c;
  // Every child is alive until all have said what they hold: record's
  // live regions only grow while the children offer theirs.
  for (int i = 0; i < n; ++i) {
    if (read(ready[0], &c, 1) != 1) return 2;
  }
  if (kill_last && n > 0) kill(pids[n - 1], SIGKILL);
  close(release[1]);
  for (int i = 0; i < n; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    char line[64];
    snprintf(line, sizeof(line), "reaped %d %d\n", static_cast<int>(pids[i]), status);
    Say(line);
  }
  return 0;
}
