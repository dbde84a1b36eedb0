// SPDX-License-Identifier: Apache-2.0
// The target process as /proc and its ELF files show it (target_process.h).
#include "analyzer/record/target_process.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

namespace crossfree::analyzer::record {

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string DescriptorLink(pid_t pid, int fd) {
  char buf[PATH_MAX];
  const ssize_t n = readlink(fmt::format("/proc/{}/fd/{}", pid, fd).c_str(), buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::vector<Mapping> ReadMaps(pid_t pid) {
  std::vector<Mapping> out;
  std::ifstream in(fmt::format("/proc/{}/maps", pid));
  std::string line;
  while (std::getline(in, line)) {
    Mapping m{};
    char perms[8];
    unsigned long long lo, hi, off;
    int consumed = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s%n", &lo, &hi, perms, &off,
                    &consumed) < 4) {
      continue;
    }
    m.lo = lo;
    m.hi = hi;
    m.offset = off;
    m.exec = perms[2] == 'x';
    std::string rest = line.substr(static_cast<size_t>(consumed));
    size_t start = rest.find_first_not_of(' ');
    m.path = start == std::string::npos ? "" : rest.substr(start);
    out.push_back(m);
  }
  return out;
}

// A defined dynamic symbol's st_value in an ELF file, or nullopt.
std::optional<uint64_t> DynamicSymbol(const std::string& path, const char* name) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    close(fd);
    return std::nullopt;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return std::nullopt;
  const auto* base = static_cast<const uint8_t*>(map);
  std::optional<uint64_t> result;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  auto in_file = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      in_file(eh->e_shoff, uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr))) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && !result; ++i) {
      if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr& strs = sh[sh[i].sh_link];
      if (!in_file(sh[i].sh_offset, sh[i].sh_size) || !in_file(strs.sh_offset, strs.sh_size)) {
        continue;
      }
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
      const size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
      const char* str = reinterpret_cast<const char*>(base + strs.sh_offset);
      for (size_t k = 0; k < count; ++k) {
        if (syms[k].st_name >= strs.sh_size || syms[k].st_shndx == SHN_UNDEF ||
            syms[k].st_value == 0 || ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC) {
          continue;
        }
        const char* s = str + syms[k].st_name;
        if (std::strncmp(s, name, strs.sh_size - syms[k].st_name) == 0) {
          result = syms[k].st_value;
          break;
        }
      }
    }
  }
  munmap(map, size);
  return result;
}

// The load bias of the object mapped from path in the target, from its
// executable mapping and the file's program headers. (A mapping at file
// offset 0 is not enough: libdw, in the tracer, maps whole files to read
// them.)
std::optional<uint64_t> LoadBias(const std::vector<Mapping>& maps, const std::string& path,
                                 const std::string& file) {
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Elf64_Ehdr eh;
  std::vector<Elf64_Phdr> ph;
  bool ok = pread(fd, &eh, sizeof(eh), 0) == static_cast<ssize_t>(sizeof(eh)) &&
            std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_phentsize == sizeof(Elf64_Phdr);
  if (ok) {
    ph.resize(eh.e_phnum);
    const auto bytes = static_cast<ssize_t>(ph.size() * sizeof(Elf64_Phdr));
    ok = pread(fd, ph.data(), static_cast<size_t>(bytes), static_cast<off_t>(eh.e_phoff)) == bytes;
  }
  close(fd);
  if (!ok) return std::nullopt;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_LOAD || (p.p_flags & PF_X) == 0) continue;
    for (const Mapping& m : maps) {
      if (m.path == path && m.exec && m.offset == (p.p_offset & ~(page - 1))) {
        return m.lo - (p.p_vaddr & ~(page - 1));
      }
    }
  }
  return std::nullopt;
}

// Code a thread must not be stopped in before it calls dlopen: it may
// hold the allocator's or the loader's locks there.
bool UnsafeCode(const std::string& path) {
  const std::string base = Basename(path);
  for (const char* prefix : {"libc.so", "libc-", "ld-linux", "libstdc++", "libtcmalloc",
                             "libjemalloc", "libmimalloc", "libcrossfree-trace", "libgcc_s",
                             "libunwind", "libpthread", "libdl"}) {
    if (base.rfind(prefix, 0) == 0) return true;
  }
  return path == "[vdso]";
}

bool PcIsSafe(const std::vector<Mapping>& maps, uint64_t pc) {
  for (const Mapping& m : maps) {
    if (pc >= m.lo && pc < m.hi) return !UnsafeCode(m.path);
  }
  return false;  // no mapping: JIT or garbage, do not touch
}

// The injected code runs on the thread's stack, below where it stopped:
// its data (a few KB) and dlopen's frames. A thread stack (a fixed
// mapping above a guard page) must have room for them; the main thread's
// grows on demand.
bool EnoughStack(const std::vector<Mapping>& maps, uint64_t sp) {
  constexpr uint64_t kNeeded = 256 * 1024;
  for (const Mapping& m : maps) {
    if (sp > m.lo && sp <= m.hi) return m.path == "[stack]" || sp - m.lo >= kNeeded;
  }
  return false;  // not in the maps read at the start: a newer thread, left alone
}

namespace {

bool FdIsRegularFile(pid_t pid, long fd) {
  const std::string link = DescriptorLink(pid, static_cast<int>(fd));
  if (link.empty()) return true;  // unknown: treat as a file
  return link[0] == '/' && link.rfind("/dev/", 0) != 0;
}

}  // namespace

Candidate Classify(pid_t pid, pid_t tid) {
  std::string text = ReadText(fmt::format("/proc/{}/task/{}/syscall", pid, tid));
  if (text.empty() || text.rfind("running", 0) == 0) return {tid, kOther, -1};
  std::istringstream in(text);
  long nr = -1;
  in >> nr;
  std::string a1, a2;
  in >> a1 >> a2;
  const long arg1 = std::strtol(a1.c_str(), nullptr, 16);
  const long arg2 = std::strtol(a2.c_str(), nullptr, 16);
  switch (nr) {
    case SYS_read:
    case SYS_readv:
      // A regular file may be the loader reading an object inside dlopen.
      return {tid, FdIsRegularFile(pid, arg1) ? kUnusable : kRestartable, nr};
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_accept:
    case SYS_accept4:
    case SYS_poll:
    case SYS_ppoll:
    case SYS_select:
    case SYS_pselect6:
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_wait4:
    case SYS_waitid:
    case SYS_pause:
    case SYS_rt_sigsuspend:
      return {tid, kRestartable, nr};
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
      return {tid, kEpoll, nr};
    case SYS_futex:
      // FUTEX_WAIT_BITSET is what condition variables and semaphores
      // sleep in; glibc's internal locks (malloc's, the loader's) use
      // FUTEX_WAIT, and a thread waiting for one must not call dlopen.
      return {tid, (arg2 & 0x7f) == 9 ? kCondWait : kUnusable, nr};
    default:
      return {tid, kUnusable, nr};
  }
}

constexpr long kErestartSys = 512, kErestartNoIntr = 513, kErestartNoHand = 514,
               kErestartRestartBlock = 516;

bool IsRestartCode(long long rax) {
  return rax == -kErestartSys || rax == -kErestartNoIntr || rax == -kErestartNoHand ||
         rax == -kErestartRestartBlock;
}

bool IsEpoll(long long nr) {
  return nr == SYS_epoll_wait || nr == SYS_epoll_pwait
#ifdef SYS_epoll_pwait2
         || nr == SYS_epoll_pwait2
#endif
      ;
}

}  // namespace crossfree::analyzer::record
