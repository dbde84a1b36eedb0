// SPDX-License-Identifier: Apache-2.0
// Simulate: a cost model of glibc 2.36's malloc (Debian 12's libc6): the
// per-thread tcache in front of per-arena fastbins and locked bins. Learned
// from glibc 2.36's malloc/malloc.c (__libc_malloc, tcache_get/put,
// MAYBE_INIT_TCACHE, _int_malloc's fastbin and smallbin stashing, _int_free,
// tcache_thread_shutdown) and malloc/arena.c (arena_get2, get_free_list,
// reuse_arena, arena_thread_freeres). Own code; docs/guide/simulate.md says
// what it leaves out.
//
// Costs reported:
//  - refill: an _int_malloc call (a malloc the tcache could not serve, every
//    calloc and moving realloc, and the tcache's own allocation at a
//    thread's first malloc or free: MAYBE_INIT_TCACHE), with the objects it
//    returned and stashed into the tcache;
//  - flush: a free the tcache could not take (its bin held tcache_count
//    chunks, the chunk is above tcache_max, or tcache_count is 0), one
//    chunk each;
//  - lock: the arena's mutex, for every _int_malloc and for a flush of a
//    chunk above the fastbin limit (into the owning arena);
//  - atomic: a flush into the owning arena's fastbin (a CAS, no lock);
//  - remote free: a free of a chunk of another arena than the thread's.
// Assumed, not modelled: chunks above the fastbin limit freed into an
// arena coalesce with their neighbours, so a later malloc of that size
// finds no exact fit to stash (one object per refill).
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <vector>

#include "analyzer/simulate/allocator_model.h"
#include "analyzer/simulate/glibc_model.h"

namespace crossfree::analyzer::simulate {
namespace {

constexpr uint64_t kMmapThreshold = 128 * 1024;  // DEFAULT_MMAP_THRESHOLD_MIN
constexpr uint64_t kMmapped = uint64_t{1} << 62;  // handle flag: an mmapped chunk
constexpr int kNoArena = -1;

uint64_t ChunkSize(uint64_t req) {
  uint64_t c = (req + 8 + 15) & ~uint64_t{15};
  return std::max<uint64_t>(c, 32);
}

class GlibcModel : public AllocatorModel {
 public:
  GlibcModel(const GlibcConfig& c, unsigned cpus, bool cache_from_first_event, CostSink* sink)
      : c_(c), sink_(sink), cache_from_first_event_(cache_from_first_event) {
    arena_max_ = static_cast<unsigned>(
        std::min<uint64_t>(c_.arena_max ? c_.arena_max : 8 * uint64_t{std::max(cpus, 1u)}, 1u << 20));
    tcache_max_chunk_ = c_.tcache_max ? ChunkSize(c_.tcache_max) : 0;
    max_fast_chunk_ = c_.mxfast == 0 ? 16 : (c_.mxfast + 8) & ~uint64_t{15};
  }

  std::string Allocator() const override { return "glibc-2.36"; }
  std::vector<Setting> Settings() const override {
    std::vector<Setting> s = {
        {"glibc.malloc.tcache_count", fmt::format("{}", c_.tcache_count)},
        {"glibc.malloc.tcache_max", fmt::format("{}", c_.tcache_max)},
        {"glibc.malloc.mxfast", fmt::format("{}", c_.mxfast)},
        {"glibc.malloc.arena_max",
         fmt::format("{}{}", arena_max_, c_.arena_max ? "" : " (8 x CPUs)")},
    };
    AddCacheSettings(&s, cache_from_first_event_, "a thread's first malloc or free", c_.ignored);
    return s;
  }
  Validation validation() const override {
    return {false, true,
            "refills (_int_malloc calls, the arena locks of allocation) within 3% of perf "
            "uprobe counts of the same run on a producer/consumer, within 11.4% on rpc-bench; "
            "tcache hits 7% under on the first, 15-22% under on rpc-bench legacy; the free "
            "side (flushes into fastbins or under the lock) not checked "
            "(docs/guide/simulate.md)"};
  }

  // Classes are chunk sizes / 16 (32 bytes -> 2); requests that glibc
  // serves with mmap (above the initial mmap threshold) are one class.
  int SizeClass(uint64_t size) const override {
    if (size >= kMmapThreshold) return kMmapClass;
    return static_cast<int>(ChunkSize(size) / 16);
  }
  uint64_t ClassSize(int cl) const override {
    return cl == kMmapClass ? kMmapThreshold : static_cast<uint64_t>(cl) * 16 - 8;
  }

  void ThreadStart(int thread, bool is_main) override {
    if (static_cast<size_t>(thread) >= threads_.size()) threads_.resize(thread + 1);
    threads_[thread] = Thread();
    threads_[thread].main = is_main;
    threads_[thread].live = true;
    if (cache_from_first_event_) InitTcache(threads_[thread], 0);
  }

  void NextAllocation(AllocPath path) override { path_ = path; }

  uint64_t Allocate(int thread, int cl, uint64_t) override {
    Thread& t = threads_[thread];
    AllocPath path = path_;
    path_ = AllocPath::kMalloc;
    if (!t.tcache_tried) InitTcache(t, cl);
    if (cl == kMmapClass) {
      // _int_malloc under the arena lock, which maps the chunk (sysmalloc).
      sink_->OnCost(CostKind::kLock, cl, 1, 0);
      sink_->OnCost(CostKind::kRefill, cl, 1, 1);
      return kMmapped;
    }
    uint64_t chunk = static_cast<uint64_t>(cl) * 16;
    bool tcached = chunk <= tcache_max_chunk_ && t.has_tcache;
    // __libc_calloc and _int_realloc call _int_malloc directly: no tcache.
    if (tcached && path == AllocPath::kMalloc && !t.bins[cl].empty()) {
      uint64_t o = t.bins[cl].back();
      t.bins[cl].pop_back();
      return o;
    }
    // _int_malloc under the thread's arena lock.
    sink_->OnCost(CostKind::kLock, cl, 1, 0);
    uint64_t objects = 1;
    Arena& a = arenas_[t.arena];
    if (chunk <= max_fast_chunk_ && Fast(a, cl) > 0) {
      Fast(a, cl) -= 1;
      if (tcached) {
        uint64_t stash = std::min<uint64_t>(Fast(a, cl), c_.tcache_count - t.bins[cl].size());
        Fast(a, cl) -= stash;
        for (uint64_t k = 0; k < stash; ++k) t.bins[cl].push_back(static_cast<uint64_t>(t.arena));
        objects += stash;
      }
    }
    sink_->OnCost(CostKind::kRefill, cl, 1, objects);
    return static_cast<uint64_t>(t.arena);
  }

  void Free(int thread, int cl, uint64_t object) override {
    if (object & kMmapped) return;  // munmap, no arena
    Thread& t = threads_[thread];
    // __libc_free runs MAYBE_INIT_TCACHE too: a thread that only frees gets
    // an arena and a tcache at its first free.
    if (!t.tcache_tried) InitTcache(t, cl);
    if (IsRemote(thread, object)) sink_->OnCost(CostKind::kRemoteFree, cl, 1, 0);
    uint64_t chunk = static_cast<uint64_t>(cl) * 16;
    if (t.has_tcache && chunk <= tcache_max_chunk_ && t.bins[cl].size() < c_.tcache_count) {
      t.bins[cl].push_back(object);
      return;
    }
    IntFree(cl, object);
  }

  void ThreadExit(int thread) override {
    if (static_cast<size_t>(thread) >= threads_.size()) return;
    Thread& t = threads_[thread];
    if (!t.live || t.main) return;
    // tcache_thread_shutdown: every cached chunk goes back through
    // _int_free; arena_thread_freeres puts a detached arena on the free list.
    for (size_t cl = 0; cl < t.bins.size(); ++cl) {
      for (uint64_t o : t.bins[cl]) IntFree(static_cast<int>(cl), o);
    }
    t.bins.clear();
    t.has_tcache = false;
    t.live = false;
    if (t.arena != kNoArena && --arenas_[t.arena].attached == 0) free_list_.push_back(t.arena);
  }

  bool IsRemote(int thread, uint64_t object) const override {
    if (object & kMmapped) return false;
    return static_cast<int>(object) != threads_[thread].arena;
  }

 private:
  static constexpr int kMmapClass = 0;
  struct Arena {
    std::vector<uint64_t> fast;  // chunks per fastbin, by class
    int attached = 0;
  };
  struct Thread {
    int arena = kNoArena;
    bool has_tcache = false;
    bool tcache_tried = false;  // MAYBE_INIT_TCACHE ran (tcache_count 0 leaves none)
    bool main = false;
    bool live = false;
    std::vector<std::vector<uint64_t>> bins;  // by class: the chunks' arenas
  };

  size_t TcacheBins() const { return tcache_max_chunk_ / 16 + 1; }

  // MAYBE_INIT_TCACHE: the first malloc picks an arena and allocates the
  // tcache there, under the arena lock (charged to class cl).
  void InitTcache(Thread& t, int cl) {
    t.tcache_tried = true;
    if (t.arena == kNoArena) t.arena = ChooseArena(t.main);
    sink_->OnCost(CostKind::kRefill, cl, 1, 1);
    sink_->OnCost(CostKind::kLock, cl, 1, 0);
    t.has_tcache = c_.tcache_count > 0;
    t.bins.assign(c_.tcache_count > 0 ? TcacheBins() : 0, {});
  }
  uint64_t& Fast(Arena& a, int cl) {
    if (a.fast.size() <= static_cast<size_t>(cl)) a.fast.resize(cl + 1);
    return a.fast[cl];
  }

  void IntFree(int cl, uint64_t object) {
    uint64_t chunk = static_cast<uint64_t>(cl) * 16;
    sink_->OnCost(CostKind::kFlush, cl, 1, 1);
    if (chunk <= max_fast_chunk_) {
      sink_->OnCost(CostKind::kAtomic, cl, 1, 0);
      Fast(arenas_[static_cast<int>(object)], cl) += 1;
    } else {
      sink_->OnCost(CostKind::kLock, cl, 1, 0);
    }
  }

  int ChooseArena(bool main) {
    int a;
    if (main && arenas_.empty()) {
      arenas_.emplace_back();
      a = 0;
    } else if (!free_list_.empty()) {
      a = free_list_.back();
      free_list_.pop_back();
    } else if (arenas_.size() < arena_max_) {
      if (arenas_.empty()) arenas_.emplace_back();  // main_arena always exists
      arenas_.emplace_back();
      a = static_cast<int>(arenas_.size()) - 1;
    } else {
      a = next_to_use_;
      next_to_use_ = (next_to_use_ + 1) % static_cast<int>(arenas_.size());
    }
    arenas_[a].attached += 1;
    return a;
  }

  GlibcConfig c_;
  CostSink* sink_;
  bool cache_from_first_event_;
  unsigned arena_max_ = 0;
  uint64_t tcache_max_chunk_ = 0;
  uint64_t max_fast_chunk_ = 0;
  std::vector<Arena> arenas_;
  std::vector<int> free_list_;
  int next_to_use_ = 0;
  std::vector<Thread> threads_;
  AllocPath path_ = AllocPath::kMalloc;
};

}  // namespace

bool ParseGlibcTunables(const std::string& tunables, GlibcConfig* c, std::string* error) {
  std::vector<Setting> pairs;
  if (!SplitSettings(tunables, ':', '=', "GLIBC_TUNABLES", "name=value", &pairs, error)) {
    return false;
  }
  for (const auto& [key, value] : pairs) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    bool numeric = ec == std::errc() && p == value.data() + value.size();
    uint64_t* field = key == "glibc.malloc.tcache_count" ? &c->tcache_count
                      : key == "glibc.malloc.tcache_max" ? &c->tcache_max
                      : key == "glibc.malloc.mxfast"     ? &c->mxfast
                      : key == "glibc.malloc.arena_max"  ? &c->arena_max
                                                         : nullptr;
    if (!field) {
      if (!c->ignored.empty()) c->ignored += ":";
      c->ignored += key;
      continue;
    }
    if (!numeric) {
      *error = fmt::format("GLIBC_TUNABLES: {}={} is not a number", key, value);
      return false;
    }
    // The limits glibc 2.36 applies (do_set_tcache_*, do_set_mxfast).
    if (field == &c->tcache_count && v > 65535) continue;
    if (field == &c->tcache_max && v > 4072) continue;  // MAX_TCACHE_SIZE: 64 bins
    if (field == &c->mxfast && v > 160) continue;       // MAX_FAST_SIZE
    *field = v;
  }
  return true;
}

std::unique_ptr<AllocatorModel> MakeGlibcModel(const GlibcConfig& config, unsigned cpus,
                                               bool cache_from_first_event, CostSink* sink) {
  return std::make_unique<GlibcModel>(config, cpus, cache_from_first_event, sink);
}

}  // namespace crossfree::analyzer::simulate
