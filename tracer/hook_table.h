// SPDX-License-Identifier: Apache-2.0
// Tracer: the one table of every symbol libcrossfree-trace.so defines in
// place of the program's. Each row is
//   X(field, "symbol", required, return type, (parameter types))
// and the table is expanded three times:
//   - real_alloc.h: RealFunctions gets one pointer per row of
//     CROSSFREE_NEXT_HOOKS (the next definition, dlsym RTLD_NEXT);
//   - real_alloc.cc: the resolver looks each of them up (required rows
//     abort when missing: the tracer cannot forward without them);
//   - hook_exports.cc: the build prints the linker version script from
//     both lists, so the library exports exactly these symbols.
// The definitions themselves are in interpose.cc (allocation),
// interpose_process.cc (threads, exit, exec), interpose_descriptors.cc
// (the tracer's own descriptors), interpose_blocking.cc
// (calls that may wait long) and central_cache.cc
// (tcmalloc's central free list, resolved lazily there: it exists only in
// processes that load gperftools tcmalloc). Adding a hook: a row here, its
// definition there; docs/design.md, "How to add an allocation function".
//
// No code: a list of macros, usable from C++ in any context. The types
// they name come from the system headers included here.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// Hooks that forward to the next definition through RealFunctions.
#define CROSSFREE_NEXT_HOOKS(X)                                                              \
  X(malloc, "malloc", true, void*, (size_t))                                                 \
  X(free, "free", true, void, (void*))                                                       \
  X(calloc, "calloc", true, void*, (size_t, size_t))                                         \
  X(realloc, "realloc", true, void*, (void*, size_t))                                        \
  X(reallocarray, "reallocarray", false, void*, (void*, size_t, size_t))                     \
  X(posix_memalign, "posix_memalign", true, int, (void**, size_t, size_t))                   \
  X(aligned_alloc, "aligned_alloc", false, void*, (size_t, size_t))                          \
  X(memalign, "memalign", false, void*, (size_t, size_t))                                    \
  X(valloc, "valloc", false, void*, (size_t))                                                \
  X(pvalloc, "pvalloc", false, void*, (size_t))                                              \
  X(malloc_usable_size, "malloc_usable_size", false, size_t, (void*))                        \
  /* C++ operators: null when no later object defines them (a process  */                    \
  /* without libstdc++); the hooks then fall back to the malloc family. */                   \
  X(op_new, "_Znwm", false, void*, (size_t))                                                 \
  X(op_new_array, "_Znam", false, void*, (size_t))                                           \
  X(op_new_nothrow, "_ZnwmRKSt9nothrow_t", false, void*, (size_t, const void*))              \
  X(op_new_array_nothrow, "_ZnamRKSt9nothrow_t", false, void*, (size_t, const void*))        \
  X(op_new_aligned, "_ZnwmSt11align_val_t", false, void*, (size_t, size_t))                  \
  X(op_new_array_aligned, "_ZnamSt11align_val_t", false, void*, (size_t, size_t))            \
  X(op_new_aligned_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t", false, void*,              \
    (size_t, size_t, const void*))                                                           \
  X(op_new_array_aligned_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t", false, void*,        \
    (size_t, size_t, const void*))                                                           \
  X(op_delete, "_ZdlPv", false, void, (void*))                                               \
  X(op_delete_array, "_ZdaPv", false, void, (void*))                                         \
  X(op_delete_sized, "_ZdlPvm", false, void, (void*, size_t))                                \
  X(op_delete_array_sized, "_ZdaPvm", false, void, (void*, size_t))                          \
  X(op_delete_aligned, "_ZdlPvSt11align_val_t", false, void, (void*, size_t))                \
  X(op_delete_array_aligned, "_ZdaPvSt11align_val_t", false, void, (void*, size_t))          \
  X(op_delete_sized_aligned, "_ZdlPvmSt11align_val_t", false, void, (void*, size_t, size_t)) \
  X(op_delete_array_sized_aligned, "_ZdaPvmSt11align_val_t", false, void,                    \
    (void*, size_t, size_t))                                                                 \
  X(op_delete_nothrow, "_ZdlPvRKSt9nothrow_t", false, void, (void*, const void*))            \
  X(op_delete_array_nothrow, "_ZdaPvRKSt9nothrow_t", false, void, (void*, const void*))      \
  X(op_delete_aligned_nothrow, "_ZdlPvSt11align_val_tRKSt9nothrow_t", false, void,           \
    (void*, size_t, const void*))                                                            \
  X(op_delete_array_aligned_nothrow, "_ZdaPvSt11align_val_tRKSt9nothrow_t", false, void,     \
    (void*, size_t, const void*))                                                            \
  /* Threads, names, exit and exec (interpose_process.cc). */                                \
  X(pthread_setname_np, "pthread_setname_np", false, int, (unsigned long, const char*))      \
  X(prctl, "prctl", false, int,                                                              \
    (int, unsigned long, unsigned long, unsigned long, unsigned long))                       \
  X(pthread_getattr_np, "pthread_getattr_np", false, int, (unsigned long, void*))            \
  X(pipe2, "pipe2", false, int, (int*, int))                                                 \
  /* The tracer's own descriptors (interpose_descriptors.cc). */                            \
  X(close, "close", false, int, (int))                                                       \
  X(close_range, "close_range", false, int, (unsigned, unsigned, int))                       \
  X(closefrom, "closefrom", false, void, (int))                                              \
  X(dup2, "dup2", false, int, (int, int))                                                    \
  X(dup3, "dup3", false, int, (int, int, int))                                               \
  X(exit_now, "_exit", false, void, (int))                                                   \
  X(execve, "execve", false, int, (const char*, char* const[], char* const[]))               \
  X(execv, "execv", false, int, (const char*, char* const[]))                                \
  X(execvp, "execvp", false, int, (const char*, char* const[]))                              \
  X(execvpe, "execvpe", false, int, (const char*, char* const[], char* const[]))             \
  /* Calls that may wait long (interpose_blocking.cc): flush first. */                       \
  X(epoll_wait, "epoll_wait", false, int, (int, struct epoll_event*, int, int))              \
  X(epoll_pwait, "epoll_pwait", false, int,                                                  \
    (int, struct epoll_event*, int, int, const sigset_t*))                                   \
  X(poll, "poll", false, int, (struct pollfd*, nfds_t, int))                                 \
  X(ppoll, "ppoll", false, int,                                                              \
    (struct pollfd*, nfds_t, const struct timespec*, const sigset_t*))                       \
  X(select, "select", false, int, (int, fd_set*, fd_set*, fd_set*, struct timeval*))         \
  X(pselect, "pselect", false, int,                                                          \
    (int, fd_set*, fd_set*, fd_set*, const struct timespec*, const sigset_t*))               \
  X(accept, "accept", false, int, (int, struct sockaddr*, socklen_t*))                       \
  X(accept4, "accept4", false, int, (int, struct sockaddr*, socklen_t*, int))                \
  X(nanosleep, "nanosleep", false, int, (const struct timespec*, struct timespec*))          \
  X(clock_nanosleep, "clock_nanosleep", false, int,                                          \
    (clockid_t, int, const struct timespec*, struct timespec*))                              \
  X(sleep, "sleep", false, unsigned int, (unsigned int))                                     \
  X(usleep, "usleep", false, int, (useconds_t))                                              \
  X(pause, "pause", false, int, ())                                                          \
  X(sigsuspend, "sigsuspend", false, int, (const sigset_t*))                                 \
  X(sigwaitinfo, "sigwaitinfo", false, int, (const sigset_t*, siginfo_t*))                   \
  X(sigtimedwait, "sigtimedwait", false, int,                                                \
    (const sigset_t*, siginfo_t*, const struct timespec*))                                   \
  X(waitpid, "waitpid", false, pid_t, (pid_t, int*, int))                                    \
  X(wait, "wait", false, pid_t, (int*))                                                      \
  X(wait4, "wait4", false, pid_t, (pid_t, int*, int, struct rusage*))                        \
  X(waitid, "waitid", false, int, (idtype_t, id_t, siginfo_t*, int))

// Symbols defined without a RealFunctions slot: _Exit forwards to the
// real _exit; the tcmalloc central free-list methods resolve their next
// definition lazily (central_cache.cc). X(name, "symbol").
#define CROSSFREE_OTHER_HOOKS(X)                                               \
  X(exit_c99, "_Exit")                                                         \
  X(central_fetch, "_ZN8tcmalloc11ThreadCache21FetchFromCentralCacheEjiPFPvmE") \
  X(central_release, "_ZN8tcmalloc11ThreadCache21ReleaseToCentralCacheEPNS0_8FreeListEji") \
  X(central_insert, "_ZN8tcmalloc15CentralFreeList11InsertRangeEPvS1_i")       \
  X(central_remove, "_ZN8tcmalloc15CentralFreeList11RemoveRangeEPPvS2_i")
