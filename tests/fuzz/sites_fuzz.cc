// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: site building and symbolization with a fabricated
// module map. Input: 1 byte N (0..3 modules), N module records of 16 bytes
// (load bias, segment size, which file, build-id length), then stacks of
// 8-byte return addresses. The files are this fuzzer itself (real DWARF),
// a missing path and an empty one; build ids mostly mismatch.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/model/sites.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/pairing/trace_set.h"

namespace {

using namespace crossfree;

uint64_t Load(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  std::memcpy(&v, p, n < 8 ? n : 8);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t pos = 1;
  size_t n_modules = data[0] % 4;
  std::vector<format::Module> modules;
  static const char* kPaths[] = {"/proc/self/exe", "/nonexistent/libfuzz.so", ""};
  for (size_t i = 0; i < n_modules && pos + 16 <= size; ++i, pos += 16) {
    format::Module m;
    m.load_bias = Load(data + pos, 8) & ~uint64_t{0xfff};
    m.path = kPaths[data[pos + 12] % 3];
    m.build_id.assign(data + pos + 13, data + pos + 13 + data[pos + 15] % 3);
    m.segments.push_back({m.load_bias, Load(data + pos + 8, 4)});
    modules.push_back(std::move(m));
  }

  // A trace with the fabricated module map and the input's stacks.
  auto trace = std::make_unique<analyzer::ProcessTrace>();
  trace->modules = modules;
  uint32_t id = 1;
  std::vector<uint64_t> frames;
  for (; pos + 8 <= size; pos += 8) {
    uint64_t a = Load(data + pos, 8);
    if (a == 0) {  // a zero ends a stack
      trace->stacks[id++] = frames;
      frames.clear();
    } else {
      frames.push_back(modules.empty() ? a : modules[a % modules.size()].load_bias + (a >> 44));
    }
  }
  trace->stacks[id] = frames;

  analyzer::Symbolizer symbolizer(modules);
  for (const auto& [stack_id, stack] : trace->stacks) {
    for (uint64_t a : stack) symbolizer.Symbolize(a);
  }

  analyzer::TraceSet set;
  set.traces().push_back(std::move(trace));
  std::unique_ptr<analyzer::SymbolResolver> resolver = analyzer::MakeDefaultResolver(set);
  std::string error;
  analyzer::SiteOptions options;
  options.depth = 1 + data[0] / 64;
  options.key_lines = data[0] & 1;
  auto builder = analyzer::SiteBuilder::Create(options, resolver.get(), &error);
  if (builder == nullptr) __builtin_trap();
  const analyzer::ProcessTrace& t = *set.traces()[0];
  for (uint32_t s = 0; s <= id + 1; ++s) {
    const analyzer::Site& site = builder->Get(0, t, s);
    if (site.key.empty()) __builtin_trap();
  }
  return 0;
}
