// SPDX-License-Identifier: Apache-2.0
// Tracer, attach mode: GOT rewriting (see got_patch.h).
#include "tracer/got_patch.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tracer/hook_table.h"
#include "tracer/real_alloc.h"
#include "tracer/sys.h"

namespace crossfree::tracer {
namespace {

// Every hooked symbol: the table's forwarding rows and _Exit. The tcmalloc
// central free-list methods are not: tcmalloc calls them directly, never
// through a GOT.
constexpr const char* kNames[] = {
#define CROSSFREE_GOT_NAME(field, symbol, required, ret, params) symbol,
    CROSSFREE_NEXT_HOOKS(CROSSFREE_GOT_NAME)
#undef CROSSFREE_GOT_NAME
    "_Exit",
};
constexpr size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);

uintptr_t g_hook[kNameCount];    // the tracer's definition
uintptr_t g_global[kNameCount];  // the definition calls reach (GlobalDefinition)
uintptr_t g_canonical[kNameCount];  // dlsym(RTLD_DEFAULT): the same, or a PLT entry
uintptr_t g_self_lo = 0;  // an address in the tracer's own text
bool g_allocator_in_exe = false;

struct Slot {
  uintptr_t* address;
  uintptr_t original;
  uintptr_t hook;
};
constexpr uint32_t kMaxSlots = 16384;
Slot g_slots[kMaxSlots];
uint32_t g_slot_count = 0;

struct Module {
  uintptr_t base;
  const void* phdr;  // with base, tells this load of the object from a later one
  uint32_t first_slot;
  uint32_t slot_count;
  uintptr_t relro_lo, relro_hi;  // page-aligned; lo == hi: none
};
constexpr uint32_t kMaxModules = 2048;
Module g_modules[kMaxModules];
uint32_t g_module_count = 0;
GotPatchStats g_stats;
uint64_t g_seen_adds = ~0ull, g_seen_subs = ~0ull;

bool NameEq(const char* a, const char* b) { return StrEq(a, b); }

int FindName(const char* name) {
  // Cheap first-character filter: most of a module's symbols are not ours.
  const char c = name[0];
  if (c != 'm' && c != 'f' && c != 'c' && c != 'r' && c != 'p' && c != 'a' && c != 'v' &&
      c != '_' && c != 'e' && c != 's' && c != 'n' && c != 'u' && c != 'w' && c != 'l') {
    return -1;
  }
  for (size_t i = 0; i < kNameCount; ++i) {
    if (NameEq(name, kNames[i])) return static_cast<int>(i);
  }
  return -1;
}

bool InModule(const dl_phdr_info* info, uintptr_t value) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD) continue;
    const uintptr_t lo = info->dlpi_addr + p.p_vaddr;
    if (value >= lo && value < lo + p.p_memsz) return true;
  }
  return false;
}

bool SkipModule(const dl_phdr_info* info) {
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (StrContains(name, "linux-vdso") || StrContains(name, "ld-linux")) return true;
  // The tracer itself: its own calls must keep reaching the real functions.
  return InModule(info, g_self_lo);
}

bool Known(const dl_phdr_info* info) {
  for (uint32_t i = 0; i < g_module_count; ++i) {
    if (g_modules[i].base == info->dlpi_addr && g_modules[i].phdr == info->dlpi_phdr) return true;
  }
  return false;
}

// The loader relocates most d_ptr values in place on x86-64; an object
// whose .dynamic is read-only keeps them as file offsets.
uintptr_t DynPtr(uintptr_t base, uintptr_t value) { return value < base ? base + value : value; }

struct DynInfo {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  size_t strsz = 0;
  const ElfW(Rela)* rela = nullptr;
  size_t relasz = 0;
  const ElfW(Rela)* jmprel = nullptr;
  size_t pltrelsz = 0;
  bool plt_is_rela = true;
};

void ScanRelocs(const dl_phdr_info* info, const ElfW(Rela)* relocs, size_t bytes,
                const DynInfo& d, Module* m) {
  const size_t n = bytes / sizeof(ElfW(Rela));
  for (size_t i = 0; i < n; ++i) {
    const ElfW(Rela)& r = relocs[i];
    const uint32_t type = ELF64_R_TYPE(r.r_info);
    if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
    const uint32_t sym = ELF64_R_SYM(r.r_info);
    if (sym == 0) continue;
    const uint32_t name_off = d.symtab[sym].st_name;
    if (name_off >= d.strsz) continue;
    const int which = FindName(d.strtab + name_off);
    if (which < 0 || g_hook[which] == 0 || g_global[which] == 0) continue;
    auto* address = reinterpret_cast<uintptr_t*>(info->dlpi_addr + r.r_offset);
    if ((reinterpret_cast<uintptr_t>(address) & 7) != 0) continue;
    const uintptr_t value = __atomic_load_n(address, __ATOMIC_RELAXED);
    if (value == g_hook[which]) continue;  // already ours (listed twice)
    // Bound to the global definition, or a lazy stub of this module that
    // would bind to it: ours to take. Anything else is someone's choice.
    const bool lazy_stub = type == R_X86_64_JUMP_SLOT && InModule(info, value) &&
                           !(value == g_global[which]);
    if (value != g_global[which] && value != g_canonical[which] && !lazy_stub) {
      ++g_stats.foreign;
      continue;
    }
    if (g_slot_count == kMaxSlots) {
      ++g_stats.dropped;
      continue;
    }
    g_slots[g_slot_count++] = {address, value, g_hook[which]};
    ++m->slot_count;
  }
}

void Protect(const Module& m, int prot) {
  if (m.relro_lo != m.relro_hi) {
    mprotect(reinterpret_cast<void*>(m.relro_lo), m.relro_hi - m.relro_lo, prot);
  }
}

bool SlotInRelro(const Module& m, const Slot& s) {
  auto a = reinterpret_cast<uintptr_t>(s.address);
  return a >= m.relro_lo && a < m.relro_hi;
}

int PatchModule(dl_phdr_info* info, size_t, void*) {
  if (g_module_count == kMaxModules || Known(info)) return 0;
  Module& m = g_modules[g_module_count];
  m = Module{info->dlpi_addr, info->dlpi_phdr, g_slot_count, 0, 0, 0};
  ++g_module_count;
  ++g_stats.modules;
  if (SkipModule(info)) return 0;
  const ElfW(Dyn)* dyn = nullptr;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + p.p_vaddr);
    if (p.p_type == PT_GNU_RELRO) {
      // The loader protects whole pages: start rounded down, end rounded down.
      m.relro_lo = (info->dlpi_addr + p.p_vaddr) & ~(page - 1);
      m.relro_hi = (info->dlpi_addr + p.p_vaddr + p.p_memsz) & ~(page - 1);
    }
  }
  if (dyn == nullptr) return 0;
  DynInfo d;
  const uintptr_t base = info->dlpi_addr;
  for (const ElfW(Dyn)* e = dyn; e->d_tag != DT_NULL; ++e) {
    switch (e->d_tag) {
      case DT_SYMTAB: d.symtab = reinterpret_cast<const ElfW(Sym)*>(DynPtr(base, e->d_un.d_ptr)); break;
      case DT_STRTAB: d.strtab = reinterpret_cast<const char*>(DynPtr(base, e->d_un.d_ptr)); break;
      case DT_STRSZ: d.strsz = e->d_un.d_val; break;
      case DT_RELA: d.rela = reinterpret_cast<const ElfW(Rela)*>(DynPtr(base, e->d_un.d_ptr)); break;
      case DT_RELASZ: d.relasz = e->d_un.d_val; break;
      case DT_JMPREL: d.jmprel = reinterpret_cast<const ElfW(Rela)*>(DynPtr(base, e->d_un.d_ptr)); break;
      case DT_PLTRELSZ: d.pltrelsz = e->d_un.d_val; break;
      case DT_PLTREL: d.plt_is_rela = e->d_un.d_val == DT_RELA; break;
      default: break;
    }
  }
  if (d.symtab == nullptr || d.strtab == nullptr) return 0;
  if (d.rela != nullptr) ScanRelocs(info, d.rela, d.relasz, d, &m);
  if (d.jmprel != nullptr && d.plt_is_rela) ScanRelocs(info, d.jmprel, d.pltrelsz, d, &m);
  if (m.slot_count == 0) return 0;
  bool relro = false;
  for (uint32_t i = 0; i < m.slot_count; ++i) relro = relro || SlotInRelro(m, g_slots[m.first_slot + i]);
  if (relro && mprotect(reinterpret_cast<void*>(m.relro_lo), m.relro_hi - m.relro_lo,
                        PROT_READ | PROT_WRITE) != 0) {
    // Leave the module as it is; forget its entries.
    g_stats.failed += m.slot_count;
    g_slot_count = m.first_slot;
    m.slot_count = 0;
    return 0;
  }
  for (uint32_t i = 0; i < m.slot_count; ++i) {
    Slot& s = g_slots[m.first_slot + i];
    // One aligned 8-byte store (see got_patch.h).
    __atomic_store_n(s.address, s.hook, __ATOMIC_RELEASE);
  }
  if (relro) Protect(m, PROT_READ);
  g_stats.patched += m.slot_count;
  return 0;
}

int ReadCounters(dl_phdr_info* info, size_t size, void* data) {
  auto* out = static_cast<uint64_t*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    out[0] = info->dlpi_adds;
    out[1] = info->dlpi_subs;
  }
  return 1;
}

struct RestoreScan {
  uint32_t restored = 0;
};

int RestoreModule(dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<RestoreScan*>(data);
  for (uint32_t i = 0; i < g_module_count; ++i) {
    Module& m = g_modules[i];
    if (m.base != info->dlpi_addr || m.phdr != info->dlpi_phdr || m.slot_count == 0) continue;
    bool relro = false;
    for (uint32_t k = 0; k < m.slot_count; ++k) relro = relro || SlotInRelro(m, g_slots[m.first_slot + k]);
    if (relro && mprotect(reinterpret_cast<void*>(m.relro_lo), m.relro_hi - m.relro_lo,
                          PROT_READ | PROT_WRITE) != 0) {
      continue;
    }
    for (uint32_t k = 0; k < m.slot_count; ++k) {
      Slot& s = g_slots[m.first_slot + k];
      uintptr_t expected = s.hook;
      if (__atomic_compare_exchange_n(s.address, &expected, s.original, false, __ATOMIC_RELEASE,
                                      __ATOMIC_RELAXED)) {
        ++scan->restored;
      }
    }
    if (relro) Protect(m, PROT_READ);
    m.slot_count = 0;
  }
  return 0;
}

// The first object dl_iterate_phdr reports is the main executable.
int FindMallocInExe(dl_phdr_info* info, size_t, void*) {
  g_allocator_in_exe = InModule(info, g_global[0]);
  return 1;
}

// Forgets the modules unloaded since the last scan (their entries went
// with them; a later object at the same address is a new module).
int MarkLoaded(dl_phdr_info* info, size_t, void* data) {
  auto* present = static_cast<bool*>(data);
  for (uint32_t i = 0; i < g_module_count; ++i) {
    if (g_modules[i].base == info->dlpi_addr && g_modules[i].phdr == info->dlpi_phdr) {
      present[i] = true;
    }
  }
  return 0;
}

bool g_present[kMaxModules];

void PruneUnloaded() {
  for (uint32_t i = 0; i < g_module_count; ++i) g_present[i] = false;
  dl_iterate_phdr(MarkLoaded, g_present);
  for (uint32_t i = 0; i < g_module_count; ++i) {
    if (!g_present[i]) {
      g_modules[i].base = 0;
      g_modules[i].phdr = nullptr;
      g_modules[i].slot_count = 0;
    }
  }
}

}  // namespace

bool PrepareGotPatching(void* self_handle) {
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&PrepareGotPatching), &self) == 0) return false;
  g_self_lo = reinterpret_cast<uintptr_t>(&PrepareGotPatching);
  g_allocator_in_exe = false;
  for (size_t i = 0; i < kNameCount; ++i) {
    g_hook[i] = reinterpret_cast<uintptr_t>(dlsym(self_handle, kNames[i]));
    g_global[i] = reinterpret_cast<uintptr_t>(GlobalDefinition(kNames[i]));
    // A non-PIE executable's canonical PLT entry: entries that hold it
    // reach the same definition through the executable's own entry.
    g_canonical[i] = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, kNames[i]));
    // dlsym on the tracer's handle falls back to its dependencies: only
    // a definition inside the tracer is a hook.
    Dl_info where;
    if (g_hook[i] != 0 && (dladdr(reinterpret_cast<void*>(g_hook[i]), &where) == 0 ||
                           where.dli_fbase != self.dli_fbase)) {
      g_hook[i] = 0;
    }
  }
  if (g_global[0] == 0 || g_global[1] == 0) return false;  // malloc, free
  dl_iterate_phdr(FindMallocInExe, nullptr);
  return true;
}

bool AllocatorInExecutable() { return g_allocator_in_exe; }

GotPatchStats PatchNewModules() {
  uint64_t counters[2] = {0, 0};
  dl_iterate_phdr(ReadCounters, counters);
  if (counters[1] != g_seen_subs && g_seen_subs != ~0ull) PruneUnloaded();
  g_seen_adds = counters[0];
  g_seen_subs = counters[1];
  dl_iterate_phdr(PatchModule, nullptr);
  return g_stats;
}

bool ModuleSetChanged() {
  uint64_t counters[2] = {0, 0};
  dl_iterate_phdr(ReadCounters, counters);
  return counters[0] != g_seen_adds || counters[1] != g_seen_subs;
}

uint32_t RestoreAllGotEntries() {
  RestoreScan scan;
  dl_iterate_phdr(RestoreModule, &scan);
  g_module_count = 0;
  g_slot_count = 0;
  g_stats = GotPatchStats{};
  g_seen_adds = g_seen_subs = ~0ull;
  return scan.restored;
}

}  // namespace crossfree::tracer
