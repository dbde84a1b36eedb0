// SPDX-License-Identifier: Apache-2.0
// Wire-format encoding and decoding: the connection header and one frame
// (length prefix, varint-delimited header and body, sidecars).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/message_lite.h>
#include <google/protobuf/repeated_field.h>

#include "rpc/header_codec.h"
#include "rpc/status.h"

namespace crossfree::rpc {

// Connection header, sent once by the client before its first frame:
//   "cfrp" (4 bytes) | version (1 byte) | 3 reserved bytes (must be 0).
inline constexpr size_t kConnHeaderLength = 8;
inline constexpr char kConnMagic[4] = {'c', 'f', 'r', 'p'};
inline constexpr uint8_t kProtocolVersion = 1;
void WriteConnHeader(uint8_t out[kConnHeaderLength]);
// InvalidArgument naming the problem for a bad magic, version or non-zero
// reserved bytes.
Status ValidateConnHeader(const uint8_t header[kConnHeaderLength]);

// The connection header as a server receives it: in pieces of any size,
// ahead of the first frame. Owner: one server connection; used by the one
// thread that reads its socket (its reactor, or its connection thread).
class ConnHeaderReceiver {
 public:
  bool complete() const { return received_ == kConnHeaderLength; }
  // Takes the header's missing bytes from the front of [p, p + len) and
  // sets *used to their number. Once the header is whole: its check
  // (ValidateConnHeader); OK while it is not.
  Status Consume(const uint8_t* p, size_t len, size_t* used);

 private:
  uint8_t bytes_[kConnHeaderLength];
  size_t received_ = 0;
};

// Length of the frame length prefix: a u32, big-endian, counting the bytes
// that follow it.
inline constexpr size_t kFrameLengthPrefix = 4;
// Frames whose prefix is at most this are invalid (no room for a header).
inline constexpr uint32_t kMinFrameLength = 2;
inline constexpr size_t kDefaultMaxMessageSize = 50 * 1024 * 1024;
// At most this many sidecars per frame.
inline constexpr int kMaxSidecars = 10000;

// Sizes of one frame, computed once (ByteSizeLong also caches the header's
// size, which SerializeFrameHeader reuses).
struct FrameLayout {
  size_t header_size = 0;
  size_t body_size = 0;       // the body message only
  size_t sidecar_bytes = 0;   // all sidecars together
  size_t head_bytes = 0;      // prefix, header varint, header, body varint
  size_t total = 0;           // whole frame including prefix and sidecars
};

// Computes the layout of a frame made of `header`, a body message of
// `body_size` bytes and sidecars.
FrameLayout ComputeFrameLayout(const google::protobuf::MessageLite& header, size_t body_size,
                               size_t sidecar_bytes);

// The same for a header of `header_size` bytes written without protobuf
// (header_codec.h): WriteFrameStart writes the length prefix and the header
// length varint and returns where the header goes; WriteBodyLength, given
// the end of the header, writes the body length varint and returns where
// the body goes.
FrameLayout ComputeFrameLayout(size_t header_size, size_t body_size, size_t sidecar_bytes);
uint8_t* WriteFrameStart(const FrameLayout& layout, uint8_t* dst);
uint8_t* WriteBodyLength(const FrameLayout& layout, uint8_t* header_end);

// Writes the length prefix, the header and the body length varint
// (layout.head_bytes bytes) into dst and returns where the body goes. Call
// right after ComputeFrameLayout on the same, unchanged header.
uint8_t* SerializeFrameHeader(const FrameLayout& layout,
                              const google::protobuf::MessageLite& header, uint8_t* dst);

// Parses the bytes after the length prefix: header into *header, and the
// body-plus-sidecars region into *body. Corruption naming the problem for a
// missing/short varint, an unparsable header or trailing bytes.
Status ParseFrame(std::string_view frame, google::protobuf::MessageLite* header,
                  std::string_view* body);
// The same, parsing the header by hand (header_codec.h): what the
// connections use; the same checks and messages.
Status ParseFrame(std::string_view frame, ParsedRequestHeader* header, std::string_view* body);
Status ParseFrame(std::string_view frame, ParsedResponseHeader* header, std::string_view* body);

// Appends data to the outbound sidecars of one call and sets *idx to its
// index; InvalidArgument once the call has kMaxSidecars. The caller owns
// the vector (RpcController on the client, RpcContext on the server).
Status AppendOutboundSidecar(std::vector<std::string>* sidecars, std::string data, int* idx);

// Splits body-plus-sidecars by sidecar offsets (relative to the body start).
// *pb gets the body message bytes; *sidecars each sidecar (cleared first). Corruption for
// more than `max_sidecars`, decreasing offsets or offsets past the end.
Status SplitSidecarsWithOffsets(std::string_view body, std::span<const uint32_t> offsets,
                                std::string_view* pb, std::vector<std::string_view>* sidecars,
                                int max_sidecars);
// Inline for the usual frame without sidecars (twice per call).
inline Status SplitSidecars(std::string_view body, std::span<const uint32_t> offsets,
                            std::string_view* pb, std::vector<std::string_view>* sidecars,
                            int max_sidecars) {
  if (offsets.empty()) {
    sidecars->clear();
    *pb = body;
    return Status::OK();
  }
  return SplitSidecarsWithOffsets(body, offsets, pb, sidecars, max_sidecars);
}
inline Status SplitSidecars(std::string_view body,
                            const google::protobuf::RepeatedField<uint32_t>& offsets,
                            std::string_view* pb, std::vector<std::string_view>* sidecars,
                            int max_sidecars) {
  return SplitSidecars(body, std::span<const uint32_t>(offsets.data(), offsets.size()), pb,
                       sidecars, max_sidecars);
}

// Base-128 varints (protobuf's): the encoded size of v, and writing it.
inline size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
inline uint8_t* WriteVarint(uint64_t v, uint8_t* p) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Big-endian u32 helpers.
inline void EncodeBigEndian32(uint32_t v, uint8_t* p) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
inline uint32_t DecodeBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace crossfree::rpc
