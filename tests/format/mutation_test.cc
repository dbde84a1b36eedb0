// SPDX-License-Identifier: Apache-2.0
// Deterministic random mutation of traces (seeded): thousands of damaged
// files through the reader and the decoder. Nothing may crash, and what the
// reader accepts must be self-consistent. Payload mutations are resealed
// (length and checksum recomputed) so they reach the decoder.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "format/trace_reader.h"
#include "format/wire.h"
#include "tests/format/test_util.h"
#include "tests/format/workload.h"

namespace crossfree::format {
namespace {

class Checker : public RecordVisitor {
 public:
  void OnEvent(const Event& e) override {
    ++events;
    if (e.op == EventOp::kAlloc) {
      bad += e.fn > static_cast<uint8_t>(AllocFn::kMallocHook);
    } else {
      bad += !(e.fn == 0 || e.fn == 2 || e.fn == 9 || e.fn == 10 || e.fn == 11);
    }
    bad += e.tid != tid;
  }
  void OnStack(uint32_t id, std::span<const uint64_t> frames) override {
    bad += id == kNoStack || frames.size() > kMaxStackDepth;
  }
  void OnThreadName(uint32_t t, uint64_t, std::string_view name) override {
    bad += t != tid || name.size() > 256;
  }
  void OnModule(uint32_t t, const Module& m) override {
    bad += t != tid || m.path.size() > 4096 || m.build_id.size() > 64 || m.segments.size() > 32;
  }
  uint64_t events = 0;
  uint64_t bad = 0;
  uint32_t tid = 0;
};

struct Tally {
  uint64_t rejected_header = 0, chunks = 0, decoded = 0, decode_errors = 0;
  uint64_t ends = 0, truncated = 0, corrupt = 0;
};

// Feeds one (possibly damaged) trace through reader and decoder.
void Check(const std::vector<uint8_t>& bytes, Tally* tally) {
  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "m", &error);
  if (reader == nullptr) {
    ++tally->rejected_header;
    REQUIRE(error.rfind("m: ", 0) == 0);
    return;
  }
  REQUIRE(reader->header().size_bytes <= bytes.size());
  uint64_t expect_offset = reader->header().size_bytes;
  Chunk chunk;
  ReadResult r;
  while ((r = reader->NextChunk(&chunk)) == ReadResult::kChunk) {
    ++tally->chunks;
    REQUIRE(chunk.file_offset == expect_offset);
    REQUIRE(chunk.payload.data() == bytes.data() + chunk.file_offset + kChunkHeaderBytes);
    expect_offset = chunk.file_offset + kChunkHeaderBytes + chunk.payload.size();
    REQUIRE(expect_offset <= bytes.size());
    Checker checker;
    checker.tid = chunk.tid;
    std::string decode_error;
    if (DecodeChunk(chunk, checker, &decode_error)) {
      ++tally->decoded;
      CHECK(checker.events == chunk.event_count);
    } else {
      ++tally->decode_errors;
      CHECK(decode_error.find(" at offset ") != std::string::npos);
    }
    CHECK(checker.bad == 0);
  }
  switch (r) {
    case ReadResult::kEnd:
      ++tally->ends;
      CHECK(expect_offset == bytes.size());
      break;
    case ReadResult::kTruncated:
      ++tally->truncated;
      CHECK(reader->error_offset() == expect_offset);
      break;
    case ReadResult::kCorrupt:
      ++tally->corrupt;
      CHECK(reader->error_offset() == expect_offset);
      CHECK(!reader->error().empty());
      break;
    case ReadResult::kChunk:
      break;
  }
}

TEST_CASE("random mutations never crash the reader or decoder", "[reader][mutation]") {
  std::vector<uint64_t> offsets;
  std::vector<std::vector<uint8_t>> bases;
  bases.push_back(testing::SmallTrace(&offsets));
  testing::WorkloadOptions options;
  options.events = 3000;
  options.chunk_bytes = 8192;
  options.producers = 2;
  options.consumers = 2;
  testing::WorkloadStats stats;
  bases.push_back(testing::ProducerConsumerWorkload(options).Run(&stats));

  std::mt19937_64 rng(20261130);
  auto rand = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  Tally tally;
  const int kRounds = 4000;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<uint8_t> bytes = bases[round % bases.size()];
    const size_t header = wire::Load32(bytes.data() + wire::kHdrLength);
    // Locate the chunks (the base traces are valid).
    std::vector<size_t> starts;
    for (size_t at = header; at < bytes.size();) {
      starts.push_back(at);
      at += kChunkHeaderBytes + (wire::Load32(bytes.data() + at + wire::kChkLength) & 0xffffff);
    }
    int kind = static_cast<int>(rand(6));
    if (kind <= 2) {
      // Payload surgery on one chunk, then reseal so the decoder sees it.
      size_t c = starts[rand(starts.size())];
      size_t payload_len = wire::Load32(bytes.data() + c + wire::kChkLength) & 0xffffff;
      std::vector<uint8_t> payload(bytes.begin() + c + kChunkHeaderBytes,
                                   bytes.begin() + c + kChunkHeaderBytes + payload_len);
      int edits = 1 + static_cast<int>(rand(4));
      for (int e = 0; e < edits && !payload.empty(); ++e) {
        size_t at = rand(payload.size());
        switch (rand(5)) {
          case 0: payload[at] ^= static_cast<uint8_t>(1 + rand(255)); break;
          case 1: payload[at] = static_cast<uint8_t>(rand(256)); break;
          case 2: payload.erase(payload.begin() + at, payload.begin() + std::min(payload.size(), at + 1 + rand(8))); break;
          case 3: payload.insert(payload.begin() + at, static_cast<uint8_t>(rand(256))); break;
          case 4: payload.insert(payload.begin() + at, 1 + rand(12), 0xff); break;
        }
      }
      std::vector<uint8_t> chunk(bytes.begin() + c, bytes.begin() + c + kChunkHeaderBytes);
      chunk.insert(chunk.end(), payload.begin(), payload.end());
      if (rand(4) == 0) wire::Store32(chunk.data() + wire::kChkEvents, static_cast<uint32_t>(rand(50)));
      testing::ResealChunk(chunk.data(), static_cast<uint32_t>(payload.size()));
      std::vector<uint8_t> out(bytes.begin(), bytes.begin() + c);
      out.insert(out.end(), chunk.begin(), chunk.end());
      out.insert(out.end(), bytes.begin() + c + kChunkHeaderBytes + payload_len, bytes.end());
      bytes.swap(out);
    } else if (kind == 3) {
      // Raw damage anywhere, header included.
      int flips = 1 + static_cast<int>(rand(3));
      for (int f = 0; f < flips; ++f) bytes[rand(bytes.size())] ^= static_cast<uint8_t>(1 + rand(255));
    } else if (kind == 4) {
      // Truncate, sometimes with trailing garbage.
      bytes.resize(rand(bytes.size() + 1));
      if (rand(2)) bytes.insert(bytes.end(), 1 + rand(64), static_cast<uint8_t>(rand(256)));
    } else {
      // Damage a chunk header field and reseal: odd tids, counts, timestamps.
      size_t c = starts[rand(starts.size())];
      size_t field = wire::kChkTid + 4 * rand(4);
      bytes[c + field + rand(4)] = static_cast<uint8_t>(rand(256));
      size_t payload_len = wire::Load32(bytes.data() + c + wire::kChkLength) & 0xffffff;
      testing::ResealChunk(bytes.data() + c, static_cast<uint32_t>(payload_len));
    }
    Check(bytes, &tally);
  }
  INFO("header rejects " << tally.rejected_header << ", chunks " << tally.chunks << ", decoded "
                         << tally.decoded << ", decode errors " << tally.decode_errors);
  // Every path was exercised.
  CHECK(tally.rejected_header > 0);
  CHECK(tally.decode_errors > 100);
  CHECK(tally.decoded > 100);
  CHECK(tally.ends > 0);
  CHECK(tally.truncated > 0);
  CHECK(tally.corrupt > 0);
  CHECK(tally.rejected_header + tally.ends + tally.truncated + tally.corrupt == kRounds);
}

}  // namespace
}  // namespace crossfree::format
