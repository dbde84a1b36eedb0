// SPDX-License-Identifier: Apache-2.0
// Analysis: the event stream of one trace (see event_stream.h).
#include "analyzer/pairing/event_stream.h"

#include <fmt/core.h>

#include <algorithm>
#include <mutex>

namespace crossfree::analyzer {

void ChunkVisitor::OnStack(uint32_t stack_id, std::span<const uint64_t> frames) {
  stacks_.emplace_back(stack_id, std::vector<uint64_t>(frames.begin(), frames.end()));
}

void ChunkVisitor::OnThreadName(uint32_t tid, uint64_t ts_ns, std::string_view name) {
  names_.push_back({tid, ts_ns, std::string(name)});
}

void ChunkVisitor::OnModule(uint32_t, const format::Module& module) {
  modules_.push_back(module);
}

bool DecodeTraceChunk(ProcessTrace& trace, const format::Chunk& chunk, ChunkVisitor& visitor,
                      std::string* error) {
  // One buffer per decoding thread, reused: at most one chunk (16 MiB) each.
  thread_local std::vector<uint8_t> buffer;
  format::Chunk loaded;
  bool ok = trace.reader->LoadPayload(chunk, &buffer, &loaded, error) &&
            format::DecodeChunk(loaded, visitor, error);
  if (buffer.capacity() > (1u << 20) && loaded.payload_bytes < (1u << 16)) {
    std::vector<uint8_t>().swap(buffer);  // keep a rare big chunk's buffer from lingering
  }
  if (!ok && error->find(trace.path) == std::string::npos) {
    *error = fmt::format("{}: {}", trace.path, *error);
  }
  if (visitor.saw_central_) trace.has_central.store(true, std::memory_order_relaxed);
  if (trace.progress && !trace.metadata_complete.load(std::memory_order_relaxed)) {
    trace.progress->decoded_payload.fetch_add(chunk.payload_bytes, std::memory_order_relaxed);
  }
  // A later pass over the same chunks would publish the same records again
  // (modules would be listed twice): only the first full pass publishes.
  if (trace.metadata_complete.load(std::memory_order_acquire)) return ok;
  if (visitor.stacks_.empty() && visitor.names_.empty() && visitor.modules_.empty()) return ok;
  std::lock_guard<std::mutex> lock(trace.metadata_mutex);
  for (auto& [id, frames] : visitor.stacks_) trace.stacks.try_emplace(id, std::move(frames));
  for (auto& n : visitor.names_) {
    auto [it, inserted] = trace.name_log.try_emplace(n.tid, n.ts, n.name);
    if (n.tid == trace.pid() && n.ts < trace.main_first_name.first) {
      trace.main_first_name = {n.ts, n.name};
    }
    if (!inserted && n.ts >= it->second.first) it->second = {n.ts, std::move(n.name)};
  }
  for (auto& m : visitor.modules_) trace.modules.push_back(std::move(m));
  visitor.stacks_.clear();
  visitor.names_.clear();
  visitor.modules_.clear();
  return ok;
}

void FinishMetadata(ProcessTrace& trace) {
  std::lock_guard<std::mutex> lock(trace.metadata_mutex);
  if (trace.metadata_complete.load(std::memory_order_relaxed)) return;
  for (auto& [tid, name] : trace.name_log) trace.thread_names[tid] = name.second;
  if ((trace.header.fields.flags & format::kHeaderFlagForkChild) == 0) {
    trace.exec_name = trace.main_first_name.second;
  }
  std::stable_sort(trace.modules.begin(), trace.modules.end(),
                   [](const format::Module& a, const format::Module& b) {
                     return a.timestamp_ns < b.timestamp_ns;
                   });
  trace.metadata_complete.store(true, std::memory_order_release);
}

}  // namespace crossfree::analyzer
