// SPDX-License-Identifier: Apache-2.0
// Analyzer CLI: shared options and error reporting (see cli_common.h).
#include "analyzer/cli/cli_common.h"


#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstring>

namespace crossfree::analyzer::cli {

void AddCommonOptions(CLI::App* sub, CommonOptions* o) {
  sub->add_option("--by", o->by, "Group threads by role (name with digits folded) or thread")
      ->check(CLI::IsMember({"role", "thread"}))
      ->capture_default_str();
  sub->add_option("--site-depth", o->site_depth,
                  "Frames kept per call site after skipping allocator/std frames")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--skip", o->skips,
                  "Regex of frames to skip (function name or module file name); repeatable, "
                  "added to the defaults");
  sub->add_flag("--no-default-skips", o->no_default_skips,
                "Do not skip allocator, tracer and standard-library frames");
  sub->add_flag("--key-lines", o->key_lines,
                "Include file:line in site keys (default: function names only)");
  sub->add_option("--jobs,-j", o->jobs, "Pairing workers (default: number of cores, at most 8)")
      ->check(CLI::Range(0, 64));
  sub->add_option("--from", o->from_s,
                  "Analyse from SECONDS after the trace started (frees of objects allocated "
                  "before count as 'allocated before the window')")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--to", o->to_s, "Analyse up to SECONDS after the trace started")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--width", o->width,
                  "Text width in columns (default: the terminal's; unlimited into a file or pipe)")
      ->check(CLI::Range(0, 100000));
  sub->add_flag("--list-skips", o->list_skips,
                "Print the default skip rules (allocator, std::, start-up and library "
                "allocation-wrapper frames) and exit");
}

size_t TextWidth(const CommonOptions& o, const std::string& path) {
  if (o.width >= 0) return static_cast<size_t>(o.width);
  if ((path.empty() || path == "-") && isatty(STDOUT_FILENO)) {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
    return 100;
  }
  return 0;
}

bool ListSkips(const CommonOptions& o) {
  if (!o.list_skips) return false;
  for (const std::string& p : analyzer::DefaultSkipPatterns()) fmt::print("{}\n", p);
  return true;
}

void AddTracesArgument(CLI::App* sub, std::vector<std::string>* traces) {
  sub->add_option("traces", *traces, "Trace files (one per process of the run)");
}

void AddFormatOption(CLI::App* sub, std::string* format, std::vector<std::string> formats,
                     const std::string& help) {
  sub->add_option("--format", *format, help)
      ->check(CLI::IsMember(std::move(formats)))
      ->capture_default_str();
}

void AddOutputOption(CLI::App* sub, std::string* output, const std::string& what) {
  sub->add_option("--output,-o", *output,
                  fmt::format("Write the {} to this file (default stdout)", what));
}

bool HasTraces(const std::string& command, const std::vector<std::string>& traces) {
  if (!traces.empty()) return true;
  fmt::print(stderr, "crossfree {0}: no trace given (crossfree {0} TRACE...)\n", command);
  return false;
}

void AddModelOptions(CLI::App* sub, simulate::ModelSettings* model) {
  sub->add_option("--malloc-conf", model->malloc_conf,
                  "With --allocator jemalloc: MALLOC_CONF of the modelled run (e.g. "
                  "narenas:8,tcache_max:4096)");
  sub->add_option("--glibc-tunables", model->glibc_tunables,
                  "With --allocator glibc: GLIBC_TUNABLES of the modelled run (e.g. "
                  "glibc.malloc.tcache_count=16)");
  sub->add_option("--cpus", model->cpus,
                  "With --allocator: CPUs of the machine that ran the trace (jemalloc's "
                  "narenas, glibc's arena_max; default: this machine's)")
      ->check(CLI::Range(0u, 65536u));
}

bool HasModelOptions(const simulate::ModelSettings& model) {
  return !model.malloc_conf.empty() || !model.glibc_tunables.empty() || model.cpus != 0;
}

std::vector<simulate::ModelFlag> GivenModelFlags(const simulate::ModelSettings& model) {
  std::vector<simulate::ModelFlag> given;
  if (model.cpus != 0) given.push_back(simulate::ModelFlag::kCpus);
  if (!model.malloc_conf.empty()) given.push_back(simulate::ModelFlag::kMallocConf);
  if (!model.glibc_tunables.empty()) given.push_back(simulate::ModelFlag::kGlibcTunables);
  return given;
}

analyzer::AnalysisOptions ToAnalysisOptions(const CommonOptions& o) {
  analyzer::AnalysisOptions a;
  a.by = o.by == "thread" ? analyzer::GroupBy::kThread : analyzer::GroupBy::kRole;
  a.sites.depth = o.site_depth;
  a.sites.skips = o.skips;
  a.sites.default_skips = !o.no_default_skips;
  a.sites.key_lines = o.key_lines;
  a.pairing.jobs = o.jobs;
  if (o.from_s >= 0) a.pairing.window_from_ns = static_cast<uint64_t>(o.from_s * 1e9);
  if (o.to_s >= 0) a.pairing.window_to_ns = static_cast<uint64_t>(o.to_s * 1e9);
  return a;
}

namespace {

std::string Mib(uint64_t bytes) { return fmt::format("{:.0f} MB", bytes / 1e6); }

// A progress line on stderr while a run of more than 100 MB is read and
// analysed, when stderr is a terminal: bytes read, rate, time left. Nothing
// otherwise (logs and pipes get no carriage returns). A thread of its own,
// polling the counters the analysis updates.
class ProgressLine {
 public:
  ProgressLine(const std::string& command, const std::vector<std::string>& paths)
      : command_(command) {
    uint64_t total = 0;
    for (const std::string& p : paths) {
      struct stat st;
      if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<uint64_t>(st.st_size);
    }
    if (total < 100'000'000 || !isatty(STDERR_FILENO)) return;
    thread_ = std::thread([this] { Run(); });
  }
  ~ProgressLine() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    fmt::print(stderr, "\r\033[K");
  }
  analyzer::ReadProgress* counters() { return &counters_; }

 private:
  void Run() {
    auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; })) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      uint64_t total = counters_.total_bytes, indexed = counters_.indexed_bytes;
      uint64_t payload = counters_.total_payload, decoded = counters_.decoded_payload;
      // Reading (checksums) is the first pass, decoding the second: each is
      // half of the work shown.
      double done = payload ? 0.5 * indexed / std::max<uint64_t>(total, 1) +
                                  0.5 * decoded / static_cast<double>(payload)
                            : 0.5 * indexed / std::max<uint64_t>(total, 1);
      double rate = secs > 0 ? (indexed + decoded) / secs : 0;
      double left = done > 0.01 ? secs * (1 - done) / done : 0;
      fmt::print(stderr, "\rcrossfree {}: {} of {} read, {} decoded, {}/s, {:.0f} s left\033[K",
                 command_, Mib(indexed), Mib(total), Mib(decoded), Mib(static_cast<uint64_t>(rate)),
                 left);
    }
  }

  std::string command_;
  analyzer::ReadProgress counters_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

}  // namespace

bool RunAnalysis(const std::string& command, const std::vector<std::string>& traces,
                 const CommonOptions& options, analyzer::Analysis* out) {
  std::string error;
  if (options.from_s >= 0 && options.to_s >= 0 && options.to_s <= options.from_s) {
    fmt::print(stderr, "crossfree {}: --to {} is not after --from {}\n", command, options.to_s,
               options.from_s);
    return false;
  }
  bool ok;
  {
    ProgressLine progress(command, traces);
    ok = analyzer::AnalyzeFiles(traces, ToAnalysisOptions(options), out, &error,
                                progress.counters());
  }
  if (!ok) {
    fmt::print(stderr, "crossfree {}: {}\n", command, Printable(error));
    return false;
  }
  for (const std::string& w : out->warnings) {
    fmt::print(stderr, "crossfree {}: warning: {}\n", command, Printable(w));
  }
  return true;
}

bool WriteOutput(const std::string& command, const std::string& path, const std::string& raw,
                 Escape escape) {
  const std::string text = escape == Escape::kControls ? analyzer::render::PrintableText(raw) : raw;
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  // Written beside the target and renamed over it: a failed write (disk
  // full) leaves the previous file as it was.
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
  if (!ok) {
    int saved = errno;
    std::remove(tmp.c_str());
    fmt::print(stderr, "crossfree {}: cannot write {}: {}\n", command, Printable(path),
               std::strerror(saved));
    return false;
  }
  return true;
}

}  // namespace crossfree::analyzer::cli
