// SPDX-License-Identifier: Apache-2.0
// Test support: the one way a C++ test skips because of its machine
// (CONTRIBUTING.md, "Nothing skips silently"). A CROSSFREE_TEST_NO_<X>=1
// variable says the machine lacks feature X; .ci/run never sets one.
#pragma once

namespace crossfree::testing {

// True when `variable` is set to 1. Any thread.
bool MachineLacks(const char* variable);

// When `variable` is 1: prints "SKIP: <variable>=1: <what>" to stderr and
// exits the process with 77, which the test's ctest SKIP_RETURN_CODE turns
// into a skip (catch_discover_tests runs each test case in a process of its
// own). Otherwise returns, and the test goes on to require the feature,
// failing with a message that names `variable` when it is missing. Call it
// first in the test case, from the test's main thread.
void SkipIfMachineLacks(const char* variable, const char* what);

}  // namespace crossfree::testing
