// SPDX-License-Identifier: Apache-2.0
// rpc/header_codec: the hand-written RequestHeader / ResponseHeader codec
// against protobuf's, byte for byte when writing, and accept/reject plus
// every field when parsing (valid headers, hand-made edge cases, and random
// and mutated bytes).
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/header_codec.h"
#include "tests/rpc/header_codec_compare.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"

namespace crossfree::rpc {
namespace {

using namespace std::string_literals;

std::string Hex(const std::string& b) {
  std::string out;
  char buf[4];
  for (unsigned char c : b) {
    snprintf(buf, sizeof(buf), "%02x ", c);
    out += buf;
  }
  return out;
}

std::string Varint(uint64_t v) {
  uint8_t b[10];
  return std::string(reinterpret_cast<char*>(b), WriteVarint(v, b) - b);
}

// Parses with both codecs and checks they agree (header_codec_compare.h).
void CheckSameRequest(const std::string& bytes) {
  INFO("bytes: " << Hex(bytes));
  CHECK(testing::CompareRequestParse(bytes) == "");
}

void CheckSameResponse(const std::string& bytes) {
  INFO("bytes: " << Hex(bytes));
  CHECK(testing::CompareResponseParse(bytes) == "");
}

std::string WrittenRequest(int32_t call_id, const std::string& svc, const std::string& method,
                           uint32_t timeout, size_t body, const std::vector<std::string>& sc) {
  std::string field = EncodeRemoteMethodField(svc, method);
  const RequestHeaderFields f = {.call_id = call_id, .remote_method_field = field,
                                 .timeout_millis = timeout, .body_size = body, .sidecars = sc};
  std::string out(RequestHeaderSize(f), '\0');
  uint8_t* end = WriteRequestHeader(f, reinterpret_cast<uint8_t*>(out.data()));
  REQUIRE(end == reinterpret_cast<uint8_t*>(out.data()) + out.size());
  return out;
}

TEST_CASE("headers are written as protobuf writes them", "[rpc][header_codec]") {
  // The byte-count boundaries of the parsers' short-varint fast path
  // (1 to 4 bytes; 5 and more take the general parser) included.
  const std::vector<int32_t> ids = {0,       1,           127,           128,     300,
                                    16383,   16384,       (1 << 21) - 1, 1 << 21, (1 << 28) - 1,
                                    1 << 28, INT32_MAX,   -1};
  const std::vector<std::string> names = {"", "m", "crossfree.rpc.test.CalculatorService",
                                          std::string(200, 'n')};
  const std::vector<std::vector<std::string>> sidecars = {
      {}, {"a"}, {"", "bb", std::string(300, 'c')}};
  for (int32_t id : ids) {
    for (const std::string& name : names) {
      for (uint32_t timeout : {0u, 1u, 10000u, (1u << 28) - 1, 1u << 28, UINT32_MAX}) {
        for (const auto& sc : sidecars) {
          for (size_t body : {size_t{0}, size_t{5}, size_t{1} << 20, size_t{1} << 28}) {
            RequestHeader pb;
            pb.set_call_id(id);
            pb.mutable_remote_method()->set_service_name(name);
            pb.mutable_remote_method()->set_method_name("Add");
            if (timeout > 0) pb.set_timeout_millis(timeout);
            size_t off = body;
            for (const std::string& s : sc) {
              pb.add_sidecar_offsets(static_cast<uint32_t>(off));
              off += s.size();
            }
            std::string ours = WrittenRequest(id, name, "Add", timeout, body, sc);
            REQUIRE(ours == pb.SerializeAsString());
            CheckSameRequest(ours);
          }
        }
      }
    }
    for (bool err : {false, true}) {
      for (const auto& sc : sidecars) {
        ResponseHeader pb;
        pb.set_call_id(id);
        if (err) pb.set_is_error(true);
        size_t off = 7;
        for (const std::string& s : sc) {
          pb.add_sidecar_offsets(static_cast<uint32_t>(off));
          off += s.size();
        }
        ResponseHeaderFields f;
        f.call_id = id;
        f.is_error = err;
        f.body_size = 7;
        f.sidecars = sc;
        std::string ours(ResponseHeaderSize(f), '\0');
        WriteResponseHeader(f, reinterpret_cast<uint8_t*>(ours.data()));
        REQUIRE(ours == pb.SerializeAsString());
        CheckSameResponse(ours);
      }
    }
  }
}

TEST_CASE("edge cases parse as protobuf parses them", "[rpc][header_codec]") {
  const std::string rm = EncodeRemoteMethodField("s", "m");
  const std::string id = "\x08\x05";
  std::vector<std::string> req = {
      "",                                           // no call id
      id,                                           // no remote method (allowed here)
      id + rm + rm,                                 // repeated message: merged
      id + "\x12\x03\x0a\x01x" + "\x12\x03\x12\x01y",  // merged from two halves
      id + "\x12\x03\x0a\x01x",                     // method name missing
      "\x12\x00"s,                                  // call id and both names missing
      id + rm + "\x22\x03\x01\x02\x03",             // packed offsets
      id + rm + "\x20\x01\x22\x02\x02\x03\x20\x04",  // packed and unpacked mixed
      id + rm + "\x22\x02\x01",                     // packed run too short
      id + rm + "\x22\x01\x81",                     // varint crosses the packed end
      id + rm + "\x18" + Varint(UINT64_MAX),        // 10-byte varint, low 32 bits kept
      "\x08" + Varint(uint64_t{1} << 40) + rm,      // call id keeps its low 32 bits
      "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f" + rm,  // 10 bytes, last one big
      "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01" + rm,  // 11 bytes
      id + rm + std::string("\x00", 1),             // tag 0
      id + rm + "\x0c",                             // end group without start
      id + rm + "\x0b\x08\x01\x0c",                 // unknown group, skipped
      id + rm + "\x0b\x08\x01\x14",                 // group ended by another number
      id + rm + "\x0b\x08\x01",                     // group not ended
      id + rm + "\x0b\x13\x14\x0c",                 // nested groups
      id + rm + "\x29\x01\x02\x03\x04\x05\x06\x07\x08",  // unknown fixed64
      id + rm + "\x2d\x01\x02\x03\x04",             // unknown fixed32
      id + rm + "\x2d\x01\x02\x03",                 // fixed32 too short
      id + rm + "\x2a\x02" "ab",                       // unknown length-delimited
      id + rm + "\x2a\x05" "ab",                       // length past the end
      id + rm + "\x2e",                             // wire type 6
      id + rm + "\x2f",                             // wire type 7
      "\x0a\x01x" + id + rm,                        // call id field with wire type 2
      id + "\x10\x05" + rm,                         // remote method with wire type 0
      id + "\x12\x05\x0a\x01s\x12\x05" + "xx",      // inner length past the outer one
      id + "\x12\x04\x0a\x01s\x00\x12\x01m"s,        // tag 0 inside the message
      id + "\x12\x08\x0a\x01s\x12\x01m\x0b\x0c" + "",  // group inside the message
      id + "\x12\x03\x0a\x01s\x0c",                 // end group inside the message
      id + rm + "\xf8\xff\xff\xff\x0f\x01",         // 5-byte tag, unknown field
      id + rm + "\xf8\xff\xff\xff\xff\x01",         // 6-byte tag
      id + rm + "\x2a\xff\xff\xff\xff\x07",         // length of 2 GiB - 1
      id + rm + "\x2a\x80\x80\x80\x80\x08",         // 5th length byte too big
      id + "\x12\x80\x80\x80\x80\x10",              // absurd message length
  };
  // Nested groups: 100 deep at the top is the limit, as protobuf's recursion limit.
  for (int depth : {99, 100, 101}) {
    std::string g;
    for (int i = 0; i < depth; ++i) g += "\x0b";
    for (int i = 0; i < depth; ++i) g += "\x0c";
    req.push_back(id + rm + g);
  }
  for (const std::string& b : req) CheckSameRequest(b);

  std::vector<std::string> resp = {
      "", "\x08\x01", "\x08\x01\x10\x02", "\x08\x01\x10\x00"s, "\x10\x01",
      "\x08\x01\x1a\x02\x05\x06", "\x08\x01\x18\x05\x18\x06", "\x08\x01\x12\x01x",
      "\x08\x01\x21\x01\x02\x03\x04\x05\x06\x07\x08", "\x08\x01\x0b\x0c", "\x08\x01\x0c",
      "\x08\x01\x10" + Varint(uint64_t{1} << 63),
  };
  for (const std::string& b : resp) CheckSameResponse(b);
}

TEST_CASE("random and mutated headers parse as protobuf parses them", "[rpc][header_codec]") {
  std::mt19937_64 next(0x9E3779B97F4A7C15ull);  // fixed seed: every run sees the same inputs
  const std::vector<std::string> sc = {"ab", "cd"};
  const std::string good_req = WrittenRequest(9, "svc", "Add", 500, 4, sc);
  ResponseHeader r;
  r.set_call_id(9);
  r.set_is_error(true);
  r.add_sidecar_offsets(2);
  r.add_sidecar_offsets(4);
  const std::string good_resp = r.SerializeAsString();
  for (int i = 0; i < 40000; ++i) {
    const bool request = i % 2 == 0;
    std::string buf;
    if (i % 4 < 2) {
      buf.assign(next() % 24, '\0');
      for (char& c : buf) c = static_cast<char>(next());
    } else {
      buf = request ? good_req : good_resp;
      for (uint64_t k = 0, n = 1 + next() % 3; k < n; ++k) {
        switch (next() % 3) {
          case 0: buf[next() % buf.size()] = static_cast<char>(next()); break;
          case 1: buf.insert(next() % (buf.size() + 1), 1, static_cast<char>(next())); break;
          default:
            if (buf.size() > 1) buf.erase(next() % buf.size(), 1);
        }
      }
    }
    if (request) {
      CheckSameRequest(buf);
    } else {
      CheckSameResponse(buf);
    }
  }
}

TEST_CASE("a hand-written request frame parses with ParseFrame", "[rpc][header_codec]") {
  RequestHeaderFields f;
  std::string field = EncodeRemoteMethodField("svc", "Add");
  f.call_id = 3;
  f.remote_method_field = field;
  f.body_size = 2;
  FrameLayout l = ComputeFrameLayout(RequestHeaderSize(f), 2, 0);
  std::string frame(l.head_bytes, '\0');
  uint8_t* p = reinterpret_cast<uint8_t*>(frame.data());
  uint8_t* body = WriteBodyLength(l, WriteRequestHeader(f, WriteFrameStart(l, p)));
  REQUIRE(body == p + l.head_bytes);
  frame += "bb";
  ParsedRequestHeader h;
  std::string_view rest;
  REQUIRE(ParseFrame(std::string_view(frame).substr(4), &h, &rest).ok());
  CHECK(h.call_id == 3);
  CHECK(h.service_name == "svc");
  CHECK(h.method_name == "Add");
  CHECK(rest == "bb");
  RequestHeader pb;
  REQUIRE(ParseFrame(std::string_view(frame).substr(4), &pb, &rest).ok());
  CHECK(pb.remote_method().method_name() == "Add");
}

}  // namespace
}  // namespace crossfree::rpc
