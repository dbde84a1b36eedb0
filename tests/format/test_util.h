// SPDX-License-Identifier: Apache-2.0
// Helpers for the format tests: build traces in memory with the writer and
// collect what the reader decodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/crc32c.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "format/wire.h"

namespace crossfree::format::testing {

// The header fields of docs/trace-format.md's worked example (section 11),
// whose encoded bytes the frozen-encoding tests compare.
inline HeaderFields WorkedExampleFields() {
  HeaderFields f;
  f.pid = 1234;
  f.ppid = 1;
  f.unwinder = Unwinder::kFramePointer;
  f.max_depth = 32;
  f.start_monotonic_ns = 1000;
  f.start_realtime_ns = 1700000000000000000ull;
  return f;
}

// The chunk of the same worked example (thread 7, base 1000; a stack, then
// events at 1150, 1400, 1600 and 1900 on CPUs 3 and 200), as the writer
// makes it.
inline std::vector<uint8_t> WorkedExampleChunk() {
  std::vector<uint8_t> buf(8192);
  ChunkWriter w(buf.data(), buf.size());
  w.Begin(7, 0, 1000);
  uint64_t frames[2] = {0x401000, 0x401234};
  w.AppendStack(1, frames, 2);
  w.AppendAlloc(AllocFn::kNew, 1150, 0x7f0000001000, 48, 1, 3);
  w.AppendAlloc(AllocFn::kNew, 1400, 0x7f0000001030, 48, 1, 3);
  w.AppendFree(FreeFn::kFree, 1600, 0x7f0000001000, 0, 2, 3);
  w.AppendAlloc(AllocFn::kMalloc, 1900, 0x7f0000001000, 100, 1, 200);
  buf.resize(w.Finish());
  return buf;
}

// Builds a trace in memory: header, then chunks appended as they finish.
class TraceBuilder {
 public:
  explicit TraceBuilder(size_t chunk_capacity = ChunkWriter::kMinChunkCapacity,
                        HeaderFields fields = DefaultFields(), std::string exe = "/usr/bin/test")
      : buffer_(chunk_capacity), writer_(buffer_.data(), buffer_.size()) {
    bytes_.resize(8192);
    size_t n = EncodeFileHeader(fields, exe.data(), exe.size(), bytes_.data(), bytes_.size());
    bytes_.resize(n);
  }

  static HeaderFields DefaultFields() {
    HeaderFields f;
    f.pid = 4242;
    f.ppid = 1;
    f.clock = Clock::kMonotonic;
    f.unwinder = Unwinder::kHybrid;
    f.max_depth = 64;
    f.flags = kHeaderFlagMallocHook;
    f.start_monotonic_ns = 1'000'000'000;
    f.start_realtime_ns = 1'700'000'000'000'000'000;
    return f;
  }

  ChunkWriter& Begin(uint32_t tid, uint32_t seq, uint64_t base) {
    writer_.Begin(tid, seq, base);
    return writer_;
  }
  // Seals the current chunk and appends it; returns its file offset.
  uint64_t Flush() {
    uint64_t offset = bytes_.size();
    size_t n = writer_.Finish();
    bytes_.insert(bytes_.end(), buffer_.begin(), buffer_.begin() + n);
    chunk_offsets_.push_back(offset);
    return offset;
  }

  std::vector<uint8_t>& bytes() { return bytes_; }
  const std::vector<uint64_t>& chunk_offsets() const { return chunk_offsets_; }
  ChunkWriter& writer() { return writer_; }

 private:
  std::vector<uint8_t> buffer_;
  ChunkWriter writer_;
  std::vector<uint8_t> bytes_;
  std::vector<uint64_t> chunk_offsets_;
};

struct StackRec {
  uint32_t id;
  std::vector<uint64_t> frames;
  bool operator==(const StackRec&) const = default;
};
struct NameRec {
  uint32_t tid;
  uint64_t ts;
  std::string name;
  bool operator==(const NameRec&) const = default;
};
struct ExitRec {
  uint32_t tid;
  uint64_t ts;
  bool operator==(const ExitRec&) const = default;
};

// Records everything it is shown.
class Collector : public RecordVisitor {
 public:
  void OnEvent(const Event& e) override { events.push_back(e); }
  void OnStack(uint32_t id, std::span<const uint64_t> frames) override {
    stacks.push_back({id, {frames.begin(), frames.end()}});
  }
  void OnThreadName(uint32_t tid, uint64_t ts, std::string_view name) override {
    names.push_back({tid, ts, std::string(name)});
  }
  void OnModule(uint32_t tid, const Module& m) override {
    module_tids.push_back(tid);
    modules.push_back(m);
  }
  void OnThreadExit(uint32_t tid, uint64_t ts) override { exits.push_back({tid, ts}); }

  std::vector<Event> events;
  std::vector<StackRec> stacks;
  std::vector<NameRec> names;
  std::vector<uint32_t> module_tids;
  std::vector<Module> modules;
  std::vector<ExitRec> exits;
};

// Recomputes the length word and checksum of the chunk that starts at
// chunk[0] and has payload_len payload bytes (tests that hand-craft or
// mutate payloads so the decoder, not the checksum, sees them).
inline void ResealChunk(uint8_t* chunk, uint32_t payload_len) {
  wire::Store32(chunk + wire::kChkLength, wire::PackLength(payload_len));
  wire::Store32(chunk + wire::kChkCrc, Crc32c(chunk + wire::kChkCrcStart,
                                              kChunkHeaderBytes + payload_len - wire::kChkCrcStart));
}

// A chunk with a hand-made payload.
inline std::vector<uint8_t> MakeChunk(uint32_t tid, uint32_t seq, uint64_t base, uint32_t events,
                                      const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> c(kChunkHeaderBytes + payload.size());
  wire::Store32(c.data() + wire::kChkMagic, kChunkMagic);
  wire::Store32(c.data() + wire::kChkTid, tid);
  wire::Store32(c.data() + wire::kChkSequence, seq);
  wire::Store32(c.data() + wire::kChkEvents, events);
  wire::Store64(c.data() + wire::kChkBaseTs, base);
  std::copy(payload.begin(), payload.end(), c.begin() + kChunkHeaderBytes);
  ResealChunk(c.data(), static_cast<uint32_t>(payload.size()));
  return c;
}

// The module record of the test traces' executable: /usr/bin/app, build id
// de ad be ef, one 8 KiB segment at 0x400000, stamped ts.
inline void AppendAppModule(ChunkWriter& w, uint64_t ts) {
  uint8_t id[4] = {0xde, 0xad, 0xbe, 0xef};
  ModuleSegment seg[1] = {{0x400000, 0x2000}};
  w.AppendModule(ModuleView{ts, 0, "/usr/bin/app", 12, id, 4, seg, 1});
}

// A small trace with every record type in four chunks of three threads.
inline std::vector<uint8_t> SmallTrace(std::vector<uint64_t>* chunk_offsets = nullptr) {
  TraceBuilder b(ChunkWriter::kMinChunkCapacity);
  uint64_t frames[4] = {0x401000, 0x401100, 0x7f0000001234, 0x400f00};
  ChunkWriter& w = b.Begin(100, 0, 1000);
  w.AppendThreadName(1001, "producer-0", 10);
  w.AppendStack(1, frames, 4);
  w.AppendAlloc(AllocFn::kNew, 1100, 0x7f1000000010, 48, 1);
  w.AppendAlloc(AllocFn::kMalloc, 1300, 0x7f1000000040, 48, 1);
  w.AppendRealloc(AllocFn::kRealloc, 1500, 1600, 0x7f1000000040, 0x7f1000100000, 4096, 1);
  b.Flush();
  w.Begin(200, 0, 2000);
  AppendAppModule(w, 2000);
  w.AppendStack(2, frames + 1, 3);
  w.AppendFree(FreeFn::kDelete, 2100, 0x7f1000000010, 48, 2);
  w.AppendFree(FreeFn::kFree, 2200, 0x7f1000100000, 0, 2);
  b.Flush();
  w.Begin(100, 1, 3000);
  w.AppendAlloc(AllocFn::kCalloc, 3100, 0x7f1000000010, 32, 1);
  w.AppendFree(FreeFn::kFree, 3200, 0x7f1000000010, 0, kNoStack);
  w.AppendThreadExit(3300);
  b.Flush();
  w.Begin(300, 0, 4000);
  w.AppendAlloc(AllocFn::kPosixMemalign, 4100, 0x7f2000000000, 256, kNoStack);
  b.Flush();
  if (chunk_offsets) *chunk_offsets = b.chunk_offsets();
  return b.bytes();
}
// Facts about SmallTrace(), checked by the tests and the dump CLI test.
inline constexpr int kSmallTraceChunks = 4;
inline constexpr int kSmallTraceEvents = 9;  // the realloc counts twice
inline constexpr int kSmallTraceAllocs = 5;
inline constexpr int kSmallTraceFrees = 4;

inline bool SameEvent(const Event& a, const Event& b) {
  return a.op == b.op && a.fn == b.fn && a.from_realloc == b.from_realloc && a.tid == b.tid &&
         a.timestamp_ns == b.timestamp_ns && a.address == b.address && a.size == b.size &&
         a.stack_id == b.stack_id && a.cpu == b.cpu;
}

}  // namespace crossfree::format::testing
