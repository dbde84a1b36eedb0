// SPDX-License-Identifier: Apache-2.0
// crossfree trace format, writer side: encodes the file header and chunks into
// caller-provided memory. Used inside the preload tracer, so nothing here may
// allocate, lock, touch stdio or call a hooked function. The byte layout is
// specified in docs/trace-format.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/trace_format.h"

namespace crossfree::format {

// Encodes the file header into buf. Returns the bytes written, or 0 if cap is
// too small. exe_path need not be NUL-terminated.
size_t EncodeFileHeader(const HeaderFields& fields, const char* exe_path,
                        size_t exe_path_len, uint8_t* buf, size_t cap);

// Encodes the totals chunk (kTagTotals alone, kTotalsChunkBytes long) into
// buf. Returns the bytes written, or 0 if cap is too small.
size_t EncodeTotalsChunk(const TraceTotals& totals, uint32_t tid, uint32_t sequence,
                         uint64_t timestamp_ns, uint8_t* buf, size_t cap);

// Encodes the losses chunk (kTagLosses alone, kLossesChunkBytes long) into
// buf, for the traced process pid (its tid field). Returns the bytes
// written, or 0 if cap is too small. Written by `crossfree record` only.
size_t EncodeLossesChunk(const RecordLosses& losses, uint32_t pid, uint64_t timestamp_ns,
                         uint8_t* buf, size_t cap);
// Encodes the end-taken chunk (kTagTakenEnd alone, kTakenEndChunkBytes
// long) into buf. Returns the bytes written, or 0 if cap is too small.
size_t EncodeTakenEndChunk(const RecordTakenEnd& end, uint32_t pid, uint64_t timestamp_ns,
                           uint8_t* buf, size_t cap);

// A module as written by the tracer (borrowed pointers, nothing owned).
struct ModuleView {
  uint64_t timestamp_ns;
  uint64_t load_bias;  // dl_phdr_info::dlpi_addr
  const char* path;
  uint32_t path_len;
  const uint8_t* build_id;  // NT_GNU_BUILD_ID descriptor, may be empty
  uint32_t build_id_len;
  const ModuleSegment* segments;
  uint32_t segment_count;
};

// Encodes one chunk into a buffer the caller owns (typically a thread's
// private buffer). Not thread-safe: one writer per buffer. Allocation-free;
// the object itself is about 4 KiB (the per-chunk prediction table), so
// keep it in the thread's mmap'd state rather than on a small stack.
//
// Usage: Begin(); Append*() until one returns false (no room, nothing was
// written); Finish() to seal header and checksum; write the returned bytes;
// Begin() again and retry the record. Every record fits in an empty chunk of
// kMinChunkCapacity bytes, so a retry after Begin() always succeeds.
// capacity must be at least kMinChunkCapacity; more than kMaxChunkBytes is
// used only up to kMaxChunkBytes. Over-long inputs are clamped, never
// refused: exe path and module path to 4096 bytes, thread name to 256, build
// id to 64, segments to 32, stack depth to kMaxStackDepth.
//
// Timestamps: the hook stamps a free before calling the real free and an
// allocation after the real allocation returns (docs/trace-format.md,
// section 7, "Timestamps and ordering"); records are appended in the order the thread made the calls.
class ChunkWriter {
 public:
  static constexpr size_t kMinChunkCapacity = 8192;
  // Slots of the per-chunk size/address prediction table (part of the
  // format: the reader keeps the same table).
  static constexpr uint32_t kSiteSlots = 256;

  // reserve_counts keeps the last kCountsReserve bytes for AppendCounts
  // (sampled traces): no other record uses them.
  ChunkWriter(uint8_t* buf, size_t capacity, bool reserve_counts = false);

  void Begin(uint32_t tid, uint32_t sequence, uint64_t base_timestamp_ns);

  // cpu: the CPU the event ran on, read where its timestamp is read
  // (kUnknownCpu when unknown). A cpu record (kTagCpu) goes before the
  // event, in the same all-or-nothing append, only when cpu differs from
  // the chunk's cpu state (docs/trace-format.md 6.8).
  bool AppendAlloc(AllocFn fn, uint64_t ts_ns, uint64_t address, uint64_t size,
                   uint32_t stack_id, uint32_t cpu = kUnknownCpu);
  // size is the size passed to a sized delete, or 0 when unknown.
  bool AppendFree(FreeFn fn, uint64_t ts_ns, uint64_t address, uint64_t size,
                  uint32_t stack_id, uint32_t cpu = kUnknownCpu);
  // A realloc that moved (or shrank to a new block): the free half is stamped
  // ts_free (before the real call), the alloc half ts_alloc (after it); both
  // halves take cpu, read after the real call.
  bool AppendRealloc(AllocFn fn, uint64_t ts_free_ns, uint64_t ts_alloc_ns,
                     uint64_t old_address, uint64_t new_address, uint64_t size,
                     uint32_t stack_id, uint32_t cpu = kUnknownCpu);
  bool AppendStack(uint32_t stack_id, const uint64_t* frames, uint32_t depth);
  bool AppendThreadName(uint64_t ts_ns, const char* name, size_t len);
  bool AppendModule(const ModuleView& module);
  bool AppendThreadExit(uint64_t ts_ns);
  // A central free-list transfer (extension record kTagCentral). count is
  // the objects moved (0 when unknown). Does not change the delta state that
  // other records use, so readers that skip it decode the rest unchanged;
  // not an allocation/free event (not in event_count()).
  // by_tracer marks a call the tracer's own bookkeeping caused (recorded
  // later, without a stack; docs/guide/central.md).
  bool AppendCentral(CentralOp op, uint64_t ts_ns, uint32_t size_class, uint64_t count,
                     uint32_t stack_id, bool by_tracer = false);

  // A recording window opened or closed (kTagWindow). Like every extension
  // record it leaves the delta state alone.
  bool AppendWindow(WindowState state, WindowCause cause, uint64_t ts_ns);

  // This thread's allocation/free counts since its previous counts record
  // (kTagCounts, sampled traces). With reserve_counts it always fits, even
  // in a chunk that is full of events; at most one per chunk, last.
  bool AppendCounts(const ThreadCounts& counts);
  static constexpr size_t kCountsReserve = 32;

  // Seals the chunk begun by Begin() (length, event count, checksum; an
  // empty chunk is valid). Returns its total size in bytes, header
  // included; the bytes start at the buffer's beginning.
  size_t Finish();

  bool empty() const { return records_ == 0; }
  size_t size() const { return pos_; }
  uint32_t event_count() const { return events_; }
  // Of event_count(), the allocations (a realloc counts one of each).
  uint32_t alloc_count() const { return allocs_; }

 private:
  // Bytes free for records other than the counts record.
  size_t Room() const { return pos_ < capacity_ ? capacity_ - pos_ : 0; }
  // Appends an extension record (docs/trace-format.md): tag, body length,
  // then the body, at most kMaxBody bytes, that write_body(uint8_t* at)
  // writes and returns the end of. False (nothing written) when 2 +
  // kMaxBody exceed `room`, the bytes the record may use.
  template <size_t kMaxBody, typename WriteBody>
  bool AppendExtension(uint8_t tag, size_t room, WriteBody&& write_body);

  uint8_t* buf_;
  size_t capacity_;  // the buffer's size less the counts reserve
  size_t reserve_;
  size_t pos_ = 0;
  uint32_t records_ = 0;
  uint32_t events_ = 0;
  uint32_t allocs_ = 0;
  uint64_t prev_ts_ = 0;
  uint64_t prev_address_ = 0;
  uint32_t cpu_ = kUnknownCpu;  // the chunk's cpu state (last cpu record)
  // Per-chunk prediction state for events, indexed by stack id modulo
  // kSiteSlots (docs/trace-format.md, "Event records"). Reset by Begin().
  struct Site {
    uint32_t stack_id;
    uint32_t size;  // sizes of 4 GiB and more are never repeated
    uint64_t address;
  };
  Site sites_[kSiteSlots];
  bool AppendEvent(uint8_t kind_plain, uint8_t kind_aligned, uint8_t fn, uint64_t ts_ns,
                   uint64_t address, uint64_t size, uint32_t stack_id, uint32_t cpu);
  // Writes a cpu record for cpu at p and makes it the state; the caller
  // found it differs from the state and checked room for it.
  uint8_t* PutCpu(uint8_t* p, uint32_t cpu);
};

}  // namespace crossfree::format
