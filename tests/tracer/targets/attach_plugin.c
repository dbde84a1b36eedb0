// SPDX-License-Identifier: Apache-2.0
// Tracer test plugin, dlopen'ed by attach_target while `crossfree record
// -p` is attached: its GOT entries must reach the tracer too.
#include <stdlib.h>

// The address its GOT entry for malloc holds (a GLOB_DAT relocation).
__attribute__((visibility("default"))) void* plugin_where_malloc(void) {
  void* (*volatile p)(size_t) = malloc;
  return (void*)p;
}

__attribute__((visibility("default"), noinline)) void* plugin_alloc(size_t n) {
  return malloc(n);
}
