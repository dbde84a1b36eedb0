// SPDX-License-Identifier: Apache-2.0
// Test symbolizer for synthetic traces: names every return address
// "F<hex>()", so a stack {a, b} is the site "Fa() <- Fb()".
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <map>
#include <vector>

#include "analyzer/model/sites.h"

namespace crossfree::analyzer::testing {

class NameResolver : public SymbolResolver {
 public:
  const std::vector<SymbolFrame>& Resolve(size_t, uint64_t address) override {
    auto [it, inserted] = table_.try_emplace(address);
    if (inserted) {
      SymbolFrame f;
      f.address = address;
      f.function = fmt::format("F{:x}()", address);
      it->second = {f};
    }
    return it->second;
  }

 private:
  std::map<uint64_t, std::vector<SymbolFrame>> table_;
};

}  // namespace crossfree::analyzer::testing
