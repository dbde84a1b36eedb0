// SPDX-License-Identifier: Apache-2.0
// Tracer: the few libc-free helpers the hook path and init need: whole-buffer
// writes with EINTR retry, decimal formatting, one-line stderr messages and
// small /proc reads. Nothing here allocates, locks or touches stdio, so any
// thread may call anything here at any time, including from the hooks.
#pragma once

#include <errno.h>

#include <cstddef>
#include <cstdint>

namespace crossfree::tracer {

// Writes all n bytes to fd, retrying on EINTR and continuing after partial
// writes. Returns false (errno set) on any other error.
bool WriteAll(int fd, const void* data, size_t n);

// The trace clock: CLOCK_MONOTONIC nanoseconds. After InitFastClock()
// found an invariant TSC that the kernel itself uses as its clocksource, it
// is read as lfence+rdtsc and converted with a fixed scale calibrated
// against CLOCK_MONOTONIC at start-up (anchored there, so it tracks
// CLOCK_MONOTONIC to within the calibration error, ~1e-5, and is monotonic
// across cores because the kernel verified the TSCs are synchronised).
// Otherwise every read is clock_gettime(CLOCK_MONOTONIC) through the vDSO.
// The lfence keeps the read after every earlier load, so an allocation
// stamped after the real call is later than the free that made its block
// available on another thread.
struct FastClock {
  uint64_t base_tsc = 0;
  uint64_t base_ns = 0;
  uint64_t mult = 0;  // ns per tick << kFastClockShift
  int enabled = 0;
};
inline constexpr int kFastClockShift = 32;
extern FastClock g_fast_clock;

// Calibrates the TSC clock (about 3 ms of spinning) when the CPU and the
// kernel allow it. Call once at start-up, before any timestamp is taken.
// Returns whether the TSC clock is in use.
bool InitFastClock();
uint64_t MonotonicNs();
uint64_t RealtimeNs();

inline uint64_t NowNs() {
#if defined(__x86_64__)
  if (__builtin_expect(g_fast_clock.enabled != 0, 1)) {
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    uint64_t tsc = (static_cast<uint64_t>(hi) << 32) | lo;
    int64_t delta = static_cast<int64_t>(tsc - g_fast_clock.base_tsc);
    if (delta < 0) delta = 0;
    return g_fast_clock.base_ns +
           static_cast<uint64_t>((static_cast<unsigned __int128>(delta) * g_fast_clock.mult) >>
                                 kFastClockShift);
  }
#endif
  return MonotonicNs();
}

// The calling thread's kernel id (gettid), uncached.
uint32_t CurrentTid();

// Formats v in decimal into out (no terminator). Returns the digits written;
// out needs 20 bytes.
size_t FormatDecimal(uint64_t v, char* out);

// Parses a non-negative decimal; false on anything else or overflow.
bool ParseDecimal(const char* text, uint64_t* value);

// A fixed-size line builder for messages; silently truncates.
class MessageLine {
 public:
  MessageLine& Add(const char* text);
  MessageLine& Add(const char* text, size_t n);
  MessageLine& AddNumber(uint64_t v);
  // Writes "crossfree-trace: <line>\n" to stderr with one write(2).
  void Print();

 private:
  char buf_[1024];
  size_t len_ = 0;
};

// Reads up to cap-1 bytes of a small file (e.g. /proc/self/comm) into buf
// and NUL-terminates it, dropping one trailing newline. Returns the length,
// or -1 on error.
long ReadSmallFile(const char* path, char* buf, size_t cap);

// strlen/memcpy/memcmp equivalents that never call into the hooked world
// (the compiler may still lower them to libc's, which do not allocate).
size_t StrLen(const char* s);
bool StrEq(const char* a, const char* b);

}  // namespace crossfree::tracer

namespace crossfree::tracer {

// "ENOENT (2)" style name of an errno value; static storage.
const char* ErrnoName(int error);

// Saves errno on construction and restores it on destruction, so the
// hooks leave errno exactly as the real function set it.
class ErrnoSaver {
 public:
  ErrnoSaver() : saved_(errno) {}
  ~ErrnoSaver() { errno = saved_; }
  ErrnoSaver(const ErrnoSaver&) = delete;
  ErrnoSaver& operator=(const ErrnoSaver&) = delete;

 private:
  int saved_;
};

}  // namespace crossfree::tracer
