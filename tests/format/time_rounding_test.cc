// SPDX-License-Identifier: Apache-2.0
// The time resolution (docs/trace-format.md 4, 7.1, version 5): the header
// field and its version, and ChunkRounder on chunks whose rounded times
// and bytes are worked out by hand from the format spec.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "format/chunk_codec.h"
#include "format/time_rounding.h"
#include "format/trace_reader.h"
#include "test_util.h"
#include "workload.h"

namespace crossfree::format {
namespace {

using testing::Collector;
using testing::TraceBuilder;

std::unique_ptr<TraceReader> Read(const std::vector<uint8_t>& bytes, std::string* error) {
  return TraceReader::FromBytes(bytes, "t.trace", error);
}

TEST_CASE("version 5 header: the resolution after sample_period, bytes by hand", "[format]") {
  HeaderFields f = testing::WorkedExampleFields();
  f.time_resolution_ns = 1000;
  uint8_t buf[256];
  const size_t n = EncodeFileHeader(f, "/bin/app", 8, buf, sizeof buf);
  // Section 11's header with version 5, header_length 72 (64 + 8), then
  // sample_period 0 and time_resolution_ns 1000 before the checksum (a
  // CRC-32C computed apart from the code under test).
  const std::vector<uint8_t> expect = {
      0x43, 0x52, 0x53, 0x46, 0x54, 0x52, 0x43, 0x0a, 0x05, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00,
      0xd2, 0x04, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
      0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17,
      0x08, 0x00, 0x00, 0x00, 0x2f, 0x62, 0x69, 0x6e, 0x2f, 0x61, 0x70, 0x70,
      0x00, 0x00, 0x00, 0x00,   // sample_period: not sampled
      0xe8, 0x03, 0x00, 0x00,   // time_resolution_ns 1000
      0xe0, 0xbb, 0x22, 0x3e};  // header crc
  CHECK(std::vector<uint8_t>(buf, buf + n) == expect);
  std::string error;
  auto reader = Read(expect, &error);
  REQUIRE(reader != nullptr);
  CHECK(reader->header().version == 5);
  CHECK(reader->header().fields.time_resolution_ns == 1000);
  CHECK(reader->header().fields.sample_period == 0);
  CHECK(reader->header().size_bytes == 72);
}

TEST_CASE("header round trip: resolution 1 writes version 4 as before, R > 1 version 5",
          "[format]") {
  struct Case {
    uint32_t resolution, sample, version, length, read_resolution;
  };
  // 56 + 8 (exe) = 64 bytes; + 4 with a sample period; + 8 with a resolution.
  for (const Case& c : {Case{0, 0, 4, 64, 1}, Case{1, 0, 4, 64, 1}, Case{1, 100, 4, 68, 1},
                        Case{2, 0, 5, 72, 2}, Case{1024, 100, 5, 72, 1024},
                        Case{1'000'000, 0, 5, 72, 1'000'000}}) {
    CAPTURE(c.resolution, c.sample);
    HeaderFields f = testing::WorkedExampleFields();
    f.time_resolution_ns = c.resolution;
    f.sample_period = c.sample;
    uint8_t buf[256];
    const size_t n = EncodeFileHeader(f, "/bin/app", 8, buf, sizeof buf);
    CHECK(n == c.length);
    std::string error;
    auto reader = Read(std::vector<uint8_t>(buf, buf + n), &error);
    REQUIRE(reader != nullptr);
    CHECK(reader->header().version == c.version);
    CHECK(reader->header().fields.time_resolution_ns == c.read_resolution);
    CHECK(reader->header().fields.sample_period == c.sample);
    CHECK(reader->header().exe_path == "/bin/app");
  }
}

TEST_CASE("every older version still reads, at a resolution of 1 ns", "[format]") {
  std::vector<uint8_t> bytes = testing::SmallTrace();
  for (uint32_t version : {1u, 2u, 3u, 4u}) {
    CAPTURE(version);
    wire::Store32(bytes.data() + wire::kHdrVersion, version);
    const uint32_t length = wire::Load32(bytes.data() + wire::kHdrLength);
    wire::Store32(bytes.data() + length - 4, Crc32c(bytes.data(), length - 4));
    std::string error;
    auto reader = Read(bytes, &error);
    REQUIRE(reader != nullptr);
    CHECK(reader->header().version == version);
    CHECK(reader->header().fields.time_resolution_ns == 1);
    Chunk chunk;
    int chunks = 0;
    while (reader->NextChunk(&chunk) == ReadResult::kChunk) ++chunks;
    CHECK(chunks == 4);
  }
}

TEST_CASE("a resolution the format does not allow is a corrupt header", "[format]") {
  for (uint32_t bad : {0u, 1'000'001u, 0xffffffffu}) {
    HeaderFields f = testing::WorkedExampleFields();
    f.time_resolution_ns = 1000;
    uint8_t buf[256];
    const size_t n = EncodeFileHeader(f, "/bin/app", 8, buf, sizeof buf);
    wire::Store32(buf + 64, bad);  // after the exe path and sample_period
    wire::Store32(buf + n - 4, Crc32c(buf, n - 4));
    std::string error;
    CHECK(Read(std::vector<uint8_t>(buf, buf + n), &error) == nullptr);
    CHECK(error == "t.trace: corrupt trace header (time resolution " + std::to_string(bad) +
                       " ns, the format allows 1 to 1000000)");
  }
}

// Decodes one whole chunk (header and payload, plain or compressed) behind a
// version 5 header, into a Collector or a collector derived from it.
template <typename Out = Collector>
Out DecodeOne(const std::vector<uint8_t>& chunk, uint32_t resolution) {
  HeaderFields f = testing::WorkedExampleFields();
  f.time_resolution_ns = resolution;
  std::vector<uint8_t> file(256);
  file.resize(EncodeFileHeader(f, "/bin/app", 8, file.data(), file.size()));
  file.insert(file.end(), chunk.begin(), chunk.end());
  std::string error;
  auto reader = Read(file, &error);
  REQUIRE(reader != nullptr);
  Chunk c;
  REQUIRE(reader->NextChunk(&c) == ReadResult::kChunk);
  Out out;
  REQUIRE(DecodeChunk(c, out, &error));
  return out;
}

TEST_CASE("ChunkRounder: the worked example at 256 ns, bytes by hand", "[format]") {
  const std::vector<uint8_t> plain = testing::WorkedExampleChunk();
  std::vector<uint8_t> rounded;
  std::string error;
  REQUIRE(ChunkRounder(256).Round(plain.data(), plain.size(), rounded, &error));
  // Base 1000 -> 768; times 1150, 1400, 1600, 1900 -> 1024, 1280, 1536,
  // 1792: every delta 256, zigzag 512, the varint 80 04, as long as the
  // deltas it replaces (ac 02, f4 03, 90 03, d8 04). Nothing else changes.
  std::vector<uint8_t> expect = plain;
  wire::Store64(expect.data() + wire::kChkBaseTs, 768);
  for (size_t at : {44u, 56u, 61u, 70u}) {  // after each event's tag
    expect[at] = 0x80;
    expect[at + 1] = 0x04;
  }
  testing::ResealChunk(expect.data(), static_cast<uint32_t>(expect.size() - kChunkHeaderBytes));
  CHECK(rounded == expect);
  Collector c = DecodeOne(rounded, 256);
  REQUIRE(c.events.size() == 4);
  CHECK(c.events[0].timestamp_ns == 1024);
  CHECK(c.events[1].timestamp_ns == 1280);
  CHECK(c.events[2].timestamp_ns == 1536);
  CHECK(c.events[3].timestamp_ns == 1792);
  CHECK(c.events[3].address == 0x7f0000001000);
  CHECK(c.events[3].size == 100);
  CHECK(c.events[3].cpu == 200);
}

TEST_CASE("ChunkRounder: at 1000 ns the example's events share one time", "[format]") {
  const std::vector<uint8_t> plain = testing::WorkedExampleChunk();
  std::vector<uint8_t> rounded;
  std::string error;
  REQUIRE(ChunkRounder(1000).Round(plain.data(), plain.size(), rounded, &error));
  // Deltas 0: one byte each instead of two.
  CHECK(rounded.size() == plain.size() - 4);
  Collector c = DecodeOne(rounded, 1000);
  REQUIRE(c.events.size() == 4);
  for (const Event& e : c.events) CHECK(e.timestamp_ns == 1000);
  CHECK(c.events[1].address == 0x7f0000001030);
  CHECK(c.events[2].op == EventOp::kFree);
}

TEST_CASE("ChunkRounder: 1 ns copies the chunk", "[format]") {
  const std::vector<uint8_t> plain = testing::WorkedExampleChunk();
  std::vector<uint8_t> rounded;
  std::string error;
  REQUIRE(ChunkRounder(1).Round(plain.data(), plain.size(), rounded, &error));
  CHECK(rounded == plain);
}

// Records every time a chunk carries: names, modules, exits, reallocs,
// central and window records, and their rounded times.
class TimesCollector : public Collector {
 public:
  void OnCentral(const CentralEvent& e) override { central.push_back(e.timestamp_ns); }
  void OnWindow(uint32_t, uint64_t ts, WindowState, WindowCause) override {
    windows.push_back(ts);
  }
  std::vector<uint64_t> central, windows;
};

TEST_CASE("ChunkRounder: every record's time, and times that go back", "[format]") {
  std::vector<uint8_t> buf(8192);
  ChunkWriter w(buf.data(), buf.size());
  w.Begin(9, 3, 5'005);
  w.AppendThreadName(5'010, "worker", 6);
  testing::AppendAppModule(w, 5'020);
  w.AppendAlloc(AllocFn::kMalloc, 5'999, 0x10000, 64, 0);
  w.AppendCentral(CentralOp::kFetch, 6'001, 3, 32, 0);
  w.AppendWindow(WindowState::kClosed, WindowCause::kSignal, 7'500);
  w.AppendRealloc(AllocFn::kRealloc, 6'100, 8'200, 0x10000, 0x20000, 128, 0);
  w.AppendFree(FreeFn::kFree, 7'900, 0x20000, 0, 0);  // went back (a signal handler)
  w.AppendThreadExit(12'345);
  buf.resize(w.Finish());
  std::vector<uint8_t> rounded;
  std::string error;
  REQUIRE(ChunkRounder(1000).Round(buf.data(), buf.size(), rounded, &error));
  CHECK(wire::Load64(rounded.data() + wire::kChkBaseTs) == 5'000);
  CHECK(wire::Load32(rounded.data() + wire::kChkEvents) == 4);

  const TimesCollector c = DecodeOne<TimesCollector>(rounded, 1000);
  REQUIRE(c.names.size() == 1);
  CHECK(c.names[0].ts == 5'000);
  CHECK(c.names[0].name == "worker");
  REQUIRE(c.modules.size() == 1);
  CHECK(c.modules[0].timestamp_ns == 5'000);
  CHECK(c.modules[0].path == "/usr/bin/app");
  REQUIRE(c.events.size() == 4);
  CHECK(c.events[0].timestamp_ns == 5'000);
  CHECK(c.events[1].timestamp_ns == 6'000);  // the realloc's free half
  CHECK(c.events[1].address == 0x10000);
  CHECK(c.events[2].timestamp_ns == 8'000);  // its allocation half
  CHECK(c.events[2].address == 0x20000);
  CHECK(c.events[2].size == 128);
  CHECK(c.events[3].timestamp_ns == 7'000);
  CHECK(c.events[3].address == 0x20000);
  REQUIRE(c.central.size() == 1);
  CHECK(c.central[0] == 6'000);
  REQUIRE(c.windows.size() == 1);
  CHECK(c.windows[0] == 7'000);
  REQUIRE(c.exits.size() == 1);
  CHECK(c.exits[0].ts == 12'000);

  // Compressed after rounding (what record does): the same records.
  std::vector<uint8_t> packed;
  REQUIRE(CompressChunk(rounded.data(), rounded.size(), packed, &error));
  const TimesCollector c2 = DecodeOne<TimesCollector>(packed, 1000);
  REQUIRE(c2.events.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(testing::SameEvent(c2.events[i], c.events[i]));
}

TEST_CASE("ChunkRounder refuses what is not one whole, valid plain chunk", "[format]") {
  std::vector<uint8_t> plain = testing::WorkedExampleChunk();
  std::vector<uint8_t> out;
  std::string error;
  ChunkRounder r(1000);
  plain[40] ^= 1;  // a record byte: the checksum no longer matches
  CHECK_FALSE(r.Round(plain.data(), plain.size(), out, &error));
  CHECK(error == "chunk checksum mismatch");
  plain = testing::WorkedExampleChunk();
  CHECK_FALSE(r.Round(plain.data(), plain.size() - 1, out, &error));
  CHECK(error == "chunk length word does not match its " + std::to_string(plain.size() - 1) +
                     " bytes");
  // An unknown tag, checksum made to match.
  plain = testing::WorkedExampleChunk();
  plain[32] = 0x66;
  testing::ResealChunk(plain.data(), static_cast<uint32_t>(plain.size() - kChunkHeaderBytes));
  CHECK_FALSE(r.Round(plain.data(), plain.size(), out, &error));
  CHECK(error == "record at byte 0 of the chunk's records does not parse");
  // A record cut short: the last event's size varint dropped.
  plain = testing::WorkedExampleChunk();
  plain.pop_back();
  testing::ResealChunk(plain.data(), static_cast<uint32_t>(plain.size() - kChunkHeaderBytes));
  CHECK_FALSE(r.Round(plain.data(), plain.size(), out, &error));
  CHECK(error == "record at byte 37 of the chunk's records does not parse");
}


// The smaller trace a coarser resolution is for, on one run's events: the
// deterministic producer/consumer workload (workload.h, each thread's
// clock 100-499 ns a step) compressed as `record` compresses, each chunk
// as it is and rounded first. Measured here and not across two recorded
// runs (e2e.time_resolution prints those): two runs' times differ with
// the machine's load, and a loaded run at 1 µs has come out larger than a
// quiet one at 1 ns.
TEST_CASE("ChunkRounder: the same chunks compress smaller at 256 and 1000 ns", "[format]") {
  testing::WorkloadOptions options;
  options.events = 100000;
  testing::WorkloadStats stats;
  const std::vector<uint8_t> plain = testing::ProducerConsumerWorkload(options).Run(&stats);
  std::string error;
  auto reader = TraceReader::FromBytes(plain, "plain", &error);
  REQUIRE(reader != nullptr);
  ChunkCompressor compressor(kDefaultCompressionLevel, wire::kLayoutPlanes);
  size_t at_1 = 0, at_256 = 0, at_1000 = 0;
  Chunk c;
  std::vector<uint8_t> rounded, z;
  while (reader->NextChunk(&c) == ReadResult::kChunk) {
    const uint8_t* chunk = plain.data() + c.file_offset;
    const size_t bytes = kChunkHeaderBytes + c.payload_bytes;
    REQUIRE(compressor.Compress(chunk, bytes, z, &error));
    at_1 += z.size();
    for (auto [r, sum] : {std::pair<uint32_t, size_t*>{256, &at_256}, {1000, &at_1000}}) {
      REQUIRE(ChunkRounder(r).Round(chunk, bytes, rounded, &error));
      REQUIRE(compressor.Compress(rounded.data(), rounded.size(), z, &error));
      *sum += z.size();
    }
  }
  INFO(stats.events << " events: " << at_1 << " bytes at 1 ns, " << at_256 << " at 256 ns, "
                    << at_1000 << " at 1000 ns");
  CHECK(at_256 < at_1);
  CHECK(at_1000 < at_256);
}

}  // namespace
}  // namespace crossfree::format
