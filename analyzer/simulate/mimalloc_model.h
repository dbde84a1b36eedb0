// SPDX-License-Identifier: Apache-2.0
// Simulate: a cost model of mimalloc 2.0.9's heaps and pages (Debian's
// libmimalloc2.0), see mimalloc_model.cc and docs/guide/simulate.md.
//
// Not thread-safe: one model per simulated process, driven by one thread.
#pragma once

#include <memory>

#include "analyzer/simulate/allocator_model.h"

namespace crossfree::analyzer::simulate {

std::unique_ptr<AllocatorModel> MakeMimallocModel(CostSink* sink);

}  // namespace crossfree::analyzer::simulate
