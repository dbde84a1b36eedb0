// SPDX-License-Identifier: Apache-2.0
// Analyzer: the lifecycle signals' clock (see lifecycle_clock.h).
#include "analyzer/pairing/lifecycle_clock.h"

#include <span>
#include <string>

#include "analyzer/pairing/pairing.h"
#include "format/trace_reader.h"

namespace crossfree::analyzer {
namespace {

// The latest timestamp a chunk holds (events, thread exit, window edges).
class LastTimestamp : public format::RecordVisitor {
 public:
  void OnEvents(std::span<const format::Event> events) override {
    for (const format::Event& e : events) last = std::max(last, e.timestamp_ns);
  }
  void OnThreadExit(uint32_t, uint64_t ts_ns) override { last = std::max(last, ts_ns); }
  void OnWindow(uint32_t, uint64_t ts_ns, format::WindowState, format::WindowCause) override {
    last = std::max(last, ts_ns);
  }
  uint64_t last = 0;
};

}  // namespace

// A thread that allocates little may hold its whole life in one chunk,
// whose base is its start: the last chunks are decoded for their ends.
LifecycleClock MakeLifecycleClock(const ProcessTrace& trace, uint64_t origin_ns) {
  LifecycleClock clock;
  clock.origin_ns = origin_ns;
  uint64_t last = origin_ns;
  std::vector<uint8_t> buffer;
  for (const ThreadStream& stream : trace.streams) {
    for (const format::Chunk& c : stream.chunks) last = std::max(last, c.base_timestamp_ns);
    if (stream.chunks.empty() || !trace.reader) continue;
    format::Chunk loaded;
    LastTimestamp visitor;
    std::string ignored;
    if (trace.reader->LoadPayload(stream.chunks.back(), &buffer, &loaded, &ignored) &&
        format::DecodeChunk(loaded, visitor, &ignored)) {
      last = std::max(last, visitor.last);
    }
  }
  uint64_t duration = last - origin_ns;
  while ((duration >> clock.tick_shift) >= (uint64_t{1} << 31)) ++clock.tick_shift;
  uint64_t ticks = duration >> clock.tick_shift;
  if (duration >= kMinSteadyNs) {
    auto edge = static_cast<uint64_t>(static_cast<double>(ticks) * kEdgeShare);
    clock.steady_from_tick = static_cast<uint32_t>(edge);
    clock.steady_to_tick = static_cast<uint32_t>(ticks - edge);
  }
  for (const ThreadStream& stream : trace.streams) {
    uint64_t first = origin_ns;
    if (!stream.chunks.empty()) {
      first = stream.chunks.front().base_timestamp_ns;
      for (const format::Chunk& c : stream.chunks) first = std::min(first, c.base_timestamp_ns);
    }
    clock.first_tick.push_back(clock.Tick(first));
  }
  return clock;
}

}  // namespace crossfree::analyzer
