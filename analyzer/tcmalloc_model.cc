// SPDX-License-Identifier: Apache-2.0
// Simulate: the gperftools 2.10 thread-cache model (see tcmalloc_model.h).
// Each function names the gperftools function it models; the behaviour was
// checked against the disassembly of Debian's libtcmalloc.so.4 2.10 where
// the upstream sources of nearby versions differ.
#include "analyzer/tcmalloc_model.h"

#include <algorithm>

namespace crossfree::simulate {
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
}

// src/thread_cache.cc NewHeap + Init: the heap starts with one kStealAmount
// of budget (from the unclaimed space, else stolen from another heap); if
// neither is possible it gets kMinThreadCacheSize and the unclaimed space
// goes negative. Every list starts empty with max_length 1. Init runs
// before the heap is linked in, so it never steals from itself.
int TcmallocModel::CreateHeap() {
  int index = static_cast<int>(heaps_.size());
  heaps_.emplace_back();
  Heap& h = heaps_.back();
  h.lists.assign(size_map_.num_classes(), ListState{});
  IncreaseCacheLimit(index);
  if (heaps_[index].max_size == 0) {
    heaps_[index].max_size = kMinThreadCacheSize;
    unclaimed_ -= kMinThreadCacheSize;
  }
  Heap& nh = heaps_[index];
  nh.live = true;
  nh.next = head_;
  nh.prev = -1;
  if (head_ >= 0) {
    heaps_[head_].prev = index;
  } else {
    next_steal_ = index;
  }
  head_ = index;
  return index;
}

// src/thread_cache.h ThreadCache::Allocate: pop, or fetch when empty.
void TcmallocModel::Allocate(int heap, int cl) {
  Heap& h = heaps_[heap];
  ListState& list = h.lists[cl];
  if (list.length == 0) {
    FetchFromCentralCache(h, heap, cl);
    return;
  }
  h.size -= static_cast<int64_t>(size_map_.ClassSize(cl));
  --list.length;
  if (list.length < list.lowater) list.lowater = list.length;
}

// src/thread_cache.cc FetchFromCentralCache: move min(max_length, batch)
// objects (the central list always delivers them in this model), keep all
// but the one returned, then grow max_length: by one up to the batch size
// (slow start), then by whole batches up to kMaxDynamicFreeListLength.
void TcmallocModel::FetchFromCentralCache(Heap& h, int index, int cl) {
  ListState& list = h.lists[cl];
  const int batch = size_map_.NumObjectsToMove(cl);
  const int moved = std::min(list.max_length, batch);
  sink_->OnFetch(index, cl, moved);
  // PushRange does not touch the low-water mark.
  h.size += static_cast<int64_t>(size_map_.ClassSize(cl)) * (moved - 1);
  list.length += moved - 1;
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
void TcmallocModel::Deallocate(int heap, int cl) {
  Heap& h = heaps_[heap];
  ListState& list = h.lists[cl];
  h.size += static_cast<int64_t>(size_map_.ClassSize(cl));
  const int64_t size_headroom = h.max_size - h.size - 1;
  ++list.length;
  const int64_t list_headroom = static_cast<int64_t>(list.max_length) - list.length;
  if ((list_headroom | size_headroom) < 0) {
    if (list_headroom < 0) ListTooLong(h, heap, cl);
    if (h.size >= h.max_size) Scavenge(h, heap);
  }
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

// src/thread_cache.cc ReleaseToCentralCache: one call, however many
// InsertRange batches it splits into; n is clipped to the list length.
void TcmallocModel::ReleaseToCentralCache(Heap& h, int index, int cl, int n,
                                          ReleaseCause cause) {
  ListState& list = h.lists[cl];
  if (n > list.length) n = list.length;
  sink_->OnRelease(index, cl, n, cause);
  list.length -= n;
  if (list.length < list.lowater) list.lowater = list.length;
  h.size -= static_cast<int64_t>(size_map_.ClassSize(cl)) * n;
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
    list.lowater = list.length;
  }
  IncreaseCacheLimit(index);
}

// src/thread_cache.cc IncreaseCacheLimitLocked: take kStealAmount from the
// unclaimed space while there is any; otherwise take it from the next of up
// to 10 heaps (round robin over thread_heaps_, newest first) that has more
// than kMinThreadCacheSize.
void TcmallocModel::IncreaseCacheLimit(int index) {
  Heap& h = heaps_[index];
  if (unclaimed_ > 0) {
    unclaimed_ -= kStealAmount;
    h.max_size += kStealAmount;
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
    if (h.lists[cl].length > 0) {
      ReleaseToCentralCache(h, heap, cl, h.lists[cl].length, ReleaseCause::kThreadExit);
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

}  // namespace crossfree::simulate
