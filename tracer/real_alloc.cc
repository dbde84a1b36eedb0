// SPDX-License-Identifier: Apache-2.0
// Tracer: dlsym(RTLD_NEXT) resolution of the real functions and the
// bootstrap arena (see real_alloc.h).
#include "tracer/real_alloc.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#include <atomic>

#include "tracer/sys.h"

namespace crossfree::tracer {
namespace {

constexpr int kUnresolved = 0;
constexpr int kResolving = 1;
constexpr int kResolved = 2;

// dlsym allocates a little (its error buffer, on some paths a TLS block).
// 256 KiB is far more than glibc needs; when it runs out, allocations fail
// with ENOMEM rather than reaching the real allocator half-resolved.
}  // namespace

alignas(64) unsigned char g_arena[kArenaBytes];

namespace {
std::atomic<size_t> g_arena_used{0};

// Each arena block is preceded by its size, so realloc can copy it out.
struct ArenaHeader {
  size_t size;
  size_t used_before;  // the arena's fill before this block (ArenaRelease)
};

// A PLT stub: [endbr64] [bnd] jmp *disp(%rip). What dlsym(RTLD_DEFAULT)
// returns for a function whose canonical address is the executable's PLT
// entry (a non-PIE program that takes the function's address): calling it
// would go through the executable's GOT entry, which attach rewrites.
bool IsPltStub(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa) b += 4;
  if (b[0] == 0xf2) ++b;
  return b[0] == 0xff && b[1] == 0x25;
}

struct DefinitionSearch {
  const char* name;
  uintptr_t self;  // an address in the tracer
  void* found;
};

bool Contains(const dl_phdr_info* info, uintptr_t a) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && a >= info->dlpi_addr + ph.p_vaddr &&
        a < info->dlpi_addr + ph.p_vaddr + ph.p_memsz) {
      return true;
    }
  }
  return false;
}

// The first object after the executable, in load order, that defines name
// itself (not the tracer).
int FindDefinition(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<DefinitionSearch*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0' || Contains(info, search->self)) return 0;
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  void* p = dlsym(handle, search->name);
  dlclose(handle);  // only the reference NOLOAD took
  if (p == nullptr || !Contains(info, reinterpret_cast<uintptr_t>(p)) || IsPltStub(p)) return 0;
  search->found = p;
  return 1;
}

}  // namespace

void* GlobalDefinition(const char* name) {
  void* p = dlsym(RTLD_DEFAULT, name);
  if (p == nullptr || !IsPltStub(p)) return p;
  DefinitionSearch search{name, reinterpret_cast<uintptr_t>(&GlobalDefinition), nullptr};
  dl_iterate_phdr(FindDefinition, &search);
  return search.found;
}

namespace {

template <typename T>
void Lookup(T* slot, const char* name, bool required) {
  // Preloaded, the next definition after the tracer; attached, the one
  // the program's GOT entries held (the global scope's).
  void* sym = internal::g_resolve_global ? GlobalDefinition(name) : dlsym(RTLD_NEXT, name);
  if (sym == nullptr && required) {
    MessageLine().Add("cannot find the real ").Add(name).Add(" (dlsym RTLD_NEXT); aborting").Print();
    abort();
  }
  *slot = reinterpret_cast<T>(sym);
}

// The object that defines address: its load base and file name.
bool ObjectOf(const void* address, Dl_info* info) {
  return address != nullptr && dladdr(address, info) != 0 && info->dli_fname != nullptr;
}

bool IsLibStdCxx(const void* address) {
  Dl_info info;
  if (!ObjectOf(address, &info)) return false;
  const char* base = info.dli_fname;
  for (const char* c = info.dli_fname; *c != '\0'; ++c) {
    if (*c == '/') base = c + 1;
  }
  static constexpr char kName[] = "libstdc++.so";
  return __builtin_strncmp(base, kName, sizeof(kName) - 1) == 0;
}

// See StdOperatorsDirect (real_alloc.h).
bool DecideStdOperatorsDirect(const RealFunctions& r) {
  Dl_info self;
  if (!ObjectOf(reinterpret_cast<const void*>(&IsLibStdCxx), &self)) return false;
  for (const char* name : {"malloc", "free", "_Znwm", "_ZdlPv"}) {
    Dl_info first;
    if (!ObjectOf(dlsym(RTLD_DEFAULT, name), &first) || first.dli_fbase != self.dli_fbase) {
      return false;
    }
  }
  for (const void* next : {reinterpret_cast<const void*>(r.op_new),
                           reinterpret_cast<const void*>(r.op_new_array),
                           reinterpret_cast<const void*>(r.op_new_nothrow),
                           reinterpret_cast<const void*>(r.op_new_array_nothrow),
                           reinterpret_cast<const void*>(r.op_delete),
                           reinterpret_cast<const void*>(r.op_delete_array),
                           reinterpret_cast<const void*>(r.op_delete_sized),
                           reinterpret_cast<const void*>(r.op_delete_array_sized),
                           reinterpret_cast<const void*>(r.op_delete_nothrow),
                           reinterpret_cast<const void*>(r.op_delete_array_nothrow)}) {
    if (!IsLibStdCxx(next)) return false;
  }
  return true;
}

void Resolve() {
  int expected = kUnresolved;
  if (!__atomic_compare_exchange_n(&internal::g_real_state, &expected, kResolving, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return;
  }
  RealFunctions r{};
#define CROSSFREE_LOOKUP(field, symbol, required, ret, params) Lookup(&r.field, symbol, required);
  CROSSFREE_NEXT_HOOKS(CROSSFREE_LOOKUP)
#undef CROSSFREE_LOOKUP
  internal::g_real = r;
  internal::g_std_operators_direct = DecideStdOperatorsDirect(r);
  __atomic_store_n(&internal::g_real_state, kResolved, __ATOMIC_RELEASE);
}

}  // namespace

namespace internal {

RealFunctions g_real;
int g_real_state = kUnresolved;
bool g_resolve_global = false;
bool g_std_operators_direct = false;

bool ResolveSlow() {
  Resolve();
  return __atomic_load_n(&g_real_state, __ATOMIC_ACQUIRE) == kResolved;
}

}  // namespace internal

namespace {

// Where a block of `size` bytes aligned to `alignment` starts in a region
// of `capacity` bytes at `base` filled up to `used`, past its header; 0
// when it does not fit.
uintptr_t PlaceBlock(uintptr_t base, size_t used, size_t capacity, size_t size,
                     size_t alignment) {
  uintptr_t start = base + used + sizeof(ArenaHeader);
  start = (start + alignment - 1) & ~(uintptr_t{alignment} - 1);
  const size_t offset = start - base;
  if (offset > capacity || size > capacity - offset) return 0;
  return start;
}

// Writes the block's header and zeroes it (its bytes may be those of a
// released block, or of the stack).
void* StartBlock(uintptr_t start, size_t size, size_t used_before) {
  auto* header = reinterpret_cast<ArenaHeader*>(start - sizeof(ArenaHeader));
  header->size = size;
  header->used_before = used_before;
  __builtin_memset(reinterpret_cast<void*>(start), 0, size);
  return reinterpret_cast<void*>(start);
}

// A block of the open scope's buffer, laid out like an arena block.
void* OwnBufferAlloc(size_t size, size_t alignment) {
  OwnAllocationBuffer& b = tls_own_allocation;
  const auto base = reinterpret_cast<uintptr_t>(b.cur);
  const uintptr_t start =
      PlaceBlock(base, 0, static_cast<size_t>(b.end - b.cur), size, alignment);
  if (start == 0) return nullptr;
  b.cur = reinterpret_cast<unsigned char*>(start + size);
  return StartBlock(start, size, 0);
}

void* ArenaBump(size_t size, size_t alignment) {
  const auto base = reinterpret_cast<uintptr_t>(g_arena);
  size_t used = g_arena_used.load(std::memory_order_relaxed);
  for (;;) {
    const uintptr_t start = PlaceBlock(base, used, kArenaBytes, size, alignment);
    if (start == 0) return nullptr;
    const size_t before = used;
    // Acquire: a block handed back by ArenaRelease may be handed out here
    // again, and the releasing thread's last writes to it must be done
    // before this thread clears it.
    if (g_arena_used.compare_exchange_weak(used, start + size - base, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
      return StartBlock(start, size, before);
    }
  }
}

}  // namespace

void* ArenaAlloc(size_t size, size_t alignment) {
  if (alignment < 16) alignment = 16;
  if (alignment > 4096 || (alignment & (alignment - 1)) != 0) return nullptr;
  if (InOwnAllocationScope()) {
    if (void* p = OwnBufferAlloc(size, alignment)) return p;
  }
  return ArenaBump(size, alignment);
}

void ArenaRelease(void* p) {
  const auto* header = reinterpret_cast<const ArenaHeader*>(static_cast<unsigned char*>(p) -
                                                             sizeof(ArenaHeader));
  size_t end = static_cast<size_t>(static_cast<unsigned char*>(p) - g_arena) + header->size;
  // Only the newest block goes back (the common case: libdw's frame result,
  // freed right after it was made); any other stays used.
  // Release pairs with ArenaBump's acquire (see there).
  g_arena_used.compare_exchange_strong(end, header->used_before, std::memory_order_release,
                                       std::memory_order_relaxed);
}

size_t ArenaBlockSize(const void* p) {
  return reinterpret_cast<const ArenaHeader*>(static_cast<const unsigned char*>(p) -
                                              sizeof(ArenaHeader))->size;
}

}  // namespace crossfree::tracer
