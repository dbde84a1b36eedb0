// SPDX-License-Identifier: Apache-2.0
// Analyzer: offline symbolization of the return addresses recorded in a
// trace, from the trace's module map, with elfutils libdw.
//
// Owned by one analysis run; not thread-safe (callers symbolize from one
// thread, after aggregation, and only the stacks that are reported).
//
// How an address is resolved:
// - its module is found from the recorded PT_LOAD segments (a module
//   recorded without segments is placed from its file's program headers and
//   load bias); when ranges overlap, the module recorded last wins;
// - each module gets its own libdwfl offline session, opened the first time
//   an address falls into it, and its build id is checked against the trace;
// - function names: the demangled DWARF linkage name (qualified, with
//   template arguments and parameter types), or for functions that have none
//   (C functions, main, C++ static inline functions never emitted out of
//   line) DW_AT_name qualified by its namespaces and classes, without a
//   parameter list; without DWARF, the demangled ELF symbol;
// - file:line of the innermost frame from the line table, of each outer
//   frame from the DW_AT_call_file/call_line of the inlined subroutine it
//   contains.
// Costs: one walk of a compilation unit's DIEs the first time it is hit and
// one sort of a module's symbol table; then a binary search per address.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/trace_reader.h"

namespace crossfree::analyzer {

// One source-level frame. A return address expands to one or more of these:
// the innermost inlined function first, the function it was inlined into
// last.
struct SymbolFrame {
  uint64_t address = 0;     // the recorded return address
  std::string function;     // demangled; empty when unknown
  std::string file;         // source file, empty when unknown
  int line = 0;             // 0 when unknown
  std::string module;       // module path (basename is enough to print)
  uint64_t module_offset = 0;  // address - load bias, for module+offset display
  bool inlined = false;     // true for every frame but the outermost
};

struct SymbolizerOptions {
  // Where separate debug info is searched, in libdw's syntax: directories
  // separated by ':', each searched for .build-id/xx/rest.debug and for
  // .gnu_debuglink names. Empty: libdw's default ":.debug:/usr/lib/debug".
  // (libdw also asks a debuginfod server when DEBUGINFOD_URLS is set.)
  std::string debuginfo_path;
};

class Symbolizer {
 public:
  // modules: the module map of one traced process. A module whose file is
  // missing, whose build id differs from the recorded one, or that has no
  // symbols is shown as module+offset, with one warning per module
  // (collected in warnings()).
  explicit Symbolizer(std::vector<format::Module> modules);
  Symbolizer(std::vector<format::Module> modules, const SymbolizerOptions& options);
  ~Symbolizer();

  // Symbolizes a recorded return address (looked up at address - 1, so the
  // call instruction, not the one after it, gives the line). Cached.
  const std::vector<SymbolFrame>& Symbolize(uint64_t return_address);

  // One line per module that could not be symbolized fully, with the reason:
  // "<path>: <reason>; frames shown as module+offset".
  const std::vector<std::string>& warnings() const;

  // Paths of the modules met so far that have symbols but no DWARF (neither
  // in the file nor as separate debug info under /usr/lib/debug): their
  // frames have a function name but no file:line and no inline frames.
  // Informational, not a warning: most distribution libraries are like that
  // until their -dbgsym/-dbg package is installed.
  const std::vector<std::string>& modules_without_debug_info() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crossfree::analyzer
