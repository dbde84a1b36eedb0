// SPDX-License-Identifier: Apache-2.0
// Tracer: where a thread's finished chunk goes (recorder_internal.h):
// under `crossfree record`, into the shared-memory hand-off (channel.h);
// otherwise appended to the trace file, through a descriptor proven to
// still be the trace file. And the one-time report when writing fails.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "tracer/channel.h"
#include "tracer/owned_fds.h"
#include "tracer/recorder_internal.h"
#include "tracer/sys.h"

namespace crossfree::tracer {
namespace internal {

void ReportWriteFailure(int error) {
  if (g.write_failed.exchange(true)) return;
  __atomic_store_n(&g_recording, 0, __ATOMIC_RELAXED);
  g.phase.store(kStopped, std::memory_order_release);
  MessageLine()
      .Add("cannot write trace file '")
      .Add(g.output_path)
      .Add("': ")
      .Add(ErrnoName(error))
      .Add("; the rest of the run is not traced")
      .Print();
}

namespace {

bool IsTraceFile(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == g.file_dev && st.st_ino == g.file_ino;
}

// Opens the trace file again by its path; the new descriptor only if it
// is the same file, moved out of the way of low descriptors as at start.
int ReopenTraceFile() {
  int fd = open(g.output_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  if (!IsTraceFile(fd)) {
    close(fd);
    return -1;
  }
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 500);
  if (high >= 0) {
    close(fd);
    fd = high;
  }
  return fd;
}

}  // namespace

int TraceFd() {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const int fd = __atomic_load_n(&g.fd, __ATOMIC_ACQUIRE);
    if (fd < 0) return -1;
    if (IsTraceFile(fd)) return fd;
    // Closed by the program (and maybe reused for its own file: that
    // descriptor is the program's now, it is neither written nor closed).
    if (g.reopening.exchange(true, std::memory_order_acquire)) {
      while (g.reopening.load(std::memory_order_acquire)) sched_yield();
      continue;  // the other thread reopened it (or failed): look again
    }
    if (__atomic_load_n(&g.fd, __ATOMIC_ACQUIRE) == fd) {
      DisownFd(fd);
      const int reopened = ReopenTraceFile();
      __atomic_store_n(&g.fd, reopened, __ATOMIC_RELEASE);
      if (reopened >= 0) {
        g.reopens.fetch_add(1, std::memory_order_relaxed);
        OwnFd(&g.fd, &g.trace_writers);
      }
    }
    g.reopening.store(false, std::memory_order_release);
  }
  return -1;
}

// Under record: hands s's finished chunk (n bytes) over: seals its slot,
// or copies it from the private buffer into a slot. False when it could
// not (counted as dropped, or record is gone).
bool HandOverChunk(ThreadState* s, size_t n, uint32_t events) {
  const int slot = s->slot.load(std::memory_order_relaxed);
  if (slot >= 0) {
    s->slot.store(-1, std::memory_order_relaxed);
    s->commit = &s->commit_sink;
    channel::Seal(slot, n);
    return true;
  }
  if (channel::HandOff(s->buffer, n)) return true;
  if (channel::RecordGone()) {
    if (!g.write_failed.exchange(true)) {
      __atomic_store_n(&g_recording, 0, __ATOMIC_RELAXED);
      g.phase.store(kStopped, std::memory_order_release);
      MessageLine()
          .Add("crossfree record is gone (it drains the trace); the rest of the run is not traced")
          .Print();
    }
    return false;
  }
  channel::CountDropped(events);
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true)) {
    MessageLine()
        .Add("crossfree record fell behind: no free buffer within CROSSFREE_CHANNEL_WAIT_MS; "
             "chunks are dropped and counted (record reports them)")
        .Print();
  }
  return false;
}

// An empty chunk's slot goes back unused.
void ReleaseSlot(ThreadState* s) {
  const int slot = s->slot.load(std::memory_order_relaxed);
  if (slot < 0) return;
  s->slot.store(-1, std::memory_order_relaxed);
  s->commit = &s->commit_sink;
  channel::Release(slot);
}

}  // namespace internal
}  // namespace crossfree::tracer
