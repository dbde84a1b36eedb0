// SPDX-License-Identifier: Apache-2.0
// Tracer: libc-free helpers (see sys.h).
#include "tracer/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace crossfree::tracer {

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (w == 0) {
      errno = EIO;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

FastClock g_fast_clock;

uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

#if defined(__x86_64__)
namespace {

uint64_t ReadTsc() {
  uint32_t lo, hi;
  __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Invariant TSC: CPUID 0x80000007, EDX bit 8 (constant rate in every
// P-/C-state).
bool HasInvariantTsc() {
  uint32_t a, b, c, d;
  __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
  if (a < 0x80000007u) return false;
  __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
  return (d & (1u << 8)) != 0;
}

// A (monotonic ns, tsc) pair whose clock reads bracket the TSC read
// tightly: the best of a few tries, so preemption cannot skew it.
bool SamplePair(uint64_t* ns, uint64_t* tsc) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    uint64_t before = MonotonicNs();
    uint64_t t = ReadTsc();
    uint64_t after = MonotonicNs();
    if (after - before < best) {
      best = after - before;
      *ns = before + (after - before) / 2;
      *tsc = t;
    }
  }
  return best < 20000;
}

}  // namespace

bool InitFastClock() {
  g_fast_clock.enabled = 0;
  if (!HasInvariantTsc()) return false;
  // The kernel keeps "tsc" as its clocksource only while it trusts the TSCs
  // to be synchronised across CPUs (it switches away when a check fails).
  char source[32];
  long n = ReadSmallFile("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                         source, sizeof(source));
  if (n != 3 || !StrEq(source, "tsc")) return false;
  uint64_t ns0, tsc0, ns1, tsc1;
  if (!SamplePair(&ns0, &tsc0)) return false;
  while (MonotonicNs() - ns0 < 3'000'000) {
  }
  if (!SamplePair(&ns1, &tsc1) || tsc1 <= tsc0 || ns1 <= ns0) return false;
  unsigned __int128 mult =
      (static_cast<unsigned __int128>(ns1 - ns0) << kFastClockShift) / (tsc1 - tsc0);
  if (mult == 0 || mult > (uint64_t{1} << (kFastClockShift + 4))) return false;
  g_fast_clock.base_tsc = tsc1;
  g_fast_clock.base_ns = ns1;
  g_fast_clock.mult = static_cast<uint64_t>(mult);
  g_fast_clock.enabled = 1;
  return true;
}
#else
bool InitFastClock() { return false; }
#endif

uint64_t RealtimeNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint32_t CurrentTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

size_t FormatDecimal(uint64_t v, char* out) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (size_t i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  return n;
}

bool ParseDecimal(const char* text, uint64_t* value) {
  if (text == nullptr || *text == '\0') return false;
  uint64_t v = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return false;
    uint64_t d = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *value = v;
  return true;
}

MessageLine& MessageLine::Add(const char* text) { return Add(text, StrLen(text)); }

MessageLine& MessageLine::Add(const char* text, size_t n) {
  // Keep room for the trailing newline.
  while (n > 0 && len_ + 1 < sizeof(buf_)) {
    buf_[len_++] = *text++;
    --n;
  }
  return *this;
}

MessageLine& MessageLine::AddNumber(uint64_t v) {
  char digits[20];
  return Add(digits, FormatDecimal(v, digits));
}

void MessageLine::Print() {
  char line[sizeof(buf_) + 32];
  static const char kPrefix[] = "crossfree-trace: ";
  size_t n = 0;
  for (size_t i = 0; kPrefix[i] != '\0'; ++i) line[n++] = kPrefix[i];
  for (size_t i = 0; i < len_; ++i) line[n++] = buf_[i];
  line[n++] = '\n';
  int saved = errno;
  WriteAll(2, line, n);
  errno = saved;
}

long ReadSmallFile(const char* path, char* buf, size_t cap) {
  if (cap == 0) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = 0;
  while (len + 1 < cap) {
    ssize_t r = read(fd, buf + len, cap - 1 - len);
    if (r < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return -1;
    }
    if (r == 0) break;
    len += static_cast<size_t>(r);
  }
  close(fd);
  if (len > 0 && buf[len - 1] == '\n') --len;
  buf[len] = '\0';
  return static_cast<long>(len);
}

size_t StrLen(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

bool StrEq(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

}  // namespace crossfree::tracer

namespace crossfree::tracer {

const char* ErrnoName(int error) {
  switch (error) {
    case ENOENT: return "No such file or directory (ENOENT)";
    case EACCES: return "Permission denied (EACCES)";
    case EROFS: return "Read-only file system (EROFS)";
    case ENOSPC: return "No space left on device (ENOSPC)";
    case EISDIR: return "Is a directory (EISDIR)";
    case ENOTDIR: return "Not a directory (ENOTDIR)";
    case EEXIST: return "File exists (EEXIST)";
    case EIO: return "Input/output error (EIO)";
    case EDQUOT: return "Disk quota exceeded (EDQUOT)";
    case EFBIG: return "File too large (EFBIG)";
    case EMFILE: return "Too many open files (EMFILE)";
    case ENAMETOOLONG: return "File name too long (ENAMETOOLONG)";
    case EBADF: return "Bad file descriptor (EBADF)";
    case EPIPE: return "Broken pipe (EPIPE)";
    default: return "I/O error";
  }
}


}  // namespace crossfree::tracer
