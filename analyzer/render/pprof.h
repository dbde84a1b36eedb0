// SPDX-License-Identifier: Apache-2.0
// The pprof renderer: a report's cross-thread pairs as a gzipped pprof
// profile (pprof's own profile.proto, cmake/dependencies.cmake), for
// `go tool pprof -top`, `-http` and its flame graph. Each pair is one sample: values [frees, bytes]
// (sample types "cross_thread_frees"/count and "cross_thread_bytes"/bytes),
// locations the allocation site's frames (innermost first; --site-depth sets
// how many), labels alloc_role, free_role and free_site. Stateless; any
// thread.
#pragma once

#include <string>

#include "analyzer/model/analysis.h"

namespace crossfree::analyzer::render {

// The gzipped profile bytes.
std::string RenderReportPprof(const Analysis& analysis);

}  // namespace crossfree::analyzer::render
