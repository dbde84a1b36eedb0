// SPDX-License-Identifier: Apache-2.0
// Symbolizer tests: the known call sites. The tests read the line numbers
// that the code records with __LINE__, so editing this file cannot make
// them stale; keep each capture and its __LINE__ on one line.
#include "tests/analyzer/model/symbolizer_test_lib.h"

namespace crossfree::symbolizer_test {

__attribute__((noinline, noclone)) uint64_t CaptureReturnAddress() {
  auto address = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" : "+r"(address));  // keep the call and its result opaque
  return address;
}

__attribute__((noinline)) void PlainCaller(Site* site) {
  site->return_address = CaptureReturnAddress(); site->line = __LINE__;
}

template <typename T, int N>
__attribute__((noinline)) T Widget<T, N>::Run(Site* site) {
  site->return_address = CaptureReturnAddress(); site->line = __LINE__;
  return static_cast<T>(N);
}
template struct Widget<long, 3>;

static inline __attribute__((always_inline)) void InnerInlined(Site* site) {
  site->return_address = CaptureReturnAddress(); site->line = __LINE__;
}

static inline __attribute__((always_inline)) void MiddleInlined(Site* site) {
  site->middle_line = __LINE__; InnerInlined(site);
}

__attribute__((noinline)) void InlineCaller(Site* site) {
  site->outer_line = __LINE__; MiddleInlined(site);
}

}  // namespace crossfree::symbolizer_test

extern "C" __attribute__((noinline)) void crossfree_symbolizer_test_c_caller(
    crossfree::symbolizer_test::Site* site) {
  site->return_address = crossfree::symbolizer_test::CaptureReturnAddress(); site->line = __LINE__;
}
