// SPDX-License-Identifier: Apache-2.0
// Simulate: jemalloc 5.3.0 (Debian's libjemalloc2), what its thread caches
// (tcache) and arena bins do, learned from jemalloc 5.3.0's src/tcache.c
// (tcache_ncached_max_compute, tcache_alloc_small_hard, tcache_dalloc_small,
// tcache_bin_flush_impl, tcache_gc_event_handler, tcache_gc_small/large,
// tcache_destroy, tcache_stats_merge), src/arena.c
// (arena_cache_bin_fill_small, arena_dalloc_bin_locked_step,
// arena_bin_lower_slab), src/jemalloc.c (arena_choose_hard) and
// src/thread_event.c (the tcache_gc events). Own code; what it keeps and
// leaves out: docs/guide/simulate.md.
//
// Costs reported:
//  - refill: one arena_cache_bin_fill_small call (the bin's `nfills`), or a
//    large tcache bin's miss (one object from the arena);
//  - flush: one tcache_bin_flush_small/large call (the bin's `nflushes`:
//    on a full bin at a free, at GC, and for every bin at thread exit);
//  - lock: one acquisition of a bin mutex (a fill, plus one per fresh slab;
//    a flush, once per arena its objects belong to, plus once on its own
//    arena's bin when none did, for the statistics; thread exit's
//    statistics merge, once per small bin), or of an arena's extent
//    structures (a large allocation or free that no tcache serves);
//  - remote free: a free of an object of another arena than the freeing
//    thread's (it waits in the tcache; the flush takes the owner's lock),
//    or any free by a thread that has no tcache yet (it locks the owner's
//    bin at once).
// A thread gets its tcache and arena at its first allocation: free_default
// and sdallocx_default fetch only a minimal tsd (no tcache, no arena), so a
// thread that only frees sends every free straight to the owning arena's
// bin, and its exit flushes nothing.
#include "analyzer/simulate/jemalloc_model.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>
#include <vector>

#include "analyzer/simulate/id_pool.h"

namespace crossfree::analyzer::simulate {
namespace {

// bin_infos of Debian's libjemalloc2 on x86-64 (4 KiB pages, 16-byte
// quantum): region size and regions per slab, as its stats print them.
struct BinInfo {
  uint32_t size;
  uint32_t nregs;
};
constexpr BinInfo kBins[kJemallocSmallBins] = {
    {8, 512},    {16, 256},   {32, 128},   {48, 256},   {64, 64},    {80, 256},
    {96, 128},   {112, 256},  {128, 32},   {160, 128},  {192, 64},   {224, 128},
    {256, 16},   {320, 64},   {384, 32},   {448, 64},   {512, 8},    {640, 32},
    {768, 16},   {896, 32},   {1024, 4},   {1280, 16},  {1536, 8},   {1792, 16},
    {2048, 2},   {2560, 8},   {3072, 4},   {3584, 8},   {4096, 1},   {5120, 4},
    {6144, 2},   {7168, 4},   {8192, 1},   {10240, 2},  {12288, 1},  {14336, 2}};
constexpr uint64_t kSmallMax = 14336;
constexpr uint64_t kTcacheMaxLimit = 8 << 20;  // TCACHE_MAXCLASS_LIMIT
constexpr unsigned kNcachedMaxLimit = 0xffff >> 1;  // CACHE_BIN_NCACHED_MAX (2^15 - 1)
constexpr unsigned kMaxArenas = 4095;  // MALLOCX_ARENA_LIMIT - 1
// Large handles: the top bit set, the owning arena in the low bits.
constexpr uint64_t kLargeBit = uint64_t{1} << 63;

int LgFloor(uint64_t x) { return 63 - __builtin_clzll(x); }

}  // namespace

int JemallocSizeIndex(uint64_t size) {
  if (size == 0) size = 1;
  if (size <= kSmallMax) {
    // Small classes grow by at most 2 KiB: a short scan is fine, but a
    // binary search keeps the hot path flat.
    int lo = 0, hi = kJemallocSmallBins - 1;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (kBins[mid].size >= size) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }
  // Above 16 KiB: four classes per doubling, 2^g + k * 2^(g-2), k = 1..4.
  int g = LgFloor(size - 1);
  uint64_t delta = uint64_t{1} << (g - 2);
  uint64_t k = (size - (uint64_t{1} << g) + delta - 1) / delta;
  return kJemallocSmallBins + (g - 13) * 4 + static_cast<int>(k) - 4;
}

uint64_t JemallocIndexSize(int index) {
  if (index < kJemallocSmallBins) return kBins[index].size;
  int rel = index - kJemallocSmallBins + 3;  // 16 KiB is k = 4 of g = 13
  int g = 13 + rel / 4;
  int k = rel % 4 + 1;
  return (uint64_t{1} << g) + static_cast<uint64_t>(k) * (uint64_t{1} << (g - 2));
}

bool ParseMallocConf(const std::string& conf, JemallocConfig* c, std::string* error) {
  std::vector<Setting> pairs;
  if (!SplitSettings(conf, ',', ':', "MALLOC_CONF", "key:value", &pairs, error)) return false;
  for (const auto& [key, value] : pairs) {
    auto number = [&](auto* out) {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), *out);
      if (ec != std::errc() || p != value.data() + value.size()) {
        *error = fmt::format("MALLOC_CONF: {}:{} is not a number", key, value);
        return false;
      }
      return true;
    };
    bool ok = true;
    // A numeric key: true when key is name (ok says whether it parsed).
    auto numeric = [&](const char* name, auto* field) {
      if (key != name) return false;
      ok = number(field);
      return true;
    };
    if (numeric("narenas", &c->narenas) ||
        numeric("tcache_nslots_small_min", &c->tcache_nslots_small_min) ||
        numeric("tcache_nslots_small_max", &c->tcache_nslots_small_max) ||
        numeric("tcache_nslots_large", &c->tcache_nslots_large) ||
        numeric("lg_tcache_nslots_mul", &c->lg_tcache_nslots_mul) ||
        numeric("tcache_gc_incr_bytes", &c->tcache_gc_incr_bytes) ||
        numeric("tcache_gc_delay_bytes", &c->tcache_gc_delay_bytes) ||
        numeric("lg_tcache_flush_small_div", &c->lg_tcache_flush_small_div) ||
        numeric("lg_tcache_flush_large_div", &c->lg_tcache_flush_large_div)) {
      // set above
    } else if (key == "tcache") {
      if (value != "true" && value != "false") {
        *error = fmt::format("MALLOC_CONF: tcache:{} is not true or false", value);
        return false;
      }
      c->tcache = value == "true";
    } else if (key == "tcache_max" || key == "lg_tcache_max") {
      uint64_t v = 0;
      ok = number(&v);
      if (ok && key == "lg_tcache_max") v = v >= 63 ? kTcacheMaxLimit : uint64_t{1} << v;
      c->tcache_max = std::min(v, kTcacheMaxLimit);
    } else if (key == "percpu_arena" && value != "disabled") {
      *error = fmt::format("MALLOC_CONF: percpu_arena:{} is not modelled (only disabled)", value);
      return false;
    } else {
      if (!c->ignored.empty()) c->ignored += ",";
      c->ignored += key;
    }
    if (!ok) return false;
  }
  if (c->lg_tcache_flush_small_div > 16 || c->lg_tcache_flush_large_div > 16) {
    *error = "MALLOC_CONF: lg_tcache_flush_*_div above 16";
    return false;
  }
  if (c->lg_tcache_nslots_mul < -16 || c->lg_tcache_nslots_mul > 16) {
    *error = "MALLOC_CONF: lg_tcache_nslots_mul out of [-16, 16]";
    return false;
  }
  return true;
}

namespace {

class JemallocModel : public AllocatorModel {
 public:
  JemallocModel(const JemallocConfig& config, unsigned cpus, bool cache_from_first_event,
                CostSink* sink)
      : c_(config), sink_(sink), cache_from_first_event_(cache_from_first_event) {
    // jemalloc clamps narenas to its arena index limit (MALLOCX_ARENA_LIMIT).
    narenas_ = std::min(c_.narenas ? c_.narenas : 4 * std::min(std::max(cpus, 1u), 4096u),
                        kMaxArenas);
    nhbins_ = c_.tcache ? JemallocSizeIndex(std::max<uint64_t>(c_.tcache_max, 1)) + 1 : 0;
    if (c_.tcache && JemallocIndexSize(nhbins_ - 1) > c_.tcache_max) --nhbins_;
    nhbins_ = std::max(nhbins_, c_.tcache ? kJemallocSmallBins : 0);
    for (int i = 0; i < nhbins_; ++i) ncached_max_.push_back(NcachedMax(i));
    arenas_.resize(narenas_);
  }

  std::string Allocator() const override { return "jemalloc-5.3.0"; }
  std::vector<Setting> Settings() const override {
    std::vector<Setting> s = {
        {"narenas", fmt::format("{}{}", narenas_, c_.narenas ? "" : " (4 x CPUs)")},
        {"tcache", c_.tcache ? "true" : "false"},
        {"tcache_max", fmt::format("{}", c_.tcache_max)},
        {"tcache_nslots_small_min", fmt::format("{}", c_.tcache_nslots_small_min)},
        {"tcache_nslots_small_max", fmt::format("{}", c_.tcache_nslots_small_max)},
        {"tcache_nslots_large", fmt::format("{}", c_.tcache_nslots_large)},
        {"lg_tcache_nslots_mul", fmt::format("{}", c_.lg_tcache_nslots_mul)},
        {"tcache_gc_incr_bytes", fmt::format("{}", c_.tcache_gc_incr_bytes)},
        {"tcache_gc_delay_bytes", fmt::format("{}", c_.tcache_gc_delay_bytes)},
        {"lg_tcache_flush_small_div", fmt::format("{}", c_.lg_tcache_flush_small_div)},
        {"lg_tcache_flush_large_div", fmt::format("{}", c_.lg_tcache_flush_large_div)},
    };
    AddCacheSettings(&s, cache_from_first_event_, "a thread's first allocation", c_.ignored);
    return s;
  }
  Validation validation() const override {
    return {true, false,
            "against jemalloc's statistics (bin nfills, nflushes, mutex operations) of the "
            "recorded run: every total within 3.4% on a producer/consumer, rpc-bench legacy "
            "and fixed, and python3: scripts/validate/simulate --allocator jemalloc, "
            "docs/guide/simulate.md"};
  }

  int SizeClass(uint64_t size) const override { return JemallocSizeIndex(size); }
  uint64_t ClassSize(int cl) const override { return JemallocIndexSize(cl); }

  void ThreadStart(int thread, bool is_main) override {
    if (static_cast<size_t>(thread) >= threads_.size()) threads_.resize(thread + 1);
    Thread& t = threads_[thread];
    t = Thread();
    t.live = true;
    t.main = is_main;
    if (cache_from_first_event_) StartTcache(t);
  }

  uint64_t Allocate(int thread, int cl, uint64_t) override {
    Thread& t = threads_[thread];
    if (!t.nominal) StartTcache(t);
    uint64_t object;
    if (cl < nhbins_) {
      CacheBin& bin = t.bins[cl];
      if (bin.items.empty()) {
        if (cl < kJemallocSmallBins) {
          unsigned nfill = ncached_max_[cl] >> t.lg_fill_div[cl];
          if (nfill == 0) nfill = 1;
          Fill(t, cl, nfill);
          t.refilled[cl] = true;
        } else {
          // tcache_alloc_large: a miss allocates from the arena, no fill.
          sink_->OnCost(CostKind::kRefill, cl, 1, 1);
          sink_->OnCost(CostKind::kLock, cl, 1, 0);
          bin.items.push_back(kLargeBit | static_cast<uint64_t>(t.arena));
        }
      }
      object = bin.items.back();
      bin.items.pop_back();
      bin.low_water = std::min<int>(bin.low_water, static_cast<int>(bin.items.size()));
    } else if (cl < kJemallocSmallBins) {
      // tcache off: arena_malloc_small under the bin lock.
      Fill(t, cl, 1, /*to_cache=*/false);
      object = last_filled_;
    } else {
      sink_->OnCost(CostKind::kLock, cl, 1, 0);  // large_malloc: the arena's extents
      object = kLargeBit | static_cast<uint64_t>(t.arena);
    }
    Tick(t, &t.alloc_bytes, JemallocIndexSize(cl));
    return object;
  }

  void Free(int thread, int cl, uint64_t object) override {
    Thread& t = threads_[thread];
    if (IsRemote(thread, object)) sink_->OnCost(CostKind::kRemoteFree, cl, 1, 0);
    if (!t.nominal) {
      // A minimal tsd: arena_dalloc_no_tcache, under the owner's lock; no
      // thread event counts it.
      sink_->OnCost(CostKind::kLock, cl, 1, 0);
      if (cl < kJemallocSmallBins) {
        uint32_t slab = static_cast<uint32_t>(object);
        DallocSmall(slabs_[slab].arena, cl, slab);
      }
      return;
    }
    if (cl < nhbins_) {
      CacheBin& bin = t.bins[cl];
      if (bin.items.size() >= ncached_max_[cl]) {
        unsigned div = cl < kJemallocSmallBins ? c_.lg_tcache_flush_small_div
                                               : c_.lg_tcache_flush_large_div;
        Flush(t, cl, ncached_max_[cl] >> div);
      }
      bin.items.push_back(object);
    } else if (cl < kJemallocSmallBins) {
      uint32_t slab = static_cast<uint32_t>(object);
      sink_->OnCost(CostKind::kLock, cl, 1, 0);
      DallocSmall(slabs_[slab].arena, cl, slab);
    } else {
      sink_->OnCost(CostKind::kLock, cl, 1, 0);
    }
    Tick(t, &t.dalloc_bytes, JemallocIndexSize(cl));
  }

  void ThreadExit(int thread) override {
    if (static_cast<size_t>(thread) >= threads_.size()) return;
    Thread& t = threads_[thread];
    if (!t.live || t.main) return;
    t.live = false;
    if (!t.nominal) return;  // a minimal tsd: nothing to flush or merge
    // tcache_destroy: tcache_flush_cache (every bin, empty ones too, so
    // each small bin counts a flush), then tcache_stats_merge (each small
    // bin's lock of its arena).
    for (int i = 0; i < nhbins_; ++i) Flush(t, i, 0);
    if (nhbins_ > 0) {
      for (int i = 0; i < kJemallocSmallBins; ++i) sink_->OnCost(CostKind::kLock, i, 1, 0);
    }
    arenas_[t.arena].nthreads -= 1;
    t.nominal = false;
    t.bins.clear();
    t.bins.shrink_to_fit();
  }

  bool IsRemote(int thread, uint64_t object) const override {
    const Thread& t = threads_[thread];
    return !t.nominal || OwnerArena(object) != t.arena;
  }

 private:
  struct Slab {
    uint32_t arena = 0;
    uint16_t bin = 0;
    uint16_t nfree = 0;
    uint64_t sn = 0;  // serial number: older slabs are preferred (edata_snad_comp)
    bool in_nonfull = false;
  };
  struct Bin {
    int64_t slabcur = -1;
    std::set<std::pair<uint64_t, uint32_t>> nonfull;  // (sn, slab), oldest first
  };
  struct Arena {
    bool initialized = false;
    int nthreads = 0;
    std::vector<Bin> bins;
  };
  struct CacheBin {
    std::vector<uint64_t> items;  // back(): next to allocate; front(): oldest (flushed first)
    int low_water = 0;
  };
  struct Thread {
    int arena = 0;  // valid when nominal
    bool live = false;
    bool nominal = false;  // past the minimal tsd: has its arena (and tcache, if enabled)
    bool main = false;
    std::vector<CacheBin> bins;
    std::vector<uint8_t> lg_fill_div;
    std::vector<bool> refilled;
    std::vector<uint8_t> flush_delay;
    int next_gc_bin = 0;
    uint64_t alloc_bytes = 0;   // since the last tcache_gc event
    uint64_t dalloc_bytes = 0;  // since the last tcache_gc_dalloc event
  };

  unsigned NcachedMax(int i) const {
    if (i >= kJemallocSmallBins) return c_.tcache_nslots_large;
    unsigned lo = c_.tcache_nslots_small_min, hi = std::min(c_.tcache_nslots_small_max,
                                                            kNcachedMaxLimit);
    if (lo % 2) ++lo;
    if (hi % 2) --hi;
    lo = std::max(lo, 2u);
    hi = std::max(hi, 2u);
    lo = std::min(lo, hi);
    unsigned nregs = kBins[i].nregs;
    unsigned cand = c_.lg_tcache_nslots_mul < 0 ? nregs >> -c_.lg_tcache_nslots_mul
                                                : nregs << c_.lg_tcache_nslots_mul;
    if (cand % 2) ++cand;
    return cand <= lo ? lo : cand <= hi ? cand : hi;
  }
  uint8_t ItemDelay(int i) const {
    uint64_t d = c_.tcache_gc_delay_bytes / kBins[i].size;
    return static_cast<uint8_t>(std::min<uint64_t>(d, 255));
  }

  // tsd_data_init at the minimal-to-nominal transition: the thread's arena
  // (arena_choose) and its tcache.
  void StartTcache(Thread& t) {
    t.nominal = true;
    t.arena = ChooseArena();
    arenas_[t.arena].nthreads += 1;
    t.bins.resize(nhbins_);
    t.lg_fill_div.assign(kJemallocSmallBins, 1);
    t.refilled.assign(kJemallocSmallBins, false);
    t.flush_delay.assign(kJemallocSmallBins, 0);
    for (int i = 0; i < kJemallocSmallBins && i < nhbins_; ++i) t.flush_delay[i] = ItemDelay(i);
  }

  int ChooseArena() {
    // arena_choose_hard: the first arena with the fewest threads; when
    // that one has threads and an arena is not yet initialized, the first
    // such one.
    if (!arenas_[0].initialized) InitArena(0);
    int choose = 0;
    int first_null = -1;
    for (int i = 0; i < static_cast<int>(narenas_); ++i) {
      if (arenas_[i].initialized) {
        if (arenas_[i].nthreads < arenas_[choose].nthreads) choose = i;
      } else if (first_null < 0) {
        first_null = i;
      }
    }
    if (arenas_[choose].nthreads == 0 || first_null < 0) return choose;
    InitArena(first_null);
    return first_null;
  }
  void InitArena(int a) {
    arenas_[a].initialized = true;
    arenas_[a].bins.resize(kJemallocSmallBins);
  }

  uint32_t NewSlab(uint32_t arena, int bin) {
    uint32_t id = slabs_.Acquire();
    Slab& s = slabs_[id];
    s.arena = arena;
    s.bin = static_cast<uint16_t>(bin);
    s.nfree = static_cast<uint16_t>(kBins[bin].nregs);
    s.sn = ++next_sn_;
    return id;
  }

  // arena_cache_bin_fill_small: one lock, plus one per fresh slab (the bin
  // lock is dropped to allocate it and taken again).
  void Fill(Thread& t, int cl, unsigned nfill, bool to_cache = true) {
    Bin& bin = arenas_[t.arena].bins[cl];
    uint64_t locks = 1;
    unsigned filled = 0;
    std::vector<uint64_t>* items = to_cache ? &t.bins[cl].items : nullptr;
    while (filled < nfill) {
      if (bin.slabcur >= 0 && slabs_[bin.slabcur].nfree > 0) {
        Slab& s = slabs_[bin.slabcur];
        unsigned cnt = std::min<unsigned>(nfill - filled, s.nfree);
        s.nfree -= cnt;
        for (unsigned k = 0; k < cnt; ++k) {
          if (items) items->push_back(static_cast<uint64_t>(bin.slabcur));
        }
        last_filled_ = static_cast<uint64_t>(bin.slabcur);
        filled += cnt;
        continue;
      }
      bin.slabcur = -1;  // a full slabcur moves to the full list
      if (!bin.nonfull.empty()) {
        uint32_t id = bin.nonfull.begin()->second;
        bin.nonfull.erase(bin.nonfull.begin());
        slabs_[id].in_nonfull = false;
        bin.slabcur = id;
        continue;
      }
      bin.slabcur = NewSlab(static_cast<uint32_t>(t.arena), cl);
      ++locks;
    }
    if (to_cache) sink_->OnCost(CostKind::kRefill, cl, 1, filled);
    sink_->OnCost(CostKind::kLock, cl, locks, 0);
  }

  // arena_dalloc_bin_locked_step, under the bin lock.
  void DallocSmall(uint32_t arena, int cl, uint32_t id) {
    Bin& bin = arenas_[arena].bins[cl];
    Slab& s = slabs_[id];
    s.nfree += 1;
    if (s.nfree == kBins[cl].nregs) {
      if (bin.slabcur == id) {
        bin.slabcur = -1;
      } else if (s.in_nonfull) {
        bin.nonfull.erase({s.sn, id});
      }
      slabs_.Release(id);
      return;
    }
    if (s.nfree == 1 && bin.slabcur != id) {
      // arena_bin_lower_slab: the older slab becomes slabcur.
      if (bin.slabcur >= 0 && slabs_[bin.slabcur].sn > s.sn) {
        Slab& cur = slabs_[bin.slabcur];
        if (cur.nfree > 0) {
          bin.nonfull.insert({cur.sn, static_cast<uint32_t>(bin.slabcur)});
          cur.in_nonfull = true;
        }
        bin.slabcur = id;
      } else {
        bin.nonfull.insert({s.sn, id});
        s.in_nonfull = true;
      }
    }
  }

  int OwnerArena(uint64_t object) const {
    if (object & kLargeBit) return static_cast<int>(object & 0xffffffff);
    return static_cast<int>(slabs_[static_cast<uint32_t>(object)].arena);
  }

  // tcache_bin_flush_small/large down to rem objects, oldest first.
  void Flush(Thread& t, int cl, unsigned rem) {
    CacheBin& bin = t.bins[cl];
    size_t n = bin.items.size() > rem ? bin.items.size() - rem : 0;
    sink_->OnCost(CostKind::kFlush, cl, 1, n);
    if (cl < kJemallocSmallBins) {
      // One lock per arena the objects belong to, in the order met; one
      // more on the own arena's bin for its statistics when none is its own.
      scratch_.assign(bin.items.begin(), bin.items.begin() + n);
      bool own = false;
      uint64_t locks = 0;
      while (!scratch_.empty()) {
        int arena = OwnerArena(scratch_.front());
        ++locks;
        own = own || arena == t.arena;
        size_t kept = 0;
        for (uint64_t o : scratch_) {
          if (OwnerArena(o) == arena) {
            DallocSmall(static_cast<uint32_t>(arena), cl, static_cast<uint32_t>(o));
          } else {
            scratch_[kept++] = o;
          }
        }
        scratch_.resize(kept);
      }
      if (!own) ++locks;
      sink_->OnCost(CostKind::kLock, cl, locks, 0);
    } else if (n > 0) {
      // Large: each object goes back to its arena's extents.
      sink_->OnCost(CostKind::kLock, cl, n, 0);
    }
    bin.items.erase(bin.items.begin(), bin.items.begin() + n);
    bin.low_water = std::min<int>(bin.low_water, static_cast<int>(bin.items.size()));
  }

  // The tcache_gc and tcache_gc_dalloc events: each fires after
  // tcache_gc_incr_bytes of allocated (freed) usable bytes, and runs the
  // handler on one bin, round robin.
  void Tick(Thread& t, uint64_t* counter, uint64_t bytes) {
    if (nhbins_ == 0 || c_.tcache_gc_incr_bytes == 0 || !t.live || !t.nominal) return;
    *counter += bytes;
    if (*counter < c_.tcache_gc_incr_bytes) return;
    *counter = 0;
    int i = t.next_gc_bin;
    CacheBin& bin = t.bins[i];
    bool small = i < kJemallocSmallBins;
    if (bin.low_water > 0) {
      unsigned lw = static_cast<unsigned>(bin.low_water);
      unsigned nflush = lw - (lw >> 2);
      bool flush = true;
      if (small) {
        if (nflush < t.flush_delay[i]) {
          t.flush_delay[i] -= static_cast<uint8_t>(nflush);
          flush = false;
        } else {
          t.flush_delay[i] = ItemDelay(i);
        }
      }
      if (flush) {
        Flush(t, i, static_cast<unsigned>(bin.items.size()) - nflush);
        if (small && (ncached_max_[i] >> (t.lg_fill_div[i] + 1)) >= 1) t.lg_fill_div[i] += 1;
      }
    } else if (small && t.refilled[i]) {
      if (t.lg_fill_div[i] > 1) t.lg_fill_div[i] -= 1;
      t.refilled[i] = false;
    }
    bin.low_water = static_cast<int>(bin.items.size());
    t.next_gc_bin = (i + 1) % nhbins_;
  }

  JemallocConfig c_;
  CostSink* sink_;
  bool cache_from_first_event_;
  unsigned narenas_ = 0;
  int nhbins_ = 0;
  std::vector<unsigned> ncached_max_;
  std::vector<Arena> arenas_;
  std::vector<Thread> threads_;
  IdPool<Slab> slabs_;
  std::vector<uint64_t> scratch_;
  uint64_t next_sn_ = 0;
  uint64_t last_filled_ = 0;
};

}  // namespace

std::unique_ptr<AllocatorModel> MakeJemallocModel(const JemallocConfig& config, unsigned cpus,
                                                  bool cache_from_first_event, CostSink* sink) {
  return std::make_unique<JemallocModel>(config, cpus, cache_from_first_event, sink);
}

}  // namespace crossfree::analyzer::simulate
