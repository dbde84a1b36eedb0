// SPDX-License-Identifier: Apache-2.0
// Test support: runs the built `crossfree` command with the bounds every
// CLI test gives it. The tests get its path from CMake (CROSSFREE_BIN,
// crossfree_cli_test in tests/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace crossfree::testing {

// `binary ARGS...` with env added, killed after 60 s (a hang, not a slow
// machine, must trip it) and bounded to 4 GiB of address space.
inline ProcessResult RunCli(const std::string& binary, const std::vector<std::string>& args,
                            const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessLimits limits;
  limits.timeout_s = 60;
  limits.address_space = uint64_t{4} << 30;
  limits.env = env;
  return RunProcess(argv, limits);
}

}  // namespace crossfree::testing
