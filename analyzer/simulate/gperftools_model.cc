// SPDX-License-Identifier: Apache-2.0
// Simulate: gperftools 2.10 behind the AllocatorModel interface, over the
// thread-cache model that `crossfree simulate` has always used
// (tcmalloc_model.h), so that `report --allocator gperftools` and the
// lifetime and pair figures of the cost replay have it too. Costs:
//  - refill: a ThreadCache::FetchFromCentralCache call, and its objects;
//  - flush: a ThreadCache::ReleaseToCentralCache call, and its objects;
//  - lock: the central free list's lock, once per fetch and per release,
//    once per free into the central list of a thread without a cache, and
//    the page heap's lock for each allocation and free above kMaxSize;
//  - remote free: a free on another thread than the allocation's (the
//    object simply joins the freeing thread's cache).
#include "analyzer/simulate/gperftools_model.h"

#include <fmt/core.h>

#include <vector>

#include "analyzer/simulate/tcmalloc_model.h"

namespace crossfree::analyzer::simulate {
namespace {

class GperftoolsModel : public AllocatorModel, private TransferSink {
 public:
  GperftoolsModel(const TcmallocConfig& config, bool cache_from_first_event, CostSink* sink)
      : config_(config),
        model_(config, this),
        sink_(sink),
        cache_from_first_event_(cache_from_first_event) {}

  std::string Allocator() const override { return "gperftools-2.10"; }
  std::vector<Setting> Settings() const override {
    return {{"TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES",
             fmt::format("{}", config_.max_total_thread_cache_bytes)},
            {"TCMALLOC_TRANSFER_NUM_OBJ", fmt::format("{}", config_.transfer_num_objects)}};
  }
  Validation validation() const override {
    return {true, false,
            "fetch and release calls within 4.5% in total of the calls recorded in the same "
            "run, most runs within 1.1% (scripts/validate/simulate, docs/guide/simulate.md)"};
  }
  int SizeClass(uint64_t size) const override { return model_.size_map().SizeClass(size); }
  uint64_t ClassSize(int cl) const override {
    return cl == 0 ? 0 : model_.size_map().ClassSize(cl);
  }
  uint64_t ReallocSize(uint64_t old_bytes, uint64_t size) const override {
    // do_realloc_with_callback: a block that grows moves to at least 1.25x.
    uint64_t lower_bound_to_grow = old_bytes + old_bytes / 4;
    return size > old_bytes && size < lower_bound_to_grow ? lower_bound_to_grow : size;
  }

  void ThreadStart(int thread, bool) override {
    if (static_cast<size_t>(thread) >= heaps_.size()) heaps_.resize(thread + 1, -1);
    heaps_[thread] = cache_from_first_event_ ? model_.CreateHeap() : -1;
  }
  uint64_t Allocate(int thread, int cl, uint64_t) override {
    uint64_t owner = static_cast<uint64_t>(thread) << 32;
    if (cl == 0) {
      sink_->OnCost(CostKind::kLock, 0, 1, 0);  // the page heap
      return owner;
    }
    if (heaps_[thread] < 0) heaps_[thread] = model_.CreateHeap();
    cl_ = cl;
    return owner | model_.Allocate(heaps_[thread], cl);
  }
  void Free(int thread, int cl, uint64_t object) override {
    if (IsRemote(thread, object)) sink_->OnCost(CostKind::kRemoteFree, cl, 1, 0);
    if (cl == 0) {
      sink_->OnCost(CostKind::kLock, 0, 1, 0);
      return;
    }
    uint32_t span = static_cast<uint32_t>(object);
    cl_ = cl;
    if (heaps_[thread] < 0) {
      sink_->OnCost(CostKind::kLock, cl, 1, 0);
      model_.DeallocateToCentral(cl, span);
      return;
    }
    model_.Deallocate(heaps_[thread], cl, span);
  }
  void ThreadExit(int thread) override {
    if (static_cast<size_t>(thread) >= heaps_.size() || heaps_[thread] < 0) return;
    model_.DeleteHeap(heaps_[thread]);
    heaps_[thread] = -1;
  }
  bool IsRemote(int thread, uint64_t object) const override {
    return static_cast<int>(object >> 32) != thread;
  }

 private:
  void OnFetch(int, int cl, int objects, int) override {
    sink_->OnCost(CostKind::kRefill, cl, 1, static_cast<uint64_t>(objects));
    sink_->OnCost(CostKind::kLock, cl, 1, 0);
  }
  void OnRelease(int, int cl, int objects, ReleaseCause) override {
    sink_->OnCost(CostKind::kFlush, cl, 1, static_cast<uint64_t>(objects));
    sink_->OnCost(CostKind::kLock, cl, 1, 0);
  }

  TcmallocConfig config_;
  TcmallocModel model_;
  CostSink* sink_;
  bool cache_from_first_event_;
  std::vector<int> heaps_;
  int cl_ = 0;
};

}  // namespace

std::unique_ptr<AllocatorModel> MakeGperftoolsModel(const TcmallocConfig& config,
                                                    bool cache_from_first_event,
                                                    CostSink* sink) {
  return std::make_unique<GperftoolsModel>(config, cache_from_first_event, sink);
}

}  // namespace crossfree::analyzer::simulate
