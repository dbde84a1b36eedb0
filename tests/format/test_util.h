// SPDX-License-Identifier: Apache-2.0
// Helpers for the format tests: build traces in memory with the writer and
// collect what the reader decodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/trace_reader.h"
#include "format/trace_writer.h"

namespace crossfree::format::testing {

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

inline bool SameEvent(const Event& a, const Event& b) {
  return a.op == b.op && a.fn == b.fn && a.from_realloc == b.from_realloc && a.tid == b.tid &&
         a.timestamp_ns == b.timestamp_ns && a.address == b.address && a.size == b.size &&
         a.stack_id == b.stack_id;
}

}  // namespace crossfree::format::testing
