// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: rpc/header_codec's hand-written RequestHeader and
// ResponseHeader parsers against protobuf's own, on the same bytes (what a
// hostile client or server can put in a frame's header). The first byte
// picks the message; the rest is the header. Aborts when the two disagree
// on whether the bytes parse, on the error, or on any field; ASan and UBSan
// catch the rest.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tests/rpc/header_codec_compare.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace t = crossfree::rpc::testing;
  const std::string difference =
      (data[0] & 1) ? t::CompareResponseParse(bytes) : t::CompareRequestParse(bytes);
  if (!difference.empty()) {
    fprintf(stderr, "rpc_header_fuzz: header_codec and protobuf disagree: %s\n",
            difference.c_str());
    abort();
  }
  return 0;
}
