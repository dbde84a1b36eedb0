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

}  // namespace crossfree::analyzer::simulate
