// SPDX-License-Identifier: Apache-2.0
// Tracer, attach mode: rewrites the GOT entries through which every loaded
// module reaches the functions of tracer/hook_table.h, so that those calls
// reach the tracer's definitions, and puts the exact original values back
// at detach (docs/design.md, "Attaching to a running process").
//
// Which entries: R_X86_64_JUMP_SLOT (calls through the PLT) and
// R_X86_64_GLOB_DAT (address-taken functions) whose symbol names a hook,
// in every module but the tracer itself, the dynamic loader and the vDSO,
// and only when the entry holds the definition the global scope resolves
// (dlsym RTLD_DEFAULT) or a not yet bound lazy PLT stub of its own module;
// an entry bound elsewhere (RTLD_DEEPBIND, a private allocator) is left
// alone and counted. Entries in RELRO are made writable for the store and
// read-only again after.
//
// Each change is one aligned 8-byte store: a thread calling through the
// entry reads either the old or the new target, never a mix.
//
// Threads: every function here is for the tracer's control thread only
// (attach.cc), which serialises them. Fixed-size tables, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace crossfree::tracer {

struct GotPatchStats {
  uint32_t modules = 0;   // modules scanned (cumulative)
  uint32_t patched = 0;   // entries now pointing at hooks
  uint32_t foreign = 0;   // entries bound to another definition, left alone
  uint32_t failed = 0;    // entries that could not be written (mprotect)
  uint32_t dropped = 0;   // entries beyond the table's capacity
};

// Looks up the tracer's hook and the global definition of every hooked
// symbol. self_handle is a dlopen handle of the tracer library. False if
// malloc or free has no definition to forward to.
bool PrepareGotPatching(void* self_handle);

// Whether the global definition of malloc lies in the main executable
// (a statically linked allocator: its own calls never use a GOT). Valid
// after PrepareGotPatching.
bool AllocatorInExecutable();

// Patches every module not scanned yet. Returns the running totals.
GotPatchStats PatchNewModules();

// True when modules were loaded or unloaded since the last PatchNewModules
// (dl_iterate_phdr's counters).
bool ModuleSetChanged();

// Puts every patched entry of a module still loaded back to its original
// value (only where it still holds the hook: a value someone else stored
// since is theirs). Forgets every module. Returns the entries restored.
uint32_t RestoreAllGotEntries();

}  // namespace crossfree::tracer
