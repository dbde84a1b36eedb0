// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: compressed chunks (see chunk_codec.h; layout in
// docs/trace-format.md 5.1).
#include "format/chunk_codec.h"

#include <zstd.h>

#include <cstring>
#include <map>
#include <memory>

#include "format/crc32c.h"

namespace crossfree::format {

namespace {

// Lanes of the record stream (docs/trace-format.md 5.1).
enum Lane : size_t { kRecords = 0, kTimes = 1, kStacks = 2, kAddresses = 3, kSizes = 4 };

bool IsEventKind(uint8_t kind) {
  return kind == kTagAllocBase || kind == kTagFreeBase || kind == kTagAllocAlignedBase ||
         kind == kTagFreeAlignedBase;
}

// Walks a plain record stream and appends each byte to its lane. Checks
// only what it needs to find record boundaries: the decoder validates the
// records when the chunk is read.
class Splitter {
 public:
  Splitter(std::span<const uint8_t> payload, std::array<std::vector<uint8_t>, wire::kLanes>& lanes)
      : p_(payload.data()), begin_(payload.data()), end_(payload.data() + payload.size()),
        lanes_(lanes) {}

  bool Run(std::string* error) {
    while (p_ < end_) {
      const uint8_t* start = p_;
      const uint8_t tag = *p_++;
      const uint8_t kind = tag & 0xf0;
      if (IsEventKind(kind)) {
        lanes_[kRecords].push_back(tag);
        uint64_t word;
        if (!Move(kTimes) || !Move(kStacks, &word) || !Move(kAddresses) ||
            ((word & 1) != 0 && !Move(kSizes))) {
          return Fail(start, "truncated event", error);
        }
        continue;
      }
      if (!Skip(tag)) return Fail(start, "malformed record", error);
      lanes_[kRecords].insert(lanes_[kRecords].end(), start, p_);
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
  // Moves one varint from the stream to a lane.
  bool Move(Lane lane, uint64_t* value = nullptr) {
    const uint8_t* start = p_;
    uint64_t v;
    if (!Get(&v)) return false;
    lanes_[lane].insert(lanes_[lane].end(), start, p_);
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
  // Steps over the body of a record other than an event (its tag read).
  bool Skip(uint8_t tag) {
    uint64_t n;
    if ((tag & 0xf0) == kTagReallocBase) return Varints(6);
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
  std::array<std::vector<uint8_t>, wire::kLanes>& lanes_;
};

}  // namespace

ChunkCompressor::ChunkCompressor(int level) : cctx_(ZSTD_createCCtx()), level_(level) {}

ChunkCompressor::~ChunkCompressor() { ZSTD_freeCCtx(cctx_); }

bool ChunkCompressor::Compress(const uint8_t* chunk, size_t bytes, std::vector<uint8_t>& out,
                               std::string* error) {
  if (cctx_ == nullptr) {
    *error = "cannot create a zstd compression context";
    return false;
  }
  if (bytes < kChunkHeaderBytes || bytes > kMaxChunkBytes ||
      wire::Load32(chunk + wire::kChkMagic) != kChunkMagic) {
    *error = "not a plain chunk (bad magic or size " + std::to_string(bytes) + ")";
    return false;
  }
  const uint32_t word = wire::Load32(chunk + wire::kChkLength);
  const uint32_t payload = word & 0xffffff;
  if (wire::PackLength(payload) != word || kChunkHeaderBytes + payload != bytes) {
    *error = "chunk length word does not match its " + std::to_string(bytes) + " bytes";
    return false;
  }
  if (Crc32c(chunk + wire::kChkCrcStart, bytes - wire::kChkCrcStart) !=
      wire::Load32(chunk + wire::kChkCrc)) {
    *error = "chunk checksum mismatch";
    return false;
  }
  for (auto& lane : lanes_) lane.clear();
  Splitter splitter(std::span<const uint8_t>(chunk + kChunkHeaderBytes, payload), lanes_);
  if (!splitter.Run(error)) return false;
  joined_.clear();
  for (const auto& lane : lanes_) joined_.insert(joined_.end(), lane.begin(), lane.end());

  const size_t head = kChunkHeaderBytes + wire::kZFrame;
  out.resize(head + ZSTD_compressBound(joined_.size()));
  ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level_);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 0);  // the chunk's CRC covers the frame
  const size_t frame = ZSTD_compress2(cctx_, out.data() + head, out.size() - head,
                                      joined_.data(), joined_.size());
  if (ZSTD_isError(frame)) {
    *error = std::string("zstd: ") + ZSTD_getErrorName(frame);
    return false;
  }
  const size_t total = head + frame;
  if (total >= bytes) {  // not worth it: the plain chunk as it is
    out.assign(chunk, chunk + bytes);
    return true;
  }
  out.resize(total);
  uint8_t* b = out.data();
  std::memcpy(b, chunk, kChunkHeaderBytes);
  wire::Store32(b + wire::kChkMagic, kCompressedChunkMagic);
  wire::Store32(b + wire::kChkLength,
                wire::PackLength(static_cast<uint32_t>(total - kChunkHeaderBytes)));
  uint8_t* z = b + kChunkHeaderBytes;
  wire::Store32(z + wire::kZRawLength, payload);
  z[wire::kZLayout] = wire::kLayoutLanes;
  for (size_t i = 0; i + 1 < wire::kLanes; ++i) {
    wire::Store32(z + wire::kZLaneLengths + 4 * i, static_cast<uint32_t>(lanes_[i].size()));
  }
  // The magic is inside the checksum of a compressed chunk (5): a damaged
  // magic byte that turns one kind into the other is a mismatch.
  uint32_t crc = Crc32c(b + wire::kChkMagic, 4);
  crc = Crc32c(b + wire::kChkCrcStart, total - wire::kChkCrcStart, crc);
  wire::Store32(b + wire::kChkCrc, crc);
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
                            std::string* what) {
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
  if (z[wire::kZLayout] != wire::kLayoutLanes) {
    *what = "unknown compressed chunk layout " + std::to_string(z[wire::kZLayout]);
    return false;
  }
  uint64_t lanes = 0;
  for (size_t i = 0; i + 1 < wire::kLanes; ++i) lanes += wire::Load32(z + wire::kZLaneLengths + 4 * i);
  if (lanes > raw) {
    *what = "compressed chunk's lanes (" + std::to_string(lanes) + " bytes) exceed its " +
            std::to_string(raw) + " bytes";
    return false;
  }
  const uint8_t* frame = z + wire::kZFrame;
  const size_t frame_bytes = payload.size() - wire::kZFrame;
  const unsigned long long declared = ZSTD_getFrameContentSize(frame, frame_bytes);
  if (declared == ZSTD_CONTENTSIZE_ERROR) {
    *what = "compressed chunk has no valid zstd frame header";
    return false;
  }
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN) {
    *what = "compressed chunk's zstd frame does not declare its size";
    return false;
  }
  if (declared != raw) {
    *what = declared > kMaxRawPayloadBytes
                ? "compressed chunk's zstd frame declares " + std::to_string(declared) +
                      " bytes, above the " + std::to_string(kMaxRawPayloadBytes) + "-byte limit"
                : "compressed chunk's zstd frame declares " + std::to_string(declared) +
                      " bytes, its header " + std::to_string(raw);
    return false;
  }
  const size_t framed = ZSTD_findFrameCompressedSize(frame, frame_bytes);
  if (ZSTD_isError(framed) || framed != frame_bytes) {
    *what = "compressed chunk's zstd frame does not end at the chunk's end";
    return false;
  }
  *raw_length = raw;
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
  uint32_t raw = 0;
  if (!CheckCompressedPayload(payload, &raw, what)) return false;
  if (dctx_ == nullptr) {
    *what = "cannot create a zstd decompression context";
    return false;
  }
  // Grown, never shrunk: the largest raw length so far (a chunk at most),
  // and the padding ChunkLanes promises.
  if (buffer_.size() < raw + wire::kMaxVarintBytes) buffer_.resize(raw + wire::kMaxVarintBytes);
  const size_t n = ZSTD_decompressDCtx(dctx_, buffer_.data(), raw,
                                       payload.data() + wire::kZFrame,
                                       payload.size() - wire::kZFrame);
  if (ZSTD_isError(n)) {
    *what = std::string("zstd: ") + ZSTD_getErrorName(n);
    return false;
  }
  if (n != raw) {
    *what = "compressed chunk decompressed to " + std::to_string(n) + " bytes, not " +
            std::to_string(raw);
    return false;
  }
  const uint8_t* p = buffer_.data();
  size_t left = raw;
  for (size_t i = 0; i < wire::kLanes; ++i) {
    const size_t len =
        i + 1 < wire::kLanes ? wire::Load32(payload.data() + wire::kZLaneLengths + 4 * i) : left;
    lanes->lane[i] = std::span<const uint8_t>(p, len);  // CheckCompressedPayload: sum <= raw
    p += len;
    left -= len;
  }
  return true;
}

}  // namespace crossfree::format
