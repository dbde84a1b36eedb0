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
  void OnWindow(uint32_t, uint64_t ts_ns, format::WindowState state,
                format::WindowCause cause) override {
    last = std::max(last, ts_ns);
    if (cause == format::WindowCause::kAttach) {
      (state == format::WindowState::kOpen ? attach_open : attach_close) = true;
    }
  }
  uint64_t last = 0;
  // `crossfree record -p`: the window opened on a process already running
  // (no start-up in it) or closed on one that went on (no shutdown).
  bool attach_open = false;
  bool attach_close = false;
};

}  // namespace

// A thread that allocates little may hold its whole life in one chunk,
// whose base is its start: the last chunks are decoded for their ends.
LifecycleClock MakeLifecycleClock(const ProcessTrace& trace, uint64_t origin_ns) {
  LifecycleClock clock;
  clock.origin_ns = origin_ns;
  uint64_t last = origin_ns;
  std::vector<uint8_t> buffer;
  bool attach_open = false;
  bool attach_close = false;
  const bool windowed = (trace.header.fields.flags & format::kHeaderFlagWindowed) != 0;
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
    // An attached trace's open record is in the first chunk of the thread
    // that wrote it (the tracer's control thread), its close in the last
    // but the totals chunk, which the same thread writes after it. Only a
    // windowed trace (header flag kHeaderFlagWindowed, which `record -p`
    // sets) has window records; any other is open from start to end
    // (docs/trace-format.md), and its first and last-but-one chunks are
    // not decoded twice (one pass over them is the pairing's own).
    const size_t n = stream.chunks.size();
    for (size_t i : {size_t{0}, n - 2}) {
      if (!windowed || n < 2 || (i == 0 && n == 1)) continue;
      LastTimestamp more;
      if (trace.reader->LoadPayload(stream.chunks[i], &buffer, &loaded, &ignored) &&
          format::DecodeChunk(loaded, more, &ignored)) {
        visitor.attach_open = visitor.attach_open || more.attach_open;
        visitor.attach_close = visitor.attach_close || more.attach_close;
      }
    }
    attach_open = attach_open || visitor.attach_open;
    attach_close = attach_close || visitor.attach_close;
  }
  uint64_t duration = last - origin_ns;
  while ((duration >> clock.tick_shift) >= (uint64_t{1} << 31)) ++clock.tick_shift;
  uint64_t ticks = duration >> clock.tick_shift;
  clock.end_tick = static_cast<uint32_t>(ticks);
  if (duration >= kMinSteadyNs) {
    auto edge = static_cast<uint64_t>(static_cast<double>(ticks) * kEdgeShare);
    // An edge is start-up or shutdown only where the process started or
    // ended: not where `crossfree record -p` attached or detached.
    clock.steady_from_tick = attach_open ? 0 : static_cast<uint32_t>(edge);
    clock.steady_to_tick = attach_close ? static_cast<uint32_t>(ticks)
                                        : static_cast<uint32_t>(ticks - edge);
  }
  for (const ThreadStream& stream : trace.streams) {
    uint64_t first = origin_ns;
    if (!stream.chunks.empty()) {
      first = stream.chunks.front().base_timestamp_ns;
      for (const format::Chunk& c : stream.chunks) first = std::min(first, c.base_timestamp_ns);
    }
    // Attached: the threads were (nearly all) running before the window,
    // so a thread's first event is no start of it, and objects made before
    // it are no hand-off to a new thread.
    clock.first_tick.push_back(attach_open ? 0 : clock.Tick(first));
  }
  return clock;
}

}  // namespace crossfree::analyzer
