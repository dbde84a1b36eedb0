// SPDX-License-Identifier: Apache-2.0
// libcrossfree-tccount.so: a validation preload that counts the real central
// free-list transfers of Debian's libtcmalloc.so.4 (gperftools 2.10), per
// thread, to compare with `crossfree simulate`. Load it BEFORE the library:
//   LD_PRELOAD=libcrossfree-tccount.so:/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
// libtcmalloc calls ThreadCache::FetchFromCentralCache and
// ReleaseToCentralCache through its PLT, so the definitions below win and
// forward to the library's own (dlsym RTLD_NEXT). Counts are printed as JSON
// at exit to $CROSSFREE_TCCOUNT_OUTPUT ("%p" = pid; default stderr).
//
// It relies on the 2.10 x86-64 layout of ThreadCache (FreeList i at
// this + 32*i, its uint32 length at +8), checked against the disassembly.
// Any thread may call the hooks; nothing here allocates.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kMaxThreads = 4096;
constexpr int kMaxCallers = 16;  // distinct return addresses of ReleaseToCentralCache

// Plain integers updated with __atomic builtins: the tables must be
// zero-initialized statically, since libtcmalloc's own constructor calls
// the hooks before this library's constructors would run.
struct Slot {
  uint32_t tid;
  char name[16];
  uint64_t fetch_calls;
  uint64_t fetched_objects;
  uint64_t release_calls;
  uint64_t released_objects;
  uint64_t release_by_caller[kMaxCallers];
};

Slot g_slots[kMaxThreads];
int g_next_slot;
uintptr_t g_callers[kMaxCallers];
uint64_t g_overflow;

void Add(uint64_t* counter, uint64_t n) { __atomic_fetch_add(counter, n, __ATOMIC_RELAXED); }
uint64_t Load(const uint64_t* counter) { return __atomic_load_n(counter, __ATOMIC_RELAXED); }

using FetchFn = void* (*)(void*, unsigned, int, void* (*)(size_t));
using ReleaseFn = void (*)(void*, void*, unsigned, int);
std::atomic<FetchFn> g_fetch{nullptr};
std::atomic<ReleaseFn> g_release{nullptr};

constexpr const char kFetchName[] = "_ZN8tcmalloc11ThreadCache21FetchFromCentralCacheEjiPFPvmE";
constexpr const char kReleaseName[] =
    "_ZN8tcmalloc11ThreadCache21ReleaseToCentralCacheEPNS0_8FreeListEji";

__thread int t_slot __attribute__((tls_model("initial-exec"))) = -1;

Slot* MySlot() {
  if (t_slot < 0) {
    int s = __atomic_fetch_add(&g_next_slot, 1, __ATOMIC_RELAXED);
    if (s >= kMaxThreads) {
      Add(&g_overflow, 1);
      return nullptr;
    }
    t_slot = s;
    g_slots[s].tid = static_cast<uint32_t>(syscall(SYS_gettid));
  }
  Slot* slot = &g_slots[t_slot];
  // The thread's current name (it may be set after the thread started).
  prctl(PR_GET_NAME, slot->name, 0, 0, 0);
  slot->name[15] = '\0';
  return slot;
}

uint32_t ListLength(const void* list) {
  uint32_t length;
  std::memcpy(&length, static_cast<const char*>(list) + 8, sizeof(length));
  return length;
}

int CallerIndex(uintptr_t ret) {
  for (int i = 0; i < kMaxCallers; ++i) {
    uintptr_t cur = __atomic_load_n(&g_callers[i], __ATOMIC_ACQUIRE);
    if (cur == ret) return i;
    if (cur == 0) {
      uintptr_t expected = 0;
      if (__atomic_compare_exchange_n(&g_callers[i], &expected, ret, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE) ||
          expected == ret) {
        return i;
      }
    }
  }
  return kMaxCallers - 1;
}

template <typename Fn>
Fn Resolve(std::atomic<Fn>& cache, const char* name) {
  Fn fn = cache.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    if (fn == nullptr) {
      static const char kMsg[] = "tccount: cannot find the real ThreadCache function\n";
      (void)!write(2, kMsg, sizeof(kMsg) - 1);
      abort();
    }
    cache.store(fn, std::memory_order_release);
  }
  return fn;
}

const char* CauseOf(uintptr_t ret) {
  Dl_info info;
  if (ret == 0 || dladdr(reinterpret_cast<void*>(ret), &info) == 0 || info.dli_sname == nullptr) {
    return "other";
  }
  if (std::strstr(info.dli_sname, "ListTooLong")) return "list_too_long";
  if (std::strstr(info.dli_sname, "Scavenge")) return "scavenge";
  if (std::strstr(info.dli_sname, "Cleanup")) return "thread_exit";
  return "other";
}

void Append(char* buf, size_t cap, size_t* len, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
void Append(char* buf, size_t cap, size_t* len, const char* fmt, ...) {
  if (*len >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (n > 0) *len += static_cast<size_t>(n);
  if (*len > cap) *len = cap;
}

void WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

__attribute__((destructor)) void Report() {
  static char buf[1 << 20];
  size_t len = 0;
  const char* causes[kMaxCallers];
  for (int i = 0; i < kMaxCallers; ++i) causes[i] = CauseOf(__atomic_load_n(&g_callers[i], __ATOMIC_ACQUIRE));
  int n = __atomic_load_n(&g_next_slot, __ATOMIC_RELAXED);
  if (n > kMaxThreads) n = kMaxThreads;
  Append(buf, sizeof(buf), &len, "{\"tool\": \"tccount\", \"threads\": [");
  for (int s = 0; s < n; ++s) {
    Slot& slot = g_slots[s];
    uint64_t by_cause[4] = {0, 0, 0, 0};  // list_too_long, scavenge, thread_exit, other
    for (int i = 0; i < kMaxCallers; ++i) {
      uint64_t c = Load(&slot.release_by_caller[i]);
      int k = std::strcmp(causes[i], "list_too_long") == 0 ? 0
              : std::strcmp(causes[i], "scavenge") == 0    ? 1
              : std::strcmp(causes[i], "thread_exit") == 0 ? 2
                                                            : 3;
      by_cause[k] += c;
    }
    char name[16];
    std::memcpy(name, slot.name, sizeof(name));
    name[15] = '\0';
    for (char& c : name) {
      if (c == '"' || c == '\\' || (c != '\0' && c < 0x20)) c = '_';
    }
    Append(buf, sizeof(buf), &len,
           "%s\n  {\"tid\": %u, \"name\": \"%s\", \"fetch_calls\": %llu, \"fetched_objects\": %llu, "
           "\"release_calls\": %llu, \"released_objects\": %llu, \"release_calls_by_cause\": "
           "{\"list_too_long\": %llu, \"scavenge\": %llu, \"thread_exit\": %llu, \"other\": %llu}}",
           s == 0 ? "" : ",", slot.tid, name,
           static_cast<unsigned long long>(Load(&slot.fetch_calls)),
           static_cast<unsigned long long>(Load(&slot.fetched_objects)),
           static_cast<unsigned long long>(Load(&slot.release_calls)),
           static_cast<unsigned long long>(Load(&slot.released_objects)),
           static_cast<unsigned long long>(by_cause[0]),
           static_cast<unsigned long long>(by_cause[1]),
           static_cast<unsigned long long>(by_cause[2]),
           static_cast<unsigned long long>(by_cause[3]));
  }
  Append(buf, sizeof(buf), &len, "\n], \"pid\": %d, \"untracked_threads\": %llu}\n",
         static_cast<int>(getpid()), static_cast<unsigned long long>(Load(&g_overflow)));
  // "%p" in the path becomes the pid, so a launcher (crossfree record) and
  // the program it runs do not overwrite each other's counts.
  const char* path = getenv("CROSSFREE_TCCOUNT_OUTPUT");
  int fd = 2;
  if (path != nullptr && *path != '\0') {
    char expanded[4096];
    size_t out = 0;
    for (const char* p = path; *p != '\0' && out + 16 < sizeof(expanded); ++p) {
      if (p[0] == '%' && p[1] == 'p') {
        out += static_cast<size_t>(snprintf(expanded + out, sizeof(expanded) - out, "%d",
                                            static_cast<int>(getpid())));
        ++p;
      } else {
        expanded[out++] = *p;
      }
    }
    expanded[out] = '\0';
    fd = open(expanded, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fd = 2;
  }
  WriteAll(fd, buf, len);
  if (fd != 2) close(fd);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* _ZN8tcmalloc11ThreadCache21FetchFromCentralCacheEjiPFPvmE(
    void* self, unsigned cl, int byte_size, void* (*oom_handler)(size_t)) {
  FetchFn real = Resolve(g_fetch, kFetchName);
  void* result = real(self, cl, byte_size, oom_handler);
  if (Slot* slot = MySlot()) {
    Add(&slot->fetch_calls, 1);
    if (result != nullptr) {
      // The list was empty; all fetched objects but the returned one are in it now.
      const void* list = static_cast<const char*>(self) + 32 * static_cast<size_t>(cl);
      Add(&slot->fetched_objects, 1 + ListLength(list));
    }
  }
  return result;
}

__attribute__((visibility("default"))) void
_ZN8tcmalloc11ThreadCache21ReleaseToCentralCacheEPNS0_8FreeListEji(void* self, void* list,
                                                                   unsigned cl, int n) {
  ReleaseFn real = Resolve(g_release, kReleaseName);
  uint32_t length = ListLength(list);
  uint64_t objects = static_cast<uint64_t>(n) < length ? static_cast<uint64_t>(n) : length;
  uintptr_t caller = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  if (Slot* slot = MySlot()) {
    Add(&slot->release_calls, 1);
    Add(&slot->released_objects, objects);
    Add(&slot->release_by_caller[CallerIndex(caller)], 1);
  }
  real(self, list, cl, n);
}

}  // extern "C"
