// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: compressed chunks (see chunk_codec.h; layout in
// docs/trace-format.md 5.1).
#include "format/chunk_codec.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "format/chunk_refs.h"
#include "format/crc32c.h"
#include "format/trace_format.h"
#include "format/trace_writer.h"

namespace crossfree::format {

namespace {

// Lanes of the record stream (docs/trace-format.md 5.1).
enum Lane : size_t { kRecords = 0, kTimes = 1, kStacks = 2, kAddresses = 3, kSizes = 4 };

// Where a layout 2 writer finds, for a free, the chunk's latest
// allocation of its address (docs/trace-format.md 5.2). Direct-mapped, no
// deletion and no clearing between chunks: an entry counts only when it is
// of this chunk (its generation) and within ChunkRefs::kRefWindow; a
// collision just loses a reference, and the free keeps its delta. Small
// (256 KiB) so that it stays in cache: a lookup per free and a store per
// allocation, at random places.
class LiveAllocations {
 public:
  LiveAllocations() : slots_(std::make_unique<Slot[]>(kSlots)) {}
  void NextChunk() {
    if (++generation_ == 0) {  // wrapped: forget every entry rather than trust an old one
      for (uint32_t i = 0; i < kSlots; ++i) slots_[i] = Slot{};
      generation_ = 1;
    }
  }
  void Add(uint64_t address, uint64_t ordinal) {
    slots_[Index(address)] = Slot{address, static_cast<uint32_t>(ordinal), generation_};
  }
  // The ordinal of the chunk's latest allocation of address not freed
  // since, and forgets it; false when none is known. Ordinals are kept
  // modulo 2^32: the caller's window check (ChunkRefs::kRefWindow) works
  // on the difference.
  bool Take(uint64_t address, uint64_t allocs, uint64_t* ordinal) {
    Slot& s = slots_[Index(address)];
    if (s.generation != generation_ || s.address != address) return false;
    s.generation = 0;
    *ordinal = allocs - static_cast<uint32_t>(static_cast<uint32_t>(allocs) - s.ordinal);
    return true;
  }

 private:
  static constexpr uint32_t kBits = 14;
  static constexpr uint32_t kSlots = 1u << kBits;
  struct Slot {
    uint64_t address = 0;
    uint32_t ordinal = 0;
    uint32_t generation = 0;  // 0: empty (NextChunk never uses it)
  };
  static uint32_t Index(uint64_t address) {
    return static_cast<uint32_t>(((address >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - kBits));
  }
  std::unique_ptr<Slot[]> slots_;
  uint32_t generation_ = 1;
};

// Where the splitter writes: lane i from at[i] on, with room for what
// the lane can hold (LaneRoom) and kCopyBytes more, so that no write checks
// for the end and a varint can be moved as one fixed-size block.
constexpr size_t kCopyBytes = 16;
static_assert(kCopyBytes >= wire::kMaxVarintBytes);
struct LaneCursors {
  std::array<uint8_t*, wire::kLanes> at;
  // Layout 3: where each stream goes on (wire::StreamOf; stream 0 is lane
  // 0, at[0]); lanes 1-4 are then not written. Null in layouts 1 and 2.
  uint8_t** planes = nullptr;
};

// The most bytes lane i of a payload of n bytes can take: every lane at
// most the payload, and lane 3 in layout 2 one more byte per event (a
// value one bit or one unit larger than the delta it replaces).
constexpr size_t LaneRoom(size_t lane, size_t n) { return lane == 3 ? 2 * n : n; }

// Layout 3's room per stream for a payload of n bytes: an event takes at
// least 4 bytes (tag, ts, stack word, address), so planes 0 and 1 hold at
// most n / 4 bytes; plane 2 at most its field's lane (LaneRoom); each with
// kCopyBytes of slack for the fixed-size stores.
constexpr size_t PlaneRoom(size_t stream, size_t n) {
  const size_t plane = (stream - 1) % wire::kPlanes;
  const size_t field = (stream - 1) % wire::kKindStreams / wire::kPlanes;
  return (plane < 2 ? n / 4 : LaneRoom(field + 1, n)) + kCopyBytes;
}

// Walks a plain record stream and appends each byte to its lane. Checks
// only what it needs to find record boundaries and, for layout 2, to know
// every event's address and size: the decoder validates the records when
// the chunk is read. With refs (layouts 2 and 3), lane 3 gets the values
// of docs/trace-format.md 5.2 instead of the address varints; in layout 3
// the event fields go to their streams (5.3) instead of lanes 1-4.
class Splitter {
 public:
  // With lanes.planes (layout 3, which needs refs), the event fields go to
  // their streams (docs/trace-format.md 5.3) instead of lanes 1-4.
  Splitter(std::span<const uint8_t> payload, LaneCursors& lanes, ChunkRefs* refs,
           LiveAllocations* live)
      : p_(payload.data()), begin_(payload.data()), end_(payload.data() + payload.size()),
        lanes_(lanes), refs_(refs), live_(live) {
    if (refs_ != nullptr) {
      refs_->Reset();
      live_->NextChunk();
      std::memset(sites_, 0, sizeof(sites_));
    }
  }

  // False with *error when the stream is malformed; *unencodable when it is
  // well formed but an address delta does not fit layout 2's values.
  bool Run(std::string* error, bool* unencodable) {
    *unencodable = false;
    while (p_ < end_) {
      const uint8_t* start = p_;
      const uint8_t tag = *p_++;
      const uint8_t kind = tag & 0xf0;
      if (IsEventKind(kind)) {
        *lanes_.at[kRecords]++ = tag;
        kind_ = kind == kTagAllocBase || kind == kTagAllocAlignedBase ? 0 : 1;
        uint64_t word, delta, size = 0;
        if (!Move(kTimes) || !Move(kStacks, &word)) return Fail(start, "truncated event", error);
        if (refs_ == nullptr) {
          if (!Move(kAddresses) || ((word & 1) != 0 && !Move(kSizes))) {
            return Fail(start, "truncated event", error);
          }
          continue;
        }
        if (!Get(&delta) || ((word & 1) != 0 && !Move(kSizes, &size))) {
          return Fail(start, "truncated event", error);
        }
        const char* what = Reference(kind, word, delta, size, unencodable);
        if (what != nullptr) return Fail(start, what, error);
        if (*unencodable) return true;
        continue;
      }
      if (!Skip(tag)) return Fail(start, "malformed record", error);
      Copy(kRecords, start, p_);
    }
    return true;
  }

 private:
  bool Fail(const uint8_t* at, const char* what, std::string* error) {
    *error = std::string(what) + " at byte " + std::to_string(at - begin_) +
             " of the chunk's records";
    return false;
  }
  bool Get(uint64_t* v) {
    p_ = wire::GetVarint(p_, end_, v);
    return p_ != nullptr;
  }
  void Put(Lane lane, uint64_t v) {
    if (lanes_.planes != nullptr) {
      uint8_t bytes[kCopyBytes] = {};  // ToPlanes reads all of them
      ToPlanes(lane, bytes, static_cast<size_t>(wire::PutVarint(bytes, v) - bytes));
      return;
    }
    lanes_.at[lane] = wire::PutVarint(lanes_.at[lane], v);
  }
  // Layout 3: one varint of the current event's field (its lane) to the
  // three planes of its kind: first byte, second byte, the rest. from has
  // kCopyBytes readable: every store is made, each cursor advanced by what
  // it took (no branch on the length, which varies unpredictably).
  __attribute__((always_inline)) void ToPlanes(Lane lane, const uint8_t* from, size_t length) {
    uint8_t** at = lanes_.planes + wire::StreamOf(lane - 1, kind_, 0);
    *at[0]++ = from[0];
    *at[1] = from[1];
    at[1] += length >= 2;
    std::memcpy(at[2], from + 2, kCopyBytes - 2);
    at[2] += length >= 2 ? length - 2 : 0;
  }
  void Copy(Lane lane, const uint8_t* from, const uint8_t* to) {
    std::memcpy(lanes_.at[lane], from, static_cast<size_t>(to - from));
    lanes_.at[lane] += to - from;
  }
  // Moves one varint from the stream to a lane. Away from the payload's
  // end it stores a whole kCopyBytes and advances by the varint's length:
  // one fixed-size move instead of a memcpy call per field (the lanes have
  // kCopyBytes of slack, LaneCursors).
  // Inlined: it runs for every field of every event (the compiler would
  // otherwise call it, about 100 instructions per event more).
  __attribute__((always_inline)) bool Move(Lane lane, uint64_t* value = nullptr) {
    const uint8_t* start = p_;
    uint64_t v;
    if (!Get(&v)) return false;
    if (lanes_.planes != nullptr) {
      if (end_ - start >= static_cast<ptrdiff_t>(kCopyBytes)) {
        ToPlanes(lane, start, static_cast<size_t>(p_ - start));
      } else {
        uint8_t bytes[kCopyBytes] = {};
        std::memcpy(bytes, start, static_cast<size_t>(p_ - start));
        ToPlanes(lane, bytes, static_cast<size_t>(p_ - start));
      }
    } else if (end_ - start >= static_cast<ptrdiff_t>(kCopyBytes)) {
      std::memcpy(lanes_.at[lane], start, kCopyBytes);
      lanes_.at[lane] += p_ - start;
    } else {
      Copy(lane, start, p_);
    }
    if (value != nullptr) *value = v;
    return true;
  }
  bool Varints(uint64_t n) {
    uint64_t v;
    for (uint64_t i = 0; i < n; ++i) {
      if (!Get(&v)) return false;
    }
    return true;
  }
  bool Bytes(uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) return false;
    p_ += n;
    return true;
  }

  // Layout 2: the event's address as the plain decoder finds it (section
  // 6.2), then its lane 3 value (5.2). Null, or what is malformed.
  const char* Reference(uint8_t kind, uint64_t word, uint64_t delta, uint64_t size,
                        bool* unencodable) {
    if ((word >> 1) > UINT32_MAX) return "bad stack id";
    const auto id = static_cast<uint32_t>(word >> 1);
    Site& site = sites_[id % ChunkWriter::kSiteSlots];
    const bool hit = site.stack_id == id;
    if ((word & 1) == 0) {
      if (!hit) return "size repeat without a prediction";
      size = site.size;
    }
    const unsigned shift = kind == kTagAllocAlignedBase || kind == kTagFreeAlignedBase ? 4 : 0;
    const uint64_t address =
        (hit ? site.address : prev_addr_) + (static_cast<uint64_t>(wire::UnZigZag(delta)) << shift);
    site = Site{id, static_cast<uint32_t>(size), address};
    prev_addr_ = address;
    uint64_t v;
    uint64_t at;
    if (kind == kTagAllocBase || kind == kTagAllocAlignedBase) {
      if (refs_->Peek(size, &at) && at == address) {
        refs_->Reuse(size, &at);
        v = 0;
      } else {
        if (delta == UINT64_MAX) *unencodable = true;
        v = delta + 1;
      }
      live_->Add(address, refs_->allocs());
      refs_->AddAlloc(address, size);
    } else {
      uint64_t ordinal;
      const bool named = live_->Take(address, refs_->allocs(), &ordinal) &&
                         refs_->allocs() - ordinal <= ChunkRefs::kRefWindow;
      if (named) {
        const uint64_t k = refs_->allocs() - ordinal;
        refs_->Free(k, &at);  // at == address: the table holds what AddAlloc was given
        v = 2 * k + 1;
      } else {
        if (delta >> 63) *unencodable = true;
        v = delta << 1;
      }
    }
    Put(kAddresses, v);
    return nullptr;
  }

  // Steps over the body of a record other than an event (its tag read).
  bool Skip(uint8_t tag) {
    uint64_t n;
    if ((tag & 0xf0) == kTagReallocBase) {
      // Layout 2 follows prev_addr through it (docs/trace-format.md 6.3).
      uint64_t old_delta, new_delta;
      if (!Varints(2) || !Get(&old_delta) || !Get(&new_delta) || !Varints(2)) return false;
      prev_addr_ += static_cast<uint64_t>(wire::UnZigZag(old_delta)) +
                    static_cast<uint64_t>(wire::UnZigZag(new_delta));
      return true;
    }
    if (tag >= kExtensionTagBase) return Get(&n) && Bytes(n);
    switch (tag) {
      case kTagStackDef:
        return Varints(1) && Get(&n) && n <= kMaxStackDepth && Varints(n);
      case kTagThreadName:
        return Varints(1) && Get(&n) && Bytes(n);
      case kTagModule:
        if (!Varints(2) || !Get(&n) || !Bytes(n) || !Get(&n) || !Bytes(n) || !Get(&n)) {
          return false;
        }
        return n <= wire::kMaxSegments && Varints(2 * n);
      case kTagThreadExit:
      case kTagCpu:
        return Varints(1);
      default:
        return false;
    }
  }

  const uint8_t* p_;
  const uint8_t* begin_;
  const uint8_t* end_;
  LaneCursors& lanes_;
  ChunkRefs* refs_;
  LiveAllocations* live_;
  unsigned kind_ = 0;  // the current event's: 0 allocation, 1 free
  // Mirror of ChunkWriter's prediction table and prev_addr (section 6.1).
  struct Site {
    uint32_t stack_id;
    uint32_t size;
    uint64_t address;
  };
  Site sites_[ChunkWriter::kSiteSlots];
  uint64_t prev_addr_ = 0;
};


// The most bytes the frame of Encode can take: zstd's frame header, then
// per piece its bytes stored raw in blocks of at most ZSTD_BLOCKSIZE_MAX,
// each with a block header (an empty piece still ends a block when it is
// the last), which ZSTD_compressBound of each piece covers with margin.
size_t FrameBound(const std::array<std::span<const uint8_t>, wire::kStreams>& pieces,
                  size_t count) {
  // ZSTD_FRAMEHEADERSIZE_MAX, which zstd.h declares only for static
  // linking: the largest frame header of format version 1.
  constexpr size_t kFrameHeaderMax = 18;
  size_t bound = kFrameHeaderMax;
  for (size_t i = 0; i < count; ++i) bound += ZSTD_compressBound(pieces[i].size());
  return bound;
}

// Encode's answer when compressing does not pay or zstd fails: the plain
// chunk as it is (it was checked whole, so it is worth writing).
bool KeepPlain(const uint8_t* chunk, size_t bytes, std::vector<uint8_t>& out) {
  out.assign(chunk, chunk + bytes);
  return true;
}

// Encode's first step: the chunk is a whole, plain, undamaged one (magic,
// length word, checksum); its payload's length into *payload.
bool CheckPlainChunk(const uint8_t* chunk, size_t bytes, uint32_t* payload,
                     std::string* error) {
  if (bytes < kChunkHeaderBytes || bytes > kMaxChunkBytes ||
      wire::Load32(chunk + wire::kChkMagic) != kChunkMagic) {
    *error = "not a plain chunk (bad magic or size " + std::to_string(bytes) + ")";
    return false;
  }
  const uint32_t word = wire::Load32(chunk + wire::kChkLength);
  *payload = word & 0xffffff;
  if (wire::PackLength(*payload) != word || kChunkHeaderBytes + *payload != bytes) {
    *error = "chunk length word does not match its " + std::to_string(bytes) + " bytes";
    return false;
  }
  if (Crc32c(chunk + wire::kChkCrcStart, bytes - wire::kChkCrcStart) !=
      wire::Load32(chunk + wire::kChkCrc)) {
    *error = "chunk checksum mismatch";
    return false;
  }
  return true;
}

// Compresses the count pieces (raw bytes in all) into one zstd frame at
// dst. Each lane or stream ends a zstd block (ZSTD_e_flush) so that each
// gets its own literal statistics: one block over all lanes shares one
// Huffman table between timestamps, addresses and sizes, whose bytes are
// distributed differently (on the deep-stack workload 2.91 -> 2.77
// bytes/event at level 1 in layout 2). Still one frame: readers see no
// difference. False when zstd fails or stalls: the chunk goes plain.
bool CompressPieces(ZSTD_CCtx* cctx, int level,
                    const std::array<std::span<const uint8_t>, wire::kStreams>& pieces,
                    size_t count, size_t raw, ZSTD_outBuffer* dst) {
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);  // the chunk's CRC covers the frame
  ZSTD_CCtx_setPledgedSrcSize(cctx, raw);
  for (size_t i = 0; i < count; ++i) {
    const bool last = i + 1 == count;
    if (pieces[i].empty() && !last) continue;
    ZSTD_inBuffer src{pieces[i].data(), pieces[i].size(), 0};
    const ZSTD_EndDirective end = last ? ZSTD_e_end : ZSTD_e_flush;
    for (;;) {
      const size_t in_before = src.pos, out_before = dst->pos;
      const size_t left = ZSTD_compressStream2(cctx, dst, &src, end);
      if (ZSTD_isError(left)) return false;
      if (left == 0) break;
      // zstd stops only when it needs more room; FrameBound gives it all
      // it can need, so a call that takes no input and writes nothing is
      // a broken promise. Never wait on it: the chunk goes plain.
      if (src.pos == in_before && dst->pos == out_before) return false;
    }
  }
  return true;
}

// Encode's last step: the compressed chunk's header (from the plain
// chunk's, with the compressed magic and length), its lanes header, and
// its checksum, around the frame already at out's end (total bytes).
void SealCompressedChunk(const uint8_t* chunk, uint32_t payload, uint8_t layout,
                         const std::array<std::span<const uint8_t>, wire::kStreams>& pieces,
                         size_t count, size_t total, std::vector<uint8_t>& out) {
  out.resize(total);
  uint8_t* b = out.data();
  std::memcpy(b, chunk, kChunkHeaderBytes);
  wire::Store32(b + wire::kChkMagic, kCompressedChunkMagic);
  wire::Store32(b + wire::kChkLength,
                wire::PackLength(static_cast<uint32_t>(total - kChunkHeaderBytes)));
  uint8_t* z = b + kChunkHeaderBytes;
  wire::Store32(z + wire::kZRawLength, payload);  // the plain stream's; the frame declares its own
  z[wire::kZLayout] = layout;
  static_assert(wire::kZLaneLengths == wire::kZStreamLengths);
  for (size_t i = 0; i + 1 < count; ++i) {
    wire::Store32(z + wire::kZLaneLengths + 4 * i, static_cast<uint32_t>(pieces[i].size()));
  }
  // The magic is inside the checksum of a compressed chunk (5): a damaged
  // magic byte that turns one kind into the other is a mismatch.
  uint32_t crc = Crc32c(b + wire::kChkMagic, 4);
  crc = Crc32c(b + wire::kChkCrcStart, total - wire::kChkCrcStart, crc);
  wire::Store32(b + wire::kChkCrc, crc);
}
}  // namespace

// Layout 2's writer state, kept from chunk to chunk for its buffers.
struct ChunkCompressor::RefState {
  ChunkRefs refs;
  LiveAllocations live;
};

ChunkCompressor::ChunkCompressor(int level, uint8_t layout)
    : cctx_(ZSTD_createCCtx()), level_(level), layout_(layout),
      refs_(std::make_unique<RefState>()) {}

ChunkCompressor::~ChunkCompressor() { ZSTD_freeCCtx(cctx_); }

bool ChunkCompressor::Compress(const uint8_t* chunk, size_t bytes, std::vector<uint8_t>& out,
                               std::string* error) {
  // Layout 3's 16 or so streams each pay for a zstd block and its literal
  // table (a few dozen bytes), so a small chunk is smaller in layout 2 (the
  // chunks of 235 events of tests/format/compressed_cli_test.sh: 2,583
  // bytes against 4,998). The layout is picked by size, not by making both
  // and keeping the smaller: gRPC's sync server, whose short-lived threads
  // seal most chunks small, had record compress nearly every chunk twice.
  // On its 1,059 chunks (1.5 M events) one layout by size took 0.07 s of
  // CPU against 0.13 s for the better of both, for 0.014% more bytes; on the
  // deep-stack and rpc-bench workloads nothing changed (docs/results/record.md).
  const bool small = layout_ == wire::kLayoutPlanes && bytes < kChunkHeaderBytes + kSmallRecords;
  return Encode(chunk, bytes, small ? wire::kLayoutRefs : layout_, out, error);
}

bool ChunkCompressor::Encode(const uint8_t* chunk, size_t bytes, uint8_t layout,
                             std::vector<uint8_t>& out, std::string* error) {
  if (cctx_ == nullptr) {
    *error = "cannot create a zstd compression context";
    return false;
  }
  uint32_t payload = 0;
  if (!CheckPlainChunk(chunk, bytes, &payload, error)) return false;
  // Layout 3 or 2 (docs/trace-format.md 5.3, 5.2), or layout 1 for the
  // rare chunk those cannot hold: an address delta of 2^63 or more, or
  // lanes that grew past the raw limit.
  // One buffer: lane i from start[i], then the lanes moved together.
  std::array<size_t, wire::kLanes> start;
  size_t room = 0;
  for (size_t i = 0; i < wire::kLanes; ++i) {
    start[i] = room;
    room += LaneRoom(i, payload) + kCopyBytes;
  }
  if (joined_.size() < room) joined_.resize(room);
  // Layout 3's streams 1 to kStreams - 1, one after the other in planes_;
  // allocated, not cleared: only what is written is touched.
  std::array<uint8_t*, wire::kStreams> plane_start{}, plane_at{};
  if (layout == wire::kLayoutPlanes) {
    size_t total = 0;
    for (size_t i = 1; i < wire::kStreams; ++i) total += PlaneRoom(i, payload);
    if (planes_room_ < total) {
      // At least doubled: chunks of one size differ by a few bytes, and a
      // new buffer per slightly larger chunk cost `record` a tenth of its
      // CPU in malloc and page faults.
      planes_room_ = std::max(total, 2 * planes_room_);
      planes_ = std::make_unique_for_overwrite<uint8_t[]>(planes_room_);
    }
    uint8_t* next = planes_.get();
    for (size_t i = 1; i < wire::kStreams; ++i) {
      plane_start[i] = next;
      next += PlaneRoom(i, payload);
    }
  }
  // What the frame holds, in order: the lanes, or in layout 3 lane 0 and
  // the planes' streams.
  std::array<std::span<const uint8_t>, wire::kStreams> pieces;
  size_t count = 0;
  size_t raw = 0;
  for (;;) {
    LaneCursors cursors;
    for (size_t i = 0; i < wire::kLanes; ++i) cursors.at[i] = joined_.data() + start[i];
    const bool planes = layout == wire::kLayoutPlanes;
    if (planes) {
      plane_at = plane_start;
      cursors.planes = plane_at.data();
    }
    const bool refs = layout == wire::kLayoutRefs || planes;
    Splitter splitter(std::span<const uint8_t>(chunk + kChunkHeaderBytes, payload), cursors,
                      refs ? &refs_->refs : nullptr, refs ? &refs_->live : nullptr);
    bool unencodable = false;
    if (!splitter.Run(error, &unencodable)) return false;
    raw = 0;
    count = 0;
    for (size_t i = 0; i < wire::kLanes; ++i) {
      const auto n = static_cast<size_t>(cursors.at[i] - (joined_.data() + start[i]));
      std::memmove(joined_.data() + raw, joined_.data() + start[i], n);
      pieces[count++] = std::span<const uint8_t>(joined_.data() + raw, n);
      raw += n;
    }
    if (planes) {  // lane 0, then the streams; lanes 1-4 are empty
      count = 1;
      for (size_t i = 1; i < wire::kStreams; ++i) {
        const size_t n = static_cast<size_t>(plane_at[i] - plane_start[i]);
        pieces[count++] = std::span<const uint8_t>(plane_start[i], n);
        raw += n;
      }
    }
    if (!refs || (!unencodable && raw <= kMaxRawPayloadBytes)) break;
    layout = wire::kLayoutLanes;
  }
  const size_t head = kChunkHeaderBytes + wire::FrameOffset(layout);
  // Room for the frame as it is written: each lane or stream ends a zstd
  // block of its own (CompressPieces), so the worst case is every piece stored
  // raw, each with its block headers. ZSTD_compressBound of the whole
  // payload assumes one run of 128 KiB blocks; 24 small incompressible
  // streams need about 24 block headers more than its margin for a small
  // payload, and zstd then waits, forever, for room that never comes
  // (KUDU-like servers' short-lived threads seal such chunks).
  out.resize(head + FrameBound(pieces, count));
  ZSTD_outBuffer dst{out.data() + head, out.size() - head, 0};
  if (!CompressPieces(cctx_, level_, pieces, count, raw, &dst)) {
    return KeepPlain(chunk, bytes, out);
  }
  const size_t frame = dst.pos;
  const size_t total = head + frame;
  if (total >= bytes) return KeepPlain(chunk, bytes, out);  // not worth it
  SealCompressedChunk(chunk, payload, layout, pieces, count, total, out);
  return true;
}

bool CompressChunk(const uint8_t* chunk, size_t bytes, std::vector<uint8_t>& out,
                   std::string* error, int level) {
  thread_local std::map<int, std::unique_ptr<ChunkCompressor>> compressors;
  std::unique_ptr<ChunkCompressor>& c = compressors[level];
  if (c == nullptr) c = std::make_unique<ChunkCompressor>(level);
  return c->Compress(chunk, bytes, out, error);
}

bool CheckCompressedPayload(std::span<const uint8_t> payload, uint32_t* raw_length,
                            std::string* what, uint32_t* content_length) {
  if (payload.size() < wire::kZFrame) {
    *what = "compressed chunk shorter than its lanes header";
    return false;
  }
  const uint8_t* z = payload.data();
  const uint32_t raw = wire::Load32(z + wire::kZRawLength);
  if (raw > kMaxRawPayloadBytes) {
    *what = "compressed chunk declares " + std::to_string(raw) + " bytes, above the " +
            std::to_string(kMaxRawPayloadBytes) + "-byte limit";
    return false;
  }
  const uint8_t layout = z[wire::kZLayout];
  if (layout != wire::kLayoutLanes && layout != wire::kLayoutRefs &&
      layout != wire::kLayoutPlanes) {
    *what = "unknown compressed chunk layout " + std::to_string(layout);
    return false;
  }
  const size_t offset = wire::FrameOffset(layout);
  if (payload.size() < offset) {
    *what = "compressed chunk shorter than its streams header";
    return false;
  }
  const uint8_t* frame = z + offset;
  const size_t frame_bytes = payload.size() - offset;
  const unsigned long long declared = ZSTD_getFrameContentSize(frame, frame_bytes);
  if (declared == ZSTD_CONTENTSIZE_ERROR) {
    *what = "compressed chunk has no valid zstd frame header";
    return false;
  }
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN) {
    *what = "compressed chunk's zstd frame does not declare its size";
    return false;
  }
  // Layout 1's lanes are the plain stream's bytes, so the frame holds
  // exactly raw_length; layout 2's lane 3 differs, and the frame declares
  // the lanes' length itself, within the same limit (docs/trace-format.md 5.2).
  if (declared > kMaxRawPayloadBytes) {
    *what = "compressed chunk's zstd frame declares " + std::to_string(declared) +
            " bytes, above the " + std::to_string(kMaxRawPayloadBytes) + "-byte limit";
    return false;
  }
  if (layout == wire::kLayoutLanes && declared != raw) {
    *what = "compressed chunk's zstd frame declares " + std::to_string(declared) +
            " bytes, its header " + std::to_string(raw);
    return false;
  }
  const size_t pieces = layout == wire::kLayoutPlanes ? wire::kStreams : wire::kLanes;
  uint64_t lanes = 0;
  for (size_t i = 0; i + 1 < pieces; ++i) lanes += wire::Load32(z + wire::kZLaneLengths + 4 * i);
  if (lanes > declared) {
    *what = std::string("compressed chunk's ") +
            (layout == wire::kLayoutPlanes ? "streams" : "lanes") + " (" +
            std::to_string(lanes) + " bytes) exceed its " + std::to_string(declared) + " bytes";
    return false;
  }
  const size_t framed = ZSTD_findFrameCompressedSize(frame, frame_bytes);
  if (ZSTD_isError(framed) || framed != frame_bytes) {
    *what = "compressed chunk's zstd frame does not end at the chunk's end";
    return false;
  }
  *raw_length = raw;
  if (content_length != nullptr) *content_length = static_cast<uint32_t>(declared);
  return true;
}

ChunkInflater::ChunkInflater() : dctx_(ZSTD_createDCtx()) {
  // Frames made from a chunk never need a window above the chunk limit;
  // refuse larger ones outright rather than let a crafted one ask for it.
  if (dctx_ != nullptr) ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, 24);
}

ChunkInflater::~ChunkInflater() { ZSTD_freeDCtx(dctx_); }

bool ChunkInflater::Inflate(std::span<const uint8_t> payload, ChunkLanes* lanes,
                            std::string* what) {
  uint32_t plain = 0, raw = 0;  // raw: the lanes' bytes, what the frame holds
  if (!CheckCompressedPayload(payload, &plain, what, &raw)) return false;
  if (dctx_ == nullptr) {
    *what = "cannot create a zstd decompression context";
    return false;
  }
  // Grown, never shrunk: the largest raw length so far (a chunk at most),
  // and the padding ChunkLanes promises.
  if (buffer_.size() < raw + wire::kMaxVarintBytes) buffer_.resize(raw + wire::kMaxVarintBytes);
  const uint8_t layout = payload[wire::kZLayout];
  const size_t offset = wire::FrameOffset(layout);
  const size_t n = ZSTD_decompressDCtx(dctx_, buffer_.data(), raw, payload.data() + offset,
                                       payload.size() - offset);
  if (ZSTD_isError(n)) {
    *what = std::string("zstd: ") + ZSTD_getErrorName(n);
    return false;
  }
  if (n != raw) {
    *what = "compressed chunk decompressed to " + std::to_string(n) + " bytes, not " +
            std::to_string(raw);
    return false;
  }
  // Layouts 1 and 2 fill lane[], layout 3 stream[] (and lane[0], its
  // stream 0); the rest stay empty.
  const bool planes = layout == wire::kLayoutPlanes;
  std::span<const uint8_t>* piece = planes ? lanes->stream.data() : lanes->lane.data();
  const size_t pieces = planes ? wire::kStreams : wire::kLanes;
  lanes->lane = {};
  lanes->stream = {};
  const uint8_t* p = buffer_.data();
  size_t left = raw;
  for (size_t i = 0; i < pieces; ++i) {
    const size_t len =
        i + 1 < pieces ? wire::Load32(payload.data() + wire::kZLaneLengths + 4 * i) : left;
    piece[i] = std::span<const uint8_t>(p, len);  // CheckCompressedPayload: sum <= raw
    p += len;
    left -= len;
  }
  if (planes) lanes->lane[0] = lanes->stream[0];
  lanes->layout = layout;
  return true;
}

}  // namespace crossfree::format
