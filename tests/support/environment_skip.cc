// SPDX-License-Identifier: Apache-2.0
// Test support: skipping a test whose machine lacks a feature, said so
// (environment_skip.h).
#include "tests/support/environment_skip.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace crossfree::testing {

bool MachineLacks(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

void SkipIfMachineLacks(const char* variable, const char* what) {
  if (!MachineLacks(variable)) return;
  std::fprintf(stderr, "SKIP: %s=1: %s\n", variable, what);
  std::fflush(stderr);
  // 77: the SKIP_RETURN_CODE of the tests that call this.
  std::exit(77);
}

}  // namespace crossfree::testing
