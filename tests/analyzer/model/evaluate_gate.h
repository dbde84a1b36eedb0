// SPDX-License-Identifier: Apache-2.0
// Model tests: the gate's verdict on an analysis (analyzer/model/gate.h),
// with the evaluation itself required to succeed.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "analyzer/model/analysis.h"
#include "analyzer/model/baseline.h"
#include "analyzer/model/gate.h"

namespace crossfree::analyzer::testing {

// The gate on `a` against `b`, no suppressions.
inline GateResult Gate(const Analysis& a, const Baseline& b, GateOptions options = {}) {
  GateResult r;
  std::string error;
  REQUIRE(EvaluateGate(a, b, {}, options, &r, &error));
  return r;
}

}  // namespace crossfree::analyzer::testing
