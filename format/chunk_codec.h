// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: compressed chunks (docs/trace-format.md 5.1). A
// sealed plain chunk becomes one compressed chunk (ChunkCompressor, used
// outside the traced process: `crossfree record`, tools, tests), and a
// reader turns a compressed chunk's payload back into the lanes of its
// record stream (ChunkInflater, used by DecodeChunk). zstd from Debian's
// libzstd; not linked into the tracer, which writes plain chunks.
//
// Threading: each object is for one thread at a time (it owns a zstd
// context and a buffer it reuses from chunk to chunk); distinct objects
// may be used on distinct threads at once. CompressChunk uses one
// ChunkCompressor per calling thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/trace_format.h"
#include "format/wire.h"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace crossfree::format {

// zstd's level 3 (its default): on the deep-stack workload about 200 MB/s
// of plain chunks on one core of the build VM, and within 3% of level 9's
// size on lanes (docs/results/trace-size.md).
inline constexpr int kDefaultCompressionLevel = 3;

class ChunkCompressor {
 public:
  // layout: wire::kLayoutPlanes (the default, docs/trace-format.md 5.3),
  // or wire::kLayoutRefs (5.2) or wire::kLayoutLanes (5.1), for
  // comparisons and tests.
  explicit ChunkCompressor(int level = kDefaultCompressionLevel,
                           uint8_t layout = wire::kLayoutPlanes);
  ~ChunkCompressor();
  ChunkCompressor(const ChunkCompressor&) = delete;
  ChunkCompressor& operator=(const ChunkCompressor&) = delete;

  // Turns the sealed plain chunk [chunk, chunk + bytes) (a chunk header
  // with magic "CHNK" and its payload, as ChunkWriter::Finish() left it)
  // into one compressed chunk with the same tid, sequence, event count and
  // base timestamp, written to out (replacing its contents), in the
  // constructor's layout (layout 2 instead of 3 below kSmallRecords of
  // records, layout 1 for a chunk layouts 2 and 3 cannot hold,
  // docs/trace-format.md 5.2). When
  // compressing would not make the chunk smaller, out is a copy of the
  // plain chunk. Returns false with *error (one line) when the input is not
  // one whole, checksum-valid plain chunk whose records can be split into
  // lanes (an unknown tag, a record cut short); out is then unspecified.
  // The input is checked, never trusted: it may come from another process.
  bool Compress(const uint8_t* chunk, size_t bytes, std::vector<uint8_t>& out,
                std::string* error);

 private:
  struct RefState;  // layout 2's and 3's (docs/trace-format.md 5.2)

  // Compress in the given layout (or layout 1 where that cannot hold the
  // records).
  bool Encode(const uint8_t* chunk, size_t bytes, uint8_t layout, std::vector<uint8_t>& out,
              std::string* error);
  // Below these bytes of records Compress writes layout 2, not 3: on
  // gRPC's chunks layout 2 was the smaller in 767 of 945 chunks under
  // 16 KiB and in 1 of 20 from 24 KiB up.
  static constexpr size_t kSmallRecords = 20 * 1024;

  ZSTD_CCtx_s* cctx_;
  int level_;
  uint8_t layout_;
  std::unique_ptr<RefState> refs_;
  std::vector<uint8_t> joined_;  // the lanes, split into and then joined; grown, never shrunk
  // Layout 3's streams 1 to wire::kStreams - 1 (stream 0 is lane 0, in
  // joined_), one after the other (planes_room_ bytes, grown, never shrunk).
  std::unique_ptr<uint8_t[]> planes_;
  size_t planes_room_ = 0;
};

// ChunkCompressor::Compress with a compressor kept per calling thread (one
// per level used). Any thread.
bool CompressChunk(const uint8_t* chunk, size_t bytes, std::vector<uint8_t>& out,
                   std::string* error, int level = kDefaultCompressionLevel);

// The five lanes of a compressed chunk's record stream (5.1): records,
// times, stacks, addresses, sizes. At least wire::kMaxVarintBytes readable
// bytes follow every lane (the next lane's, or ChunkInflater's padding), so
// a decoder may read a varint at any position of a lane without checking
// for the buffer's end first, and check the lane's end afterwards.
// In layout 3 (5.3) lane[0] is stream 0 and stream[] holds all streams,
// which a decoder reads byte by byte against their ends; lanes 1-4 are
// then empty.
struct ChunkLanes {
  std::array<std::span<const uint8_t>, wire::kLanes> lane;
  std::array<std::span<const uint8_t>, wire::kStreams> stream;
  // wire::kLayoutLanes, wire::kLayoutRefs (lane 3 holds references,
  // docs/trace-format.md 5.2) or wire::kLayoutPlanes.
  uint8_t layout = wire::kLayoutLanes;
};

// Checks a compressed chunk's payload without decompressing it: the raw
// length against kMaxRawPayloadBytes, the layout, the lane lengths, and that
// the payload holds exactly one zstd frame that declares its content size:
// raw_length in layout 1, at most kMaxRawPayloadBytes in layout 2 (its
// lanes' length, in *content_length when given; layout 3 likewise, with
// stream lengths). Returns false with *what (the words in parentheses of
// "corrupt chunk at offset N (...)") otherwise. Any thread.
bool CheckCompressedPayload(std::span<const uint8_t> payload, uint32_t* raw_length,
                            std::string* what, uint32_t* content_length = nullptr);

class ChunkInflater {
 public:
  ChunkInflater();
  ~ChunkInflater();
  ChunkInflater(const ChunkInflater&) = delete;
  ChunkInflater& operator=(const ChunkInflater&) = delete;

  // Decompresses a compressed chunk's payload (checked again with
  // CheckCompressedPayload first) into this object's buffer and points
  // *lanes into it, valid until the next call. The buffer grows to the
  // largest raw length seen, at most kMaxRawPayloadBytes (and
  // wire::kMaxVarintBytes of padding). Returns false
  // with *what (as above) when the payload is malformed or the frame does
  // not decompress to exactly its declared size.
  bool Inflate(std::span<const uint8_t> payload, ChunkLanes* lanes, std::string* what);

  // Bytes held by the buffer (tests: memory stays bounded by a chunk).
  size_t buffer_capacity() const { return buffer_.capacity(); }

 private:
  ZSTD_DCtx_s* dctx_;
  std::vector<uint8_t> buffer_;
};

}  // namespace crossfree::format
