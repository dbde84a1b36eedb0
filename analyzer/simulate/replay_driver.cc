// SPDX-License-Identifier: Apache-2.0
// Simulate: the ordered pass over one trace (see replay_driver.h).
#include "analyzer/simulate/replay_driver.h"

#include "format/trace_reader.h"

namespace crossfree::analyzer::simulate {

bool ReplayDriver::DecodeNext(size_t s, std::string* error) {
  StreamState& st = streams_[s];
  const auto& chunks = trace_->streams[s].chunks;
  while (st.pos >= st.events.size() && st.next_chunk < chunks.size()) {
    st.events.clear();
    st.pos = 0;
    ChunkCollector collector(&st.events);
    if (!analyzer::DecodeTraceChunk(*trace_, chunks[st.next_chunk++], collector, error)) {
      return false;
    }
    collector.FlushPending();
    events_ += collector.events;
  }
  // A finished stream gives its buffer back (traces of many threads).
  if (st.pos >= st.events.size() && st.next_chunk == chunks.size() && st.events.capacity()) {
    std::vector<SimEvent>().swap(st.events);
    st.pos = 0;
  }
  return true;
}

bool ReplayDriver::TakeTie(analyzer::MergeHeap<Cursor>& heap, std::string* error) {
  const uint64_t t = Head(heap.top().stream).ts;
  ties_.Clear();
  parked_.clear();
  while (!heap.empty() && Head(heap.top().stream).ts == t) {
    const uint32_t s = heap.top().stream;
    heap.Pop();
    ties_.BeginRun(s);
    StreamState& st = streams_[s];
    for (;;) {
      while (!Exhausted(s) && Head(s).ts == t) ties_.Add(st.events[st.pos++]);
      if (!Exhausted(s)) break;
      // The copies in ties_ outlive the chunk's events, which the next
      // decode replaces.
      if (!Refill(s, error)) return false;
      if (Exhausted(s)) break;  // the thread's last event was tied
    }
    ties_.EndRun();
    if (!Exhausted(s)) parked_.push_back(s);
  }
  for (uint32_t s : parked_) heap.Insert(Cursor{this, s});
  return true;
}

}  // namespace crossfree::analyzer::simulate
