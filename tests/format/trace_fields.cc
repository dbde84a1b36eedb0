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
//
// Then, issue 43, the fields *in context*: what an adaptive
// context-modelling arithmetic coder would write for each field
// (tests/format/adaptive_cost.h: sums of -log2 p under models that learn
// as they go, reset at every chunk so that each chunk stays decodable on
// its own), with the contexts the issue names: the time as a delta from
// the thread's previous event at several resolutions, given the stack
// pair; the stack given the previous stack; the size given the stack; an
// allocation's address by its rank among the chunk's freed blocks of its
// class, else from the call site's last address; a free by its
// allocating site and rank among that site's live blocks, else from the
// last such free. Also the clock's real resolution (the low bits of the
// timestamps and the deltas' common divisor), how many cross-thread
// alloc-then-free pairs of one block a coarser resolution would tie (the
// tie rule then orders them wrongly, docs/trace-format.md 7), and frees
// named across chunks (merged time order: allocating thread and site,
// rank among its live blocks), which no chunk alone can decode.
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/chunk_refs.h"
#include "tests/format/adaptive_cost.h"
#include "format/trace_reader.h"
#include "format/wire.h"

using namespace crossfree::format;
using crossfree::format::testing::KtModel;
using crossfree::format::testing::NumberModel;
using crossfree::format::testing::SymbolModel;

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
    all.push_back({e.timestamp_ns, e.address, e.size, e.stack_id, e.cpu, thread, chunk,
                   static_cast<uint8_t>(e.fn), e.op == EventOp::kAlloc, e.from_realloc});
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
  struct Ev {
    uint64_t ts, address, size;
    uint32_t stack, cpu, thread, chunk;
    uint8_t fn;
    bool alloc, from_realloc;
  };
  std::vector<Ev> all;  // every event, in file order (a chunk's events together)
  uint32_t thread = 0;  // index of the current chunk's thread
  uint32_t chunk = 0;   // ordinal of the current chunk

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


// ---- Issue 43: the fields in context (see the file comment) ----

using Ev = Fields::Ev;
std::map<std::string, double> g_bits;  // model -> bits, whole trace
void Add(const std::string& model, double bits) { g_bits[model] += bits; }

uint64_t ClassOf(uint64_t size) { return size <= 1000 ? std::max<uint64_t>(2, (size + 23) >> 4) : 0; }
uint64_t ZigZag(int64_t v) { return wire::ZigZag(v); }
constexpr uint64_t kResolutions[] = {1, 16, 64, 256, 1024};

// Rank of x in an MRU list (front = most recent); removed when found.
// list.size() when absent.
uint64_t TakeRank(std::deque<uint64_t>& list, uint64_t x) {
  auto it = std::find(list.begin(), list.end(), x);
  const auto rank = static_cast<uint64_t>(it - list.begin());
  if (it != list.end()) list.erase(it);
  return rank;
}

// Blocks in allocation order, oldest first, of which some are freed: a
// free names its block by its rank among those still live before it (a
// FIFO hand-off frees rank 0). Freed entries leave once they reach the
// front.
class LiveQueue {
 public:
  void Push(uint64_t address) { q_.push_back({address, true}); }
  // The rank of address (which must be live here) among the live blocks,
  // and marks it freed.
  uint64_t Retire(uint64_t address) {
    uint64_t rank = 0;
    size_t i = 0;
    for (; i < q_.size(); ++i) {
      if (!q_[i].live) continue;
      if (q_[i].address == address) break;
      ++rank;
    }
    q_[i].live = false;
    while (!q_.empty() && !q_.front().live) q_.pop_front();
    return rank;
  }

 private:
  struct Block {
    uint64_t address;
    bool live;
  };
  std::deque<Block> q_;
};

// The per-chunk models: everything is reset at a chunk's first event, as a
// decoder of that chunk alone would start.
class ChunkContext {
 public:
  void Run(const std::vector<Ev>& ev) {
    uint32_t chunk = ~0u;
    for (const Ev& e : ev) {
      if (e.chunk != chunk) {
        chunk = e.chunk;
        Reset(e.ts);
      }
      if (e.from_realloc) continue;  // a realloc record keeps its own fields
      Event(e);
    }
  }

 private:
  void Reset(uint64_t base) {
    *this = ChunkContext();
    prev_ts_ = base;
  }
  void Event(const Ev& e) {
    const uint64_t pair = uint64_t{prev_stack_} << 32 | e.stack;
    // Time: the delta from the thread's previous event (the chunk's base
    // for its first), each timestamp first cut to the resolution.
    for (uint64_t r : kResolutions) {
      const uint64_t dt = ZigZag(static_cast<int64_t>(e.ts / r - prev_ts_ / r));
      const std::string at = " @" + std::to_string(r) + " ns";
      Add("time" + at + ", no context", time_[r][0].Code(0, dt));
      Add("time" + at + " | previous and this stack", time_[r][1].Code(pair, dt));
      Add("time" + at + " | previous and this kind", time_[r][2].Code(prev_kind_ * 2 + e.alloc, dt));
    }
    // Stack, kind and function: one symbol, given the previous one.
    const uint64_t symbol = uint64_t{e.stack} << 8 | (e.alloc ? 0x10 : 0x20) | e.fn;
    bool esc;
    double bits = stack1_.Code(prev_symbol_, symbol, &esc);
    if (esc) {
      bits += stack0_.Code(0, symbol, &esc);
      if (esc) bits += stack_new_.Code(0, symbol);
    }
    Add("stack+tag | previous stack+tag", bits);
    // CPU: given the previous event's.
    bits = cpu_.Code(prev_cpu_, e.cpu, &esc);
    if (esc) bits += cpu_new_.Code(0, e.cpu);
    Add("cpu | previous cpu", bits);
    if (e.alloc) {
      bits = size_.Code(e.stack, e.size, &esc);
      if (esc) bits += size_new_.Code(0, e.size);
      Add("size (alloc) | stack", bits);
      AllocAddress(e);
    } else {
      bits = free_size_.Code(e.stack, e.size, &esc);
      if (esc) bits += size_new_.Code(1, e.size);
      Add("size (free) | stack", bits);
      FreeAddress(e);
    }
    prev_ts_ = e.ts;
    prev_stack_ = e.stack;
    prev_kind_ = e.alloc;
    prev_symbol_ = symbol;
    prev_cpu_ = e.cpu;
  }
  // An allocation: its rank among the chunk's freed blocks of its class
  // (most recent first), else an escape and its delta/16 from its call
  // site's last address (or the chunk's last allocation's).
  void AllocAddress(const Ev& e) {
    const uint64_t cls = ClassOf(e.size);
    auto& freed = freed_[cls];
    const size_t before = freed.size();
    const uint64_t rank = cls == 0 ? before : TakeRank(freed, e.address);
    const bool found = rank < before;
    bool esc;
    double bits = alloc_rank_.Code(cls, found ? rank : ~0ull, &esc);
    if (esc && found) bits += rank_new_.Code(0, rank);  // a rank not used before in this class
    if (!found) {
      auto site = site_last_.find(e.stack);
      const bool known = site != site_last_.end();
      const uint64_t from = known ? site->second : last_alloc_;
      const auto delta = static_cast<int64_t>(e.address - from);
      bits += alloc_delta_.Code(known, ZigZag((delta & 15) == 0 ? delta >> 4 : delta) << 1 | ((delta & 15) != 0));
    }
    Add("address (alloc): rank among freed blocks of its class, else delta from the site's last", bits);
    site_last_[e.stack] = e.address;
    last_alloc_ = e.address;
    live_[e.address] = {e.stack, e.size};
    by_site_[e.stack].Push(e.address);
  }
  // A free: the site of its allocation in this chunk (given the free's
  // stack; "none" when the block is not the chunk's), then its rank among
  // that site's live blocks, oldest first; else its delta/16 from the
  // chunk's last such free.
  void FreeAddress(const Ev& e) {
    auto it = live_.find(e.address);
    bool esc;
    const uint64_t site = it == live_.end() ? 0 : uint64_t{it->second.first} + 1;
    double bits = free_site_.Code(e.stack, site, &esc);
    if (esc) bits += free_site_new_.Code(0, site);
    if (site == 0) {
      const auto delta = static_cast<int64_t>(e.address - last_foreign_);
      bits += free_delta_.Code(0, ZigZag((delta & 15) == 0 ? delta >> 4 : delta) << 1 | ((delta & 15) != 0));
      last_foreign_ = e.address;
      // Its class is unknown unless the free is sized.
      if (e.size != 0 && ClassOf(e.size) != 0) Push(ClassOf(e.size), e.address);
    } else {
      const uint64_t rank = by_site_[it->second.first].Retire(e.address);
      bits += free_rank_.Code(site, rank);
      if (ClassOf(it->second.second) != 0) Push(ClassOf(it->second.second), e.address);
      live_.erase(it);
    }
    Add("address (free): the chunk's allocation by site and rank, else delta from the last such free", bits);
  }
  void Push(uint64_t cls, uint64_t address) {
    auto& f = freed_[cls];
    f.push_front(address);
    if (f.size() > 16) f.pop_back();
  }

  uint64_t prev_ts_ = 0;
  uint32_t prev_stack_ = 0;
  bool prev_kind_ = false;
  uint64_t prev_symbol_ = 0;
  uint32_t prev_cpu_ = 0;
  uint64_t last_alloc_ = 0, last_foreign_ = 0;
  std::map<uint64_t, std::array<NumberModel, 3>> time_;
  SymbolModel stack1_, stack0_, cpu_, size_, free_size_, alloc_rank_, free_site_;
  NumberModel stack_new_, cpu_new_, size_new_, alloc_delta_, free_delta_, free_site_new_, free_rank_, rank_new_;
  std::unordered_map<uint64_t, std::deque<uint64_t>> freed_;
  std::unordered_map<uint32_t, uint64_t> site_last_;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint64_t>> live_;
  std::unordered_map<uint32_t, LiveQueue> by_site_;
};

// Across chunks, in the merged time order (ties: free first): a free named
// by the allocating thread and site (given the freeing thread and its
// stack) and its rank among that thread+site's live blocks, oldest first.
// Not decodable chunk by chunk: the measure of what that would buy. Also
// the cross-thread alloc-then-free pairs of one block that a resolution
// would tie.
void WholeTrace(std::vector<Ev> ev, std::map<uint64_t, uint64_t>* ties) {
  std::stable_sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) {
    return a.ts != b.ts ? a.ts < b.ts : (!a.alloc && b.alloc);
  });
  struct Live {
    uint64_t key;  // thread << 32 | stack
    uint64_t ts;
    uint32_t thread;
  };
  std::unordered_map<uint64_t, Live> live;
  std::unordered_map<uint64_t, LiveQueue> by_key;
  SymbolModel source;
  NumberModel source_new, rank_model, delta;
  std::unordered_map<uint32_t, uint64_t> last_miss;
  for (const Ev& e : ev) {
    if (e.from_realloc) continue;
    const uint64_t key = uint64_t{e.thread} << 32 | e.stack;
    if (e.alloc) {
      live[e.address] = {key, e.ts, e.thread};
      by_key[key].Push(e.address);
      continue;
    }
    auto it = live.find(e.address);
    bool esc;
    const uint64_t src = it == live.end() ? 0 : it->second.key + 1;
    double bits = source.Code(uint64_t{e.thread} << 32 | e.stack, src, &esc);
    if (esc) bits += source_new.Code(0, src & 0xffffffffffull);
    if (it == live.end()) {
      const auto d = static_cast<int64_t>(e.address - last_miss[e.thread]);
      bits += delta.Code(0, ZigZag(d >> 4));
      last_miss[e.thread] = e.address;
    } else {
      if (it->second.thread != e.thread) {
        for (uint64_t r : kResolutions) {
          if (it->second.ts / r == e.ts / r) ++(*ties)[r];
        }
      }
      bits += rank_model.Code(0, by_key[it->second.key].Retire(e.address));
      live.erase(it);
    }
    Add("whole trace: address (free) by allocating thread+site and rank, else delta", bits);
  }
}

// The clock's real resolution: the bits of (ts mod 16) that vary (4 when
// every nanosecond occurs), and the greatest common divisor of the deltas.
void Resolution(const std::vector<Ev>& ev, double* low_bits, uint64_t* gcd) {
  KtModel low(16);
  double bits = 0;
  uint64_t g = 0, prev = 0;
  uint32_t chunk = ~0u;
  for (const Ev& e : ev) {
    bits += low.Code(e.ts & 15);
    if (e.chunk == chunk && e.ts != prev) g = std::gcd(g, e.ts > prev ? e.ts - prev : prev - e.ts);
    chunk = e.chunk;
    prev = e.ts;
  }
  *low_bits = ev.empty() ? 0 : bits / static_cast<double>(ev.size());
  *gcd = g;
}

void PrintContext(const Fields& fields) {
  ChunkContext chunk_models;
  chunk_models.Run(fields.all);
  std::map<uint64_t, uint64_t> ties;
  WholeTrace(fields.all, &ties);
  double low_bits;
  uint64_t gcd;
  Resolution(fields.all, &low_bits, &gcd);
  const double ev = static_cast<double>(fields.events);
  std::printf("\nIn context (adaptive arithmetic-coded size, models reset per chunk unless 'whole trace'), "
              "bytes per event\n| model | B/event |\n| --- | ---: |\n");
  for (const auto& [name, bits] : g_bits) std::printf("| %s | %.3f |\n", name.c_str(), bits / 8 / ev);
  std::printf("\nClock: low 4 bits of the timestamps carry %.2f bits (4: every ns occurs); "
              "gcd of the deltas %llu ns\n", low_bits, static_cast<unsigned long long>(gcd));
  std::printf("Cross-thread alloc-then-free pairs of one block that would tie at a resolution:");
  for (uint64_t r : kResolutions) {
    std::printf(" %llu ns: %llu;", static_cast<unsigned long long>(r),
                static_cast<unsigned long long>(ties[r]));
  }
  std::printf("\n");
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
  std::unordered_map<uint32_t, uint32_t> threads;
  Chunk chunk;
  while (reader->NextChunk(&chunk) == ReadResult::kChunk) {
    for (auto& [name, field] : fields.f) field.chunk_start = field.bytes.size();
    fields.BeginChunk(chunk.base_timestamp_ns);
    fields.thread = threads.emplace(chunk.tid, static_cast<uint32_t>(threads.size())).first->second;
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
    ++fields.chunk;
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
  PrintContext(fields);
  return 0;
}
