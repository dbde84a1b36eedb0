// SPDX-License-Identifier: Apache-2.0
// Tracer: calls a throwing operator new with the recursion guard held and
// releases the guard even when it throws (std::bad_alloc). C with
// -fexceptions and a cleanup attribute, so the unwinding landing pad needs
// only libgcc's C personality, not libstdc++ (absent in C processes).
#include <stddef.h>

extern __thread int crossfree_tracer_guard __attribute__((tls_model("initial-exec")));

static void ReleaseGuard(int* unused) {
  (void)unused;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&crossfree_tracer_guard, crossfree_tracer_guard - 1, __ATOMIC_RELAXED);
}

void* crossfree_guarded_new(void* (*next)(size_t), size_t size) {
  int token __attribute__((cleanup(ReleaseGuard))) = 0;
  (void)token;
  __atomic_store_n(&crossfree_tracer_guard, crossfree_tracer_guard + 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return next(size);
}

void* crossfree_guarded_new_aligned(void* (*next)(size_t, size_t), size_t size, size_t align) {
  int token __attribute__((cleanup(ReleaseGuard))) = 0;
  (void)token;
  __atomic_store_n(&crossfree_tracer_guard, crossfree_tracer_guard + 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return next(size, align);
}
