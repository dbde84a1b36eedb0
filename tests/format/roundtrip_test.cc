// SPDX-License-Identifier: Apache-2.0
// Writer -> reader round trips of every record type and every AllocFn/FreeFn.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "tests/format/test_util.h"

namespace crossfree::format {
namespace {

using testing::Collector;
using testing::TraceBuilder;

constexpr AllocFn kAllAllocFns[] = {
    AllocFn::kMalloc,        AllocFn::kCalloc,       AllocFn::kRealloc,  AllocFn::kReallocArray,
    AllocFn::kPosixMemalign, AllocFn::kAlignedAlloc, AllocFn::kMemalign, AllocFn::kValloc,
    AllocFn::kPvalloc,       AllocFn::kNew,          AllocFn::kNewArray, AllocFn::kMallocHook};
constexpr FreeFn kAllFreeFns[] = {FreeFn::kFree, FreeFn::kRealloc, FreeFn::kDelete,
                                  FreeFn::kDeleteArray, FreeFn::kMallocHook};

std::unique_ptr<TraceReader> ReadAll(std::vector<uint8_t>& bytes, std::vector<Chunk>* chunks,
                                     ReadResult expect_end = ReadResult::kEnd) {
  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "mem.trace", &error);
  REQUIRE(reader != nullptr);
  Chunk chunk;
  ReadResult r;
  while ((r = reader->NextChunk(&chunk)) == ReadResult::kChunk) chunks->push_back(chunk);
  CHECK(r == expect_end);
  return reader;
}

TEST_CASE("file header round trip", "[format]") {
  HeaderFields f = TraceBuilder::DefaultFields();
  f.flags = kHeaderFlagForkChild | kHeaderFlagMallocHook;
  f.unwinder = Unwinder::kLibunwind;
  f.max_depth = 200;
  TraceBuilder b(8192, f, "/opt/some server/bin");
  std::string error;
  auto reader = TraceReader::FromBytes(b.bytes(), "x.trace", &error);
  REQUIRE(reader != nullptr);
  const FileHeader& h = reader->header();
  CHECK(h.version == kNanosecondFormatVersion);  // no time resolution: version 4
  CHECK(h.fields.pid == 4242);
  CHECK(h.fields.ppid == 1);
  CHECK(h.fields.clock == Clock::kMonotonic);
  CHECK(h.fields.unwinder == Unwinder::kLibunwind);
  CHECK(h.fields.max_depth == 200);
  CHECK(h.fields.flags == (kHeaderFlagForkChild | kHeaderFlagMallocHook));
  CHECK(h.fields.start_monotonic_ns == 1'000'000'000u);
  CHECK(h.fields.start_realtime_ns == 1'700'000'000'000'000'000u);
  CHECK(h.exe_path == "/opt/some server/bin");
  CHECK(h.size_bytes == b.bytes().size());
  Chunk chunk;
  CHECK(reader->NextChunk(&chunk) == ReadResult::kEnd);
  CHECK(reader->NextChunk(&chunk) == ReadResult::kEnd);
}

TEST_CASE("every event kind and function round trips", "[format]") {
  TraceBuilder b;
  const uint64_t base = 5'000'000'000;
  ChunkWriter& w = b.Begin(77, 3, base);
  std::vector<Event> expect;
  uint64_t ts = base + 10;
  uint64_t addr = 0x7f0000001000;
  uint32_t stack = 1;
  auto ev = [&](EventOp op, uint8_t fn, bool rr, uint64_t t, uint64_t a, uint64_t s,
                uint32_t st) { expect.push_back(Event{op, fn, rr, 77, t, a, s, st}); };
  for (AllocFn fn : kAllAllocFns) {
    // Aligned and unaligned deltas, forward and backward, zero and huge sizes.
    for (int64_t delta : {0, 16, -16, 1, -3, 4096 * 1024, -(1 << 30)}) {
      addr += delta;
      uint64_t size = delta < 0 ? 0 : static_cast<uint64_t>(delta) * 3 + 1;
      REQUIRE(w.AppendAlloc(fn, ts, addr, size, stack));
      ev(EventOp::kAlloc, static_cast<uint8_t>(fn), false, ts, addr, size, stack);
      ts += 137;
      stack = stack * 3 % 1000003;
    }
  }
  for (FreeFn fn : kAllFreeFns) {
    for (int64_t delta : {0, 32, -48, 5, -(1 << 20)}) {
      addr += delta;
      for (uint64_t size : {uint64_t{0}, uint64_t{24}}) {
        REQUIRE(w.AppendFree(fn, ts, addr, size, size == 0 ? kNoStack : stack));
        ev(EventOp::kFree, static_cast<uint8_t>(fn), false, ts, addr, size,
           size == 0 ? kNoStack : stack);
        ts += 50;
      }
    }
  }
  // Timestamps may go backwards (a hook interrupted by a signal handler).
  REQUIRE(w.AppendAlloc(AllocFn::kMalloc, ts - 1000, 16, 1, 0xffffffffu));
  ev(EventOp::kAlloc, 0, false, ts - 1000, 16, 1, 0xffffffffu);
  REQUIRE(w.AppendFree(FreeFn::kFree, ts + 5, ~uint64_t{0} - 15, 0, 9));
  ev(EventOp::kFree, 0, false, ts + 5, ~uint64_t{0} - 15, 0, 9);
  for (AllocFn fn : {AllocFn::kRealloc, AllocFn::kReallocArray}) {
    REQUIRE(w.AppendRealloc(fn, ts + 10, ts + 90, 0x5000, 0x9000, 700, 12));
    ev(EventOp::kFree, static_cast<uint8_t>(FreeFn::kRealloc), true, ts + 10, 0x5000, 0, 12);
    ev(EventOp::kAlloc, static_cast<uint8_t>(fn), true, ts + 90, 0x9000, 700, 12);
    ts += 100;
  }
  // The address delta state continues after a realloc.
  REQUIRE(w.AppendFree(FreeFn::kDelete, ts, 0x9010, 32, 3));
  ev(EventOp::kFree, static_cast<uint8_t>(FreeFn::kDelete), false, ts, 0x9010, 32, 3);
  uint32_t events = w.event_count();
  CHECK(events == expect.size());
  b.Flush();

  std::vector<Chunk> chunks;
  auto reader = ReadAll(b.bytes(), &chunks);
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0].tid == 77);
  CHECK(chunks[0].sequence == 3);
  CHECK(chunks[0].base_timestamp_ns == base);
  CHECK(chunks[0].event_count == events);
  CHECK(chunks[0].file_offset == reader->header().size_bytes);
  Collector c;
  std::string error;
  REQUIRE(DecodeChunk(chunks[0], c, &error));
  REQUIRE(c.events.size() == expect.size());
  for (size_t i = 0; i < expect.size(); ++i) {
    INFO("event " << i);
    CHECK(testing::SameEvent(c.events[i], expect[i]));
  }
}

TEST_CASE("stack, thread name, module and thread exit records round trip", "[format]") {
  TraceBuilder b;
  ChunkWriter& w = b.Begin(9, 0, 100);
  std::vector<uint64_t> frames = {0x401234, 0x7f00deadbeef, 0x401000, 0, ~uint64_t{0}, 0x401240};
  REQUIRE(w.AppendStack(1, frames.data(), frames.size()));
  std::vector<uint64_t> deep(kMaxStackDepth);
  for (size_t i = 0; i < deep.size(); ++i) deep[i] = 0x555500000000 + i * 0x1337;
  REQUIRE(w.AppendStack(0xfffffffe, deep.data(), deep.size()));
  REQUIRE(w.AppendStack(5, nullptr, 0));
  REQUIRE(w.AppendThreadName(150, "reactor-3", 9));
  REQUIRE(w.AppendThreadName(140, "", 0));
  uint8_t build_id[20];
  for (int i = 0; i < 20; ++i) build_id[i] = static_cast<uint8_t>(i * 13);
  ModuleSegment segs[3] = {{0x7f0000000000, 0x1000}, {0x7f0000201000, 0x5000}, {0x7effff000000, 1}};
  ModuleView mv{200, 0x7f0000000000, "/lib/libc.so.6", 14, build_id, 20, segs, 3};
  REQUIRE(w.AppendModule(mv));
  ModuleView empty{300, 0, "", 0, nullptr, 0, nullptr, 0};
  REQUIRE(w.AppendModule(empty));
  REQUIRE(w.AppendAlloc(AllocFn::kNew, 310, 0x1000, 8, 1));
  REQUIRE(w.AppendThreadExit(400));
  CHECK(w.event_count() == 1);
  b.Flush();

  std::vector<Chunk> chunks;
  auto reader = ReadAll(b.bytes(), &chunks);
  REQUIRE(chunks.size() == 1);
  Collector c;
  std::string error;
  REQUIRE(DecodeChunk(chunks[0], c, &error));
  REQUIRE(c.stacks.size() == 3);
  CHECK(c.stacks[0] == testing::StackRec{1, frames});
  CHECK(c.stacks[1] == testing::StackRec{0xfffffffe, deep});
  CHECK(c.stacks[2] == testing::StackRec{5, {}});
  REQUIRE(c.names.size() == 2);
  CHECK(c.names[0] == testing::NameRec{9, 150, "reactor-3"});
  CHECK(c.names[1] == testing::NameRec{9, 140, ""});
  REQUIRE(c.modules.size() == 2);
  CHECK(c.module_tids == std::vector<uint32_t>{9, 9});
  const Module& m = c.modules[0];
  CHECK(m.timestamp_ns == 200);
  CHECK(m.load_bias == 0x7f0000000000);
  CHECK(m.path == "/lib/libc.so.6");
  CHECK(m.build_id == std::vector<uint8_t>(build_id, build_id + 20));
  REQUIRE(m.segments.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(m.segments[i].start == segs[i].start);
    CHECK(m.segments[i].size == segs[i].size);
  }
  CHECK(c.modules[1].timestamp_ns == 300);
  CHECK(c.modules[1].path.empty());
  CHECK(c.modules[1].build_id.empty());
  CHECK(c.modules[1].segments.empty());
  REQUIRE(c.events.size() == 1);
  CHECK(c.events[0].timestamp_ns == 310);
  CHECK(c.events[0].address == 0x1000);
  REQUIRE(c.exits.size() == 1);
  CHECK(c.exits[0] == testing::ExitRec{9, 400});
}

TEST_CASE("a full chunk refuses records and the retry fits after Begin", "[format]") {
  TraceBuilder b(ChunkWriter::kMinChunkCapacity);
  uint32_t seq = 0;
  ChunkWriter& w = b.Begin(1, seq, 0);
  uint64_t appended = 0;
  uint64_t rejected = 0;
  std::vector<uint64_t> big(kMaxStackDepth, 0x123456789abcdef0);
  for (uint64_t i = 0; i < 5000; ++i) {
    bool ok = (i % 500 == 7) ? w.AppendStack(static_cast<uint32_t>(i + 1), big.data(), big.size())
                             : w.AppendAlloc(AllocFn::kMalloc, i * 1000, i * 0x100000001, i, 1);
    if (!ok) {
      ++rejected;
      CHECK(w.size() <= ChunkWriter::kMinChunkCapacity);
      b.Flush();
      w.Begin(1, ++seq, i * 1000);
      REQUIRE(((i % 500 == 7) ? w.AppendStack(static_cast<uint32_t>(i + 1), big.data(), big.size())
                               : w.AppendAlloc(AllocFn::kMalloc, i * 1000, i * 0x100000001, i, 1)));
    }
    ++appended;
  }
  b.Flush();
  CHECK(rejected >= 5);
  std::vector<Chunk> chunks;
  auto reader = ReadAll(b.bytes(), &chunks);
  REQUIRE(chunks.size() == rejected + 1);
  uint64_t n = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    CHECK(chunks[i].sequence == i);
    Collector c;
    std::string error;
    REQUIRE(DecodeChunk(chunks[i], c, &error));
    for (const Event& e : c.events) {
      CHECK(e.size == e.timestamp_ns / 1000);
      CHECK(e.address == e.size * 0x100000001);
      ++n;
    }
  }
  CHECK(n == 5000 - 10);  // ten of the records were stack definitions
}

}  // namespace
}  // namespace crossfree::format

namespace crossfree::format {
namespace {

TEST_CASE("size and address prediction per stack round trips", "[format]") {
  testing::TraceBuilder b;
  ChunkWriter& w = b.Begin(1, 0, 0);
  const uint64_t big = uint64_t{1} << 33;
  // Repeated, huge (not cacheable), truncation-colliding sizes on one stack;
  // stacks that share a prediction slot; kNoStack.
  struct In {
    bool alloc;
    uint64_t address, size;
    uint32_t stack;
  };
  const uint32_t s1 = 7, s2 = 7 + ChunkWriter::kSiteSlots, s3 = 7 + 2 * ChunkWriter::kSiteSlots;
  std::vector<In> in = {
      {true, 0x1000, 5, s1},      {true, 0x1010, 5, s1},       {true, 0x1020, big, s1},
      {true, 0x1030, big, s1},    {true, 0x1040, big + 5, s1}, {true, 0x1050, 5, s1},
      {true, 0x1060, 0, s1},      {true, 0x1070, big, s1},     {true, 0x1080, 0, s1},
      {false, 0x1000, 5, s2},     {false, 0x1010, 5, s2},      {true, 0x1090, 0, s1},
      {false, 0x1000, 0, s3},     {true, 0x9999, 77, kNoStack}, {false, 0x9999, 0, kNoStack},
      {false, 0x123456789, 77, kNoStack}, {true, 0x1001, 3, s1}, {true, 0x1001, 3, s1},
  };
  uint64_t ts = 10;
  for (const In& i : in) {
    if (i.alloc) {
      REQUIRE(w.AppendAlloc(AllocFn::kMalloc, ts++, i.address, i.size, i.stack));
    } else {
      REQUIRE(w.AppendFree(FreeFn::kDelete, ts++, i.address, i.size, i.stack));
    }
  }
  b.Flush();
  std::string error;
  auto reader = TraceReader::FromBytes(b.bytes(), "m", &error);
  REQUIRE(reader != nullptr);
  Chunk chunk;
  REQUIRE(reader->NextChunk(&chunk) == ReadResult::kChunk);
  testing::Collector c;
  REQUIRE(DecodeChunk(chunk, c, &error));
  REQUIRE(c.events.size() == in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    INFO("event " << k);
    CHECK(c.events[k].op == (in[k].alloc ? EventOp::kAlloc : EventOp::kFree));
    CHECK(c.events[k].address == in[k].address);
    CHECK(c.events[k].size == in[k].size);
    CHECK(c.events[k].stack_id == in[k].stack);
    CHECK(c.events[k].timestamp_ns == 10 + k);
  }
}

}  // namespace
}  // namespace crossfree::format

namespace crossfree::format {
namespace {

// The bytes of a small header and chunk, fixed: any change to the encoding
// shows up here (and must come with a docs/trace-format.md update and, if old
// files stop reading, a version bump). The same bytes are the worked example
// in docs/trace-format.md.
// Version 1's worked example (docs/trace-format.md 11 before version 2),
// as a version 1 writer wrote it: a fixture that must still read.
const std::vector<uint8_t> kV1Header = {
    0x43, 0x52, 0x53, 0x46, 0x54, 0x52, 0x43, 0x0a, 0x01, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
    0xd2, 0x04, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17,
    0x08, 0x00, 0x00, 0x00, 0x2f, 0x62, 0x69, 0x6e, 0x2f, 0x61, 0x70, 0x70, 0xda, 0x71, 0xe6, 0xc5};
const std::vector<uint8_t> kV1Chunk = {
    0x43, 0x48, 0x4e, 0x4b, 0xe4, 0xc5, 0xd7, 0x8f, 0x26, 0x00, 0x00, 0x83, 0x07, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x01, 0x02, 0x80, 0xc0, 0x80, 0x04, 0xe8, 0x08,              // stack 1
    0x49, 0xac, 0x02, 0x03, 0x80, 0x84, 0x80, 0x80, 0x80, 0xfc, 0x03, 0x30,  // new
    0x49, 0xf4, 0x03, 0x02, 0x06,                                      // new, predicted
    0x50, 0x90, 0x03, 0x05, 0x05, 0x00,                                // free
    0x40, 0xd8, 0x04, 0x03, 0x05, 0x64};                               // malloc

// The events of the worked example, version 1 and 2 alike but for the CPUs.
std::vector<Event> WorkedExampleEvents(uint32_t cpu_first3, uint32_t cpu_last) {
  return {Event{EventOp::kAlloc, 9, false, 7, 1150, 0x7f0000001000, 48, 1, cpu_first3},
          Event{EventOp::kAlloc, 9, false, 7, 1400, 0x7f0000001030, 48, 1, cpu_first3},
          Event{EventOp::kFree, 0, false, 7, 1600, 0x7f0000001000, 0, 2, cpu_first3},
          Event{EventOp::kAlloc, 0, false, 7, 1900, 0x7f0000001000, 100, 1, cpu_last}};
}

void CheckEvents(std::vector<uint8_t>& file, const std::vector<Event>& expect) {
  std::vector<Chunk> chunks;
  ReadAll(file, &chunks);
  REQUIRE(chunks.size() == 1);
  Collector c;
  std::string error;
  REQUIRE(DecodeChunk(chunks[0], c, &error));
  REQUIRE(c.events.size() == expect.size());
  for (size_t i = 0; i < expect.size(); ++i) CHECK(testing::SameEvent(c.events[i], expect[i]));
  REQUIRE(c.stacks.size() == 1);
  CHECK(c.stacks[0].frames == std::vector<uint64_t>{0x401000, 0x401234});
}

TEST_CASE("version 1 files still read: the version 1 worked example", "[format]") {
  std::vector<uint8_t> file = kV1Header;
  file.insert(file.end(), kV1Chunk.begin(), kV1Chunk.end());
  std::string error;
  auto reader = TraceReader::FromBytes(file, "v1.trace", &error);
  REQUIRE(reader != nullptr);
  CHECK(reader->header().version == 1);
  CheckEvents(file, WorkedExampleEvents(kUnknownCpu, kUnknownCpu));
}

TEST_CASE("encoding is frozen: header and chunk bytes", "[format]") {
  uint8_t buf[8192];
  const HeaderFields f = testing::WorkedExampleFields();
  size_t n = EncodeFileHeader(f, "/bin/app", 8, buf, sizeof buf);
  const std::vector<uint8_t> header = {
      0x43, 0x52, 0x53, 0x46, 0x54, 0x52, 0x43, 0x0a, 0x04, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
      0xd2, 0x04, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
      0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17,
      0x08, 0x00, 0x00, 0x00, 0x2f, 0x62, 0x69, 0x6e, 0x2f, 0x61, 0x70, 0x70, 0x3a, 0xba, 0xeb, 0xfb};
  CHECK(std::vector<uint8_t>(buf, buf + n) == header);
  std::vector<uint8_t> file(buf, buf + n);

  const std::vector<uint8_t> written = testing::WorkedExampleChunk();
  const std::vector<uint8_t> chunk = {
      0x43, 0x48, 0x4e, 0x4b, 0x9b, 0x6f, 0xea, 0x07, 0x2b, 0x00, 0x00, 0x8e, 0x07, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x01, 0x01, 0x02, 0x80, 0xc0, 0x80, 0x04, 0xe8, 0x08,              // stack 1
      0x05, 0x03,                                                        // cpu 3
      0x49, 0xac, 0x02, 0x03, 0x80, 0x84, 0x80, 0x80, 0x80, 0xfc, 0x03, 0x30,  // new
      0x49, 0xf4, 0x03, 0x02, 0x06,                                      // new, predicted
      0x50, 0x90, 0x03, 0x05, 0x05, 0x00,                                // free
      0x05, 0xc8, 0x01,                                                  // cpu 200
      0x40, 0xd8, 0x04, 0x03, 0x05, 0x64};                               // malloc
  CHECK(written == chunk);
  file.insert(file.end(), written.begin(), written.end());
  CheckEvents(file, WorkedExampleEvents(3, 200));
}
}  // namespace
}  // namespace crossfree::format
