// SPDX-License-Identifier: Apache-2.0
// crossfree-trace-floor TRACE: the information in a trace's event fields
// under models that use context, for docs/results/trace-size.md and issue
// 43. For each model it prints the empirical conditional entropy (order 0
// within each context: the floor of any coder that codes a value from its
// context's frequencies, with the tables for free) in bytes per event.
//
// Two families, because the format must choose between them:
//  - per chunk: the context a decoder has when each chunk decodes on its
//    own (the chunk's earlier events only);
//  - whole trace: the events of every thread merged in time order (the
//    analyzer's order), so a free can name its block among the live blocks
//    of the thread that allocated it, whatever chunk that was in.
// Not a test and not part of the format: a measuring tool.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/trace_reader.h"
#include "format/wire.h"

using namespace crossfree::format;

namespace {

// Conditional entropy H(value | context), order 0 within each context.
struct CondEntropy {
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, uint64_t>> counts;
  uint64_t n = 0;
  void Put(uint64_t context, uint64_t value) {
    ++counts[context][value];
    ++n;
  }
  double Bits() const {
    double h = 0;
    for (const auto& [c, m] : counts) {
      uint64_t total = 0;
      for (const auto& [v, k] : m) total += k;
      for (const auto& [v, k] : m) {
        h -= static_cast<double>(k) * std::log2(static_cast<double>(k) / static_cast<double>(total));
      }
    }
    return h;
  }
};

struct Ev {
  uint64_t ts;
  uint64_t address;
  uint64_t size;
  uint32_t stack;
  uint32_t thread;  // index, in order of first chunk
  uint32_t chunk;   // global chunk ordinal
  bool alloc;
};

class Collect : public RecordVisitor {
 public:
  void OnEvent(const Event& e) override {
    if (e.from_realloc) return;  // reallocs keep their own record
    events.push_back({e.timestamp_ns, e.address, e.size, e.stack_id, thread, chunk,
                      e.op == EventOp::kAlloc});
  }
  std::vector<Ev> events;
  uint32_t thread = 0;
  uint32_t chunk = 0;
};

// glibc's chunk size in 16-byte units, as layout 2's classes.
uint64_t ClassOf(uint64_t size) { return size <= 1000 ? std::max<uint64_t>(2, (size + 23) >> 4) : 0; }

std::map<std::string, CondEntropy> g_models;
void Put(const char* model, uint64_t context, uint64_t value) { g_models[model].Put(context, value); }

// An allocation's address under two models: its rank among `freed`, the
// freed blocks of its class most recent first (and taken out of them), else
// 1 bit and then its zigzag delta/16 from `last`, the previous address that
// was not a freed block (updated).
void PutAllocAddress(std::deque<uint64_t>& freed, uint64_t address, uint64_t& last,
                     const char* rank_model, const char* delta_model) {
  auto it = std::find(freed.begin(), freed.end(), address);
  Put(rank_model, 0, it != freed.end() ? static_cast<uint64_t>(it - freed.begin()) : ~uint64_t{0});
  if (it != freed.end()) {
    freed.erase(it);
    return;
  }
  Put(delta_model, 0, wire::ZigZag(static_cast<int64_t>(address - last) >> 4));
  last = address;
}

// Rank of `x` in a most-recent-first list, moved to the front; the list
// length when absent (then pushed at the front, the list capped at cap).
uint64_t MtfRank(std::deque<uint64_t>& list, uint64_t x, size_t cap) {
  auto it = std::find(list.begin(), list.end(), x);
  uint64_t rank = static_cast<uint64_t>(it - list.begin());
  if (it != list.end()) list.erase(it);
  list.push_front(x);
  if (list.size() > cap) list.pop_back();
  return rank;
}

// Models using only the chunk's own earlier events (events of one chunk
// are consecutive in `ev`, in the thread's order).
void PerChunk(const std::vector<Ev>& ev) {
  uint32_t chunk = ~0u;
  uint64_t prev_ts = 0;
  uint32_t prev_stack = 0;
  bool prev_alloc = false;
  uint64_t last_new = 0;
  uint64_t last_free_miss = 0;
  std::unordered_map<uint32_t, uint32_t> next_stack;     // stack -> the stack that followed it
  std::unordered_map<uint32_t, uint64_t> site_size;      // stack -> its last size
  std::unordered_map<uint64_t, std::pair<uint32_t, uint64_t>> live;  // address -> stack, size: the chunk's allocations
  std::unordered_map<uint32_t, std::deque<uint64_t>> live_by_site;  // oldest first
  std::unordered_map<uint64_t, std::deque<uint64_t>> freed;         // class -> most recent first
  for (const Ev& e : ev) {
    if (e.chunk != chunk) {
      chunk = e.chunk;
      prev_ts = e.ts;  // the chunk's base is close; the first delta is noise
      prev_stack = 0;
      next_stack.clear();
      site_size.clear();
      live.clear();
      live_by_site.clear();
      freed.clear();
    }
    const uint64_t dt = e.ts - prev_ts;
    const uint64_t ctx_kind = (prev_alloc ? 2 : 0) | (e.alloc ? 1 : 0);
    Put("ts ns, order 0", 0, dt);
    Put("ts ns | previous and this event's kind", ctx_kind, dt);
    Put("ts ns | previous and this stack", uint64_t{prev_stack} << 32 | e.stack, dt);
    Put("ts 16 ns | previous and this stack", uint64_t{prev_stack} << 32 | e.stack, dt >> 4);
    Put("ts 64 ns | previous and this stack", uint64_t{prev_stack} << 32 | e.stack, dt >> 6);
    Put("stack word, order 0", 0, uint64_t{e.stack} << 1 | e.alloc);
    Put("stack+kind | previous stack+kind", uint64_t{prev_stack} << 1 | prev_alloc,
        uint64_t{e.stack} << 1 | e.alloc);
    auto ns = next_stack.find(prev_stack);
    Put("stack+kind: hit of the chunk's successor table, else value", 0,
        ns != next_stack.end() && ns->second == (e.stack << 1 | e.alloc) ? 0 : (uint64_t{e.stack} << 1 | e.alloc) + 1);
    next_stack[prev_stack] = e.stack << 1 | e.alloc;
    if (e.alloc) {
      Put("size (allocations), order 0", 0, e.size);
      Put("size (allocations) | stack", e.stack, e.size);
      auto ss = site_size.find(e.stack);
      Put("size (allocations): the stack's last size, else the value", 0,
          ss != site_size.end() && ss->second == e.size ? 0 : e.size + 1);
      site_size[e.stack] = e.size;
      // Address: rank among the chunk's freed blocks of the class, else new.
      PutAllocAddress(freed[ClassOf(e.size)], e.address, last_new,
                      "alloc address: rank among the chunk's freed blocks of its class (any depth), 1 bit otherwise",
                      "alloc address when not a freed block, zigzag delta/16 from the chunk's last such");
      live[e.address] = {e.stack, e.size};
      live_by_site[e.stack].push_back(e.address);
    } else {
      auto it = live.find(e.address);
      uint64_t rank = ~uint64_t{0};
      if (it != live.end()) {
        auto& q = live_by_site[it->second.first];
        rank = static_cast<uint64_t>(std::find(q.begin(), q.end(), e.address) - q.begin());
        q.erase(q.begin() + static_cast<long>(rank));
        auto& f = freed[ClassOf(it->second.second)];
        f.push_front(e.address);
        if (f.size() > 64) f.pop_back();
        live.erase(it);
      }
      Put("free address: rank among the chunk's live blocks of their site, 1 bit otherwise", e.stack, rank);
      if (rank == ~uint64_t{0}) {
        Put("free address when not the chunk's, zigzag delta/16 from the chunk's last such", 0,
            wire::ZigZag(static_cast<int64_t>(e.address - last_free_miss) >> 4));
        last_free_miss = e.address;
      }
      Put("size (frees) | stack", e.stack, e.size);
    }
    site_size[e.stack] = e.alloc ? e.size : site_size[e.stack];
    prev_ts = e.ts;
    prev_stack = e.stack;
    prev_alloc = e.alloc;
  }
}

// Models over the whole trace in time order (frees before allocations on
// equal times, as the ordering rule).
void WholeTrace(std::vector<Ev> ev) {
  std::stable_sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) {
    return a.ts != b.ts ? a.ts < b.ts : (!a.alloc && b.alloc);
  });
  struct Live {
    uint32_t thread;
    uint32_t stack;
    uint64_t size;
    uint64_t ordinal;  // in its thread+site's allocations
  };
  std::unordered_map<uint64_t, uint64_t> next_ordinal;  // thread+site -> allocations so far
  std::unordered_map<uint64_t, uint64_t> last_taken;    // freeing thread, thread+site -> ordinal freed last
  std::unordered_map<uint64_t, Live> live;
  std::unordered_map<uint64_t, std::deque<uint64_t>> live_by_thread_site;  // (thread,stack) -> addresses, oldest first
  std::unordered_map<uint32_t, std::deque<uint64_t>> source_mtf;  // freeing thread -> allocating (thread,site), MRU
  std::unordered_map<uint64_t, std::deque<uint64_t>> freed;  // class -> addresses, most recent first
  std::unordered_map<uint32_t, uint64_t> prev_free_addr;
  std::unordered_map<uint32_t, uint64_t> last_new;
  for (const Ev& e : ev) {
    if (e.alloc) {
      PutAllocAddress(freed[ClassOf(e.size)], e.address, last_new[e.thread],
                      "whole: alloc address, rank among the process's freed blocks of its class (256 kept), else 1 bit",
                      "whole: alloc address when not a freed block, zigzag delta/16 from the thread's last such");
      const uint64_t key = uint64_t{e.thread} << 32 | e.stack;
      live[e.address] = {e.thread, e.stack, e.size, next_ordinal[key]++};
      live_by_thread_site[key].push_back(e.address);
      continue;
    }
    auto it = live.find(e.address);
    if (it == live.end()) {
      Put("whole: free source (allocating thread+site, MTF rank per freeing thread)", e.thread, ~uint64_t{0});
      continue;
    }
    const uint64_t key = uint64_t{it->second.thread} << 32 | it->second.stack;
    auto& q = live_by_thread_site[key];
    const uint64_t rank = static_cast<uint64_t>(std::find(q.begin(), q.end(), e.address) - q.begin());
    q.erase(q.begin() + static_cast<long>(rank));
    Put("whole: free source (allocating thread+site, MTF rank per freeing thread)", e.thread,
        MtfRank(source_mtf[e.thread], key, 64));
    Put("whole: free rank among the live blocks of its thread+site, oldest first", 0, rank);
    // Skip count: live blocks of the source allocated after the one this
    // thread freed last from it and before this one; else the rank, escaped.
    uint64_t& last = last_taken[(uint64_t{e.thread} << 40) ^ key];
    const uint64_t ord = it->second.ordinal;
    uint64_t skip = 0;
    bool after = ord >= last;
    if (after) {
      for (uint64_t a : q) {
        const Live& l = live[a];
        if (l.ordinal >= last && l.ordinal < ord) ++skip;
      }
    }
    Put("whole: free, live blocks of its thread+site skipped since this thread's last free from it (else escape+rank)", 0,
        after ? skip : (1ull << 40) + rank);
    last = ord + 1;
    auto& f = freed[ClassOf(it->second.size)];
    live.erase(it);
    (void)prev_free_addr;
    f.push_front(e.address);
    if (f.size() > 256) f.pop_back();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: crossfree-trace-floor TRACE\n");
    return 2;
  }
  std::string error;
  auto reader = TraceReader::Open(argv[1], &error);
  if (reader == nullptr) {
    std::fprintf(stderr, "crossfree-trace-floor: %s\n", error.c_str());
    return 2;
  }
  Collect collect;
  std::unordered_map<uint32_t, uint32_t> threads;
  Chunk chunk;
  while (reader->NextChunk(&chunk) == ReadResult::kChunk) {
    collect.thread = threads.emplace(chunk.tid, threads.size()).first->second;
    if (!DecodeChunk(chunk, collect, &error)) {
      std::fprintf(stderr, "crossfree-trace-floor: %s\n", error.c_str());
      return 2;
    }
    ++collect.chunk;
  }
  // A thread's chunks in sequence order: the file has them in write order.
  PerChunk(collect.events);
  WholeTrace(collect.events);
  const double n = static_cast<double>(collect.events.size());
  std::printf("%zu events (reallocs left out)\n| model | values | bits/value | B/event |\n| --- | ---: | ---: | ---: |\n",
              collect.events.size());
  for (const auto& [name, m] : g_models) {
    const double bits = m.Bits();
    std::printf("| %s | %llu | %.2f | %.3f |\n", name.c_str(), static_cast<unsigned long long>(m.n),
                m.n ? bits / static_cast<double>(m.n) : 0.0, bits / 8 / n);
  }
  return 0;
}
