// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: a chunk's timestamps rounded down to a time
// resolution (see time_rounding.h; docs/trace-format.md 7.1).
#include "format/time_rounding.h"

#include <cstring>

#include "format/crc32c.h"
#include "format/trace_format.h"
#include "format/wire.h"

namespace crossfree::format {
namespace {

// One pass over a plain record stream: copies records to the output, and
// re-encodes each ts varint as the delta between rounded times. The
// original times are followed exactly (prev_ts_ as the format's decoder
// keeps it, section 6.1), so every rounded time is the original's, rounded.
class Rewriter {
 public:
  Rewriter(const uint8_t* p, const uint8_t* end, uint64_t base_ts, uint32_t r,
           std::vector<uint8_t>& out, size_t at)
      : p_(p), end_(end), r_(r), prev_ts_(base_ts), prev_out_(RoundTimeDown(base_ts, r)),
        out_(out), n_(at) {}

  // False with *error at the first record that does not parse.
  bool Run(std::string* error) {
    const uint8_t* const begin = p_;
    while (p_ < end_) {
      const uint8_t* start = p_;
      if (!Record()) {
        *error = "record at byte " + std::to_string(start - begin) +
                 " of the chunk's records does not parse";
        return false;
      }
    }
    out_.resize(n_);
    return true;
  }

 private:
  // Every write makes room for itself: a rewritten ts varint may be longer
  // than the original (a delta of 1 ns that crosses a tick becomes R).
  void Room(size_t more) {
    if (out_.size() < n_ + more) out_.resize((n_ + more) * 2);
  }
  bool Get(uint64_t* v) {
    p_ = wire::GetVarint(p_, end_, v);
    return p_ != nullptr;
  }
  void PutVarint(uint64_t v) {
    Room(wire::kMaxVarintBytes);
    n_ = static_cast<size_t>(wire::PutVarint(out_.data() + n_, v) - out_.data());
  }
  void PutByte(uint8_t b) {
    Room(1);
    out_[n_++] = b;
  }
  bool Copy(size_t bytes) {
    if (bytes > static_cast<size_t>(end_ - p_)) return false;
    Room(bytes);
    std::memcpy(out_.data() + n_, p_, bytes);
    n_ += bytes;
    p_ += bytes;
    return true;
  }
  bool CopyVarints(uint64_t count) {
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t v;
      const uint8_t* from = p_;
      if (!Get(&v)) return false;
      const auto len = static_cast<size_t>(p_ - from);
      Room(len);
      std::memcpy(out_.data() + n_, from, len);
      n_ += len;
    }
    return true;
  }
  // A zigzag ts delta from `from` (an original time); returns the time in
  // *t and writes the rounded time's delta from `from_out`.
  bool Time(uint64_t from, uint64_t from_out, uint64_t* t) {
    uint64_t zz;
    if (!Get(&zz)) return false;
    *t = from + static_cast<uint64_t>(wire::UnZigZag(zz));
    const uint64_t rounded = RoundTimeDown(*t, r_);
    PutVarint(wire::ZigZag(static_cast<int64_t>(rounded - from_out)));
    return true;
  }
  // A ts field that updates prev_ts (events, names, modules, exits).
  bool UpdatingTime() {
    uint64_t t;
    if (!Time(prev_ts_, prev_out_, &t)) return false;
    prev_ts_ = t;
    prev_out_ = RoundTimeDown(t, r_);
    return true;
  }

  bool Record() {
    const uint8_t tag = *p_++;
    PutByte(tag);
    const uint8_t kind = tag & 0xf0;
    if (IsEventKind(kind)) {
      uint64_t word;
      if (!UpdatingTime()) return false;
      const uint8_t* w = p_;
      if (!Get(&word)) return false;
      p_ = w;
      return CopyVarints((word & 1) ? 3 : 2);
    }
    if (kind == kTagReallocBase) {
      uint64_t t_free, t_alloc;
      if (!Time(prev_ts_, prev_out_, &t_free)) return false;
      if (!Time(t_free, RoundTimeDown(t_free, r_), &t_alloc)) return false;
      prev_ts_ = t_alloc;
      prev_out_ = RoundTimeDown(t_alloc, r_);
      return CopyVarints(4);
    }
    if (tag >= kExtensionTagBase) return Extension(tag);
    uint64_t n;
    switch (tag) {
      case kTagStackDef: {
        if (!CopyVarints(1)) return false;
        const uint8_t* at = p_;
        if (!Get(&n) || n > kMaxStackDepth) return false;
        p_ = at;
        return CopyVarints(1 + n);
      }
      case kTagThreadName:
        return UpdatingTime() && LengthAndBytes();
      case kTagModule: {
        if (!UpdatingTime() || !CopyVarints(1) || !LengthAndBytes() || !LengthAndBytes()) {
          return false;
        }
        const uint8_t* at = p_;
        if (!Get(&n) || n > wire::kMaxSegments) return false;
        p_ = at;
        return CopyVarints(1 + 2 * n);
      }
      case kTagThreadExit:
        return UpdatingTime();
      case kTagCpu:
        return CopyVarints(1);
      default:
        return false;
    }
  }

  bool LengthAndBytes() {
    uint64_t n;
    const uint8_t* at = p_;
    if (!Get(&n)) return false;
    p_ = at;
    return CopyVarints(1) && Copy(static_cast<size_t>(n));
  }

  // An extension record: length, body. The central and window records'
  // bodies start with a ts delta from prev_ts that does not update it; the
  // rest of a body, and every other extension's, is copied.
  bool Extension(uint8_t tag) {
    uint64_t length;
    if (!Get(&length) || length > static_cast<uint64_t>(end_ - p_)) return false;
    const uint8_t* body_end = p_ + length;
    if (tag != kTagCentral && tag != kTagWindow) {
      PutVarint(length);
      return Copy(static_cast<size_t>(length));
    }
    uint64_t zz;
    const uint8_t* ts_end = wire::GetVarint(p_, body_end, &zz);
    if (ts_end == nullptr) return false;
    const uint64_t t = prev_ts_ + static_cast<uint64_t>(wire::UnZigZag(zz));
    uint8_t ts[wire::kMaxVarintBytes];
    const auto ts_bytes = static_cast<size_t>(
        wire::PutVarint(ts, wire::ZigZag(static_cast<int64_t>(RoundTimeDown(t, r_) - prev_out_))) -
        ts);
    const size_t rest = static_cast<size_t>(body_end - ts_end);
    PutVarint(ts_bytes + rest);
    Room(ts_bytes);
    std::memcpy(out_.data() + n_, ts, ts_bytes);
    n_ += ts_bytes;
    p_ = ts_end;
    return Copy(rest);
  }

  const uint8_t* p_;
  const uint8_t* end_;
  const uint32_t r_;
  uint64_t prev_ts_;   // as the original records give it
  uint64_t prev_out_;  // the rounded prev_ts_, as the rewritten records give it
  std::vector<uint8_t>& out_;
  size_t n_;
};

}  // namespace

bool ChunkRounder::Round(const uint8_t* chunk, size_t bytes, std::vector<uint8_t>& out,
                         std::string* error) const {
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
  out.resize(bytes + bytes / 8 + 64);
  std::memcpy(out.data(), chunk, kChunkHeaderBytes);
  const uint64_t base = wire::Load64(chunk + wire::kChkBaseTs);
  Rewriter rewriter(chunk + kChunkHeaderBytes, chunk + bytes, base, resolution_, out,
                    kChunkHeaderBytes);
  if (!rewriter.Run(error)) return false;
  const size_t new_payload = out.size() - kChunkHeaderBytes;
  if (out.size() > kMaxChunkBytes) {
    *error = "rounded chunk of " + std::to_string(out.size()) + " bytes passes the limit";
    return false;
  }
  uint8_t* h = out.data();
  wire::Store64(h + wire::kChkBaseTs, RoundTimeDown(base, resolution_));
  wire::Store32(h + wire::kChkLength, wire::PackLength(static_cast<uint32_t>(new_payload)));
  wire::Store32(h + wire::kChkCrc, Crc32c(h + wire::kChkCrcStart, out.size() - wire::kChkCrcStart));
  return true;
}

}  // namespace crossfree::format
