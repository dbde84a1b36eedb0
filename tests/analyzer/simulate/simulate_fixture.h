// SPDX-License-Identifier: Apache-2.0
// Simulate tests' shared fixture: runs `Simulate` on a synthetic trace with
// a resolver that names each return address Site0x1000, Site0x2000, ...
// so the tests can name sites without symbols. Test code only; each test
// builds its own trace and resolver (not thread-safe).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analyzer/simulate/simulate.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer::simulate::testing {

// Names return addresses 0x1000, 0x2000, ... as Site0x1000, ...
class SiteNameResolver : public analyzer::SymbolResolver {
 public:
  const std::vector<analyzer::SymbolFrame>& Resolve(size_t, uint64_t address) override {
    auto [it, inserted] = cache_.try_emplace(address);
    if (inserted) {
      analyzer::SymbolFrame f;
      f.address = address;
      char name[32];
      std::snprintf(name, sizeof(name), "Site0x%llx", static_cast<unsigned long long>(address));
      f.function = name;
      it->second.push_back(f);
    }
    return it->second;
  }

 private:
  std::map<uint64_t, std::vector<analyzer::SymbolFrame>> cache_;
};

// The simulation of the builder's trace (a test failure if it does not load
// or run).
inline SimulationResult RunSimulation(analyzer::testing::SyntheticTrace& builder,
                                      const SimulateOptions& options) {
  const std::vector<uint8_t>& bytes = builder.Finish();
  analyzer::TraceSet set;
  std::string error;
  REQUIRE(set.AddBytes(bytes, "synthetic.trace", &error));
  SiteNameResolver resolver;
  SimulationResult result;
  REQUIRE(Simulate(set, options, &resolver, &result, &error));
  return result;
}

// The group called name among groups (SimulationResult's or
// CostSimulation's); a test failure, and an empty group, if there is none.
template <typename Group>
const Group& GroupNamed(const std::vector<Group>& groups, const std::string& name) {
  for (const Group& g : groups) {
    if (g.name == name) return g;
  }
  FAIL("no group " << name);
  static const Group none;
  return none;
}

}  // namespace crossfree::analyzer::simulate::testing
