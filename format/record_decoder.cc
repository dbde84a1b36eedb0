// SPDX-License-Identifier: Apache-2.0
// crossfree trace format, reader side: a chunk's records, plain or from a
// compressed chunk's lanes, decoded and handed to a RecordVisitor
// (DecodeChunk, trace_reader.h). Every length and count is checked against
// the bytes there are before it is used.
#include <algorithm>
#include <cstdio>
#include <array>
#include <cstring>
#include <string_view>

#include "format/chunk_codec.h"
#include "format/chunk_refs.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "format/wire.h"

namespace crossfree::format {
namespace {

std::string Hex(uint64_t v) {
  char buf[24];
  int n = snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return std::string(buf, n);
}


// Layout 3 (docs/trace-format.md 5.3): one varint whose first byte is at
// at[0], its second at at[1] and the rest at at[2], each cursor checked
// against its stream's end before every byte. Returns the varint's length
// and moves the cursors past it; 0, moving none, when a stream runs out
// first or the varint is malformed (as wire::GetVarint: more than 10
// bytes, or bits above the 64th).
__attribute__((always_inline)) inline unsigned GetPlanedVarint(const uint8_t** at,
                                                              const uint8_t* const* end,
                                                              uint64_t* out) {
  const uint8_t* a0 = at[0];
  if (a0 >= end[0]) return 0;
  const uint64_t b0 = *a0;
  if (b0 < 0x80) {
    at[0] = a0 + 1;
    *out = b0;
    return 1;
  }
  const uint8_t* a1 = at[1];
  if (a1 >= end[1]) return 0;
  const uint64_t b1 = *a1;
  uint64_t v = (b0 & 0x7f) | ((b1 & 0x7f) << 7);
  if (b1 < 0x80) {
    at[0] = a0 + 1;
    at[1] = a1 + 1;
    *out = v;
    return 2;
  }
  const uint8_t* a2 = at[2];
  for (int shift = 14; shift < 64; shift += 7) {
    if (a2 >= end[2]) return 0;
    const uint64_t b = *a2++;
    if (shift == 63 && b > 1) return 0;
    v |= (b & 0x7f) << shift;
    if (b < 0x80) {
      const auto length = static_cast<unsigned>(2 + (a2 - at[2]));
      at[0] = a0 + 1;
      at[1] = a1 + 1;
      at[2] = a2;
      *out = v;
      return length;
    }
  }
  return 0;
}

// Moves the cursors of GetPlanedVarint back over a varint of length bytes
// it read (0: nothing was read).
inline void UnreadPlanedVarint(const uint8_t** at, unsigned length) {
  if (length == 0) return;
  at[0] -= 1;
  if (length >= 2) at[1] -= 1;
  if (length > 2) at[2] -= length - 2;
}

constexpr bool ValidAllocFn(uint8_t fn) { return fn <= static_cast<uint8_t>(AllocFn::kMallocHook); }
constexpr bool ValidFreeFn(uint8_t fn) {
  switch (static_cast<FreeFn>(fn)) {
    case FreeFn::kFree:
    case FreeFn::kRealloc:
    case FreeFn::kDelete:
    case FreeFn::kDeleteArray:
    case FreeFn::kMallocHook:
      return true;
  }
  return false;
}

// What a tag says when it is an allocation or a free, looked up once per
// record rather than worked out from its kind and function with a branch
// each. One byte, so that the lookup is one load.
struct EventTag {
  bool event : 1 = false;     // one of the four allocation and free kinds
  bool alloc : 1 = false;
  bool valid_fn : 1 = false;  // its function is a known AllocFn or FreeFn
  uint8_t addr_shift : 3 = 0; // 4 for the aligned kinds (address delta in units of 16)
};
static_assert(sizeof(EventTag) == 1);

constexpr std::array<EventTag, 256> MakeEventTags() {
  std::array<EventTag, 256> tags{};
  for (int tag = 0; tag < 256; ++tag) {
    int kind = tag & 0xf0;
    auto fn = static_cast<uint8_t>(tag & 0x0f);
    EventTag& t = tags[tag];
    t.event = kind == kTagAllocBase || kind == kTagAllocAlignedBase || kind == kTagFreeBase ||
              kind == kTagFreeAlignedBase;
    t.alloc = kind == kTagAllocBase || kind == kTagAllocAlignedBase;
    t.valid_fn = t.alloc ? ValidAllocFn(fn) : ValidFreeFn(fn);
    t.addr_shift = kind == kTagAllocAlignedBase || kind == kTagFreeAlignedBase ? 4 : 0;
  }
  return tags;
}
constexpr std::array<EventTag, 256> kEventTags = MakeEventTags();

// The varint fields of an event record after its tag: timestamp delta,
// stack word (id << 1 | size present), address delta, and the size when
// the word says it is present.
struct EventFields {
  uint64_t ts_delta = 0;
  uint64_t word = 0;
  uint64_t addr_delta = 0;
  uint64_t size = 0;
};

// Nearly every event record has this many bytes or more after its tag in
// the chunk, enough for its (at most four) varints: none of them can then
// run past the end, and they are read without checking for it.
inline constexpr size_t kMaxEventFieldBytes = 4 * wire::kMaxVarintBytes;

// Reads the fields from [p, end); null when one runs past end or is
// malformed. The size is not read after a stack word too large for a stack
// id: the caller reports that first, whatever follows.
const uint8_t* GetEventFields(const uint8_t* p, const uint8_t* end, EventFields* f) {
  if (static_cast<size_t>(end - p) >= kMaxEventFieldBytes) {
    if (!(p = wire::GetVarintRoomy(p, &f->ts_delta)) || !(p = wire::GetVarintRoomy(p, &f->word)) ||
        !(p = wire::GetVarintRoomy(p, &f->addr_delta))) {
      return nullptr;
    }
    if (!(f->word & 1) || (f->word >> 1) > UINT32_MAX) return p;
    return wire::GetVarintRoomy(p, &f->size);
  }
  if (!(p = wire::GetVarint(p, end, &f->ts_delta)) || !(p = wire::GetVarint(p, end, &f->word)) ||
      !(p = wire::GetVarint(p, end, &f->addr_delta))) {
    return nullptr;
  }
  if (!(f->word & 1) || (f->word >> 1) > UINT32_MAX) return p;
  return wire::GetVarint(p, end, &f->size);
}

// An event's fields from layout 3's streams: at and end, the cursors and
// ends of its kind's first stream on (read[i]: each varint's length, 0 for
// none); false when one runs out or is malformed.
__attribute__((always_inline)) inline bool ReadPlanedFields(const uint8_t** at,
                                                            const uint8_t* const* end,
                                                            EventFields* f, unsigned* read) {
  return (read[0] = GetPlanedVarint(at, end, &f->ts_delta)) != 0 &&
         (read[1] = GetPlanedVarint(at + 3, end + 3, &f->word)) != 0 &&
         (read[2] = GetPlanedVarint(at + 6, end + 6, &f->addr_delta)) != 0 &&
         (!(f->word & 1) || (f->word >> 1) > UINT32_MAX ||
          (read[3] = GetPlanedVarint(at + 9, end + 9, &f->size)) != 0);
}

class Decoder {
 public:
  // lanes: a compressed chunk's decompressed lanes (docs/trace-format.md
  // 5.1), null for a plain chunk, whose records are chunk.payload.
  // refs: layout 2's state (docs/trace-format.md 5.2), for lanes of that
  // layout only; reset here.
  Decoder(const Chunk& chunk, RecordVisitor& visitor, std::string* error,
          const ChunkLanes* lanes, ChunkRefs* refs = nullptr)
      : chunk_(chunk), visitor_(visitor), error_(error), lanes_(lanes), refs_(refs) {
    if (refs_ != nullptr) refs_->Reset();
  }

  // Decodes every record of the chunk into the visitor, in order.
  bool Run();

 private:
  // Where a chunk's records are: its payload (plain), lanes (layouts 1
  // and 2) or streams (layout 3).
  enum class Source { kPlain, kLanes, kPlanes };

  // The cursors of the loop over records (RunRecords), held in a local
  // copy over any run of events and stored back to the members (Save)
  // before anything that reads those: another kind of record, Fail(),
  // and the end of the records. As members they were loaded anew for
  // every event, for every field: Event's one-byte fields (op, fn) are
  // stored through character types, which may alias any member as far as
  // the compiler knows, and the loads of each varint's first and second
  // byte waited on them (perf: GetPlanedVarint's hottest lines). A local
  // whose address never leaves the loop cannot be aliased, and stays in
  // registers or a spill slot the compiler schedules. Only those of the
  // chunk's Source are copied; the ends never change.
  struct Cursors {
    const uint8_t* p;  // the next record (lane 0 of a compressed chunk)
    const uint8_t* end;
    const uint8_t* field[wire::kLanes];  // field_, field_end_ (lanes)
    const uint8_t* field_end[wire::kLanes];
    const uint8_t* stream[wire::kStreams];  // stream_, stream_end_ (planes)
    const uint8_t* stream_end[wire::kStreams];
  };
  template <Source S>
  __attribute__((always_inline)) Cursors Load() const;
  template <Source S>
  __attribute__((always_inline)) void Save(const Cursors& c);

  // The steps of Run(), one per kind of record (docs/trace-format.md 6).
  void Begin();  // cursors at the records and lanes, state of 6.1 reset
  // The records from the cursors on; false after Fail().
  template <Source S>
  bool RunRecords();
  // kAlloc: an allocation, else a free (their layout 3 streams differ).
  template <Source S, bool kAlloc>
  __attribute__((always_inline)) bool DecodeEvent(Cursors& c, const uint8_t* start, uint8_t tag,
                                                  EventTag t);
  // An event's fields from layout 1's and 2's lanes (lane_next: the
  // cursors after it); false when one runs out or is malformed.
  __attribute__((always_inline)) static bool ReadLaneFields(const Cursors& c, EventFields* f,
                                                            const uint8_t** lane_next);
  // Fail() after moving layout 3's cursors (planes: the event kind's
  // first stream) back over what the event read, the cursors saved.
  template <Source S>
  __attribute__((always_inline)) bool FailEvent(Cursors& c, const uint8_t* start,
                                                const uint8_t** planes, const unsigned* read,
                                                const char* what, uint64_t value = 0,
                                                bool show = false);
  bool DecodeOther(const uint8_t* start, uint8_t tag);  // any record but the four event kinds
  bool DecodeRealloc(const uint8_t* start, uint8_t fn);
  bool DecodeMetadata(const uint8_t* start, uint8_t tag);  // tags 0x01-0x04
  bool DecodeStackDef(const uint8_t* start);
  bool DecodeModule(const uint8_t* start);
  bool DecodeExtension(const uint8_t* start, uint8_t tag);
  bool CheckEnd();  // lanes used up, event count as the header says

  // Layout 2: an event's address from its lane 3 value v (docs/trace-format.md
  // 5.2), with base and shift those of its delta form. An allocation's is
  // then appended to the chunk's allocations. False with address_error_ set
  // when v names nothing.
  // Inlined into Run(): it runs on every event of a layout 2 chunk; the
  // messages are built out of line.
  __attribute__((always_inline)) bool Address(bool alloc, uint64_t v, uint64_t base,
                                              unsigned shift, uint64_t size, uint64_t* address) {
    if (alloc) {
      if (v == 0) {
        if (!refs_->Reuse(size, address)) return NoneFreed(size);
      } else {
        *address = base + (static_cast<uint64_t>(wire::UnZigZag(v - 1)) << shift);
      }
      refs_->AddAlloc(*address, size);
      return true;
    }
    if ((v & 1) == 0) {
      *address = base + (static_cast<uint64_t>(wire::UnZigZag(v >> 1)) << shift);
      return true;
    }
    if (!refs_->Free(v >> 1, address)) return NoSuchAllocation(v >> 1);
    return true;
  }
  __attribute__((noinline, cold)) bool NoneFreed(uint64_t size) {
    address_error_ = "allocation reuses a freed block of size class " +
                     std::to_string(ChunkRefs::ClassOf(size)) + ", none is free";
    return false;
  }
  __attribute__((noinline, cold)) bool NoSuchAllocation(uint64_t k) {
    address_error_ = "free refers to allocation " + std::to_string(k) + " back, the chunk has " +
                     std::to_string(refs_->allocs());
    return false;
  }

  bool Fail(const uint8_t* at, const char* what, uint64_t value = 0, bool show = false) {
    Flush();  // the records before the malformed one are delivered
    if (lanes_ != nullptr) {
      // Where the record is in the plain stream: the bytes of every lane
      // consumed before it (field cursors move only past whole events).
      uint64_t at_raw = static_cast<uint64_t>(at - lanes_->lane[0].data());
      if (planes_) {
        for (size_t i = 1; i < wire::kStreams; ++i) {
          at_raw += static_cast<uint64_t>(stream_[i] - lanes_->stream[i].data());
        }
      } else {
        for (size_t i = 1; i < wire::kLanes; ++i) {
          at_raw += static_cast<uint64_t>(field_[i] - lanes_->lane[i].data());
        }
      }
      *error_ = "corrupt record in compressed chunk at offset " +
                std::to_string(chunk_.file_offset) + " (byte " + std::to_string(at_raw) +
                " of its records: " + what;
    } else {
      uint64_t offset = chunk_.file_offset + kChunkHeaderBytes + (at - chunk_.payload.data());
      *error_ = "corrupt record at offset " + std::to_string(offset) + " (" + what;
    }
    if (show) *error_ += " " + std::to_string(value);
    *error_ += ")";
    return false;
  }
  // Events are delivered in spans (RecordVisitor::OnEvents): Emit() adds
  // one, Flush() delivers those pending, before any other record and at the
  // end, so the visitor still sees every record in chunk order.
  void Emit(const Event& e) {
    batch_[batched_] = e;
    Commit();
  }
  // The event written in place at batch_[batched_] is complete.
  void Commit() {
    if (++batched_ == kBatch) Flush();
  }
  void Flush() {
    if (batched_ == 0) return;
    visitor_.OnEvents(std::span<const Event>(batch_, batched_));
    batched_ = 0;
  }

  bool Get(uint64_t* v) {
    p_ = wire::GetVarint(p_, end_, v);
    return p_ != nullptr;
  }
  bool GetDelta(uint64_t base, uint64_t* v) {
    uint64_t raw;
    if (!Get(&raw)) return false;
    *v = base + static_cast<uint64_t>(wire::UnZigZag(raw));
    return true;
  }
  bool GetStackId(uint32_t* id) {
    uint64_t v;
    if (!Get(&v)) return false;
    if (v > UINT32_MAX) return false;
    *id = static_cast<uint32_t>(v);
    return true;
  }

  // kTagCentral body in [p_, next); fields a newer writer appends are skipped.
  bool DecodeCentral(const uint8_t* start, uint64_t prev_ts, const uint8_t* next) {
    const uint8_t* saved_end = end_;
    end_ = next;
    CentralEvent c{};
    c.tid = chunk_.tid;
    uint64_t op, cl, stack;
    uint64_t flags = 0;
    bool ok = GetDelta(prev_ts, &c.timestamp_ns) && Get(&op) && Get(&cl) && Get(&c.count) &&
              Get(&stack) && (p_ == next || Get(&flags));
    end_ = saved_end;
    if (!ok) return Fail(start, "truncated central record");
    if (op > kMaxCentralOp) return Fail(start, "unknown central operation", op, true);
    if (cl > UINT32_MAX) return Fail(start, "bad size class", cl, true);
    if (stack > UINT32_MAX) return Fail(start, "bad stack id", stack, true);
    c.op = static_cast<CentralOp>(op);
    c.size_class = static_cast<uint32_t>(cl);
    c.stack_id = static_cast<uint32_t>(stack);
    c.by_tracer = (flags & 1) != 0;
    visitor_.OnCentral(c);
    return true;
  }

  // kTagWindow body in [p_, next).
  bool DecodeWindow(const uint8_t* start, uint64_t prev_ts, const uint8_t* next) {
    const uint8_t* saved_end = end_;
    end_ = next;
    uint64_t ts, state, cause;
    bool ok = GetDelta(prev_ts, &ts) && Get(&state) && Get(&cause);
    end_ = saved_end;
    if (!ok) return Fail(start, "truncated window record");
    if (state > static_cast<uint8_t>(WindowState::kOpen)) {
      return Fail(start, "unknown window state", state, true);
    }
    if (cause > kMaxWindowCause) return Fail(start, "unknown window cause", cause, true);
    visitor_.OnWindow(chunk_.tid, ts, static_cast<WindowState>(state),
                      static_cast<WindowCause>(cause));
    return true;
  }

  // kTagCounts body in [p_, next).
  bool DecodeCounts(const uint8_t* start, const uint8_t* next) {
    const uint8_t* saved_end = end_;
    end_ = next;
    ThreadCounts c;
    bool ok = Get(&c.allocs) && Get(&c.frees) && Get(&c.samples_dropped);
    end_ = saved_end;
    if (!ok) return Fail(start, "truncated counts record");
    if (c.samples_dropped > c.allocs) {
      return Fail(start, "more samples dropped than allocations", c.samples_dropped, true);
    }
    visitor_.OnCounts(chunk_.tid, c);
    return true;
  }

  // kTagLosses body in [p_, next): fixed width (trace-format.md 6.9).
  bool DecodeLosses(const uint8_t* start, const uint8_t* next) {
    if (next - p_ != static_cast<ptrdiff_t>(kLossesBodyBytes) ||
        wire::Load32(p_) != kLossesMagic) {
      return Fail(start, "bad losses record");
    }
    RecordLosses l;
    LoadLossesCounts(p_ + 4, &l);
    visitor_.OnLosses(l);
    return true;
  }

  // kTagTakenEnd body in [p_, next): fixed width (trace-format.md 6.9).
  bool DecodeTakenEnd(const uint8_t* start, const uint8_t* next) {
    RecordTakenEnd e;
    if (next - p_ != static_cast<ptrdiff_t>(kTakenEndBodyBytes) ||
        wire::Load32(p_) != kTakenEndMagic || !LoadTakenEnd(p_ + 4, &e)) {
      return Fail(start, "bad end-taken record");
    }
    visitor_.OnTakenEnd(e);
    return true;
  }

  const Chunk& chunk_;
  RecordVisitor& visitor_;
  std::string* error_;
  const ChunkLanes* lanes_;
  ChunkRefs* refs_;
  // Lanes 1-4: where the next event's field is, and where the lane ends.
  const uint8_t* field_[wire::kLanes] = {};
  const uint8_t* field_end_[wire::kLanes] = {};
  // Layout 3: the same for every stream (wire::StreamOf), which then
  // replace lanes 1-4.
  bool planes_ = false;
  const uint8_t* stream_[wire::kStreams] = {};
  const uint8_t* stream_end_[wire::kStreams] = {};
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  std::string address_error_;
  uint64_t frames_[kMaxStackDepth];
  static constexpr size_t kBatch = 64;  // events per OnEvents() span at most
  Event batch_[kBatch];
  size_t batched_ = 0;
  // Mirror of ChunkWriter's per-chunk prediction table.
  struct Site {
    uint32_t stack_id;
    uint32_t size;  // sizes of 4 GiB and more are never repeated
    uint64_t address;
  };
  Site sites_[ChunkWriter::kSiteSlots];
  // Per-chunk state of docs/trace-format.md 6.1, and the events so far.
  uint64_t prev_ts_ = 0;
  uint64_t prev_addr_ = 0;
  uint64_t events_ = 0;
  uint32_t cpu_ = kUnknownCpu;
};

bool Decoder::Run() {
  Begin();
  // One loop for each source, so that each holds only its own cursors.
  const bool ok = lanes_ == nullptr ? RunRecords<Source::kPlain>()
                  : planes_         ? RunRecords<Source::kPlanes>()
                                    : RunRecords<Source::kLanes>();
  if (!ok) return false;
  Flush();
  return CheckEnd();
}

// The loops over the cursors are unrolled (#pragma GCC unroll) so that
// every index is a constant: the compiler then keeps each cursor as a
// scalar of its own, where an array indexed by a variable stays in memory.
template <Decoder::Source S>
inline Decoder::Cursors Decoder::Load() const {
  Cursors c;
  c.p = p_;
  c.end = end_;
  if constexpr (S == Source::kLanes) {
#pragma GCC unroll 32
    for (size_t i = 1; i < wire::kLanes; ++i) {
      c.field[i] = field_[i];
      c.field_end[i] = field_end_[i];
    }
  } else if constexpr (S == Source::kPlanes) {
#pragma GCC unroll 32
    for (size_t i = 1; i < wire::kStreams; ++i) {
      c.stream[i] = stream_[i];
      c.stream_end[i] = stream_end_[i];
    }
  }
  return c;
}

template <Decoder::Source S>
inline void Decoder::Save(const Cursors& c) {
  p_ = c.p;
  if constexpr (S == Source::kLanes) {
#pragma GCC unroll 32
    for (size_t i = 1; i < wire::kLanes; ++i) field_[i] = c.field[i];
  } else if constexpr (S == Source::kPlanes) {
#pragma GCC unroll 32
    for (size_t i = 1; i < wire::kStreams; ++i) stream_[i] = c.stream[i];
  }
}

template <Decoder::Source S>
bool Decoder::RunRecords() {
  Cursors c = Load<S>();
  while (c.p < c.end) {
    const uint8_t* start = c.p;
    const uint8_t tag = *c.p++;
    // Allocations and frees, nearly every record, are told by the table
    // before the switch over the other kinds.
    const EventTag t = kEventTags[tag];
    if (t.event) {
      if (!(t.alloc ? DecodeEvent<S, true>(c, start, tag, t)
                    : DecodeEvent<S, false>(c, start, tag, t))) {
        return false;
      }
    } else {
      Save<S>(c);
      if (!DecodeOther(start, tag)) return false;
      c.p = p_;  // the other records move only p_
    }
  }
  Save<S>(c);
  return true;
}

void Decoder::Begin() {
  if (lanes_ != nullptr) {
    p_ = lanes_->lane[0].data();
    end_ = p_ + lanes_->lane[0].size();
    for (size_t i = 1; i < wire::kLanes; ++i) {
      field_[i] = lanes_->lane[i].data();
      field_end_[i] = field_[i] + lanes_->lane[i].size();
    }
    planes_ = lanes_->layout == wire::kLayoutPlanes;
    for (size_t i = 1; i < wire::kStreams; ++i) {
      stream_[i] = lanes_->stream[i].data();
      stream_end_[i] = stream_[i] + lanes_->stream[i].size();
    }
  } else {
    p_ = chunk_.payload.data();
    end_ = p_ + chunk_.payload.size();
  }
  prev_ts_ = chunk_.base_timestamp_ns;
  prev_addr_ = 0;
  events_ = 0;
  cpu_ = kUnknownCpu;
  memset(sites_, 0, sizeof(sites_));
}

template <Decoder::Source S>
inline bool Decoder::FailEvent(Cursors& c, const uint8_t* start, const uint8_t** planes,
                               const unsigned* read, const char* what, uint64_t value,
                               bool show) {
  if constexpr (S == Source::kPlanes) {
#pragma GCC unroll 32
    for (size_t i = 0; i < wire::kEventFields; ++i) {
      UnreadPlanedVarint(planes + wire::kPlanes * i, read[i]);
    }
  }
  Save<S>(c);
  return Fail(start, what, value, show);
}

inline bool Decoder::ReadLaneFields(const Cursors& c, EventFields* f, const uint8_t** lane_next) {
  // The fields from their lanes, read without a bounds check each
  // (ChunkLanes: padding follows every lane), then checked against the
  // lanes' ends at once. The cursors move only once the event is decoded
  // (lane_next), so a failure reports the record's start.
  const uint8_t* t_at = wire::GetVarintRoomy(c.field[1], &f->ts_delta);
  const uint8_t* w_at = wire::GetVarintRoomy(c.field[2], &f->word);
  const uint8_t* a_at = wire::GetVarintRoomy(c.field[3], &f->addr_delta);
  if (t_at == nullptr || w_at == nullptr || a_at == nullptr || t_at > c.field_end[1] ||
      w_at > c.field_end[2] || a_at > c.field_end[3]) {
    return false;
  }
  const uint8_t* s_at = c.field[4];
  if ((f->word & 1) && (f->word >> 1) <= UINT32_MAX &&
      ((s_at = wire::GetVarintRoomy(c.field[4], &f->size)) == nullptr || s_at > c.field_end[4])) {
    return false;
  }
  lane_next[1] = t_at;
  lane_next[2] = w_at;
  lane_next[3] = a_at;
  lane_next[4] = s_at;
  return true;
}

template <Decoder::Source S, bool kAlloc>
inline bool Decoder::DecodeEvent(Cursors& c, const uint8_t* start, uint8_t tag, EventTag t) {
  const uint8_t fn = tag & 0x0f;
  if (!t.valid_fn) {
    Save<S>(c);
    return Fail(start, kAlloc ? "unknown allocation function" : "unknown free function", fn,
                true);
  }
  EventFields f;
  const uint8_t* lane_next[wire::kLanes] = {};  // the cursors after this event
  // Layout 3: this kind's streams (consecutive, wire::StreamOf), read in
  // place; the lengths read, to move back over them when the event turns
  // out malformed (a failure reports the record's start).
  constexpr size_t kFirst = wire::StreamOf(0, kAlloc ? 0 : 1, 0);
  const uint8_t** planes = c.stream + kFirst;
  unsigned read[wire::kEventFields] = {};
  if constexpr (S == Source::kPlain) {
    const uint8_t* next = GetEventFields(c.p, c.end, &f);
    if (next == nullptr) return FailEvent<S>(c, start, planes, read, "truncated event");
    c.p = next;
  } else if constexpr (S == Source::kPlanes) {
    if (!ReadPlanedFields(planes, c.stream_end + kFirst, &f, read)) {
      return FailEvent<S>(c, start, planes, read, "truncated event");
    }
  } else if (!ReadLaneFields(c, &f, lane_next)) {
    return FailEvent<S>(c, start, planes, read, "truncated event");
  }
  if ((f.word >> 1) > UINT32_MAX) {
    return FailEvent<S>(c, start, planes, read, "bad stack id", f.word >> 1, true);
  }
  const auto stack_id = static_cast<uint32_t>(f.word >> 1);
  Site& site = sites_[stack_id % ChunkWriter::kSiteSlots];
  const bool hit = site.stack_id == stack_id;
  uint64_t size;
  if (f.word & 1) {
    size = f.size;
  } else if (hit) {
    size = site.size;
  } else {
    return FailEvent<S>(c, start, planes, read,
                        "event repeats the size of a stack not seen in this chunk");
  }
  uint64_t address = 0;
  if (refs_ == nullptr) {
    address = (hit ? site.address : prev_addr_) +
              (static_cast<uint64_t>(wire::UnZigZag(f.addr_delta)) << t.addr_shift);
  } else if (!Address(kAlloc, f.addr_delta, hit ? site.address : prev_addr_, t.addr_shift, size,
                      &address)) {
    return FailEvent<S>(c, start, planes, read, address_error_.c_str());
  }
  if constexpr (S == Source::kLanes) {
#pragma GCC unroll 32
    for (size_t i = 1; i < wire::kLanes; ++i) c.field[i] = lane_next[i];
  }
  site.stack_id = stack_id;
  site.size = static_cast<uint32_t>(size);
  site.address = address;
  const uint64_t ts = prev_ts_ + static_cast<uint64_t>(wire::UnZigZag(f.ts_delta));
  // Straight into the batch, field by field: an Event built on the stack
  // and copied whole was read back with wide loads right after its narrow
  // stores, and the store forwarding failed on every event (perf: two
  // thirds of this function's time on a layout 3 trace).
  Event& e = batch_[batched_];
  e.op = kAlloc ? EventOp::kAlloc : EventOp::kFree;
  e.fn = fn;
  e.from_realloc = false;
  e.tid = chunk_.tid;
  e.timestamp_ns = ts;
  e.address = address;
  e.size = size;
  e.stack_id = stack_id;
  e.cpu = cpu_;
  Commit();
  prev_ts_ = ts;
  prev_addr_ = address;
  ++events_;
  return true;
}

bool Decoder::DecodeRealloc(const uint8_t* start, uint8_t fn) {
  if (!ValidAllocFn(fn)) return Fail(start, "unknown allocation function", fn, true);
  uint64_t ts_free, ts_alloc, old_addr, new_addr, size;
  uint32_t stack;
  if (!GetDelta(prev_ts_, &ts_free) || !GetDelta(ts_free, &ts_alloc) ||
      !GetDelta(prev_addr_, &old_addr) || !GetDelta(old_addr, &new_addr) || !Get(&size)) {
    return Fail(start, "truncated realloc");
  }
  if (!GetStackId(&stack)) return Fail(start, "bad stack id in realloc");
  Event ev{};
  ev.tid = chunk_.tid;
  ev.from_realloc = true;
  ev.stack_id = stack;
  ev.cpu = cpu_;
  ev.op = EventOp::kFree;
  ev.fn = static_cast<uint8_t>(FreeFn::kRealloc);
  ev.timestamp_ns = ts_free;
  ev.address = old_addr;
  ev.size = 0;
  Emit(ev);
  ev.op = EventOp::kAlloc;
  ev.fn = fn;
  ev.timestamp_ns = ts_alloc;
  ev.address = new_addr;
  ev.size = size;
  Emit(ev);
  prev_ts_ = ts_alloc;
  prev_addr_ = new_addr;
  events_ += 2;
  return true;
}

bool Decoder::DecodeOther(const uint8_t* start, uint8_t tag) {
  const uint8_t kind = tag & 0xf0;
  if (kind == kTagReallocBase) return DecodeRealloc(start, tag & 0x0f);
  if (tag == kTagCpu) {
    uint64_t v;
    if (!Get(&v)) return Fail(start, "truncated cpu record");
    if (v > UINT32_MAX) return Fail(start, "bad cpu", v, true);
    cpu_ = static_cast<uint32_t>(v);
    Flush();  // in chunk order; a thread changes CPU rarely
    visitor_.OnCpu(chunk_.tid, cpu_);
    return true;
  }
  Flush();
  if (kind == 0x00) return DecodeMetadata(start, tag);
  if (tag >= kExtensionTagBase) return DecodeExtension(start, tag);
  return Fail(start, ("unknown record tag " + Hex(tag)).c_str());
}

bool Decoder::DecodeMetadata(const uint8_t* start, uint8_t tag) {
  switch (tag) {
    case kTagStackDef:
      return DecodeStackDef(start);
    case kTagThreadName: {
      uint64_t ts, len;
      if (!GetDelta(prev_ts_, &ts) || !Get(&len)) return Fail(start, "truncated thread name");
      if (len > wire::kMaxNameBytes || len > static_cast<uint64_t>(end_ - p_)) {
        return Fail(start, "bad thread name length", len, true);
      }
      std::string_view name(reinterpret_cast<const char*>(p_), len);
      p_ += len;
      prev_ts_ = ts;
      visitor_.OnThreadName(chunk_.tid, ts, name);
      return true;
    }
    case kTagModule:
      return DecodeModule(start);
    case kTagThreadExit: {
      uint64_t ts;
      if (!GetDelta(prev_ts_, &ts)) return Fail(start, "truncated thread exit");
      prev_ts_ = ts;
      visitor_.OnThreadExit(chunk_.tid, ts);
      return true;
    }
    default:
      return Fail(start, ("unknown record tag " + Hex(tag)).c_str());
  }
}

bool Decoder::DecodeStackDef(const uint8_t* start) {
  uint64_t id, depth;
  if (!Get(&id) || !Get(&depth)) return Fail(start, "truncated stack definition");
  if (id == kNoStack || id > UINT32_MAX) return Fail(start, "bad stack id", id, true);
  if (depth > kMaxStackDepth) return Fail(start, "stack depth", depth, true);
  uint64_t prev = 0;
  for (uint64_t i = 0; i < depth; ++i) {
    if (!GetDelta(prev, &frames_[i])) return Fail(start, "truncated stack definition");
    prev = frames_[i];
  }
  visitor_.OnStack(static_cast<uint32_t>(id),
                   std::span<const uint64_t>(frames_, static_cast<size_t>(depth)));
  return true;
}

bool Decoder::DecodeModule(const uint8_t* start) {
  Module m;
  uint64_t len;
  if (!GetDelta(prev_ts_, &m.timestamp_ns) || !Get(&m.load_bias) || !Get(&len)) {
    return Fail(start, "truncated module");
  }
  if (len > wire::kMaxModulePathBytes || len > static_cast<uint64_t>(end_ - p_)) {
    return Fail(start, "bad module path length", len, true);
  }
  m.path.assign(reinterpret_cast<const char*>(p_), len);
  p_ += len;
  if (!Get(&len)) return Fail(start, "truncated module");
  if (len > wire::kMaxBuildIdBytes || len > static_cast<uint64_t>(end_ - p_)) {
    return Fail(start, "bad build id length", len, true);
  }
  m.build_id.assign(p_, p_ + len);
  p_ += len;
  uint64_t count;
  if (!Get(&count)) return Fail(start, "truncated module");
  if (count > wire::kMaxSegments) return Fail(start, "segment count", count, true);
  m.segments.resize(count);
  for (auto& seg : m.segments) {
    if (!GetDelta(m.load_bias, &seg.start) || !Get(&seg.size)) {
      return Fail(start, "truncated module");
    }
  }
  prev_ts_ = m.timestamp_ns;
  visitor_.OnModule(chunk_.tid, m);
  return true;
}

bool Decoder::DecodeExtension(const uint8_t* start, uint8_t tag) {
  uint64_t len;
  if (!Get(&len) || len > static_cast<uint64_t>(end_ - p_)) {
    return Fail(start, "bad extension record length");
  }
  const uint8_t* next = p_ + len;
  if (tag == kTagCentral) {
    if (!DecodeCentral(start, prev_ts_, next)) return false;
  } else if (tag == kTagWindow) {
    if (!DecodeWindow(start, prev_ts_, next)) return false;
  } else if (tag == kTagCounts) {
    if (!DecodeCounts(start, next)) return false;
  } else if (tag == kTagLosses) {
    if (!DecodeLosses(start, next)) return false;
  } else if (tag == kTagTakenEnd) {
    if (!DecodeTakenEnd(start, next)) return false;
  }
  p_ = next;  // unknown tags: a record from a newer writer, skipped on purpose
  return true;
}

bool Decoder::CheckEnd() {
  if (lanes_ != nullptr) {
    const size_t n = planes_ ? wire::kStreams : wire::kLanes;
    const uint8_t* const* at = planes_ ? stream_ : field_;
    const uint8_t* const* at_end = planes_ ? stream_end_ : field_end_;
    for (size_t i = 1; i < n; ++i) {
      if (at[i] != at_end[i]) {
        *error_ = "corrupt chunk at offset " + std::to_string(chunk_.file_offset) + " (lane " +
                  std::to_string(i) + " has " + std::to_string(at_end[i] - at[i]) +
                  " bytes left after the last record)";
        return false;
      }
    }
  }
  if (events_ != chunk_.event_count) {
    *error_ = "corrupt chunk at offset " + std::to_string(chunk_.file_offset) + " (header says " +
              std::to_string(chunk_.event_count) + " events, payload has " +
              std::to_string(events_) + ")";
    return false;
  }
  return true;
}

}  // namespace

bool DecodeChunk(const Chunk& chunk, RecordVisitor& visitor, std::string* error) {
  if (!chunk.compressed) {
    Decoder decoder(chunk, visitor, error, nullptr);
    return decoder.Run();
  }
  // One per thread: the parallel reading workers each decompress into their
  // own buffer, bounded by the largest chunk they decoded.
  thread_local ChunkInflater inflater;
  ChunkLanes lanes;
  std::string what;
  if (!inflater.Inflate(chunk.payload, &lanes, &what)) {
    *error = "corrupt chunk at offset " + std::to_string(chunk.file_offset) + " (" + what + ")";
    return false;
  }
  // Layout 2's state, like the inflater one per thread (fixed size).
  thread_local ChunkRefs refs;
  Decoder decoder(chunk, visitor, error, &lanes,
                  lanes.layout != wire::kLayoutLanes ? &refs : nullptr);
  return decoder.Run();
}

}  // namespace crossfree::format
