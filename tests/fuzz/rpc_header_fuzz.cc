// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: rpc/header_codec's hand-written RequestHeader and
// ResponseHeader parsers against protobuf's own, on the same bytes (what a
// hostile client or server can put in a frame's header). The first byte
// picks the message; the rest is the header. Aborts when the two disagree
// on whether the bytes parse, on the error, or on any field; ASan and UBSan
// catch the rest.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/header_codec.h"
#include "rpc/rpc_header.pb.h"

namespace {

using crossfree::rpc::ParsedRequestHeader;
using crossfree::rpc::ParsedResponseHeader;
using crossfree::rpc::Status;

void Require(bool ok) {
  if (!ok) abort();
}

// Accept/reject and the error message must be protobuf's. True if both accepted.
template <typename Message>
bool SameVerdict(const Message& pb, bool pb_parsed, const Status& s) {
  if (!pb_parsed) {
    Require(s.message() == "invalid frame: unparsable header");
    return false;
  }
  if (!pb.IsInitialized()) {
    Require(s.message() ==
            "invalid frame: header is missing required fields: " + pb.InitializationErrorString());
    return false;
  }
  Require(s.ok());
  return true;
}

void CheckRequest(std::string_view bytes) {
  crossfree::rpc::RequestHeader pb;
  const bool pb_parsed = pb.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size()));
  ParsedRequestHeader h;
  if (!SameVerdict(pb, pb_parsed, ParseRequestHeader(bytes, &h))) return;
  Require(h.call_id == pb.call_id());
  Require(h.has_remote_method == pb.has_remote_method());
  Require(h.service_name == pb.remote_method().service_name());
  Require(h.method_name == pb.remote_method().method_name());
  Require(h.timeout_millis == pb.timeout_millis());
  Require(h.sidecar_offsets ==
          std::vector<uint32_t>(pb.sidecar_offsets().begin(), pb.sidecar_offsets().end()));
}

void CheckResponse(std::string_view bytes) {
  crossfree::rpc::ResponseHeader pb;
  const bool pb_parsed = pb.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size()));
  ParsedResponseHeader h;
  if (!SameVerdict(pb, pb_parsed, ParseResponseHeader(bytes, &h))) return;
  Require(h.call_id == pb.call_id());
  Require(h.is_error == pb.is_error());
  Require(h.sidecar_offsets ==
          std::vector<uint32_t>(pb.sidecar_offsets().begin(), pb.sidecar_offsets().end()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    CheckResponse(bytes);
  } else {
    CheckRequest(bytes);
  }
  return 0;
}
