// SPDX-License-Identifier: Apache-2.0
// Symbolizer tests: a non-PIE (ET_EXEC) executable that captures a return
// address at a known line and prints it with its process's module map, for
// symbolizer_test to symbolize after it exits.
//
// Output: "site <hex return address> <line>", then per module
// "module <load bias> <build id hex or -> <start>:<size>... <path>".
#include <cinttypes>
#include <cstdio>

#include "bench/analyzer/process_modules.h"
#include "tests/analyzer/model/symbolizer_test_lib.h"

int main() {
  crossfree::symbolizer_test::Site site;
  crossfree::symbolizer_test::PlainCaller(&site);
  std::printf("site %" PRIx64 " %d\n", site.return_address, site.line);
  for (const auto& m : crossfree::bench::CurrentProcessModules()) {
    std::printf("module %" PRIx64 " ", m.load_bias);
    for (uint8_t b : m.build_id) std::printf("%02x", b);
    if (m.build_id.empty()) std::printf("-");
    for (const auto& s : m.segments) std::printf(" %" PRIx64 ":%" PRIx64, s.start, s.size);
    std::printf(" %s\n", m.path.c_str());
  }
  return 0;
}
