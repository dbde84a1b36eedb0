// SPDX-License-Identifier: Apache-2.0
// Tracer: process and thread hooks that are not allocations. Thread names:
// pthread_setname_np and prctl(PR_SET_NAME) are forwarded first; when they
// succeed, the new name is recorded for the thread it applies to. _exit and
// _Exit skip the library destructor that normally flushes the buffers
// (shells and fork children use them), so they flush first; so do the exec
// functions (exec runs no destructors). A failed exec resumes recording.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer/owned_fds.h"
#include "tracer/real_alloc.h"
#include "tracer/recorder.h"
#include "tracer/sys.h"

extern char** environ;

using crossfree::tracer::ErrnoSaver;
using crossfree::tracer::GuardScope;
using crossfree::tracer::Real;
using crossfree::tracer::ShouldRecord;
using crossfree::tracer::StrContains;

extern "C" __attribute__((visibility("default"))) int pthread_setname_np(pthread_t thread,
                                                                         const char* name) {
  auto next = Real().pthread_setname_np;
  if (next == nullptr) return ENOSYS;
  int rc = next(static_cast<unsigned long>(thread), name);
  if (rc == 0 && ShouldRecord()) {
    GuardScope guard;
    ErrnoSaver saved;
    crossfree::tracer::NoteThreadName(static_cast<unsigned long>(thread), name);
  }
  return rc;
}

extern "C" __thread int crossfree_in_getattr __attribute__((tls_model("initial-exec")));

// glibc's pthread_getattr_np holds the thread's lock while it allocates (a
// cpu set; for the main thread also fopen of /proc/self/maps). The tracer's
// first stack capture on a thread calls pthread_getattr_np itself for the
// stack bounds, which would wait for that lock forever when the allocation
// came from inside the target's own call: while it runs, the capture does
// not compute bounds (unwind_fp.h).
extern "C" __attribute__((visibility("default"))) int pthread_getattr_np(pthread_t thread,
                                                                         pthread_attr_t* attr) {
  auto next = Real().pthread_getattr_np;
  if (next == nullptr) return ENOSYS;
  __atomic_store_n(&crossfree_in_getattr, crossfree_in_getattr + 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  int rc = next(static_cast<unsigned long>(thread), attr);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&crossfree_in_getattr, crossfree_in_getattr - 1, __ATOMIC_RELAXED);
  return rc;
}

extern "C" __thread int crossfree_in_unwinder __attribute__((tls_model("initial-exec")));

// libunwind's address-validation pipe (see unwind_libunwind.h): created with
// the lowest free descriptors, it would shift the target's own and be read
// from and written into once the target closed and reused those numbers.
// Made for the tracer, it is moved to 500 and above (like the trace file)
// and kept from the program's close and dup2 (owned_fds.h); every other
// pipe2 call is forwarded untouched.
extern "C" __attribute__((visibility("default"))) int pipe2(int fds[2], int flags) {
  auto next = Real().pipe2;
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  int rc = next(fds, flags);
  if (rc != 0 || __atomic_load_n(&crossfree_in_unwinder, __ATOMIC_RELAXED) == 0) return rc;
  for (int i = 0; i < 2; ++i) {
    int high = fcntl(fds[i], F_DUPFD_CLOEXEC, 500);
    if (high >= 0) {
      close(fds[i]);
      fds[i] = high;
    }
    // fds is libunwind's own static pair, so it is the holder a move
    // updates (owned_fds.h).
    crossfree::tracer::OwnFd(&fds[i], nullptr);
  }
  // Closed again when an attach session ends (ReleaseUnwinderPipe).
  crossfree::tracer::NoteUnwinderPipe(fds);
  return rc;
}

extern "C" __attribute__((visibility("default"))) int prctl(int option, ...) {
  // prctl takes up to four more machine words; reading unused ones is what
  // glibc's own variadic wrapper does too.
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long);
  unsigned long a3 = va_arg(ap, unsigned long);
  unsigned long a4 = va_arg(ap, unsigned long);
  unsigned long a5 = va_arg(ap, unsigned long);
  va_end(ap);
  auto next = Real().prctl;
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  int rc = next(option, a2, a3, a4, a5);
  if (rc == 0 && option == PR_SET_NAME && a2 != 0 && ShouldRecord()) {
    GuardScope guard;
    ErrnoSaver saved;
    // The kernel keeps at most 15 bytes; record what it kept.
    const char* src = reinterpret_cast<const char*>(a2);
    char name[16];
    size_t i = 0;
    for (; i < 15 && src[i] != '\0'; ++i) name[i] = src[i];
    name[i] = '\0';
    crossfree::tracer::RecordThreadName(name);
  }
  return rc;
}

namespace {

[[noreturn]] void ExitNow(int status) {
  crossfree::tracer::ShutdownRecorder();
  if (auto next = Real().exit_now; next != nullptr) next(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void _exit(int status) { ExitNow(status); }
extern "C" __attribute__((visibility("default"))) void _Exit(int status) { ExitNow(status); }

namespace {

// A program that starts another with an LD_PRELOAD of its own (`env
// LD_PRELOAD=libtcmalloc.so.4 CMD`) drops the tracer from it: say so once,
// with what to do. An environment without LD_PRELOAD (env -i, a sanitising
// daemon) is a deliberate choice and passes silently.
void CheckPreloadKept(const char* path, char* const envp[]) {
  if (envp == nullptr || !ShouldRecord()) return;
  for (char* const* e = envp; *e != nullptr; ++e) {
    const char* kv = *e;
    static const char kKey[] = "LD_PRELOAD=";
    size_t k = 0;
    while (kKey[k] != '\0' && kv[k] == kKey[k]) ++k;
    if (kKey[k] != '\0') continue;
    if (StrContains(kv + 11, "libcrossfree-trace")) return;
    static int warned = 0;
    if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED) != 0) return;
    GuardScope guard;
    crossfree::tracer::MessageLine()
        .Add(path)
        .Add(" is started with ")
        .Add(kv)
        .Add(", which drops libcrossfree-trace.so: it is not traced; to preload another library, "
             "use `crossfree record --preload LIB -- CMD` (or put libcrossfree-trace.so first in "
             "LD_PRELOAD)")
        .Print();
    return;
  }
}

// Runs one exec call: flush, exec, and resume if it returned (failed).
template <typename Call>
int Exec(const char* path, char* const envp[], Call&& call) {
  {
    ErrnoSaver saved;
    CheckPreloadKept(path, envp);
  }
  bool flushed = crossfree::tracer::PrepareExec();
  int rc = call();
  if (flushed) {
    ErrnoSaver saved;
    crossfree::tracer::FailedExec();
  }
  return rc;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int execve(const char* path, char* const argv[],
                                                             char* const envp[]) {
  auto next = Real().execve;
  return Exec(path, envp, [&] { return next(path, argv, envp); });
}

extern "C" __attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  auto next = Real().execv;
  return Exec(path, environ, [&] { return next(path, argv); });
}

extern "C" __attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  auto next = Real().execvp;
  return Exec(file, environ, [&] { return next(file, argv); });
}

extern "C" __attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[],
                                                              char* const envp[]) {
  auto next = Real().execvpe;
  return Exec(file, envp, [&] { return next(file, argv, envp); });
}
