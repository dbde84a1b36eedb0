// SPDX-License-Identifier: Apache-2.0
// Analyzer: thread roles. A report groups threads by role, the thread name
// with every run of digits folded to "N" (reactor-0, reactor-13 ->
// reactor-N), so it reads "worker-N -> reactor-N" instead of listing tids.
// A thread without a name of its own is "main" (tid == pid), or is named
// after its entry function (the outermost frame that is not thread start-up
// code: `std::thread(producer)` -> "producer"), or else "thread".
// Stateless, but for AssignEntryRoles, which fills the trace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/pairing/trace_set.h"

namespace crossfree::analyzer {

enum class GroupBy { kRole, kThread };

// "reactor-12" -> "reactor-N"; "io2x3" -> "ioNxN".
std::string FoldDigits(std::string_view name);

// The role of a thread: folded name, or main/thread when unnamed.
std::string ThreadRole(std::string_view name, uint32_t tid, uint32_t pid);

// True when name is the one Linux gives every thread of a process that has
// not named itself: the file name it was started as, cut to 15 bytes. That
// is the executable's file name, or a symlink's ("python3" for
// /usr/bin/python3.11, started as python3), or whatever the main thread was
// called at start (main_name, empty when unknown). Such threads count as
// unnamed.
bool IsInheritedName(std::string_view name, std::string_view exe_path,
                     std::string_view main_name = {});

class SymbolResolver;

// For each thread of trace without a name of its own: its entry function,
// from entry_stack[stream index] (a stack of that thread, kNoStack if none),
// when that stack reaches the thread's start (start_thread or clone), so a
// truncated stack never names a role. Fills trace.entry_roles.
void AssignEntryRoles(ProcessTrace& trace, size_t trace_index,
                      const std::vector<uint32_t>& entry_stack, SymbolResolver& resolver);

// The label a thread is grouped under: its role (kRole), or its unfolded
// name (or main/thread) followed by " (tid)" (kThread).
std::string ThreadLabel(const ProcessTrace& trace, uint32_t tid, GroupBy by);

}  // namespace crossfree::analyzer
