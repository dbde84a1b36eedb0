// SPDX-License-Identifier: Apache-2.0
// The kTagCentral record: round trip, independence from the delta state of
// the records around it, and malformed bodies.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "format/trace_reader.h"
#include "format/trace_writer.h"

namespace crossfree::format {
namespace {

struct Collect : RecordVisitor {
  std::vector<Event> events;
  std::vector<CentralEvent> central;
  void OnEvent(const Event& e) override { events.push_back(e); }
  void OnCentral(const CentralEvent& c) override { central.push_back(c); }
};

// One chunk: alloc, central, alloc (the second alloc's deltas must not be
// affected by the central record in between).
std::vector<uint8_t> MakeChunk(bool with_central, size_t* central_at = nullptr) {
  std::vector<uint8_t> buf(ChunkWriter::kMinChunkCapacity);
  ChunkWriter w(buf.data(), buf.size());
  w.Begin(7, 0, 1000);
  REQUIRE(w.AppendAlloc(AllocFn::kMalloc, 1100, 0x10000, 64, 3));
  if (central_at) *central_at = w.size();
  if (with_central) REQUIRE(w.AppendCentral(CentralOp::kRelease, 5000, 12, 32, 9));
  REQUIRE(w.AppendAlloc(AllocFn::kNew, 1200, 0x20000, 48, 4));
  buf.resize(w.Finish());
  return buf;
}

Chunk Parse(const std::vector<uint8_t>& bytes) {
  Chunk c;
  c.tid = 7;
  c.base_timestamp_ns = 1000;
  c.event_count = 2;
  c.payload = std::span<const uint8_t>(bytes.data() + kChunkHeaderBytes,
                                       bytes.size() - kChunkHeaderBytes);
  return c;
}

TEST_CASE("central record round-trips and leaves the other records' deltas alone") {
  std::vector<uint8_t> with = MakeChunk(true), without = MakeChunk(false);
  Collect a, b;
  std::string error;
  REQUIRE(DecodeChunk(Parse(with), a, &error));
  REQUIRE(DecodeChunk(Parse(without), b, &error));
  REQUIRE(a.central.size() == 1);
  CHECK(a.central[0].tid == 7);
  CHECK(a.central[0].timestamp_ns == 5000);
  CHECK(a.central[0].op == CentralOp::kRelease);
  CHECK(a.central[0].size_class == 12);
  CHECK(a.central[0].count == 32);
  CHECK(a.central[0].stack_id == 9);
  REQUIRE(a.events.size() == 2);
  REQUIRE(b.events.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(a.events[i].timestamp_ns == b.events[i].timestamp_ns);
    CHECK(a.events[i].address == b.events[i].address);
    CHECK(a.events[i].size == b.events[i].size);
    CHECK(a.events[i].stack_id == b.events[i].stack_id);
  }
  CHECK(a.events[1].timestamp_ns == 1200);
  CHECK(a.events[1].address == 0x20000);
  // Exact bytes: tag, length 6, ts delta zigzag(5000-1100)=7800 (2 bytes),
  // op 1, class 12, count 32, stack 9.
  size_t at = 0;
  MakeChunk(true, &at);
  std::vector<uint8_t> expect = {0x80, 0x06, 0xf8, 0x3c, 0x01, 0x0c, 0x20, 0x09};
  CHECK(std::vector<uint8_t>(with.begin() + at, with.begin() + at + 8) == expect);
}

TEST_CASE("every central op decodes, large values keep their width") {
  std::vector<uint8_t> buf(ChunkWriter::kMinChunkCapacity);
  ChunkWriter w(buf.data(), buf.size());
  w.Begin(1, 0, 0);
  for (uint8_t op = 0; op <= kMaxCentralOp; ++op) {
    REQUIRE(w.AppendCentral(static_cast<CentralOp>(op), 10 + op, UINT32_MAX, UINT64_MAX,
                            UINT32_MAX));
  }
  CHECK(w.event_count() == 0);
  buf.resize(w.Finish());
  Chunk c = Parse(buf);
  c.event_count = 0;
  c.base_timestamp_ns = 0;
  Collect v;
  std::string error;
  REQUIRE(DecodeChunk(c, v, &error));
  REQUIRE(v.central.size() == 4);
  for (uint8_t op = 0; op <= kMaxCentralOp; ++op) {
    CHECK(static_cast<uint8_t>(v.central[op].op) == op);
    CHECK(v.central[op].timestamp_ns == 10u + op);
    CHECK(v.central[op].size_class == UINT32_MAX);
    CHECK(v.central[op].count == UINT64_MAX);
    CHECK(v.central[op].stack_id == UINT32_MAX);
  }
}

TEST_CASE("malformed central bodies are corruption with the record's offset") {
  std::string error;
  Collect v;
  // op 4 is unknown.
  std::vector<uint8_t> bad_op = {0x80, 0x05, 0x00, 0x04, 0x01, 0x01, 0x00};
  Chunk c;
  c.payload = bad_op;
  CHECK_FALSE(DecodeChunk(c, v, &error));
  CHECK(error == "corrupt record at offset 32 (unknown central operation 4)");
  // Body shorter than its fields.
  std::vector<uint8_t> short_body = {0x80, 0x02, 0x00, 0x01};
  c.payload = short_body;
  CHECK_FALSE(DecodeChunk(c, v, &error));
  CHECK(error == "corrupt record at offset 32 (truncated central record)");
  // Extra bytes after the known fields (a newer writer) are skipped.
  std::vector<uint8_t> longer = {0x80, 0x07, 0x02, 0x00, 0x03, 0x04, 0x00, 0x00, 0x55};
  c.payload = longer;
  v.central.clear();
  REQUIRE(DecodeChunk(c, v, &error));
  REQUIRE(v.central.size() == 1);
  CHECK(v.central[0].timestamp_ns == 1);
  CHECK(v.central[0].size_class == 3);
  CHECK(v.central[0].count == 4);
  CHECK(v.central[0].stack_id == 0);
  CHECK_FALSE(v.central[0].by_tracer);
  // flags bit 0: caused by the tracer.
  std::vector<uint8_t> tracer = {0x80, 0x06, 0x02, 0x00, 0x03, 0x04, 0x00, 0x01};
  c.payload = tracer;
  REQUIRE(DecodeChunk(c, v, &error));
  REQUIRE(v.central.size() == 2);
  CHECK(v.central[1].by_tracer);
  CHECK(v.events.empty());
}

}  // namespace
}  // namespace crossfree::format
