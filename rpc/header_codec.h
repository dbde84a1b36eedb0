// SPDX-License-Identifier: Apache-2.0
// The two per-call frame headers (RequestHeader and ResponseHeader of
// rpc_header.proto) written and parsed by hand, without protobuf messages.
// Why: they are a few varints and two names, yet building and parsing them as
// protobuf messages was a large part of a small call's CPU (the name
// strings copied into arena strings on both sides, ByteSizeLong, message
// construction). The bytes are exactly the ones protobuf writes for
// the same fields, and parsing accepts and rejects what protobuf's parser
// does (unknown fields skipped, packed or unpacked offsets, repeated
// messages merged), so peers using the .proto interoperate unchanged;
// tests/rpc/header_codec_test.cc checks both against protobuf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/status.h"

namespace crossfree::rpc {

// --- Writing (pure functions) ---

// The encoded remote_method field of a RequestHeader (tag, length and the
// RemoteMethodPB with both names): the same for every call of a method, so
// RemoteMethod computes it once.
std::string EncodeRemoteMethodField(std::string_view service_name, std::string_view method_name);

// What a RequestHeader carries. sidecar offsets are derived from the body
// size and the sidecars (each one starts where the previous one ended).
struct RequestHeaderFields {
  int32_t call_id = 0;
  std::string_view remote_method_field;  // from EncodeRemoteMethodField
  uint32_t timeout_millis = 0;           // 0: not sent
  size_t body_size = 0;
  std::span<const std::string> sidecars;
};
size_t RequestHeaderSize(const RequestHeaderFields& f);
// Writes RequestHeaderSize(f) bytes at dst; returns the end.
uint8_t* WriteRequestHeader(const RequestHeaderFields& f, uint8_t* dst);

struct ResponseHeaderFields {
  int32_t call_id = 0;
  bool is_error = false;
  size_t body_size = 0;
  std::span<const std::string> sidecars;
};
size_t ResponseHeaderSize(const ResponseHeaderFields& f);
uint8_t* WriteResponseHeader(const ResponseHeaderFields& f, uint8_t* dst);

// --- Parsing (into views of the header bytes, which must outlive them) ---

struct ParsedRequestHeader {
  int32_t call_id = 0;
  bool has_remote_method = false;
  std::string_view service_name;
  std::string_view method_name;
  uint32_t timeout_millis = 0;  // 0: none
  // Kept across parses (an InboundCall is pooled), so no allocation per call.
  std::vector<uint32_t> sidecar_offsets;
};

struct ParsedResponseHeader {
  int32_t call_id = 0;
  bool is_error = false;
  std::vector<uint32_t> sidecar_offsets;
};

// Corruption "invalid frame: unparsable header", or "invalid frame: header
// is missing required fields: <names>" (protobuf's InitializationErrorString
// spelling), as ParseFrame says for the protobuf messages.
Status ParseRequestHeader(std::string_view bytes, ParsedRequestHeader* h);
Status ParseResponseHeader(std::string_view bytes, ParsedResponseHeader* h);

}  // namespace crossfree::rpc
