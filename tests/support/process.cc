// SPDX-License-Identifier: Apache-2.0
// Test support: child processes and temporary directories (see process.h).
#include "tests/support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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
  TempDir io("proc");
  std::string out_path = io.File("out"), err_path = io.File("err");

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const std::string& add : limits.env) {
      if (entry.compare(0, entry.find('=') + 1, add, 0, add.find('=') + 1) == 0) replaced = true;
    }
    if (!replaced) env.push_back(entry);
  }
  for (const std::string& add : limits.env) env.push_back(add);
  std::vector<char*> envp, args;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  // fork rather than posix_spawn: the limit is set in the child alone.
  pid_t pid = fork();
  if (pid < 0) {
    result.error = std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    int in = open(limits.stdin_path.c_str(), O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (limits.address_space != 0) {
      rlimit r{limits.address_space, limits.address_space};
      setrlimit(RLIMIT_AS, &r);
    }
    setpgid(0, 0);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
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
