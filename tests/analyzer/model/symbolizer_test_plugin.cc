// SPDX-License-Identifier: Apache-2.0
// Symbolizer tests: a shared library the test loads with dlopen, so its
// module is mapped at a run-time address and listed after start-up.
#include <cstdint>

#include "tests/analyzer/model/symbolizer_test_lib.h"

namespace {

__attribute__((noinline, noclone)) uint64_t PluginCapture() {
  auto address = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" : "+r"(address));
  return address;
}

}  // namespace

extern "C" __attribute__((visibility("default"), noinline)) void crossfree_symbolizer_plugin_caller(
    crossfree::symbolizer_test::Site* site) {
  site->return_address = PluginCapture(); site->line = __LINE__;
}
