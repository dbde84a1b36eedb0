// SPDX-License-Identifier: Apache-2.0
// Frame encoding/decoding. No allocation: messages serialize straight into
// the caller's buffer and parsing works on views of the received bytes.
#include "rpc/serialization.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <utility>

namespace crossfree::rpc {

namespace {

// Reads a varint of at most 5 bytes (a u32). False when truncated or too long.
bool ReadVarint32(std::string_view* in, uint32_t* out) {
  // One byte: every header length and small body length (the loop below
  // costs several times as much, and runs twice per frame).
  if (!in->empty() && static_cast<uint8_t>(in->front()) < 0x80) {
    *out = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    return true;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < in->size() && i < 5; ++i) {
    uint8_t b = static_cast<uint8_t>((*in)[i]);
    v |= uint64_t{b & 0x7fu} << (7 * i);
    if ((b & 0x80) == 0) {
      if (v > UINT32_MAX) return false;
      *out = static_cast<uint32_t>(v);
      in->remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

}  // namespace

void WriteConnHeader(uint8_t out[kConnHeaderLength]) {
  memcpy(out, kConnMagic, 4);
  out[4] = kProtocolVersion;
  out[5] = out[6] = out[7] = 0;
}

Status ValidateConnHeader(const uint8_t header[kConnHeaderLength]) {
  if (memcmp(header, kConnMagic, 4) != 0) {
    char shown[40];
    snprintf(shown, sizeof(shown), "%02x %02x %02x %02x", header[0], header[1], header[2],
             header[3]);
    return Status::InvalidArgument(std::string("bad connection header magic: got ") + shown +
                                   ", expected 63 66 72 70 (\"cfrp\")");
  }
  if (header[4] != kProtocolVersion) {
    return Status::InvalidArgument("unsupported RPC version " + std::to_string(header[4]) +
                                   " (this build speaks version " +
                                   std::to_string(kProtocolVersion) + ")");
  }
  // Reserved for flags of later versions: a peer that sets them expects
  // something this build does not do.
  if (header[5] != 0 || header[6] != 0 || header[7] != 0) {
    char shown[16];
    snprintf(shown, sizeof(shown), "%02x %02x %02x", header[5], header[6], header[7]);
    return Status::InvalidArgument(std::string("connection header reserved bytes must be zero, got ") +
                                   shown);
  }
  return Status::OK();
}

Status ConnHeaderReceiver::Consume(const uint8_t* p, size_t len, size_t* used) {
  size_t n = std::min(kConnHeaderLength - received_, len);
  memcpy(bytes_ + received_, p, n);
  received_ += n;
  *used = n;
  return complete() ? ValidateConnHeader(bytes_) : Status::OK();
}

FrameLayout ComputeFrameLayout(size_t header_size, size_t body_size, size_t sidecar_bytes) {
  FrameLayout l;
  l.header_size = header_size;
  l.body_size = body_size;
  l.sidecar_bytes = sidecar_bytes;
  l.head_bytes = kFrameLengthPrefix + VarintSize(l.header_size) + l.header_size +
                 VarintSize(l.body_size + sidecar_bytes);
  l.total = l.head_bytes + l.body_size + sidecar_bytes;
  return l;
}

FrameLayout ComputeFrameLayout(const google::protobuf::MessageLite& header, size_t body_size,
                               size_t sidecar_bytes) {
  return ComputeFrameLayout(header.ByteSizeLong(), body_size, sidecar_bytes);
}

uint8_t* WriteFrameStart(const FrameLayout& l, uint8_t* dst) {
  EncodeBigEndian32(static_cast<uint32_t>(l.total - kFrameLengthPrefix), dst);
  return WriteVarint(l.header_size, dst + kFrameLengthPrefix);
}

uint8_t* WriteBodyLength(const FrameLayout& l, uint8_t* header_end) {
  return WriteVarint(l.body_size + l.sidecar_bytes, header_end);
}

uint8_t* SerializeFrameHeader(const FrameLayout& l, const google::protobuf::MessageLite& header,
                              uint8_t* dst) {
  uint8_t* p = WriteFrameStart(l, dst);
  p = header.SerializeWithCachedSizesToArray(p);
  return WriteBodyLength(l, p);
}

namespace {

// The errors of ParseFrameWith, out of line (cold): building their
// messages needs a large stack frame the valid frame should not pay for.
[[gnu::noinline, gnu::cold]] Status FrameError(const char* what) {
  return Status::Corruption(std::string("invalid frame: ") + what);
}
[[gnu::noinline, gnu::cold]] Status HeaderTooLong(uint32_t header_len, size_t left) {
  return Status::Corruption("invalid frame: header length " + std::to_string(header_len) +
                            " exceeds the " + std::to_string(left) + " bytes left in the frame");
}
[[gnu::noinline, gnu::cold]] Status BodyLengthMismatch(uint32_t body_len, size_t left) {
  return Status::Corruption("invalid frame: body length " + std::to_string(body_len) + " but " +
                            std::to_string(left) + " bytes remain");
}

// ParseFrame for any header parser: `parse_header(bytes)` returns OK or the
// Corruption to report.
template <typename ParseHeader>
Status ParseFrameWith(std::string_view frame, ParseHeader parse_header, std::string_view* body) {
  uint32_t header_len = 0;
  if (!ReadVarint32(&frame, &header_len)) {
    return FrameError("missing or truncated header length varint");
  }
  if (header_len > frame.size()) return HeaderTooLong(header_len, frame.size());
  CROSSFREE_RETURN_NOT_OK(parse_header(frame.substr(0, header_len)));
  frame.remove_prefix(header_len);
  uint32_t body_len = 0;
  if (!ReadVarint32(&frame, &body_len)) {
    return FrameError("missing or truncated body length varint");
  }
  if (body_len != frame.size()) return BodyLengthMismatch(body_len, frame.size());
  *body = frame;
  return Status::OK();
}

}  // namespace

Status ParseFrame(std::string_view frame, google::protobuf::MessageLite* header,
                  std::string_view* body) {
  return ParseFrameWith(
      frame,
      [header](std::string_view bytes) {
        // ParsePartial + IsInitialized rather than ParseFromArray: same check,
        // without protobuf logging an error line for every bad frame a peer sends.
        if (!header->ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
          return Status::Corruption("invalid frame: unparsable header");
        }
        if (!header->IsInitialized()) {
          return Status::Corruption("invalid frame: header is missing required fields: " +
                                    header->InitializationErrorString());
        }
        return Status::OK();
      },
      body);
}

Status ParseFrame(std::string_view frame, ParsedRequestHeader* header, std::string_view* body) {
  return ParseFrameWith(
      frame, [header](std::string_view bytes) { return ParseRequestHeader(bytes, header); }, body);
}

Status ParseFrame(std::string_view frame, ParsedResponseHeader* header, std::string_view* body) {
  return ParseFrameWith(
      frame, [header](std::string_view bytes) { return ParseResponseHeader(bytes, header); },
      body);
}

Status AppendOutboundSidecar(std::vector<std::string>* sidecars, std::string data, int* idx) {
  if (sidecars->size() >= static_cast<size_t>(kMaxSidecars)) {
    return Status::InvalidArgument("too many sidecars (limit " + std::to_string(kMaxSidecars) +
                                   ")");
  }
  sidecars->push_back(std::move(data));
  *idx = static_cast<int>(sidecars->size()) - 1;
  return Status::OK();
}

Status SplitSidecarsWithOffsets(std::string_view body, std::span<const uint32_t> offsets,
                                std::string_view* pb, std::vector<std::string_view>* sidecars,
                                int max_sidecars) {
  sidecars->clear();
  int n = static_cast<int>(std::min<size_t>(offsets.size(), INT_MAX));
  if (n > max_sidecars) {
    return Status::Corruption("too many sidecars: " + std::to_string(n) + " (limit " +
                              std::to_string(max_sidecars) + ")");
  }
  if (n == 0) {
    *pb = body;
    return Status::OK();
  }
  sidecars->reserve(n);
  for (int i = 0; i < n; ++i) {
    uint32_t start = offsets[i];
    uint32_t end = i + 1 < n ? offsets[i + 1] : static_cast<uint32_t>(body.size());
    if (start > body.size() || end > body.size()) {
      return Status::Corruption("sidecar offset " + std::to_string(start) +
                                " is past the end of a " + std::to_string(body.size()) +
                                "-byte body");
    }
    if (end < start) {
      return Status::Corruption("sidecar offsets decrease: " + std::to_string(start) + " then " +
                                std::to_string(end));
    }
    sidecars->push_back(body.substr(start, end - start));
  }
  *pb = body.substr(0, offsets[0]);
  return Status::OK();
}

}  // namespace crossfree::rpc
