// SPDX-License-Identifier: Apache-2.0
// Simulate tests: the jemalloc, glibc and mimalloc cost models driven
// directly with operation sequences whose costs follow from the models'
// rules by hand (docs/guide/simulate.md; the derivation is beside each
// expectation), and their size classes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/simulate/allocator_model.h"
#include "analyzer/simulate/allocators.h"
#include "analyzer/simulate/jemalloc_model.h"

namespace crossfree::analyzer::simulate {
namespace {

// Sums what the model reports, per kind (all classes) and per class.
class Recorder : public CostSink {
 public:
  void OnCost(CostKind kind, int cl, uint64_t count, uint64_t objects) override {
    for (CostCounts* c : {&total, &by_class[cl]}) {
      c->n[static_cast<int>(kind)] += count;
      if (kind == CostKind::kRefill) c->refilled_objects += objects;
      if (kind == CostKind::kFlush) c->flushed_objects += objects;
    }
  }
  void Reset() { *this = Recorder(); }
  CostCounts total;
  std::map<int, CostCounts> by_class;
};

std::unique_ptr<AllocatorModel> Make(const std::string& name, Recorder* sink,
                                     ModelSettings settings = ModelSettings()) {
  if (settings.cpus == 0) settings.cpus = 2;
  std::string error;
  const AllocatorEntry* allocator = FindAllocator(name);
  REQUIRE(allocator);
  auto m = MakeAllocatorModel(*allocator, settings, sink, &error);
  REQUIRE(m);
  return m;
}

// Expected costs of a step; a field left empty is not checked.
struct Costs {
  std::optional<uint64_t> refill = {}, flush = {}, lock = {}, remote_free = {}, atomic = {},
                          refilled_objects = {}, flushed_objects = {};
};

// Each expected cost against got (one CHECK per field given, so a failure
// names the kind and both values).
void CheckCosts(const CostCounts& got, const Costs& want) {
  auto check = [](const char* what, const std::optional<uint64_t>& w, uint64_t value) {
    if (!w) return;
    INFO(what);
    CHECK(value == *w);
  };
  check("refills", want.refill, got[CostKind::kRefill]);
  check("flushes", want.flush, got[CostKind::kFlush]);
  check("locks", want.lock, got[CostKind::kLock]);
  check("remote frees", want.remote_free, got[CostKind::kRemoteFree]);
  check("atomics", want.atomic, got[CostKind::kAtomic]);
  check("refilled objects", want.refilled_objects, got.refilled_objects);
  check("flushed objects", want.flushed_objects, got.flushed_objects);
}

// Thread 0, the main thread, and thread 1 start (in that order).
void StartMainAndOne(AllocatorModel& m) {
  m.ThreadStart(0, true);
  m.ThreadStart(1, false);
}

// n allocations of `size` bytes (class cl) on thread 0; their objects.
std::vector<uint64_t> AllocateOnMain(AllocatorModel& m, int cl, uint64_t size, int n) {
  std::vector<uint64_t> objects;
  for (int i = 0; i < n; ++i) objects.push_back(m.Allocate(0, cl, size));
  return objects;
}

TEST_CASE("jemalloc size classes: small bins, large classes, and back", "[simulate]") {
  CHECK(JemallocSizeIndex(0) == 0);
  CHECK(JemallocSizeIndex(8) == 0);
  CHECK(JemallocSizeIndex(9) == 1);
  CHECK(JemallocSizeIndex(512) == 16);
  CHECK(JemallocSizeIndex(513) == 17);
  CHECK(JemallocSizeIndex(14336) == 35);
  CHECK(JemallocSizeIndex(14337) == 36);
  CHECK(JemallocIndexSize(36) == 16384);
  CHECK(JemallocSizeIndex(16385) == 37);
  CHECK(JemallocIndexSize(37) == 20480);
  CHECK(JemallocSizeIndex(32768) == 40);
  CHECK(JemallocIndexSize(41) == 40960);
  for (int i = 0; i < 80; ++i) {
    INFO("index " << i);
    CHECK(JemallocSizeIndex(JemallocIndexSize(i)) == i);
    CHECK(JemallocSizeIndex(JemallocIndexSize(i) + 1) == i + 1);
  }
}

TEST_CASE("jemalloc: fills of half the bin, a remote flush to the owner's bin, thread exit",
          "[simulate]") {
  Recorder r;
  // Every thread gets its tcache at its first operation, as in a run where
  // something untraced allocates on every thread (recorded under attach).
  ModelSettings s;
  s.cache_from_first_event = true;
  auto m = Make("jemalloc", &r, s);
  const int cl = m->SizeClass(16);
  REQUIRE(cl == 1);
  // Thread 0 (main) gets arena 0; thread 1 finds arena 0 taken and the next
  // one uninitialized: arena 1.
  StartMainAndOne(*m);
  // The 16-byte bin: 256 regions per slab, ncached_max = min(2 x 256, 200)
  // = 200, a fill brings 200 >> lg_fill_div (1) = 100. 201 allocations:
  // fill 1 (fresh slab: 2 locks), fill 2 (same slab, 156 left: 1 lock),
  // fill 3 (56 left, then a fresh slab: 2 locks). 201 x 16 bytes stay far
  // below the 64 KiB GC interval, so lg_fill_div stays 1.
  std::vector<uint64_t> objects = AllocateOnMain(*m, cl, 16, 201);
  CheckCosts(r.total, {.refill = 3, .flush = 0, .lock = 5, .refilled_objects = 300});
  // Thread 1 frees them all: every free is remote (arena 0's objects). The
  // 201st finds 200 cached and flushes down to 200 >> 1 = 100: the 100
  // oldest go to arena 0's bin (1 lock), and as none was its own arena's
  // object, one more lock of its own bin for the statistics.
  r.Reset();
  for (uint64_t o : objects) {
    CHECK(m->IsRemote(1, o));
    m->Free(1, cl, o);
  }
  CheckCosts(r.total, {.flush = 1, .lock = 2, .remote_free = 201, .flushed_objects = 100});
  // Thread exit: every one of the 41 bins (36 small, 5 large up to 32 KiB)
  // is flushed; the 16-byte bin's 101 objects take arena 0's lock and its
  // own for the statistics (2), each other small bin only its own (35);
  // large bins take no bin lock. Then the statistics merge locks every
  // small bin once (36).
  r.Reset();
  m->ThreadExit(1);
  CheckCosts(r.total, {.flush = 41, .lock = 2 + 35 + 36, .flushed_objects = 101});
  // The main thread's exit flushes nothing (exit() runs no destructors).
  r.Reset();
  m->ThreadExit(0);
  CHECK(r.total.Total() == 0);
  CHECK(r.total[CostKind::kFlush] == 0);
}

TEST_CASE("jemalloc: a thread that only frees has no tcache: each free locks the owner's bin",
          "[simulate]") {
  Recorder r;
  auto m = Make("jemalloc", &r);
  const int cl = m->SizeClass(16);
  StartMainAndOne(*m);
  // 201 allocations on the main thread: 3 fills, as in the test above.
  std::vector<uint64_t> objects = AllocateOnMain(*m, cl, 16, 201);
  CHECK(r.total[CostKind::kRefill] == 3);
  // Thread 1 never allocated: a minimal tsd, no tcache. Each free goes to
  // arena 0's bin under its lock: 201 locks, no flush; all remote.
  r.Reset();
  for (uint64_t o : objects) m->Free(1, cl, o);
  CheckCosts(r.total, {.flush = 0, .lock = 201, .remote_free = 201});
  // Its exit has nothing to flush and no statistics to merge.
  r.Reset();
  m->ThreadExit(1);
  CHECK(r.total[CostKind::kFlush] == 0);
  CHECK(r.total.Total() == 0);
  // Its first allocation makes it nominal: arena 1 (arena 0 has the main
  // thread), its tcache, and a fill of 100 from a fresh slab of arena 1
  // (2 locks); its frees then stay in its tcache.
  m->ThreadStart(2, false);
  r.Reset();
  uint64_t o = m->Allocate(2, cl, 16);
  CheckCosts(r.total, {.refill = 1, .lock = 2, .refilled_objects = 100});
  CHECK_FALSE(m->IsRemote(2, o));
  r.Reset();
  m->Free(2, cl, o);
  CHECK(r.total.Total() == 0);
}

TEST_CASE("jemalloc: MALLOC_CONF settings change the bins and are refused when malformed",
          "[simulate]") {
  Recorder r;
  ModelSettings s;
  s.malloc_conf = "tcache_nslots_small_max:20,stats_print:true";
  auto m = Make("jemalloc", &r, s);
  m->ThreadStart(0, true);
  // ncached_max 20: a fill brings 10; 25 allocations need 3 fills.
  for (int i = 0; i < 25; ++i) m->Allocate(0, 1, 16);
  CheckCosts(r.total, {.refill = 3, .refilled_objects = 30});
  bool ignored_listed = false;
  for (const auto& [k, v] : m->Settings()) ignored_listed |= k == "ignored" && v == "stats_print";
  CHECK(ignored_listed);
  std::string error;
  ModelSettings bad;
  bad.malloc_conf = "narenas:many";
  CHECK_FALSE(MakeAllocatorModel(*FindAllocator("jemalloc"), bad, &r, &error));
  CHECK(error == "MALLOC_CONF: narenas:many is not a number");
  bad.malloc_conf = "percpu_arena:percpu";
  CHECK_FALSE(MakeAllocatorModel(*FindAllocator("jemalloc"), bad, &r, &error));
  CHECK_FALSE(FindAllocator("tcmalloc"));
}

TEST_CASE("glibc: tcache of 7, a fastbin refill, a free-only thread's tcache", "[simulate]") {
  Recorder r;
  auto m = Make("glibc", &r);
  const int cl = m->SizeClass(24);  // 32-byte chunk: a fastbin size
  CHECK(cl == 2);
  CHECK(m->ClassSize(cl) == 24);
  StartMainAndOne(*m);
  // 8 allocations on an empty tcache: the first malloc allocates the tcache
  // itself with _int_malloc under the arena lock (1), then each goes to
  // _int_malloc under the lock (8), one object each (no free chunk anywhere).
  std::vector<uint64_t> objects = AllocateOnMain(*m, cl, 24, 8);
  CheckCosts(r.total, {.refill = 9, .lock = 9, .refilled_objects = 9});
  // Freed on the same thread: 7 fill the tcache bin, the 8th goes to the
  // arena's fastbin with a CAS (no lock).
  r.Reset();
  for (uint64_t o : objects) m->Free(0, cl, o);
  CheckCosts(r.total, {.flush = 1, .lock = 0, .remote_free = 0, .atomic = 1});
  // 8 allocations again: 7 from the tcache, the 8th takes the fastbin's one
  // chunk under the lock (nothing left to stash).
  r.Reset();
  objects = AllocateOnMain(*m, cl, 24, 8);
  CheckCosts(r.total, {.refill = 1, .lock = 1, .refilled_objects = 1});
  // Thread 1 never allocated. __libc_free runs MAYBE_INIT_TCACHE: its first
  // free gets it an arena (a new one: arena 1) and its tcache, allocated
  // there with _int_malloc under the lock (1 refill, 1 lock); the chunk,
  // arena 0's, goes into that tcache (a remote free, no flush).
  r.Reset();
  m->Free(1, cl, objects[0]);
  CheckCosts(r.total, {.refill = 1, .flush = 0, .lock = 1, .remote_free = 1});
  // 8 frees of 200-byte chunks of arena 0: 7 fill thread 1's bin, the 8th
  // goes into arena 0 under its lock (above the fastbin limit).
  std::vector<uint64_t> big = AllocateOnMain(*m, m->SizeClass(200), 200, 8);
  r.Reset();
  for (uint64_t o : big) m->Free(1, m->SizeClass(200), o);
  CheckCosts(r.total, {.flush = 1, .lock = 1, .remote_free = 8, .atomic = 0});
  // calloc bypasses the tcache: with 7 cached chunks it still goes to
  // _int_malloc (and, the fastbin being empty, gets one chunk).
  r.Reset();
  for (int i = 0; i < 7; ++i) m->Free(0, cl, objects[i + 1]);
  m->NextAllocation(AllocatorModel::AllocPath::kCalloc);
  m->Allocate(0, cl, 24);
  CheckCosts(r.total, {.refill = 1, .lock = 1});
  // GLIBC_TUNABLES: no tcache at all, every free goes to the arena.
  Recorder r0;
  ModelSettings s;
  s.glibc_tunables = "glibc.malloc.tcache_count=0";
  auto m0 = Make("glibc", &r0, s);
  m0->ThreadStart(0, true);
  uint64_t o = m0->Allocate(0, cl, 24);
  m0->Free(0, cl, o);
  CHECK(r0.total[CostKind::kFlush] == 1);
}

TEST_CASE("mimalloc: a page extends 4 KiB at a time, remote frees are one CAS each",
          "[simulate]") {
  Recorder r;
  auto m = Make("mimalloc", &r);
  const int cl = m->SizeClass(16);
  CHECK(m->ClassSize(cl) == 16);
  StartMainAndOne(*m);
  // A 64 KiB page of 16-byte blocks is extended by 4 KiB / 16 = 256 blocks
  // per generic call: 1000 allocations need 4 of them.
  std::vector<uint64_t> objects = AllocateOnMain(*m, cl, 16, 1000);
  CheckCosts(r.total, {.refill = 4, .lock = 0, .refilled_objects = 1024});
  // Thread 1 frees 10 of them: the page is not full, so each is one CAS
  // onto its thread-free list.
  r.Reset();
  for (int i = 0; i < 10; ++i) m->Free(1, cl, objects[i]);
  CheckCosts(r.total, {.remote_free = 10, .atomic = 10});
  // The owner frees 10 locally: nothing shared.
  r.Reset();
  for (int i = 10; i < 20; ++i) m->Free(0, cl, objects[i]);
  CHECK(r.total.Total() == 0);
  CHECK(r.total[CostKind::kRemoteFree] == 0);
  // The 24 extended blocks left serve 24 allocations; the 25th is a generic
  // call: it collects the thread-free list (one atomic exchange) and, the
  // free list being empty, takes the local free list: 10 + 10 blocks, no
  // extension.
  r.Reset();
  for (int i = 0; i < 25; ++i) m->Allocate(0, cl, 16);
  CheckCosts(r.total, {.refill = 1, .atomic = 1, .refilled_objects = 20});
}

TEST_CASE("mimalloc: a request above 1 KiB takes _mi_malloc_generic every time", "[simulate]") {
  Recorder r;
  auto m = Make("mimalloc", &r);
  const int cl = m->SizeClass(1500);
  CHECK(m->ClassSize(cl) == 1536);
  m->ThreadStart(0, true);
  // mi_malloc's fast path stops at MI_SMALL_SIZE_MAX (1 KiB): 3 requests of
  // 1500 bytes are 3 generic calls, although the first extension (4 KiB /
  // 1536 = 2, raised to MI_MIN_EXTEND: 4 blocks) has a block for each.
  for (int i = 0; i < 3; ++i) m->Allocate(0, cl, 1500);
  CHECK(r.total[CostKind::kRefill] == 3);
  // A 1024-byte request of the same page size class range stays on the
  // fast path after its first generic call.
  r.Reset();
  const int small = m->SizeClass(1024);
  for (int i = 0; i < 3; ++i) m->Allocate(0, small, 1024);
  CHECK(r.total[CostKind::kRefill] == 1);
}

TEST_CASE("allocator table: names, the default, the flags each model takes", "[simulate]") {
  CHECK(AllocatorNames() ==
        std::vector<std::string>{"gperftools", "jemalloc", "glibc", "mimalloc"});
  CHECK(&DefaultAllocator() == FindAllocator("gperftools"));
  CHECK(FindAllocator("none") == nullptr);  // report --lifetimes' model is not a choice
  CHECK(std::string(NoAllocator().name) == "none");
  int transfers = 0;
  for (const AllocatorEntry& a : Allocators()) transfers += a.simulates_transfers;
  CHECK(transfers == 1);
  CHECK(FindAllocator("gperftools")->simulates_transfers);

  using F = ModelFlag;
  const AllocatorEntry* jemalloc = FindAllocator("jemalloc");
  const AllocatorEntry* mimalloc = FindAllocator("mimalloc");
  CHECK_FALSE(RefusedFlag(jemalloc, {F::kCpus, F::kMallocConf, F::kCacheFromFirstEvent}));
  // The first refused flag in the caller's order.
  CHECK(RefusedFlag(jemalloc, {F::kCpus, F::kPairs, F::kGlibcTunables}) == F::kPairs);
  CHECK(RefusedFlag(mimalloc, {F::kCacheFromFirstEvent}) == F::kCacheFromFirstEvent);
  // No allocator chosen (report without --allocator): every flag is refused.
  CHECK(RefusedFlag(nullptr, {F::kCpus}) == F::kCpus);
  CHECK_FALSE(RefusedFlag(nullptr, {}));
  CHECK(OnlyAllocatorTaking(F::kMallocConf) == jemalloc);
  CHECK(OnlyAllocatorTaking(F::kGlibcTunables) == FindAllocator("glibc"));
  CHECK(OnlyAllocatorTaking(F::kCpus) == nullptr);
  CHECK(std::string(ModelFlagName(F::kMaxTotalThreadCacheBytes)) ==
        "--max-total-thread-cache-bytes");

  // Every listed model builds from default settings and names itself.
  Recorder r;
  for (const AllocatorEntry& a : Allocators()) {
    std::string error;
    auto m = MakeAllocatorModel(a, ModelSettings(), &r, &error);
    REQUIRE(m);
    CHECK(m->Allocator().rfind(a.name, 0) == 0);  // "jemalloc-5.3.0"
  }
}

}  // namespace
}  // namespace crossfree::analyzer::simulate
