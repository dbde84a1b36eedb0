// SPDX-License-Identifier: Apache-2.0
// Reader robustness: truncation at every byte, a damaged byte anywhere, bad
// headers and versions, malformed and unknown records.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "format/trace_reader.h"
#include "format/wire.h"
#include "tests/format/test_util.h"

namespace crossfree::format {
namespace {

using testing::Collector;

struct Walk {
  std::vector<Chunk> chunks;
  ReadResult end;
  uint64_t error_offset;
  std::string error;
};

Walk WalkChunks(TraceReader& reader) {
  Walk w;
  Chunk c;
  while ((w.end = reader.NextChunk(&c)) == ReadResult::kChunk) w.chunks.push_back(c);
  w.error_offset = reader.error_offset();
  w.error = reader.error();
  // The final state repeats.
  CHECK(reader.NextChunk(&c) == w.end);
  return w;
}

std::string TempPath(const char* tag) {
  return "/tmp/crossfree-format-test-" + std::to_string(getpid()) + "-" + tag;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST_CASE("the small trace decodes completely", "[reader]") {
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> bytes = testing::SmallTrace(&offsets);
  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "small", &error);
  REQUIRE(reader != nullptr);
  Walk w = WalkChunks(*reader);
  CHECK(w.end == ReadResult::kEnd);
  REQUIRE(w.chunks.size() == testing::kSmallTraceChunks);
  int events = 0, allocs = 0;
  for (size_t i = 0; i < w.chunks.size(); ++i) {
    CHECK(w.chunks[i].file_offset == offsets[i]);
    Collector c;
    REQUIRE(DecodeChunk(w.chunks[i], c, &error));
    events += static_cast<int>(c.events.size());
    for (const Event& e : c.events) allocs += e.op == EventOp::kAlloc;
  }
  CHECK(events == testing::kSmallTraceEvents);
  CHECK(allocs == testing::kSmallTraceAllocs);
}

TEST_CASE("truncation at every byte keeps exactly the complete chunks", "[reader]") {
  std::vector<uint64_t> offsets;
  const std::vector<uint8_t> full = testing::SmallTrace(&offsets);
  offsets.push_back(full.size());  // end of the last chunk
  const size_t header = offsets[0];
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    INFO("cut at " << cut);
    std::vector<uint8_t> bytes(full.begin(), full.begin() + cut);
    std::string error;
    auto reader = TraceReader::FromBytes(bytes, "cut.trace", &error);
    if (cut < header) {
      CHECK(reader == nullptr);
      CHECK(error == (cut == 0 ? std::string("cut.trace: empty file (not a crossfree trace)")
                               : "cut.trace: truncated trace header (file has " +
                                     std::to_string(cut) + " bytes)"));
      continue;
    }
    REQUIRE(reader != nullptr);
    Walk w = WalkChunks(*reader);
    size_t complete = 0;
    while (complete + 1 < offsets.size() && offsets[complete + 1] <= cut) ++complete;
    REQUIRE(w.chunks.size() == complete);
    for (size_t i = 0; i < complete; ++i) {
      CHECK(w.chunks[i].file_offset == offsets[i]);
      Collector c;
      CHECK(DecodeChunk(w.chunks[i], c, &error));
    }
    if (cut == offsets[complete]) {
      CHECK(w.end == ReadResult::kEnd);
    } else {
      CHECK(w.end == ReadResult::kTruncated);
      CHECK(w.error_offset == offsets[complete]);
      CHECK(w.error == "truncated chunk at offset " + std::to_string(offsets[complete]) +
                           " (file ends after " + std::to_string(cut - offsets[complete]) +
                           " of its bytes)");
    }
  }
}

TEST_CASE("a damaged byte anywhere is reported as corruption at its chunk", "[reader]") {
  std::vector<uint64_t> offsets;
  const std::vector<uint8_t> full = testing::SmallTrace(&offsets);
  const size_t header = offsets[0];
  offsets.push_back(full.size());
  for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
    for (size_t i = 0; i < full.size(); ++i) {
      INFO("byte " << i << " ^ " << int(mask));
      std::vector<uint8_t> bytes = full;
      bytes[i] ^= mask;
      std::string error;
      auto reader = TraceReader::FromBytes(bytes, "flip.trace", &error);
      if (i < header) {
        CHECK(reader == nullptr);
        CHECK(error.rfind("flip.trace: ", 0) == 0);
        continue;
      }
      REQUIRE(reader != nullptr);
      size_t damaged = 0;
      while (offsets[damaged + 1] <= i) ++damaged;
      Walk w = WalkChunks(*reader);
      CHECK(w.chunks.size() == damaged);
      CHECK(w.end == ReadResult::kCorrupt);
      CHECK(w.error_offset == offsets[damaged]);
      CHECK(w.error.rfind("corrupt chunk at offset " + std::to_string(offsets[damaged]), 0) == 0);
    }
  }
}

TEST_CASE("header damage gives one clear error", "[reader]") {
  std::vector<uint8_t> good = testing::SmallTrace();
  std::string error;

  SECTION("unsupported version") {
    for (uint32_t version : {0u, 6u, 7u, 0x01000000u, 0x04000000u, 0x05000000u}) {
      std::vector<uint8_t> bytes = good;
      wire::Store32(bytes.data() + wire::kHdrVersion, version);
      auto reader = TraceReader::FromBytes(bytes, "new.trace", &error);
      CHECK(reader == nullptr);
      CHECK(error == "new.trace: trace format version " + std::to_string(version) +
                         " is not supported (this crossfree reads versions 1 to 5)");
    }
  }
  SECTION("not a trace") {
    std::string text = "#!/bin/sh\necho this is not a trace, but it is long enough\n";
    std::vector<uint8_t> bytes(text.begin(), text.end());
    CHECK(TraceReader::FromBytes(bytes, "script.sh", &error) == nullptr);
    CHECK(error == "script.sh: not a crossfree trace (bad magic)");
    std::vector<uint8_t> tiny = {'C', 'R', 'X'};
    CHECK(TraceReader::FromBytes(tiny, "tiny", &error) == nullptr);
    CHECK(error == "tiny: not a crossfree trace (bad magic)");
  }
  SECTION("header checksum and length") {
    std::vector<uint8_t> bytes = good;
    bytes[wire::kHdrPid] ^= 1;
    CHECK(TraceReader::FromBytes(bytes, "t", &error) == nullptr);
    CHECK(error == "t: corrupt trace header (checksum mismatch)");
    bytes = good;
    wire::Store32(bytes.data() + wire::kHdrLength, 20);
    CHECK(TraceReader::FromBytes(bytes, "t", &error) == nullptr);
    CHECK(error == "t: corrupt trace header (header length 20)");
    bytes = good;
    wire::Store32(bytes.data() + wire::kHdrLength, 1u << 20);
    CHECK(TraceReader::FromBytes(bytes, "t", &error) == nullptr);
    CHECK(error == "t: corrupt trace header (header length 1048576)");
  }
  SECTION("a longer header from a newer writer is skipped") {
    // Extra fields after the exe path, covered by header length and checksum.
    const size_t old_len = wire::Load32(good.data() + wire::kHdrLength);
    std::vector<uint8_t> bytes(good.begin(), good.begin() + old_len - 4);
    bytes.insert(bytes.end(), {1, 2, 3, 4, 5, 6, 7});
    bytes.resize(bytes.size() + 4);
    wire::Store32(bytes.data() + wire::kHdrLength, static_cast<uint32_t>(bytes.size()));
    wire::Store32(bytes.data() + bytes.size() - 4, Crc32c(bytes.data(), bytes.size() - 4));
    const size_t header_len = bytes.size();
    bytes.insert(bytes.end(), good.begin() + old_len, good.end());
    auto reader = TraceReader::FromBytes(bytes, "t", &error);
    REQUIRE(reader != nullptr);
    CHECK(reader->header().size_bytes == header_len);
    CHECK(reader->header().exe_path == "/usr/bin/test");
    Walk w = WalkChunks(*reader);
    CHECK(w.end == ReadResult::kEnd);
    CHECK(w.chunks.size() == testing::kSmallTraceChunks);
  }
}

TEST_CASE("Open reports files it cannot use", "[reader]") {
  std::string error;
  std::string empty = TempPath("empty");
  WriteFile(empty, {});
  CHECK(TraceReader::Open(empty, &error) == nullptr);
  CHECK(error == empty + ": empty file (not a crossfree trace)");
  std::remove(empty.c_str());

  CHECK(TraceReader::Open("/nonexistent/x.trace", &error) == nullptr);
  CHECK(error == "/nonexistent/x.trace: No such file or directory");
  CHECK(TraceReader::Open("/tmp", &error) == nullptr);
  CHECK(error == "/tmp: not a regular file (a directory)");

  // A FIFO: opening it for reading used to block until a writer came.
  std::string fifo = TempPath("fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(TraceReader::Open(fifo, &error) == nullptr);
  CHECK(error == fifo + ": not a regular file (a FIFO)");
  std::remove(fifo.c_str());

  std::string header_only = TempPath("short");
  std::vector<uint8_t> good = testing::SmallTrace();
  WriteFile(header_only, std::vector<uint8_t>(good.begin(), good.begin() + 30));
  CHECK(TraceReader::Open(header_only, &error) == nullptr);
  CHECK(error == header_only + ": truncated trace header (file has 30 bytes)");
  std::remove(header_only.c_str());

  std::string path = TempPath("good");
  WriteFile(path, good);
  auto reader = TraceReader::Open(path, &error);
  REQUIRE(reader != nullptr);
  CHECK(reader->name() == path);
  CHECK(reader->file_size() == good.size());
  Walk w = WalkChunks(*reader);
  CHECK(w.end == ReadResult::kEnd);
  CHECK(w.chunks.size() == testing::kSmallTraceChunks);
  std::remove(path.c_str());
}

// The file shrinks, or is rewritten, between indexing and decoding: the
// reader used to map the file, so this was a SIGBUS; now it is an error.
TEST_CASE("a file that changes while it is read is an error, not a crash", "[reader]") {
  std::vector<uint8_t> good = testing::SmallTrace();
  std::string path = TempPath("changing");
  WriteFile(path, good);
  std::string error;
  auto reader = TraceReader::Open(path, &error);
  REQUIRE(reader != nullptr);
  Walk w = WalkChunks(*reader);
  REQUIRE(w.chunks.size() == testing::kSmallTraceChunks);
  std::vector<uint8_t> buffer;
  Chunk loaded;
  REQUIRE(reader->LoadPayload(w.chunks.back(), &buffer, &loaded, &error));
  CHECK(loaded.payload.size() == w.chunks.back().payload_bytes);

  // Shrunk below the last chunk.
  REQUIRE(truncate(path.c_str(), static_cast<off_t>(w.chunks.back().file_offset + 5)) == 0);
  CHECK_FALSE(reader->LoadPayload(w.chunks.back(), &buffer, &loaded, &error));
  CHECK(error.find("file changed while being read") != std::string::npos);
  CHECK(error.find(path) == 0);

  // Same length, other bytes.
  std::vector<uint8_t> flipped = good;
  flipped[w.chunks[0].file_offset + kChunkHeaderBytes] ^= 0x40;
  WriteFile(path, flipped);
  CHECK_FALSE(reader->LoadPayload(w.chunks[0], &buffer, &loaded, &error));
  CHECK(error.find("file changed while being read") != std::string::npos);

  // Shrunk while NextChunk walks it.
  WriteFile(path, good);
  auto walker = TraceReader::Open(path, &error);
  REQUIRE(walker != nullptr);
  REQUIRE(truncate(path.c_str(), static_cast<off_t>(walker->header().size_bytes + 8)) == 0);
  Chunk c;
  CHECK(walker->NextChunk(&c) == ReadResult::kCorrupt);
  CHECK(walker->error().find("file changed while being read") != std::string::npos);
  std::remove(path.c_str());
}

// A trace of the small header plus the given raw chunks.
std::vector<uint8_t> WithChunks(const std::vector<std::vector<uint8_t>>& chunks) {
  testing::TraceBuilder b;
  std::vector<uint8_t> bytes = b.bytes();
  for (const auto& c : chunks) bytes.insert(bytes.end(), c.begin(), c.end());
  return bytes;
}

TEST_CASE("chunk length beyond the maximum is corruption", "[reader]") {
  std::vector<uint8_t> chunk = testing::MakeChunk(1, 0, 0, 0, {0x04, 0x00});
  const uint32_t too_long = kMaxChunkBytes - kChunkHeaderBytes + 1;
  wire::Store32(chunk.data() + wire::kChkLength, wire::PackLength(too_long));
  std::vector<uint8_t> bytes = WithChunks({chunk});
  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "t", &error);
  REQUIRE(reader != nullptr);
  Walk w = WalkChunks(*reader);
  CHECK(w.end == ReadResult::kCorrupt);
  CHECK(w.error_offset == reader->header().size_bytes);
  CHECK(w.error == "corrupt chunk at offset " + std::to_string(w.error_offset) + " (length " +
                       std::to_string(too_long) + " exceeds the maximum chunk size)");
  // The largest legal length is not rejected as too long (here: truncated).
  wire::Store32(bytes.data() + w.error_offset + wire::kChkLength,
                wire::PackLength(kMaxChunkBytes - kChunkHeaderBytes));
  reader = TraceReader::FromBytes(bytes, "t", &error);
  CHECK(WalkChunks(*reader).end == ReadResult::kTruncated);
}

std::string DecodeError(const std::vector<uint8_t>& payload, uint32_t events, Collector* c,
                        uint64_t* chunk_offset) {
  std::vector<uint8_t> bytes = WithChunks({testing::MakeChunk(5, 0, 1000, events, payload)});
  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "t", &error);
  REQUIRE(reader != nullptr);
  Chunk chunk;
  REQUIRE(reader->NextChunk(&chunk) == ReadResult::kChunk);
  *chunk_offset = chunk.file_offset;
  if (DecodeChunk(chunk, *c, &error)) return "";
  return error;
}

TEST_CASE("extension records are skipped, unknown tags are errors", "[reader]") {
  // thread exit (+5 ns), extension 0x9a with 3 bytes, extension 0xfe empty
  // (0x80 is the central record, tests/tracer), free(0x30) on stack 1 at
  // +1 ns with an explicit size of 0.
  std::vector<uint8_t> payload = {0x04, 0x0a, 0x9a, 0x03, 0xaa, 0xbb, 0xcc, 0xfe, 0x00,
                                  0x50, 0x02, 0x03, 0x06, 0x00};
  Collector c;
  uint64_t at = testing::TraceBuilder().bytes().size();
  CHECK(DecodeError(payload, 1, &c, &at) == "");
  REQUIRE(c.exits.size() == 1);
  CHECK(c.exits[0].ts == 1005);
  REQUIRE(c.events.size() == 1);
  CHECK(c.events[0].op == EventOp::kFree);
  CHECK(c.events[0].address == 0x30);
  CHECK(c.events[0].timestamp_ns == 1006);
  CHECK(c.events[0].stack_id == 1);
  CHECK(c.events[0].tid == 5);

  for (uint8_t tag : {0x00, 0x06, 0x0f, 0x60, 0x70, 0x7f}) {
    std::vector<uint8_t> bad = {0x04, 0x0a, tag, 0x00, 0x00, 0x00, 0x00};
    Collector c2;
    std::string error = DecodeError(bad, 0, &c2, &at);
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%x", tag);
    CHECK(error == "corrupt record at offset " + std::to_string(at + kChunkHeaderBytes + 2) +
                       " (unknown record tag " + hex + ")");
    CHECK(c2.exits.size() == 1);  // records before the bad one were delivered
  }
  // An extension whose length runs past the chunk.
  std::vector<uint8_t> overlong = {0x81, 0x05, 0x00};
  CHECK(DecodeError(overlong, 0, &c, &at) ==
        "corrupt record at offset " + std::to_string(at + kChunkHeaderBytes) +
            " (bad extension record length)");
}

TEST_CASE("malformed records are rejected with their offset", "[reader]") {
  Collector c;
  // Where the only chunk starts (known before the calls below set it again).
  uint64_t at = testing::TraceBuilder().bytes().size();
  auto off = [&](int i) { return std::to_string(at + kChunkHeaderBytes + i); };
  // Stack deeper than kMaxStackDepth (257 = 0x81 0x02).
  std::vector<uint8_t> deep = {0x01, 0x07, 0x81, 0x02};
  deep.resize(deep.size() + 257, 0x02);
  CHECK(DecodeError(deep, 0, &c, &at) == "corrupt record at offset " + off(0) + " (stack depth 257)");
  // The deepest legal stack is fine.
  std::vector<uint8_t> max = {0x02, 0x00, 0x00, 0x01, 0x07, 0x80, 0x02};
  max.resize(max.size() + 256, 0x02);
  c = Collector();
  CHECK(DecodeError(max, 0, &c, &at) == "");
  REQUIRE(c.stacks.size() == 1);
  CHECK(c.stacks[0].frames.size() == 256);
  CHECK(c.stacks[0].frames[255] == 256);
  CHECK(c.names.size() == 1);
  // Stack id 0 cannot be defined.
  CHECK(DecodeError({0x01, 0x00, 0x00}, 0, &c, &at) ==
        "corrupt record at offset " + off(0) + " (bad stack id 0)");
  // A record cut short by the end of the payload.
  CHECK(DecodeError({0x04, 0x0a, 0x10, 0x02, 0x03}, 1, &c, &at) ==
        "corrupt record at offset " + off(2) + " (truncated event)");
  // A varint longer than 10 bytes.
  std::vector<uint8_t> long_varint = {0x04};
  long_varint.resize(12, 0xff);
  long_varint.push_back(0x01);
  CHECK(DecodeError(long_varint, 0, &c, &at) ==
        "corrupt record at offset " + off(0) + " (truncated thread exit)");
  // Function nibbles that name no function.
  CHECK(DecodeError({0x1c, 0x00, 0x03, 0x00, 0x10}, 1, &c, &at) ==
        "corrupt record at offset " + off(0) + " (unknown allocation function 12)");
  CHECK(DecodeError({0x21, 0x00, 0x03, 0x00, 0x10}, 1, &c, &at) ==
        "corrupt record at offset " + off(0) + " (unknown free function 1)");
  // A size repeat for a stack that has no size yet in this chunk.
  CHECK(DecodeError({0x10, 0x00, 0x04, 0x00}, 1, &c, &at) ==
        "corrupt record at offset " + off(0) +
            " (event repeats the size of a stack not seen in this chunk)");
  // Thread name longer than the payload.
  CHECK(DecodeError({0x02, 0x00, 0x09, 'a'}, 0, &c, &at) ==
        "corrupt record at offset " + off(0) + " (bad thread name length 9)");
  // Event count in the header disagrees with the records.
  CHECK(DecodeError({0x04, 0x0a}, 3, &c, &at) ==
        "corrupt chunk at offset " + std::to_string(at) +
            " (header says 3 events, payload has 0)");
}

}  // namespace
}  // namespace crossfree::format
