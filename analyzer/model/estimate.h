// SPDX-License-Identifier: Apache-2.0
// Analyzer: estimates from sampled traces (docs/guide/analyzer.md, "Sampled
// traces").
//
// In a trace sampled 1/N every allocation was traced with probability 1/N,
// independently of the others, and a traced object's free was traced
// whenever it happened. So the sampled count X of a pair (or a site, or a
// total) is a sum of independent Bernoulli(1/N) trials, one per object of the
// pair: N x X is an unbiased estimate of the true count T (E[N X] = T), and X
// is Poisson(T/N) to a very good approximation when N is large. Its 95%
// interval is the exact (Garwood) Poisson interval for the mean of X,
// [chi2_0.025(2X)/2, chi2_0.975(2X+2)/2], times N, with 0 as the lower bound
// when X = 0. It covers the truth in at least 95% of runs whatever T is
// (the exact interval is conservative).
//
// Byte totals: N x (sum of the sampled sizes); the interval is the count's
// scaled by the mean sampled size. That ignores the variance of the sizes (a
// pair of one size, the usual case, has none).
//
// An unsampled trace (period 0 or 1) is exact: the estimate is the count and
// the interval is that one point, so code that compares intervals treats
// both kinds of run alike.
//
// Stateless; any thread.
#pragma once

#include <cstdint>

namespace crossfree::analyzer {

inline constexpr double kConfidence = 0.95;

struct Interval {
  double low = 0;
  double high = 0;
};

// The exact two-sided 95% interval for the mean of a Poisson variable that
// was observed as x: [gamma_p_inv(x, 0.025), gamma_q_inv(x + 1, 0.025)]
// (Boost.Math), [0, -ln 0.025] for x = 0. Above a million, where Boost's
// inversion slows and then fails, the Wilson-Hilferty approximation of the
// same chi-square quantiles (within about 1e-9 of the exact bounds there).
Interval GarwoodInterval(uint64_t x);

// An estimated total: what was observed in the sample, the estimate (period
// x observed) and its 95% interval.
struct Estimate {
  uint64_t observed = 0;
  double value = 0;
  double low = 0;
  double high = 0;

  // The same estimate scaled by f (a rate per 1000 allocations: f = 1000 /
  // exact allocations).
  Estimate Scaled(double f) const { return {observed, value * f, low * f, high * f}; }
  bool Overlaps(const Estimate& o) const { return low <= o.high && o.low <= high; }
};

// count: the sampled count of objects. period <= 1: exact.
Estimate EstimateCount(uint64_t observed, uint32_t period);
// bytes: the sum of the sizes of the `count` sampled objects.
Estimate EstimateBytes(uint64_t count, uint64_t bytes, uint32_t period);

// The difference of two sampled counts (allocations minus frees of one role
// and size class): period x (a - b), with the normal-approximation 95%
// interval of half-width 1.96 x period x sqrt(a + b). a + b bounds the
// variance from above: objects counted on both sides cancel in a - b, so
// the interval is conservative. observed is left 0. period <= 1: exact.
Estimate EstimateDifference(uint64_t a, uint64_t b, uint32_t period);

// e with its value and bounds capped at `whole`: an estimated part of an
// exactly known total (cross-thread frees of all frees) cannot exceed it.
inline Estimate Bounded(Estimate e, double whole) {
  if (e.value > whole) e.value = whole;
  if (e.high > whole) e.high = whole;
  if (e.low > whole) e.low = whole;
  return e;
}

// part / whole, 0 when whole is 0: the shares the figures hold
// (analysis.h), computed here so that no renderer divides.
inline double Share(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// observed x period, saturating at 2^64 - 1 (a crafted header can claim any
// period).
uint64_t ScaleCount(uint64_t observed, uint32_t period);

}  // namespace crossfree::analyzer
