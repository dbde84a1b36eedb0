// SPDX-License-Identifier: Apache-2.0
// Test helper: in-memory trace builder (see synthetic_trace.h).
#include "tests/support/synthetic_trace.h"

#include <cstdio>
#include <stdexcept>

namespace crossfree::analyzer::testing {

SyntheticTrace::Thread::Thread(bool reserve_counts)
    : buffer(format::ChunkWriter::kMinChunkCapacity * 8),
      writer(buffer.data(), buffer.size(), reserve_counts) {}

namespace {
format::HeaderFields Fields(uint32_t pid, uint32_t ppid) {
  format::HeaderFields fields;
  fields.pid = pid;
  fields.ppid = ppid;
  return fields;
}
}  // namespace

SyntheticTrace::SyntheticTrace(uint32_t pid, uint32_t ppid, std::string exe)
    : SyntheticTrace(Fields(pid, ppid), std::move(exe)) {}

SyntheticTrace::SyntheticTrace(format::HeaderFields fields, std::string exe) {
  if (fields.unwinder == format::Unwinder::kNone) fields.unwinder = format::Unwinder::kFramePointer;
  if (fields.max_depth == 0) fields.max_depth = 32;
  if (fields.start_monotonic_ns == 0) fields.start_monotonic_ns = 1;
  if (fields.start_realtime_ns == 0) fields.start_realtime_ns = 1;
  reserve_counts_ = fields.sample_period > 1;
  file_.resize(8192);
  size_t n = format::EncodeFileHeader(fields, exe.data(), exe.size(), file_.data(), file_.size());
  if (n == 0) throw std::runtime_error("EncodeFileHeader failed");
  file_.resize(n);
}

SyntheticTrace::Thread& SyntheticTrace::Get(uint32_t tid) {
  return threads_.try_emplace(tid, reserve_counts_).first->second;
}

template <typename Fn>
void SyntheticTrace::Append(uint32_t tid, uint64_t ts, Fn&& fn) {
  Thread& t = Get(tid);
  if (ts != 0) t.last_ts = ts;
  if (!t.begun) {
    t.writer.Begin(tid, t.sequence, ts);
    t.begun = true;
  }
  if (fn(t.writer)) return;
  Flush(tid);
  t.writer.Begin(tid, t.sequence, ts);
  t.begun = true;
  if (!fn(t.writer)) throw std::runtime_error("record does not fit an empty chunk");
}

void SyntheticTrace::Alloc(uint32_t tid, uint64_t ts, uint64_t address, uint64_t size,
                           uint32_t stack, format::AllocFn fn) {
  Append(tid, ts, [&](format::ChunkWriter& w) {
    return w.AppendAlloc(fn, ts, address, size, stack);
  });
}

void SyntheticTrace::Free(uint32_t tid, uint64_t ts, uint64_t address, uint32_t stack,
                          uint64_t size, format::FreeFn fn) {
  Append(tid, ts, [&](format::ChunkWriter& w) {
    return w.AppendFree(fn, ts, address, size, stack);
  });
}

void SyntheticTrace::Realloc(uint32_t tid, uint64_t ts_free, uint64_t ts_alloc,
                             uint64_t old_address, uint64_t new_address, uint64_t size,
                             uint32_t stack) {
  Append(tid, ts_free, [&](format::ChunkWriter& w) {
    return w.AppendRealloc(format::AllocFn::kRealloc, ts_free, ts_alloc, old_address,
                           new_address, size, stack);
  });
}

void SyntheticTrace::Stack(uint32_t tid, uint32_t id, const std::vector<uint64_t>& frames) {
  Append(tid, 0, [&](format::ChunkWriter& w) {
    return w.AppendStack(id, frames.data(), static_cast<uint32_t>(frames.size()));
  });
}

void SyntheticTrace::ThreadName(uint32_t tid, uint64_t ts, const std::string& name) {
  Append(tid, ts, [&](format::ChunkWriter& w) {
    return w.AppendThreadName(ts, name.data(), name.size());
  });
}

void SyntheticTrace::ThreadExit(uint32_t tid, uint64_t ts) {
  Append(tid, ts, [&](format::ChunkWriter& w) { return w.AppendThreadExit(ts); });
}

void SyntheticTrace::Module(uint32_t tid, const std::string& path, uint64_t load_bias,
                            uint64_t start, uint64_t size) {
  format::ModuleSegment segment{start, size};
  format::ModuleView view{0, load_bias, path.data(), static_cast<uint32_t>(path.size()),
                          nullptr, 0, &segment, 1};
  Append(tid, 0, [&](format::ChunkWriter& w) { return w.AppendModule(view); });
}

void SyntheticTrace::Window(uint32_t tid, uint64_t ts, format::WindowState state,
                            format::WindowCause cause) {
  Append(tid, ts, [&](format::ChunkWriter& w) { return w.AppendWindow(state, cause, ts); });
  Flush(tid);
}

void SyntheticTrace::Counts(uint32_t tid, const format::ThreadCounts& counts) {
  Thread& t = Get(tid);
  if (!t.begun) {
    t.writer.Begin(tid, t.sequence, t.last_ts);
    t.begun = true;
  }
  if (!t.writer.AppendCounts(counts)) throw std::runtime_error("counts record does not fit");
  Flush(tid);
}

void SyntheticTrace::Flush(uint32_t tid) {
  Thread& t = Get(tid);
  if (!t.begun || t.writer.empty()) return;
  size_t n = t.writer.Finish();
  if (sink_) {
    std::fwrite(t.buffer.data(), 1, n, sink_);
  } else {
    file_.insert(file_.end(), t.buffer.data(), t.buffer.data() + n);
  }
  ++t.sequence;
  t.begun = false;
}

const std::vector<uint8_t>& SyntheticTrace::Finish() {
  for (auto& [tid, t] : threads_) Flush(tid);
  return file_;
}

void SyntheticTrace::WriteTo(const std::string& path) {
  Finish();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  std::fwrite(file_.data(), 1, file_.size(), f);
  std::fclose(f);
}

}  // namespace crossfree::analyzer::testing

namespace crossfree::analyzer::testing {

void SyntheticTrace::StreamTo(std::FILE* sink) {
  std::fwrite(file_.data(), 1, file_.size(), sink);
  file_.clear();
  sink_ = sink;
}

void AppendTiedHandOffs(SyntheticTrace& t, uint32_t p, uint32_t c, uint64_t k, uint64_t ts,
                        uint32_t y_free_stack) {
  const uint64_t x = 0x10000 + (k % 8) * 64, y = 0x90000 + (k % 5) * 32;
  t.Alloc(p, ts, x, 48, 1);
  if (k % 37 == 5) t.Flush(p);  // the tie goes on in p's next chunk
  t.Free(c, ts, x, 2);
  t.Alloc(p, ts, x, 48, 1);
  t.Alloc(c, ts, y, 24, 3);
  if (k % 41 == 7) t.Flush(c);
  t.Free(c, ts, y, y_free_stack);
  t.Free(c, ts, x, 2);
}

}  // namespace crossfree::analyzer::testing
