// SPDX-License-Identifier: Apache-2.0
// The symbolizer benchmark and tests: the module map of the current process, built
// the way the tracer records it (dl_iterate_phdr: path, load bias, GNU build
// id from the in-memory PT_NOTE, PT_LOAD segments).
#pragma once

#include <vector>

#include "format/trace_reader.h"

namespace crossfree::bench {

// Every module loaded right now. The main executable (empty dlpi_name) gets
// its /proc/self/exe path; the vDSO keeps its name and has no file.
std::vector<format::Module> CurrentProcessModules();

}  // namespace crossfree::bench
