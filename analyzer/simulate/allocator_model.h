// SPDX-License-Identifier: Apache-2.0
// Simulate: the interface every allocator cost model implements
// (jemalloc_model.cc, glibc_model.cc, mimalloc_model.cc, and
// gperftools_model.cc over tcmalloc_model.h), and the events that cost.
//
// A model keeps one process's thread caches and shared structures. The cost
// replay (cost_replay.h) drives it with one process's operations in the
// event stream's order: it names the thread (a dense index, in first-seen
// order) and gets back an opaque object handle per allocation that it gives
// back at the free. The model reports what each operation cost to the
// replay's CostSink as it happens, so the replay can charge it to the thread,
// size class and pair of that operation.
//
// Not thread-safe: one model per simulated process, driven by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/simulate/tcmalloc_model.h"

namespace crossfree::analyzer::simulate {

// The events that cost, in every model (docs/guide/simulate.md says what
// each one is in each allocator).
enum class CostKind : uint8_t {
  kRefill = 0,      // a thread cache went to a shared structure for objects
  kFlush = 1,       // a thread cache gave objects back to a shared structure
  kLock = 2,        // a lock of a shared bin or arena was taken
  kRemoteFree = 3,  // a free of an object another thread's heap/arena owns
  kAtomic = 4,      // an atomic read-modify-write on a shared list (CAS, exchange)
};
inline constexpr int kCostKindCount = 5;
const char* CostKindName(CostKind kind);  // "refills", "flushes", "locks", ...

struct CostCounts {
  uint64_t n[kCostKindCount] = {};
  uint64_t refilled_objects = 0;
  uint64_t flushed_objects = 0;
  uint64_t operator[](CostKind k) const { return n[static_cast<int>(k)]; }
  // The one figure a column shows: the synchronisations on shared
  // structures (locks taken and atomic read-modify-writes). Refills and
  // flushes are how they come about, remote frees which frees crossed; both
  // are counted apart, not added in, so no operation counts twice.
  uint64_t Total() const { return (*this)[CostKind::kLock] + (*this)[CostKind::kAtomic]; }
  void Add(const CostCounts& o) {
    for (int i = 0; i < kCostKindCount; ++i) n[i] += o.n[i];
    refilled_objects += o.refilled_objects;
    flushed_objects += o.flushed_objects;
  }
};

class CostSink {
 public:
  virtual ~CostSink() = default;
  // `count` events of `kind` in size class `cl` (the model's own class
  // index; see AllocatorModel::ClassSize), moving `objects` objects (refills
  // and flushes; 0 otherwise). The replay charges them to the operation it
  // is replaying (its thread, class and pair).
  virtual void OnCost(CostKind kind, int cl, uint64_t count, uint64_t objects) = 0;
};

// How far a model's predictions were checked against the real allocator.
struct Validation {
  bool validated = false;
  bool partly = false;  // some of its counts were checked, not all
  std::string how;      // one line: against what, how close (docs/guide/simulate.md)
  const char* Label() const {
    return validated ? "validated" : partly ? "partly validated" : "NOT VALIDATED";
  }
};

// One named setting of a model, as printed (name as the allocator spells it).
using Setting = std::pair<std::string, std::string>;

// The settings every model with thread caches prints last: when a thread's
// cache starts ("tcache from": its first traced event with
// --cache-from-first-event, else start_rule), and the keys it ignored.
void AddCacheSettings(std::vector<Setting>* settings, bool cache_from_first_event,
                      const char* start_rule, const std::string& ignored);

// Splits settings in an allocator's own syntax (MALLOC_CONF "k:v,k:v",
// GLIBC_TUNABLES "k=v:k=v") into its pairs, in order, skipping empty ones.
// False with *error "NAME: 'pair' is not FORM" on a pair without kv_sep.
bool SplitSettings(const std::string& text, char pair_sep, char kv_sep, const char* name,
                   const char* form, std::vector<Setting>* out, std::string* error);

class AllocatorModel {
 public:
  virtual ~AllocatorModel() = default;

  virtual std::string Allocator() const = 0;  // "jemalloc-5.3.0"
  virtual std::vector<Setting> Settings() const = 0;
  virtual Validation validation() const = 0;

  // The model's size class of a request (its own numbering, >= 0), and
  // that class's usable size (what a realloc compares with).
  virtual int SizeClass(uint64_t size) const = 0;
  virtual uint64_t ClassSize(int cl) const = 0;
  // Size asked of the allocator when a block of old_bytes is reallocated to
  // new_size and moves (tcmalloc's hysteresis); new_size for most.
  virtual uint64_t ReallocSize(uint64_t /*old_bytes*/, uint64_t new_size) const {
    return new_size;
  }

  // A thread's first operation of any kind (a thread that only frees still
  // gets whatever the allocator gives it then). threads are dense from 0.
  // is_main: the process's initial thread, whose caches live to the end
  // (exit() runs no thread destructors), so its ThreadExit does nothing.
  virtual void ThreadStart(int thread, bool is_main) = 0;
  // How the next Allocate was called, for the models whose paths differ
  // (glibc's calloc and realloc bypass its tcache). Called before every
  // Allocate; the default ignores it.
  enum class AllocPath : uint8_t { kMalloc, kCalloc, kRealloc };
  virtual void NextAllocation(AllocPath /*path*/) {}
  // Returns the handle to give to Free.
  virtual uint64_t Allocate(int thread, int cl, uint64_t size) = 0;
  virtual void Free(int thread, int cl, uint64_t object) = 0;
  virtual void ThreadExit(int thread) = 0;
  // Whether the object (a handle from Allocate) belongs to another thread's
  // heap or arena than thread's: a free of it is a remote free.
  virtual bool IsRemote(int thread, uint64_t object) const = 0;
};

// The settings of the models, each in its allocator's own syntax
// (MALLOC_CONF, GLIBC_TUNABLES; gperftools' two variables as numbers), held
// here only. Which
// model takes which is the allocator table's (allocators.h), which builds
// the models from them.
struct ModelSettings {
  std::string malloc_conf;                 // jemalloc: "narenas:4,tcache_max:4096"
  std::string glibc_tunables;              // glibc: "glibc.malloc.tcache_count=0:..."
  unsigned cpus = 0;                       // the recorded machine's CPUs (0: this machine's)
  // gperftools: TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES and
  // TCMALLOC_TRANSFER_NUM_OBJ as numbers, for its cost model and the
  // transfer simulation (replay.h) alike.
  TcmallocConfig gperftools;
  // gperftools, jemalloc and glibc: every thread gets its cache at its first
  // traced event, not its first allocation (simulate's flag of that name).
  bool cache_from_first_event = false;
};

}  // namespace crossfree::analyzer::simulate
