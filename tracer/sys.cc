// SPDX-License-Identifier: Apache-2.0
// Tracer: libc-free helpers (see sys.h).
#include "tracer/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <unistd.h>

namespace crossfree::tracer {

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // The raw syscall, not write(): write() is a cancellation point, and a
    // thread cancelled inside a hook would leave its buffer busy for ever.
    ssize_t w = syscall(SYS_write, fd, p, n);
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

bool SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < n) {
    ssize_t w = send(fd, p + done, n - done, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

uint32_t CurrentTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

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

int g_message_fd = 2;

void MessageLine::Print() {
  char line[sizeof(buf_) + 32];
  static const char kPrefix[] = "crossfree-trace: ";
  size_t n = 0;
  for (size_t i = 0; kPrefix[i] != '\0'; ++i) line[n++] = kPrefix[i];
  for (size_t i = 0; i < len_; ++i) line[n++] = buf_[i];
  line[n++] = '\n';
  int saved = errno;
  const int fd = __atomic_load_n(&g_message_fd, __ATOMIC_RELAXED);
  if (fd == 2) {
    WriteAll(2, line, n);
  } else {
    // A socket whose reader may be gone.
    SendAll(fd, line, n);
  }
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

uintptr_t FindMappingStart(const char* name) {
  const size_t name_len = StrLen(name);
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  size_t have = 0;
  uintptr_t found = 0;
  bool eof = false;
  while (found == 0 && !eof) {
    ssize_t r = read(fd, buf + have, sizeof(buf) - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) eof = true;
    if (r > 0) have += static_cast<size_t>(r);
    size_t line = 0;
    for (size_t i = 0; i < have && found == 0; ++i) {
      if (buf[i] != '\n' && !(eof && i + 1 == have)) continue;
      const size_t end = buf[i] == '\n' ? i : i + 1;
      if (end - line > name_len) {
        size_t k = 0;
        while (k < name_len && buf[end - name_len + k] == name[k]) ++k;
        if (k == name_len) {
          uintptr_t start = 0;
          for (size_t j = line; j < end; ++j) {
            const char c = buf[j];
            const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (digit < 0) break;
            start = start * 16 + static_cast<uintptr_t>(digit);
          }
          found = start;
        }
      }
      line = i + 1;
    }
    // Keep the unfinished line; a line longer than the buffer is dropped.
    if (line == 0 && have == sizeof(buf)) line = have;
    for (size_t i = line; i < have; ++i) buf[i - line] = buf[i];
    have -= line;
  }
  close(fd);
  return found;
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

bool StrContains(const char* s, const char* needle) {
  for (; *s != '\0'; ++s) {
    size_t i = 0;
    while (needle[i] != '\0' && s[i] == needle[i]) ++i;
    if (needle[i] == '\0') return true;
  }
  return false;
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
