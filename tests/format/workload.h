// SPDX-License-Identifier: Apache-2.0
// A deterministic synthetic producer/consumer allocation workload, encoded
// with the real ChunkWriter: the trace the bytes-per-event goal is measured
// on (tests/format/size_test.cc, docs/trace-format.md).
//
// Model: producer threads allocate 16-512 byte messages at a few call sites
// and queue them; consumer threads free them at their own sites; every
// thread also allocates and frees short-lived temporaries (same-thread
// churn). Addresses come from a small tcmalloc-like allocator: 16-byte size
// classes, one span region per class inside a 4 MiB heap, per-thread LIFO
// caches that move batches of 32 objects to and from a central list, so
// consumers' frees refill the producers' caches. Each thread's clock
// advances 100-499 ns per event. All randomness is a seeded mt19937_64 used
// with plain modulo, so the bytes are identical on every platform.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "format/trace_writer.h"

namespace crossfree::format::testing {

struct WorkloadStats {
  uint64_t events = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  uint64_t cross_thread_frees = 0;
  uint64_t stacks = 0;
  uint64_t chunks = 0;
  uint64_t bytes = 0;  // whole file, header and chunk headers included
};

struct WorkloadOptions {
  uint64_t seed = 1;
  uint64_t events = 200000;
  int producers = 4;
  int consumers = 4;
  size_t chunk_bytes = 64 * 1024;
  int alloc_sites = 24;  // distinct allocation stacks
  int free_sites = 12;   // distinct free stacks
};

class ProducerConsumerWorkload {
 public:
  explicit ProducerConsumerWorkload(const WorkloadOptions& options)
      : options_(options), rng_(options.seed) {}

  std::vector<uint8_t> Run(WorkloadStats* stats) {
    stats_ = WorkloadStats{};
    HeaderFields fields;
    fields.pid = 1000;
    fields.unwinder = Unwinder::kFramePointer;
    fields.max_depth = 32;
    fields.start_monotonic_ns = 1'000'000'000;
    out_.resize(4096);
    const char exe[] = "/usr/bin/producer-consumer";
    out_.resize(EncodeFileHeader(fields, exe, sizeof(exe) - 1, out_.data(), out_.size()));

    // Sites: a fixed size for most, a random size per call for a quarter
    // (strings, vectors), and a fixed free site per allocation site.
    for (int s = 0; s < options_.alloc_sites; ++s) {
      site_size_.push_back(s % 4 == 3 ? 0 : 16 + Rand(497));
      site_free_.push_back(static_cast<int>(Rand(options_.free_sites)));
    }
    int threads = options_.producers + options_.consumers;
    for (int t = 0; t < threads; ++t) {
      auto th = std::make_unique<Thread>();
      th->tid = 2000 + t;
      th->producer = t < options_.producers;
      th->clock = 1'000'000'000 + Rand(100000);
      th->buffer.resize(options_.chunk_bytes);
      th->writer = std::make_unique<ChunkWriter>(th->buffer.data(), th->buffer.size());
      th->writer->Begin(th->tid, 0, th->clock);
      threads_.push_back(std::move(th));
    }
    while (stats_.events < options_.events) {
      Thread* t = threads_[0].get();
      for (auto& th : threads_) {
        if (th->clock < t->clock) t = th.get();
      }
      Step(*t);
      t->clock += 100 + Rand(400);
    }
    for (auto& th : threads_) Flush(*th);
    stats_.bytes = out_.size();
    *stats = stats_;
    return std::move(out_);
  }

 private:
  struct Thread {
    uint32_t tid;
    bool producer;
    uint64_t clock;
    uint32_t sequence = 0;
    std::vector<uint8_t> buffer;
    std::unique_ptr<ChunkWriter> writer;
    std::vector<std::vector<uint64_t>> cache = std::vector<std::vector<uint64_t>>(kClasses + 1);
    struct Temp {
      uint64_t address;
      uint64_t size;
      int site;
    };
    std::vector<Temp> temps;
  };
  struct Message {
    uint64_t address;
    uint64_t size;
    int site;
    uint32_t tid;
  };
  static constexpr int kClasses = 32;  // 16..512 in steps of 16
  static constexpr uint64_t kHeapBase = 0x7f3a2c000000;
  static constexpr uint64_t kClassRegion = 128 * 1024;

  uint64_t Rand(uint64_t n) { return rng_() % n; }

  uint64_t SiteSize(int site) { return site_size_[site] ? site_size_[site] : 16 + Rand(497); }

  // Stack ids are process-wide and handed out on first use; the first user
  // writes the definition into its own chunk, as the tracer does.
  uint32_t StackId(Thread& t, int key) {
    auto it = stack_ids_.find(key);
    if (it != stack_ids_.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(stack_ids_.size() + 1);
    stack_ids_[key] = id;
    uint64_t frames[6];
    for (int i = 0; i < 6; ++i) frames[i] = 0x55d4c0a01000 + key * 0x340 + i * 0x1a2b + i * i;
    while (!t.writer->AppendStack(id, frames, 6)) Rotate(t);
    ++stats_.stacks;
    return id;
  }

  uint64_t Allocate(Thread& t, uint64_t size) {
    int cls = static_cast<int>((size + 15) / 16);
    auto& cache = t.cache[cls];
    if (cache.empty()) {
      auto& central = central_[cls];
      if (central.size() >= 32) {
        cache.assign(central.end() - 32, central.end());
        central.resize(central.size() - 32);
      } else {
        for (int i = 31; i >= 0; --i) cache.push_back(span_next_[cls] + i * cls * 16);
        span_next_[cls] += 32 * cls * 16;
      }
    }
    uint64_t a = cache.back();
    cache.pop_back();
    return a;
  }

  void Release(Thread& t, uint64_t address, uint64_t size) {
    int cls = static_cast<int>((size + 15) / 16);
    auto& cache = t.cache[cls];
    cache.push_back(address);
    if (cache.size() > 64) {
      auto& central = central_[cls];
      central.insert(central.end(), cache.begin(), cache.begin() + 32);
      cache.erase(cache.begin(), cache.begin() + 32);
    }
  }

  void Alloc(Thread& t, AllocFn fn, uint64_t address, uint64_t size, uint32_t stack) {
    while (!t.writer->AppendAlloc(fn, t.clock, address, size, stack)) Rotate(t);
    ++stats_.allocs;
    ++stats_.events;
  }
  void Free(Thread& t, FreeFn fn, uint64_t address, uint64_t size, uint32_t stack) {
    while (!t.writer->AppendFree(fn, t.clock, address, size, stack)) Rotate(t);
    ++stats_.frees;
    ++stats_.events;
  }

  void Step(Thread& t) {
    uint64_t r = Rand(100);
    if (t.producer && r < 55) {
      int site = static_cast<int>(Rand(options_.alloc_sites));
      uint64_t size = SiteSize(site);
      uint64_t a = Allocate(t, size);
      Alloc(t, AllocFn::kNew, a, size, StackId(t, site));
      queue_.push_back({a, size, site, t.tid});
      return;
    }
    if (!t.producer && r < 60 && !queue_.empty()) {
      Message m = queue_.front();
      queue_.pop_front();
      // Sized delete for most message types, plain free for a few.
      bool sized = m.site % 3 != 0;
      Free(t, sized ? FreeFn::kDelete : FreeFn::kFree, m.address, sized ? m.size : 0,
           StackId(t, 1000 + site_free_[m.site]));
      Release(t, m.address, m.size);
      if (m.tid != t.tid) ++stats_.cross_thread_frees;
      return;
    }
    // Same-thread churn: a temporary, freed a few events later (LIFO).
    if (t.temps.empty() || (t.temps.size() < 6 && Rand(2) == 0)) {
      int site = static_cast<int>(Rand(options_.alloc_sites));
      uint64_t size = SiteSize(site);
      uint64_t a = Allocate(t, size);
      Alloc(t, AllocFn::kMalloc, a, size, StackId(t, 2000 + site));
      t.temps.push_back({a, size, site});
    } else {
      auto tmp = t.temps.back();
      t.temps.pop_back();
      Free(t, FreeFn::kFree, tmp.address, 0, StackId(t, 3000 + tmp.site % 8));
      Release(t, tmp.address, tmp.size);
    }
  }

  void Flush(Thread& t) {
    if (t.writer->empty()) return;
    size_t n = t.writer->Finish();
    out_.insert(out_.end(), t.buffer.begin(), t.buffer.begin() + n);
    ++stats_.chunks;
  }

  void Rotate(Thread& t) {
    Flush(t);
    t.writer->Begin(t.tid, ++t.sequence, t.clock);
  }

  WorkloadOptions options_;
  std::mt19937_64 rng_;
  WorkloadStats stats_;
  std::vector<uint8_t> out_;
  std::vector<uint64_t> site_size_;
  std::vector<int> site_free_;
  std::vector<std::unique_ptr<Thread>> threads_;
  std::deque<Message> queue_;
  std::vector<std::vector<uint64_t>> central_ = std::vector<std::vector<uint64_t>>(kClasses + 1);
  std::vector<uint64_t> span_next_ = InitSpans();
  std::map<int, uint32_t> stack_ids_;

  static std::vector<uint64_t> InitSpans() {
    std::vector<uint64_t> spans(kClasses + 1);
    for (int c = 0; c <= kClasses; ++c) spans[c] = kHeapBase + c * kClassRegion;
    return spans;
  }
};

}  // namespace crossfree::format::testing
