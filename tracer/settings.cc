// SPDX-License-Identifier: Apache-2.0
// Tracer: environment settings (see settings.h for the list).
#include "tracer/settings.h"

#include <signal.h>

#include <stdlib.h>

#include "format/trace_format.h"
#include "tracer/sys.h"
#include "format/toggle_signal.h"

namespace crossfree::tracer {
namespace {

void Invalid(const char* name, const char* value, const char* fallback) {
  MessageLine().Add("ignoring ").Add(name).Add("='").Add(value).Add("' (using ").Add(fallback).Add(")").Print();
}

// A duration in milliseconds, at most a day; unset or invalid leaves *ns.
void ReadMilliseconds(const char* name, uint64_t* ns) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return;
  uint64_t ms;
  if (ParseDecimal(v, &ms) && ms <= 86'400'000) {
    *ns = ms * 1'000'000;
  } else {
    Invalid(name, v, "none");
  }
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
  if (const char* v = getenv("CROSSFREE_MAIN_PID"); v != nullptr && *v != '\0') {
    uint64_t pid;
    if (ParseDecimal(v, &pid) && pid > 0 && pid < (1ull << 32)) {
      s->main_pid = static_cast<uint32_t>(pid);
    } else {
      Invalid("CROSSFREE_MAIN_PID", v, "unset");
    }
  }
  if (const char* v = getenv("CROSSFREE_UNWIND"); v != nullptr && *v != '\0') {
    if (!ParseUnwindMode(v, &s->unwind)) Invalid("CROSSFREE_UNWIND", v, "hybrid");
  }
  if (const char* v = getenv("CROSSFREE_DEPTH"); v != nullptr && *v != '\0') {
    uint64_t d;
    if (ParseDecimal(v, &d) && d >= 1 && d <= format::kMaxStackDepth) {
      s->depth = static_cast<int>(d);
    } else {
      Invalid("CROSSFREE_DEPTH", v, "32");
    }
  }
  s->stacks = ReadBool("CROSSFREE_ENABLE_STACKS", true);
  if (const char* v = getenv("CROSSFREE_BUFFER_KB"); v != nullptr && *v != '\0') {
    uint64_t kb;
    if (ParseDecimal(v, &kb) && kb >= 16 && kb <= 4096) {
      s->buffer_bytes = static_cast<size_t>(kb) * 1024;
    } else {
      Invalid("CROSSFREE_BUFFER_KB", v, "128");
    }
  }
  if (const char* v = getenv("CROSSFREE_FLUSH_MS"); v != nullptr && *v != '\0') {
    uint64_t ms;
    if (ParseDecimal(v, &ms) && ms <= 600000) {
      s->flush_ns = ms * 1'000'000;
    } else {
      Invalid("CROSSFREE_FLUSH_MS", v, "1000");
    }
  }
  if (const char* v = getenv("CROSSFREE_SAMPLE"); v != nullptr && *v != '\0') {
    uint64_t n;
    if (ParseDecimal(v, &n) && n >= 1 && n <= kMaxSamplePeriod) {
      s->sample_period = static_cast<uint32_t>(n);
    } else {
      Invalid("CROSSFREE_SAMPLE", v, "1 (every allocation)");
    }
  }
  ReadMilliseconds("CROSSFREE_DELAY_MS", &s->delay_ns);
  ReadMilliseconds("CROSSFREE_DURATION_MS", &s->duration_ns);
  if (const char* v = getenv("CROSSFREE_START_NS"); v != nullptr && *v != '\0') {
    uint64_t ns;
    if (ParseDecimal(v, &ns)) {
      s->start_ns = ns;
    } else {
      Invalid("CROSSFREE_START_NS", v, "this process's start");
    }
  }
  if (const char* v = getenv("CROSSFREE_TOGGLE_SIGNAL"); v != nullptr && *v != '\0') {
    uint64_t sig;
    if (ParseDecimal(v, &sig) && sig < 65 && format::UsableToggleSignal(static_cast<long>(sig))) {
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
  if (const char* v = getenv("CROSSFREE_CHANNEL_WAIT_MS"); v != nullptr && *v != '\0') {
    uint64_t ms;
    if (ParseDecimal(v, &ms) && ms <= 60000) {
      s->channel_wait_ns = ms * 1'000'000;
    } else {
      Invalid("CROSSFREE_CHANNEL_WAIT_MS", v, "1000");
    }
  }
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
