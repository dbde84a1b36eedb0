// SPDX-License-Identifier: Apache-2.0
// Analyzer: the libdw (libdwfl offline) implementation of Symbolizer. Each
// module of the trace's module map gets its own Dwfl session, opened the
// first time an address falls into it.
#include "analyzer/model/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>
#include <set>
#include <map>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "analyzer/model/range_index.h"

namespace crossfree::analyzer {
namespace {

// Opens a module file named by a trace for reading, only if it is a regular
// file: the path comes from the trace, and a FIFO or device there would
// block open() or read() forever. O_NONBLOCK makes the open itself safe; the
// type is checked on the descriptor. Returns -1 with *reason set otherwise.
int OpenRegularFile(const std::string& path, std::string* reason) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *reason = std::string("file missing or unreadable (") + std::strerror(errno) + ")";
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    *reason = "not a regular file";
    return -1;
  }
  // Reads of a regular file never block; clear the flag for libelf anyway.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string HexBytes(const uint8_t* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 15]);
  }
  return out;
}

// Demangles an Itanium C++ name; anything else (C names, already demangled
// text) comes back unchanged.
std::string Demangle(const char* name) {
  if (name == nullptr) return {};
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string out(demangled);
  std::free(demangled);
  return out;
}

// The linkage name of a subprogram or inlined-subroutine DIE, through
// DW_AT_abstract_origin and DW_AT_specification; null when there is none
// (C functions, main, C++ static inline functions never emitted out of line).
const char* LinkageName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != nullptr ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) != nullptr) {
    return dwarf_formstring(&attr);
  }
  return nullptr;
}

// The DIE that declares a function: the end of its abstract-origin and
// specification chain, which sits inside its namespaces and classes.
Dwarf_Die DeclarationDie(Dwarf_Die die) {
  for (int hops = 0; hops < 16; ++hops) {
    Dwarf_Attribute attr;
    Dwarf_Die next;
    if ((dwarf_attr(&die, DW_AT_abstract_origin, &attr) == nullptr &&
         dwarf_attr(&die, DW_AT_specification, &attr) == nullptr) ||
        dwarf_formref_die(&attr, &next) == nullptr) {
      break;
    }
    die = next;
  }
  return die;
}

// One component of a qualified name, spelled as the demangler spells
// unnamed scopes.
const char* ScopeName(Dwarf_Die* scope, int tag) {
  if (const char* name = dwarf_diename(scope)) return name;
  return tag == DW_TAG_namespace ? "(anonymous namespace)" : "{unnamed type}";
}

// DW_AT_call_file / DW_AT_call_line of an inlined subroutine: where the
// function one level out made the (inlined) call.
void CallSite(Dwarf_Die* inlined, std::string* file, int* line) {
  file->clear();
  *line = 0;
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_attr(inlined, DW_AT_call_line, &attr) != nullptr &&
      dwarf_formudata(&attr, &value) == 0) {
    *line = static_cast<int>(value);
  }
  if (dwarf_attr(inlined, DW_AT_call_file, &attr) == nullptr ||
      dwarf_formudata(&attr, &value) != 0) {
    return;
  }
  Dwarf_Die cu;
  if (dwarf_diecu(inlined, &cu, nullptr, nullptr) == nullptr) return;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (dwarf_getsrcfiles(&cu, &files, &file_count) != 0 || value >= file_count) return;
  if (const char* name = dwarf_filesrc(files, value, nullptr, nullptr)) *file = name;
}

}  // namespace

struct Symbolizer::Impl {
  explicit Impl(const SymbolizerOptions& options) : debuginfo_path(options.debuginfo_path) {
    debuginfo_path_ptr = debuginfo_path.empty() ? nullptr : debuginfo_path.data();
    // libdwfl's standard debuginfo search: build-id links under each
    // directory of the path (Debian -dbgsym/-dbg packages install
    // /usr/lib/debug/.build-id/xx/rest.debug), then .gnu_debuglink next to
    // the file and under the path. Dwfl keeps a pointer to these callbacks.
    callbacks.find_elf = dwfl_build_id_find_elf;
    callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks.section_address = dwfl_offline_section_address;
    callbacks.debuginfo_path = &debuginfo_path_ptr;  // null: ":.debug:/usr/lib/debug"
  }

  std::string debuginfo_path;
  char* debuginfo_path_ptr = nullptr;
  Dwfl_Callbacks callbacks = {};

  enum class State : uint8_t { kUnopened, kSymbolized, kOffsetOnly };

  // The function-like DIEs of one compilation unit with their address
  // ranges, built by one walk of the unit the first time an address falls
  // into it (dwarf_getscopes would walk the unit again for every address).
  struct CuIndex {
    struct Node {
      Dwarf_Die die;   // DW_TAG_subprogram or DW_TAG_inlined_subroutine
      int32_t parent;  // enclosing node for an inlined subroutine, else -1
      int32_t depth;
    };
    std::vector<Node> nodes;
    RangeIndex<int32_t> ranges;  // DWARF addresses -> node

    // The deepest node with a range containing pc (DWARF address), or -1.
    int32_t Innermost(uint64_t pc) const {
      int32_t best = -1;
      ranges.ForEachContaining(pc, [&](int32_t node) {
        if (best < 0 || nodes[node].depth > nodes[best].depth) best = node;
      });
      return best;
    }
  };

  struct Symbol {
    uint64_t start;
    uint64_t size;
    int rank;          // lower wins among aliases: global, weak, local
    const char* name;  // owned by the module's Dwfl
  };

  struct ModuleState {
    format::Module module;
    // Another state of the same file (path and build id) mapped at another
    // address: that one's libdw session serves this one too, with addresses
    // moved by the difference of the load biases. A trace may map one file
    // thousands of times (dlopen/dlclose cycles); one session per mapping
    // would hold its debug info thousands of times.
    int alias_of = -1;
    State state = State::kUnopened;
    Dwfl* dwfl = nullptr;
    Dwfl_Module* dwfl_module = nullptr;
    // Function symbols sorted by address, built on first use: libdwfl's
    // dwfl_module_addrinfo scans the whole table on every lookup.
    bool symbols_indexed = false;
    std::vector<Symbol> symbols;
  };

  std::vector<ModuleState> modules;
  RangeIndex<size_t> ranges;  // the modules' segments -> module index
  bool probed_segmentless = false;
  std::unordered_map<uint64_t, std::vector<SymbolFrame>> cache;
  // Function names by DIE (its address in the mapped debug data, unique
  // across the main and the alternate/dwz file).
  std::unordered_map<const void*, std::string> names;
  // CU indexes by CU DIE address, and the namespace/class prefix ("a::B::")
  // of every named subprogram DIE the index walks met.
  std::unordered_map<const void*, std::unique_ptr<CuIndex>> cu_indexes;
  std::unordered_map<const void*, std::string> scope_prefixes;
  std::vector<std::string> warnings;
  std::vector<std::string> without_debug_info;

  ~Impl() {
    for (ModuleState& m : modules) {
      if (m.dwfl != nullptr) dwfl_end(m.dwfl);
    }
  }

  void BuildRanges() {
    ranges.Clear();
    for (size_t i = 0; i < modules.size(); ++i) {
      for (const format::ModuleSegment& s : modules[i].module.segments) {
        if (s.size == 0) continue;
        ranges.Add(s.start, s.start + s.size, i);
      }
    }
    ranges.Build();
  }

  // A module recorded without its PT_LOAD segments: derive them from the
  // file's program headers and the load bias. Done once, on the first
  // address that no recorded segment covers.
  void ProbeSegmentlessModules() {
    probed_segmentless = true;
    bool added = false;
    for (ModuleState& m : modules) {
      if (!m.module.segments.empty() || m.module.path.empty()) continue;
      std::string reason;
      int fd = OpenRegularFile(m.module.path, &reason);
      if (fd < 0) continue;
      Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
      size_t count = 0;
      if (elf != nullptr && elf_getphdrnum(elf, &count) == 0) {
        for (size_t i = 0; i < count; ++i) {
          GElf_Phdr phdr;
          if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr) continue;
          if (phdr.p_type != PT_LOAD || phdr.p_memsz == 0) continue;
          m.module.segments.push_back({m.module.load_bias + phdr.p_vaddr, phdr.p_memsz});
          added = true;
        }
      }
      if (elf != nullptr) elf_end(elf);
      close(fd);
    }
    if (added) BuildRanges();
  }

  // The module containing address; when ranges overlap (a library unloaded
  // and another mapped at the same place) the one recorded last wins.
  ModuleState* FindModule(uint64_t address) {
    ModuleState* found = nullptr;
    size_t found_index = 0;
    ranges.ForEachContaining(address, [&](size_t module_index) {
      if (found == nullptr || module_index > found_index) {
        found = &modules[module_index];
        found_index = module_index;
      }
    });
    if (found == nullptr && !probed_segmentless) {
      ProbeSegmentlessModules();
      return FindModule(address);
    }
    return found;
  }

  // The printable name of a subprogram or inlined-subroutine DIE: the
  // demangled linkage name (qualified, with template arguments and
  // parameters) or, without one, DW_AT_name qualified by the namespaces and
  // classes that enclose its declaration (no parameter list then).
  const std::string& FunctionName(Dwarf_Die* die) {
    if (auto known = names.find(die->addr); known != names.end()) return known->second;
    std::string result = ComputeFunctionName(die);
    return names.insert_or_assign(die->addr, std::move(result)).first->second;
  }

  std::string ComputeFunctionName(Dwarf_Die* die) {
    if (const char* linkage = LinkageName(die)) return Demangle(linkage);
    Dwarf_Die decl = DeclarationDie(*die);
    const char* name = dwarf_diename(&decl);
    if (name == nullptr) return {};
    if (auto known = scope_prefixes.find(decl.addr);
        known != scope_prefixes.end() && known->second.find("{unnamed type}") == std::string::npos) {
      return known->second + name;
    }
    // A declaration the CU walk did not see (another unit, a dwz partial
    // unit), or a member of a class without a name (a lambda's closure
    // type, declared inside the function that encloses the lambda): find
    // its enclosing scopes the slow way.
    Dwarf_Die* scopes = nullptr;
    int count = dwarf_getscopes_die(&decl, &scopes);
    std::string qualified;
    for (int i = count - 1; i >= 1; --i) {
      int tag = dwarf_tag(&scopes[i]);
      if (tag == DW_TAG_subprogram) {
        // A local class: qualified by its function, as the demangler does
        // ("ProducerLoop()::{lambda()#1}::operator()").
        std::string outer = FunctionName(&scopes[i]);
        qualified = outer.empty() ? std::string() : outer + "::";
        continue;
      }
      if (tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
          tag != DW_TAG_structure_type && tag != DW_TAG_union_type) {
        continue;
      }
      if (tag != DW_TAG_namespace && dwarf_diename(&scopes[i]) == nullptr) {
        // An unnamed class: a lambda's closure type. Its place in the
        // source keeps two lambdas of one function apart
        // ("{lambda@file.cc:18}"; no space, so that names still parse).
        qualified += "{lambda";
        int line = 0;
        const char* file = dwarf_decl_file(&scopes[i]);
        if (file != nullptr && dwarf_decl_line(&scopes[i], &line) == 0) {
          const char* base = std::strrchr(file, '/');
          qualified += '@';
          qualified += base != nullptr ? base + 1 : file;
          qualified += ':';
          qualified += std::to_string(line);
        }
        qualified += "}::";
        continue;
      }
      qualified += ScopeName(&scopes[i], tag);
      qualified += "::";
    }
    std::free(scopes);
    return qualified + name;
  }

  const CuIndex& IndexFor(Dwarf_Die* cu) {
    std::unique_ptr<CuIndex>& index = cu_indexes[cu->addr];
    if (index == nullptr) {
      index = std::make_unique<CuIndex>();
      std::string prefix;
      WalkDies(cu, -1, &prefix, index.get());
      index->ranges.Build();
    }
    return *index;
  }

  // Visits the children of parent: records functions with code as nodes,
  // descends into scopes that can hold them, skips types and variables.
  void WalkDies(Dwarf_Die* parent, int32_t function_node, std::string* prefix, CuIndex* index) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
      int tag = dwarf_tag(&child);
      switch (tag) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine: {
          if (tag == DW_TAG_subprogram && !prefix->empty() && dwarf_hasattr(&child, DW_AT_name)) {
            scope_prefixes.emplace(child.addr, *prefix);
          }
          int32_t node = -1;
          Dwarf_Addr base = 0, low = 0, high = 0;
          ptrdiff_t offset = 0;
          while ((offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0) {
            if (high <= low) continue;
            if (node < 0) {
              int32_t parent_node = tag == DW_TAG_inlined_subroutine ? function_node : -1;
              int32_t depth = parent_node >= 0 ? index->nodes[parent_node].depth + 1 : 0;
              node = static_cast<int32_t>(index->nodes.size());
              index->nodes.push_back({child, parent_node, depth});
            }
            index->ranges.Add(low, high, node);
          }
          // Declarations and abstract instances have no code below them.
          if (node >= 0) WalkDies(&child, node, prefix, index);
          break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
          WalkDies(&child, function_node, prefix, index);
          break;
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type: {
          if (!dwarf_hasattr(&child, DW_AT_declaration) && dwarf_haschildren(&child) > 0) {
            size_t saved = prefix->size();
            *prefix += ScopeName(&child, tag);
            *prefix += "::";
            WalkDies(&child, function_node, prefix, index);
            prefix->resize(saved);
          }
          break;
        }
        default:
          break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  static void IndexSymbols(ModuleState& m) {
    m.symbols_indexed = true;
    int count = dwfl_module_getsymtab(m.dwfl_module);
    for (int i = 1; i < count; ++i) {
      GElf_Sym sym;
      GElf_Addr address = 0;
      GElf_Word shndx = 0;
      const char* name = dwfl_module_getsym_info(m.dwfl_module, i, &sym, &address, &shndx,
                                                 nullptr, nullptr);
      int type = GELF_ST_TYPE(sym.st_info);
      if (name == nullptr || name[0] == '\0' || sym.st_shndx == SHN_UNDEF ||
          (type != STT_FUNC && type != STT_GNU_IFUNC)) {
        continue;
      }
      int binding = GELF_ST_BIND(sym.st_info);
      int rank = binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 1 : 2;
      m.symbols.push_back({address, sym.st_size, rank, name});
    }
    std::sort(m.symbols.begin(), m.symbols.end(), [](const Symbol& a, const Symbol& b) {
      return a.start != b.start ? a.start < b.start : a.rank < b.rank;
    });
  }

  // The function symbol containing pc; a sizeless symbol counts as reaching
  // up to the next one.
  static const char* SymbolAt(ModuleState& m, uint64_t pc) {
    if (!m.symbols_indexed) IndexSymbols(m);
    auto it = std::upper_bound(m.symbols.begin(), m.symbols.end(), pc,
                               [](uint64_t a, const Symbol& s) { return a < s.start; });
    // Walk back over a few candidates: a small function can sit after the
    // start of a larger one that contains it (rare, but cheap to allow).
    for (int tries = 0; tries < 8 && it != m.symbols.begin(); ++tries) {
      --it;
      uint64_t first = it->start;
      while (it != m.symbols.begin() && (it - 1)->start == first) --it;  // best-ranked alias
      if (it->size == 0 || pc < it->start + it->size) return it->name;
    }
    return nullptr;
  }

  void Warn(ModuleState& m, const std::string& reason) {
    const std::string& path = m.module.path.empty() ? std::string("(unnamed module)") : m.module.path;
    warnings.push_back(path + ": " + reason);
  }

  void FallBack(ModuleState& m, const std::string& reason) {
    m.state = State::kOffsetOnly;
    if (m.dwfl != nullptr) {
      dwfl_end(m.dwfl);
      m.dwfl = nullptr;
      m.dwfl_module = nullptr;
    }
    Warn(m, reason + "; frames shown as module+offset");
  }

  // Reports the module to its own Dwfl session and checks that the file on
  // disk is the one that was traced.
  void Open(ModuleState& m) {
    const format::Module& rec = m.module;
    if (rec.path.empty()) return FallBack(m, "no file path recorded");
    std::string reason;
    int fd = OpenRegularFile(rec.path, &reason);
    if (fd < 0) return FallBack(m, reason);
    m.dwfl = dwfl_begin(&callbacks);
    if (m.dwfl == nullptr) {
      close(fd);
      return FallBack(m, std::string("libdw: ") + dwfl_errmsg(-1));
    }
    dwfl_report_begin(m.dwfl);
    // add_p_vaddr: the base is the load bias (added to p_vaddr), as recorded,
    // also for objects whose first PT_LOAD is not at 0. ET_EXEC ignores it.
    // libdwfl takes the descriptor over when it succeeds.
    m.dwfl_module = dwfl_report_elf(m.dwfl, rec.path.c_str(), rec.path.c_str(), fd,
                                    rec.load_bias, /*add_p_vaddr=*/true);
    if (m.dwfl_module == nullptr) {
      close(fd);
      return FallBack(m, std::string("not a usable ELF file (") + dwfl_errmsg(-1) + ")");
    }
    dwfl_report_end(m.dwfl, nullptr, nullptr);

    const unsigned char* bits = nullptr;
    GElf_Addr build_id_vaddr = 0;
    int build_id_size = dwfl_module_build_id(m.dwfl_module, &bits, &build_id_vaddr);
    if (!rec.build_id.empty()) {
      if (build_id_size <= 0) {
        return FallBack(m, "file has no build id, trace recorded " +
                               HexBytes(rec.build_id.data(), rec.build_id.size()));
      }
      if (static_cast<size_t>(build_id_size) != rec.build_id.size() ||
          std::memcmp(bits, rec.build_id.data(), rec.build_id.size()) != 0) {
        return FallBack(m, "build id differs: file " + HexBytes(bits, build_id_size) +
                               ", trace recorded " +
                               HexBytes(rec.build_id.data(), rec.build_id.size()));
      }
    }

    Dwarf_Addr bias = 0;
    bool has_dwarf = dwfl_module_getdwarf(m.dwfl_module, &bias) != nullptr;
    int symbols = dwfl_module_getsymtab(m.dwfl_module);
    if (!has_dwarf && symbols <= 0) return FallBack(m, "no symbols and no debug info");
    m.state = State::kSymbolized;
    if (!has_dwarf) without_debug_info.push_back(rec.path);
  }

  void SymbolizeIn(ModuleState& m, uint64_t return_address, std::vector<SymbolFrame>* out) {
    if (m.alias_of >= 0) {
      ModuleState& owner = modules[static_cast<size_t>(m.alias_of)];
      size_t first = out->size();
      SymbolizeIn(owner, return_address - m.module.load_bias + owner.module.load_bias, out);
      for (size_t i = first; i < out->size(); ++i) {
        (*out)[i].address = return_address;
        (*out)[i].module_offset = return_address - m.module.load_bias;
      }
      return;
    }
    SymbolFrame base;
    base.address = return_address;
    base.module = m.module.path;
    base.module_offset = return_address - m.module.load_bias;
    if (m.state == State::kUnopened) Open(m);
    if (m.state != State::kSymbolized) {
      out->push_back(std::move(base));
      return;
    }
    // The return address is the instruction after the call; the byte before
    // it belongs to the call, whose line and inline context are wanted.
    const Dwarf_Addr pc = return_address - 1;

    // Location of the innermost frame: the line table row for pc.
    std::string file;
    int line = 0;
    if (Dwfl_Line* row = dwfl_module_getsrc(m.dwfl_module, pc)) {
      int column = 0;
      if (const char* name = dwfl_lineinfo(row, nullptr, &line, &column, nullptr, nullptr)) {
        file = name;
      }
    }

    // Inline chain: the deepest function-like DIE whose ranges contain pc,
    // then its parents. Each DW_TAG_inlined_subroutine is one frame whose
    // caller's location is its call_file:call_line; the DW_TAG_subprogram
    // that holds them ends the chain.
    Dwarf_Addr bias = 0;
    if (Dwarf_Die* cu = dwfl_module_addrdie(m.dwfl_module, pc, &bias)) {
      const CuIndex& index = IndexFor(cu);
      for (int32_t node = index.Innermost(pc - bias); node >= 0; node = index.nodes[node].parent) {
        Dwarf_Die die = index.nodes[node].die;
        SymbolFrame frame = base;
        frame.function = FunctionName(&die);
        frame.file = file;
        frame.line = line;
        frame.inlined = index.nodes[node].parent >= 0;
        out->push_back(std::move(frame));
        if (out->back().inlined) CallSite(&die, &file, &line);
      }
    }

    // No DWARF scope (no debug info, assembly, a CU without ranges): the
    // ELF symbol table names the function.
    if (out->empty() || out->back().inlined || out->back().function.empty()) {
      const char* name = SymbolAt(m, pc);
      if (out->empty() || out->back().inlined) {
        SymbolFrame frame = base;
        frame.function = Demangle(name);
        frame.file = file;
        frame.line = line;
        out->push_back(std::move(frame));
      } else {
        out->back().function = Demangle(name);
      }
    }
  }
};

Symbolizer::Symbolizer(std::vector<format::Module> modules)
    : Symbolizer(std::move(modules), SymbolizerOptions{}) {}

Symbolizer::Symbolizer(std::vector<format::Module> modules, const SymbolizerOptions& options)
    : impl_(std::make_unique<Impl>(options)) {
  elf_version(EV_CURRENT);
  impl_->modules.reserve(modules.size());
  // (path, build id) -> the first state of that file; (path, build id,
  // bias) -> seen.
  std::map<std::pair<std::string, std::vector<uint8_t>>, int> first_of_file;
  std::set<std::tuple<std::string, std::vector<uint8_t>, uint64_t>> seen;
  for (format::Module& m : modules) {
    // A map may list a module more than once (re-recorded after a dlopen);
    // one state per mapping keeps its warning single.
    if (!seen.emplace(m.path, m.build_id, m.load_bias).second) continue;
    auto [file, inserted] =
        first_of_file.try_emplace({m.path, m.build_id}, static_cast<int>(impl_->modules.size()));
    impl_->modules.push_back({});
    impl_->modules.back().module = std::move(m);
    if (!inserted && !impl_->modules.back().module.path.empty()) {
      impl_->modules.back().alias_of = file->second;
    }
  }
  impl_->BuildRanges();
}

Symbolizer::~Symbolizer() = default;

const std::vector<SymbolFrame>& Symbolizer::Symbolize(uint64_t return_address) {
  auto [it, inserted] = impl_->cache.try_emplace(return_address);
  if (!inserted) return it->second;
  // Looked up at return_address - 1: a call that ends its segment returns
  // to the first byte after it.
  Impl::ModuleState* m = return_address != 0 ? impl_->FindModule(return_address - 1) : nullptr;
  if (m == nullptr) {
    SymbolFrame frame;
    frame.address = return_address;
    it->second.push_back(std::move(frame));
  } else {
    impl_->SymbolizeIn(*m, return_address, &it->second);
  }
  return it->second;
}

const std::vector<std::string>& Symbolizer::warnings() const { return impl_->warnings; }

const std::vector<std::string>& Symbolizer::modules_without_debug_info() const {
  return impl_->without_debug_info;
}

}  // namespace crossfree::analyzer
