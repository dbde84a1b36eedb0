// SPDX-License-Identifier: Apache-2.0
// Tracer: the traced process's side of the chunk hand-off (see channel.h).
// Slots are claimed by a scan from the lowest index (compare-and-swap
// kFree -> kFilling), so a run touches only as many pages of the region as
// it has slots in use at once, and the scan costs one cache line per slot
// once per chunk (about 18,000 events on the deep workload).
#include "tracer/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

#include "protocol/shm_channel.h"
#include "tracer/clock.h"
#include "tracer/owned_fds.h"
#include "tracer/sys.h"
#include "tracer/window.h"

namespace crossfree::tracer::channel {

bool g_attached = false;
uint64_t g_wait_ns = 1'000'000'000;

namespace {


void* g_base = nullptr;
int g_fd = -1;
uint32_t g_generation = 0;
size_t g_bytes = 0;
uint32_t g_slots = 0;
uint32_t g_slot_bytes = 0;
uint32_t g_record_pid = 0;
uint32_t g_origin = 0;  // shm::Origin of the attached region
// record's end of the fork hand-off (protocol/shm_channel.h kSocketEnv), or -1.
int g_sock = -1;
// The number CROSSFREE_CHANNEL names: only a region there can be taken over
// by the next image after exec.
int g_env_fd = -1;
// A fork child's view of its parent's region, kept until its own offer is
// answered: it tells later children whether record answered this one.
void* g_parent_base = nullptr;
size_t g_parent_bytes = 0;
// After a wait for a slot timed out: the free count `record` had then.
// Until it moves, later chunks do not wait again (one stall, not one per
// chunk, while `record` cannot keep up).
std::atomic<uint32_t> g_stalled_at{0};
std::atomic<bool> g_stalled{false};
std::atomic<bool> g_record_gone{false};

shm::Control* Ctl() { return shm::ControlOf(g_base); }

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const struct timespec* timeout) {
  // Shared (not FUTEX_PRIVATE_FLAG): the other side is another process.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

// True if /proc/self/fd/<fd> is a memfd of ours ("/memfd:<name> (deleted)").
bool IsChannelMemfd(int fd) {
  char path[64] = "/proc/self/fd/";
  size_t n = StrLen(path);
  n += FormatDecimal(static_cast<uint64_t>(fd), path + n);
  path[n] = '\0';
  char target[128];
  long len = syscall(SYS_readlink, path, target, sizeof(target) - 1);
  if (len <= 0) return false;
  target[len] = '\0';
  const char* prefix = "/memfd:";
  size_t i = 0;
  for (; prefix[i] != '\0'; ++i) {
    if (target[i] != prefix[i]) return false;
  }
  for (size_t j = 0; shm::kMemfdName[j] != '\0'; ++j) {
    if (target[i + j] != shm::kMemfdName[j]) return false;
  }
  return true;
}

int TryClaim() {
  for (uint32_t i = 0; i < g_slots; ++i) {
    shm::SlotDesc* d = shm::DescOf(g_base, i);
    uint32_t expected = shm::kFree;
    if (d->state.load(std::memory_order_relaxed) == shm::kFree &&
        d->state.compare_exchange_strong(expected, shm::kFilling, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
      d->committed.store(0, std::memory_order_relaxed);
      d->generation = g_generation;
      return static_cast<int>(i);
    }
  }
  return -1;
}

// record's region: record is this image's parent (it forked and exec'd the
// command); once it is not, it died and nobody drains the region. A fork
// child's region: record holds the other end of the socket, so the socket
// reporting its peer closed means record is gone (getppid says nothing
// here: the child's parent is the command, or record as subreaper).
bool CheckRecordGone() {
  if (g_record_gone.load(std::memory_order_relaxed)) return true;
  if (g_origin == shm::kOriginForkChild) {
    if (g_sock < 0) return false;  // cannot tell; waits stay bounded
    struct pollfd p = {g_sock, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0 || (p.revents & (POLLHUP | POLLERR | POLLNVAL)) == 0) return false;
  } else if (static_cast<uint32_t>(getppid()) == g_record_pid) {
    return false;
  }
  g_record_gone.store(true, std::memory_order_relaxed);
  return true;
}

void ResetWaitState() {
  g_stalled.store(false, std::memory_order_relaxed);
  g_record_gone.store(false, std::memory_order_relaxed);
}

}  // namespace

bool Attach(int fd, size_t slot_bytes, uint32_t pid, bool first) {
  if (fd < 0 || !IsChannelMemfd(fd)) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(shm::kBuffersOffset) ||
      static_cast<uint64_t>(st.st_size) > shm::kMaxRegionBytes) {
    return false;
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return false;
  shm::Control* ctl = shm::ControlOf(base);
  const uint32_t slots = shm::SlotCount(bytes, static_cast<uint32_t>(slot_bytes));
  if (ctl->magic != shm::kChannelMagic || ctl->version != shm::kChannelVersion ||
      ctl->region_bytes != bytes || slots < shm::kMinSlots) {
    munmap(base, bytes);
    return false;
  }
  uint32_t attached = ctl->attached_pid.load(std::memory_order_acquire);
  if (first && attached == 0 && ctl->origin == shm::kOriginRecord &&
      ctl->attached_pid.compare_exchange_strong(attached, pid, std::memory_order_acq_rel)) {
    // The command's first image.
    ctl->slot_count = slots;
    ctl->slot_bytes = static_cast<uint32_t>(slot_bytes);
    ctl->layout_ready.store(1, std::memory_order_release);
    g_generation = 0;
  } else if (attached == pid && ctl->slot_count == slots && ctl->slot_bytes == slot_bytes &&
             ctl->exec_handoff.load(std::memory_order_acquire) == 1 &&
             ctl->generation.load(std::memory_order_relaxed) + 1 < shm::kMaxImages) {
    // A later image of the same process, after its predecessor handed
    // everything over and exec'd: take the region over once record has
    // written the predecessor's header (the header area is reused). At
    // start-up, so a short wait is fine; record not keeping up within a
    // second leaves this image to write its own file.
    for (int i = 0; i < 1000 && ctl->headers_taken.load(std::memory_order_acquire) !=
                                    ctl->headers_published.load(std::memory_order_acquire);
         ++i) {
      struct timespec ms = {0, 1'000'000};
      syscall(SYS_nanosleep, &ms, nullptr);
    }
    uint32_t handoff = 1;
    if (ctl->headers_taken.load(std::memory_order_acquire) !=
            ctl->headers_published.load(std::memory_order_acquire) ||
        !ctl->exec_handoff.compare_exchange_strong(handoff, 0, std::memory_order_acq_rel)) {
      munmap(base, bytes);
      return false;
    }
    g_generation = ctl->generation.load(std::memory_order_relaxed) + 1;
    ctl->generation.store(g_generation, std::memory_order_release);
    // The predecessor's exit flush before its exec set it; this image's
    // end is its own to mark (record reads it as that of the last image).
    ctl->clean_exit.store(0, std::memory_order_release);
  } else {
    munmap(base, bytes);
    return false;
  }
  g_base = base;
  g_bytes = bytes;
  g_slots = slots;
  g_slot_bytes = static_cast<uint32_t>(slot_bytes);
  g_record_pid = ctl->record_pid;
  g_origin = ctl->origin == shm::kOriginForkChild ? shm::kOriginForkChild : shm::kOriginRecord;
  g_attached = true;
  WatchWindowNudge(&ctl->window_nudges);
  // Kept, close-on-exec, for this process's next image (BeforeExec lets it
  // through exec): a child this image spawns never inherits it.
  g_fd = fd;
  g_env_fd = fd;
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  OwnFd(&g_fd, nullptr);  // out of the program's close() and dup2() (owned_fds.h)
  return true;
}

bool PublishFileHeader(const uint8_t* header, size_t n) {
  if (!g_attached || n > shm::kFileHeaderAreaBytes) return false;
  __builtin_memcpy(shm::FileHeaderOf(g_base), header, n);
  shm::Control* ctl = Ctl();
  ctl->file_header_bytes = static_cast<uint32_t>(n);
  ctl->headers_published.store(g_generation + 1, std::memory_order_release);
  ctl->seal_seq.fetch_add(1, std::memory_order_seq_cst);
  if (ctl->drain_waiting.load(std::memory_order_seq_cst) != 0) {
    Futex(&ctl->seal_seq, FUTEX_WAKE, 1, nullptr);
  }
  return true;
}

int Claim(bool wait) {
  int slot = TryClaim();
  if (slot >= 0 || !wait || g_wait_ns == 0) return slot;
  shm::Control* ctl = Ctl();
  uint32_t seen = ctl->freed_seq.load(std::memory_order_acquire);
  if (g_stalled.load(std::memory_order_relaxed) &&
      g_stalled_at.load(std::memory_order_relaxed) == seen) {
    return -1;  // the last wait timed out and record has freed nothing since
  }
  const uint64_t deadline = NowNs() + g_wait_ns;
  for (;;) {
    if (CheckRecordGone()) return -1;
    ctl->tracer_waiting.fetch_add(1, std::memory_order_seq_cst);
    if (ctl->freed_seq.load(std::memory_order_seq_cst) == seen) {
      // Slices of 10 ms: the deadline and record's death are checked
      // between them.
      struct timespec slice = {0, 10'000'000};
      Futex(&ctl->freed_seq, FUTEX_WAIT, seen, &slice);
    }
    ctl->tracer_waiting.fetch_sub(1, std::memory_order_relaxed);
    seen = ctl->freed_seq.load(std::memory_order_acquire);
    slot = TryClaim();
    if (slot >= 0) {
      g_stalled.store(false, std::memory_order_relaxed);
      return slot;
    }
    if (NowNs() >= deadline) {
      g_stalled_at.store(seen, std::memory_order_relaxed);
      g_stalled.store(true, std::memory_order_relaxed);
      return -1;
    }
  }
}

uint8_t* SlotBuffer(int slot) {
  return static_cast<uint8_t*>(g_base) + shm::SlotOffset(static_cast<uint32_t>(slot), g_slot_bytes);
}

std::atomic<uint64_t>* CommitWord(int slot) {
  return &shm::DescOf(g_base, static_cast<uint32_t>(slot))->committed;
}

void Seal(int slot, size_t bytes) {
  shm::Control* ctl = Ctl();
  shm::SlotDesc* d = shm::DescOf(g_base, static_cast<uint32_t>(slot));
  d->sealed_bytes.store(static_cast<uint32_t>(bytes), std::memory_order_relaxed);
  d->ticket.store(ctl->next_ticket.fetch_add(1, std::memory_order_relaxed),
                  std::memory_order_relaxed);
  d->state.store(shm::kSealed, std::memory_order_release);
  // Dekker with the drain: it sets drain_waiting and then re-reads
  // seal_seq before sleeping, so one of the two sees the other.
  ctl->seal_seq.fetch_add(1, std::memory_order_seq_cst);
  if (ctl->drain_waiting.load(std::memory_order_seq_cst) != 0) {
    Futex(&ctl->seal_seq, FUTEX_WAKE, 1, nullptr);
  }
}

void Release(int slot) {
  shm::SlotDesc* d = shm::DescOf(g_base, static_cast<uint32_t>(slot));
  d->committed.store(0, std::memory_order_relaxed);
  d->state.store(shm::kFree, std::memory_order_release);
}

bool HandOff(const uint8_t* chunk, size_t bytes) {
  if (bytes > g_slot_bytes) return false;
  const int slot = Claim(/*wait=*/true);
  if (slot < 0) return false;
  __builtin_memcpy(SlotBuffer(slot), chunk, bytes);
  Seal(slot, bytes);
  return true;
}

void CountDropped(uint32_t events) {
  Ctl()->dropped_events.fetch_add(events, std::memory_order_relaxed);
  Ctl()->dropped_chunks.fetch_add(1, std::memory_order_relaxed);
}

bool RecordGone() { return g_attached && CheckRecordGone(); }

void MarkCleanExit() {
  if (g_attached) Ctl()->clean_exit.store(1, std::memory_order_release);
}

void BeforeExec() {
  if (!g_attached) return;
  // Elsewhere (moved by the program's dup2, or placed out of its way) the
  // next image could not find it: it stays close-on-exec.
  if (g_fd == g_env_fd) fcntl(g_fd, F_SETFD, 0);
  Ctl()->exec_handoff.store(1, std::memory_order_release);
}

void AfterFailedExec() {
  if (!g_attached) return;
  uint32_t handoff = 1;
  Ctl()->exec_handoff.compare_exchange_strong(handoff, 0, std::memory_order_acq_rel);
  // The exit flush before the exec set it; this image records on.
  Ctl()->clean_exit.store(0, std::memory_order_release);
  fcntl(g_fd, F_SETFD, FD_CLOEXEC);
}

void Detach() {
  if (g_sock >= 0) {
    DisownFd(g_sock);
    close(g_sock);
    g_sock = -1;
  }
  if (g_parent_base != nullptr) {
    munmap(g_parent_base, g_parent_bytes);
    g_parent_base = nullptr;
  }
  if (!g_attached) return;
  WatchWindowNudge(nullptr);  // before the unmapping: the word goes with it
  DisownFd(g_fd);
  close(g_fd);
  g_fd = -1;
  munmap(g_base, g_bytes);
  g_base = nullptr;
  g_attached = false;
  g_slots = 0;
  g_origin = shm::kOriginRecord;
  ResetWaitState();
}

bool AttachSocket(const char* value) {
  // "<fd>,<record's pid>".
  uint64_t fd = 0, record = 0;
  char digits[24];
  size_t n = 0;
  if (g_sock >= 0 || value == nullptr) return false;
  while (value[n] >= '0' && value[n] <= '9' && n + 1 < sizeof(digits)) {
    digits[n] = value[n];
    ++n;
  }
  digits[n] = '\0';
  if (value[n] != ',' || !ParseDecimal(digits, &fd) || !ParseDecimal(value + n + 1, &record) ||
      fd >= (1u << 30) || record == 0 || record > UINT32_MAX ||
      (g_attached && record != g_record_pid)) {
    return false;
  }
  const int s = static_cast<int>(fd);
  int domain = 0, type = 0;
  socklen_t len = sizeof(int);
  struct ucred cred = {};
  socklen_t cred_len = sizeof(cred);
  // The socketpair record made: its peer credentials are record's (taken
  // when the pair was made), so a number the program reused is not it. In
  // a pid namespace of its own (unshare --pid, bwrap, a container
  // runtime) a process does not see record's pid: the kernel reports the
  // peer's as 0, and its user then stands for it (record checks every
  // region it gets against the pidfd that comes with it).
  if (getsockopt(s, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX ||
      (len = sizeof(int), getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &len)) != 0 ||
      type != SOCK_SEQPACKET ||
      getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
      (static_cast<uint64_t>(cred.pid) != record && (cred.pid != 0 || cred.uid != getuid()))) {
    return false;
  }
  if (!g_attached) g_record_pid = static_cast<uint32_t>(record);
  // Left inheritable: a program this process starts without a fork
  // handler (vfork, posix_spawn) reaches record through it (BeginOwnRegion).
  g_sock = s;
  OwnFd(&g_sock, nullptr);
  return true;
}

namespace {

// A region of the process's own, laid out as record lays out its first
// (origin kOriginForkChild, attached to pid), on descriptor number `at`
// (replacing what is there) or, with at < 0, at 500 or above; attached in
// place of any region this process had (whose mapping becomes
// g_parent_base). Fork child and start-up only: no allocation, no lock.
bool MakeOwnRegion(uint32_t pid, uint32_t slot_bytes, int at) {
  const size_t bytes = shm::kBuffersOffset + shm::kChildBufferBytes;
  const uint32_t slots = shm::SlotCount(bytes, slot_bytes);
  const int mfd = static_cast<int>(
      syscall(SYS_memfd_create, shm::kMemfdName, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  void* base = MAP_FAILED;
  // Sealed at its size: record maps it, and a region that shrank under
  // record's mapping would fault record's reads.
  if (slots < shm::kMinSlots || mfd < 0 || ftruncate(mfd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
      (base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) == MAP_FAILED) {
    if (mfd >= 0) close(mfd);
    return false;
  }
  // When `at` was free, memfd_create may have returned it already: dup3
  // onto itself is EINVAL, and closing mfd then would close the region.
  int fd = mfd;
  if (at < 0 || mfd != at) {
    fd = at >= 0 ? dup3(mfd, at, O_CLOEXEC) : fcntl(mfd, F_DUPFD_CLOEXEC, 500);
    close(mfd);
  }
  if (fd < 0) {
    munmap(base, bytes);
    return false;
  }
  g_parent_base = g_base;
  g_parent_bytes = g_bytes;
  shm::Control* ctl = shm::ControlOf(base);
  ctl->magic = shm::kChannelMagic;
  ctl->version = shm::kChannelVersion;
  ctl->record_pid = g_record_pid;
  ctl->region_bytes = bytes;
  ctl->origin = shm::kOriginForkChild;
  ctl->attached_pid.store(pid, std::memory_order_relaxed);
  ctl->slot_count = slots;
  ctl->slot_bytes = slot_bytes;
  ctl->layout_ready.store(1, std::memory_order_release);
  g_fd = fd;
  g_base = base;
  g_bytes = bytes;
  g_slots = slots;
  g_slot_bytes = slot_bytes;
  g_generation = 0;
  g_origin = shm::kOriginForkChild;
  g_attached = true;
  WatchWindowNudge(&ctl->window_nudges);
  ResetWaitState();
  OwnFd(&g_fd, nullptr);
  return true;
}

}  // namespace

bool BeginForkChild(uint32_t pid) {
  if (!g_attached || g_sock < 0) {
    Detach();
    return false;
  }
  // The parent's region stays the parent's: the child's copy of the
  // mapping goes, and the new region's descriptor takes the old number (the
  // one CROSSFREE_CHANNEL names, so an exec'd image takes this region over).
  DisownFd(g_fd);
  if (!MakeOwnRegion(pid, g_slot_bytes, g_fd)) {
    Detach();
    return false;
  }
  return true;
}

bool BeginOwnRegion(uint32_t pid, size_t slot_bytes, int env_fd) {
  if (g_attached || g_sock < 0 || slot_bytes > UINT32_MAX) return false;
  // The number CROSSFREE_CHANNEL names, when it is free here (it was
  // close-on-exec in the process that started this one), so an image this
  // one execs takes the region over; else out of the program's way.
  const bool free_number = env_fd >= 0 && fcntl(env_fd, F_GETFD) < 0 && errno == EBADF;
  g_env_fd = env_fd;
  if (!MakeOwnRegion(pid, static_cast<uint32_t>(slot_bytes), free_number ? env_fd : -1)) {
    Detach();
    return false;
  }
  return true;
}

bool CompleteOffer(uint32_t pid) {
  if (!g_attached || g_origin != shm::kOriginForkChild || g_sock < 0) return false;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return false;
  shm::RegionOffer offer;
  offer.Init(pid, g_fd, pidfd);
  // Never blocks: a full socket (record not reading) is a refusal.
  long sent;
  do {
    sent = sendmsg(g_sock, &offer.header, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  close(pidfd);
  if (sent != static_cast<long>(sizeof(offer.message))) return false;
  shm::Control* ctl = Ctl();
  // After a sibling's offer went unanswered (record stopped, or too slow),
  // a short wait only, until one is adopted again: a stalled record costs
  // a forking program one long wait, not one per fork.
  shm::Control* parent = g_parent_base != nullptr ? shm::ControlOf(g_parent_base) : nullptr;
  const bool stalled =
      parent != nullptr && parent->offers_stalled.load(std::memory_order_relaxed) != 0;
  const uint64_t deadline =
      NowNs() + (stalled ? shm::kStalledAdoptionWaitNs : shm::kAdoptionWaitNs);
  while (ctl->adoption.load(std::memory_order_acquire) == shm::kOffered &&
         NowNs() < deadline && !CheckRecordGone()) {
    struct timespec slice = {0, 10'000'000};
    Futex(&ctl->adoption, FUTEX_WAIT, shm::kOffered, &slice);
  }
  // Either record adopted it, or the child gives up first and record, if
  // it comes later, finds the region abandoned.
  uint32_t state = shm::kOffered;
  const bool abandoned =
      ctl->adoption.compare_exchange_strong(state, shm::kAbandoned, std::memory_order_acq_rel);
  if (parent != nullptr) {
    parent->offers_stalled.store(abandoned ? 1 : 0, std::memory_order_relaxed);
    munmap(g_parent_base, g_parent_bytes);
    g_parent_base = nullptr;
  }
  return !abandoned && state == shm::kAdopted;
}

}  // namespace crossfree::tracer::channel
