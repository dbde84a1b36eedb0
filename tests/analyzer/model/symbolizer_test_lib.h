// SPDX-License-Identifier: Apache-2.0
// Symbolizer tests: functions with known names and call lines. Each caller
// stores the return address of a call it makes and the source line of that
// call, so a test can check what the symbolizer says about the address.
#pragma once

#include <cstdint>

namespace crossfree::symbolizer_test {

struct Site {
  uint64_t return_address = 0;
  int line = 0;         // line of the call whose return address was captured
  int middle_line = 0;  // two-level inline chain: line of the inner inlined call
  int outer_line = 0;   // line in the out-of-line caller
};

// Returns its own return address. noinline, noclone: the call really happens.
uint64_t CaptureReturnAddress();

// crossfree::symbolizer_test::PlainCaller(crossfree::symbolizer_test::Site*)
void PlainCaller(Site* site);

// A class template instantiated as Widget<long, 3>; Run is out of line.
template <typename T, int N>
struct Widget {
  static T Run(Site* site);
};
extern template struct Widget<long, 3>;

// Calls an always_inline static function, which calls another one, which
// captures: a three-frame inline chain at one return address.
void InlineCaller(Site* site);

}  // namespace crossfree::symbolizer_test

// A C function: no mangled name, DW_AT_name only.
extern "C" void crossfree_symbolizer_test_c_caller(crossfree::symbolizer_test::Site* site);

// The function the dlopen'd plugin exports (symbolizer_test_plugin.cc).
extern "C" using PluginCallerFn = void (*)(crossfree::symbolizer_test::Site* site);
