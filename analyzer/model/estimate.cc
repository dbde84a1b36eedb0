// SPDX-License-Identifier: Apache-2.0
// Analyzer: estimates from sampled traces (see estimate.h).
#include "analyzer/model/estimate.h"

#include <boost/math/special_functions/gamma.hpp>

#include <cmath>
#include <exception>
#include <limits>

namespace crossfree::analyzer {

namespace {

// z of the standard normal at 0.975.
constexpr double kZ = 1.959963984540054;

// The Wilson-Hilferty approximation of chi2_p(k) / 2 for p = 0.025 (z < 0)
// or 0.975 (z > 0): relative error of order 1/k, far below what is shown
// once k is in the millions.
double WilsonHilferty(double k, double z) {
  double c = 2.0 / (9.0 * k);
  double t = 1.0 - c + z * std::sqrt(c);
  return k * t * t * t / 2.0;
}

// Above this Boost's inversion gets slow (0.5 ms at 10^9) and then gives up
// (10^12): the approximation takes over.
constexpr uint64_t kExactUpTo = 1000000;

}  // namespace

Interval GarwoodInterval(uint64_t x) {
  const double tail = (1 - kConfidence) / 2;  // 0.025 on each side
  const double a = static_cast<double>(x);
  Interval r;
  if (x <= kExactUpTo) {
    try {
      // chi2_q(2x)/2 is the q-quantile of Gamma(x, 1): gamma_p_inv(x, q).
      r.low = x == 0 ? 0.0 : boost::math::gamma_p_inv(a, tail);
      // chi2_{1-q}(2x+2)/2 = gamma_p_inv(x + 1, 1 - q) = gamma_q_inv(x + 1, q).
      r.high = boost::math::gamma_q_inv(a + 1, tail);
      return r;
    } catch (const std::exception&) {
      // Not expected in this range; the approximation below is close.
    }
  }
  r.low = x == 0 ? 0.0 : WilsonHilferty(2 * a, -kZ);
  r.high = WilsonHilferty(2 * a + 2, kZ);
  return r;
}

uint64_t ScaleCount(uint64_t observed, uint32_t period) {
  if (period <= 1) return observed;
  uint64_t out;
  if (__builtin_mul_overflow(observed, uint64_t{period}, &out)) {
    return std::numeric_limits<uint64_t>::max();
  }
  return out;
}

Estimate EstimateCount(uint64_t observed, uint32_t period) {
  Estimate e;
  e.observed = observed;
  e.value = static_cast<double>(observed);
  if (period <= 1) {
    e.low = e.high = e.value;
    return e;
  }
  const double n = static_cast<double>(period);
  Interval i = GarwoodInterval(observed);
  e.value *= n;
  e.low = i.low * n;
  e.high = i.high * n;
  return e;
}

Estimate EstimateBytes(uint64_t count, uint64_t bytes, uint32_t period) {
  Estimate c = EstimateCount(count, period);
  Estimate e;
  e.observed = bytes;
  if (period <= 1) {
    e.value = e.low = e.high = static_cast<double>(bytes);
    return e;
  }
  e.value = static_cast<double>(bytes) * period;
  // The count's interval at the mean sampled size (no sizes seen: no bytes).
  double mean = count ? static_cast<double>(bytes) / static_cast<double>(count) : 0.0;
  e.low = c.low * mean;
  e.high = c.high * mean;
  return e;
}

Estimate EstimateDifference(uint64_t a, uint64_t b, uint32_t period) {
  Estimate e;
  double n = period <= 1 ? 1.0 : static_cast<double>(period);
  e.value = (static_cast<double>(a) - static_cast<double>(b)) * n;
  double half = period <= 1 ? 0.0 : kZ * n * std::sqrt(static_cast<double>(a) + b);
  e.low = e.value - half;
  e.high = e.value + half;
  return e;
}

}  // namespace crossfree::analyzer
