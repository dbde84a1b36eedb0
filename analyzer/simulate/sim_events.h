// SPDX-License-Identifier: Apache-2.0
// Simulate: the operations a replay feeds to an allocator model, decoded
// from a thread's chunks. A realloc record (free half, then alloc half)
// becomes one kRealloc at the alloc half's timestamp, because every
// allocator modelled here allocates the new block before it frees the old
// one. Shared by the gperftools replay (replay.cc) and the cost replay of the
// other models (cost_replay.cc).
//
// A collector fills one thread's vector; used from one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/pairing/event_stream.h"
#include "analyzer/pairing/tie_order.h"
#include "format/trace_reader.h"

namespace crossfree::analyzer::simulate {

enum SimKind : uint8_t { kSimFree = 0, kSimAlloc = 1, kSimRealloc = 2, kSimExit = 3 };

struct SimEvent {
  uint64_t ts = 0;
  uint64_t address = 0;
  uint64_t old_address = 0;  // kSimRealloc
  uint64_t size = 0;
  uint32_t stack = 0;
  uint32_t cpu = format::kUnknownCpu;
  uint8_t kind = kSimAlloc;
  uint8_t fn = 0;
};

// The ordering rule of the event stream: free before allocation on equal
// timestamps, a thread exit last (ties across threads: FitsTie below).
inline analyzer::OrderKey KeyOf(const SimEvent& e) {
  using analyzer::Rank;
  return {e.ts, e.kind == kSimFree   ? Rank::kFree
                : e.kind == kSimExit ? Rank::kThreadExit
                                     : Rank::kAlloc};
}

// Whether e fits the state of its addresses at this point of a tie
// (analyzer/pairing/tie_order.h, TieFits), is_live(address) saying whether
// the replay holds a block there. A realloc that moved frees its old block
// and allocates its new one: it fits when both halves do; one in place
// fits when its block is live. An event of the null address changes no
// block: it fits, and keeps its place.
template <typename IsLive>
bool FitsTie(const SimEvent& e, IsLive&& is_live) {
  using analyzer::Rank;
  auto fits = [&is_live](Rank rank, uint64_t address) {
    return address == 0 || analyzer::TieFits(rank, is_live(address));
  };
  switch (e.kind) {
    case kSimFree:
      return fits(Rank::kFree, e.address);
    case kSimAlloc:
      return fits(Rank::kAlloc, e.address);
    case kSimRealloc:
      return fits(Rank::kFree, e.old_address) &&
             (e.address == e.old_address || fits(Rank::kAlloc, e.address));
    default:
      return analyzer::TieFits(Rank::kThreadExit, false);
  }
}

// Decodes one chunk into SimEvents (the trace's metadata is published by
// the decoder, analyzer/pairing/event_stream.h).
class ChunkCollector : public analyzer::ChunkVisitor {
 public:
  explicit ChunkCollector(std::vector<SimEvent>* out) : out_(out) {}

  void OnEvent(const format::Event& ev) override {
    ++events;
    if (ev.op == format::EventOp::kFree && ev.from_realloc) {
      FlushPending();
      pending_ = Make(ev, kSimFree);
      has_pending_ = true;
      return;
    }
    if (ev.op == format::EventOp::kAlloc && ev.from_realloc && has_pending_) {
      SimEvent e = Make(ev, kSimRealloc);
      e.old_address = pending_.address;
      has_pending_ = false;
      out_->push_back(e);
      return;
    }
    FlushPending();
    out_->push_back(Make(ev, ev.op == format::EventOp::kFree ? kSimFree : kSimAlloc));
  }
  void OnThreadExit(uint32_t, uint64_t ts) override {
    FlushPending();
    SimEvent e;
    e.ts = ts;
    e.kind = kSimExit;
    out_->push_back(e);
  }
  // Call after the chunk is decoded: a realloc's free half that ends a
  // chunk is delivered as a free.
  void FlushPending() {
    if (has_pending_) out_->push_back(pending_);
    has_pending_ = false;
  }

  uint64_t events = 0;

 private:
  static SimEvent Make(const format::Event& ev, uint8_t kind) {
    SimEvent e;
    e.ts = ev.timestamp_ns;
    e.address = ev.address;
    e.size = ev.size;
    e.stack = ev.stack_id;
    e.cpu = ev.cpu;
    e.kind = kind;
    e.fn = ev.fn;
    return e;
  }

  std::vector<SimEvent>* out_;
  SimEvent pending_;
  bool has_pending_ = false;
};

}  // namespace crossfree::analyzer::simulate
