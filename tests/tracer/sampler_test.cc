// SPDX-License-Identifier: Apache-2.0
// The sampler on its own (tracer/sampler.cc, linked in): its logarithm
// against libm's, the share of allocations the skip counter chooses, and
// the live set (insert, find, remove, capacity, drop counting).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tracer/sampler.h"

namespace crossfree::tracer {
namespace {

TEST_CASE("the sampler's logarithm matches libm's to the last bits") {
  double worst = 0;
  for (double x = 1e-300; x < 1e300; x *= 1.37) {
    worst = std::max(worst, std::fabs(SamplerLog(x) - std::log(x)) / std::fabs(std::log(x)));
  }
  for (double x = 0.5; x < 2; x += 1e-4) {
    worst = std::max(worst, std::fabs(SamplerLog(x) - std::log(x)));
  }
  CHECK(worst < 1e-14);
  CHECK(SamplerLog(0x1p-1070) == Approx(std::log(0x1p-1070)).epsilon(1e-14));  // subnormal
}

TEST_CASE("the skip counter samples 1 allocation in N") {
  for (uint32_t period : {2u, 100u, 1000u}) {
    InitSampler(period);
    ReseedSamplerInForkChild();
    SeedSampler();
    const long n = 20'000'000;
    long sampled = 0;
    alignas(16) static char block[16];
    for (long i = 0; i < n; ++i) {
      if (SampleAllocation(block)) {
        ++sampled;
        REQUIRE(LiveRemove(block));
      }
    }
    const double p = 1.0 / period, sd = std::sqrt(n * p * (1 - p));
    INFO("N = " << period << ": " << sampled << " of " << n);
    CHECK(std::fabs(sampled - n * p) <= 6 * sd);  // fails once in 10^9 runs
  }
  InitSampler(0);
}

TEST_CASE("the live set finds, removes and refuses when a home is full") {
  InitSampler(2);
  std::vector<uint64_t> addresses;
  for (uint64_t a = 0x10000; addresses.size() < 5000; a += 48) addresses.push_back(a);
  for (uint64_t a : addresses) REQUIRE(LiveInsert(a));
  for (uint64_t a : addresses) CHECK(LiveRemove(reinterpret_cast<void*>(a)));
  for (uint64_t a : addresses) CHECK(!LiveRemove(reinterpret_cast<void*>(a)));
  // Addresses that all hash to one home: 4 buckets of 7 slots hold 28.
  std::vector<uint64_t> same;
  const uint32_t home = LiveHome(0x5550);
  for (uint64_t a = 0x5550; same.size() < 40; a += 16) {
    if (LiveHome(a) == home) same.push_back(a);
  }
  int taken = 0;
  for (uint64_t a : same) taken += LiveInsert(a) ? 1 : 0;
  // The set is empty here, so exactly the 4 buckets' slots are taken.
  CHECK(taken == static_cast<int>(kLiveSlots * kLiveProbe));
  int found = 0;
  for (uint64_t a : same) found += LiveRemove(reinterpret_cast<void*>(a)) ? 1 : 0;
  CHECK(found == taken);
  CHECK(g_live_home_counts[home].load() == 0);
  InitSampler(0);
}

}  // namespace
}  // namespace crossfree::tracer
