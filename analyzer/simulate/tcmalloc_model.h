// SPDX-License-Identifier: Apache-2.0
// Simulate: a model of the gperftools 2.10 thread cache and central free
// lists (Debian's libtcmalloc.so.4) that predicts the central free-list
// transfers, i.e. the
// calls of ThreadCache::FetchFromCentralCache and
// ThreadCache::ReleaseToCentralCache and the objects each one moves.
//
// Learned from gperftools 2.10: src/common.{h,cc} (SizeMap::Init, NumMoveSize,
// AlignmentForSize), src/thread_cache.{h,cc} (FreeList, Allocate, Deallocate,
// FetchFromCentralCache, ListTooLong, ReleaseToCentralCache, Scavenge,
// IncreaseCacheLimitLocked, Init/NewHeap/DeleteCache),
// src/central_freelist.cc (transfer cache, RemoveRange/InsertRange, spans)
// and src/tcmalloc.cc
// (which paths use a thread cache at all). Own code; docs/guide/simulate.md lists
// what the model keeps and what it leaves out.
//
// Not thread-safe: one model per simulated process, driven by one thread.
#pragma once

#include <cstdint>
#include <vector>

namespace crossfree::analyzer::simulate {

// Constants of gperftools 2.10 built with the default 8 KiB pages
// (src/common.h).
inline constexpr int kPageShift = 13;
inline constexpr uint64_t kPageSize = uint64_t{1} << kPageShift;
inline constexpr uint64_t kMaxSize = 256 * 1024;            // larger: page heap
inline constexpr uint64_t kMinThreadCacheSize = kMaxSize * 2;
inline constexpr uint64_t kMaxThreadCacheSize = 4 << 20;
inline constexpr uint64_t kDefaultOverallThreadCacheSize = 8 * kMaxThreadCacheSize;  // 32 MiB
inline constexpr uint64_t kStealAmount = 1 << 16;
inline constexpr int kMaxOverages = 3;
inline constexpr int kMaxDynamicFreeListLength = 8192;
inline constexpr int kDefaultTransferNumObjects = 32;  // TCMALLOC_TRANSFER_NUM_OBJ
inline constexpr int kMaxNumTransferEntries = 64;      // transfer cache slots per class

struct TcmallocConfig {
  // TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES; clipped like
  // set_overall_thread_cache_size() to [kMinThreadCacheSize, 1 GiB].
  uint64_t max_total_thread_cache_bytes = kDefaultOverallThreadCacheSize;
  // TCMALLOC_TRANSFER_NUM_OBJ: the cap of a batch (it also shapes the
  // size classes, since SizeMap::Init sizes spans from it).
  int transfer_num_objects = kDefaultTransferNumObjects;
};

// Size classes, as SizeMap::Init computes them (src/common.cc). Class 0 is
// unused (large allocations); classes are 1..num_classes()-1.
class SizeMap {
 public:
  explicit SizeMap(int transfer_num_objects = kDefaultTransferNumObjects);

  // The class of a request of `size` bytes, or 0 when size > kMaxSize.
  int SizeClass(uint64_t size) const;
  uint64_t ClassSize(int cl) const { return class_to_size_[cl]; }
  int NumObjectsToMove(int cl) const { return num_objects_to_move_[cl]; }
  uint64_t ClassPages(int cl) const { return class_to_pages_[cl]; }
  int num_classes() const { return static_cast<int>(class_to_size_.size()); }

  // Objects per central transfer for an object size (SizeMap::NumMoveSize).
  static int NumMoveSize(uint64_t size, int transfer_num_objects);

 private:
  std::vector<uint64_t> class_to_size_;
  std::vector<uint64_t> class_to_pages_;
  std::vector<int> num_objects_to_move_;
  std::vector<uint8_t> class_array_;  // by ClassIndex(size)
};

// Why objects went back to the central list.
enum class ReleaseCause : uint8_t {
  kListTooLong = 0,  // a free pushed a list past its max_length
  kScavenge = 1,     // a free pushed the cache past its max_size
  kThreadExit = 2,   // the thread's cache was destroyed (Cleanup)
};
inline constexpr int kReleaseCauseCount = 3;
const char* ReleaseCauseName(ReleaseCause cause);

// Receives every modelled call, in order.
class TransferSink {
 public:
  virtual ~TransferSink() = default;
  // One FetchFromCentralCache call that moved `objects` objects (the one
  // returned to the caller included); `wanted` is what it asked for.
  virtual void OnFetch(int heap, int cl, int objects, int wanted) = 0;
  // One ReleaseToCentralCache call that moved `objects` objects.
  virtual void OnRelease(int heap, int cl, int objects, ReleaseCause cause) = 0;
};

// The thread caches and central free lists of one process. An object is
// identified by the span it was carved from (a span id): that is all that
// decides where it goes back to. Heaps are numbered in creation order and
// never reused; a deleted heap keeps its number.
class TcmallocModel {
 public:
  TcmallocModel(const TcmallocConfig& config, TransferSink* sink);

  const SizeMap& size_map() const { return size_map_; }

  // ThreadCache::NewHeap + Init: a thread's first allocation creates it.
  int CreateHeap();
  // ThreadCache::Allocate for class cl (1 <= cl < num_classes()). Returns
  // the object (its span id) to pass to Deallocate.
  uint32_t Allocate(int heap, int cl);
  // ThreadCache::Deallocate of an object of class cl.
  void Deallocate(int heap, int cl, uint32_t object);
  // A free on a thread without a cache: CentralFreeList::InsertRange of one
  // object (tcmalloc.cc do_free_with_callback).
  void DeallocateToCentral(int cl, uint32_t object);
  // ThreadCache::DeleteCache (thread exit): Cleanup, unlink, give back its
  // max_size to the unclaimed space.
  void DeleteHeap(int heap);

  // Inspection, for tests.
  struct ListState {
    std::vector<uint32_t> objects;  // back() is the list head
    int lowater = 0;
    int max_length = 1;
    int length_overages = 0;
    int length() const { return static_cast<int>(objects.size()); }
  };
  const ListState& list(int heap, int cl) const { return heaps_[heap].lists[cl]; }
  int64_t cache_size(int heap) const { return heaps_[heap].size; }
  int64_t max_size(int heap) const { return heaps_[heap].max_size; }
  int64_t unclaimed_cache_space() const { return unclaimed_; }
  // Spans of class cl currently owned by the central list (not returned).
  int live_spans(int cl) const { return centrals_[cl].spans; }
  int transfer_slots_used(int cl) const { return static_cast<int>(centrals_[cl].slots.size()); }

 private:
  struct Heap {
    int64_t size = 0;
    int64_t max_size = 0;
    std::vector<ListState> lists;
    int next = -1;  // thread_heaps_ list, newest first
    int prev = -1;
    bool live = false;
  };
  struct Span {
    int cl = 0;
    int free = 0;      // objects on the span's own free list
    int refcount = 0;  // objects handed out
    int prev = -1;     // nonempty_ list of its class
    int next = -1;
    bool in_nonempty = false;
  };
  struct Central {
    std::vector<std::vector<uint32_t>> slots;  // transfer cache, one batch each
    int cache_size = 0;
    int max_cache_size = 0;
    int nonempty_head = -1;
    int spans = 0;
  };
  using Chain = std::vector<uint32_t>;  // objects, list head first

  void FetchFromCentralCache(Heap& h, int index, int cl, uint32_t* object);
  void ListTooLong(Heap& h, int index, int cl);
  void ReleaseToCentralCache(Heap& h, int index, int cl, int n, ReleaseCause cause);
  void Scavenge(Heap& h, int index);
  void IncreaseCacheLimit(int index);

  // src/central_freelist.cc
  void InsertRange(int cl, Chain chain);
  Chain RemoveRange(int cl, int n);
  void ReleaseToSpans(int cl, uint32_t span);
  int FetchFromOneSpan(int cl, int n, Chain* out);
  void Populate(int cl);
  bool MakeCacheSpace(int cl);
  bool EvictRandomSizeClass(int locked_cl, bool force);
  bool ShrinkCache(int cl, bool force);
  void UnlinkNonempty(Span& s, uint32_t id);
  void PrependNonempty(int cl, uint32_t id);

  SizeMap size_map_;
  TransferSink* sink_;
  std::vector<Heap> heaps_;
  std::vector<Span> spans_;
  std::vector<Central> centrals_;
  int evict_counter_ = 0;  // EvictRandomSizeClass's race_counter
  int64_t overall_ = 0;
  int64_t unclaimed_ = 0;
  int head_ = -1;        // thread_heaps_
  int next_steal_ = -1;  // next_memory_steal_
};

}  // namespace crossfree::analyzer::simulate
