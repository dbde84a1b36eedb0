// SPDX-License-Identifier: Apache-2.0
// Tracer: the module map (every loaded ELF object with its load bias, build
// id and PT_LOAD segments), read with dl_iterate_phdr so the analyzer can
// symbolize offline. Allocation-free; the recorder calls it from whichever
// thread notices that objects were added (at init, on chunk flushes, at exit).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/trace_writer.h"

namespace crossfree::tracer {

// Caches the main executable's path (readlink /proc/self/exe). Called once
// at init; MainExePath() returns "" before.
void InitMainExePath();
const char* MainExePath();

// Calls emit for every module not reported before (all of them after
// ForgetModules). Not reentrant: a nested call (emit flushing a chunk that
// triggers another scan) returns at once.
using ModuleEmitter = void (*)(const format::ModuleView& module, void* context);
void ReportNewModules(ModuleEmitter emit, void* context);

// True if dl_iterate_phdr's load counter moved since the last report.
bool ModulesMayHaveChanged();

// Forgets which modules were reported (a fork child starts a new file).
void ForgetModules();

}  // namespace crossfree::tracer
