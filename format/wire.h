// SPDX-License-Identifier: Apache-2.0
// crossfree trace format internals shared by trace_writer.cc and
// trace_reader.cc: byte offsets of the fixed headers, varint and zigzag
// coding. Not a public API; docs/trace-format.md is the spec.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace crossfree::format::wire {

// File header: fixed fields, then exe path, then (future) fields a reader
// skips, then a CRC-32C of everything before it. header_length covers all.
inline constexpr size_t kHdrMagic = 0;          // char[8]
inline constexpr size_t kHdrVersion = 8;        // u32
inline constexpr size_t kHdrLength = 12;        // u32, whole header incl. crc
inline constexpr size_t kHdrPid = 16;           // u32
inline constexpr size_t kHdrPpid = 20;          // u32
inline constexpr size_t kHdrClock = 24;         // u8
inline constexpr size_t kHdrUnwinder = 25;      // u8
inline constexpr size_t kHdrMaxDepth = 26;      // u16
inline constexpr size_t kHdrFlags = 28;         // u32
inline constexpr size_t kHdrStartMono = 32;     // u64
inline constexpr size_t kHdrStartReal = 40;     // u64
inline constexpr size_t kHdrExeLen = 48;        // u32
inline constexpr size_t kHdrExe = 52;           // exe path bytes
inline constexpr size_t kHdrMinBytes = 56;      // fixed part + crc, empty path
// After the exe path, present when header_length leaves room for it:
inline constexpr size_t kHdrSampleBytes = 4;    // u32 sample_period
inline constexpr size_t kHdrResolutionBytes = 4;  // u32 time_resolution_ns, after sample_period
inline constexpr size_t kMaxHeaderBytes = 1u << 16;
inline constexpr size_t kMaxExePathBytes = 4096;

// Chunk header (kChunkHeaderBytes = 32).
inline constexpr size_t kChkMagic = 0;     // u32 kChunkMagic
inline constexpr size_t kChkCrc = 4;       // u32 CRC-32C of bytes [8, 32 + payload)
inline constexpr size_t kChkLength = 8;    // u32: payload length (24 bits) | guard << 24
inline constexpr size_t kChkTid = 12;      // u32
inline constexpr size_t kChkSequence = 16; // u32
inline constexpr size_t kChkEvents = 20;   // u32
inline constexpr size_t kChkBaseTs = 24;   // u64
inline constexpr size_t kChkCrcStart = 8;

// Compressed chunk payload (docs/trace-format.md 5.1), after the header.
inline constexpr size_t kZRawLength = 0;     // u32 bytes of the plain record stream
inline constexpr size_t kZLayout = 4;        // u8 kLayoutLanes, kLayoutRefs or kLayoutPlanes
inline constexpr size_t kZLaneLengths = 5;   // u32 x (kLanes - 1); the last lane has the rest
inline constexpr uint8_t kLayoutLanes = 1;
inline constexpr uint8_t kLayoutRefs = 2;    // lanes, lane 3 with references (5.2)
inline constexpr size_t kLanes = 5;          // records, times, stacks, addresses, sizes
inline constexpr size_t kZFrame = kZLaneLengths + 4 * (kLanes - 1);  // the zstd frame
// Layout 3 (5.3): stream 0 is lane 0; stream 1 + 12 * kind + 3 * field +
// plane holds one byte position (plane) of one field's varints (field: 0
// ts, 1 stack word, 2 address value, 3 size) of one kind of event (0
// allocation, 1 free). A kind's 12 streams are consecutive, so that a
// decoder moves its cursors for an event as one block.
inline constexpr uint8_t kLayoutPlanes = 3;
inline constexpr size_t kEventFields = 4;
inline constexpr size_t kEventKinds = 2;
inline constexpr size_t kPlanes = 3;       // first byte, second byte, the rest
inline constexpr size_t kStreams = 1 + kEventFields * kEventKinds * kPlanes;
inline constexpr size_t kZStreamLengths = 5;  // u32 x (kStreams - 1); the last has the rest
inline constexpr size_t kZPlanesFrame = kZStreamLengths + 4 * (kStreams - 1);
inline constexpr size_t kKindStreams = kEventFields * kPlanes;  // 12
constexpr size_t StreamOf(size_t field, size_t kind, size_t plane) {
  return 1 + kKindStreams * kind + kPlanes * field + plane;
}
static_assert(StreamOf(0, 1, 0) == 13 && StreamOf(kEventFields - 1, 1, 2) == kStreams - 1);
// Where the zstd frame starts in a compressed payload of this layout.
constexpr size_t FrameOffset(uint8_t layout) {
  return layout == kLayoutPlanes ? kZPlanesFrame : kZFrame;
}

// The top byte of the length word is a check of its low three bytes, so a
// single damaged byte there reads as corruption, never as a chunk that runs
// past the end of the file (which would look like a harmless truncation).
inline constexpr uint32_t LengthGuard(uint32_t payload_len) {
  return ((payload_len ^ (payload_len >> 8) ^ (payload_len >> 16)) & 0xff) ^ 0xa5;
}
inline constexpr uint32_t PackLength(uint32_t payload_len) {
  return (payload_len & 0xffffff) | (LengthGuard(payload_len) << 24);
}

// Per-record limits the writer clamps to (so every record fits in an empty
// chunk of ChunkWriter::kMinChunkCapacity) and the reader enforces.
inline constexpr size_t kMaxNameBytes = 256;
inline constexpr size_t kMaxModulePathBytes = 4096;
inline constexpr size_t kMaxBuildIdBytes = 64;
inline constexpr size_t kMaxSegments = 32;

inline constexpr uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline constexpr int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

inline void Store16(uint8_t* p, uint16_t v) { memcpy(p, &v, 2); }
inline void Store32(uint8_t* p, uint32_t v) { memcpy(p, &v, 4); }
inline void Store64(uint8_t* p, uint64_t v) { memcpy(p, &v, 8); }
inline uint16_t Load16(const uint8_t* p) { uint16_t v; memcpy(&v, p, 2); return v; }
inline uint32_t Load32(const uint8_t* p) { uint32_t v; memcpy(&v, p, 4); return v; }
inline uint64_t Load64(const uint8_t* p) { uint64_t v; memcpy(&v, p, 8); return v; }

// Writes v as LEB128 (7 bits per byte, low first). At most 10 bytes.
inline uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  // One- and two-byte values are nearly all of them: no loop for those.
  if (v < 0x80) {
    *p = static_cast<uint8_t>(v);
    return p + 1;
  }
  if (v < 0x4000) {
    p[0] = static_cast<uint8_t>(v) | 0x80;
    p[1] = static_cast<uint8_t>(v >> 7);
    return p + 2;
  }
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// The longest valid varint: 64 bits at 7 per byte.
inline constexpr size_t kMaxVarintBytes = 10;

// PutVarint without a data-dependent branch between one and two bytes:
// below 2^14 both bytes are computed and stored at once and the length is
// 1 + (v >= 128). The tracer's event record writes varints whose length
// changes between one and two bytes from event to event (time deltas,
// sizes); PutVarint's length branch mispredicted there about once per event
// (callgrind --branch-sim). Writes the same bytes as PutVarint; p must have
// at least kMaxVarintBytes writable bytes, whatever v is.
inline uint8_t* PutVarintFlat(uint8_t* p, uint64_t v) {
  if (__builtin_expect(v >= 0x4000, 0)) return PutVarint(p, v);
  const auto x = static_cast<uint32_t>(v);
  const uint32_t two = x >= 0x80 ? 1 : 0;
  Store16(p, static_cast<uint16_t>((x & 0x7f) | (two << 7) | ((x << 1) & 0x7f00)));
  return p + 1 + two;
}

// Bytes of a varint below 2^28 by the count of leading zero bits of its
// 32-bit value (a table, not arithmetic: gcc compiles comparisons here into
// the very branches PutVarintFlat4 avoids).
inline constexpr uint8_t kVarintLenByClz[32] = {5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1};

// The same for one to four bytes (below 2^28), for values whose length
// spreads wider (address deltas): the 7-bit groups are spread into a 32-bit
// word with shifts and masks and the continuation bits follow from the
// length. p must have at least kMaxVarintBytes writable bytes.
inline uint8_t* PutVarintFlat4(uint8_t* p, uint64_t v) {
  if (__builtin_expect(v >= (uint64_t{1} << 28), 0)) return PutVarint(p, v);
  const auto x = static_cast<uint32_t>(v);
  const uint32_t groups =
      (x & 0x7fu) | ((x << 1) & 0x7f00u) | ((x << 2) & 0x7f0000u) | ((x << 3) & 0x7f000000u);
  const uint32_t len = kVarintLenByClz[__builtin_clz(x | 1)];  // 1..4
  const uint32_t more = 0x00808080u >> (32 - 8 * len);
  Store32(p, groups | more);
  return p + len;
}

// GetVarint's general case, byte by byte.
inline const uint8_t* GetVarintLoop(const uint8_t* p, const uint8_t* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) return nullptr;
    uint64_t b = *p++;
    if (shift == 63 && b > 1) return nullptr;
    v |= (b & 0x7f) << shift;
    if (b < 0x80) {
      *out = v;
      return p;
    }
  }
  return nullptr;
}

// Reads a varint from [p, end). Returns null on a varint that runs past end
// or is longer than 10 bytes / overflows 64 bits.
inline const uint8_t* GetVarint(const uint8_t* p, const uint8_t* end, uint64_t* out) {
  if (end - p >= 2) {  // fast paths: one or two bytes
    uint64_t b0 = p[0];
    if (b0 < 0x80) {
      *out = b0;
      return p + 1;
    }
    if (p[1] < 0x80) {
      *out = (b0 & 0x7f) | (static_cast<uint64_t>(p[1]) << 7);
      return p + 2;
    }
  }
  return GetVarintLoop(p, end, out);
}

// GetVarint for a caller that knows at least kMaxVarintBytes bytes are left
// at p: no varint can then run past the end, so no byte is checked for it,
// and only the tenth byte for overflow (it may hold bit 63 alone). Null on
// a varint that is too long or overflows, as GetVarint.
inline const uint8_t* GetVarintRoomy(const uint8_t* p, uint64_t* out) {
  uint64_t b0 = p[0];
  if (b0 < 0x80) {  // one and two bytes, the most common, first
    *out = b0;
    return p + 1;
  }
  if (p[1] < 0x80) {
    *out = (b0 & 0x7f) | (static_cast<uint64_t>(p[1]) << 7);
    return p + 2;
  }
  uint64_t v = (b0 & 0x7f) | (static_cast<uint64_t>(p[1] & 0x7f) << 7);
  for (int i = 2; i < 9; ++i) {  // bytes 3 to 9: bits 14 to 62
    uint64_t b = p[i];
    v |= (b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *out = v;
      return p + i + 1;
    }
  }
  uint64_t last = p[9];
  if (last > 1) return nullptr;
  *out = v | last << 63;
  return p + kMaxVarintBytes;
}

}  // namespace crossfree::format::wire
