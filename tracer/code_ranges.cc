// SPDX-License-Identifier: Apache-2.0
// Tracer: executable segments of the loaded modules (see code_ranges.h).
//
// The table is immutable once published: a rebuild maps a new one and
// publishes it with one release store; readers load the pointer and search
// it. Old tables are never unmapped (a reader may still be in one); they are
// rebuilt only when the loader's counters moved, so this costs a few pages
// per dlopen/dlclose burst.
#include "tracer/code_ranges.h"

#include <link.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cstddef>

namespace crossfree::tracer {
namespace {

struct Range {
  uintptr_t low;
  uintptr_t high;  // exclusive
};

struct Table {
  uint64_t adds;
  uint64_t subs;
  size_t count;
  Range ranges[1];  // count of them, sorted by low
};

std::atomic<const Table*> g_table{nullptr};
std::atomic<bool> g_building{false};
std::atomic<int64_t> g_last_check_ns{0};


struct Counters {
  uint64_t adds = 0;
  uint64_t subs = 0;
  size_t segments = 0;
};

int CountSegments(dl_phdr_info* info, size_t size, void* data) {
  auto* c = static_cast<Counters*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0) ++c->segments;
  }
  return 0;
}

int ReadCounters(dl_phdr_info* info, size_t size, void* data) {
  auto* c = static_cast<Counters*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;  // the same in every entry
}

struct FillContext {
  Table* table;
  size_t capacity;
};

int FillSegments(dl_phdr_info* info, size_t, void* data) {
  auto* ctx = static_cast<FillContext*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0 || ph.p_memsz == 0) continue;
    if (ctx->table->count == ctx->capacity) return 1;
    const uintptr_t low = info->dlpi_addr + ph.p_vaddr;
    ctx->table->ranges[ctx->table->count++] = {low, low + ph.p_memsz};
  }
  return 0;
}

void Build() {
  if (g_building.exchange(true, std::memory_order_acquire)) return;  // another thread is at it
  Counters c;
  dl_iterate_phdr(CountSegments, &c);
  const size_t capacity = c.segments + 16;  // room for objects loaded meanwhile
  const size_t bytes = sizeof(Table) + capacity * sizeof(Range);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem != MAP_FAILED) {
    auto* table = static_cast<Table*>(mem);
    table->adds = c.adds;
    table->subs = c.subs;
    table->count = 0;
    FillContext ctx{table, capacity};
    dl_iterate_phdr(FillSegments, &ctx);
    // Insertion sort: a few hundred segments at most, mostly in order.
    for (size_t i = 1; i < table->count; ++i) {
      Range r = table->ranges[i];
      size_t j = i;
      while (j > 0 && table->ranges[j - 1].low > r.low) {
        table->ranges[j] = table->ranges[j - 1];
        --j;
      }
      table->ranges[j] = r;
    }
    g_table.store(table, std::memory_order_release);
  }
  g_building.store(false, std::memory_order_release);
}

bool Find(const Table* t, uintptr_t pc) {
  size_t lo = 0;
  size_t hi = t->count;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (t->ranges[mid].low <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return false;
  const Range& r = t->ranges[lo - 1];
  if (pc >= r.high) return false;
  CodeHits& h = tls_code_hits;
  h.low[1] = h.low[0];
  h.size[1] = h.size[0];
  h.low[0] = r.low;
  h.size[0] = r.high - r.low;
  return true;
}

int64_t CoarseNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

__thread CodeHits tls_code_hits __attribute__((tls_model("initial-exec"))) = {{0, 0}, {0, 0}};

void RefreshCodeRanges() {
  // Tables are never freed (readers hold no lock): build one only when
  // the module set moved (an attach session starting again must not leak
  // a page each time).
  if (const Table* t = g_table.load(std::memory_order_acquire); t != nullptr) {
    Counters c;
    dl_iterate_phdr(ReadCounters, &c);
    if (c.adds == t->adds && c.subs == t->subs) return;
  }
  Build();
}

bool InCodeSlow(uintptr_t pc) {
  const Table* t = g_table.load(std::memory_order_acquire);
  if (t == nullptr) {
    Build();
    t = g_table.load(std::memory_order_acquire);
    if (t == nullptr) return true;  // no table: no filter
  }
  if (Find(t, pc)) return true;
  // A miss: junk, JIT code, or an object loaded since the table was made.
  const int64_t now = CoarseNowNs();
  int64_t last = g_last_check_ns.load(std::memory_order_relaxed);
  if (now - last < 1'000'000 ||
      !g_last_check_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return false;
  }
  Counters c;
  dl_iterate_phdr(ReadCounters, &c);
  if (c.adds == t->adds && c.subs == t->subs) return false;
  Build();
  t = g_table.load(std::memory_order_acquire);
  return t != nullptr && Find(t, pc);
}

}  // namespace crossfree::tracer
