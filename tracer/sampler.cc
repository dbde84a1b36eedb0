// SPDX-License-Identifier: Apache-2.0
// Tracer: the sampler's slow paths and the live set (see sampler.h).
#include "tracer/sampler.h"

#include <unistd.h>

#include "tracer/clock.h"
#include "tracer/sys.h"

namespace crossfree::tracer {

uint32_t g_sample_period = 0;
__thread SampleCounts t_sample __attribute__((tls_model("initial-exec"))) = {};
std::atomic<uint8_t> g_live_home_counts[kLiveBuckets];

namespace {

struct alignas(64) Bucket {
  std::atomic<uint64_t> slot[kLiveSlots];
  uint64_t unused;
};
static_assert(sizeof(Bucket) == 64);
Bucket g_live[kLiveBuckets];

// log(1 - 1/N), fixed at start-up.
double g_log_keep = 0;

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void Seed(SampleCounts* t) {
  uint64_t seed = MonotonicNs() ^ (static_cast<uint64_t>(CurrentTid()) << 32) ^
                  reinterpret_cast<uintptr_t>(t);
  t->rng = seed | 1;  // 0 means "not seeded"
}

// Allocations up to and including the next sampled one: 1 + floor(ln U /
// ln(1 - p)) for U uniform in (0, 1] is Geometric(p) on {1, 2, ...}.
int64_t DrawSkip(SampleCounts* t) {
  // 53 random bits, +1 so that U is never 0.
  double u = (static_cast<double>(SplitMix64(&t->rng) >> 11) + 1.0) * 0x1p-53;
  double k = SamplerLog(u) / g_log_keep;
  if (!(k < 4.0e18)) return INT64_MAX / 2;  // U tiny: a skip longer than any run
  return 1 + static_cast<int64_t>(k);
}

bool Insert(uint64_t address, uint32_t home) {
  // Count first: a concurrent LiveRemove of another address homed here
  // scans the slots when the count is not 0, and the count never hides an
  // entry from the free that removes it (that free comes after this
  // insert in happens-before order: the program handed the pointer over).
  uint8_t count = g_live_home_counts[home].load(std::memory_order_relaxed);
  do {
    if (count == 255) return false;
  } while (!g_live_home_counts[home].compare_exchange_weak(count, count + 1,
                                                           std::memory_order_relaxed));
  for (uint32_t i = 0; i < kLiveProbe; ++i) {
    Bucket& b = g_live[(home + i) & (kLiveBuckets - 1)];
    for (auto& slot : b.slot) {
      uint64_t expected = 0;
      if (slot.load(std::memory_order_relaxed) == 0 &&
          slot.compare_exchange_strong(expected, address, std::memory_order_relaxed)) {
        return true;
      }
    }
  }
  g_live_home_counts[home].fetch_sub(1, std::memory_order_relaxed);
  return false;
}

}  // namespace

double SamplerLog(double x) {
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s) with
  // s = (m - 1) / (m + 1), |s| <= 0.172, by its series to s^23 (the next
  // term is below 1e-19 relative).
  if (!(x > 0)) return -1.0e300;
  uint64_t bits;
  __builtin_memcpy(&bits, &x, sizeof(bits));
  int e = static_cast<int>((bits >> 52) & 0x7ff);
  if (e == 0) {  // subnormal: scale into the normal range first
    return SamplerLog(x * 0x1p64) - 64 * 0.69314718055994530942;
  }
  e -= 1023;
  bits = (bits & ((1ull << 52) - 1)) | (1023ull << 52);
  double m;
  __builtin_memcpy(&m, &bits, sizeof(m));
  if (m > 1.41421356237309504880) {
    m *= 0.5;
    ++e;
  }
  double s = (m - 1) / (m + 1), s2 = s * s, term = s, sum = 0;
  for (int k = 1; k <= 23; k += 2) {
    sum += term / k;
    term *= s2;
  }
  return 2 * sum + e * 0.69314718055994530942;
}

void InitSampler(uint32_t period) {
  if (period < 2) {
    g_sample_period = 0;
    return;
  }
  // ln(1 - p) by its series (p <= 1/2): exact where log(1 - p) would lose
  // the digits of a small p to rounding.
  double p = 1.0 / period, term = p, sum = 0;
  for (int k = 1; k <= 60 && term > 1e-30; ++k) {
    sum += term / k;
    term *= p;
  }
  g_log_keep = -sum;
  g_sample_period = period;
}

void ClearLiveSet() {
  for (uint32_t b = 0; b < kLiveBuckets; ++b) {
    if (g_live_home_counts[b].load(std::memory_order_relaxed) != 0) {
      g_live_home_counts[b].store(0, std::memory_order_relaxed);
    }
    for (uint32_t i = 0; i < kLiveSlots; ++i) {
      if (g_live[b].slot[i].load(std::memory_order_relaxed) != 0) {
        g_live[b].slot[i].store(0, std::memory_order_relaxed);
      }
    }
  }
}

void ReseedSamplerInForkChild() {
  if (t_sample.rng == 0) return;
  Seed(&t_sample);
  t_sample.skip = DrawSkip(&t_sample);
}

void SeedSampler() {
  if (t_sample.rng != 0) return;
  Seed(&t_sample);
  t_sample.skip = DrawSkip(&t_sample);
}

bool TakeSample(const void* address) {
  SampleCounts* t = &t_sample;
  t->skip = DrawSkip(t);
  if (Insert(reinterpret_cast<uint64_t>(address), LiveHome(reinterpret_cast<uint64_t>(address)))) {
    return true;
  }
  sampler_internal::Bump(&t->dropped);
  return false;
}

bool LiveInsert(uint64_t address) { return Insert(address, LiveHome(address)); }

bool LiveRemoveSlow(uint64_t address) {
  const uint32_t home = LiveHome(address);
  for (uint32_t i = 0; i < kLiveProbe; ++i) {
    Bucket& b = g_live[(home + i) & (kLiveBuckets - 1)];
    for (auto& slot : b.slot) {
      if (slot.load(std::memory_order_relaxed) == address) {
        slot.store(0, std::memory_order_relaxed);
        g_live_home_counts[home].fetch_sub(1, std::memory_order_relaxed);
        return true;
      }
    }
  }
  return false;
}

}  // namespace crossfree::tracer
