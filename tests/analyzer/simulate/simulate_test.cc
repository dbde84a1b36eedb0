// SPDX-License-Identifier: Apache-2.0
// Simulate tests: replays of synthetic traces whose central free-list
// transfers are derived by hand from the model's rules (gperftools 2.10
// src/thread_cache.{h,cc}; see docs/guide/simulate.md). Each derivation is in a
// comment beside the expected numbers.
#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/render/json.h"
#include "analyzer/render/text.h"
#include "analyzer/simulate/simulate.h"
#include "tests/analyzer/simulate/simulate_fixture.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer::simulate {

// For the failure messages of the checks that compare whole TransferCounts.
std::ostream& operator<<(std::ostream& os, const TransferCounts& c) {
  return os << fmt::format(
             "{{allocations {}, frees {}, large_allocations {}, fetch_calls {}, fetched_objects {}, "
             "short_fetches {}, release_calls {}, released_objects {}, by cause {}/{}/{}, "
             "direct_central_frees {}}}",
             c.allocations, c.frees, c.large_allocations, c.fetch_calls, c.fetched_objects,
             c.short_fetches, c.release_calls, c.released_objects, c.release_calls_by_cause[0],
             c.release_calls_by_cause[1], c.release_calls_by_cause[2], c.direct_central_frees);
}

// The models are checked as the renderers print them.
using namespace crossfree::analyzer::render;
namespace {

using analyzer::testing::SyntheticTrace;

SimulationResult Run(SyntheticTrace& builder, const SimulateOptions& options = SimulateOptions()) {
  return testing::RunSimulation(builder, options);
}

const GroupResult& Group(const SimulationResult& r, const std::string& name) {
  return testing::GroupNamed(r.groups, name);
}

// One row of fetch_sites or release_sites.
void CheckSite(const SiteTransfers& s, const std::string& group, const std::string& key,
               uint64_t calls, uint64_t objects) {
  INFO("site " << key << " of " << group);
  CHECK(s.group == group);
  CHECK(s.site.key == key);
  CHECK(s.calls == calls);
  CHECK(s.objects == objects);
}

constexpr uint32_t kPid = 100;
constexpr uint64_t kBase = 0x10000000;

TEST_CASE("one thread allocating and freeing one 32-byte object 1000 times: 1 fetch, 0 releases",
          "[simulate]") {
  // The first allocation finds the list empty and fetches min(max_length=1,
  // batch=32) = 1 object (max_length becomes 2). Every free pushes it back
  // (length 1 <= max_length 2, 32 bytes < the 64 KiB budget) and every
  // later allocation pops it: no other transfer.
  SyntheticTrace b(kPid);
  for (uint64_t i = 0; i < 1000; ++i) {
    b.Alloc(kPid, 10 + 2 * i, kBase, 32);
    b.Free(kPid, 11 + 2 * i, kBase);
  }
  SimulationResult r = Run(b);
  CHECK(r.totals ==
        TransferCounts{.allocations = 1000, .frees = 1000, .fetch_calls = 1, .fetched_objects = 1});
  REQUIRE(r.groups.size() == 1);
  CHECK(r.groups[0].name == "main");
  CHECK(r.groups[0].by_class.size() == 1);
}

// Producer (tid 101) allocates N = 1000 objects of 32 bytes (class 32,
// batch 32); consumer (tid 102) frees all of them. The consumer first
// allocates one 1024-byte object, so it has a thread cache. Both exit at
// the end.
SyntheticTrace ProducerConsumer(bool consumer_has_cache) {
  SyntheticTrace b(kPid);
  b.ThreadName(101, 1, "producer-1");
  b.ThreadName(102, 1, "consumer-7");
  b.Stack(101, 1, {0x1000});
  b.Stack(102, 2, {0x2000});
  b.Stack(102, 3, {0x3000});
  if (consumer_has_cache) b.Alloc(102, 5, kBase - 4096, 1024, 3);
  for (uint64_t i = 0; i < 1000; ++i) b.Alloc(101, 10 + i, kBase + 32 * i, 32, 1);
  for (uint64_t i = 0; i < 1000; ++i) b.Free(102, 2000 + i, kBase + 32 * i, 2);
  b.ThreadExit(101, 5000);
  b.ThreadExit(102, 5001);
  return b;
}

TEST_CASE("producer/consumer: fetches and releases follow the slow start", "[simulate]") {
  SyntheticTrace b = ProducerConsumer(true);
  SimulationResult r = Run(b);

  // Producer, fetches: max_length starts at 1 and grows by one per fetch up
  // to the batch (32), so fetch k asks for min(k, 32) objects. The central
  // list carves 256-object spans (one 8 KiB page of 32-byte objects) and
  // carves a new one only when no span has a free object, so a fetch that
  // reaches the end of a span comes back short:
  //   span 1: fetches 1..22 take 1+...+22 = 253, fetch 23 gets the last 3;
  //   span 2: fetches 24..32 take 24+...+32 = 252, fetch 33 gets the last 4;
  //   span 3: fetches 34..41 take 8 x 32; span 4: fetches 42..49, 8 x 32.
  // After fetch 48, 992 objects < 1000 allocations; fetch 49 brings 1024.
  // So 49 fetches (2 short), 1024 objects; the 24 left in the list go back
  // in one release at thread exit. It frees nothing.
  const GroupResult& p = Group(r, "producer-N");
  CHECK(p.counts == TransferCounts{.allocations = 1000, .fetch_calls = 49, .fetched_objects = 1024,
                                   .short_fetches = 2, .release_calls = 1, .released_objects = 24,
                                   .release_calls_by_cause = {0, 0, 1}});

  // Consumer, releases: its class-32 list starts with max_length 1. With
  // max_length m < 32 the list overflows at length m+1: ListTooLong
  // releases all m+1 objects (min(batch, length)) and m grows by one. For
  // m = 1..31 that is 31 releases of 2+3+...+32 = 527 objects, after 527
  // frees. With m = 32 the list overflows at 33 and releases 32, keeping 1:
  // one release after 33 more frees (560 so far), then one per 32 frees:
  // 440 = 13*32 + 24 frees left give 13 releases. ListTooLong: 31+1+13 =
  // 45 calls, 527 + 32 + 416 = 975 objects; 1 + 24 = 25 objects remain and
  // leave at thread exit (1 call). The 1024-byte list is empty (its one
  // object is still allocated). The cache stays far below 64 KiB: no
  // scavenge. Its one allocation fetched 1 object.
  const GroupResult& c = Group(r, "consumer-N");
  CHECK(c.counts == TransferCounts{.allocations = 1, .frees = 1000, .fetch_calls = 1,
                                   .fetched_objects = 1, .release_calls = 46,
                                   .released_objects = 1000, .release_calls_by_cause = {45, 0, 1}});
  CHECK(c.by_class.at(SizeMap().SizeClass(32)).release_calls == 46);

  CHECK(r.totals.fetch_calls == 50);
  CHECK(r.totals.release_calls == 47);

  // Sites: the producer's allocation site fetched 49 times; the consumer's
  // free site released 45 times; thread exits have no site.
  REQUIRE(r.fetch_sites.size() == 2);
  CheckSite(r.fetch_sites[0], "producer-N", "Site0x1000", 49, 1024);
  CHECK(r.fetch_sites[1].site.key == "Site0x3000");
  REQUIRE(r.release_sites.size() == 3);
  CheckSite(r.release_sites[0], "consumer-N", "Site0x2000", 45, 975);
  CHECK(r.release_sites[1].site.key == "(thread exit)");
}

TEST_CASE("producer/consumer: a consumer without a thread cache frees straight to the central list",
          "[simulate]") {
  // tcmalloc.cc do_free_with_callback: no cache -> InsertRange, no
  // ReleaseToCentralCache call.
  SyntheticTrace b = ProducerConsumer(false);
  SimulationResult r = Run(b);
  const GroupResult& c = Group(r, "consumer-N");
  CHECK(c.counts.release_calls == 0);
  CHECK(c.counts.direct_central_frees == 1000);
  CHECK(Group(r, "producer-N").counts.fetch_calls == 49);
}

// One thread allocates 100 objects of 32 KiB (batch 2), then frees them.
SyntheticTrace BudgetTrace() {
  SyntheticTrace b(kPid);
  for (uint64_t i = 0; i < 100; ++i) b.Alloc(kPid, 10 + i, kBase + 32768 * i, 32768);
  for (uint64_t i = 0; i < 100; ++i) b.Free(kPid, 1000 + i, kBase + 32768 * i);
  return b;
}

TEST_CASE("budget: a smaller --max-total-thread-cache-bytes gives more releases", "[simulate]") {
  // Allocations: a 32 KiB span (4 pages) holds one object, so every fetch
  // gets one object (fetches 2..100 ask for a batch of 2 and come back
  // short): 100 fetches, 100 objects, the list stays empty, max_length
  // ends at 2 + 2*99 = 200, low-water mark 0. Sizes below in units of
  // 32 KiB; the cache budget starts at 2 units (64 KiB) and every scavenge
  // adds 2 while unclaimed space remains. Frees never overflow the list
  // (max_length stays >= 158), so every release is a scavenge, which runs
  // when length >= budget, drops lowater/2 (1 if lowater is 1, none if 0)
  // and sets lowater = length.
  //
  // 32 MiB (default): scavenges at lengths 2,4,6,8,10,12,14,16,18,20,22,
  // 24,26,28,30 (after frees 2,4,7,10,14,19,24,30,37,44,52,61,70,80,91),
  // dropping 0,1,1,2,3,3,4,5,5,6,7,7,8,9,9: 14 release calls, 70 objects.
  //
  // 512 KiB (the minimum): the same until the budget reaches 16 units
  // after the 7th scavenge (8 x 64 KiB claimed, nothing unclaimed, no other
  // heap to steal from). From then on the list scavenges at 16, keeping 11:
  // the 8th scavenge (free 30) drops 5, then every 5 frees (35, 40, ...,
  // 100: 14 more) drops 5. 21 release calls, 1+1+2+3+3+4+5 + 14*5 = 89
  // objects.
  SimulateOptions options;
  SyntheticTrace big = BudgetTrace();
  SimulationResult r_big = Run(big, options);
  CHECK(r_big.totals.fetch_calls == 100);
  CHECK(r_big.totals.fetched_objects == 100);
  CHECK(r_big.totals.short_fetches == 99);
  CHECK(r_big.totals.release_calls == 14);
  CHECK(r_big.totals.release_calls_by_cause[1] == 14);
  CHECK(r_big.totals.released_objects == 70);

  options.model.gperftools.max_total_thread_cache_bytes = 512 * 1024;
  SyntheticTrace small = BudgetTrace();
  SimulationResult r_small = Run(small, options);
  CHECK(r_small.totals.fetch_calls == 100);
  CHECK(r_small.totals.fetched_objects == 100);
  CHECK(r_small.totals.release_calls == 21);
  CHECK(r_small.totals.release_calls_by_cause[1] == 21);
  CHECK(r_small.totals.released_objects == 89);
}

TEST_CASE("large allocations bypass the thread cache, reallocs follow tcmalloc's rules",
          "[simulate]") {
  SyntheticTrace b(kPid);
  b.Alloc(kPid, 10, kBase, 300000);  // > 256 KiB: page heap
  b.Free(kPid, 11, kBase);
  // realloc 100 -> 120 bytes in a new block: old class 112, 120 > 112 and
  // 120 < 112 + 28, so tcmalloc allocates 140 bytes (class 144): the fetch
  // is in class 144, then the old block (class 112) is freed.
  b.Alloc(kPid, 20, kBase + 4096, 100);
  b.Realloc(kPid, 21, 22, kBase + 4096, kBase + 8192, 120);
  // In place: no cache work.
  b.Realloc(kPid, 23, 24, kBase + 8192, kBase + 8192, 130);
  b.Free(kPid, 25, kBase + 0x999000);  // never allocated: skipped
  SimulationResult r = Run(b);
  CHECK(r.totals.large_allocations == 1);
  CHECK(r.totals.allocations == 3);
  CHECK(r.totals.frees == 2);
  CHECK(r.totals.fetch_calls == 2);
  CHECK(r.unknown_frees == 1);
  CHECK(r.inplace_reallocs == 1);
  const GroupResult& g = Group(r, "main");
  SizeMap map;
  CHECK(g.by_class.at(map.SizeClass(112)).fetch_calls == 1);
  CHECK(g.by_class.at(map.SizeClass(144)).fetch_calls == 1);
  CHECK(map.ClassSize(map.SizeClass(140)) == 144);
}

TEST_CASE("JSON output carries per-group counts for comparison scripts", "[simulate]") {
  SyntheticTrace b = ProducerConsumer(true);
  SimulateOptions options;
  SimulationResult r = Run(b, options);
  std::string json = RenderSimulationJson(r, options);
  CHECK(json.find("\"name\": \"producer-N\", \"threads\": 1, \"allocations\": 1000") !=
        std::string::npos);
  CHECK(json.find("\"fetch_calls\": 49, \"fetched_objects\": 1024, \"short_fetches\": 2") !=
        std::string::npos);
  CHECK(json.find("\"release_calls_by_cause\": {\"list_too_long\": 45, \"scavenge\": 0, "
                  "\"thread_exit\": 1}") != std::string::npos);
  std::string text = RenderSimulationText(r, options);
  CHECK(text.find("50 fetches (1,025 objects; 2 short), 47 releases (1,024 objects)") != std::string::npos);
}

}  // namespace
}  // namespace crossfree::analyzer::simulate
