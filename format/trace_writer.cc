// SPDX-License-Identifier: Apache-2.0
// crossfree trace format, writer side. Linked into the preload tracer: no
// allocation, no stdio, no libstdc++ runtime, no exceptions (built with
// -fno-exceptions -fno-rtti). Layout: docs/trace-format.md, format/wire.h.
#include "format/trace_writer.h"

#include <initializer_list>

#include "format/crc32c.h"
#include "format/wire.h"

namespace crossfree::format {

using wire::PutVarint;
using wire::ZigZag;

namespace {

// Upper bounds of one record's encoded size, checked before writing so a
// record is either written whole or not at all.
constexpr size_t kMaxVarint = 10;
// An event may be preceded by a cpu record (tag and a varint of at most 32
// bits), written in the same append.
constexpr size_t kMaxCpuRecordBytes = 1 + 5;
constexpr size_t kMaxEventBytes = kMaxCpuRecordBytes + 1 + 4 * kMaxVarint;
constexpr size_t kMaxReallocBytes = kMaxCpuRecordBytes + 1 + 6 * kMaxVarint;

template <typename T>
constexpr T Min(T a, T b) {
  return a < b ? a : b;
}

int64_t Delta(uint64_t now, uint64_t prev) { return static_cast<int64_t>(now - prev); }

}  // namespace

size_t EncodeFileHeader(const HeaderFields& fields, const char* exe_path,
                        size_t exe_path_len, uint8_t* buf, size_t cap) {
  exe_path_len = Min(exe_path_len, wire::kMaxExePathBytes);
  // Each field after the exe path is present when it or a later one is
  // (docs/trace-format.md 4): a rounded trace stores sample_period too.
  const bool rounded = fields.time_resolution_ns > 1;
  const bool sampled = fields.sample_period > 1 || rounded;
  size_t total = wire::kHdrMinBytes + exe_path_len + (sampled ? wire::kHdrSampleBytes : 0) +
                 (rounded ? wire::kHdrResolutionBytes : 0);
  if (cap < total) return 0;
  __builtin_memset(buf, 0, wire::kHdrExe);
  __builtin_memcpy(buf + wire::kHdrMagic, kFileMagic, sizeof(kFileMagic));
  wire::Store32(buf + wire::kHdrVersion, rounded ? kFormatVersion : kNanosecondFormatVersion);
  wire::Store32(buf + wire::kHdrLength, static_cast<uint32_t>(total));
  wire::Store32(buf + wire::kHdrPid, fields.pid);
  wire::Store32(buf + wire::kHdrPpid, fields.ppid);
  buf[wire::kHdrClock] = static_cast<uint8_t>(fields.clock);
  buf[wire::kHdrUnwinder] = static_cast<uint8_t>(fields.unwinder);
  wire::Store16(buf + wire::kHdrMaxDepth, fields.max_depth);
  wire::Store32(buf + wire::kHdrFlags, fields.flags);
  wire::Store64(buf + wire::kHdrStartMono, fields.start_monotonic_ns);
  wire::Store64(buf + wire::kHdrStartReal, fields.start_realtime_ns);
  wire::Store32(buf + wire::kHdrExeLen, static_cast<uint32_t>(exe_path_len));
  if (exe_path_len > 0) __builtin_memcpy(buf + wire::kHdrExe, exe_path, exe_path_len);
  if (sampled) wire::Store32(buf + wire::kHdrExe + exe_path_len, fields.sample_period);
  if (rounded) {
    wire::Store32(buf + wire::kHdrExe + exe_path_len + wire::kHdrSampleBytes,
                  fields.time_resolution_ns);
  }
  wire::Store32(buf + total - 4, Crc32c(buf, total - 4));
  return total;
}

namespace {

// One field of a fixed-width extension record's body after its magic:
// 4 or 8 bytes, little endian.
struct FixedField {
  size_t bytes;
  uint64_t value;
};

// A chunk holding one fixed-width extension record and nothing else (the
// totals, losses and end-taken chunks, trace format 6.9): the header, the
// tag, the one-byte length, the magic, the fields in order, the checksum.
// Returns the bytes written, or 0 if cap is too small.
size_t EncodeFixedChunk(uint8_t tag, uint32_t magic, std::initializer_list<FixedField> fields,
                        uint32_t tid, uint32_t sequence, uint64_t timestamp_ns, uint8_t* buf,
                        size_t cap) {
  size_t total = kChunkHeaderBytes + 2 + 4;
  for (const FixedField& f : fields) total += f.bytes;
  if (cap < total) return 0;
  const auto payload = static_cast<uint32_t>(total - kChunkHeaderBytes);
  wire::Store32(buf + wire::kChkMagic, kChunkMagic);
  wire::Store32(buf + wire::kChkLength, wire::PackLength(payload));
  wire::Store32(buf + wire::kChkTid, tid);
  wire::Store32(buf + wire::kChkSequence, sequence);
  wire::Store32(buf + wire::kChkEvents, 0);
  wire::Store64(buf + wire::kChkBaseTs, timestamp_ns);
  uint8_t* p = buf + kChunkHeaderBytes;
  p[0] = tag;
  p[1] = static_cast<uint8_t>(payload - 2);
  wire::Store32(p + 2, magic);
  p += 6;
  for (const FixedField& f : fields) {
    if (f.bytes == 4) {
      wire::Store32(p, static_cast<uint32_t>(f.value));
    } else {
      wire::Store64(p, f.value);
    }
    p += f.bytes;
  }
  wire::Store32(buf + wire::kChkCrc, Crc32c(buf + wire::kChkCrcStart, total - wire::kChkCrcStart));
  return total;
}

}  // namespace

size_t EncodeTotalsChunk(const TraceTotals& totals, uint32_t tid, uint32_t sequence,
                         uint64_t timestamp_ns, uint8_t* buf, size_t cap) {
  return EncodeFixedChunk(kTagTotals, kTotalsMagic,
                          {{4, totals.threads},
                           {8, totals.events},
                           {8, totals.allocs},
                           {8, totals.frees},
                           {8, totals.chunks}},
                          tid, sequence, timestamp_ns, buf, cap);
}

size_t EncodeLossesChunk(const RecordLosses& losses, uint32_t pid, uint64_t timestamp_ns,
                         uint8_t* buf, size_t cap) {
  return EncodeFixedChunk(
      kTagLosses, kLossesMagic,
      {{8, losses.events_dropped}, {8, losses.chunks_dropped}, {8, losses.chunks_damaged}}, pid,
      kLossesSequence, timestamp_ns, buf, cap);
}

size_t EncodeTakenEndChunk(const RecordTakenEnd& end, uint32_t pid, uint64_t timestamp_ns,
                           uint8_t* buf, size_t cap) {
  return EncodeFixedChunk(
      kTagTakenEnd, kTakenEndMagic,
      {{4, static_cast<uint32_t>(end.state)}, {8, end.chunks_sealed}, {8, end.events}}, pid,
      kLossesSequence, timestamp_ns, buf, cap);
}

ChunkWriter::ChunkWriter(uint8_t* buf, size_t capacity, bool reserve_counts)
    : buf_(buf),
      capacity_(Min(capacity, kMaxChunkBytes) - (reserve_counts ? kCountsReserve : 0)),
      reserve_(reserve_counts ? kCountsReserve : 0) {}

void ChunkWriter::Begin(uint32_t tid, uint32_t sequence, uint64_t base_timestamp_ns) {
  wire::Store32(buf_ + wire::kChkMagic, kChunkMagic);
  wire::Store32(buf_ + wire::kChkCrc, 0);
  wire::Store32(buf_ + wire::kChkLength, 0);
  wire::Store32(buf_ + wire::kChkTid, tid);
  wire::Store32(buf_ + wire::kChkSequence, sequence);
  wire::Store32(buf_ + wire::kChkEvents, 0);
  wire::Store64(buf_ + wire::kChkBaseTs, base_timestamp_ns);
  pos_ = kChunkHeaderBytes;
  records_ = 0;
  events_ = 0;
  allocs_ = 0;
  prev_ts_ = base_timestamp_ns;
  prev_address_ = 0;
  cpu_ = kUnknownCpu;
  __builtin_memset(sites_, 0, sizeof(sites_));
}

// Out of line and cold: a thread stays on one CPU for long stretches, so
// the event path pays one compare (callgrind: inlined, the whole record
// cost 14 instructions per event more).
__attribute__((noinline, cold)) uint8_t* ChunkWriter::PutCpu(uint8_t* p, uint32_t cpu) {
  *p++ = kTagCpu;
  p = PutVarint(p, cpu);
  cpu_ = cpu;
  ++records_;
  return p;
}

// Event record: tag, ts delta, stack word (stack id << 1 | size present),
// address delta, [size]. The address delta is taken from the last address
// of the same stack in this chunk when the prediction slot holds that stack
// (consecutive objects of one call site tend to be neighbours), else from
// the previous event; the size is omitted when it repeats that stack's last
// size. The aligned tag stores the delta divided by 16.
bool ChunkWriter::AppendEvent(uint8_t kind_plain, uint8_t kind_aligned, uint8_t fn,
                              uint64_t ts_ns, uint64_t address, uint64_t size,
                              uint32_t stack_id, uint32_t cpu) {
  if (Room() < kMaxEventBytes) return false;
  Site& site = sites_[stack_id % kSiteSlots];
  bool hit = site.stack_id == stack_id;
  uint64_t delta = address - (hit ? site.address : prev_address_);
  bool size_present = !hit || site.size != size;  // never equal when size >= 2^32
  uint8_t* p = buf_ + pos_;
  if (__builtin_expect(cpu != cpu_, 0)) p = PutCpu(p, cpu);
  bool aligned = (delta & 15) == 0;
  *p++ = (aligned ? kind_aligned : kind_plain) | (fn & 0x0f);
  // Room() >= kMaxEventBytes leaves every PutVarintFlat its 10 bytes. The
  // stack word is nearly always one byte: the plain branch predicts it.
  p = wire::PutVarintFlat(p, ZigZag(Delta(ts_ns, prev_ts_)));
  p = PutVarint(p, (static_cast<uint64_t>(stack_id) << 1) | (size_present ? 1 : 0));
  p = wire::PutVarintFlat4(
      p, ZigZag(aligned ? static_cast<int64_t>(delta) >> 4 : static_cast<int64_t>(delta)));
  if (size_present) p = wire::PutVarintFlat(p, size);
  site.stack_id = stack_id;
  site.size = static_cast<uint32_t>(size);
  site.address = address;
  pos_ = p - buf_;
  prev_ts_ = ts_ns;
  prev_address_ = address;
  ++records_;
  ++events_;
  // Allocations and frees alternate unpredictably: no branch.
  allocs_ += static_cast<uint32_t>(kind_plain == kTagAllocBase);
  return true;
}

bool ChunkWriter::AppendAlloc(AllocFn fn, uint64_t ts_ns, uint64_t address, uint64_t size,
                              uint32_t stack_id, uint32_t cpu) {
  return AppendEvent(kTagAllocBase, kTagAllocAlignedBase, static_cast<uint8_t>(fn), ts_ns,
                     address, size, stack_id, cpu);
}

bool ChunkWriter::AppendFree(FreeFn fn, uint64_t ts_ns, uint64_t address, uint64_t size,
                             uint32_t stack_id, uint32_t cpu) {
  return AppendEvent(kTagFreeBase, kTagFreeAlignedBase, static_cast<uint8_t>(fn), ts_ns,
                     address, size, stack_id, cpu);
}

bool ChunkWriter::AppendRealloc(AllocFn fn, uint64_t ts_free_ns, uint64_t ts_alloc_ns,
                                uint64_t old_address, uint64_t new_address, uint64_t size,
                                uint32_t stack_id, uint32_t cpu) {
  if (Room() < kMaxReallocBytes) return false;
  uint8_t* p = buf_ + pos_;
  if (cpu != cpu_) p = PutCpu(p, cpu);
  *p++ = kTagReallocBase | (static_cast<uint8_t>(fn) & 0x0f);
  p = PutVarint(p, ZigZag(Delta(ts_free_ns, prev_ts_)));
  p = PutVarint(p, ZigZag(Delta(ts_alloc_ns, ts_free_ns)));
  p = PutVarint(p, ZigZag(Delta(old_address, prev_address_)));
  p = PutVarint(p, ZigZag(Delta(new_address, old_address)));
  p = PutVarint(p, size);
  p = PutVarint(p, stack_id);
  pos_ = p - buf_;
  prev_ts_ = ts_alloc_ns;
  prev_address_ = new_address;
  ++records_;
  events_ += 2;
  ++allocs_;
  return true;
}

bool ChunkWriter::AppendStack(uint32_t stack_id, const uint64_t* frames, uint32_t depth) {
  depth = Min<uint32_t>(depth, kMaxStackDepth);
  if (Room() < 1 + 2 * kMaxVarint + depth * kMaxVarint) return false;
  uint8_t* p = buf_ + pos_;
  *p++ = kTagStackDef;
  p = PutVarint(p, stack_id);
  p = PutVarint(p, depth);
  uint64_t prev = 0;
  for (uint32_t i = 0; i < depth; ++i) {
    p = PutVarint(p, ZigZag(Delta(frames[i], prev)));
    prev = frames[i];
  }
  pos_ = p - buf_;
  ++records_;
  return true;
}

bool ChunkWriter::AppendThreadName(uint64_t ts_ns, const char* name, size_t len) {
  len = Min(len, wire::kMaxNameBytes);
  if (Room() < 1 + 2 * kMaxVarint + len) return false;
  uint8_t* p = buf_ + pos_;
  *p++ = kTagThreadName;
  p = PutVarint(p, ZigZag(Delta(ts_ns, prev_ts_)));
  p = PutVarint(p, len);
  if (len > 0) __builtin_memcpy(p, name, len);
  p += len;
  pos_ = p - buf_;
  prev_ts_ = ts_ns;
  ++records_;
  return true;
}

bool ChunkWriter::AppendModule(const ModuleView& module) {
  uint32_t path_len = Min<uint32_t>(module.path_len, wire::kMaxModulePathBytes);
  uint32_t id_len = Min<uint32_t>(module.build_id_len, wire::kMaxBuildIdBytes);
  uint32_t segments = Min<uint32_t>(module.segment_count, wire::kMaxSegments);
  size_t bound = 1 + 6 * kMaxVarint + path_len + id_len + segments * 2 * kMaxVarint;
  if (Room() < bound) return false;
  uint8_t* p = buf_ + pos_;
  *p++ = kTagModule;
  p = PutVarint(p, ZigZag(Delta(module.timestamp_ns, prev_ts_)));
  p = PutVarint(p, module.load_bias);
  p = PutVarint(p, path_len);
  if (path_len > 0) __builtin_memcpy(p, module.path, path_len);
  p += path_len;
  p = PutVarint(p, id_len);
  if (id_len > 0) __builtin_memcpy(p, module.build_id, id_len);
  p += id_len;
  p = PutVarint(p, segments);
  for (uint32_t i = 0; i < segments; ++i) {
    // Segment starts are stored relative to the load bias: small numbers.
    p = PutVarint(p, ZigZag(Delta(module.segments[i].start, module.load_bias)));
    p = PutVarint(p, module.segments[i].size);
  }
  pos_ = p - buf_;
  prev_ts_ = module.timestamp_ns;
  ++records_;
  return true;
}

bool ChunkWriter::AppendThreadExit(uint64_t ts_ns) {
  if (Room() < 1 + kMaxVarint) return false;
  uint8_t* p = buf_ + pos_;
  *p++ = kTagThreadExit;
  p = PutVarint(p, ZigZag(Delta(ts_ns, prev_ts_)));
  pos_ = p - buf_;
  prev_ts_ = ts_ns;
  ++records_;
  return true;
}

template <size_t kMaxBody, typename WriteBody>
inline bool ChunkWriter::AppendExtension(uint8_t tag, size_t room, WriteBody&& write_body) {
  // 2 + kMaxBody bounds the record while the length is one varint byte.
  static_assert(kMaxBody < 128);
  if (room < 2 + kMaxBody) return false;
  uint8_t body[kMaxBody];  // written first: the length goes before it
  const size_t len = static_cast<size_t>(write_body(body) - body);
  uint8_t* p = buf_ + pos_;
  *p++ = tag;
  p = PutVarint(p, len);
  __builtin_memcpy(p, body, len);
  pos_ = (p + len) - buf_;
  ++records_;  // prev_ts_ stays, as for every extension record
  return true;
}

bool ChunkWriter::AppendCentral(CentralOp op, uint64_t ts_ns, uint32_t size_class,
                                uint64_t count, uint32_t stack_id, bool by_tracer) {
  // Body: ts delta, op, class, count, stack, [flags]: at most 6 varints.
  return AppendExtension<6 * kMaxVarint>(kTagCentral, Room(), [&](uint8_t* q) {
    q = PutVarint(q, ZigZag(Delta(ts_ns, prev_ts_)));
    q = PutVarint(q, static_cast<uint8_t>(op));
    q = PutVarint(q, size_class);
    q = PutVarint(q, count);
    q = PutVarint(q, stack_id);
    if (by_tracer) q = PutVarint(q, 1);  // flags, omitted when 0
    return q;
  });
}

bool ChunkWriter::AppendWindow(WindowState state, WindowCause cause, uint64_t ts_ns) {
  return AppendExtension<3 * kMaxVarint>(kTagWindow, Room(), [&](uint8_t* q) {
    q = PutVarint(q, ZigZag(Delta(ts_ns, prev_ts_)));
    q = PutVarint(q, static_cast<uint8_t>(state));
    q = PutVarint(q, static_cast<uint8_t>(cause));
    return q;
  });
}

bool ChunkWriter::AppendCounts(const ThreadCounts& counts) {
  // May use the reserve: a chunk full of events still takes its counts
  // record when it is sealed.
  constexpr size_t kMaxBody = 3 * kMaxVarint;
  static_assert(2 + kMaxBody <= kCountsReserve);
  return AppendExtension<kMaxBody>(kTagCounts, capacity_ + reserve_ - pos_, [&](uint8_t* q) {
    q = PutVarint(q, counts.allocs);
    q = PutVarint(q, counts.frees);
    q = PutVarint(q, counts.samples_dropped);
    return q;
  });
}

size_t ChunkWriter::Finish() {
  uint32_t payload = static_cast<uint32_t>(pos_ - kChunkHeaderBytes);
  wire::Store32(buf_ + wire::kChkLength, wire::PackLength(payload));
  wire::Store32(buf_ + wire::kChkEvents, events_);
  wire::Store32(buf_ + wire::kChkCrc,
                Crc32c(buf_ + wire::kChkCrcStart, pos_ - wire::kChkCrcStart));
  return pos_;
}

}  // namespace crossfree::format
