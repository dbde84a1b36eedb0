// SPDX-License-Identifier: Apache-2.0
// The kTagTakenEnd chunk that `crossfree record` appends when a process did
// not end with its exit flush and record sealed its threads' open buffers
// (docs/trace-format.md 6.9): its bytes, how a reader finds it (as a chunk
// and through the visitor, before a losses chunk), damaged forms, and the
// phrase dump and report print for each kind of end.
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

constexpr RecordTakenEnd kEnd{
    .state = TakenEndState::kRunning, .chunks_sealed = 3, .events = 98765432101ULL};

std::vector<uint8_t> TakenEndChunk(const RecordTakenEnd& e = kEnd) {
  std::vector<uint8_t> b(kTakenEndChunkBytes);
  REQUIRE(EncodeTakenEndChunk(e, 4242, 5'000'000'000ULL, b.data(), b.size()) ==
          kTakenEndChunkBytes);
  return b;
}

Chunk AsChunk(const std::vector<uint8_t>& b) {
  Chunk c;
  c.tid = 4242;
  c.event_count = 0;
  c.payload = std::span<const uint8_t>(b).subspan(kChunkHeaderBytes);
  return c;
}

void Reseal(std::vector<uint8_t>& b) {
  wire::Store32(b.data() + wire::kChkCrc,
                Crc32c(b.data() + wire::kChkCrcStart, b.size() - wire::kChkCrcStart));
}

struct Collect : RecordVisitor {
  std::vector<RecordTakenEnd> ends;
  std::vector<RecordLosses> losses;
  uint64_t events = 0;
  void OnEvent(const Event&) override { ++events; }
  void OnTakenEnd(const RecordTakenEnd& e) override { ends.push_back(e); }
  void OnLosses(const RecordLosses& l) override { losses.push_back(l); }
};

TEST_CASE("end-taken chunk: fixed bytes, parsed back exactly") {
  std::vector<uint8_t> b = TakenEndChunk();
  CHECK(b.size() == 58);
  CHECK(wire::Load32(b.data() + wire::kChkTid) == 4242);
  CHECK(wire::Load32(b.data() + wire::kChkSequence) == kLossesSequence);
  CHECK(wire::Load32(b.data() + wire::kChkEvents) == 0);
  CHECK(b[kChunkHeaderBytes] == kTagTakenEnd);
  CHECK(b[kChunkHeaderBytes + 1] == kTakenEndBodyBytes);
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

TEST_CASE("end-taken chunk in a file: a chunk of no thread, read by the visitor, before the losses") {
  testing::TraceBuilder tb;
  ChunkWriter& w = tb.Begin(4242, 0, 1000);
  REQUIRE(w.AppendAlloc(AllocFn::kMalloc, 1100, 0x10000, 64, 0));
  REQUIRE(w.AppendFree(FreeFn::kFree, 1200, 0x10000, 0, 0));
  tb.Flush();
  std::vector<uint8_t>& bytes = tb.bytes();
  std::vector<uint8_t> end = TakenEndChunk({.state = TakenEndState::kEnded, .chunks_sealed = 1,
                                            .events = 2});
  bytes.insert(bytes.end(), end.begin(), end.end());
  std::vector<uint8_t> losses(kLossesChunkBytes);
  REQUIRE(EncodeLossesChunk({.events_dropped = 9, .chunks_dropped = 1, .chunks_damaged = 0},
                            4242, 2000, losses.data(), losses.size()) == losses.size());
  bytes.insert(bytes.end(), losses.begin(), losses.end());
  // The losses chunk stays the file's last bytes, as record reads it.
  RecordLosses tail;
  REQUIRE(ParseLossesChunk(std::span<const uint8_t>(bytes).last(kLossesChunkBytes), &tail));
  CHECK(tail.events_dropped == 9);

  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "t", &error);
  REQUIRE(reader != nullptr);
  Chunk c;
  Collect seen;
  int chunks = 0, ends = 0;
  while (reader->NextChunk(&c) == ReadResult::kChunk) {
    ++chunks;
    RecordTakenEnd e;
    if (ParseTakenEndRecord(c, &e)) {
      ++ends;
      CHECK(e.state == TakenEndState::kEnded);
      CHECK(e.events == 2);
    }
    REQUIRE(DecodeChunk(c, seen, &error));
  }
  CHECK(chunks == 3);
  CHECK(ends == 1);
  CHECK(seen.events == 2);
  REQUIRE(seen.ends.size() == 1);
  CHECK(seen.ends[0].chunks_sealed == 1);
  CHECK(seen.losses.size() == 1);
}

TEST_CASE("end-taken record: damaged forms are corruption, never another end") {
  std::vector<uint8_t> b = TakenEndChunk();
  std::string expected = "bad end-taken record";
  SECTION("an unknown state") {
    wire::Store32(b.data() + kChunkHeaderBytes + 6, 2);
  }
  SECTION("a wrong magic") {
    b[kChunkHeaderBytes + 2] ^= 0xff;
  }
  SECTION("a length that does not fit the fixed body") {
    // One byte less in the length, one more record byte after it: a
    // reader that trusted the length would take a wrong body.
    b[kChunkHeaderBytes + 1] = kTakenEndBodyBytes - 1;
  }
  Reseal(b);
  Chunk c = AsChunk(b);
  Collect seen;
  std::string error;
  CHECK_FALSE(DecodeChunk(c, seen, &error));
  INFO(error);
  CHECK(!error.empty());
  CHECK(seen.ends.empty());
  RecordTakenEnd e;
  CHECK_FALSE(ParseTakenEndRecord(c, &e));
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
