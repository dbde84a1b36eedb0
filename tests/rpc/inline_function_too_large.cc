// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a capture larger than InlineFunction's storage is a
// static_assert failure, never a silent heap allocation. Built by ctest
// (rpc.InlineFunction rejects a too-large capture) with WILL_FAIL.
#include <array>

#include "rpc/inline_function.h"

int main() {
  std::array<char, 64> big{};
  crossfree::rpc::InlineFunction<int(), 48> f([big] { return static_cast<int>(big[0]); });
  return f();
}
