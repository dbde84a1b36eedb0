// SPDX-License-Identifier: Apache-2.0
// Simulate tests: in-memory trace builder (see trace_builder.h).
#include "tests/simulate/trace_builder.h"

#include <stdexcept>

namespace crossfree::simulate::testing {

TraceBuilder::Thread::Thread()
    : buffer(format::ChunkWriter::kMinChunkCapacity * 4), writer(buffer.data(), buffer.size()) {}

TraceBuilder::TraceBuilder(uint32_t pid) {
  format::HeaderFields fields;
  fields.pid = pid;
  fields.start_monotonic_ns = 1;
  fields.start_realtime_ns = 1;
  const std::string exe = "/bin/simulate-test";
  file_.resize(4096);
  size_t n = format::EncodeFileHeader(fields, exe.data(), exe.size(), file_.data(), file_.size());
  if (n == 0) throw std::runtime_error("EncodeFileHeader failed");
  file_.resize(n);
}

template <typename Fn>
void TraceBuilder::Append(uint32_t tid, uint64_t ts, Fn&& fn) {
  Thread& t = threads_[tid];
  if (!t.begun) {
    t.writer.Begin(tid, t.sequence, ts);
    t.begun = true;
  }
  if (fn(t.writer)) return;
  Flush(tid, t);
  t.writer.Begin(tid, t.sequence, ts);
  t.begun = true;
  if (!fn(t.writer)) throw std::runtime_error("record does not fit an empty chunk");
}

void TraceBuilder::Flush(uint32_t, Thread& t) {
  if (!t.begun || t.writer.empty()) return;
  size_t n = t.writer.Finish();
  file_.insert(file_.end(), t.buffer.data(), t.buffer.data() + n);
  ++t.sequence;
  t.begun = false;
}

void TraceBuilder::Alloc(uint32_t tid, uint64_t ts, uint64_t address, uint64_t size,
                         uint32_t stack, format::AllocFn fn) {
  Append(tid, ts, [&](format::ChunkWriter& w) {
    return w.AppendAlloc(fn, ts, address, size, stack);
  });
}

void TraceBuilder::Free(uint32_t tid, uint64_t ts, uint64_t address, uint32_t stack) {
  Append(tid, ts, [&](format::ChunkWriter& w) {
    return w.AppendFree(format::FreeFn::kFree, ts, address, 0, stack);
  });
}

void TraceBuilder::Realloc(uint32_t tid, uint64_t ts_free, uint64_t ts_alloc,
                           uint64_t old_address, uint64_t new_address, uint64_t size,
                           uint32_t stack) {
  Append(tid, ts_free, [&](format::ChunkWriter& w) {
    return w.AppendRealloc(format::AllocFn::kRealloc, ts_free, ts_alloc, old_address,
                           new_address, size, stack);
  });
}

void TraceBuilder::Stack(uint32_t tid, uint32_t id, const std::vector<uint64_t>& frames) {
  Append(tid, 0, [&](format::ChunkWriter& w) {
    return w.AppendStack(id, frames.data(), static_cast<uint32_t>(frames.size()));
  });
}

void TraceBuilder::ThreadName(uint32_t tid, uint64_t ts, const std::string& name) {
  Append(tid, ts, [&](format::ChunkWriter& w) {
    return w.AppendThreadName(ts, name.data(), name.size());
  });
}

void TraceBuilder::ThreadExit(uint32_t tid, uint64_t ts) {
  Append(tid, ts, [&](format::ChunkWriter& w) { return w.AppendThreadExit(ts); });
}

const std::vector<uint8_t>& TraceBuilder::Finish() {
  for (auto& [tid, t] : threads_) Flush(tid, t);
  return file_;
}

}  // namespace crossfree::simulate::testing
