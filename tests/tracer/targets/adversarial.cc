// SPDX-License-Identifier: Apache-2.0
// Tracer test target: allocations from code without CFI whose %rbp is
// 0, 1, -8, -16, odd, unmapped, just below/above the stack, non-canonical,
// a heap pointer, a self-loop and a two-frame cycle, on the main thread, a
// pthread, a makecontext coroutine, a sigaltstack signal handler and a
// thread created with clone(2) directly. Every run must exit 0 and print
// the same stdout, traced (any unwinder) or not. stderr gets the "fn"
// lines (addresses differ between runs).
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <new>

// Functions WITHOUT CFI (top-level asm gets no .cfi_* directives) that call
// the allocator with %rbp holding an arbitrary value, as hand-written
// assembly and JIT code may. An unwinder that trusts %rbp here faults.
__asm__(
    ".text\n"
// uintptr_t tt_adv_call(uintptr_t rbp_value, uintptr_t (*fn)(uintptr_t),
//                       uintptr_t arg): calls fn(arg) with %rbp = rbp_value.
    ".globl tt_adv_call\n"
    ".type tt_adv_call, @function\n"
    "tt_adv_call:\n"
    "push %rbp\n"
    "push %rbx\n"
    "sub $8, %rsp\n"
    "mov %rdi, %rbp\n"
    "mov %rsi, %rax\n"
    "mov %rdx, %rdi\n"
    "call *%rax\n"
    "add $8, %rsp\n"
    "pop %rbx\n"
    "pop %rbp\n"
    "ret\n"
    ".size tt_adv_call, .-tt_adv_call\n"
// void* tt_adv_malloc_m8(size_t n): push %rbp; mov $-8,%rbp; call malloc.
    ".globl tt_adv_malloc_m8\n"
    ".type tt_adv_malloc_m8, @function\n"
    "tt_adv_malloc_m8:\n"
    "push %rbp\n"
    "mov $-8, %rbp\n"
    "call malloc@PLT\n"
    "pop %rbp\n"
    "ret\n"
    ".size tt_adv_malloc_m8, .-tt_adv_malloc_m8\n"
    "    .previous\n");

extern "C" uintptr_t tt_adv_call(uintptr_t rbp, uintptr_t (*fn)(uintptr_t), uintptr_t arg);
extern "C" void* tt_adv_malloc_m8(size_t n);

namespace {

using Fn = uintptr_t (*)(uintptr_t);

constexpr size_t kPage = 4096;
constexpr size_t kAltStack = 64 * 1024;

uintptr_t g_unmapped = 0;  // a page that was mapped and unmapped
uintptr_t g_heap = 0;      // a live heap block

// The allocation functions, called straight from tt_adv_call (no wrapper
// frame in between: the hook's caller is the code without CFI).
template <typename F>
Fn AsFn(F* f) {
  return reinterpret_cast<Fn>(reinterpret_cast<void*>(f));
}

struct Result {
  int cases = 0;
  unsigned checksum = 0;
};

// Runs every case on the current stack, whose bounds are [lo, hi).
__attribute__((noinline)) void RunCases(uintptr_t lo, uintptr_t hi, Result* r) {
  volatile uintptr_t self[2];
  self[0] = reinterpret_cast<uintptr_t>(&self[0]);
  self[1] = reinterpret_cast<uintptr_t>(&RunCases);
  volatile uintptr_t cycle[4];  // two records, each pointing at the other
  cycle[0] = reinterpret_cast<uintptr_t>(&cycle[2]);
  cycle[1] = reinterpret_cast<uintptr_t>(&RunCases);
  cycle[2] = reinterpret_cast<uintptr_t>(&cycle[0]);
  cycle[3] = reinterpret_cast<uintptr_t>(&RunCases);
  const uintptr_t sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t values[] = {
      0,
      1,
      static_cast<uintptr_t>(-8),
      static_cast<uintptr_t>(-16),
      0x7f0012345677,          // odd
      g_unmapped,              // unmapped page
      g_unmapped + kPage - 8,  // record straddling into the next page
      lo - 16,                 // just below the stack
      lo - 8,
      hi,                      // just above the stack
      hi - 8,                  // record straddling the top
      hi + 4096,
      sp - 512,                // below the stack pointer
      0x0000800000000000,      // non-canonical
      0xffff800000000000,      // kernel half
      g_heap,                  // mapped, but not a stack
      reinterpret_cast<uintptr_t>(&self[0]),   // frame pointing to itself
      reinterpret_cast<uintptr_t>(&cycle[0]),  // cycle of two frames
  };
  const Fn kMalloc = AsFn(&malloc);
  const Fn kFree = AsFn(&free);
  const Fn kNew = AsFn(static_cast<void* (*)(size_t)>(&::operator new));
  const Fn kDelete = AsFn(static_cast<void (*)(void*) noexcept>(&::operator delete));
  for (uintptr_t v : values) {
    uintptr_t p = tt_adv_call(v, kMalloc, 24);
    memset(reinterpret_cast<void*>(p), 0x5a, 24);
    r->checksum += static_cast<unsigned char*>(reinterpret_cast<void*>(p))[7];
    tt_adv_call(v, kFree, p);
    uintptr_t q = tt_adv_call(v, kNew, 40);
    memset(reinterpret_cast<void*>(q), 0x21, 40);
    r->checksum += static_cast<unsigned char*>(reinterpret_cast<void*>(q))[39];
    tt_adv_call(v, kDelete, q);
    ++r->cases;
  }
  void* m = tt_adv_malloc_m8(16);
  memset(m, 1, 16);
  r->checksum += static_cast<unsigned char*>(m)[3];
  free(m);
  ++r->cases;
}

void ThreadBounds(uintptr_t* lo, uintptr_t* hi) {
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  *lo = reinterpret_cast<uintptr_t>(addr);
  *hi = *lo + size;
}

// "fn NAME START SIZE", on stderr: stdout must not change between runs.
void ReportFunction(const char* name, void* fn) {
  Dl_info info;
  void* sym = nullptr;
  unsigned long size = 0;
  if (dladdr1(fn, &info, &sym, RTLD_DL_SYMENT) != 0 && sym != nullptr) {
    size = static_cast<unsigned long>(static_cast<const ElfW(Sym)*>(sym)->st_size);
  }
  fprintf(stderr, "fn %s %p %lu\n", name, fn, size);
}

void Report(const char* context, const Result& r) {
  printf("%s: %d cases, checksum %u\n", context, r.cases, r.checksum);
}

// A stack of `size` bytes between two PROT_NONE guard pages.
uintptr_t MapGuardedStack(size_t size) {
  void* m = mmap(nullptr, size + 2 * kPage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) abort();
  auto base = reinterpret_cast<uintptr_t>(m);
  mprotect(m, kPage, PROT_NONE);
  mprotect(reinterpret_cast<void*>(base + kPage + size), kPage, PROT_NONE);
  return base + kPage;
}

// The cases on the calling thread's own stack, reported as `context`.
void RunOnThreadStack(const char* context) {
  uintptr_t lo, hi;
  ThreadBounds(&lo, &hi);
  Result r;
  RunCases(lo, hi, &r);
  Report(context, r);
}

void* ThreadMain(void*) {
  RunOnThreadStack("pthread");
  return nullptr;
}

// Coroutine.
ucontext_t g_main_ctx, g_co_ctx;
uintptr_t g_co_lo, g_co_hi;
Result g_co_result;
void CoroutineMain() { RunCases(g_co_lo, g_co_hi, &g_co_result); }

// Signal handler on an alternate stack.
uintptr_t g_alt_lo, g_alt_hi;
Result g_alt_result;
void OnSignal(int) { RunCases(g_alt_lo, g_alt_hi, &g_alt_result); }

// Raw clone thread (shares the creator's TLS: no CLONE_SETTLS).
uintptr_t g_clone_lo, g_clone_hi;
Result g_clone_result;
int CloneMain(void*) {
  RunCases(g_clone_lo, g_clone_hi, &g_clone_result);
  return 0;
}

}  // namespace

int main() {
  ReportFunction("tt_adv_call", reinterpret_cast<void*>(&tt_adv_call));
  ReportFunction("tt_adv_malloc_m8", reinterpret_cast<void*>(&tt_adv_malloc_m8));
  void* page = mmap(nullptr, kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(page, kPage);
  g_unmapped = reinterpret_cast<uintptr_t>(page);
  g_heap = reinterpret_cast<uintptr_t>(calloc(1, 256));
  setvbuf(stdout, nullptr, _IOLBF, 0);

  RunOnThreadStack("main");
  {
    pthread_t t;
    pthread_create(&t, nullptr, ThreadMain, nullptr);
    pthread_join(t, nullptr);
  }
  {
    constexpr size_t kSize = 256 * 1024;
    g_co_lo = MapGuardedStack(kSize);
    g_co_hi = g_co_lo + kSize;
    getcontext(&g_co_ctx);
    g_co_ctx.uc_stack.ss_sp = reinterpret_cast<void*>(g_co_lo);
    g_co_ctx.uc_stack.ss_size = kSize;
    g_co_ctx.uc_link = &g_main_ctx;
    makecontext(&g_co_ctx, CoroutineMain, 0);
    swapcontext(&g_main_ctx, &g_co_ctx);
    Report("coroutine", g_co_result);
  }
  {
    g_alt_lo = MapGuardedStack(kAltStack);
    g_alt_hi = g_alt_lo + kAltStack;
    stack_t ss = {};
    ss.ss_sp = reinterpret_cast<void*>(g_alt_lo);
    ss.ss_size = kAltStack;
    sigaltstack(&ss, nullptr);
    struct sigaction sa = {};
    sa.sa_handler = OnSignal;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, nullptr);
    raise(SIGUSR1);
    Report("sigaltstack", g_alt_result);
  }
  {
    constexpr size_t kSize = 256 * 1024;
    g_clone_lo = MapGuardedStack(kSize);
    g_clone_hi = g_clone_lo + kSize;
    static pid_t tid = 0;
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    int rc = clone(CloneMain, reinterpret_cast<void*>(g_clone_hi), flags, nullptr, &tid,
                   nullptr, &tid);
    if (rc < 0) abort();
    // CLONE_CHILD_CLEARTID: the kernel zeroes tid and wakes us at exit.
    for (;;) {
      pid_t v = __atomic_load_n(&tid, __ATOMIC_ACQUIRE);
      if (v == 0) break;
      syscall(SYS_futex, &tid, FUTEX_WAIT, v, nullptr, nullptr, 0);
    }
    Report("clone", g_clone_result);
  }
  free(reinterpret_cast<void*>(g_heap));
  // The tracer's own descriptors (trace file, libunwind's validation pipe,
  // the ELF files hybrid reads CFI from) must not shift the target's.
  printf("first free descriptor: %d\n", open("/dev/null", O_RDONLY));
  return 0;
}
