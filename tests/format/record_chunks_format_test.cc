// SPDX-License-Identifier: Apache-2.0
// The chunks `crossfree record` appends to a trace (docs/trace-format.md
// 6.9): kTagLosses, when events did not reach the file, and kTagTakenEnd,
// when the process did not end with its exit flush and record sealed its
// threads' open buffers itself. Their bytes, how a reader finds them (as
// chunks of no thread, through the visitor, and the losses chunk as a
// file's tail after the totals chunk), damaged forms, and their phrases.
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

constexpr RecordTakenEnd kEnd{
    .state = TakenEndState::kRunning, .chunks_sealed = 3, .events = 98765432101ULL};

std::vector<uint8_t> TakenEndChunk(const RecordTakenEnd& e = kEnd) {
  std::vector<uint8_t> b(kTakenEndChunkBytes);
  REQUIRE(EncodeTakenEndChunk(e, 4242, 5'000'000'000ULL, b.data(), b.size()) ==
          kTakenEndChunkBytes);
  return b;
}

// The chunk's payload as NextChunk would return it.
Chunk AsChunk(const std::vector<uint8_t>& b) {
  Chunk c;
  c.tid = 4242;
  c.event_count = 0;
  c.payload = std::span<const uint8_t>(b).subspan(kChunkHeaderBytes);
  return c;
}

struct Collect : RecordVisitor {
  std::vector<RecordLosses> losses;
  std::vector<RecordTakenEnd> ends;
  uint64_t events = 0;
  void OnEvent(const Event&) override { ++events; }
  void OnLosses(const RecordLosses& l) override { losses.push_back(l); }
  void OnTakenEnd(const RecordTakenEnd& e) override { ends.push_back(e); }
};

// Thread 4242's one chunk (an allocation and its free), then the chunks
// given, in that order.
std::vector<uint8_t> TraceEndingWith(const std::vector<std::vector<uint8_t>>& tail) {
  testing::TraceBuilder tb;
  ChunkWriter& w = tb.Begin(4242, 0, 1000);
  REQUIRE(w.AppendAlloc(AllocFn::kMalloc, 1100, 0x10000, 64, 0));
  REQUIRE(w.AppendFree(FreeFn::kFree, 1200, 0x10000, 0, 0));
  tb.Flush();
  std::vector<uint8_t> bytes = tb.bytes();
  for (const std::vector<uint8_t>& c : tail) bytes.insert(bytes.end(), c.begin(), c.end());
  return bytes;
}

// Every chunk of bytes decoded into seen; record's chunks also found by
// the parsers the analyzer uses on them (ParseLossesRecord,
// ParseTakenEndRecord), which must agree with the visitor.
struct ReadBack {
  int chunks = 0;
  std::vector<RecordLosses> losses;
  std::vector<RecordTakenEnd> ends;
};
ReadBack ReadAllChunks(const std::vector<uint8_t>& bytes, Collect& seen) {
  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "t", &error);
  REQUIRE(reader != nullptr);
  ReadBack got;
  Chunk c;
  while (reader->NextChunk(&c) == ReadResult::kChunk) {
    ++got.chunks;
    RecordLosses l;
    RecordTakenEnd e;
    if (ParseLossesRecord(c, &l)) got.losses.push_back(l);
    if (ParseTakenEndRecord(c, &e)) got.ends.push_back(e);
    if (!got.losses.empty() || !got.ends.empty()) CHECK(c.tid == 4242);
    REQUIRE(DecodeChunk(c, seen, &error));
  }
  return got;
}

// What every chunk of record's has: exactly `total` bytes, the process's
// pid as its tid, sequence kLossesSequence (no thread's), no events, and
// one record of `tag` whose length is body_bytes.
void CheckRecordChunk(const std::vector<uint8_t>& b, size_t total, uint8_t tag,
                      size_t body_bytes) {
  CHECK(b.size() == total);
  CHECK(wire::Load32(b.data() + wire::kChkTid) == 4242);
  CHECK(wire::Load32(b.data() + wire::kChkSequence) == kLossesSequence);
  CHECK(wire::Load32(b.data() + wire::kChkEvents) == 0);
  CHECK(b[kChunkHeaderBytes] == tag);
  CHECK(b[kChunkHeaderBytes + 1] == body_bytes);
}

TEST_CASE("losses chunk: fixed bytes, parsed back exactly") {
  std::vector<uint8_t> b = LossesChunk();
  CheckRecordChunk(b, 62, kTagLosses, kLossesBodyBytes);
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
  std::vector<uint8_t> totals(kTotalsChunkBytes);
  TraceTotals tt{.events = 2, .allocs = 1, .frees = 1, .chunks = 1, .threads = 1};
  REQUIRE(EncodeTotalsChunk(tt, 4242, 1, 2000, totals.data(), totals.size()) == totals.size());
  const std::vector<uint8_t> bytes = TraceEndingWith({totals, LossesChunk()});

  // The tail record reads: the losses, and the totals just before them.
  std::span<const uint8_t> all(bytes);
  RecordLosses tail_losses;
  TraceTotals tail_totals;
  REQUIRE(ParseLossesChunk(all.last(kLossesChunkBytes), &tail_losses));
  REQUIRE(ParseTotalsChunk(
      all.last(kLossesChunkBytes + kTotalsChunkBytes).first(kTotalsChunkBytes), &tail_totals));
  CHECK(tail_totals.events == 2);
  CHECK(tail_losses.chunks_damaged == 7);

  Collect seen;
  ReadBack got = ReadAllChunks(bytes, seen);
  CHECK(got.chunks == 3);
  REQUIRE(got.losses.size() == 1);
  CHECK(got.losses[0].events_dropped == kLosses.events_dropped);
  CHECK(got.ends.empty());
  CHECK(seen.events == 2);
  REQUIRE(seen.losses.size() == 1);
  CHECK(seen.losses[0].chunks_dropped == 4321);
}

TEST_CASE("losses record with a bad body is corruption") {
  std::vector<uint8_t> b = LossesChunk();
  b[kChunkHeaderBytes + 2] ^= 0xff;  // magic
  Reseal(b);
  Collect seen;
  std::string error;
  CHECK_FALSE(DecodeChunk(AsChunk(b), seen, &error));
  CHECK(error.find("bad losses record") != std::string::npos);
  RecordLosses l;
  CHECK_FALSE(ParseLossesRecord(AsChunk(b), &l));
}

TEST_CASE("losses are named in one phrase") {
  CHECK(LossesText(RecordLosses{}).empty());
  CHECK(LossesText({.events_dropped = 5, .chunks_dropped = 2, .chunks_damaged = 0}) ==
        "5 events in 2 chunks dropped by the tracer (record fell behind: no free buffer within "
        "CROSSFREE_CHANNEL_WAIT_MS)");
  CHECK(LossesText({.events_dropped = 0, .chunks_dropped = 0, .chunks_damaged = 3}) ==
        "3 chunks damaged in shared memory (not written)");
}

TEST_CASE("end-taken chunk: fixed bytes, parsed back exactly") {
  std::vector<uint8_t> b = TakenEndChunk();
  CheckRecordChunk(b, 58, kTagTakenEnd, kTakenEndBodyBytes);
  CHECK(wire::Load32(b.data() + kChunkHeaderBytes + 2) == kTakenEndMagic);
  CHECK(wire::Load32(b.data() + kChunkHeaderBytes + 6) == 1);  // state: running
  RecordTakenEnd got;
  REQUIRE(ParseTakenEndRecord(AsChunk(b), &got));
  CHECK(got.state == TakenEndState::kRunning);
  CHECK(got.chunks_sealed == 3);
  CHECK(got.events == 98765432101ULL);
  uint8_t small[kTakenEndChunkBytes - 1];
  CHECK(EncodeTakenEndChunk(kEnd, 1, 1, small, sizeof(small)) == 0);
}

TEST_CASE("end-taken chunk in a file: no thread's, read by the visitor, before the losses") {
  const std::vector<uint8_t> bytes = TraceEndingWith(
      {TakenEndChunk({.state = TakenEndState::kEnded, .chunks_sealed = 1, .events = 2}),
       LossesChunk()});
  // The losses chunk stays the file's last bytes, as record reads it.
  RecordLosses tail;
  REQUIRE(ParseLossesChunk(std::span<const uint8_t>(bytes).last(kLossesChunkBytes), &tail));
  CHECK(tail.chunks_damaged == 7);
  Collect seen;
  ReadBack got = ReadAllChunks(bytes, seen);
  CHECK(got.chunks == 3);
  REQUIRE(got.ends.size() == 1);
  CHECK(got.ends[0].state == TakenEndState::kEnded);
  CHECK(got.ends[0].events == 2);
  CHECK(got.losses.size() == 1);
  CHECK(seen.events == 2);
  REQUIRE(seen.ends.size() == 1);
  CHECK(seen.ends[0].chunks_sealed == 1);
}

TEST_CASE("end-taken record: damaged forms are corruption, never another end") {
  std::vector<uint8_t> b = TakenEndChunk();
  SECTION("an unknown state") { wire::Store32(b.data() + kChunkHeaderBytes + 6, 2); }
  SECTION("a wrong magic") { b[kChunkHeaderBytes + 2] ^= 0xff; }
  SECTION("a length that does not fit the fixed body") {
    // One byte less in the length: the record's last byte would be read
    // as the next record by a reader that trusted it.
    b[kChunkHeaderBytes + 1] = kTakenEndBodyBytes - 1;
  }
  Reseal(b);
  Collect seen;
  std::string error;
  CHECK_FALSE(DecodeChunk(AsChunk(b), seen, &error));
  CHECK(!error.empty());
  CHECK(seen.ends.empty());
  RecordTakenEnd e;
  CHECK_FALSE(ParseTakenEndRecord(AsChunk(b), &e));
}

TEST_CASE("an end is named in one phrase, for each kind") {
  CHECK(NoCleanEndText(nullptr).find("the events in its last buffers are lost") !=
        std::string::npos);
  const RecordTakenEnd ended{.state = TakenEndState::kEnded, .chunks_sealed = 1, .events = 5};
  CHECK(NoCleanEndText(&ended) ==
        "no clean end: the process ended without its exit flush (killed or crashed); crossfree "
        "record took the 5 events of the 1 buffer its threads had open, so nothing it recorded "
        "is lost but the one record a thread may have been writing");
  const RecordTakenEnd running{.state = TakenEndState::kRunning, .chunks_sealed = 2, .events = 7};
  CHECK(NoCleanEndText(&running) ==
        "no clean end: the process was still running when crossfree record finished "
        "(--wait-children); crossfree record took the 7 events of the 2 buffers its threads had "
        "open, so the trace holds its events up to then and none after");
}

}  // namespace
}  // namespace crossfree::format
