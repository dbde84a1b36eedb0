// SPDX-License-Identifier: Apache-2.0
// Tracer: the few libc-free helpers the hook path and init need: whole-buffer
// writes with EINTR retry, decimal formatting, one-line stderr messages and
// small /proc reads (the trace clock is clock.h). Nothing here allocates, locks or touches stdio, so any
// thread may call anything here at any time, including from the hooks.
#pragma once

#include <errno.h>

#include <cstddef>
#include <cstdint>

#include "format/decimal.h"

namespace crossfree::tracer {

// Writes all n bytes to fd, retrying on EINTR and continuing after partial
// writes. Returns false (errno set) on any other error. Not a cancellation
// point (raw syscall).
bool WriteAll(int fd, const void* data, size_t n);

// Sends all n bytes on socket fd with MSG_NOSIGNAL (a peer that has gone
// never raises SIGPIPE in the traced program), retrying on EINTR. Returns
// false once send fails or the peer takes nothing.
bool SendAll(int fd, const void* data, size_t n);

// The calling thread's kernel id (gettid), uncached.
uint32_t CurrentTid();

using format::FormatDecimal;

// Parses a non-negative decimal; false on anything else or overflow.
bool ParseDecimal(const char* text, uint64_t* value);

// A fixed-size line builder for messages; silently truncates.
extern int g_message_fd;
class MessageLine {
 public:
  MessageLine& Add(const char* text);
  MessageLine& Add(const char* text, size_t n);
  MessageLine& AddNumber(uint64_t v);
  // Writes "crossfree-trace: <line>\n" with one write(2) to stderr, or,
  // while `crossfree record -p` is attached, to its control socket
  // (g_message_fd): the target's stderr is the target's.
  void Print();

 private:
  char buf_[1024];
  size_t len_ = 0;
};

// Reads up to cap-1 bytes of a small file (e.g. /proc/self/comm) into buf
// and NUL-terminates it, dropping one trailing newline. Returns the length,
// or -1 on error.
long ReadSmallFile(const char* path, char* buf, size_t cap);

// The start address of the mapping whose /proc/self/maps line ends in name
// ("[vdso]", "[vvar_vclock]"), or 0 when there is none. Reads the file in
// pieces through a fixed buffer: no allocation, whatever its length.
uintptr_t FindMappingStart(const char* name);

// strlen/memcpy/memcmp equivalents that never call into the hooked world
// (the compiler may still lower them to libc's, which do not allocate).
size_t StrLen(const char* s);
bool StrEq(const char* a, const char* b);
// strstr(s, needle) != nullptr.
bool StrContains(const char* s, const char* needle);

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
