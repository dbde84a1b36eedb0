// SPDX-License-Identifier: Apache-2.0
// Test support: child processes and temporary directories (see process.h).
#include "tests/support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace crossfree::testing {
namespace {

// Where a child that did not start failed.
constexpr int kRedirect = 1, kExec = 2;

// In the forked child: tells the parent (through fd) why the command cannot
// start, and exits.
[[noreturn]] void FailChild(int fd, int stage, int code) {
  int report[2] = {stage, errno};
  ssize_t written = write(fd, report, sizeof(report));
  (void)written;  // the parent sees the exit code either way
  _exit(code);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string ProcessResult::Describe() const {
  if (!started) return "not started: " + error;
  if (timed_out) return "timed out";
  if (signal != 0) return std::string("killed by SIG") + sigabbrev_np(signal);
  return "exit " + std::to_string(exit_code);
}

ProcessResult RunProcess(const std::vector<std::string>& argv, const ProcessLimits& limits) {
  ProcessResult result;
  if (argv.empty()) {
    result.error = "no command";
    return result;
  }
  TempDir io("proc");
  std::string out_path = io.File("out"), err_path = io.File("err");

  // Whether environment entry NAME=VALUE is named by name (NAME or PREFIX*).
  auto named = [](const std::string& entry, const std::string& name) {
    if (!name.empty() && name.back() == '*') {
      return entry.compare(0, name.size() - 1, name, 0, name.size() - 1) == 0;
    }
    return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
           entry[name.size()] == '=';
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool dropped = false;
    for (const std::string& add : limits.env) {
      if (named(entry, add.substr(0, add.find('=')))) dropped = true;
    }
    for (const std::string& name : limits.unset_env) {
      if (named(entry, name)) dropped = true;
    }
    if (!dropped) env.push_back(entry);
  }
  for (const std::string& add : limits.env) env.push_back(add);
  // See ProcessLimits: TSan's shadow cannot live under RLIMIT_AS either.
  bool rlimit_as = limits.address_space != 0 && !kThreadSanitizer;
  if (kAddressSanitizer && rlimit_as) {
    // See ProcessLimits: ASan's shadow cannot live under RLIMIT_AS.
    rlimit_as = false;
    std::string bound = "hard_rss_limit_mb=" + std::to_string(limits.address_space >> 20);
    auto options = std::find_if(env.begin(), env.end(),
                                [&](const std::string& e) { return named(e, "ASAN_OPTIONS"); });
    if (options == env.end()) {
      env.push_back("ASAN_OPTIONS=" + bound);
    } else {
      *options += ":" + bound;  // the last setting of a flag wins
    }
  }
  std::vector<char*> envp, args;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  // The child reports why it could not start ({stage, errno}) through this
  // pipe; a successful exec closes it empty.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.error = std::strerror(errno);
    return result;
  }
  // fork rather than posix_spawn: the limit is set in the child alone.
  pid_t pid = fork();
  if (pid < 0) {
    result.error = std::strerror(errno);
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return result;
  }
  if (pid == 0) {
    close(exec_pipe[0]);
    int in = open(limits.stdin_path.c_str(), O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) FailChild(exec_pipe[1], kRedirect, 126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (rlimit_as) {
      rlimit r{limits.address_space, limits.address_space};
      setrlimit(RLIMIT_AS, &r);
    }
    setpgid(0, 0);
    execvpe(args[0], args.data(), envp.data());
    FailChild(exec_pipe[1], kExec, 127);
  }
  close(exec_pipe[1]);
  int report[2] = {0, 0};
  ssize_t got;
  while ((got = read(exec_pipe[0], report, sizeof(report))) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(report))) {
    int status = 0;
    waitpid(pid, &status, 0);
    result.error = (report[0] == kExec ? "cannot run " + argv[0] : std::string("cannot redirect")) +
                   ": " + std::strerror(report[1]);
    return result;
  }
  result.started = true;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(limits.timeout_s);
  int status = 0;
  rusage usage{};
  for (;;) {
    pid_t r = wait4(pid, &status, WNOHANG, &usage);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!result.timed_out) {
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  }
  result.max_rss_kib = static_cast<uint64_t>(usage.ru_maxrss);
  result.out = Slurp(out_path);
  result.err = Slurp(err_path);
  return result;
}

TempDir::TempDir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/crossfree-" + tag + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFileText(const std::string& path) { return Slurp(path); }

void WriteFileBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace crossfree::testing
