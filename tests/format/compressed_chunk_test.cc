// SPDX-License-Identifier: Apache-2.0
// Version 2: cpu records and compressed chunks (docs/trace-format.md 5.1,
// 6.8) written, compressed and read back; damaged and crafted compressed
// chunks refused with the chunks before them kept.
#include <catch2/catch.hpp>
#include <zstd.h>

#include <array>
#include <string>
#include <vector>

#include "format/chunk_codec.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "tests/format/test_util.h"
#include "tests/format/workload.h"

namespace crossfree::format {
namespace {

using testing::Collector;
using testing::TraceBuilder;

// A trace of three threads with cpu records (and CPU changes inside a
// chunk), a realloc, stacks, names, a module and a thread exit. Returns the
// plain file; *events gets what a reader must deliver.
std::vector<uint8_t> CpuTrace(std::vector<Event>* events) {
  TraceBuilder b(ChunkWriter::kMinChunkCapacity);
  uint64_t frames[3] = {0x401000, 0x401100, 0x7f0000001234};
  auto add = [&](EventOp op, uint8_t fn, bool rr, uint32_t tid, uint64_t ts, uint64_t a,
                 uint64_t size, uint32_t stack, uint32_t cpu) {
    events->push_back(Event{op, fn, rr, tid, ts, a, size, stack, cpu});
  };
  ChunkWriter& w = b.Begin(100, 0, 1000);
  w.AppendThreadName(1001, "producer-0", 10);
  w.AppendStack(1, frames, 3);
  // 300 events over CPUs 0, 1, unknown, 7: several cpu records per chunk.
  uint64_t ts = 1100, addr = 0x7f1000000000;
  for (uint32_t i = 0; i < 300; ++i) {
    const uint32_t cpu = i < 100 ? 0 : i < 150 ? 1 : i < 200 ? kUnknownCpu : 7;
    const uint64_t size = 16 + (i * 37) % 500;
    REQUIRE(w.AppendAlloc(AllocFn::kMalloc, ts, addr, size, 1, cpu));
    add(EventOp::kAlloc, 0, false, 100, ts, addr, size, 1, cpu);
    addr += 16 * (1 + i % 5);
    ts += 100 + (i * 7) % 90;
  }
  REQUIRE(w.AppendRealloc(AllocFn::kRealloc, ts, ts + 50, 0x7f1000000000, 0x7f2000000000, 4096,
                          1, 3));
  add(EventOp::kFree, static_cast<uint8_t>(FreeFn::kRealloc), true, 100, ts, 0x7f1000000000, 0,
      1, 3);
  add(EventOp::kAlloc, static_cast<uint8_t>(AllocFn::kRealloc), true, 100, ts + 50,
      0x7f2000000000, 4096, 1, 3);
  b.Flush();
  w.Begin(200, 0, 2000);
  testing::AppendAppModule(w, 2000);
  w.AppendStack(2, frames + 1, 2);
  ts = 2100;
  for (uint32_t i = 0; i < 150; ++i) {
    const uint64_t a = 0x7f1000000000 + 16 * i;
    REQUIRE(w.AppendFree(FreeFn::kDelete, ts, a, i % 3 == 0 ? 48 : 0, 2, 5));
    add(EventOp::kFree, static_cast<uint8_t>(FreeFn::kDelete), false, 200, ts, a,
        i % 3 == 0 ? 48 : 0, 2, 5);
    ts += 133;
  }
  w.AppendThreadExit(ts);
  b.Flush();
  w.Begin(300, 0, 4000);  // no CPU known: no cpu record at all
  REQUIRE(w.AppendAlloc(AllocFn::kPosixMemalign, 4100, 0x7f3000000000, 256, kNoStack));
  add(EventOp::kAlloc, static_cast<uint8_t>(AllocFn::kPosixMemalign), false, 300, 4100,
      0x7f3000000000, 256, kNoStack, kUnknownCpu);
  b.Flush();
  return b.bytes();
}

// The file with every chunk after the header replaced by CompressChunk's.
std::vector<uint8_t> CompressAll(const std::vector<uint8_t>& plain,
                                 std::vector<uint64_t>* offsets = nullptr,
                                 size_t* compressed_chunks = nullptr) {
  std::string error;
  auto reader = TraceReader::FromBytes(plain, "plain", &error);
  REQUIRE(reader != nullptr);
  std::vector<uint8_t> out(plain.begin(), plain.begin() + reader->header().size_bytes);
  Chunk c;
  size_t n = 0;
  while (reader->NextChunk(&c) == ReadResult::kChunk) {
    std::vector<uint8_t> z;
    const uint8_t* start = plain.data() + c.file_offset;
    REQUIRE(CompressChunk(start, kChunkHeaderBytes + c.payload_bytes, z, &error));
    if (wire::Load32(z.data()) == kCompressedChunkMagic) ++n;
    if (offsets) offsets->push_back(out.size());
    out.insert(out.end(), z.begin(), z.end());
  }
  if (compressed_chunks) *compressed_chunks = n;
  return out;
}

struct ReadBack {
  Collector c;
  std::vector<Chunk> chunks;
  std::vector<uint32_t> cpu_records;
  ReadResult end = ReadResult::kChunk;
  std::string error;
};

class CpuCollector : public Collector {
 public:
  explicit CpuCollector(std::vector<uint32_t>* cpus) : cpus_(cpus) {}
  void OnCpu(uint32_t, uint32_t cpu) override { cpus_->push_back(cpu); }
  std::vector<uint32_t>* cpus_;
};

void Read(std::span<const uint8_t> bytes, ReadBack* r) {
  auto reader = TraceReader::FromBytes(bytes, "t", &r->error);
  REQUIRE(reader != nullptr);
  Chunk chunk;
  CpuCollector c(&r->cpu_records);
  while ((r->end = reader->NextChunk(&chunk)) == ReadResult::kChunk) {
    r->chunks.push_back(chunk);
    REQUIRE(DecodeChunk(chunk, c, &r->error));
  }
  if (r->end != ReadResult::kEnd) r->error = reader->error();
  r->c.events = c.events;
  r->c.stacks = c.stacks;
  r->c.names = c.names;
  r->c.modules = c.modules;
  r->c.exits = c.exits;
}

TEST_CASE("v2 round trip: cpu records and compressed chunks give the exact events back",
          "[format][v2]") {
  std::vector<Event> expect;
  std::vector<uint8_t> plain = CpuTrace(&expect);
  size_t compressed_chunks = 0;
  std::vector<uint8_t> packed = CompressAll(plain, nullptr, &compressed_chunks);
  CHECK(compressed_chunks == 2);  // the one-event chunk stays plain: smaller so
  CHECK(packed.size() < plain.size() * 6 / 10);
  for (const auto* file : {&plain, &packed}) {
    ReadBack r;
    Read(*file, &r);
    CHECK(r.end == ReadResult::kEnd);
    REQUIRE(r.c.events.size() == expect.size());
    for (size_t i = 0; i < expect.size(); ++i) {
      INFO("event " << i);
      CHECK(testing::SameEvent(r.c.events[i], expect[i]));
    }
    // Records written only on a change: 0, 1, unknown, 7, then 3 for the
    // realloc; 5 in the second chunk; none in the third.
    CHECK(r.cpu_records == std::vector<uint32_t>{0, 1, kUnknownCpu, 7, 3, 5});
    CHECK(r.c.stacks.size() == 2);
    REQUIRE(r.c.names.size() == 1);
    CHECK(r.c.names[0].name == "producer-0");
    REQUIRE(r.c.modules.size() == 1);
    CHECK(r.c.modules[0].path == "/usr/bin/app");
    CHECK(r.c.exits.size() == 1);
    REQUIRE(r.chunks.size() == 3);
    CHECK(r.chunks[0].compressed == (file == &packed));
    CHECK(r.chunks[2].compressed == false);
    CHECK(r.chunks[0].raw_bytes ==
          (file == &packed ? r.chunks[0].raw_bytes : r.chunks[0].payload_bytes));
  }
}

TEST_CASE("CompressChunk refuses what is not one whole valid plain chunk", "[format][v2]") {
  std::vector<Event> expect;
  std::vector<uint8_t> plain = CpuTrace(&expect);
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> packed = CompressAll(plain, &offsets);
  std::string error;
  auto r2 = TraceReader::FromBytes(plain, "p", &error);
  Chunk c;
  REQUIRE(r2->NextChunk(&c) == ReadResult::kChunk);
  std::vector<uint8_t> chunk(plain.begin() + c.file_offset,
                             plain.begin() + c.file_offset + kChunkHeaderBytes + c.payload_bytes);
  std::vector<uint8_t> out;
  SECTION("checksum") {
    chunk[40] ^= 1;
    CHECK_FALSE(CompressChunk(chunk.data(), chunk.size(), out, &error));
    CHECK(error == "chunk checksum mismatch");
  }
  SECTION("length") {
    CHECK_FALSE(CompressChunk(chunk.data(), chunk.size() - 1, out, &error));
    CHECK(error.rfind("chunk length word does not match", 0) == 0);
  }
  SECTION("already compressed") {
    const uint8_t* z = packed.data() + offsets[0];
    CHECK_FALSE(CompressChunk(z, packed.size() - offsets[0], out, &error));
    CHECK(error.rfind("not a plain chunk", 0) == 0);
  }
  SECTION("an unknown tag inside a valid checksum") {
    std::vector<uint8_t> bad = testing::MakeChunk(1, 0, 0, 0, {0x04, 0x00, 0x06, 0x00});
    CHECK_FALSE(CompressChunk(bad.data(), bad.size(), out, &error));
    CHECK(error == "malformed record at byte 2 of the chunk's records");
  }
}

TEST_CASE("a compressed trace cut at any byte keeps the chunks before the cut",
          "[format][v2]") {
  std::vector<Event> expect;
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> packed = CompressAll(CpuTrace(&expect), &offsets);
  offsets.push_back(packed.size());
  const size_t header = offsets[0];
  for (size_t cut = header; cut <= packed.size(); ++cut) {
    ReadBack r;
    Read(std::span<const uint8_t>(packed.data(), cut), &r);
    size_t whole = 0;
    while (whole + 1 < offsets.size() && offsets[whole + 1] <= cut) ++whole;
    INFO("cut at " << cut);
    CHECK(r.chunks.size() == whole);
    CHECK(r.end == (cut == offsets[whole] ? ReadResult::kEnd : ReadResult::kTruncated));
  }
}

TEST_CASE("damaging any byte of a compressed chunk gives the chunks before it, then corrupt",
          "[format][v2]") {
  std::vector<Event> expect;
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> packed = CompressAll(CpuTrace(&expect), &offsets);
  REQUIRE(wire::Load32(packed.data() + offsets[1]) == kCompressedChunkMagic);
  // The second chunk is compressed: every byte of it, three ways.
  const size_t end = offsets[2];
  for (size_t at = offsets[1]; at < end; ++at) {
    for (uint8_t flip : {0x01, 0x11, 0x80, 0xff}) {  // 0x11: "CHNZ" -> "CHNK"
      std::vector<uint8_t> bad = packed;
      bad[at] ^= flip;
      ReadBack r;
      auto reader = TraceReader::FromBytes(bad, "t", &r.error);
      REQUIRE(reader != nullptr);
      Chunk chunk;
      size_t good = 0;
      ReadResult res;
      while ((res = reader->NextChunk(&chunk)) == ReadResult::kChunk) ++good;
      INFO("byte " << at << " ^ " << int(flip));
      CHECK(good == 1);
      CHECK(res == ReadResult::kCorrupt);
      CHECK(reader->error_offset() == offsets[1]);
      CHECK(reader->error().rfind("corrupt chunk at offset " + std::to_string(offsets[1]), 0) ==
            0);
    }
  }
}

// A compressed chunk built by hand: lanes as given, zstd-compressed, or a
// frame as given; the checksum made to match, so that only the lanes
// header, the frame or the lanes can be wrong.
std::vector<uint8_t> HandChunk(uint32_t events, uint32_t raw_length,
                               const std::vector<uint32_t>& lane_lengths,
                               const std::vector<uint8_t>& frame,
                               uint8_t layout = wire::kLayoutLanes) {
  // The lengths header holds as many lengths as given: 4 for layouts 1 and
  // 2, 24 for layout 3 (fewer make a header too short for it).
  std::vector<uint8_t> payload(wire::kZLaneLengths + 4 * lane_lengths.size());
  wire::Store32(payload.data() + wire::kZRawLength, raw_length);
  payload[wire::kZLayout] = layout;
  for (size_t i = 0; i < lane_lengths.size(); ++i) {
    wire::Store32(payload.data() + wire::kZLaneLengths + 4 * i, lane_lengths[i]);
  }
  payload.insert(payload.end(), frame.begin(), frame.end());
  std::vector<uint8_t> c = testing::MakeChunk(9, 0, 1000, events, payload);
  wire::Store32(c.data(), kCompressedChunkMagic);
  uint32_t crc = Crc32c(c.data(), 4);
  crc = Crc32c(c.data() + wire::kChkCrcStart, c.size() - wire::kChkCrcStart, crc);
  wire::Store32(c.data() + wire::kChkCrc, crc);
  return c;
}

std::vector<uint8_t> Zstd(const std::vector<uint8_t>& content) {
  std::vector<uint8_t> frame(ZSTD_compressBound(content.size()));
  size_t n = ZSTD_compress(frame.data(), frame.size(), content.data(), content.size(), 3);
  REQUIRE_FALSE(ZSTD_isError(n));
  frame.resize(n);
  return frame;
}

// A zstd frame header that declares `size` bytes of content (single
// segment, 8-byte content size), then one empty raw block marked last.
std::vector<uint8_t> FrameDeclaring(uint64_t size) {
  std::vector<uint8_t> f = {0x28, 0xb5, 0x2f, 0xfd, 0xe0};
  for (int i = 0; i < 8; ++i) f.push_back(static_cast<uint8_t>(size >> (8 * i)));
  f.insert(f.end(), {0x01, 0x00, 0x00});
  return f;
}

std::string FirstError(const std::vector<uint8_t>& chunk, ReadResult* end) {
  std::vector<uint8_t> file = TraceBuilder().bytes();
  file.insert(file.end(), chunk.begin(), chunk.end());
  std::string error;
  auto reader = TraceReader::FromBytes(file, "t", &error);
  REQUIRE(reader != nullptr);
  Chunk c;
  *end = reader->NextChunk(&c);
  if (*end != ReadResult::kChunk) return reader->error();
  Collector sink;
  CHECK_FALSE(DecodeChunk(c, sink, &error));
  return error;
}

TEST_CASE("crafted compressed chunks are refused before anything is allocated", "[format][v2]") {
  ReadResult end;
  const uint64_t at = TraceBuilder().bytes().size();
  const std::string prefix = "corrupt chunk at offset " + std::to_string(at) + " (";
  SECTION("a frame that declares 4 GiB") {
    CHECK(FirstError(HandChunk(0, 100, {0, 0, 0, 0}, FrameDeclaring(4ull << 30)), &end) ==
          prefix + "compressed chunk's zstd frame declares 4294967296 bytes, above the 16777184-"
                   "byte limit)");
    CHECK(end == ReadResult::kCorrupt);
  }
  SECTION("a raw length of 4 GiB - 1") {
    CHECK(FirstError(HandChunk(0, 0xffffffff, {0, 0, 0, 0}, FrameDeclaring(0xffffffff)), &end) ==
          prefix + "compressed chunk declares 4294967295 bytes, above the 16777184-byte limit)");
    CHECK(end == ReadResult::kCorrupt);
  }
  SECTION("the inflater itself refuses it and keeps no buffer") {
    std::vector<uint8_t> c = HandChunk(0, 100, {0, 0, 0, 0}, FrameDeclaring(4ull << 30));
    ChunkInflater inflater;
    ChunkLanes lanes;
    std::string what;
    CHECK_FALSE(inflater.Inflate(std::span<const uint8_t>(c).subspan(kChunkHeaderBytes), &lanes,
                                 &what));
    CHECK(inflater.buffer_capacity() == 0);
  }
  SECTION("a frame without its size") {
    std::vector<uint8_t> f = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 0x01, 0x00, 0x00};
    CHECK(FirstError(HandChunk(0, 0, {0, 0, 0, 0}, f), &end) ==
          prefix + "compressed chunk's zstd frame does not declare its size)");
  }
  SECTION("a declared size that is not the chunk's") {
    CHECK(FirstError(HandChunk(0, 100, {0, 0, 0, 0}, FrameDeclaring(99)), &end) ==
          prefix + "compressed chunk's zstd frame declares 99 bytes, its header 100)");
  }
  SECTION("bytes after the frame") {
    std::vector<uint8_t> f = Zstd({0x04, 0x00});
    f.push_back(0);
    CHECK(FirstError(HandChunk(0, 2, {2, 0, 0, 0}, f), &end) ==
          prefix + "compressed chunk's zstd frame does not end at the chunk's end)");
  }
  SECTION("lanes longer than the records") {
    CHECK(FirstError(HandChunk(0, 2, {2, 1, 0, 0}, Zstd({0x04, 0x00})), &end) ==
          prefix + "compressed chunk's lanes (3 bytes) exceed its 2 bytes)");
  }
  SECTION("an unknown layout") {
    std::vector<uint8_t> c = HandChunk(0, 2, {2, 0, 0, 0}, Zstd({0x04, 0x00}));
    c[kChunkHeaderBytes + wire::kZLayout] = 4;
    uint32_t crc = Crc32c(c.data(), 4);
    wire::Store32(c.data() + wire::kChkCrc,
                  Crc32c(c.data() + wire::kChkCrcStart, c.size() - wire::kChkCrcStart, crc));
    CHECK(FirstError(c, &end) == prefix + "unknown compressed chunk layout 4)");
  }
  SECTION("layout 3 with a header of layout 1's length") {
    // Layout 3's stream lengths take 96 bytes; these 21 + 11 cannot hold them.
    CHECK(FirstError(HandChunk(0, 2, {2, 0, 0, 0}, Zstd({0x04, 0x00}), wire::kLayoutPlanes),
                     &end) == prefix + "compressed chunk shorter than its streams header)");
  }
  SECTION("a frame that declares its size but holds less") {
    CHECK(FirstError(HandChunk(0, 100, {0, 0, 0, 0}, FrameDeclaring(100)), &end)
              .rfind(prefix + "zstd: ", 0) == 0);
    CHECK(end == ReadResult::kChunk);  // a decode error, after the checks that read no frame
  }
}

TEST_CASE("lanes that do not match their records are corrupt", "[format][v2]") {
  ReadResult end;
  const uint64_t at = TraceBuilder().bytes().size();
  // One aligned malloc event: tag 0x40 in lane 0; ts 0x02, stack word 0x03
  // (stack 1, size present), address 0x00, size 0x30 in lanes 1-4.
  SECTION("well formed") {
    std::vector<uint8_t> file = TraceBuilder().bytes();
    // Lane 0: a cpu record (05 04) and the event's tag.
    std::vector<uint8_t> c =
        HandChunk(1, 7, {3, 1, 1, 1}, Zstd({0x05, 0x04, 0x40, 0x02, 0x03, 0x00, 0x30}));
    file.insert(file.end(), c.begin(), c.end());
    ReadBack r;
    Read(file, &r);
    REQUIRE(r.c.events.size() == 1);
    CHECK(r.c.events[0].timestamp_ns == 1001);
    CHECK(r.c.events[0].stack_id == 1);
    CHECK(r.c.events[0].size == 0x30);
    CHECK(r.c.events[0].address == 0);
    CHECK(r.c.events[0].cpu == 4);
    CHECK(r.cpu_records == std::vector<uint32_t>{4});
  }
  SECTION("a byte left in a lane") {
    CHECK(FirstError(HandChunk(1, 8, {3, 1, 1, 1},
                               Zstd({0x05, 0x04, 0x40, 0x02, 0x03, 0x00, 0x30, 0x30})),
                     &end) == "corrupt chunk at offset " + std::to_string(at) +
                                  " (lane 4 has 1 bytes left after the last record)");
  }
  SECTION("a lane that runs out") {
    CHECK(FirstError(HandChunk(1, 6, {3, 1, 1, 1}, Zstd({0x05, 0x04, 0x40, 0x02, 0x03, 0x00})),
                     &end) == "corrupt record in compressed chunk at offset " +
                                  std::to_string(at) + " (byte 2 of its records: truncated event)");
  }
}

// Every chunk of a plain trace compressed by a compressor of the given
// layout; each chunk must come out in that layout. The file's size.
size_t CompressedSize(const std::vector<uint8_t>& plain, uint8_t layout,
                      std::vector<uint8_t>* file = nullptr) {
  std::string error;
  ChunkCompressor compressor(kDefaultCompressionLevel, layout);
  auto reader = TraceReader::FromBytes(plain, "plain", &error);
  REQUIRE(reader != nullptr);
  std::vector<uint8_t> out(plain.begin(), plain.begin() + reader->header().size_bytes);
  Chunk c;
  std::vector<uint8_t> z;
  while (reader->NextChunk(&c) == ReadResult::kChunk) {
    REQUIRE(compressor.Compress(plain.data() + c.file_offset, kChunkHeaderBytes + c.payload_bytes,
                                z, &error));
    CHECK(z[kChunkHeaderBytes + wire::kZLayout] == layout);
    out.insert(out.end(), z.begin(), z.end());
  }
  if (file != nullptr) *file = out;
  return out.size();
}

// Layouts 2 and 3 (docs/trace-format.md 5.2, 5.3) on the producer/consumer
// workload (tests/format/workload.h): its consumers free other threads'
// objects, and every thread frees and reallocates its own temporaries, so
// both kinds of reference and the delta forms occur. Every field of every
// event must come back exactly, and each layout must pay over the one
// before.
TEST_CASE("layouts 2 and 3 round trip: every event of a known workload comes back exactly",
          "[format][v3][v4]") {
  testing::WorkloadOptions options;
  options.events = 60000;
  testing::WorkloadStats stats;
  std::vector<uint8_t> plain = testing::ProducerConsumerWorkload(options).Run(&stats);
  std::vector<uint64_t> offsets;
  size_t compressed_chunks = 0;
  std::vector<uint8_t> packed = CompressAll(plain, &offsets, &compressed_chunks);
  REQUIRE(compressed_chunks == stats.chunks);
  // CompressChunk writes layout 3.
  for (uint64_t at : offsets) CHECK(packed[at + kChunkHeaderBytes + wire::kZLayout] == 3);
  std::vector<uint8_t> layout2;
  const size_t layout2_size = CompressedSize(plain, wire::kLayoutRefs, &layout2);

  ReadBack a;
  Read(plain, &a);
  REQUIRE(a.c.events.size() == stats.events);
  for (const std::vector<uint8_t>* file : {&packed, &layout2}) {
    ReadBack b;
    Read(*file, &b);
    CHECK(b.end == ReadResult::kEnd);
    REQUIRE(b.c.events.size() == a.c.events.size());
    for (size_t i = 0; i < a.c.events.size(); ++i) {
      INFO("event " << i);
      REQUIRE(testing::SameEvent(b.c.events[i], a.c.events[i]));
    }
  }
  // Layout 1 is larger than layout 2 (the references replaced deltas),
  // and layout 2 larger than layout 3 (the planes).
  CHECK(packed.size() < layout2_size);
  CHECK(layout2_size < CompressedSize(plain, wire::kLayoutLanes));
}

TEST_CASE("layout 2 references resolve, and those that name nothing are corrupt",
          "[format][v3]") {
  ReadResult end;
  const uint64_t at = TraceBuilder().bytes().size();
  // malloc(48) at 0x1000 (stack 1; lane 3: delta 0x100 units + 1 = 0x201),
  // free of the latest allocation (stack 2, size 0; lane 3: 2 * 1 + 1), then
  // malloc(48) again on stack 1 (size predicted) reusing the freed block
  // (lane 3: 0).
  const std::vector<uint8_t> lanes = {0x40, 0x50, 0x40,        // tags
                                      0x02, 0x02, 0x02,        // ts deltas
                                      0x03, 0x05, 0x02,        // stack words
                                      0x81, 0x04, 0x03, 0x00,  // lane 3
                                      0x30, 0x00};             // sizes
  // The events of a file of one chunk of these lanes in the given layout.
  auto read = [&](uint8_t layout) {
    std::vector<uint8_t> file = TraceBuilder().bytes();
    std::vector<uint8_t> c = HandChunk(3, 15, {3, 3, 3, 4}, Zstd(lanes), layout);
    file.insert(file.end(), c.begin(), c.end());
    ReadBack r;
    Read(file, &r);
    return r.c.events;
  };
  SECTION("well formed") {
    std::vector<Event> events = read(wire::kLayoutRefs);
    REQUIRE(events.size() == 3);
    CHECK(events[0].address == 0x1000);
    CHECK(events[0].size == 48);
    CHECK(events[1].op == EventOp::kFree);
    CHECK(events[1].address == 0x1000);
    CHECK(events[1].size == 0);
    CHECK(events[2].address == 0x1000);
    CHECK(events[2].size == 48);
    CHECK(events[2].timestamp_ns == 1003);
  }
  SECTION("the same lanes read as layout 1 are other addresses") {
    std::vector<Event> events = read(wire::kLayoutLanes);
    REQUIRE(events.size() == 3);
    CHECK(events[0].address == static_cast<uint64_t>(wire::UnZigZag(0x201)) << 4);
    CHECK(events[1].address != events[0].address);
  }
  // The error of the same chunk with the free's lane 3 value replaced.
  auto error_with_free_value = [&](uint8_t v) {
    std::vector<uint8_t> bad = lanes;
    bad[11] = v;
    return FirstError(HandChunk(3, 15, {3, 3, 3, 4}, Zstd(bad), wire::kLayoutRefs), &end);
  };
  const std::string prefix = "corrupt record in compressed chunk at offset " + std::to_string(at);
  SECTION("a free that names an allocation the chunk does not have") {
    // The free names the 2nd last allocation; there is one.
    CHECK(error_with_free_value(0x05) ==
          prefix + " (byte 6 of its records: free refers to allocation 2 back, the chunk has 1)");
  }
  SECTION("an allocation that reuses a block no free gave") {
    // The free carries a delta (lane 3: 2 * zz(0) = 0): nothing is pushed.
    CHECK(error_with_free_value(0x00) ==
          prefix + " (byte 11 of its records: allocation reuses a freed block of size class 4, "
                   "none is free)");
  }
}

// Layout 3 (docs/trace-format.md 5.3): the chunk of the layout 2 test
// above (malloc(48) at 0x1000, its free by reference, a malloc reusing the
// block), with the allocations' address values made longer so that a
// varint spans all three planes: a stack 1 allocation of 48 at 0x1000, a
// free of it, and an allocation on stack 3 (slot miss: its delta from the
// free's address) 0x30 * 16 bytes above it.
struct PlanesChunk {
  std::array<std::vector<uint8_t>, wire::kStreams> stream;
  PlanesChunk() {
    stream[0] = {0x40, 0x50, 0x40};                       // tags
    stream[wire::StreamOf(0, 0, 0)] = {0x02, 0x02};       // ts, allocations
    stream[wire::StreamOf(0, 1, 0)] = {0x02};             // ts, the free
    stream[wire::StreamOf(1, 0, 0)] = {0x03, 0x07};       // stack words 1 and 3, sizes
    stream[wire::StreamOf(1, 1, 0)] = {0x05};             // stack 2, size
    // Address values: 0x201 (delta 0x100 units, plus one): 81 04; then
    // zz(0x30) + 1 = 0x61. The second allocation is 3 bytes: 0xe1 0x80 0x00,
    // the same value written long, to fill plane 2.
    stream[wire::StreamOf(2, 0, 0)] = {0x81, 0xe1};
    stream[wire::StreamOf(2, 0, 1)] = {0x04, 0x80};
    stream[wire::StreamOf(2, 0, 2)] = {0x00};
    stream[wire::StreamOf(2, 1, 0)] = {0x03};             // the latest allocation
    stream[wire::StreamOf(3, 0, 0)] = {0x30, 0x30};       // sizes 48
    stream[wire::StreamOf(3, 1, 0)] = {0x00};             // the free's size 0
  }
  std::vector<uint8_t> Chunk(uint32_t events = 3) const {
    std::vector<uint32_t> lengths;
    std::vector<uint8_t> content;
    for (size_t i = 0; i < wire::kStreams; ++i) {
      if (i + 1 < wire::kStreams) lengths.push_back(static_cast<uint32_t>(stream[i].size()));
      content.insert(content.end(), stream[i].begin(), stream[i].end());
    }
    return HandChunk(events, static_cast<uint32_t>(content.size()), lengths, Zstd(content),
                     wire::kLayoutPlanes);
  }
};

TEST_CASE("layout 3 reads each varint from its planes, and streams must match their records",
          "[format][v4]") {
  ReadResult end;
  const uint64_t at = TraceBuilder().bytes().size();
  PlanesChunk planes;
  SECTION("well formed") {
    std::vector<uint8_t> file = TraceBuilder().bytes();
    std::vector<uint8_t> c = planes.Chunk();
    file.insert(file.end(), c.begin(), c.end());
    ReadBack r;
    Read(file, &r);
    CHECK(r.end == ReadResult::kEnd);
    REQUIRE(r.c.events.size() == 3);
    CHECK(r.c.events[0].address == 0x1000);
    CHECK(r.c.events[0].size == 48);
    CHECK(r.c.events[0].stack_id == 1);
    CHECK(r.c.events[1].op == EventOp::kFree);
    CHECK(r.c.events[1].address == 0x1000);
    CHECK(r.c.events[1].stack_id == 2);
    CHECK(r.c.events[1].size == 0);
    CHECK(r.c.events[2].op == EventOp::kAlloc);
    CHECK(r.c.events[2].address == 0x1000 + 0x30 * 16);
    CHECK(r.c.events[2].stack_id == 3);
    CHECK(r.c.events[2].timestamp_ns == 1003);
  }
  const std::string record = "corrupt record in compressed chunk at offset " +
                             std::to_string(at) + " (byte ";
  SECTION("a plane that runs out: the last allocation's third byte is missing") {
    planes.stream[wire::StreamOf(2, 0, 2)].clear();
    // Before the third event: 2 tags and the first two events' 9 field bytes.
    CHECK(FirstError(planes.Chunk(), &end) == record + "11 of its records: truncated event)");
  }
  SECTION("a free's stream that runs out") {
    planes.stream[wire::StreamOf(3, 1, 0)].clear();
    CHECK(FirstError(planes.Chunk(), &end) == record + "6 of its records: truncated event)");
  }
  SECTION("a reference that names nothing: the error is at the event's start") {
    planes.stream[wire::StreamOf(2, 1, 0)] = {0x05};  // the 2nd last allocation; there is one
    CHECK(FirstError(planes.Chunk(), &end) ==
          record + "6 of its records: free refers to allocation 2 back, the chunk has 1)");
  }
  SECTION("a byte left in a stream") {
    planes.stream[wire::StreamOf(0, 1, 0)].push_back(0x02);
    CHECK(FirstError(planes.Chunk(), &end) ==
          "corrupt chunk at offset " + std::to_string(at) + " (lane " +
              std::to_string(wire::StreamOf(0, 1, 0)) + " has 1 bytes left after the last record)");
  }
  SECTION("a varint of 11 bytes across the planes") {
    planes.stream[wire::StreamOf(2, 0, 2)] = std::vector<uint8_t>(8, 0x80);
    planes.stream[wire::StreamOf(2, 0, 2)].push_back(0x00);
    CHECK(FirstError(planes.Chunk(), &end) == record + "11 of its records: truncated event)");
  }
  SECTION("bits above the 64th") {
    planes.stream[wire::StreamOf(2, 0, 2)] = std::vector<uint8_t>(7, 0x80);
    planes.stream[wire::StreamOf(2, 0, 2)].push_back(0x02);  // the 10th byte, bit 64
    CHECK(FirstError(planes.Chunk(), &end) == record + "11 of its records: truncated event)");
  }
}

}  // namespace
}  // namespace crossfree::format
