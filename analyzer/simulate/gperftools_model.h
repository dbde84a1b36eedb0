// SPDX-License-Identifier: Apache-2.0
// Simulate: gperftools 2.10 as an AllocatorModel (see gperftools_model.cc).
//
// Not thread-safe: one model per simulated process, driven by one thread.
#pragma once

#include <memory>

#include "analyzer/simulate/allocator_model.h"
#include "analyzer/simulate/tcmalloc_model.h"

namespace crossfree::analyzer::simulate {

std::unique_ptr<AllocatorModel> MakeGperftoolsModel(const TcmallocConfig& config,
                                                    bool cache_from_first_event,
                                                    CostSink* sink);

}  // namespace crossfree::analyzer::simulate
