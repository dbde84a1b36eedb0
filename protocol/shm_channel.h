// SPDX-License-Identifier: Apache-2.0
// The chunk hand-off between the traced process and `crossfree record`: the
// layout of the shared-memory region (a memfd) in which the tracer fills
// its per-thread chunk buffers and from which `record` writes the trace
// file. The one definition both sides use (tracer/channel.cc, the writer;
// analyzer/record/record_channel.cc, the reader). Not part of the trace
// format: the file `record` writes is an ordinary trace. Design and
// rationale: docs/design.md, "The chunk hand-off".
//
// Ownership: `record` creates, sizes and initialises the region (Control's
// first block; a fork child does that for its own) and is its only reader. One traced image at a time is
// attached: the first claims attached_pid by compare-and-swap, lays out the
// slots and publishes its file header; when it execs, it hands everything
// over and sets exec_handoff, and the next image of the same pid takes the
// region over (exec_handoff 1 -> 0) with a header of its own, which record
// writes to a file of its own. The attached image owns every slot it moves
// from kFree to kFilling until it seals it; `record` owns a slot from kSealed until it
// stores kFree again. Every field the other side reads is an atomic or is
// written before a release store the reader acquires. `record` treats
// everything the tracer wrote as untrusted input (bounds, states, chunk
// checksums), since the traced program can scribble over the mapping.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace crossfree::shm {

inline constexpr uint64_t kChannelMagic = 0x314e484346535243ull;  // "CRSFCHN1" in memory
inline constexpr uint32_t kChannelVersion = 2;

// The environment variable through which `record` passes the region's
// descriptor to the command (decimal fd). The tracer accepts it only if
// /proc/self/fd/<fd> names a memfd called kMemfdName.
inline constexpr const char* kChannelEnv = "CROSSFREE_CHANNEL";
inline constexpr const char* kMemfdName = "crossfree-channel";

// Children's regions. `record` passes one end of an AF_UNIX SOCK_SEQPACKET
// socketpair in kSocketEnv ("<fd>,<record's pid>", both decimal); the
// tracer accepts it only if it is such a socket whose peer (SO_PEERCRED,
// the socketpair's maker) is that pid (and the Control's record_pid). A
// fork child, or a process started without one (vfork, posix_spawn) at
// start-up, sends one
// ChildRegionMessage with exactly two descriptors (SCM_RIGHTS): its
// region's memfd (sealed against shrinking and growing) and a pidfd of
// itself. `record` never writes to the socket: a child waits for
// Control::adoption instead (a futex, at most kAdoptionWaitNs), and sees
// `record` gone when the socket reports its peer closed (POLLHUP).
inline constexpr const char* kSocketEnv = "CROSSFREE_CHANNEL_SOCKET";
inline constexpr uint64_t kChildMessageMagic = 0x31444c4843535243ull;  // "CRSCHLD1"
struct ChildRegionMessage {
  uint64_t magic;    // kChildMessageMagic
  uint32_t version;  // kChannelVersion
  uint32_t pid;      // the child's (record checks it against the pidfd's)
};
// One region offer as sendmsg takes it: the message and its two
// descriptors, built in place by Init (no allocation, no libc call: the
// tracer sends it from a fork child). Init's pointers are into the object
// itself, so it is neither copied nor moved.
struct RegionOffer {
  ChildRegionMessage message;
  struct iovec iov;
  alignas(struct cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  struct msghdr header;

  RegionOffer() = default;
  RegionOffer(const RegionOffer&) = delete;
  RegionOffer& operator=(const RegionOffer&) = delete;

  void Init(uint32_t pid, int memfd, int pidfd) {
    message = ChildRegionMessage{kChildMessageMagic, kChannelVersion, pid};
    iov = {&message, sizeof(message)};
    __builtin_memset(control, 0, sizeof(control));
    header = {};
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof(control);
    struct cmsghdr* cm = CMSG_FIRSTHDR(&header);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(2 * sizeof(int));
    const int fds[2] = {memfd, pidfd};
    __builtin_memcpy(CMSG_DATA(cm), fds, sizeof(fds));
  }
};
inline constexpr uint64_t kAdoptionWaitNs = 1'000'000'000;
inline constexpr uint64_t kStalledAdoptionWaitNs = 20'000'000;
// A child's region: 4 MiB of buffers (32 slots of the default 128 KiB);
// `record` adopts at most kMaxChildRegions at once, regions of at most
// kMaxRegionBytes. A child refused, or not adopted in time, writes its own
// file as a bare tracer does.
inline constexpr size_t kChildBufferBytes = size_t{4} << 20;
inline constexpr uint32_t kMaxChildRegions = 64;

// Region: [Control, 4 KiB][file header area][kMaxSlots descriptors][slot
// buffers, each slot_bytes, page aligned]. The slot count comes from the
// region's size and the tracer's buffer size (CROSSFREE_BUFFER_KB).
inline constexpr size_t kControlBytes = 4096;
inline constexpr size_t kFileHeaderAreaBytes = 8192;  // exe path (4096) + fields fit
inline constexpr uint32_t kMaxSlots = 1024;
inline constexpr size_t kSlotDescBytes = 64;
inline constexpr size_t kDescOffset = kControlBytes + kFileHeaderAreaBytes;
inline constexpr size_t kBuffersOffset = kDescOffset + kMaxSlots * kSlotDescBytes;
// Images (the first and those it exec'd) record writes files for; a later
// image writes its own file.
inline constexpr uint32_t kMaxImages = 64;
// A region must hold at least this many slots, or the tracer does not
// attach (it writes its own file instead): fewer would make the threads
// of any real program wait for each other's slots.
inline constexpr uint32_t kMinSlots = 2;
// `record`'s default region: 48 MiB of buffers (384 slots of the default
// 128 KiB). Pages are touched only as slots are used, lowest first.
inline constexpr size_t kDefaultRegionBytes = kBuffersOffset + (size_t{48} << 20);
inline constexpr size_t kMaxRegionBytes = kBuffersOffset + (size_t{64} << 20);

enum Origin : uint32_t {
  kOriginRecord = 0,     // made by `record` for the command's process
  kOriginForkChild = 1,  // made by a child process (forked or spawned), handed to `record`
};

enum Adoption : uint32_t {
  kOffered = 0,
  kAdopted = 1,
  kAbandoned = 2,
};

enum SlotState : uint32_t {
  kFree = 0,     // record's; the tracer may claim it (CAS to kFilling)
  kFilling = 1,  // the tracer's: a thread's open chunk; committed says how much is whole
  kSealed = 2,   // a finished chunk (header, length and CRC set); record's to write
};

struct alignas(64) Control {
  // Written by `record` before the command starts.
  uint64_t magic;
  uint32_t version;
  // record's pid (a fork child copies it into its region): in record's
  // region the tracer stops waiting for slots once this is not its parent;
  // the socket's peer must be this process.
  uint32_t record_pid;
  uint64_t region_bytes;
  // The attaching tracer image: claimed 0 -> pid, then the layout, then
  // layout_ready = 1 (release). Read by record after an acquire of it.
  std::atomic<uint32_t> attached_pid;
  std::atomic<uint32_t> layout_ready;
  uint32_t slot_count;
  uint32_t slot_bytes;
  uint32_t file_header_bytes;  // the trace's file header, in the header area
  uint32_t origin;             // Origin: who made the region (its maker writes it first)
  // Set by the tracer at its clean end (after its last chunk is sealed;
  // also at the flush before an exec, and cleared again by the image that
  // takes the region over, or when the exec fails): a region whose last
  // image ended without it (killed, crashed) has partly filled slots that
  // `record` seals itself, and its file gets record's end-taken record.
  std::atomic<uint32_t> clean_exit;
  // Seal notifications: the tracer bumps seal_seq after each seal and
  // wakes the drain (FUTEX_WAKE on seal_seq) only when drain_waiting is
  // set, so a busy drain costs no system call per chunk.
  alignas(64) std::atomic<uint32_t> seal_seq;
  std::atomic<uint32_t> drain_waiting;
  std::atomic<uint64_t> next_ticket;  // seal order: a thread's chunks keep theirs
  // Free notifications, the other way: record bumps freed_seq after
  // returning slots and wakes tracer threads waiting for one.
  alignas(64) std::atomic<uint32_t> freed_seq;
  std::atomic<uint32_t> tracer_waiting;
  // Events the tracer recorded but could not hand over (no free slot
  // within CROSSFREE_CHANNEL_WAIT_MS: record fell behind), and in how
  // many chunks. Reported by record.
  alignas(64) std::atomic<uint64_t> dropped_events;
  std::atomic<uint64_t> dropped_chunks;
  // Images after exec. generation: the attached image's number (0 the
  // first), tagged on each slot it claims. headers_published: file headers
  // the images put in the header area (the tracer's release store after the
  // bytes); headers_taken: of those, copied by record (release store once
  // it has copied the area). An image publishes only when the two are equal,
  // so the one header area is never overwritten unread.
  alignas(64) std::atomic<uint32_t> generation;
  std::atomic<uint32_t> exec_handoff;  // 1: the attached image is exec'ing, all handed over
  std::atomic<uint32_t> headers_published;
  std::atomic<uint32_t> headers_taken;
  // A fork child's region only: 0 while offered, kAdopted once `record`
  // drains it (CAS by record, then FUTEX_WAKE), kAbandoned when the child
  // stopped waiting first (CAS by the child; record then drops it).
  alignas(64) std::atomic<uint32_t> adoption;
  // Set by a fork child of the attached image whose offer record did not
  // answer in time, cleared by one that was adopted: while set, the next
  // children wait kStalledAdoptionWaitNs only.
  std::atomic<uint32_t> offers_stalled;
  // Written by `record` only: how many times it has seen a window deadline
  // pass on its own clock (today one, the end of --delay; a region adopted
  // later is given the count so far). A tracer whose window is closed
  // compares it on every hook call with the value it last took (one load
  // of a line nobody else writes), so the first allocation or free of any
  // thread after the delay's end opens the window, where the clock alone
  // is read on one call in 64 of each thread (tracer/recorder.h). The
  // field sits in space both sides zero-filled before, so a tracer or
  // record of the previous layout reads or leaves 0 here: no new version.
  alignas(64) std::atomic<uint32_t> window_nudges;
};
static_assert(sizeof(Control) <= kControlBytes);

struct alignas(64) SlotDesc {
  std::atomic<uint32_t> state;  // SlotState
  uint32_t generation;          // the image that claimed it (Control::generation)
  // The open chunk's whole part: bytes (chunk header included) << 32 |
  // events, release-stored by the owner after every record. One word, so
  // a reader never sees the bytes of one record with the count of another.
  std::atomic<uint64_t> committed;
  // Seal order (Control::next_ticket), set before state becomes kSealed.
  std::atomic<uint64_t> ticket;
  std::atomic<uint32_t> sealed_bytes;  // whole chunk, set before kSealed
  uint32_t reserved1;
};
static_assert(sizeof(SlotDesc) == kSlotDescBytes);

inline constexpr uint64_t PackCommitted(uint32_t bytes, uint32_t events) {
  return (static_cast<uint64_t>(bytes) << 32) | events;
}
inline constexpr uint32_t CommittedBytes(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
inline constexpr uint32_t CommittedEvents(uint64_t word) { return static_cast<uint32_t>(word); }

// Byte offset of slot i's buffer for a layout of slot_bytes per slot.
inline constexpr size_t SlotOffset(uint32_t i, uint32_t slot_bytes) {
  return kBuffersOffset + static_cast<size_t>(i) * slot_bytes;
}

// How many slots of slot_bytes a region of region_bytes holds (at most
// kMaxSlots).
inline constexpr uint32_t SlotCount(size_t region_bytes, uint32_t slot_bytes) {
  if (slot_bytes == 0 || region_bytes <= kBuffersOffset) return 0;
  const size_t n = (region_bytes - kBuffersOffset) / slot_bytes;
  return n > kMaxSlots ? kMaxSlots : static_cast<uint32_t>(n);
}

inline Control* ControlOf(void* base) { return static_cast<Control*>(base); }
inline SlotDesc* DescOf(void* base, uint32_t i) {
  return reinterpret_cast<SlotDesc*>(static_cast<uint8_t*>(base) + kDescOffset +
                                     static_cast<size_t>(i) * kSlotDescBytes);
}
inline uint8_t* FileHeaderOf(void* base) {
  return static_cast<uint8_t*>(base) + kControlBytes;
}

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "the region is shared between processes: its atomics must be address-free");

}  // namespace crossfree::shm
