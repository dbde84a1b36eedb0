// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the trace reader and decoder. Built only with clang
// and -DCROSSFREE_FUZZ=ON (tests/format/CMakeLists.txt). The input is used
// four times: as a whole file; as one chunk payload behind a valid header and
// a resealed chunk header, so the fuzzer reaches the decoder past the
// checksum; as the record stream of a compressed chunk (its first bytes
// choose the lane lengths and the layout, 1 or 2 with its references;
// zstd-compressed, so the fuzzer reaches the lanes decoder); and as the zstd frame of a compressed chunk (the frame checks
// and the decompressor against hostile frames).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <zstd.h>

#include "format/crc32c.h"
#include "format/trace_reader.h"
#include "tests/format/test_util.h"

namespace {

using namespace crossfree::format;

class Sink : public RecordVisitor {
 public:
  void OnEvent(const Event& e) override { sum_ += e.address + e.size + e.stack_id; }
  void OnStack(uint32_t id, std::span<const uint64_t> frames) override {
    sum_ += id + frames.size();
  }
  uint64_t sum_ = 0;
};

void ReadAll(std::span<const uint8_t> bytes) {
  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "fuzz", &error);
  if (reader == nullptr) return;
  Chunk chunk;
  Sink sink;
  while (reader->NextChunk(&chunk) == ReadResult::kChunk) {
    if (!DecodeChunk(chunk, sink, &error) && error.empty()) __builtin_trap();
  }
}

// A compressed chunk (docs/trace-format.md 5.1, 5.3) with the given lanes
// (or streams) header fields and frame, its checksum made to match.
std::vector<uint8_t> CompressedChunk(uint32_t events, uint32_t raw,
                                     const std::vector<uint32_t>& lanes, const uint8_t* frame,
                                     size_t frame_bytes, uint8_t layout = wire::kLayoutLanes) {
  std::vector<uint8_t> payload(wire::FrameOffset(layout));
  wire::Store32(payload.data() + wire::kZRawLength, raw);
  payload[wire::kZLayout] = layout;
  for (size_t i = 0; i < lanes.size(); ++i) {
    wire::Store32(payload.data() + wire::kZLaneLengths + 4 * i, lanes[i]);
  }
  payload.insert(payload.end(), frame, frame + frame_bytes);
  std::vector<uint8_t> c = testing::MakeChunk(1, 0, 0, events, payload);
  wire::Store32(c.data(), kCompressedChunkMagic);
  uint32_t crc = Crc32c(c.data(), 4);
  wire::Store32(c.data() + wire::kChkCrc,
                Crc32c(c.data() + wire::kChkCrcStart, c.size() - wire::kChkCrcStart, crc));
  return c;
}

void ReadWithChunk(const std::vector<uint8_t>& chunk) {
  std::vector<uint8_t> file = testing::TraceBuilder().bytes();
  file.insert(file.end(), chunk.begin(), chunk.end());
  ReadAll(file);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 5 && size <= (1u << 20)) {
    // The rest of the input as a record stream split into lanes: bytes 1-4
    // give each of lanes 0-3 a share of it, lane 4 the remainder. Byte 4
    // also picks the layout: its bit 1, layout 3, whose streams 0-23 take
    // their shares by bytes 1-4 in turn (a quarter of the share at most,
    // so that later streams get bytes too), stream 24 the remainder; else
    // its bit 0, layout 2 or 1.
    const uint8_t* records = data + 5;
    const uint32_t raw = static_cast<uint32_t>(size - 5);
    const uint8_t layout = (data[4] & 2) != 0   ? wire::kLayoutPlanes
                           : (data[4] & 1) != 0 ? wire::kLayoutRefs
                                                : wire::kLayoutLanes;
    const size_t pieces = layout == wire::kLayoutPlanes ? wire::kStreams : wire::kLanes;
    const uint64_t scale = layout == wire::kLayoutPlanes ? 4 * 255 : 255;
    std::vector<uint32_t> lanes(pieces - 1);
    uint32_t left = raw;
    for (size_t i = 0; i + 1 < pieces; ++i) {
      lanes[i] = static_cast<uint32_t>(static_cast<uint64_t>(left) * data[1 + i % 4] / scale);
      left -= lanes[i];
    }
    std::vector<uint8_t> frame(ZSTD_compressBound(raw));
    size_t n = ZSTD_compress(frame.data(), frame.size(), records, raw, 1);
    if (!ZSTD_isError(n)) {
      ReadWithChunk(CompressedChunk(data[0], raw, lanes, frame.data(), n, layout));
    }
    // The input itself as the frame, claiming as many bytes as it declares
    // (or, with the top bit of byte 0, a size of its own).
    unsigned long long declared = ZSTD_getFrameContentSize(data, size);
    uint32_t claim = (data[0] & 0x80) || declared > 0xffffffffull
                         ? wire::Load32(data + 1)
                         : static_cast<uint32_t>(declared);
    ReadWithChunk(CompressedChunk(0, claim, {0, 0, 0, 0}, data, size));
  }
  ReadAll(std::span<const uint8_t>(data, size));
  if (size > kMaxChunkBytes - kChunkHeaderBytes) return 0;
  std::vector<uint8_t> payload(data, data + size);
  uint32_t events = size >= 1 ? data[0] : 0;
  std::vector<uint8_t> file = testing::TraceBuilder().bytes();
  std::vector<uint8_t> chunk = testing::MakeChunk(1, 0, 0, events, payload);
  file.insert(file.end(), chunk.begin(), chunk.end());
  ReadAll(file);
  return 0;
}
