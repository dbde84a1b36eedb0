// SPDX-License-Identifier: Apache-2.0
// Simulate: the gperftools 2.10 thread-cache model (see tcmalloc_model.h).
// Each function names the gperftools function it models; the behaviour was
// checked against the disassembly of Debian's libtcmalloc.so.4 2.10 where
// the upstream sources of nearby versions differ.
#include "analyzer/simulate/tcmalloc_model.h"

#include <algorithm>

namespace crossfree::analyzer::simulate {
namespace {

constexpr uint64_t kAlignment = 8;
constexpr uint64_t kMinAlign = 16;      // default build: 16-byte alignment from 16 bytes up
constexpr uint64_t kMaxSmallSize = 1024;

// src/common.h SizeMap::ClassIndex: 8-byte steps up to 1 KiB, 128-byte
// steps above, flattened into one array.
size_t ClassIndex(uint64_t s) {
  return s <= kMaxSmallSize ? (s + 7) >> 3 : (s + 127 + (120 << 7)) >> 7;
}
constexpr size_t kClassArraySize = ((kMaxSize + 127 + (120 << 7)) >> 7) + 1;

int LgFloor(uint64_t n) {
  int log = 0;
  while (n > 1) {
    n >>= 1;
    ++log;
  }
  return log;
}

// src/common.cc AlignmentForSize: waste from alignment at most 1/8.
uint64_t AlignmentForSize(uint64_t size) {
  uint64_t alignment = kAlignment;
  if (size > kMaxSize) {
    alignment = kPageSize;
  } else if (size >= 128) {
    alignment = (uint64_t{1} << LgFloor(size)) / 8;
  } else if (size >= kMinAlign) {
    alignment = kMinAlign;
  }
  return std::min(alignment, kPageSize);
}

}  // namespace

const char* ReleaseCauseName(ReleaseCause cause) {
  switch (cause) {
    case ReleaseCause::kListTooLong:
      return "list_too_long";
    case ReleaseCause::kScavenge:
      return "scavenge";
    case ReleaseCause::kThreadExit:
      return "thread_exit";
  }
  return "?";
}

// src/common.cc SizeMap::NumMoveSize: about 64 KiB per transfer, at least 2
// objects, at most TCMALLOC_TRANSFER_NUM_OBJ (32 by default in 2.10).
int SizeMap::NumMoveSize(uint64_t size, int transfer_num_objects) {
  if (size == 0) return 0;
  int num = static_cast<int>(64.0 * 1024.0 / static_cast<double>(size));
  if (num < 2) num = 2;
  if (num > transfer_num_objects) num = transfer_num_objects;
  return num;
}

// src/common.cc SizeMap::Init: walk sizes in alignment steps; give each the
// smallest span (in pages) that wastes at most 1/8 and holds a quarter
// batch; merge a size into the previous class when both use the same span
// with the same object count.
SizeMap::SizeMap(int transfer_num_objects) {
  class_to_size_.push_back(0);  // class 0: large
  class_to_pages_.push_back(0);
  for (uint64_t size = kAlignment, alignment = kAlignment; size <= kMaxSize; size += alignment) {
    alignment = AlignmentForSize(size);
    const uint64_t blocks_to_move =
        static_cast<uint64_t>(NumMoveSize(size, transfer_num_objects) / 4);
    uint64_t psize = 0;
    do {
      psize += kPageSize;
      while ((psize % size) > (psize >> 3)) psize += kPageSize;
    } while ((psize / size) < blocks_to_move);
    const uint64_t pages = psize >> kPageShift;
    size_t sc = class_to_size_.size();
    if (sc > 1 && pages == class_to_pages_[sc - 1]) {
      uint64_t objects = (pages << kPageShift) / size;
      uint64_t prev_objects = (class_to_pages_[sc - 1] << kPageShift) / class_to_size_[sc - 1];
      if (objects == prev_objects) {
        class_to_size_[sc - 1] = size;
        continue;
      }
    }
    class_to_size_.push_back(size);
    class_to_pages_.push_back(pages);
  }
  class_array_.assign(kClassArraySize, 0);
  uint64_t next_size = 0;
  for (size_t c = 1; c < class_to_size_.size(); ++c) {
    for (uint64_t s = next_size; s <= class_to_size_[c]; s += kAlignment) {
      class_array_[ClassIndex(s)] = static_cast<uint8_t>(c);
    }
    next_size = class_to_size_[c] + kAlignment;
  }
  num_objects_to_move_.assign(class_to_size_.size(), 0);
  for (size_t c = 1; c < class_to_size_.size(); ++c) {
    num_objects_to_move_[c] = NumMoveSize(class_to_size_[c], transfer_num_objects);
  }
}

int SizeMap::SizeClass(uint64_t size) const {
  if (size > kMaxSize) return 0;
  return class_array_[ClassIndex(size)];
}

TcmallocModel::TcmallocModel(const TcmallocConfig& config, TransferSink* sink)
    : size_map_(config.transfer_num_objects), sink_(sink) {
  // ThreadCache::set_overall_thread_cache_size clips the setting; with no
  // heaps yet, RecomputePerThreadCacheSize leaves all of it unclaimed.
  uint64_t overall = std::clamp<uint64_t>(config.max_total_thread_cache_bytes,
                                          kMinThreadCacheSize, uint64_t{1} << 30);
  overall_ = static_cast<int64_t>(overall);
  unclaimed_ = overall_;
  // src/central_freelist.cc CentralFreeList::Init: 16 transfer slots to
  // start with, at most 64, and at most 1 MiB of objects (one slot at
  // least).
  centrals_.resize(size_map_.num_classes());
  for (int cl = 1; cl < size_map_.num_classes(); ++cl) {
    int64_t bytes = static_cast<int64_t>(size_map_.ClassSize(cl)) * size_map_.NumObjectsToMove(cl);
    int max_cache = static_cast<int>(
        std::min<int64_t>(kMaxNumTransferEntries, std::max<int64_t>(1, (1 << 20) / bytes)));
    centrals_[cl].max_cache_size = max_cache;
    centrals_[cl].cache_size = std::min(16, max_cache);
  }
}

// src/thread_cache.cc NewHeap + Init: the heap starts with one kStealAmount
// of budget (from the unclaimed space, else stolen from another heap); if
// neither is possible it gets kMinThreadCacheSize and the unclaimed space
// goes negative. Every list starts empty with max_length 1. Init runs
// before the heap is linked in, so it never steals from itself.
int TcmallocModel::CreateHeap() {
  int index = static_cast<int>(heaps_.size());
  heaps_.emplace_back();
  heaps_.back().lists.resize(size_map_.num_classes());
  IncreaseCacheLimit(index);
  Heap& h = heaps_[index];
  if (h.max_size == 0) {
    h.max_size = kMinThreadCacheSize;
    unclaimed_ -= kMinThreadCacheSize;
  }
  h.live = true;
  h.next = head_;
  h.prev = -1;
  if (head_ >= 0) {
    heaps_[head_].prev = index;
  } else {
    next_steal_ = index;
  }
  head_ = index;
  return index;
}

// src/thread_cache.h ThreadCache::Allocate: pop, or fetch when empty.
uint32_t TcmallocModel::Allocate(int heap, int cl) {
  Heap& h = heaps_[heap];
  ListState& list = h.lists[cl];
  uint32_t object = 0;
  if (list.objects.empty()) {
    FetchFromCentralCache(h, heap, cl, &object);
    return object;
  }
  h.size -= static_cast<int64_t>(size_map_.ClassSize(cl));
  object = list.objects.back();
  list.objects.pop_back();
  if (list.length() < list.lowater) list.lowater = list.length();
  return object;
}

// src/thread_cache.cc FetchFromCentralCache: ask the central list for
// min(max_length, batch) objects (it may deliver fewer, see RemoveRange),
// keep all but the first, then grow max_length: by one up to the batch
// size (slow start), then by whole batches up to kMaxDynamicFreeListLength.
void TcmallocModel::FetchFromCentralCache(Heap& h, int index, int cl, uint32_t* object) {
  ListState& list = h.lists[cl];
  const int batch = size_map_.NumObjectsToMove(cl);
  const int wanted = std::min(list.max_length, batch);
  Chain chain = RemoveRange(cl, wanted);
  const int moved = static_cast<int>(chain.size());
  sink_->OnFetch(index, cl, moved, wanted);
  *object = chain.front();
  // PushRange(SLL_Next(start), end): the rest keeps its order, head first;
  // it does not touch the low-water mark.
  for (size_t i = chain.size(); i-- > 1;) list.objects.push_back(chain[i]);
  h.size += static_cast<int64_t>(size_map_.ClassSize(cl)) * (moved - 1);
  if (list.max_length < batch) {
    list.max_length += 1;
  } else {
    int new_length = std::min(list.max_length + batch, kMaxDynamicFreeListLength);
    new_length -= new_length % batch;
    list.max_length = new_length;
  }
}

// src/thread_cache.h ThreadCache::Deallocate: push; a list longer than its
// max_length releases a batch; a cache at or over its max_size scavenges.
void TcmallocModel::Deallocate(int heap, int cl, uint32_t object) {
  Heap& h = heaps_[heap];
  ListState& list = h.lists[cl];
  h.size += static_cast<int64_t>(size_map_.ClassSize(cl));
  const int64_t size_headroom = h.max_size - h.size - 1;
  list.objects.push_back(object);
  const int64_t list_headroom = static_cast<int64_t>(list.max_length) - list.length();
  if ((list_headroom | size_headroom) < 0) {
    if (list_headroom < 0) ListTooLong(h, heap, cl);
    if (h.size >= h.max_size) Scavenge(h, heap);
  }
}

void TcmallocModel::DeallocateToCentral(int cl, uint32_t object) {
  InsertRange(cl, Chain{object});
}

// src/thread_cache.cc ListTooLong: release one batch, then move max_length
// toward the batch size (grow by one below it; above it, shrink by a batch
// after more than kMaxOverages overflows).
void TcmallocModel::ListTooLong(Heap& h, int index, int cl) {
  const int batch = size_map_.NumObjectsToMove(cl);
  ReleaseToCentralCache(h, index, cl, batch, ReleaseCause::kListTooLong);
  ListState& list = h.lists[cl];
  if (list.max_length < batch) {
    list.max_length += 1;
  } else if (list.max_length > batch) {
    list.length_overages += 1;
    if (list.length_overages > kMaxOverages) {
      list.max_length -= batch;
      list.length_overages = 0;
    }
  }
}

// src/thread_cache.cc ReleaseToCentralCache: one call; n is clipped to the
// list length and handed to the central list in whole batches from the
// list head, the remainder last.
void TcmallocModel::ReleaseToCentralCache(Heap& h, int index, int cl, int n,
                                          ReleaseCause cause) {
  ListState& list = h.lists[cl];
  if (n > list.length()) n = list.length();
  sink_->OnRelease(index, cl, n, cause);
  h.size -= static_cast<int64_t>(size_map_.ClassSize(cl)) * n;
  const int batch = size_map_.NumObjectsToMove(cl);
  auto pop_range = [&list](int k) {
    Chain chain(list.objects.rbegin(), list.objects.rbegin() + k);
    list.objects.resize(list.objects.size() - k);
    if (list.length() < list.lowater) list.lowater = list.length();
    return chain;
  };
  while (n > batch) {
    InsertRange(cl, pop_range(batch));
    n -= batch;
  }
  InsertRange(cl, pop_range(n));
}

// src/thread_cache.cc Scavenge: per class, drop half the low-water mark (at
// least one object) and shrink a max_length above the batch size by a
// batch (not below it); reset every low-water mark to the current length;
// then ask for more budget.
void TcmallocModel::Scavenge(Heap& h, int index) {
  for (int cl = 0; cl < size_map_.num_classes(); ++cl) {
    ListState& list = h.lists[cl];
    const int lowmark = list.lowater;
    if (lowmark > 0) {
      const int drop = lowmark > 1 ? lowmark / 2 : 1;
      ReleaseToCentralCache(h, index, cl, drop, ReleaseCause::kScavenge);
      const int batch = size_map_.NumObjectsToMove(cl);
      if (list.max_length > batch) list.max_length = std::max(list.max_length - batch, batch);
    }
    list.lowater = list.length();
  }
  IncreaseCacheLimit(index);
}

// src/thread_cache.cc IncreaseCacheLimitLocked: take kStealAmount from the
// unclaimed space while there is any; otherwise take it from the next of up
// to 10 heaps (round robin over thread_heaps_, newest first) that has more
// than kMinThreadCacheSize.
void TcmallocModel::IncreaseCacheLimit(int index) {
  if (unclaimed_ > 0) {
    unclaimed_ -= kStealAmount;
    heaps_[index].max_size += kStealAmount;
    return;
  }
  for (int i = 0; i < 10; ++i) {
    if (next_steal_ < 0) next_steal_ = head_;
    if (next_steal_ < 0) return;  // no heap linked yet
    Heap& victim = heaps_[next_steal_];
    if (next_steal_ == index || victim.max_size <= static_cast<int64_t>(kMinThreadCacheSize)) {
      next_steal_ = victim.next;
      continue;
    }
    victim.max_size -= kStealAmount;
    heaps_[index].max_size += kStealAmount;
    next_steal_ = victim.next;
    return;
  }
}

// src/thread_cache.cc DeleteCache: Cleanup releases every non-empty list in
// class order; then the heap leaves the list and its budget returns to the
// unclaimed space.
void TcmallocModel::DeleteHeap(int heap) {
  Heap& h = heaps_[heap];
  if (!h.live) return;
  for (int cl = 0; cl < size_map_.num_classes(); ++cl) {
    if (h.lists[cl].length() > 0) {
      ReleaseToCentralCache(h, heap, cl, h.lists[cl].length(), ReleaseCause::kThreadExit);
    }
  }
  if (h.next >= 0) heaps_[h.next].prev = h.prev;
  if (h.prev >= 0) heaps_[h.prev].next = h.next;
  if (head_ == heap) head_ = h.next;
  if (next_steal_ == heap) next_steal_ = h.next;
  if (next_steal_ < 0) next_steal_ = head_;
  unclaimed_ += h.max_size;
  h.live = false;
  h.next = h.prev = -1;
}

// ---- Central free list (src/central_freelist.cc) ----

// InsertRange: a whole batch goes into a transfer-cache slot if there is
// (or can be made) room; anything else returns object by object to spans.
void TcmallocModel::InsertRange(int cl, Chain chain) {
  if (static_cast<int>(chain.size()) == size_map_.NumObjectsToMove(cl) && MakeCacheSpace(cl)) {
    centrals_[cl].slots.push_back(std::move(chain));
    return;
  }
  for (uint32_t span : chain) ReleaseToSpans(cl, span);
}

// RemoveRange: a whole batch comes from a transfer-cache slot (the last one
// filled) when there is one; otherwise objects are taken from the first
// non-empty span, then the next, until n or no non-empty span is left. A
// new span is carved only when there is none at all, so a fetch can come
// back short.
TcmallocModel::Chain TcmallocModel::RemoveRange(int cl, int n) {
  Central& c = centrals_[cl];
  if (n == size_map_.NumObjectsToMove(cl) && !c.slots.empty()) {
    Chain chain = std::move(c.slots.back());
    c.slots.pop_back();
    return chain;
  }
  Chain chain;
  if (FetchFromOneSpan(cl, n, &chain) == 0) {
    Populate(cl);
    FetchFromOneSpan(cl, n, &chain);
  }
  while (static_cast<int>(chain.size()) < n) {
    // SLL_PushRange: the later span's objects go in front.
    Chain more;
    if (FetchFromOneSpan(cl, n - static_cast<int>(chain.size()), &more) == 0) break;
    more.insert(more.end(), chain.begin(), chain.end());
    chain = std::move(more);
  }
  return chain;
}

int TcmallocModel::FetchFromOneSpan(int cl, int n, Chain* out) {
  Central& c = centrals_[cl];
  if (c.nonempty_head < 0) return 0;
  uint32_t id = static_cast<uint32_t>(c.nonempty_head);
  Span& s = spans_[id];
  int taken = std::min(n, s.free);
  s.free -= taken;
  s.refcount += taken;
  out->insert(out->end(), taken, id);
  if (s.free == 0) UnlinkNonempty(s, id);  // to the empty list (order unused)
  return taken;
}

// Populate: a new span of class_to_pages pages, all objects free, first in
// the non-empty list.
void TcmallocModel::Populate(int cl) {
  Span s;
  s.cl = cl;
  s.free = static_cast<int>((size_map_.ClassPages(cl) << kPageShift) / size_map_.ClassSize(cl));
  uint32_t id = static_cast<uint32_t>(spans_.size());
  spans_.push_back(s);
  centrals_[cl].spans += 1;
  PrependNonempty(cl, id);
}

// ReleaseToSpans: a span that had no free object moves to the front of the
// non-empty list; a span whose objects are all back goes to the page heap.
void TcmallocModel::ReleaseToSpans(int cl, uint32_t id) {
  Span& s = spans_[id];
  if (s.free == 0) {
    UnlinkNonempty(s, id);
    PrependNonempty(cl, id);
  }
  s.refcount -= 1;
  if (s.refcount == 0) {
    UnlinkNonempty(s, id);
    s.free = 0;
    centrals_[cl].spans -= 1;
    return;
  }
  s.free += 1;
}

// MakeCacheSpace: room if a slot is free; else grow the cache by taking a
// slot from another class (EvictRandomSizeClass, first gently, then by
// force), unless this class is at its maximum.
bool TcmallocModel::MakeCacheSpace(int cl) {
  Central& c = centrals_[cl];
  if (static_cast<int>(c.slots.size()) < c.cache_size) return true;
  if (c.cache_size == c.max_cache_size) return false;
  if (EvictRandomSizeClass(cl, false) || EvictRandomSizeClass(cl, true)) {
    if (c.cache_size < c.max_cache_size) {
      c.cache_size += 1;
      return true;
    }
  }
  return false;
}

// EvictRandomSizeClass: the "random" class is a counter over all classes.
bool TcmallocModel::EvictRandomSizeClass(int locked_cl, bool force) {
  int t = evict_counter_++;
  if (t >= size_map_.num_classes()) {
    t %= size_map_.num_classes();
    evict_counter_ = t;
  }
  if (t == locked_cl) return false;
  return ShrinkCache(t, force);
}

// ShrinkCache: give up an unused slot; by force, also a used one, whose
// batch goes back to its spans.
bool TcmallocModel::ShrinkCache(int cl, bool force) {
  Central& c = centrals_[cl];
  if (c.cache_size == 0) return false;
  if (!force && static_cast<int>(c.slots.size()) == c.cache_size) return false;
  if (static_cast<int>(c.slots.size()) == c.cache_size) {
    c.cache_size -= 1;
    Chain chain = std::move(c.slots.back());
    c.slots.pop_back();
    for (uint32_t span : chain) ReleaseToSpans(cl, span);
    return true;
  }
  c.cache_size -= 1;
  return true;
}

void TcmallocModel::UnlinkNonempty(Span& s, uint32_t id) {
  if (!s.in_nonempty) return;
  Central& c = centrals_[s.cl];
  if (s.prev >= 0) spans_[s.prev].next = s.next;
  if (s.next >= 0) spans_[s.next].prev = s.prev;
  if (c.nonempty_head == static_cast<int>(id)) c.nonempty_head = s.next;
  s.prev = s.next = -1;
  s.in_nonempty = false;
}

void TcmallocModel::PrependNonempty(int cl, uint32_t id) {
  Central& c = centrals_[cl];
  Span& s = spans_[id];
  s.prev = -1;
  s.next = c.nonempty_head;
  if (c.nonempty_head >= 0) spans_[c.nonempty_head].prev = static_cast<int>(id);
  c.nonempty_head = static_cast<int>(id);
  s.in_nonempty = true;
}

}  // namespace crossfree::analyzer::simulate
