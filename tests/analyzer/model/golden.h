// SPDX-License-Identifier: Apache-2.0
// Test helper: compares an output with tests/analyzer/model/golden/NAME; with
// CROSSFREE_UPDATE_GOLDEN=1 in the environment, rewrites the file instead.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace crossfree::analyzer::testing {

inline void CheckGolden(const std::string& name, const std::string& actual) {
  std::string path = std::string(CROSSFREE_SOURCE_DIR) + "/tests/analyzer/model/golden/" + name;
  const char* update = std::getenv("CROSSFREE_UPDATE_GOLDEN");
  if (update && *update && std::string(update) != "0") {
    std::ofstream(path, std::ios::binary) << actual;
    WARN("rewrote " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("missing golden file " << path << " (run with CROSSFREE_UPDATE_GOLDEN=1)");
  std::stringstream expected;
  expected << in.rdbuf();
  INFO("golden file " << path << " differs; CROSSFREE_UPDATE_GOLDEN=1 rewrites it");
  CHECK(actual == expected.str());
}

}  // namespace crossfree::analyzer::testing
