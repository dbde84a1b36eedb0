// SPDX-License-Identifier: Apache-2.0
// Tracer: gperftools MallocHook support for executables that link tcmalloc
// statically. Their malloc is defined in the executable itself, which comes
// before the preload library in symbol lookup, so interposition never sees
// those calls; tcmalloc's MallocHook C API does.
//
// Which path records: the MallocHook callbacks skip every event that happens
// while the thread's recursion guard is held, i.e. inside one of our
// interposed functions (which record that event themselves) or inside the
// tracer. So an allocation is recorded once whichever way it was reached.
//
// Called at start-up only (from InitRecorder, single-threaded in practice).
#pragma once

namespace crossfree::tracer {

// True if the main executable defines MallocHook_AddNewHook and
// MallocHook_AddDeleteHook, found in its dynamic symbol table (dlsym) or,
// when not exported, in its own .symtab (read from /proc/self/exe, plus the
// load bias). If the executable defines malloc itself but has neither,
// prints one line on stderr explaining how to relink, and returns false.
bool ProbeMallocHook();

// Registers the hooks found by ProbeMallocHook. Call after recording began.
void RegisterMallocHooks();

}  // namespace crossfree::tracer
