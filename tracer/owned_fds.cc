// SPDX-License-Identifier: Apache-2.0
// Tracer: the table of the tracer's own descriptors (see owned_fds.h).
#include "tracer/owned_fds.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

namespace crossfree::tracer {
namespace {

// fd: -1 free, kFilling while OwnFd fills the other fields, else the
// descriptor. The other fields are published by the release store of fd.
constexpr int kFilling = -2;

struct Entry {
  std::atomic<int> fd{-1};
  int* holder = nullptr;
  std::atomic<uint32_t>* users = nullptr;
  dev_t dev = 0;
  ino_t ino = 0;
};

Entry g_entries[kMaxOwnedFds];

// The entry of fd if it still names the file it was registered with; a
// stale entry (the number is the program's file now, or closed) is freed.
Entry* Find(int fd) {
  if (fd < 0) return nullptr;
  for (Entry& e : g_entries) {
    if (e.fd.load(std::memory_order_acquire) != fd) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_dev == e.dev && st.st_ino == e.ino) return &e;
    int expected = fd;
    e.fd.compare_exchange_strong(expected, -1, std::memory_order_acq_rel);
    return nullptr;
  }
  return nullptr;
}

}  // namespace

bool OwnFd(int* holder, std::atomic<uint32_t>* users) {
  const int fd = __atomic_load_n(holder, __ATOMIC_ACQUIRE);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return false;
  DisownFd(fd);  // a number registered before (and since closed) is new now
  for (Entry& e : g_entries) {
    int expected = -1;
    if (!e.fd.compare_exchange_strong(expected, kFilling, std::memory_order_acquire)) continue;
    e.holder = holder;
    e.users = users;
    e.dev = st.st_dev;
    e.ino = st.st_ino;
    e.fd.store(fd, std::memory_order_release);
    return true;
  }
  return false;
}

void DisownFd(int fd) {
  if (fd < 0) return;
  for (Entry& e : g_entries) {
    int expected = fd;
    e.fd.compare_exchange_strong(expected, -1, std::memory_order_acq_rel);
  }
}

bool IsOwnedFd(int fd) { return Find(fd) != nullptr; }

bool MoveOwnedFd(int fd) {
  Entry* e = Find(fd);
  if (e == nullptr) return false;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 500);
  if (moved < 0) {
    DisownFd(fd);
    return false;
  }
  // New writers load the new number from here on; then wait for the ones
  // that may have loaded the old one (owned_fds.h, WriteBegin).
  __atomic_store_n(e->holder, moved, __ATOMIC_SEQ_CST);
  e->fd.store(moved, std::memory_order_release);
  if (e->users != nullptr) {
    while (e->users->load(std::memory_order_seq_cst) != 0) sched_yield();
  }
  return true;
}

int OwnedFdsIn(unsigned first, unsigned last, int* out) {
  int n = 0;
  for (Entry& e : g_entries) {
    const int fd = e.fd.load(std::memory_order_acquire);
    if (fd < 0 || static_cast<unsigned>(fd) < first || static_cast<unsigned>(fd) > last) continue;
    if (Find(fd) != nullptr) out[n++] = fd;
  }
  // Insertion sort: at most kMaxOwnedFds entries.
  for (int i = 1; i < n; ++i) {
    for (int j = i; j > 0 && out[j - 1] > out[j]; --j) {
      const int t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  }
  return n;
}

namespace {
// libunwind's static pair (NoteUnwinderPipe), or null.
int* g_unwinder_pipe = nullptr;
}  // namespace

void NoteUnwinderPipe(int* fds) { __atomic_store_n(&g_unwinder_pipe, fds, __ATOMIC_RELEASE); }

int ReleaseUnwinderPipe() {
  int* fds = __atomic_exchange_n(&g_unwinder_pipe, nullptr, __ATOMIC_ACQ_REL);
  if (fds == nullptr) return 0;
  int closed = 0;
  for (int i = 0; i < 2; ++i) {
    const int fd = __atomic_load_n(&fds[i], __ATOMIC_ACQUIRE);
    // Owned and still the pipe: ours to close. Otherwise the number may be
    // the program's by now, and only libunwind's copy of it is dropped.
    if (fd >= 0 && IsOwnedFd(fd)) {
      DisownFd(fd);
      if (close(fd) == 0) ++closed;
    }
    __atomic_store_n(&fds[i], -1, __ATOMIC_RELEASE);
  }
  return closed;
}

}  // namespace crossfree::tracer
