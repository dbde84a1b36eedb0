// SPDX-License-Identifier: Apache-2.0
// Tracer: static tcmalloc through gperftools MallocHook (see malloc_hook.h).
#include "tracer/malloc_hook.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

#include "format/trace_format.h"
#include "tracer/clock.h"
#include "tracer/cpu.h"
#include "tracer/modules.h"
#include "tracer/recorder.h"
#include "tracer/sampler.h"
#include "tracer/sys.h"

namespace crossfree::tracer {
namespace {

using NewHook = void (*)(const void* ptr, size_t size);
using DeleteHook = void (*)(const void* ptr);
using AddNewHookFn = int (*)(NewHook);
using AddDeleteHookFn = int (*)(DeleteHook);

AddNewHookFn g_add_new = nullptr;
AddDeleteHookFn g_add_delete = nullptr;
// tcmalloc's functions in the executable (from .symtab), sorted by start,
// so stacks captured inside a hook start at the allocating caller. Name
// patterns alone miss tcmalloc's anonymous-namespace helpers (do_malloc...),
// so local functions of tcmalloc's own source files count too. .cold parts
// are separate symbols, placed far from their functions: a single address
// range would swallow the user's code.
struct Range {
  uint64_t start;
  uint64_t end;
};
constexpr size_t kMaxRanges = 16384;
Range* g_ranges = nullptr;  // mmap'd at probe time
size_t g_range_count = 0;
uint64_t g_bias = 0;

bool InAllocator(uint64_t pc) {
  size_t lo = 0, hi = g_range_count;
  while (lo < hi) {  // first range with start > pc
    size_t mid = (lo + hi) / 2;
    if (g_ranges[mid].start <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo > 0 && pc < g_ranges[lo - 1].end;
}

struct ExeInfo {
  uint64_t bias = 0;
  uint64_t lo = ~0ull;
  uint64_t hi = 0;
};

int FindExe(dl_phdr_info* info, size_t, void* data) {
  auto* exe = static_cast<ExeInfo*>(data);
  exe->bias = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (start < exe->lo) exe->lo = start;
    if (start + ph.p_memsz > exe->hi) exe->hi = start + ph.p_memsz;
  }
  return 1;  // the first entry is the main program
}

bool InExe(const ExeInfo& exe, const void* p) {
  auto a = reinterpret_cast<uint64_t>(p);
  return a >= exe.lo && a < exe.hi;
}

bool StartsWith(const char* s, const char* prefix) {
  while (*prefix != '\0') {
    if (*s++ != *prefix++) return false;
  }
  return true;
}

// Global functions that belong to tcmalloc: its entry points (the C
// allocation functions and operator new/delete it defines) and internals.
bool IsAllocatorSymbol(const char* name) {
  static const char* const kExact[] = {"malloc", "free", "calloc", "realloc", "cfree",
                                       "memalign", "posix_memalign", "aligned_alloc", "valloc",
                                       "pvalloc", "malloc_usable_size", "reallocarray"};
  for (const char* e : kExact) {
    if (StrEq(name, e)) return true;
  }
  return StartsWith(name, "tc_") || StartsWith(name, "MallocHook") ||
         StartsWith(name, "_ZN10MallocHook") || StartsWith(name, "_ZN8tcmalloc") ||
         StartsWith(name, "_ZN13TCMallocGuard") || StartsWith(name, "_ZN13TCMallocImplementation") ||
         StartsWith(name, "_Znw") || StartsWith(name, "_Zna") || StartsWith(name, "_Zdl") ||
         StartsWith(name, "_Zda") || StartsWith(name, "_ZL18do_memalign") ||
         StartsWith(name, "_ZN12_GLOBAL__N_19do_malloc") || StartsWith(name, "_ZN12_GLOBAL__N_17do_free");
}

// Source files of gperftools whose local functions are allocator frames.
bool IsAllocatorFile(const char* name) {
  static const char* const kFiles[] = {"tcmalloc.cc", "malloc_hook.cc", "thread_cache.cc",
                                       "central_freelist.cc", "page_heap.cc", "common.cc",
                                       "span.cc", "static_vars.cc", "system-alloc.cc",
                                       "sampler.cc", "emergency_malloc.cc"};
  const char* base = name;
  for (const char* p = name; *p != '\0'; ++p) {
    if (*p == '/') base = p + 1;
  }
  for (const char* f : kFiles) {
    if (StrEq(base, f)) return true;
  }
  return false;
}

struct SymtabResult {
  bool had_symtab = false;
  bool defines_malloc = false;
  uint64_t add_new = 0;
  uint64_t add_delete = 0;
};

void AddRange(uint64_t start, uint64_t size) {
  if (g_ranges == nullptr) {
    void* mem = mmap(nullptr, kMaxRanges * sizeof(Range), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    g_ranges = static_cast<Range*>(mem);
  }
  if (g_range_count < kMaxRanges) g_ranges[g_range_count++] = {start, start + size};
}

void SortRanges() {
  // Insertion sort over a few hundred entries, once: no allocation.
  for (size_t i = 1; i < g_range_count; ++i) {
    Range r = g_ranges[i];
    size_t j = i;
    while (j > 0 && g_ranges[j - 1].start > r.start) {
      g_ranges[j] = g_ranges[j - 1];
      --j;
    }
    g_ranges[j] = r;
  }
}

// Reads the executable's own .symtab with plain syscalls and one read-only
// mapping; nothing is allocated. Values are link-time addresses.
void ReadSymtab(SymtabResult* out) {
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(ElfW(Ehdr)))) {
    close(fd);
    return;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return;
  const auto* base = static_cast<const uint8_t*>(map);
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(base);
  bool ok = eh->e_ident[EI_MAG0] == ELFMAG0 && eh->e_ident[EI_MAG1] == ELFMAG1 &&
            eh->e_ident[EI_MAG2] == ELFMAG2 && eh->e_ident[EI_MAG3] == ELFMAG3 &&
            eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shentsize == sizeof(ElfW(Shdr)) &&
            eh->e_shoff + uint64_t{eh->e_shnum} * sizeof(ElfW(Shdr)) <= size;
  if (ok) {
    const auto* sh = reinterpret_cast<const ElfW(Shdr)*>(base + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; ++i) {
      const bool dynsym = sh[i].sh_type == SHT_DYNSYM;
      if ((sh[i].sh_type != SHT_SYMTAB && !dynsym) || sh[i].sh_link >= eh->e_shnum) continue;
      const ElfW(Shdr)& strtab = sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > size || strtab.sh_offset + strtab.sh_size > size) {
        continue;
      }
      if (!dynsym) out->had_symtab = true;
      const auto* syms = reinterpret_cast<const ElfW(Sym)*>(base + sh[i].sh_offset);
      const char* names = reinterpret_cast<const char*>(base + strtab.sh_offset);
      size_t count = sh[i].sh_size / sizeof(ElfW(Sym));
      bool allocator_file = false;  // local symbols follow their STT_FILE
      for (size_t k = 0; k < count; ++k) {
        const ElfW(Sym)& sym = syms[k];
        if (sym.st_name >= strtab.sh_size) continue;
        const char* name = names + sym.st_name;
        if (ELF64_ST_TYPE(sym.st_info) == STT_FILE) {
          allocator_file = IsAllocatorFile(name);
          continue;
        }
        // Only definitions count: a non-PIE executable that merely takes
        // malloc's address has an undefined malloc with a value (its
        // canonical PLT entry), and dlsym finds that entry in the executable.
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF) continue;
        if (dynsym) {
          if (StrEq(name, "malloc")) out->defines_malloc = true;
          continue;
        }
        if (StrEq(name, "MallocHook_AddNewHook")) out->add_new = sym.st_value;
        if (StrEq(name, "MallocHook_AddDeleteHook")) out->add_delete = sym.st_value;
        if (StrEq(name, "malloc")) out->defines_malloc = true;
        bool local = ELF64_ST_BIND(sym.st_info) == STB_LOCAL;
        if (sym.st_size > 0 && (IsAllocatorSymbol(name) || (local && allocator_file))) {
          AddRange(g_bias + sym.st_value, sym.st_size);
        }
      }
    }
  }
  munmap(map, size);
}

// The callbacks run inside tcmalloc's malloc/free. The guard test in
// ShouldRecord makes them skip whatever our interposed functions or the
// tracer itself allocate: those are recorded once, elsewhere, or not at all.
__attribute__((noinline)) void OnNew(const void* ptr, size_t size) {
  if (ptr == nullptr || !ShouldRecord()) return;
  GuardScope guard;
  ErrnoSaver errno_saver;
  if (!KeepAllocation(ptr)) return;
  CallSite site{__builtin_return_address(0), __builtin_frame_address(0),
                g_range_count > 0 ? InAllocator : nullptr};
  RecordAlloc(format::AllocFn::kMallocHook, ptr, size, site);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);  // keeps the frame live (no tail call)
}

__attribute__((noinline)) void OnDelete(const void* ptr) {
  if (ptr == nullptr) return;
  if (!ShouldRecord()) {
    // The delete hook runs before tcmalloc releases the block.
    ForgetSampled(ptr);
    return;
  }
  GuardScope guard;
  ErrnoSaver errno_saver;
  if (!KeepFree(ptr)) return;
  uint64_t ts = NowNs();
  const uint32_t cpu = CurrentCpu();
  CallSite site{__builtin_return_address(0), __builtin_frame_address(0),
                g_range_count > 0 ? InAllocator : nullptr};
  RecordFree(format::FreeFn::kMallocHook, ts, cpu, ptr, 0, site);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

// The malloc that the program's calls reach (dlsym(RTLD_DEFAULT)) must be
// the tracer's, unless the executable defines its own (handled below). A
// shared object preloaded BEFORE the tracer that defines malloc (e.g.
// LD_PRELOAD=libtcmalloc.so.4:libcrossfree-trace.so) takes every call and
// the tracer records nothing: say so, with what to do.
void CheckPreloadOrder(const ExeInfo& exe, void* dyn_malloc) {
  if (dyn_malloc == nullptr || InExe(exe, dyn_malloc)) return;
  Dl_info ours;
  Dl_info theirs;
  if (dladdr(reinterpret_cast<void*>(&CheckPreloadOrder), &ours) == 0 ||
      dladdr(dyn_malloc, &theirs) == 0 || theirs.dli_fbase == ours.dli_fbase) {
    return;
  }
  MessageLine()
      .Add("malloc is taken by ")
      .Add(theirs.dli_fname != nullptr ? theirs.dli_fname : "another library")
      .Add(", loaded before libcrossfree-trace.so, so allocations are not traced; put "
           "libcrossfree-trace.so first in LD_PRELOAD (crossfree record --preload LIB -- CMD "
           "does)")
      .Print();
}

}  // namespace

bool ProbeMallocHook() {
  ExeInfo exe;
  dl_iterate_phdr(FindExe, &exe);
  if (exe.hi == 0) return false;
  void* dyn_new = dlsym(RTLD_DEFAULT, "MallocHook_AddNewHook");
  void* dyn_delete = dlsym(RTLD_DEFAULT, "MallocHook_AddDeleteHook");
  void* dyn_malloc = dlsym(RTLD_DEFAULT, "malloc");
  CheckPreloadOrder(exe, dyn_malloc);
  g_bias = exe.bias;
  SymtabResult symtab;
  ReadSymtab(&symtab);
  SortRanges();
  if (dyn_new != nullptr && dyn_delete != nullptr && InExe(exe, dyn_new) &&
      InExe(exe, dyn_delete)) {
    g_add_new = reinterpret_cast<AddNewHookFn>(dyn_new);
    g_add_delete = reinterpret_cast<AddDeleteHookFn>(dyn_delete);
    return true;
  }
  if (symtab.add_new != 0 && symtab.add_delete != 0) {
    g_add_new = reinterpret_cast<AddNewHookFn>(exe.bias + symtab.add_new);
    g_add_delete = reinterpret_cast<AddDeleteHookFn>(exe.bias + symtab.add_delete);
    return true;
  }
  // Only the executable's own allocator needs this (a shared libtcmalloc is
  // reached by interposition like any other allocator), and only a real
  // definition of malloc in it (.symtab or .dynsym) takes calls away from
  // the tracer.
  if (symtab.defines_malloc) {
    MessageLine()
        .Add(MainExePath())
        .Add(" defines its own malloc (static allocator) and does not expose gperftools' "
             "MallocHook API, so its allocations are not traced; relink with "
             "-Wl,--export-dynamic-symbol=MallocHook_AddNewHook,--export-dynamic-symbol="
             "MallocHook_AddDeleteHook (or -rdynamic), or do not strip its symbol table")
        .Print();
  }
  return false;
}

void RegisterMallocHooks() {
  if (g_add_new == nullptr || g_add_delete == nullptr) return;
  GuardScope guard;
  if (g_add_new(OnNew) == 0 || g_add_delete(OnDelete) == 0) {
    MessageLine().Add("MallocHook registration failed; static tcmalloc events are not traced").Print();
  }
}

}  // namespace crossfree::tracer
