// SPDX-License-Identifier: Apache-2.0
// Symbolizer micro-benchmark (not a test): symbolizes N distinct addresses
// spread over the executable segments of this process's modules (the
// executable, libstdc++, libc with its separate debug info, libdw, ...),
// cold and then cached, and prints the times. Usage: symbolizer_bench [N]
#include <link.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "analyzer/model/symbolizer.h"
#include "bench/analyzer/process_modules.h"

namespace {

struct Text {
  uint64_t start;
  uint64_t size;
};

int AddText(dl_phdr_info* info, size_t, void* data) {
  auto* texts = static_cast<std::vector<Text>*>(data);
  if (info->dlpi_name != nullptr && std::string(info->dlpi_name).find("vdso") != std::string::npos) {
    return 0;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type == PT_LOAD && (p.p_flags & PF_X) != 0) {
      texts->push_back({info->dlpi_addr + p.p_vaddr, p.p_memsz});
    }
  }
  return 0;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// CPU time of this process: the machine may be shared, so wall time alone
// says little.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  size_t count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 5000;
  std::vector<Text> texts;
  dl_iterate_phdr(AddText, &texts);
  uint64_t total = 0;
  for (const Text& t : texts) total += t.size;
  std::vector<uint64_t> addresses;
  for (const Text& t : texts) {
    size_t share = static_cast<size_t>(static_cast<double>(count) * t.size / total) + 1;
    uint64_t step = t.size / share;
    for (size_t i = 0; i < share && step > 0; ++i) addresses.push_back(t.start + i * step + step / 2);
  }

  auto modules = crossfree::bench::CurrentProcessModules();
  auto start = std::chrono::steady_clock::now();
  double cpu_start = CpuSeconds();
  crossfree::analyzer::Symbolizer symbolizer(modules);
  size_t frames = 0;
  size_t with_line = 0;
  std::set<std::string> functions;
  for (uint64_t a : addresses) {
    const auto& f = symbolizer.Symbolize(a);
    frames += f.size();
    for (const auto& frame : f) {
      if (frame.line > 0) ++with_line;
      functions.insert(frame.function);
    }
  }
  double cold = Seconds(start);
  double cold_cpu = CpuSeconds() - cpu_start;
  start = std::chrono::steady_clock::now();
  size_t cached_frames = 0;
  for (uint64_t a : addresses) cached_frames += symbolizer.Symbolize(a).size();
  double cached = Seconds(start);
  std::printf("addresses %zu in %zu modules: %zu frames (%zu with file:line), %zu distinct functions\n",
              addresses.size(), texts.size(), frames, with_line, functions.size());
  if (cached_frames != frames) std::printf("error: cached results differ\n");
  std::printf("cold %.3f s wall, %.3f s CPU (%.1f us CPU/address), cached %.6f s\n", cold, cold_cpu,
              cold_cpu * 1e6 / addresses.size(), cached);
  for (const std::string& w : symbolizer.warnings()) std::printf("warning: %s\n", w.c_str());
  for (const std::string& p : symbolizer.modules_without_debug_info()) {
    std::printf("no debug info: %s\n", p.c_str());
  }
  return 0;
}
