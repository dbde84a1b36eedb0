// SPDX-License-Identifier: Apache-2.0
// Tracer: module map via dl_iterate_phdr (see modules.h).
#include "tracer/modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <atomic>

#include "tracer/clock.h"
#include "tracer/sys.h"

namespace crossfree::tracer {
namespace {

char g_exe_path[4096];
size_t g_exe_path_len = 0;

// Modules already written to this process's trace, keyed by (load bias,
// path hash). dlclose + dlopen of the same object at the same address is
// not reported twice, which loses nothing for symbolization.
constexpr size_t kMaxKnown = 2048;
struct Known {
  uint64_t bias;
  uint64_t name_hash;
};
Known g_known[kMaxKnown];
std::atomic<size_t> g_known_count{0};
std::atomic<uint64_t> g_last_adds{~0ull};
std::atomic<bool> g_scanning{false};

uint64_t HashName(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s != '\0'; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return h;
}

struct ScanContext {
  ModuleEmitter emit;
  void* context;
  uint64_t now;
  bool first;
};

void FindBuildId(const dl_phdr_info* info, const uint8_t** id, uint32_t* len) {
  *id = nullptr;
  *len = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    size_t align = ph.p_align >= 8 ? 8 : 4;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + ((nh->n_namesz + align - 1) & ~(align - 1));
      const uint8_t* next = desc + ((nh->n_descsz + align - 1) & ~(align - 1));
      if (desc + nh->n_descsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && name[0] == 'G' &&
          name[1] == 'N' && name[2] == 'U' && name[3] == '\0') {
        *id = desc;
        *len = nh->n_descsz;
        return;
      }
      p = next;
    }
  }
}

int ScanOne(dl_phdr_info* info, size_t, void* data) {
  auto* ctx = static_cast<ScanContext*>(data);
  const char* path = info->dlpi_name;
  bool is_main = ctx->first;
  ctx->first = false;
  if (is_main && (path == nullptr || path[0] == '\0')) path = g_exe_path;
  if (path == nullptr) path = "";
  uint64_t hash = HashName(path);
  size_t count = g_known_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    if (g_known[i].bias == info->dlpi_addr && g_known[i].name_hash == hash) return 0;
  }
  constexpr int kMaxSegments = 32;
  format::ModuleSegment segments[kMaxSegments];
  uint32_t nseg = 0;
  for (int i = 0; i < info->dlpi_phnum && nseg < kMaxSegments; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    segments[nseg++] = {info->dlpi_addr + ph.p_vaddr, ph.p_memsz};
  }
  format::ModuleView view{};
  view.timestamp_ns = ctx->now;
  view.load_bias = info->dlpi_addr;
  view.path = path;
  view.path_len = static_cast<uint32_t>(StrLen(path));
  FindBuildId(info, &view.build_id, &view.build_id_len);
  view.segments = segments;
  view.segment_count = nseg;
  ctx->emit(view, ctx->context);
  if (count < kMaxKnown) {
    g_known[count] = {info->dlpi_addr, hash};
    g_known_count.store(count + 1, std::memory_order_release);
  }
  return 0;
}

int ReadAdds(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
    *static_cast<uint64_t*>(data) = info->dlpi_adds;
  }
  return 1;  // the counter is the same in every entry: stop after one
}

}  // namespace

void InitMainExePath() {
  ssize_t n = readlink("/proc/self/exe", g_exe_path, sizeof(g_exe_path) - 1);
  g_exe_path_len = n > 0 ? static_cast<size_t>(n) : 0;
  g_exe_path[g_exe_path_len] = '\0';
}

const char* MainExePath() { return g_exe_path; }

void ReportNewModules(ModuleEmitter emit, void* context) {
  // One scanner at a time, process-wide: a second thread (or a nested call
  // through emit) skips, and the next flush looks again.
  if (g_scanning.exchange(true, std::memory_order_acquire)) return;
  uint64_t adds = 0;
  dl_iterate_phdr(ReadAdds, &adds);
  ScanContext ctx{emit, context, NowNs(), true};
  dl_iterate_phdr(ScanOne, &ctx);
  g_last_adds.store(adds, std::memory_order_relaxed);
  g_scanning.store(false, std::memory_order_release);
}

bool ModulesMayHaveChanged() {
  uint64_t adds = 0;
  dl_iterate_phdr(ReadAdds, &adds);
  return adds != g_last_adds.load(std::memory_order_relaxed);
}

void ForgetModules() {
  g_known_count.store(0, std::memory_order_release);
  g_last_adds.store(~0ull, std::memory_order_relaxed);
  g_scanning.store(false, std::memory_order_release);
}

}  // namespace crossfree::tracer
