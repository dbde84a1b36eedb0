// SPDX-License-Identifier: Apache-2.0
// Parses the same header bytes with rpc/header_codec and with protobuf's
// generated RequestHeader / ResponseHeader and says where they disagree:
// on accepting the bytes, on the error text, or on a field. Shared by the
// differential test (tests/rpc/header_codec_test.cc) and the libFuzzer
// target (tests/fuzz/rpc_header_fuzz.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/header_codec.h"
#include "rpc/rpc_header.pb.h"

namespace crossfree::rpc::testing {

namespace compare_internal {

// "" when the codec's status is protobuf's verdict on the same bytes;
// *both_ok tells whether both accepted them.
template <typename Message>
std::string CompareVerdict(const Message& pb, bool pb_parsed, const Status& s, bool* both_ok) {
  *both_ok = false;
  std::string want;
  if (!pb_parsed) {
    want = "invalid frame: unparsable header";
  } else if (!pb.IsInitialized()) {
    want = "invalid frame: header is missing required fields: " + pb.InitializationErrorString();
  }
  if (!want.empty()) {
    return s.message() == want ? "" : "codec said '" + s.message() + "', protobuf '" + want + "'";
  }
  if (!s.ok()) return "codec rejected what protobuf accepts: " + s.message();
  *both_ok = true;
  return "";
}

template <typename Repeated>
std::vector<uint32_t> Offsets(const Repeated& r) {
  return std::vector<uint32_t>(r.begin(), r.end());
}

// Parses bytes with protobuf (as PB) and with `parse` (into a Parsed):
// the verdicts' difference, else the first field that differs: call_id,
// then the header type's own fields (`fields(parsed, pb)`), then
// sidecar_offsets, the fields both header types have; "" when every field
// agrees.
template <typename PB, typename Parsed, typename Parse, typename Fields>
std::string CompareParse(std::string_view bytes, Parse parse, Fields fields) {
  PB pb;
  const bool pb_parsed = pb.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size()));
  Parsed h;
  bool both_ok = false;
  std::string verdict = CompareVerdict(pb, pb_parsed, parse(bytes, &h), &both_ok);
  if (!both_ok) return verdict;
  if (h.call_id != pb.call_id()) return "call_id";
  std::string differs = fields(h, pb);
  if (!differs.empty()) return differs;
  if (h.sidecar_offsets != Offsets(pb.sidecar_offsets())) return "sidecar_offsets";
  return "";
}

}  // namespace compare_internal

// "" when both parsers agree on bytes, else the first difference.
inline std::string CompareRequestParse(std::string_view bytes) {
  return compare_internal::CompareParse<RequestHeader, ParsedRequestHeader>(
      bytes, ParseRequestHeader,
      [](const ParsedRequestHeader& h, const RequestHeader& pb) -> std::string {
        if (h.has_remote_method != pb.has_remote_method()) return "has_remote_method";
        if (h.service_name != pb.remote_method().service_name()) return "service_name";
        if (h.method_name != pb.remote_method().method_name()) return "method_name";
        if (h.timeout_millis != pb.timeout_millis()) return "timeout_millis";
        return "";
      });
}

inline std::string CompareResponseParse(std::string_view bytes) {
  return compare_internal::CompareParse<ResponseHeader, ParsedResponseHeader>(
      bytes, ParseResponseHeader,
      [](const ParsedResponseHeader& h, const ResponseHeader& pb) -> std::string {
        if (h.is_error != pb.is_error()) return "is_error";
        return "";
      });
}

}  // namespace crossfree::rpc::testing
