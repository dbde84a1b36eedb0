// SPDX-License-Identifier: Apache-2.0
// Analyzer: call sites. A site is a recorded stack with the allocator,
// tracer and standard-library frames skipped, cut to a depth; its key is
// built from symbolized frames (function names, optionally file:line), never
// from raw addresses, so keys survive ASLR and rebuilds. A frame without a
// symbol is named module+offset; without a module, by its address.
//
// Symbols come from a SymbolResolver: the libdw symbolizer for real traces,
// an injected fake in tests. One SiteBuilder per analysis run, used from one
// thread; it caches per address and per stack.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/model/symbolizer.h"
#include "analyzer/pairing/trace_set.h"

namespace crossfree::analyzer {

class SymbolResolver {
 public:
  virtual ~SymbolResolver() = default;
  // The source frames of a return address recorded in traces[trace_index]
  // (innermost inlined first). The reference stays valid until the resolver
  // is destroyed.
  virtual const std::vector<SymbolFrame>& Resolve(size_t trace_index,
                                                  uint64_t return_address) = 0;
  // One line per problem met (missing module, build-id mismatch, ...).
  virtual std::vector<std::string> Warnings() const { return {}; }
};

// libdw symbolization from each trace's module map (module+offset where a
// file is missing or does not match). The set's metadata must be complete
// first (modules are collected by the first pass over the chunks), and the
// set must outlive the resolver.
std::unique_ptr<SymbolResolver> MakeDefaultResolver(const TraceSet& set);

struct SiteOptions {
  int depth = 3;                     // frames kept after skipping
  std::vector<std::string> skips;    // extra regexes (ECMAScript, searched)
  bool default_skips = true;         // apply DefaultSkipPatterns() too
  bool key_lines = false;            // key frames include file:line
};

// The built-in skip list, the one place it is kept (docs/guide/analyzer.md,
// "Skip rules"; `crossfree report --list-skips` prints it): allocation
// functions, operator new/delete, std:: and __gnu_cxx:: code, libc/ld.so
// internals, thread start-up frames, the tracer/allocator libraries (matched
// on the module's file name), and the allocation wrappers of common
// libraries (gRPC, binutils/gcc, redis, SQLite, CPython), so that a site
// names the wrapper's caller. --no-default-skips drops it; --skip adds to it.
const std::vector<std::string>& DefaultSkipPatterns();

// A demangled name without the return type that the demangler writes in
// front of template instances ("void std::vector<int>::_M_realloc_insert<>(...)"
// -> "std::vector<int>::_M_realloc_insert<>(...)"); other names unchanged.
// Skip patterns and roles are matched against this.
std::string_view CallableName(std::string_view demangled);

// The bare name of a function: CallableName without parameters, template
// arguments and enclosing scopes ("(anonymous namespace)::Producer(int)" ->
// "Producer").
std::string BareFunctionName(std::string_view demangled);

// A function's name as keys use it: CallableName without its parameter
// lists and the qualifiers after them ("ns::C::Run(Flags const&) const" ->
// "ns::C::Run", "f(int)::{lambda()#1}::operator()() const" ->
// "f::{lambda()#1}::operator()"). The symbolizer names a function with
// parameters when the debug info has its linkage name and without when it
// has only DW_AT_name (-g1 line tables), so keys without them are the same
// whatever the debug-info level of the build.
std::string KeyFunctionName(std::string_view demangled);

struct Site {
  std::string key;                  // frames joined by " <- " (callee first)
  std::vector<SymbolFrame> frames;  // the frames the key is made of
};

// "Foo::Bar(int)", or "libfoo.so+0x1234", or "0x7f...": the name of a frame
// as shown; with_line appends " (file.cc:42)" when known.
std::string FrameName(const SymbolFrame& frame, bool with_line);
// The same as used in keys: the function by KeyFunctionName.
std::string KeyFrameName(const SymbolFrame& frame, bool with_line);

class SiteBuilder {
 public:
  // Returns null and sets *error when a pattern is not a valid regex.
  static std::unique_ptr<SiteBuilder> Create(const SiteOptions& options,
                                             SymbolResolver* resolver, std::string* error);

  // The site of a stack of traces[trace_index]; "(no stack)" for kNoStack
  // or an id never defined.
  const Site& Get(size_t trace_index, const ProcessTrace& trace, uint32_t stack_id);

 private:
  SiteBuilder(const SiteOptions& options, SymbolResolver* resolver)
      : options_(options), resolver_(resolver) {}
  bool Skipped(const SymbolFrame& frame);

  SiteOptions options_;
  SymbolResolver* resolver_;
  std::vector<std::regex> patterns_;
  std::unordered_map<std::string, bool> skip_cache_;  // frame name + module -> skipped
  std::map<std::pair<size_t, uint32_t>, Site> cache_;
};

}  // namespace crossfree::analyzer
