// SPDX-License-Identifier: Apache-2.0
// The records and header field of sampled and windowed traces: the header's
// sample period, kTagWindow and kTagCounts (round trip, the counts reserve
// of a full chunk, malformed bodies).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "format/wire.h"

namespace crossfree::format {
namespace {

struct Collect : RecordVisitor {
  std::vector<Event> events;
  struct Window {
    uint32_t tid;
    uint64_t ts;
    WindowState state;
    WindowCause cause;
  };
  std::vector<Window> windows;
  std::vector<ThreadCounts> counts;
  void OnEvent(const Event& e) override { events.push_back(e); }
  void OnWindow(uint32_t tid, uint64_t ts, WindowState state, WindowCause cause) override {
    windows.push_back({tid, ts, state, cause});
  }
  void OnCounts(uint32_t, const ThreadCounts& c) override { counts.push_back(c); }
};

Chunk Parse(const std::vector<uint8_t>& bytes) {
  Chunk c;
  c.tid = 7;
  c.base_timestamp_ns = wire::Load64(bytes.data() + wire::kChkBaseTs);
  c.event_count = wire::Load32(bytes.data() + wire::kChkEvents);
  c.payload = std::span<const uint8_t>(bytes.data() + kChunkHeaderBytes,
                                       bytes.size() - kChunkHeaderBytes);
  return c;
}

std::vector<uint8_t> Header(uint32_t sample_period, const std::string& exe) {
  HeaderFields f;
  f.pid = 11;
  f.sample_period = sample_period;
  std::vector<uint8_t> buf(256);
  buf.resize(EncodeFileHeader(f, exe.data(), exe.size(), buf.data(), buf.size()));
  REQUIRE(!buf.empty());
  return buf;
}

TEST_CASE("the sample period round-trips and is absent from unsampled headers") {
  for (uint32_t period : {0u, 1u, 2u, 100u, 4000000000u}) {
    std::vector<uint8_t> bytes = Header(period, "/bin/true");
    CHECK(bytes.size() == wire::kHdrMinBytes + 9 + (period > 1 ? 4 : 0));
    std::string error;
    auto reader = TraceReader::FromBytes(bytes, "t", &error);
    REQUIRE(reader != nullptr);
    CHECK(reader->header().exe_path == "/bin/true");
    CHECK(reader->header().fields.sample_period == (period > 1 ? period : 0));
  }
}

TEST_CASE("window and counts records round-trip without touching the deltas") {
  std::vector<uint8_t> buf(ChunkWriter::kMinChunkCapacity);
  ChunkWriter w(buf.data(), buf.size(), true);
  w.Begin(7, 0, 1000);
  REQUIRE(w.AppendAlloc(AllocFn::kMalloc, 1100, 0x10000, 64, 3));
  REQUIRE(w.AppendWindow(WindowState::kClosed, WindowCause::kSignal, 900));
  REQUIRE(w.AppendWindow(WindowState::kOpen, WindowCause::kDuration, 5000));
  REQUIRE(w.AppendFree(FreeFn::kFree, 1200, 0x10000, 0, 4));
  REQUIRE(w.AppendCounts({12345678901ull, 42, 3}));
  buf.resize(w.Finish());
  Collect c;
  std::string error;
  REQUIRE(DecodeChunk(Parse(buf), c, &error));
  REQUIRE(c.windows.size() == 2);
  CHECK(c.windows[0].ts == 900);
  CHECK(c.windows[0].state == WindowState::kClosed);
  CHECK(c.windows[0].cause == WindowCause::kSignal);
  CHECK(c.windows[1].ts == 5000);
  CHECK(c.windows[1].state == WindowState::kOpen);
  CHECK(c.windows[1].cause == WindowCause::kDuration);
  REQUIRE(c.events.size() == 2);
  CHECK(c.events[1].timestamp_ns == 1200);  // delta from the alloc, not the window
  CHECK(c.events[1].address == 0x10000);
  REQUIRE(c.counts.size() == 1);
  CHECK(c.counts[0].allocs == 12345678901ull);
  CHECK(c.counts[0].frees == 42);
  CHECK(c.counts[0].samples_dropped == 3);
}

TEST_CASE("a chunk full of events still takes its counts record") {
  {
    std::vector<uint8_t> buf(ChunkWriter::kMinChunkCapacity);
    ChunkWriter w(buf.data(), buf.size(), true);
    w.Begin(7, 0, 0);
    uint64_t ts = 0, addr = 1 << 20;
    uint32_t n = 0;
    // Addresses and times far apart so that no event is predicted short.
    while (w.AppendAlloc(AllocFn::kMalloc, ts += 1'000'000'007, addr += 0x123456789, 77777, 5)) ++n;
    CHECK(n > 100);
    // The largest counts record, in what the events left (< one event).
    REQUIRE(w.AppendCounts({UINT64_MAX, UINT64_MAX, UINT64_MAX}));
    CHECK(w.size() <= ChunkWriter::kMinChunkCapacity);
    buf.resize(w.Finish());
    Collect c;
    std::string error;
    REQUIRE(DecodeChunk(Parse(buf), c, &error));
    CHECK(c.events.size() == n);
    REQUIRE(c.counts.size() == 1);
    CHECK(c.counts[0].allocs == UINT64_MAX);
  }
}

// Replaces the body byte at `index` of the chunk's first extension record.
std::string DecodeWith(void (*append)(ChunkWriter&), size_t body_index, uint8_t value,
                       int length_delta = 0) {
  std::vector<uint8_t> buf(ChunkWriter::kMinChunkCapacity);
  ChunkWriter w(buf.data(), buf.size(), true);
  w.Begin(7, 0, 0);
  append(w);
  buf.resize(w.Finish());
  uint8_t* rec = buf.data() + kChunkHeaderBytes;  // tag, len, body
  if (body_index != SIZE_MAX) rec[2 + body_index] = value;
  rec[1] = static_cast<uint8_t>(rec[1] + length_delta);
  Collect c;
  std::string error;
  Chunk chunk = Parse(buf);
  if (length_delta < 0) {
    // Keep the payload consistent with the shorter length: drop the bytes.
    chunk.payload = chunk.payload.subspan(0, chunk.payload.size() + length_delta);
  }
  return DecodeChunk(chunk, c, &error) ? "" : error;
}

void OneWindow(ChunkWriter& w) { w.AppendWindow(WindowState::kOpen, WindowCause::kDelay, 5); }
void OneCounts(ChunkWriter& w) { w.AppendCounts({10, 9, 1}); }

TEST_CASE("malformed window and counts records are corruption, named") {
  CHECK(DecodeWith(OneWindow, SIZE_MAX, 0) == "");
  CHECK(DecodeWith(OneCounts, SIZE_MAX, 0) == "");
  CHECK(DecodeWith(OneWindow, 1, 2).find("unknown window state 2") != std::string::npos);
  CHECK(DecodeWith(OneWindow, 2, 9).find("unknown window cause 9") != std::string::npos);
  CHECK(DecodeWith(OneWindow, SIZE_MAX, 0, -1).find("truncated window record") !=
        std::string::npos);
  CHECK(DecodeWith(OneCounts, 2, 11).find("more samples dropped than allocations 11") !=
        std::string::npos);
  CHECK(DecodeWith(OneCounts, SIZE_MAX, 0, -1).find("truncated counts record") !=
        std::string::npos);
}

}  // namespace
}  // namespace crossfree::format
