// SPDX-License-Identifier: Apache-2.0
// Analyzer: call sites and the default symbol resolver.
#include "analyzer/model/sites.h"

#include <fmt/core.h>

#include <string_view>

namespace crossfree::analyzer {
namespace {

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// libdw, one Symbolizer per trace, created on first use.
class LibdwResolver : public SymbolResolver {
 public:
  explicit LibdwResolver(const TraceSet& set) : set_(set), symbolizers_(set.traces().size()) {}

  const std::vector<SymbolFrame>& Resolve(size_t trace_index, uint64_t address) override {
    auto& s = symbolizers_[trace_index];
    if (!s) s = std::make_unique<Symbolizer>(set_.traces()[trace_index]->modules);
    return s->Symbolize(address);
  }

  std::vector<std::string> Warnings() const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < symbolizers_.size(); ++i) {
      if (!symbolizers_[i]) continue;
      for (const std::string& w : symbolizers_[i]->warnings()) {
        out.push_back(set_.traces().size() > 1
                          ? fmt::format("{}: {}", set_.traces()[i]->path, w)
                          : w);
      }
    }
    return out;
  }

 private:
  const TraceSet& set_;
  std::vector<std::unique_ptr<Symbolizer>> symbolizers_;
};

}  // namespace

std::unique_ptr<SymbolResolver> MakeDefaultResolver(const TraceSet& set) {
  return std::make_unique<LibdwResolver>(set);
}

const std::vector<std::string>& DefaultSkipPatterns() {
  static const std::vector<std::string> patterns = {
      // The allocation API itself.
      R"(^(malloc|calloc|realloc|reallocarray|free|cfree|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size)$)",
      R"(^operator (new|delete))",
      R"(^(__libc_|__GI_|_int_|_dl_|tcache_|__malloc|__free|__default_morecore|sysmalloc))",
      R"(^(tc_|je_|tcmalloc::|je_malloc|mi_))",
      // The standard library: allocators, containers, smart pointers, std::function.
      R"(^std::)",
      R"(^__gnu_cxx::)",
      R"(^__cxxabiv1::)",
      // Thread and process start-up frames at the outer end of every stack.
      R"(^(start_thread|clone|clone3|_start|__libc_start_main|__libc_start_call_main)$)",
      // Allocation wrappers of common libraries: the site is their caller.
      R"(^gpr_(malloc|zalloc|realloc|free|malloc_aligned|free_aligned|strdup)$)",    // gRPC core
      R"(^x(malloc|calloc|realloc|zalloc|strdup|strndup|memdup)$)",                  // libiberty (binutils, gcc)
      R"(^(z|zt)(malloc|calloc|realloc|free|strdup|trymalloc|trycalloc|tryrealloc)(_usable)?$)",  // redis
      R"(^(z|zt)rymalloc_usable_internal$)",
      R"(^sqlite3(Malloc|MallocZero|Realloc|DbMalloc\w*|DbRealloc\w*|MemMalloc|MemRealloc|_malloc|_malloc64|_realloc|_realloc64|DbStrDup|DbStrNDup|StrDup)$)",
      R"(^_?(PyMem_\w+|PyObject_(Malloc|Calloc|Realloc)|pymalloc_\w+))",             // CPython
      // The tracer and allocator libraries, by module file name.
      R"(^crossfree::tracer::)",
      R"(^libcrossfree-trace\.so)",
      R"(^libtcmalloc)",
      R"(^libjemalloc)",
      R"(^libstdc\+\+\.so)",
      R"(^ld-linux)",
  };
  return patterns;
}

std::string_view CallableName(std::string_view name) {
  // The first space outside <>, () and [] ends a return type: a qualified
  // name has no top-level space otherwise, except after "operator"
  // ("ns::operator new", "operator delete[]"), and a return type may go on
  // with "const", "&" or "*" ("char const* f()").
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<' || c == '(' || c == '[') {
      ++depth;
    } else if (c == '>' || c == ')' || c == ']') {
      --depth;
    } else if (c == ' ' && depth == 0) {
      std::string_view before = name.substr(0, i);
      std::string_view rest = name.substr(i + 1);
      if (before.ends_with("operator") || rest.starts_with("const") ||
          rest.starts_with("volatile") || rest.starts_with("&") || rest.starts_with("*")) {
        continue;
      }
      return rest;
    }
  }
  return name;
}

std::string BareFunctionName(std::string_view demangled) {
  std::string_view name = CallableName(demangled);
  // Cut the parameter list: the last top-level '(' whose match ends the name.
  int depth = 0;
  size_t end = name.size();
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '(' && depth == 0 && i > 0 && !name.substr(i).starts_with("(anonymous namespace)::")) {
      // "(anonymous namespace)::" is a scope, not parameters, at the start
      // or after another scope ("node::(anonymous namespace)::Worker")
      end = i;
      break;
    }
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
  }
  name = name.substr(0, end);
  // The last scope component outside template arguments.
  depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ':' && name[i + 1] == ':') start = i + 2;
  }
  name = name.substr(start);
  size_t angle = name.find('<');
  if (angle != std::string_view::npos && angle > 0) name = name.substr(0, angle);
  return std::string(name);
}

std::string KeyFunctionName(std::string_view demangled) {
  std::string_view name = CallableName(demangled);
  std::string out;
  out.reserve(name.size());
  int depth = 0;  // inside <>, [] or {} (template arguments, lambda names)
  for (size_t i = 0; i < name.size();) {
    char c = name[i];
    if (out.ends_with("operator")) {
      // The operator's own characters are its name ("operator()",
      // "operator<<", "operator[]"), not parameters or template brackets.
      if (name.substr(i).starts_with("()")) {
        out += "()";
        i += 2;
        continue;
      }
      constexpr std::string_view kOperatorChars = "<>=!+-*/%^&|~[],";
      if (kOperatorChars.find(c) != std::string_view::npos) {
        while (i < name.size() && kOperatorChars.find(name[i]) != std::string_view::npos) {
          out += name[i++];
        }
        continue;
      }
      // "operator new", "operator delete[]", a conversion: an ordinary name.
    }
    if (c == '(' && depth == 0 &&
        !name.substr(i).starts_with("(anonymous namespace)")) {
      // A parameter list: skip to its matching ')', then the qualifiers
      // that may follow it (" const", " &&", " noexcept", " volatile").
      int parens = 0;
      for (; i < name.size(); ++i) {
        if (name[i] == '(') ++parens;
        if (name[i] == ')' && --parens == 0) {
          ++i;
          break;
        }
      }
      for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
        if (name.substr(i).starts_with(q)) i += q.size();
      }
      continue;
    }
    if (c == '<' || c == '[' || c == '{') ++depth;
    if ((c == '>' || c == ']' || c == '}') && depth > 0) --depth;
    out += c;
    ++i;
  }
  return out;
}

std::string KeyFrameName(const SymbolFrame& frame, bool with_line) {
  if (frame.function.empty()) return FrameName(frame, with_line);
  SymbolFrame keyed = frame;
  keyed.function = KeyFunctionName(frame.function);
  return FrameName(keyed, with_line);
}

std::string FrameName(const SymbolFrame& frame, bool with_line) {
  std::string name;
  if (!frame.function.empty()) {
    name = frame.function;
  } else if (!frame.module.empty()) {
    name = fmt::format("{}+{:#x}", Basename(frame.module), frame.module_offset);
  } else {
    name = fmt::format("{:#x}", frame.address);
  }
  if (with_line && !frame.file.empty()) {
    name += fmt::format(" ({}:{})", Basename(frame.file), frame.line);
  }
  return name;
}

std::unique_ptr<SiteBuilder> SiteBuilder::Create(const SiteOptions& options,
                                                 SymbolResolver* resolver, std::string* error) {
  std::unique_ptr<SiteBuilder> b(new SiteBuilder(options, resolver));
  std::vector<std::string> all;
  if (options.default_skips) all = DefaultSkipPatterns();
  all.insert(all.end(), options.skips.begin(), options.skips.end());
  for (const std::string& p : all) {
    try {
      b->patterns_.emplace_back(p, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      *error = fmt::format("--skip '{}': not a valid regular expression ({})", p, e.what());
      return nullptr;
    }
  }
  if (b->options_.depth < 1) b->options_.depth = 1;
  return b;
}

bool SiteBuilder::Skipped(const SymbolFrame& frame) {
  std::string module(Basename(frame.module));
  std::string cache_key = frame.function + '\0' + module;
  auto [it, inserted] = skip_cache_.try_emplace(cache_key, false);
  if (!inserted) return it->second;
  // Patterns anchored at the start (^std::) must see the name, not the
  // return type in front of a template instance.
  std::string callable(CallableName(frame.function));
  for (const std::regex& re : patterns_) {
    if ((!callable.empty() && std::regex_search(callable, re)) ||
        (!module.empty() && std::regex_search(module, re))) {
      it->second = true;
      break;
    }
  }
  return it->second;
}

const Site& SiteBuilder::Get(size_t trace_index, const ProcessTrace& trace, uint32_t stack_id) {
  auto [it, inserted] = cache_.try_emplace({trace_index, stack_id});
  Site& site = it->second;
  if (!inserted) return site;
  auto stack = trace.stacks.find(stack_id);
  if (stack_id == format::kNoStack || stack == trace.stacks.end() || stack->second.empty()) {
    site.key = "(no stack)";
    return site;
  }
  const SymbolFrame* first = nullptr;
  for (uint64_t address : stack->second) {
    for (const SymbolFrame& f : resolver_->Resolve(trace_index, address)) {
      if (!first) first = &f;
      if (Skipped(f)) continue;
      site.frames.push_back(f);
      if (static_cast<int>(site.frames.size()) >= options_.depth) break;
    }
    if (static_cast<int>(site.frames.size()) >= options_.depth) break;
  }
  // Every frame skipped (an allocation made by the runtime itself): keep the
  // innermost one rather than an empty site.
  if (site.frames.empty() && first) site.frames.push_back(*first);
  for (const SymbolFrame& f : site.frames) {
    if (!site.key.empty()) site.key += " <- ";
    site.key += KeyFrameName(f, options_.key_lines);
  }
  return site;
}

}  // namespace crossfree::analyzer
