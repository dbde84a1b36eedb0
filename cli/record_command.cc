// SPDX-License-Identifier: Apache-2.0
// `crossfree record [-o FILE] [--unwind MODE] [--depth N] [--no-stacks] --
// CMD ARGS...`: runs CMD with libcrossfree-trace.so preloaded, waits for it,
// lists the trace files the run wrote (the command's own and one per traced
// fork or exec'd child) with their event counts, and exits with CMD's
// status (128 + signal number if CMD was killed).
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/commands.h"
#include "format/trace_reader.h"

namespace crossfree::cli {
namespace {

struct RecordArgs {
  std::string output;
  std::string unwind;
  int depth = 0;
  bool no_stacks = false;
  std::vector<std::string> command;
};

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string CurrentDir() {
  char buf[4096];
  if (getcwd(buf, sizeof(buf)) == nullptr) return ".";
  return buf;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return CurrentDir() + "/" + path;
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The tracer library: $CROSSFREE_TRACER_LIB, else next to this binary
// (build tree: bin/../lib; installed: <prefix>/bin/../lib[64|/<triplet>]).
std::optional<std::string> FindTracerLibrary(std::string* searched) {
  if (const char* env = getenv("CROSSFREE_TRACER_LIB"); env != nullptr && *env != '\0') {
    *searched = env;
    if (IsFile(env)) return Absolute(env);
    return std::nullopt;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return std::nullopt;
  exe[n] = '\0';
  std::string bin = Dirname(exe);
  const char* kCandidates[] = {"/../lib/", "/", "/../lib64/", "/../lib/x86_64-linux-gnu/",
                               "/../lib/crossfree/"};
  for (const char* dir : kCandidates) {
    std::string path = bin + dir + "libcrossfree-trace.so";
    if (!searched->empty()) *searched += ", ";
    *searched += path;
    if (IsFile(path)) {
      char real[4096];
      if (realpath(path.c_str(), real) != nullptr) return std::string(real);
      return path;
    }
  }
  return std::nullopt;
}

struct TraceCounts {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  bool fork_child = false;
  uint64_t events = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  std::set<uint32_t> threads;
  bool complete = true;
  std::string problem;
};

class CountingVisitor : public format::RecordVisitor {
 public:
  explicit CountingVisitor(TraceCounts* counts) : counts_(counts) {}
  void OnEvent(const format::Event& event) override {
    ++counts_->events;
    if (event.op == format::EventOp::kAlloc) {
      ++counts_->allocs;
    } else {
      ++counts_->frees;
    }
    counts_->threads.insert(event.tid);
  }

 private:
  TraceCounts* counts_;
};

// Reads a trace and counts its events by decoding every chunk.
std::optional<TraceCounts> CountTrace(const std::string& path, bool header_only) {
  std::string error;
  auto reader = format::TraceReader::Open(path, &error);
  if (reader == nullptr) return std::nullopt;
  TraceCounts counts;
  counts.pid = reader->header().fields.pid;
  counts.ppid = reader->header().fields.ppid;
  counts.fork_child = (reader->header().fields.flags & format::kHeaderFlagForkChild) != 0;
  if (header_only) return counts;
  CountingVisitor visitor(&counts);
  format::Chunk chunk;
  for (;;) {
    format::ReadResult r = reader->NextChunk(&chunk);
    if (r == format::ReadResult::kEnd) break;
    if (r != format::ReadResult::kChunk) {
      counts.complete = false;
      counts.problem = reader->error();
      break;
    }
    if (!format::DecodeChunk(chunk, visitor, &error)) {
      counts.complete = false;
      counts.problem = error;
      break;
    }
  }
  return counts;
}

// Files in dir whose name is prefix + suffix, modified at or after `since`.
std::vector<std::string> ListCandidates(const std::string& dir, const std::string& prefix,
                                        const std::string& suffix, time_t since) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= prefix.size() + suffix.size()) continue;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (middle.find_first_not_of("0123456789.") != std::string::npos) continue;
    std::string path = dir + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_mtime < since) continue;
    out.push_back(path);
  }
  closedir(d);
  return out;
}

int WaitForChild(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

int RunRecord(const RecordArgs& args) {
  std::string searched;
  std::optional<std::string> library = FindTracerLibrary(&searched);
  if (!library) {
    fmt::print(stderr, "crossfree record: cannot find libcrossfree-trace.so (looked at {})\n",
               searched);
    return kExitUsage;
  }
  // The main trace: FILE (its forks/execs write FILE.<pid>), or
  // crossfree.<pid>.trace in the current directory.
  const bool named = !args.output.empty();
  const std::string output_template =
      named ? Absolute(args.output) : CurrentDir() + "/crossfree.%p.trace";
  if (named) {
    // The tracer creates FILE exclusively (a second image of the same pid
    // after exec must not truncate it), so an old FILE goes first.
    if (unlink(output_template.c_str()) != 0 && errno != ENOENT) {
      fmt::print(stderr, "crossfree record: cannot replace {}: {}\n", output_template,
                 std::strerror(errno));
      return kExitUsage;
    }
  }
  std::string preload = *library;
  if (const char* old = getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    preload += ":";
    preload += old;
  }
  time_t started = time(nullptr);

  // Ignore terminal signals while the command runs, like time(1): they are
  // meant for the command, and we still have to report its trace.
  struct sigaction ignore = {}, old_int = {}, old_quit = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);

  std::vector<char*> argv;
  for (const std::string& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    fmt::print(stderr, "crossfree record: fork failed: {}\n", std::strerror(errno));
    return kExitUsage;
  }
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("CROSSFREE_OUTPUT", output_template.c_str(), 1);
    setenv("CROSSFREE_MAIN_PID", std::to_string(getpid()).c_str(), 1);
    if (!args.unwind.empty()) setenv("CROSSFREE_UNWIND", args.unwind.c_str(), 1);
    if (args.depth > 0) setenv("CROSSFREE_DEPTH", std::to_string(args.depth).c_str(), 1);
    if (args.no_stacks) setenv("CROSSFREE_ENABLE_STACKS", "0", 1);
    execvp(argv[0], argv.data());
    int err = errno;
    std::string msg = fmt::format("crossfree record: cannot run {}: {}\n", args.command[0],
                                  std::strerror(err));
    ssize_t ignored = write(2, msg.data(), msg.size());
    (void)ignored;
    _exit(err == ENOENT ? 127 : 126);
  }
  int status = WaitForChild(pid);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);

  // Find the run's traces: the main file, then every candidate whose header
  // names a process of this run as its parent.
  std::string main_path =
      named ? output_template : CurrentDir() + fmt::format("/crossfree.{}.trace", pid);
  std::vector<std::string> candidates =
      named ? ListCandidates(Dirname(output_template), Basename(output_template) + ".", "",
                             started - 1)
            : ListCandidates(CurrentDir(), "crossfree.", ".trace", started - 1);
  std::set<uint32_t> run_pids = {static_cast<uint32_t>(pid)};
  std::map<std::string, uint32_t> child_files;  // path -> pid
  std::map<std::string, uint32_t> headers;
  std::map<std::string, uint32_t> parents;
  for (const std::string& c : candidates) {
    if (c == main_path) continue;
    if (auto counts = CountTrace(c, /*header_only=*/true)) {
      headers[c] = counts->pid;
      parents[c] = counts->ppid;
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [path, child_pid] : headers) {
      // A child of a process of the run, or a later image (after exec) of
      // one: same pid, "<file>.<n>".
      if (child_files.count(path) == 0 &&
          (run_pids.count(parents[path]) != 0 || run_pids.count(child_pid) != 0)) {
        child_files[path] = child_pid;
        run_pids.insert(child_pid);
        grew = true;
      }
    }
  }

  auto describe = [](const TraceCounts& c) {
    std::string s = fmt::format("{} events ({} allocations, {} frees) on {} thread{}", c.events,
                                c.allocs, c.frees, c.threads.size(),
                                c.threads.size() == 1 ? "" : "s");
    if (!c.complete) s += fmt::format("; incomplete: {}", c.problem);
    return s;
  };
  if (auto counts = CountTrace(main_path, false)) {
    fmt::print(stderr, "crossfree record: trace {}: {}\n", main_path, describe(*counts));
  } else {
    fmt::print(stderr, "crossfree record: no trace at {} (see the tracer's message above)\n",
               main_path);
  }
  for (const auto& [path, child_pid] : child_files) {
    if (auto counts = CountTrace(path, false)) {
      const char* kind = counts->fork_child                 ? "fork child"
                         : child_pid == static_cast<uint32_t>(pid) ? "after exec"
                                                                    : "child";
      fmt::print(stderr, "crossfree record:   {} pid {}: {}: {}\n", kind, child_pid, path,
                 describe(*counts));
    }
  }
  return status;
}

}  // namespace

void RegisterRecordCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* sub = app.add_subcommand(
      "record", "Run a command with the allocation tracer preloaded and record a trace");
  sub->add_option("-o,--output", args->output,
                  "Trace file of the command (forked/exec'd children write FILE.<pid>); "
                  "default ./crossfree.<pid>.trace");
  sub->add_option("--unwind", args->unwind, "Stack unwinder (default hybrid)")
      ->check(CLI::IsMember({"fp", "libunwind", "hybrid"}));
  sub->add_option("--depth", args->depth, "Frames per stack (default 32)")
      ->check(CLI::Range(1, 256));
  sub->add_flag("--no-stacks", args->no_stacks, "Record without call stacks");
  sub->add_option("command", args->command, "The command to run, after --")->required();
  sub->footer("Example: crossfree record -o server.trace -- ./server --port 8080");
  sub->callback([args, exit_code] { *exit_code = RunRecord(*args); });
}

}  // namespace crossfree::cli
