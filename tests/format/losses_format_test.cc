// SPDX-License-Identifier: Apache-2.0
// The kTagLosses chunk that `crossfree record` appends when events did not
// reach the file (docs/trace-format.md 6.9): its bytes, how a reader finds
// it (as a chunk, through the visitor, and as a file's tail after the
// totals chunk), and damaged forms.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "format/names.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "format/wire.h"
#include "tests/format/test_util.h"

namespace crossfree::format {
namespace {

constexpr RecordLosses kLosses{.events_dropped = 123456789012ULL,
                               .chunks_dropped = 4321,
                               .chunks_damaged = 7};

std::vector<uint8_t> LossesChunk(const RecordLosses& l = kLosses) {
  std::vector<uint8_t> b(kLossesChunkBytes);
  REQUIRE(EncodeLossesChunk(l, 4242, 5'000'000'000ULL, b.data(), b.size()) == kLossesChunkBytes);
  return b;
}

// Re-seals a hand-edited chunk, so that only the edited field is wrong.
void Reseal(std::vector<uint8_t>& b) {
  wire::Store32(b.data() + wire::kChkCrc,
                Crc32c(b.data() + wire::kChkCrcStart, b.size() - wire::kChkCrcStart));
}

struct Collect : RecordVisitor {
  std::vector<RecordLosses> losses;
  uint64_t events = 0;
  void OnEvent(const Event&) override { ++events; }
  void OnLosses(const RecordLosses& l) override { losses.push_back(l); }
};

TEST_CASE("losses chunk: fixed bytes, parsed back exactly") {
  std::vector<uint8_t> b = LossesChunk();
  CHECK(b.size() == 62);
  CHECK(wire::Load32(b.data() + wire::kChkTid) == 4242);
  CHECK(wire::Load32(b.data() + wire::kChkSequence) == kLossesSequence);
  CHECK(wire::Load32(b.data() + wire::kChkEvents) == 0);
  CHECK(b[kChunkHeaderBytes] == kTagLosses);
  CHECK(b[kChunkHeaderBytes + 1] == kLossesBodyBytes);
  RecordLosses got;
  REQUIRE(ParseLossesChunk(b, &got));
  CHECK(got.events_dropped == kLosses.events_dropped);
  CHECK(got.chunks_dropped == kLosses.chunks_dropped);
  CHECK(got.chunks_damaged == kLosses.chunks_damaged);
  uint8_t small[kLossesChunkBytes - 1];
  CHECK(EncodeLossesChunk(kLosses, 1, 1, small, sizeof(small)) == 0);
}

TEST_CASE("losses chunk: damaged forms are refused") {
  RecordLosses got;
  std::vector<uint8_t> b = LossesChunk();
  SECTION("a flipped count byte fails the checksum") {
    b[kChunkHeaderBytes + 2 + 4] ^= 1;
    CHECK_FALSE(ParseLossesChunk(b, &got));
  }
  SECTION("a wrong magic, checksum right") {
    b[kChunkHeaderBytes + 2] ^= 1;
    Reseal(b);
    CHECK_FALSE(ParseLossesChunk(b, &got));
  }
  SECTION("the totals chunk is not a losses chunk") {
    std::vector<uint8_t> t(kTotalsChunkBytes);
    REQUIRE(EncodeTotalsChunk(TraceTotals{}, 1, 0, 1, t.data(), t.size()) == t.size());
    CHECK_FALSE(ParseLossesChunk(std::span<const uint8_t>(t).last(kLossesChunkBytes), &got));
  }
  SECTION("a short span") {
    CHECK_FALSE(ParseLossesChunk(std::span<const uint8_t>(b).first(b.size() - 1), &got));
  }
}

TEST_CASE("losses chunk in a file: read as a chunk, by the visitor, and after the totals") {
  testing::TraceBuilder tb;
  ChunkWriter& w = tb.Begin(4242, 0, 1000);
  REQUIRE(w.AppendAlloc(AllocFn::kMalloc, 1100, 0x10000, 64, 0));
  REQUIRE(w.AppendFree(FreeFn::kFree, 1200, 0x10000, 0, 0));
  tb.Flush();
  std::vector<uint8_t>& bytes = tb.bytes();
  std::vector<uint8_t> totals(kTotalsChunkBytes);
  TraceTotals tt{.events = 2, .allocs = 1, .frees = 1, .chunks = 1, .threads = 1};
  REQUIRE(EncodeTotalsChunk(tt, 4242, 1, 2000, totals.data(), totals.size()) == totals.size());
  bytes.insert(bytes.end(), totals.begin(), totals.end());
  std::vector<uint8_t> losses = LossesChunk();
  bytes.insert(bytes.end(), losses.begin(), losses.end());

  // The tail record reads: the losses, and the totals just before them.
  std::span<const uint8_t> all(bytes);
  RecordLosses tail_losses;
  TraceTotals tail_totals;
  REQUIRE(ParseLossesChunk(all.last(kLossesChunkBytes), &tail_losses));
  REQUIRE(ParseTotalsChunk(
      all.last(kLossesChunkBytes + kTotalsChunkBytes).first(kTotalsChunkBytes), &tail_totals));
  CHECK(tail_totals.events == 2);
  CHECK(tail_losses.chunks_damaged == 7);

  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "t", &error);
  REQUIRE(reader != nullptr);
  Chunk c;
  Collect seen;
  int chunks = 0, losses_chunks = 0;
  while (reader->NextChunk(&c) == ReadResult::kChunk) {
    ++chunks;
    RecordLosses l;
    if (ParseLossesRecord(c, &l)) {
      ++losses_chunks;
      CHECK(l.events_dropped == kLosses.events_dropped);
      CHECK(c.tid == 4242);
    }
    REQUIRE(DecodeChunk(c, seen, &error));
  }
  CHECK(chunks == 3);
  CHECK(losses_chunks == 1);
  CHECK(seen.events == 2);
  REQUIRE(seen.losses.size() == 1);
  CHECK(seen.losses[0].chunks_dropped == 4321);
}

TEST_CASE("losses record with a bad body is corruption") {
  std::vector<uint8_t> b = LossesChunk();
  b[kChunkHeaderBytes + 2] ^= 0xff;  // magic
  Reseal(b);
  Chunk c;
  c.tid = 4242;
  c.event_count = 0;
  c.payload = std::span<const uint8_t>(b).subspan(kChunkHeaderBytes);
  Collect seen;
  std::string error;
  CHECK_FALSE(DecodeChunk(c, seen, &error));
  CHECK(error.find("bad losses record") != std::string::npos);
  RecordLosses l;
  CHECK_FALSE(ParseLossesRecord(c, &l));
}

TEST_CASE("losses are named in one phrase") {
  CHECK(LossesText(RecordLosses{}).empty());
  CHECK(LossesText({.events_dropped = 5, .chunks_dropped = 2, .chunks_damaged = 0}) ==
        "5 events in 2 chunks dropped by the tracer (record fell behind: no free buffer within "
        "CROSSFREE_CHANNEL_WAIT_MS)");
  CHECK(LossesText({.events_dropped = 0, .chunks_dropped = 0, .chunks_damaged = 3}) ==
        "3 chunks damaged in shared memory (not written)");
}

}  // namespace
}  // namespace crossfree::format
