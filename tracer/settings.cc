// SPDX-License-Identifier: Apache-2.0
// Tracer: environment settings (see settings.h for the list).
#include "tracer/settings.h"

#include <signal.h>

#include <stdlib.h>

#include "format/trace_format.h"
#include "tracer/sys.h"
#include "protocol/toggle_signal.h"

namespace crossfree::tracer {
namespace {

void Invalid(const char* name, const char* value, const char* fallback) {
  MessageLine().Add("ignoring ").Add(name).Add("='").Add(value).Add("' (using ").Add(fallback).Add(")").Print();
}

// A decimal in [lo, hi]: true with *out set; false when unset, or invalid
// (then said, naming fallback, the value kept).
bool ReadDecimal(const char* name, uint64_t lo, uint64_t hi, const char* fallback,
                 uint64_t* out) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return false;
  uint64_t n;
  if (ParseDecimal(v, &n) && n >= lo && n <= hi) {
    *out = n;
    return true;
  }
  Invalid(name, v, fallback);
  return false;
}

// A duration in milliseconds, at most max_ms; unset or invalid leaves *ns.
void ReadMilliseconds(const char* name, uint64_t max_ms, const char* fallback, uint64_t* ns) {
  uint64_t ms;
  if (ReadDecimal(name, 0, max_ms, fallback, &ms)) *ns = ms * 1'000'000;
}

bool ReadBool(const char* name, bool fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  if (StrEq(v, "0") || StrEq(v, "false") || StrEq(v, "no") || StrEq(v, "off")) return false;
  if (StrEq(v, "1") || StrEq(v, "true") || StrEq(v, "yes") || StrEq(v, "on")) return true;
  Invalid(name, v, fallback ? "1" : "0");
  return fallback;
}

}  // namespace

void LoadSettings(Settings* s) {
  if (const char* v = getenv("CROSSFREE_OUTPUT"); v != nullptr && *v != '\0') {
    size_t n = StrLen(v);
    if (n < sizeof(s->output_template)) {
      for (size_t i = 0; i <= n; ++i) s->output_template[i] = v[i];
    } else {
      Invalid("CROSSFREE_OUTPUT", "<too long>", "crossfree.%p.trace");
    }
  }
  uint64_t n;
  if (ReadDecimal("CROSSFREE_MAIN_PID", 1, UINT32_MAX, "unset", &n)) {
    s->main_pid = static_cast<uint32_t>(n);
  }
  if (const char* v = getenv("CROSSFREE_UNWIND"); v != nullptr && *v != '\0') {
    if (!ParseUnwindMode(v, &s->unwind)) Invalid("CROSSFREE_UNWIND", v, "hybrid");
  }
  if (ReadDecimal("CROSSFREE_DEPTH", 1, format::kMaxStackDepth, "32", &n)) {
    s->depth = static_cast<int>(n);
  }
  s->stacks = ReadBool("CROSSFREE_ENABLE_STACKS", true);
  if (ReadDecimal("CROSSFREE_BUFFER_KB", 16, 4096, "128", &n)) {
    s->buffer_bytes = static_cast<size_t>(n) * 1024;
  }
  ReadMilliseconds("CROSSFREE_FLUSH_MS", 600'000, "1000", &s->flush_ns);
  if (ReadDecimal("CROSSFREE_SAMPLE", 1, kMaxSamplePeriod, "1 (every allocation)", &n)) {
    s->sample_period = static_cast<uint32_t>(n);
  }
  ReadMilliseconds("CROSSFREE_DELAY_MS", 86'400'000, "none", &s->delay_ns);
  ReadMilliseconds("CROSSFREE_DURATION_MS", 86'400'000, "none", &s->duration_ns);
  ReadDecimal("CROSSFREE_START_NS", 0, UINT64_MAX, "this process's start", &s->start_ns);
  if (const char* v = getenv("CROSSFREE_TOGGLE_SIGNAL"); v != nullptr && *v != '\0') {
    uint64_t sig;
    if (ParseDecimal(v, &sig) && sig < 65 && UsableToggleSignal(static_cast<long>(sig))) {
      s->toggle_signal = static_cast<int>(sig);
    } else {
      Invalid("CROSSFREE_TOGGLE_SIGNAL", v, "none");
    }
  }
  if (const char* v = getenv("CROSSFREE_CHANNEL"); v != nullptr && *v != '\0') {
    uint64_t fd;
    // Not an error when it does not parse: the variable is record's, and
    // channel::Attach checks the descriptor itself.
    if (ParseDecimal(v, &fd) && fd < (1u << 30)) s->channel_fd = static_cast<int>(fd);
  }
  ReadMilliseconds("CROSSFREE_CHANNEL_WAIT_MS", 60'000, "1000", &s->channel_wait_ns);
  s->malloc_hook = ReadBool("CROSSFREE_MALLOC_HOOK", true);
  s->verbose = ReadBool("CROSSFREE_VERBOSE", false);
  s->central = ReadBool("CROSSFREE_CENTRAL", true);
  s->tsc = ReadBool("CROSSFREE_TSC", true);
  s->stack_check = ReadBool("CROSSFREE_STACK_CHECK", false);
  s->stack_memo = ReadBool("CROSSFREE_STACK_MEMO", true);
}

bool ExpandOutputPath(const Settings& s, uint32_t pid, bool owns_plain_path, char* out,
                      size_t cap) {
  char digits[20];
  size_t ndigits = FormatDecimal(pid, digits);
  size_t n = 0;
  bool had_pid = false;
  auto put = [&](const char* p, size_t len) {
    for (size_t i = 0; i < len; ++i) {
      if (n + 1 >= cap) return false;
      out[n++] = p[i];
    }
    return true;
  };
  for (const char* p = s.output_template; *p != '\0'; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      if (!put(digits, ndigits)) return false;
      had_pid = true;
      ++p;
    } else if (p[0] == '%' && p[1] == '%') {
      if (!put("%", 1)) return false;
      ++p;
    } else if (!put(p, 1)) {
      return false;
    }
  }
  if (!had_pid && !owns_plain_path) {
    if (!put(".", 1) || !put(digits, ndigits)) return false;
  }
  out[n] = '\0';
  return true;
}

}  // namespace crossfree::tracer
