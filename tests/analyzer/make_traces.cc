// SPDX-License-Identifier: Apache-2.0
// Test tool: writes the fixed synthetic runs as trace files, for the CLI
// tests (`make_traces DIR` -> DIR/before.trc, DIR/after.trc, ...).
#include <cstdio>
#include <string>

#include "tests/analyzer/scenarios.h"

int main(int argc, char** argv) {
  using namespace crossfree::analyzer::testing;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  BuildBeforeRun().WriteTo(dir + "/before.trc");
  SyntheticTrace after = BuildAfterRun();
  after.WriteTo(dir + "/after.trc");
  // A truncated copy: the last chunk cut in half.
  std::vector<uint8_t> bytes = after.bytes();
  FILE* f = std::fopen((dir + "/truncated.trc").c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size() - 100, f);
  std::fclose(f);
  // A corrupt copy: one payload byte flipped in the middle.
  bytes[bytes.size() / 2] ^= 0x5a;
  f = std::fopen((dir + "/corrupt.trc").c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  f = std::fopen((dir + "/not-a-trace.trc").c_str(), "wb");
  std::fputs("hello, this is not a trace\n", f);
  std::fclose(f);
  return 0;
}
