// SPDX-License-Identifier: Apache-2.0
// Symbolizer tests and bench: module map of the running process.
#include "bench/analyzer/process_modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>

namespace crossfree::bench {
namespace {

// Reads NT_GNU_BUILD_ID from a mapped PT_NOTE segment.
std::vector<uint8_t> BuildIdFromNotes(const uint8_t* notes, size_t size) {
  size_t offset = 0;
  auto align4 = [](size_t n) { return (n + 3) & ~size_t{3}; };
  while (offset + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) header;
    std::memcpy(&header, notes + offset, sizeof(header));
    size_t name_at = offset + sizeof(header);
    size_t desc_at = name_at + align4(header.n_namesz);
    size_t next = desc_at + align4(header.n_descsz);
    if (next > size) break;
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(notes + name_at, "GNU", 4) == 0) {
      return std::vector<uint8_t>(notes + desc_at, notes + desc_at + header.n_descsz);
    }
    offset = next;
  }
  return {};
}

int AddModule(dl_phdr_info* info, size_t, void* data) {
  auto* modules = static_cast<std::vector<format::Module>*>(data);
  format::Module module;
  module.load_bias = info->dlpi_addr;
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
    module.path = info->dlpi_name;
  } else {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) module.path.assign(exe, static_cast<size_t>(n));
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type == PT_LOAD && phdr.p_memsz != 0) {
      module.segments.push_back({info->dlpi_addr + phdr.p_vaddr, phdr.p_memsz});
    } else if (phdr.p_type == PT_NOTE && module.build_id.empty()) {
      module.build_id = BuildIdFromNotes(
          reinterpret_cast<const uint8_t*>(info->dlpi_addr + phdr.p_vaddr), phdr.p_memsz);
    }
  }
  modules->push_back(std::move(module));
  return 0;
}

}  // namespace

std::vector<format::Module> CurrentProcessModules() {
  std::vector<format::Module> modules;
  dl_iterate_phdr(AddModule, &modules);
  return modules;
}

}  // namespace crossfree::bench
