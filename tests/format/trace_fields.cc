// SPDX-License-Identifier: Apache-2.0
// crossfree-trace-fields TRACE [LEVEL]: what the event fields of a trace
// cost and how much information they hold, field by field, for
// docs/trace-format.md 9 and docs/results/trace-size.md. For each field it
// prints the bytes per event of its varints as version 2 encodes them, the
// same fields zstd-compressed chunk by chunk (the lanes of a compressed
// chunk) and as one stream at level 19, and the order-0 entropy of its
// values (bits per value, and in bytes per event): the floor of any coder
// that codes each value on its own from the value's frequency.
// Timestamps also at coarser resolutions (64 and 256 ns) to show what the
// nanoseconds the ordering rule needs cost. Addresses also as compressed
// layout 2 codes them (docs/trace-format.md 5.2: frees naming the chunk's
// allocation, allocations reusing the block freed last in their class).
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/chunk_refs.h"
#include "format/trace_reader.h"
#include "format/wire.h"

using namespace crossfree::format;

namespace {

struct Field {
  std::vector<uint8_t> bytes;  // the varints, whole trace
  std::unordered_map<uint64_t, uint64_t> counts;
  uint64_t values = 0;
  size_t chunk_start = 0;
  uint64_t per_chunk_zstd = 0;

  void Put(uint64_t v) {
    uint8_t b[10];
    uint8_t* e = wire::PutVarint(b, v);
    bytes.insert(bytes.end(), b, e);
    ++counts[v];
    ++values;
  }
  double EntropyBits() const {  // total, order 0
    double h = 0;
    for (const auto& [v, n] : counts) {
      h -= static_cast<double>(n) * std::log2(static_cast<double>(n) / static_cast<double>(values));
    }
    return h;
  }
};

// The fields as the version 2 event record codes them (docs/trace-format.md
// 6.2): deltas from the previous timestamp and from the stack's slot.
class Fields : public RecordVisitor {
 public:
  void BeginChunk(uint64_t base) {
    prev_ts_ = base;
    prev_addr_ = 0;
    for (auto& s : sites_) s = {};
    refs_.Reset();
    live_.clear();
    std::fill(std::begin(pair_delta_), std::end(pair_delta_), 0);
    prev_stack_ = 0;
  }
  void OnEvent(const Event& e) override {
    ++events;
    const int64_t d = static_cast<int64_t>(e.timestamp_ns - prev_ts_);
    prev_ts_ = e.timestamp_ns;
    f["ts (ns)"].Put(wire::ZigZag(d));
    f["ts at 64 ns"].Put(wire::ZigZag(d >> 6));
    f["ts at 256 ns"].Put(wire::ZigZag(d >> 8));
    {
      // Issue 43: the delta predicted by the last delta between the same
      // two stacks in this chunk (0 when none): the residual.
      int64_t& last = pair_delta_[(prev_stack_ * 0x9e3779b1u ^ e.stack_id) & 4095];
      f["ts (ns), residual from the stack pair's last delta"].Put(wire::ZigZag(d - last));
      last = d;
    }
    prev_stack_ = e.stack_id;
    f["tag"].Put((e.op == EventOp::kAlloc ? 0x10 : 0x20) | e.fn);
    Site& s = sites_[e.stack_id % 256];
    const bool hit = s.stack == e.stack_id;
    f["stack word"].Put(uint64_t{e.stack_id} << 1 | (!hit || s.size != e.size));
    const int64_t ad = static_cast<int64_t>(e.address - (hit ? s.address : prev_addr_));
    const uint64_t delta = wire::ZigZag((ad & 15) == 0 ? ad >> 4 : ad);
    f[e.op == EventOp::kAlloc ? "address (alloc)" : "address (free)"].Put(delta);
    // Layout 2's lane 3 value, with the writer's choices (an exact live map
    // here, where ChunkCompressor's table may lose an entry to a collision).
    uint64_t at;
    if (e.from_realloc) {
      // A realloc record keeps its own fields in layout 2 (not counted here).
    } else if (e.op == EventOp::kAlloc) {
      const bool reuse = refs_.Peek(e.size, &at) && at == e.address;
      if (reuse) refs_.Reuse(e.size, &at);
      f["address (alloc), layout 2"].Put(reuse ? 0 : delta + 1);
      live_[e.address] = refs_.allocs();
      refs_.AddAlloc(e.address, e.size);
    } else {
      auto it = live_.find(e.address);
      uint64_t k = 0;
      if (it != live_.end()) {
        k = refs_.allocs() - it->second;
        live_.erase(it);
        if (k > ChunkRefs::kRefWindow) k = 0;
      }
      if (k != 0) refs_.Free(k, &at);
      f["address (free), layout 2"].Put(k != 0 ? 2 * k + 1 : delta << 1);
      if (k == 0) f["address (free), layout 2, deltas only"].Put(delta << 1);
    }
    if (!hit || s.size != e.size) f["size (when present)"].Put(e.size);
    s = {e.stack_id, e.size, e.address};
    prev_addr_ = e.address;
  }
  std::map<std::string, Field> f;
  uint64_t events = 0;

 private:
  struct Site {
    uint32_t stack = 0;
    uint64_t size = 0;
    uint64_t address = 0;
  };
  Site sites_[256];
  ChunkRefs refs_;
  std::unordered_map<uint64_t, uint64_t> live_;  // address -> allocation ordinal, this chunk
  uint64_t prev_ts_ = 0;
  uint64_t prev_addr_ = 0;
  uint32_t prev_stack_ = 0;
  int64_t pair_delta_[4096] = {};
};

size_t Zstd(ZSTD_CCtx* cctx, const uint8_t* p, size_t n, int level) {
  std::vector<uint8_t> out(ZSTD_compressBound(n));
  size_t z = ZSTD_compressCCtx(cctx, out.data(), out.size(), p, n, level);
  return ZSTD_isError(z) ? n : z;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: crossfree-trace-fields TRACE [LEVEL]\n");
    return 2;
  }
  const int level = argc == 3 ? std::atoi(argv[2]) : 3;
  std::string error;
  auto reader = TraceReader::Open(argv[1], &error);
  if (reader == nullptr) {
    std::fprintf(stderr, "crossfree-trace-fields: %s\n", error.c_str());
    return 2;
  }
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  Fields fields;
  Chunk chunk;
  while (reader->NextChunk(&chunk) == ReadResult::kChunk) {
    for (auto& [name, field] : fields.f) field.chunk_start = field.bytes.size();
    fields.BeginChunk(chunk.base_timestamp_ns);
    if (!DecodeChunk(chunk, fields, &error)) {
      std::fprintf(stderr, "crossfree-trace-fields: %s\n", error.c_str());
      return 2;
    }
    for (auto& [name, field] : fields.f) {
      // A field first seen in this chunk starts at 0 (chunk_start default).
      const size_t n = field.bytes.size() - field.chunk_start;
      if (n > 0) field.per_chunk_zstd += Zstd(cctx, field.bytes.data() + field.chunk_start, n, level);
      field.chunk_start = field.bytes.size();
    }
  }
  const double ev = static_cast<double>(fields.events);
  std::printf("%llu events; bytes per event of each field\n",
              static_cast<unsigned long long>(fields.events));
  std::printf("| field | values | distinct | varint | zstd %d per chunk | zstd 19 whole | "
              "entropy bits/value | entropy bytes/event |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
              level);
  for (const auto& [name, field] : fields.f) {
    const double h = field.EntropyBits();
    std::printf("| %s | %llu | %zu | %.3f | %.3f | %.3f | %.2f | %.3f |\n", name.c_str(),
                static_cast<unsigned long long>(field.values), field.counts.size(),
                static_cast<double>(field.bytes.size()) / ev,
                static_cast<double>(field.per_chunk_zstd) / ev,
                static_cast<double>(Zstd(cctx, field.bytes.data(), field.bytes.size(), 19)) / ev,
                field.values ? h / static_cast<double>(field.values) : 0.0, h / 8 / ev);
  }
  ZSTD_freeCCtx(cctx);
  return 0;
}
