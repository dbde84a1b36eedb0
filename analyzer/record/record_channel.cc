// SPDX-License-Identifier: Apache-2.0
// `crossfree record`'s side of the chunk hand-off (see record_channel.h).
#include "analyzer/record/record_channel.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "analyzer/record/messages.h"
#include "analyzer/record/target_process.h"
#include "analyzer/record/write_watchdog.h"
#include "format/crc32c.h"
#include "protocol/shm_channel.h"
#include "format/trace_format.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "format/wire.h"

namespace crossfree::analyzer::record {
namespace {


// How long the drain waits for a chunk sealed before others it already
// sees (a seal between its ticket and its state store, normally a few
// instructions) before it writes the later ones: bounds the harm of a
// thread stopped mid-seal (by a signal handler that never returns).
constexpr uint64_t kGapWaitNs = 1'000'000'000;

uint64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const struct timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

std::unique_ptr<ChunkChannel> ChunkChannel::Create(size_t region_bytes, std::string* error) {
  if (region_bytes < shm::kBuffersOffset || region_bytes > shm::kMaxRegionBytes) {
    *error = fmt::format("a hand-off region of {} bytes is out of range", region_bytes);
    return nullptr;
  }
  std::unique_ptr<ChunkChannel> c(new ChunkChannel());
  c->fd_ = memfd_create(shm::kMemfdName, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (c->fd_ < 0) {
    *error = fmt::format("memfd_create: {}", std::strerror(errno));
    return nullptr;
  }
  // Sealed at its size: the command holds the descriptor, and a region
  // cut short under our mapping would fault the drain's reads.
  if (ftruncate(c->fd_, static_cast<off_t>(region_bytes)) != 0 ||
      fcntl(c->fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    *error = fmt::format("sizing the hand-off region: {}", std::strerror(errno));
    return nullptr;
  }
  void* base = mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd_, 0);
  if (base == MAP_FAILED) {
    *error = fmt::format("mapping the hand-off region: {}", std::strerror(errno));
    return nullptr;
  }
  c->base_ = base;
  c->bytes_ = region_bytes;
  shm::Control* ctl = shm::ControlOf(base);
  ctl->magic = shm::kChannelMagic;
  ctl->version = shm::kChannelVersion;
  ctl->record_pid = static_cast<uint32_t>(getpid());
  ctl->region_bytes = region_bytes;
  return c;
}

std::unique_ptr<ChunkChannel> ChunkChannel::Adopt(int memfd, std::string* error) {
  std::unique_ptr<ChunkChannel> c(new ChunkChannel());
  c->fd_ = memfd;
  c->adopted_ = true;
  const std::string want = fmt::format("/memfd:{}", shm::kMemfdName);
  if (DescriptorLink(getpid(), memfd).rfind(want, 0) != 0) {
    *error = "a child process sent a descriptor that is not a hand-off region";
    return nullptr;
  }
  // Sealed against shrinking: the child keeps its descriptor, and a region
  // cut short under our mapping would fault our reads.
  const int seals = fcntl(memfd, F_GET_SEALS);
  struct stat st;
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0 || fstat(memfd, &st) != 0 ||
      st.st_size < static_cast<off_t>(shm::kBuffersOffset) ||
      static_cast<uint64_t>(st.st_size) > shm::kMaxRegionBytes) {
    *error = "a child process's hand-off region is unsealed or of a bad size";
    return nullptr;
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (base == MAP_FAILED) {
    *error = fmt::format("mapping a child process's hand-off region: {}", std::strerror(errno));
    return nullptr;
  }
  c->base_ = base;
  c->bytes_ = bytes;
  const shm::Control* ctl = shm::ControlOf(base);
  if (ctl->magic != shm::kChannelMagic || ctl->version != shm::kChannelVersion ||
      ctl->region_bytes != bytes || ctl->origin != shm::kOriginForkChild) {
    *error = "a child process's hand-off region has a bad control block";
    return nullptr;
  }
  return c;
}

uint32_t ChunkChannel::AttachedPid() const {
  return shm::ControlOf(base_)->attached_pid.load(std::memory_order_acquire);
}

void ChunkChannel::SetWindowNudges(uint32_t count) {
  std::atomic<uint32_t>& word = shm::ControlOf(base_)->window_nudges;
  // Only a change is written: the tracer's closed hooks read this line.
  if (word.load(std::memory_order_relaxed) != count) {
    word.store(count, std::memory_order_release);
  }
}

bool ChunkChannel::Claim(const std::string& path, format::ChunkCompressor* compressor) {
  path_ = path;
  shared_compressor_ = compressor;
  shm::Control* ctl = shm::ControlOf(base_);
  uint32_t offered = shm::kOffered;
  if (!ctl->adoption.compare_exchange_strong(offered, shm::kAdopted,
                                             std::memory_order_acq_rel)) {
    return false;
  }
  Futex(&ctl->adoption, FUTEX_WAKE, INT_MAX, nullptr);
  return true;
}

size_t ChunkChannel::Pump() {
  TakeHeaders();
  return !files_.empty() && !broken_ ? DrainSealed(/*final=*/false) : 0;
}

int ChunkChannel::OpenFirstFile() {
  const int fd =
      open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    stats_.first_file = path_;
    return fd;
  }
  if (errno != EEXIST) {
    stats_.error = fmt::format("cannot create {}: {}", path_, std::strerror(errno));
    return -1;
  }
  // Taken (a file of the same pid from earlier in this run): the next
  // free path.<n>, as the tracer would name it.
  const int other = OpenImageFile();
  if (other >= 0) {
    stats_.first_file = stats_.files.back();
    stats_.files.pop_back();
  }
  return other;
}

format::ChunkCompressor* ChunkChannel::Compressor() {
  // A child's region shares ChildRegions' (Claim); record's own region has
  // the one Start made. Neither exists at level 0 (plain chunks).
  return shared_compressor_ != nullptr ? shared_compressor_ : compressor_.get();
}

ChunkChannel::~ChunkChannel() {
  StopThreads();
  if (base_ != nullptr) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

namespace {

// Record's threads leave signals to the owner thread (it forwards them to
// the command).
void BlockSignals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

// For tests: CROSSFREE_RECORD_TEST_PAUSE_DRAIN_MS=N stops the drain for
// N ms once the command's first trace file is open, as a drain at nice 19
// on a machine other work keeps busy gets no core for that long.
void PauseOnceIfTesting() {
  static bool paused = false;
  if (paused) return;
  paused = true;
  const char* v = std::getenv("CROSSFREE_RECORD_TEST_PAUSE_DRAIN_MS");
  if (v == nullptr || *v == '\0') return;
  const uint64_t ms = std::strtoull(v, nullptr, 10);
  struct timespec pause = {static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1'000'000};
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
}

// CROSSFREE_RECORD_LEVEL / CROSSFREE_RECORD_NICE (docs/guide/tracer.md):
// the value in [lo, hi], or fallback with a one-line warning when set to
// anything else.
int EnvInt(const char* name, int lo, int hi, int fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) {
    Say("crossfree record: ignoring {}='{}' ({}..{}); using {}\n", name, v, lo, hi,
        fallback);
    return fallback;
  }
  return static_cast<int>(n);
}

}  // namespace

int ChunkChannel::Level() {
  // Read (and a bad value named) once per run.
  static const int level = EnvInt("CROSSFREE_RECORD_LEVEL", -7, 19, kDrainLevel);
  return level;
}

void ChunkChannel::Refuse() {
  shm::Control* ctl = shm::ControlOf(base_);
  uint32_t offered = shm::kOffered;
  if (ctl->adoption.compare_exchange_strong(offered, shm::kAbandoned,
                                            std::memory_order_acq_rel)) {
    Futex(&ctl->adoption, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

void ChunkChannel::Start(int output_fd, const std::string& path) {
  out_ = output_fd;
  path_ = path;
  // Level 0 writes the chunks as the tracer made them (Compressor() is
  // null): on a machine with no core to spare, the command then pays no
  // compression CPU at all.
  if (Level() != 0) compressor_ = std::make_unique<format::ChunkCompressor>(Level());
  backlog_limit_ =
      static_cast<size_t>(EnvInt("CROSSFREE_RECORD_BACKLOG_MB", 0, 65536, kBacklogMiB)) << 20;
  const int nice = EnvInt("CROSSFREE_RECORD_NICE", 0, 19, kDrainNice);
  rescue_running_.store(true, std::memory_order_relaxed);
  rescue_ = std::thread([this] {
    BlockSignals();
    RescueLoop();
  });
  drain_ = std::thread([this, nice] {
    BlockSignals();
    // Only this thread: on a machine without an idle core the command's
    // threads go first, and the slots absorb the difference.
    if (nice > 0) setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice);
    DrainLoop();
  });
}

void ChunkChannel::DrainLoop() {
  shm::Control* ctl = shm::ControlOf(base_);
  for (;;) {
    const uint32_t seen = ctl->seal_seq.load(std::memory_order_acquire);
    const bool stop = __atomic_load_n(&stop_, __ATOMIC_ACQUIRE);
    TakeHeaders();
    if (!files_.empty()) PauseOnceIfTesting();
    const size_t written = !files_.empty() && !broken_ ? DrainSealed(/*final=*/false) : 0;
    if (stop) return;
    if (written > 0) continue;
    // Nothing sealed waits: compress one held-back chunk, then look again.
    if (WriteOldestHeldBack()) continue;
    // Dekker with the tracer's Seal: it bumps seal_seq and then reads
    // drain_waiting; we set drain_waiting and then re-read seal_seq.
    ctl->drain_waiting.store(1, std::memory_order_seq_cst);
    if (ctl->seal_seq.load(std::memory_order_seq_cst) == seen &&
        !__atomic_load_n(&stop_, __ATOMIC_ACQUIRE)) {
      // The timeout only re-checks a gap in the seal order (kGapWaitNs),
      // and chunks the rescue thread took (it wakes this wait too).
      struct timespec slice = {0, 100'000'000};
      Futex(&ctl->seal_seq, FUTEX_WAIT, seen, &slice);
    }
    ctl->drain_waiting.store(0, std::memory_order_relaxed);
  }
}

void ChunkChannel::RescueLoop() {
  shm::Control* ctl = shm::ControlOf(base_);
  uint32_t last_freed = ctl->freed_seq.load(std::memory_order_acquire);
  for (;;) {
    struct timespec tick = {0, static_cast<long>(kRescueTickNs)};
    Futex(&rescue_stop_, FUTEX_WAIT, 0, &tick);
    if (rescue_stop_.load(std::memory_order_acquire) != 0) return;
    if (!layout_known_.load(std::memory_order_acquire)) {
      if (ctl->layout_ready.load(std::memory_order_acquire) == 0) continue;
      CheckLayout();
    }
    // A damaged layout, or file headers the drain refused: nothing taken
    // from here on would be written.
    if (broken_.load(std::memory_order_acquire)) return;
    // An exec'd image waits for its predecessor's header to be taken.
    if (ctl->headers_published.load(std::memory_order_acquire) !=
        ctl->headers_taken.load(std::memory_order_relaxed)) {
      CopyHeaders();
    }
    // Act only when a thread of the command waits for a slot and the drain
    // has freed none for a whole tick. Not earlier: a thread that waits
    // briefly leaves its core to the drain, which then catches up; on the
    // deep-stack workload, rescuing as soon as free slots ran low made the
    // command 6% slower (median of 15 alternated rounds).
    const uint32_t freed = ctl->freed_seq.load(std::memory_order_acquire);
    const bool stalled = freed == last_freed;
    last_freed = freed;
    if (!stalled || ctl->tracer_waiting.load(std::memory_order_relaxed) == 0) continue;
    RescueSealed();
    last_freed = ctl->freed_seq.load(std::memory_order_acquire);  // its own notice
  }
}

void ChunkChannel::RescueSealed() {
  std::vector<RescuedChunk> taken;
  std::vector<uint32_t> taken_slots;
  for (uint32_t i = 0; i < slots_; ++i) {
    shm::SlotDesc* d = shm::DescOf(base_, i);
    if (d->state.load(std::memory_order_acquire) != shm::kSealed) continue;
    if (rescued_bytes_.load(std::memory_order_relaxed) >= kRescueMiB << 20) break;
    if (!ClaimSlot(i)) continue;  // the drain is writing it
    // Freed by the drain meanwhile (and maybe sealed again since): the
    // length is read only after the state, as the drain does, so that it
    // is the length of the chunk the claim holds.
    if (d->state.load(std::memory_order_acquire) != shm::kSealed) {
      UnclaimSlot(i);
      continue;
    }
    const uint32_t n = d->sealed_bytes.load(std::memory_order_relaxed);
    if (n > slot_bytes_) {  // the drain counts it as damaged
      UnclaimSlot(i);
      continue;
    }
    const uint8_t* data = static_cast<const uint8_t*>(base_) + shm::SlotOffset(i, slot_bytes_);
    std::vector<uint8_t> copy = SpareBuffer();
    copy.assign(data, data + n);
    taken.push_back(
        RescuedChunk{d->ticket.load(std::memory_order_relaxed), d->generation, std::move(copy)});
    taken_slots.push_back(i);
    rescued_bytes_.fetch_add(n, std::memory_order_relaxed);
  }
  if (taken.empty()) return;
  {
    // Handed over before the slots are free, so that the drain, which
    // takes rescued_ before it scans the slots, never misses one.
    std::lock_guard<std::mutex> hold(rescued_mu_);
    for (RescuedChunk& c : taken) rescued_.push_back(std::move(c));
  }
  for (const uint32_t slot : taken_slots) {
    FreeSlot(slot);
    UnclaimSlot(slot);
  }
  NotifyFreed();
  Futex(&shm::ControlOf(base_)->seal_seq, FUTEX_WAKE, 1, nullptr);  // the drain, to write them
}

void ChunkChannel::NotifyFreed() {
  // One notification per batch for the threads waiting for a slot.
  shm::Control* ctl = shm::ControlOf(base_);
  ctl->freed_seq.fetch_add(1, std::memory_order_seq_cst);
  if (ctl->tracer_waiting.load(std::memory_order_seq_cst) != 0) {
    Futex(&ctl->freed_seq, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

bool ChunkChannel::ClaimSlot(uint32_t slot) {
  return claims_[slot].exchange(1, std::memory_order_acq_rel) == 0;
}

void ChunkChannel::UnclaimSlot(uint32_t slot) {
  // After the slot's state: a claim never outlives it, nor ends before.
  claims_[slot].store(0, std::memory_order_release);
}

void ChunkChannel::StopRescue() {
  if (!rescue_.joinable()) return;
  rescue_stop_.store(1, std::memory_order_release);
  Futex(&rescue_stop_, FUTEX_WAKE, INT_MAX, nullptr);
  rescue_.join();
  rescue_running_.store(false, std::memory_order_release);
}

void ChunkChannel::CheckLayout() {
  const shm::Control* ctl = shm::ControlOf(base_);
  stats_.attached = true;
  // One snapshot of the layout: the target could change the fields later.
  const uint32_t slots = ctl->slot_count;
  const uint32_t slot_bytes = ctl->slot_bytes;
  if (slots == 0 || slots > shm::kMaxSlots || slot_bytes < format::kChunkHeaderBytes ||
      slot_bytes > format::kMaxChunkBytes || shm::SlotOffset(slots, slot_bytes) > bytes_) {
    stats_.error = "the traced process damaged the hand-off region's layout";
    broken_ = true;
  } else {
    slots_ = slots;
    slot_bytes_ = slot_bytes;
    claims_ = std::make_unique<std::atomic<uint8_t>[]>(slots);
  }
  layout_known_.store(true, std::memory_order_release);
}

void ChunkChannel::TakeHeaders() {
  shm::Control* ctl = shm::ControlOf(base_);
  if (!layout_known_.load(std::memory_order_acquire)) {
    // The rescue thread checks it while it runs: it gets a core sooner.
    if (rescue_running_.load(std::memory_order_acquire)) return;
    if (ctl->layout_ready.load(std::memory_order_acquire) == 0) return;
    CheckLayout();
  }
  CopyHeaders();  // nothing once broken_
  std::vector<std::vector<uint8_t>> headers;  // the copies not yet written, in order
  {
    std::lock_guard<std::mutex> hold(header_mu_);
    // Damaged headers, found by either thread's CopyHeaders.
    if (!header_error_.empty() && stats_.error.empty()) stats_.error = header_error_;
    if (broken_) return;
    for (size_t g = files_.size(); g < header_copies_.size(); ++g) {
      headers.push_back(std::move(header_copies_[g]));
    }
  }
  for (std::vector<uint8_t>& copy : headers) {
    std::string error;
    auto parsed = format::TraceReader::FromBytes(std::span<const uint8_t>(copy),
                                                 "the handed-over header", &error);
    if (parsed == nullptr) {
      stats_.error = fmt::format("the trace header the tracer handed over is damaged: {}", error);
      broken_ = true;
      return;
    }
    if (rounder_.resolution_ns() > 1) {
      // The same header with the resolution (version 5, docs/trace-format.md 4).
      format::HeaderFields fields = parsed->header().fields;
      fields.time_resolution_ns = rounder_.resolution_ns();
      const std::string& exe = parsed->header().exe_path;
      std::vector<uint8_t> rounded(format::wire::kMaxExePathBytes + format::wire::kHdrMinBytes + 16);
      rounded.resize(format::EncodeFileHeader(fields, exe.data(), exe.size(), rounded.data(),
                                              rounded.size()));
      parsed.reset();
      copy.swap(rounded);
    }
    const int fd = !files_.empty() ? OpenImageFile() : adopted_ ? OpenFirstFile() : out_;
    if (fd < 0) {
      broken_ = true;
      return;
    }
    files_.push_back(fd);
    stats_.plain_bytes += copy.size();
    Write(fd, copy.data(), copy.size());
  }
}

void ChunkChannel::CopyHeaders() {
  shm::Control* ctl = shm::ControlOf(base_);
  std::lock_guard<std::mutex> hold(header_mu_);
  if (broken_.load(std::memory_order_acquire)) return;
  const uint32_t published = ctl->headers_published.load(std::memory_order_acquire);
  while (header_copies_.size() < published) {
    const uint32_t header_bytes = ctl->file_header_bytes;
    if (published > header_copies_.size() + 1 || header_copies_.size() >= shm::kMaxImages ||
        header_bytes > shm::kFileHeaderAreaBytes) {
      header_error_ = "the traced process damaged the hand-off region's file headers";
      broken_ = true;
      return;
    }
    const uint8_t* header = shm::FileHeaderOf(base_);
    header_copies_.emplace_back(header, header + header_bytes);
    // The next image may now reuse the header area.
    ctl->headers_taken.store(static_cast<uint32_t>(header_copies_.size()),
                             std::memory_order_release);
  }
}

int ChunkChannel::OpenImageFile() {
  for (int n = 1; n < 1000; ++n) {
    const std::string path = fmt::format("{}.{}", path_, n);
    const int fd =
        open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      stats_.files.push_back(path);
      return fd;
    }
    if (errno != EEXIST) {
      stats_.error = fmt::format("cannot create {}: {}", path, std::strerror(errno));
      return -1;
    }
  }
  stats_.error = fmt::format("no free name {}.<n> for an exec'd image", path_);
  return -1;
}

int ChunkChannel::FileOf(uint32_t slot) const {
  return FileOfGeneration(shm::DescOf(base_, slot)->generation);
}

int ChunkChannel::FileOfGeneration(uint32_t generation) const {
  return generation < files_.size() ? files_[generation] : -1;
}

size_t ChunkChannel::DrainSealed(bool final) {
  // The rescue thread's chunks first, then the slots: a chunk it takes in
  // between is missing from this pass (a gap, waited for). A chunk seen in
  // both places (copied, its slot not yet freed at the scan) is written
  // once: the slot's entry sorts after the copy and is skipped by its
  // ticket, and a slot is written only under its claim with its ticket
  // checked again.
  {
    std::lock_guard<std::mutex> hold(rescued_mu_);
    for (RescuedChunk& c : rescued_) rescued_taken_.push_back(std::move(c));
    rescued_.clear();
  }
  struct Sealed {
    uint64_t ticket;
    bool in_slot;    // ordered after a rescued copy of the same ticket
    uint32_t index;  // the slot, or the position in rescued_taken_
    bool operator<(const Sealed& o) const {
      return std::tie(ticket, in_slot, index) < std::tie(o.ticket, o.in_slot, o.index);
    }
  };
  std::vector<Sealed> sealed;
  for (size_t k = 0; k < rescued_taken_.size(); ++k) {
    sealed.push_back(Sealed{rescued_taken_[k].ticket, false, static_cast<uint32_t>(k)});
  }
  uint32_t free_slots = 0;
  for (uint32_t i = 0; i < slots_; ++i) {
    shm::SlotDesc* d = shm::DescOf(base_, i);
    const uint32_t state = d->state.load(std::memory_order_acquire);
    if (state == shm::kSealed) {
      sealed.push_back(Sealed{d->ticket.load(std::memory_order_relaxed), true, i});
    } else if (state == shm::kFree) {
      ++free_slots;
    }
  }
  // The file headers again, after the chunks: a chunk sealed (and maybe
  // rescued) since the drain last took them may belong to an image whose
  // header was published meanwhile; without its file it would count as
  // damaged (a drain starved between the two steps lost an exec'd image's
  // 42 chunks so under TSan).
  TakeHeaders();
  if (broken_) return 0;
  const shm::Control* control = shm::ControlOf(base_);
  std::sort(sealed.begin(), sealed.end());
  size_t written = 0;
  uint32_t freed = 0;
  for (const Sealed& next : sealed) {
    if (!final && next.ticket > next_ticket_) {
      // An earlier seal has not finished yet: its chunk may be a thread's
      // predecessor of this one. Wait for it, but not for ever.
      const uint64_t now = NowNs();
      if (gap_since_ns_ == 0) gap_since_ns_ = now;
      if (now - gap_since_ns_ < kGapWaitNs) break;
      // The missing chunk may have been handed over by the rescue thread
      // after this pass took rescued_ (and its slot freed before the
      // scan): look once more before giving up on it.
      {
        std::lock_guard<std::mutex> hold(rescued_mu_);
        if (!rescued_.empty()) break;
      }
      next_ticket_ = next.ticket;
    }
    if (!next.in_slot) {
      RescuedChunk& c = rescued_taken_[next.index];
      const size_t bytes = c.bytes.size();  // before HoldBuffer may move them
      const int fd = FileOfGeneration(c.generation);
      ++stats_.rescued;
      if (fd < 0) {
        ++stats_.damaged_chunks;
      } else {
        behind_ = true;  // rescued: the drain was behind
        owned_ = &c.bytes;  // may be moved into the backlog (HoldBuffer)
        EmitValidated(fd, c.bytes.data(), c.bytes.size());
        owned_ = nullptr;
        behind_ = false;
      }
      rescued_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
      ReturnBuffer(std::move(c.bytes));
      c.written = true;  // dropped below
    } else {
      const uint32_t slot = next.index;
      shm::SlotDesc* d = shm::DescOf(base_, slot);
      // Its rescued copy was just written (the rescue thread frees the
      // slot after it hands the copy over).
      if (next.ticket + 1 == next_ticket_) continue;
      // Taken, or being taken, by the rescue thread since the scan: its
      // copy is in rescued_ for the next pass.
      if (!ClaimSlot(slot)) break;
      if (d->state.load(std::memory_order_acquire) != shm::kSealed ||
          d->ticket.load(std::memory_order_relaxed) != next.ticket) {
        UnclaimSlot(slot);
        break;
      }
      const uint32_t n = d->sealed_bytes.load(std::memory_order_relaxed);
      const int fd = FileOf(slot);
      if (n > slot_bytes_ || fd < 0) {
        ++stats_.damaged_chunks;
      } else {
        // Behind: few free slots (counting those this batch freed), or a
        // thread already waits for one. Plain until the backlog shrinks.
        behind_ = free_slots + freed < slots_ / kKeepUpDivisor ||
                  control->tracer_waiting.load(std::memory_order_relaxed) != 0;
        // Copied out of shared memory before it is checked, so that the
        // checks hold for every byte read after them: the command can still
        // write to a sealed slot (only one that damages the region would),
        // and the rounding, the compressor and the write all read the chunk
        // after its CRC check. One copy of at most a slot, which a held-back
        // chunk keeps (HoldBuffer moves it).
        const uint8_t* in_slot = shm::SlotOffset(slot, slot_bytes_) + static_cast<uint8_t*>(base_);
        std::vector<uint8_t> copy = SpareBuffer();
        copy.assign(in_slot, in_slot + n);
        owned_ = &copy;
        EmitValidated(fd, copy.data(), copy.size());
        owned_ = nullptr;
        ReturnBuffer(std::move(copy));
        behind_ = false;
      }
      FreeSlot(slot);
      UnclaimSlot(slot);
      ++freed;
    }
    gap_since_ns_ = 0;
    if (next.ticket < next_ticket_) ++stats_.out_of_order;
    next_ticket_ = std::max(next_ticket_, next.ticket + 1);
    ++written;
  }
  std::erase_if(rescued_taken_, [](const RescuedChunk& c) { return c.written; });
  if (freed > 0) NotifyFreed();
  return written;
}

void ChunkChannel::FreeSlot(uint32_t slot) {
  shm::SlotDesc* d = shm::DescOf(base_, slot);
  // A fork child's region: its written slot leaves our resident memory (the
  // pages stay the memfd's), so record's memory follows the slots it is
  // reading, not every child's slots in use.
  if (adopted_) {
    madvise(static_cast<uint8_t*>(base_) + shm::SlotOffset(slot, slot_bytes_), slot_bytes_,
            MADV_DONTNEED);
  }
  d->committed.store(0, std::memory_order_relaxed);
  d->state.store(shm::kFree, std::memory_order_release);
}

void ChunkChannel::EmitValidated(int fd, const uint8_t* data, size_t n) {
  namespace wire = format::wire;
  bool ok = n >= format::kChunkHeaderBytes && wire::Load32(data + wire::kChkMagic) ==
                                                  format::kChunkMagic;
  if (ok) {
    const uint32_t word = wire::Load32(data + wire::kChkLength);
    const uint32_t payload = word & 0xffffff;
    ok = wire::PackLength(payload) == word && format::kChunkHeaderBytes + payload == n &&
         format::Crc32c(data + wire::kChkCrcStart, n - wire::kChkCrcStart) ==
             wire::Load32(data + wire::kChkCrc);
  }
  if (!ok) {
    ++stats_.damaged_chunks;
    return;
  }
  if (rounder_.resolution_ns() > 1) {
    // Before compressing (docs/trace-format.md 7.1). The tracer's records
    // always parse; a chunk that does not is counted as damaged, since
    // written as it is its times would not be multiples of the resolution.
    std::string error;
    if (!rounder_.Round(data, n, rounded_, &error)) {
      ++stats_.damaged_chunks;
      return;
    }
    stats_.events += wire::Load32(data + wire::kChkEvents);
    ++stats_.chunks;
    stats_.plain_bytes += n;
    EmitChunk(fd, rounded_.data(), rounded_.size());
    return;
  }
  stats_.events += wire::Load32(data + wire::kChkEvents);
  ++stats_.chunks;
  stats_.plain_bytes += n;
  EmitChunk(fd, data, n);
}

// Held while a chunk is compressed. `record` drains the command's region on
// one thread and its children's regions on another (ChildRegions); with
// both busy, each compressing on a core of its own would take record past
// one core. One compression at a time keeps record's CPU within one core
// (the bound) whatever the number of busy processes; the waiting
// drain only reads slot states meanwhile.
namespace {
std::mutex& CompressionLock() {
  static std::mutex lock;
  return lock;
}
}  // namespace

void ChunkChannel::EmitChunk(int fd, const uint8_t* chunk, size_t n) {
  // No compressor: level 0 (Level) asked for plain chunks.
  const bool late = NowNs() >= __atomic_load_n(&plain_after_ns_, __ATOMIC_RELAXED);
  if (Compressor() != nullptr && !late && n <= backlog_limit_ &&
      (behind_ || !backlog_.empty())) {
    // Make room by writing the oldest plain, then hold this one back.
    while (backlog_bytes_ + n > backlog_limit_) {
      HeldChunk& oldest = backlog_.front();
      --stats_.held_back;  // counted as plain instead
      ++stats_.plain_to_keep_up;
      Write(oldest.fd, oldest.bytes.data(), oldest.bytes.size());
      backlog_bytes_ -= oldest.bytes.size();
      ReturnBuffer(std::move(oldest.bytes));
      backlog_.pop_front();
    }
    backlog_.push_back(HeldChunk{fd, HoldBuffer(chunk, n)});
    backlog_bytes_ += n;
    ++stats_.held_back;
    return;
  }
  while (WriteOldestHeldBack()) {
  }  // late (plain, in order), or no backlog at all
  if (Compressor() != nullptr && (behind_ || late)) {
    ++stats_.plain_to_keep_up;
    Write(fd, chunk, n);
    return;
  }
  CompressAndWrite(fd, chunk, n);
}

bool ChunkChannel::WriteOldestHeldBack() {
  if (backlog_.empty()) return false;
  HeldChunk oldest = std::move(backlog_.front());
  backlog_.pop_front();
  backlog_bytes_ -= oldest.bytes.size();
  if (NowNs() >= __atomic_load_n(&plain_after_ns_, __ATOMIC_RELAXED)) {
    --stats_.held_back;  // counted as plain instead
    ++stats_.plain_to_keep_up;
    Write(oldest.fd, oldest.bytes.data(), oldest.bytes.size());
  } else {
    CompressAndWrite(oldest.fd, oldest.bytes.data(), oldest.bytes.size());
  }
  ReturnBuffer(std::move(oldest.bytes));
  return true;
}

std::vector<uint8_t> ChunkChannel::HoldBuffer(const uint8_t* chunk, size_t n) {
  // A rescued chunk held back as it is: its copy moves, no second one.
  if (owned_ != nullptr && owned_->data() == chunk && owned_->size() == n) {
    std::vector<uint8_t> moved = std::move(*owned_);
    owned_ = nullptr;
    return moved;
  }
  std::vector<uint8_t> buffer = SpareBuffer();
  buffer.assign(chunk, chunk + n);
  return buffer;
}

std::vector<uint8_t> ChunkChannel::SpareBuffer() {
  std::lock_guard<std::mutex> hold(rescued_mu_);
  if (spare_.empty()) return {};
  std::vector<uint8_t> buffer = std::move(spare_.back());
  spare_.pop_back();
  spare_bytes_ -= buffer.capacity();
  return buffer;
}

void ChunkChannel::ReturnBuffer(std::vector<uint8_t>&& buffer) {
  if (buffer.capacity() == 0) return;
  std::lock_guard<std::mutex> hold(rescued_mu_);
  if (spare_.size() < kSpareBuffers && spare_bytes_ + buffer.capacity() <= kSpareMiB << 20) {
    spare_bytes_ += buffer.capacity();
    spare_.push_back(std::move(buffer));
  }
}

void ChunkChannel::CompressAndWrite(int fd, const uint8_t* chunk, size_t n) {
  // The chunk was validated (EmitValidated), so a refusal here would be a
  // record the codec cannot split: keep the chunk plain rather than lose it.
  format::ChunkCompressor* compressor = Compressor();
  std::string error;
  bool compressed = false;
  if (compressor != nullptr) {
    std::lock_guard<std::mutex> hold(CompressionLock());
    compressed = compressor->Compress(chunk, n, compressed_, &error);
  }
  if (compressed) {
    Write(fd, compressed_.data(), compressed_.size());
  } else {
    Write(fd, chunk, n);
  }
}

void ChunkChannel::Write(int fd, const uint8_t* data, size_t n) {
  if (!stats_.error.empty()) return;  // after a write error, only slots are freed
  while (n > 0) {
    NoteWriteBegins();  // for WriteWatchdog: a write that never returns
    StallIfTesting();
    const ssize_t w = write(fd, data, n);
    NoteWriteEnds(w > 0 ? static_cast<uint64_t>(w) : 0);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      stats_.error = fmt::format("writing the trace: {}", std::strerror(w < 0 ? errno : EIO));
      return;
    }
    data += w;
    n -= static_cast<size_t>(w);
    stats_.bytes_written += static_cast<uint64_t>(w);
  }
}

void ChunkChannel::WritePartial(uint32_t slot) {
  namespace wire = format::wire;
  shm::SlotDesc* d = shm::DescOf(base_, slot);
  const uint64_t committed = d->committed.load(std::memory_order_acquire);
  const uint32_t n = shm::CommittedBytes(committed);
  const uint32_t events = shm::CommittedEvents(committed);
  if (n <= format::kChunkHeaderBytes) return;  // begun, no whole record yet
  const int fd = FileOf(slot);
  if (n > slot_bytes_ || fd < 0) {
    ++stats_.damaged_chunks;
    return;
  }
  // The owner wrote the header at the chunk's start and never finished it:
  // length, event count and checksum are set here, as ChunkWriter::Finish
  // would have, over the whole records only.
  std::vector<uint8_t> chunk(static_cast<const uint8_t*>(base_) +
                                 shm::SlotOffset(slot, slot_bytes_),
                             static_cast<const uint8_t*>(base_) +
                                 shm::SlotOffset(slot, slot_bytes_) + n);
  wire::Store32(chunk.data() + wire::kChkLength,
                wire::PackLength(n - static_cast<uint32_t>(format::kChunkHeaderBytes)));
  wire::Store32(chunk.data() + wire::kChkEvents, events);
  wire::Store32(chunk.data() + wire::kChkCrc,
                format::Crc32c(chunk.data() + wire::kChkCrcStart, n - wire::kChkCrcStart));
  const uint64_t before = stats_.chunks;
  EmitValidated(fd, chunk.data(), chunk.size());
  if (stats_.chunks != before) {
    ++stats_.partial_chunks;
    stats_.partial_events += events;
  }
}

void ChunkChannel::WriteLosses() {
  const format::RecordLosses losses{.events_dropped = stats_.dropped_events,
                                    .chunks_dropped = stats_.dropped_chunks,
                                    .chunks_damaged = stats_.damaged_chunks};
  if (!losses.any() || files_.empty() || broken_) return;
  uint8_t chunk[format::kLossesChunkBytes];
  const size_t n = format::EncodeLossesChunk(
      losses, AttachedPid(), format::RoundTimeDown(NowNs(), rounder_.resolution_ns()), chunk,
      sizeof(chunk));
  // Its bytes count in bytes_written: they are on disk.
  Write(files_.back(), chunk, n);
}

void ChunkChannel::WriteTakenEnd(bool still_running) {
  // The tracer's own clean end (its totals chunk) needs no word from here;
  // an end it did not make, or buffers it left open, do.
  if (files_.empty() || broken_ || (stats_.clean_exit && stats_.partial_chunks == 0)) return;
  const format::RecordTakenEnd end{
      .state = still_running ? format::TakenEndState::kRunning : format::TakenEndState::kEnded,
      .chunks_sealed = stats_.partial_chunks,
      .events = stats_.partial_events};
  uint8_t chunk[format::kTakenEndChunkBytes];
  const size_t n = format::EncodeTakenEndChunk(
      end, AttachedPid(), format::RoundTimeDown(NowNs(), rounder_.resolution_ns()), chunk,
      sizeof(chunk));
  Write(files_.back(), chunk, n);
}

void ChunkChannel::StopThreads() {
  // Held-back chunks are compressed for kFinishCompressNs more, then plain.
  __atomic_store_n(&plain_after_ns_, NowNs() + kFinishCompressNs, __ATOMIC_RELAXED);
  // The command has ended: nothing waits for a slot any more.
  StopRescue();
  if (drain_.joinable()) {
    __atomic_store_n(&stop_, true, __ATOMIC_RELEASE);
    Futex(&shm::ControlOf(base_)->seal_seq, FUTEX_WAKE, INT_MAX, nullptr);
    drain_.join();
  }
}

ChunkChannel::Stats ChunkChannel::Finish(bool still_running) {
  StopThreads();
  // The process that filled the region is gone: nothing changes it now.
  TakeHeaders();
  if (!files_.empty() && !broken_) {
    DrainSealed(/*final=*/true);
    for (uint32_t i = 0; i < slots_; ++i) {
      if (shm::DescOf(base_, i)->state.load(std::memory_order_acquire) == shm::kFilling) {
        WritePartial(i);
      }
    }
  }
  while (WriteOldestHeldBack()) {
  }  // compressed until kFinishCompressNs, then plain
  shm::Control* ctl = shm::ControlOf(base_);
  stats_.clean_exit = ctl->clean_exit.load(std::memory_order_acquire) != 0;
  stats_.dropped_events = ctl->dropped_events.load(std::memory_order_relaxed);
  stats_.dropped_chunks = ctl->dropped_chunks.load(std::memory_order_relaxed);
  WriteTakenEnd(still_running);
  WriteLosses();
  for (size_t i = adopted_ ? 0 : 1; i < files_.size(); ++i) close(files_[i]);
  files_.resize(files_.empty() || adopted_ ? 0 : 1);
  return stats_;
}

}  // namespace crossfree::analyzer::record
