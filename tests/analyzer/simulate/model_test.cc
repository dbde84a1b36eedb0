// SPDX-License-Identifier: Apache-2.0
// Simulate tests: the allocator model driven directly (no trace), for the
// central free list's transfer cache and spans. Expected values follow from
// src/central_freelist.cc's rules, derived in the comments.
#include <catch2/catch.hpp>

#include <vector>

#include "analyzer/simulate/tcmalloc_model.h"

namespace crossfree::analyzer::simulate {
namespace {

struct Recorder : TransferSink {
  struct Call {
    bool fetch;
    int heap, cl, objects, wanted;
  };
  std::vector<Call> calls;
  void OnFetch(int heap, int cl, int objects, int wanted) override {
    calls.push_back({true, heap, cl, objects, wanted});
  }
  void OnRelease(int heap, int cl, int objects, ReleaseCause) override {
    calls.push_back({false, heap, cl, objects, 0});
  }
};

TEST_CASE("central list: a released full batch parks in a transfer slot and is fetched whole",
          "[simulate]") {
  // Batches of 2 (TCMALLOC_TRANSFER_NUM_OBJ=2); 32-byte objects, 256 per
  // one-page span.
  TcmallocConfig config;
  config.transfer_num_objects = 2;
  Recorder rec;
  TcmallocModel model(config, &rec);
  const int cl = model.size_map().SizeClass(32);
  REQUIRE(model.size_map().NumObjectsToMove(cl) == 2);
  int a = model.CreateHeap();
  int b = model.CreateHeap();
  // A: fetch 1 asks for min(max_length 1, 2) = 1 (new span carved); fetch 2
  // asks for 2, keeps 1; the third allocation pops it.
  std::vector<uint32_t> objects;
  for (int i = 0; i < 3; ++i) objects.push_back(model.Allocate(a, cl));
  REQUIRE(rec.calls.size() == 2);
  CHECK(rec.calls[1].objects == 2);
  CHECK(model.live_spans(cl) == 1);
  // B frees them: the second free overflows max_length 1 and releases 2,
  // a full batch, into a transfer slot; the third stays in B's list.
  for (uint32_t o : objects) model.Deallocate(b, cl, o);
  REQUIRE(rec.calls.size() == 3);
  CHECK_FALSE(rec.calls[2].fetch);
  CHECK(rec.calls[2].objects == 2);
  CHECK(model.transfer_slots_used(cl) == 1);
  CHECK(model.list(b, cl).length() == 1);
  // A's next fetch asks for min(4, 2) = 2 = a batch: it takes the slot.
  model.Allocate(a, cl);
  REQUIRE(rec.calls.size() == 4);
  CHECK(rec.calls[3].fetch);
  CHECK(rec.calls[3].objects == 2);
  CHECK(model.transfer_slots_used(cl) == 0);
  // B's exit returns its one object to the span (not a batch); A's exit
  // returns one (its list holds the second object of the slot's batch).
  model.DeleteHeap(b);
  model.DeleteHeap(a);
  CHECK(model.live_spans(cl) == 1);  // two objects are still allocated by A
}

TEST_CASE("central list: a span is returned when all its objects come back", "[simulate]") {
  // 32 KiB objects: one per 4-page span. Allocate 3 (three spans), free all
  // on a thread without a cache: each goes straight to its span, which is
  // then empty and returns to the page heap.
  Recorder rec;
  TcmallocModel model(TcmallocConfig(), &rec);
  const int cl = model.size_map().SizeClass(32768);
  int a = model.CreateHeap();
  std::vector<uint32_t> objects;
  for (int i = 0; i < 3; ++i) objects.push_back(model.Allocate(a, cl));
  CHECK(model.live_spans(cl) == 3);
  CHECK(rec.calls.size() == 3);
  CHECK(rec.calls[1].wanted == 2);
  CHECK(rec.calls[1].objects == 1);  // short: the span had one object
  for (uint32_t o : objects) model.DeallocateToCentral(cl, o);
  CHECK(model.live_spans(cl) == 0);
}

}  // namespace
}  // namespace crossfree::analyzer::simulate
