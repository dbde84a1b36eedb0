// SPDX-License-Identifier: Apache-2.0
// Symbolizer tests: symbolize return addresses captured at known call sites
// of this process (executable, a dlopen'd plugin, libc) and check names,
// files, lines, inline chains and the module+offset fallbacks.
#include "analyzer/model/symbolizer.h"

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "bench/analyzer/process_modules.h"
#include "tests/analyzer/model/symbolizer_test_lib.h"
#include "tests/support/process.h"

namespace crossfree::symbolizer_test {

using bench::CurrentProcessModules;
namespace {

using analyzer::SymbolFrame;
using analyzer::Symbolizer;

constexpr char kLibFile[] = "symbolizer_test_lib.cc";
constexpr char kSiteArg[] = "(crossfree::symbolizer_test::Site*)";

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The recorded module that contains address, or null.
const format::Module* ModuleOf(const std::vector<format::Module>& modules, uint64_t address) {
  for (const format::Module& m : modules) {
    for (const format::ModuleSegment& s : m.segments) {
      if (address >= s.start && address < s.start + s.size) return &m;
    }
  }
  return nullptr;
}

std::string HexBuildId(const std::vector<uint8_t>& id) {
  std::string out;
  for (uint8_t b : id) {
    static constexpr char kDigits[] = "0123456789abcdef";
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// Loads the plugin once and runs its caller.
Site PluginSite(void** handle_out = nullptr) {
  static void* handle = dlopen(CROSSFREE_SYMBOLIZER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  auto caller = reinterpret_cast<PluginCallerFn>(dlsym(handle, "crossfree_symbolizer_plugin_caller"));
  REQUIRE(caller != nullptr);
  Site site;
  caller(&site);
  if (handle_out != nullptr) *handle_out = handle;
  return site;
}

void CheckSingleFrame(const std::vector<SymbolFrame>& frames, const Site& site,
                      const std::string& function, const std::string& file) {
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].address == site.return_address);
  CHECK(frames[0].function == function);
  CHECK(Basename(frames[0].file) == file);
  CHECK(frames[0].line == site.line);
  CHECK_FALSE(frames[0].inlined);
}

TEST_CASE("plain C++ function in a namespace, with module and offset") {
  Site site;
  PlainCaller(&site);
  auto modules = CurrentProcessModules();
  const format::Module* exe = ModuleOf(modules, site.return_address);
  REQUIRE(exe != nullptr);
  Symbolizer symbolizer(modules);
  const auto& frames = symbolizer.Symbolize(site.return_address);
  CheckSingleFrame(frames, site, std::string("crossfree::symbolizer_test::PlainCaller") + kSiteArg,
                   kLibFile);
  CHECK(frames[0].module == exe->path);
  CHECK(Basename(frames[0].module) == "symbolizer_test");
  CHECK(frames[0].module_offset == site.return_address - exe->load_bias);
  CHECK(symbolizer.warnings().empty());
}

TEST_CASE("member of a class template with template arguments") {
  Site site;
  CHECK(Widget<long, 3>::Run(&site) == 3);
  Symbolizer symbolizer(CurrentProcessModules());
  CheckSingleFrame(symbolizer.Symbolize(site.return_address), site,
                   std::string("crossfree::symbolizer_test::Widget<long, 3>::Run") + kSiteArg,
                   kLibFile);
}

TEST_CASE("C function keeps its plain name") {
  Site site;
  crossfree_symbolizer_test_c_caller(&site);
  Symbolizer symbolizer(CurrentProcessModules());
  CheckSingleFrame(symbolizer.Symbolize(site.return_address), site,
                   "crossfree_symbolizer_test_c_caller", kLibFile);
}

TEST_CASE("inlined static functions expand into a chain, innermost first") {
  Site site;
  InlineCaller(&site);
  REQUIRE(site.line != site.middle_line);
  Symbolizer symbolizer(CurrentProcessModules());
  const auto& frames = symbolizer.Symbolize(site.return_address);
  REQUIRE(frames.size() == 3);
  // Never emitted out of line, so no linkage name: qualified, no parameters.
  CHECK(frames[0].function == "crossfree::symbolizer_test::InnerInlined");
  CHECK(Basename(frames[0].file) == kLibFile);
  CHECK(frames[0].line == site.line);
  CHECK(frames[0].inlined);
  CHECK(frames[1].function == "crossfree::symbolizer_test::MiddleInlined");
  CHECK(Basename(frames[1].file) == kLibFile);
  CHECK(frames[1].line == site.middle_line);
  CHECK(frames[1].inlined);
  CHECK(frames[2].function == std::string("crossfree::symbolizer_test::InlineCaller") + kSiteArg);
  CHECK(Basename(frames[2].file) == kLibFile);
  CHECK(frames[2].line == site.outer_line);
  CHECK_FALSE(frames[2].inlined);
  for (const SymbolFrame& f : frames) CHECK(f.address == site.return_address);
}

TEST_CASE("function in a dlopen'd shared library") {
  Site site = PluginSite();
  auto modules = CurrentProcessModules();
  const format::Module* plugin = ModuleOf(modules, site.return_address);
  REQUIRE(plugin != nullptr);
  CHECK(Basename(plugin->path) == "libsymbolizer_test_plugin.so");
  Symbolizer symbolizer(modules);
  const auto& frames = symbolizer.Symbolize(site.return_address);
  CheckSingleFrame(frames, site, "crossfree_symbolizer_plugin_caller",
                   "symbolizer_test_plugin.cc");
  CHECK(frames[0].module == plugin->path);
  CHECK(frames[0].module_offset == site.return_address - plugin->load_bias);
  CHECK(symbolizer.warnings().empty());
}

// Symbolizes two addresses of the plugin through a module map whose plugin
// entry was altered by tamper(); both must fall back to module+offset with a
// single warning that contains reason.
void CheckPluginFallback(void (*tamper)(format::Module*), const std::string& reason) {
  void* handle = nullptr;
  Site site = PluginSite(&handle);
  auto second = reinterpret_cast<uint64_t>(dlsym(handle, "crossfree_symbolizer_plugin_caller")) + 1;
  auto modules = CurrentProcessModules();
  format::Module* plugin = const_cast<format::Module*>(ModuleOf(modules, site.return_address));
  REQUIRE(plugin != nullptr);
  REQUIRE(ModuleOf(modules, second) == plugin);
  tamper(plugin);
  const std::string path = plugin->path;
  const uint64_t bias = plugin->load_bias;

  Symbolizer symbolizer(modules);
  for (uint64_t address : {site.return_address, second}) {
    const auto& frames = symbolizer.Symbolize(address);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].function.empty());
    CHECK(frames[0].file.empty());
    CHECK(frames[0].line == 0);
    CHECK(frames[0].module == path);
    CHECK(frames[0].module_offset == address - bias);
  }
  REQUIRE(symbolizer.warnings().size() == 1);
  CHECK(symbolizer.warnings()[0].find(path + ": " + reason) == 0);

  // The rest of the process still symbolizes, without further warnings.
  Site plain;
  PlainCaller(&plain);
  CHECK(symbolizer.Symbolize(plain.return_address)[0].line == plain.line);
  CHECK(symbolizer.warnings().size() == 1);
}

TEST_CASE("module whose build id differs falls back to module+offset") {
  CheckPluginFallback(
      [](format::Module* m) {
        REQUIRE(m->build_id.size() == 20);
        m->build_id[0] ^= 0xff;
      },
      "build id differs");
}

TEST_CASE("module whose file is missing falls back to module+offset") {
  CheckPluginFallback([](format::Module* m) { m->path = "/nonexistent/crossfree/libgone.so"; },
                      "file missing");
}

TEST_CASE("overlapping and repeated modules: the one recorded last wins, warned once") {
  Site site = PluginSite();
  auto modules = CurrentProcessModules();
  const format::Module* plugin = ModuleOf(modules, site.return_address);
  REQUIRE(plugin != nullptr);
  // A module mapped later over the same addresses (after a dlclose), listed
  // twice, as a module map re-recorded after another dlopen would.
  format::Module later = *plugin;
  later.path = "/nonexistent/crossfree/liblater.so";
  modules.push_back(later);
  modules.push_back(later);
  Symbolizer symbolizer(modules);
  const auto& frames = symbolizer.Symbolize(site.return_address);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].module == later.path);
  CHECK(frames[0].function.empty());
  symbolizer.Symbolize(site.return_address + 1);
  REQUIRE(symbolizer.warnings().size() == 1);
  CHECK(symbolizer.warnings()[0].find(later.path + ": file missing") == 0);
}

TEST_CASE("address outside every module has neither function nor module") {
  Symbolizer symbolizer(CurrentProcessModules());
  const auto& frames = symbolizer.Symbolize(0x10);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].address == 0x10);
  CHECK(frames[0].function.empty());
  CHECK(frames[0].module.empty());
  CHECK(frames[0].line == 0);
  CHECK(symbolizer.warnings().empty());
}

TEST_CASE("results are cached per return address") {
  Site site;
  PlainCaller(&site);
  Symbolizer symbolizer(CurrentProcessModules());
  const auto& first = symbolizer.Symbolize(site.return_address);
  for (uint64_t a = 1; a < 2000; ++a) symbolizer.Symbolize(site.return_address + a);
  const auto& again = symbolizer.Symbolize(site.return_address);
  CHECK(&first == &again);
  CHECK(again[0].line == site.line);
}

TEST_CASE("module recorded without segments is placed from its program headers") {
  Site site;
  PlainCaller(&site);
  auto modules = CurrentProcessModules();
  auto* exe = const_cast<format::Module*>(ModuleOf(modules, site.return_address));
  REQUIRE(exe != nullptr);
  exe->segments.clear();
  Symbolizer symbolizer(modules);
  CheckSingleFrame(symbolizer.Symbolize(site.return_address), site,
                   std::string("crossfree::symbolizer_test::PlainCaller") + kSiteArg, kLibFile);
}

TEST_CASE("separate debug info is found by build id under debuginfo_path") {
  const std::string dir = CROSSFREE_SYMBOLIZER_SEPARATE_DEBUG_DIR;
  const std::string stripped = dir + "/libsymbolizer_test_stripped.so";
  void* handle = dlopen(stripped.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  auto caller = reinterpret_cast<PluginCallerFn>(dlsym(handle, "crossfree_symbolizer_plugin_caller"));
  REQUIRE(caller != nullptr);
  Site site;
  caller(&site);
  auto modules = CurrentProcessModules();
  const format::Module* module = ModuleOf(modules, site.return_address);
  REQUIRE(module != nullptr);
  REQUIRE(module->path == stripped);

  SECTION("without the debug file: function from the symbol table, no file:line") {
    Symbolizer symbolizer(modules);
    const auto& frames = symbolizer.Symbolize(site.return_address);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].function == "crossfree_symbolizer_plugin_caller");
    CHECK(frames[0].file.empty());
    CHECK(frames[0].line == 0);
    CHECK(symbolizer.warnings().empty());
    CHECK(symbolizer.modules_without_debug_info() == std::vector<std::string>{stripped});
  }

  SECTION("with the debug file at .build-id/xx/rest.debug") {
    namespace fs = std::filesystem;
    const std::string hex = HexBuildId(module->build_id);
    const fs::path root = fs::temp_directory_path() / ("crossfree-symbolizer-test-" + hex);
    const fs::path link = root / ".build-id" / hex.substr(0, 2) / (hex.substr(2) + ".debug");
    fs::create_directories(link.parent_path());
    fs::copy_file(dir + "/plugin.debug", link, fs::copy_options::overwrite_existing);
    analyzer::SymbolizerOptions options;
    options.debuginfo_path = root.string();
    Symbolizer symbolizer(modules, options);
    CheckSingleFrame(symbolizer.Symbolize(site.return_address), site,
                     "crossfree_symbolizer_plugin_caller", "symbolizer_test_plugin.cc");
    CHECK(symbolizer.warnings().empty());
    CHECK(symbolizer.modules_without_debug_info().empty());
    fs::remove_all(root);
  }
}

TEST_CASE("non-PIE executable (ET_EXEC) symbolized from another process's map") {
  crossfree::testing::ProcessLimits limits;
  limits.timeout_s = 60;
  limits.address_space = uint64_t{4} << 30;
  crossfree::testing::ProcessResult helper =
      crossfree::testing::RunProcess({CROSSFREE_SYMBOLIZER_NOPIE_HELPER}, limits);
  INFO("nopie helper: " << helper.Describe() << "\n" << helper.err);
  REQUIRE(helper.exited());
  REQUIRE(helper.exit_code == 0);
  const std::string& output = helper.out;

  Site site;
  std::vector<format::Module> modules;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "site") {
      fields >> std::hex >> site.return_address >> std::dec >> site.line;
      continue;
    }
    REQUIRE(kind == "module");
    format::Module m;
    std::string build_id;
    fields >> std::hex >> m.load_bias >> build_id;
    for (size_t i = 0; build_id != "-" && i + 1 < build_id.size(); i += 2) {
      m.build_id.push_back(static_cast<uint8_t>(std::stoul(build_id.substr(i, 2), nullptr, 16)));
    }
    std::string token;
    while (fields >> token) {
      size_t colon = token.find(':');
      if (colon == std::string::npos || token[0] == '/') {
        m.path = token;  // paths here have no spaces
        break;
      }
      m.segments.push_back({std::stoull(token.substr(0, colon), nullptr, 16),
                            std::stoull(token.substr(colon + 1), nullptr, 16)});
    }
    modules.push_back(std::move(m));
  }
  REQUIRE(site.return_address != 0);
  const format::Module* exe = ModuleOf(modules, site.return_address);
  REQUIRE(exe != nullptr);
  CHECK(exe->path == CROSSFREE_SYMBOLIZER_NOPIE_HELPER);
  CHECK(exe->load_bias == 0);

  Symbolizer symbolizer(modules);
  const auto& frames = symbolizer.Symbolize(site.return_address);
  CheckSingleFrame(frames, site, std::string("crossfree::symbolizer_test::PlainCaller") + kSiteArg,
                   kLibFile);
  CHECK(frames[0].module_offset == site.return_address);
  CHECK(symbolizer.warnings().empty());
}

// qsort calls the comparator from inside libc, so the comparator's return
// address is a libc call site. Debian ships libc's DWARF separately
// (libc6-dbg, /usr/lib/debug/.build-id/xx/rest.debug): with it the frame has
// file:line, without it only a function name and a warning.
uint64_t g_libc_return_address = 0;

// libc's own qsort, not whatever `qsort` resolves to: under AddressSanitizer
// that is ASan's interceptor, which calls the comparator through a wrapper
// of its own, so the comparator would return into libasan.so.
using QsortFn = void (*)(void*, size_t, size_t, int (*)(const void*, const void*));
QsortFn LibcQsort() {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  return reinterpret_cast<QsortFn>(libc != nullptr ? dlsym(libc, "qsort") : nullptr);
}


__attribute__((noinline)) int CompareInts(const void* a, const void* b) {
  if (g_libc_return_address == 0) {
    g_libc_return_address = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

TEST_CASE("libc frames use separate debug info found by build id") {
  int values[] = {3, 1, 2};
  QsortFn libc_qsort = LibcQsort();
  REQUIRE(libc_qsort != nullptr);
  libc_qsort(values, 3, sizeof(int), CompareInts);
  REQUIRE(g_libc_return_address != 0);
  auto modules = CurrentProcessModules();
  const format::Module* libc = ModuleOf(modules, g_libc_return_address);
  REQUIRE(libc != nullptr);
  CHECK(Basename(libc->path) == "libc.so.6");
  REQUIRE(libc->build_id.size() > 1);
  std::string hex = HexBuildId(libc->build_id);
  std::string debug_file = "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  struct stat st;
  bool have_debug = stat(debug_file.c_str(), &st) == 0;
  // scripts/setup installs libc6-dbg: without it the test fails, unless
  // CROSSFREE_TEST_NO_LIBC_DBG=1 says the machine has none (CONTRIBUTING.md;
  // .ci/run never sets it), and then checks the no-debug-info warning.
  const char* no_dbg = getenv("CROSSFREE_TEST_NO_LIBC_DBG");
  if (!have_debug && (no_dbg == nullptr || std::string(no_dbg) != "1")) {
    FAIL("no " << debug_file << " (scripts/setup installs libc6-dbg; "
                              "CROSSFREE_TEST_NO_LIBC_DBG=1 accepts its absence)");
  }

  Symbolizer symbolizer(modules);
  const auto& frames = symbolizer.Symbolize(g_libc_return_address);
  REQUIRE_FALSE(frames.empty());
  CHECK(frames.back().module == libc->path);
  CHECK_FALSE(frames.back().function.empty());
  if (have_debug) {
    // glibc <= 2.36 sorts in msort.c, later versions in qsort.c.
    std::string file = Basename(frames[0].file);
    CHECK((file == "msort.c" || file == "qsort.c"));
    CHECK(frames[0].line > 0);
    CHECK(symbolizer.warnings().empty());
    CHECK(symbolizer.modules_without_debug_info().empty());
  } else {
    WARN("no " << debug_file << " (install libc6-dbg): checking the no-debug-info warning");
    CHECK(symbolizer.warnings().empty());
    REQUIRE(symbolizer.modules_without_debug_info().size() == 1);
    CHECK(symbolizer.modules_without_debug_info()[0] == libc->path);
  }
}

}  // namespace
}  // namespace crossfree::symbolizer_test
