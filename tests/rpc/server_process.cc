// SPDX-License-Identifier: Apache-2.0
// ServerProcess and raw-client helpers.
#include "tests/rpc/server_process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "rpc/calculator_service.h"
#include "rpc/messenger.h"
#include "rpc/serialization.h"

namespace crossfree::rpc::testing {

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

long StatusField(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  size_t n = strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      return atol(line.c_str() + n + 1);
    }
  }
  return -1;
}

}  // namespace

std::unique_ptr<ServerProcess> ServerProcess::Start(const std::vector<std::string>& args,
                                                    std::string* error) {
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  char path[] = "/tmp/crossfree-rpc-server-XXXXXX";
  int err_fd = mkstemp(path);
  if (err_fd < 0) {
    *error = "mkstemp failed";
    return nullptr;
  }
  p->stderr_path_ = path;
  int out[2];
  if (pipe(out) != 0) {
    *error = "pipe failed";
    return nullptr;
  }
  // CROSSFREE_RPC_SERVER in the environment runs another build of the
  // server (e.g. a ThreadSanitizer one) under the same tests.
  const char* bin = getenv("CROSSFREE_RPC_SERVER");
  std::vector<std::string> argv_s = {bin != nullptr ? bin : CROSSFREE_RPC_SERVER, "--port", "0"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err_fd, 2);
    close(out[0]);
    close(out[1]);
    close(err_fd);
    // Only 0, 1, 2 stay open, so the server's descriptor count starts small.
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  close(err_fd);
  p->pid_ = pid;
  // The first line, with a 5 s limit.
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (line.find('\n') == std::string::npos) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    pollfd pfd{out[0], POLLIN, 0};
    if (left <= 0 || poll(&pfd, 1, left) <= 0) break;
    char c;
    if (read(out[0], &c, 1) != 1) break;
    line += c;
  }
  close(out[0]);
  const std::string prefix = "listening on ";
  if (line.compare(0, prefix.size(), prefix) != 0 || line.back() != '\n') {
    *error = "rpc-server did not print 'listening on': got '" + line + "'; stderr: " +
             ReadFile(p->stderr_path_);
    return nullptr;
  }
  p->line_ = line.substr(0, line.size() - 1);
  Status s = Sockaddr::ParseHostPort(p->line_.substr(prefix.size()), &p->address_);
  if (!s.ok()) {
    *error = s.ToString();
    return nullptr;
  }
  return p;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  // A sanitizer build of the server reports into its stderr file, which is
  // deleted below: pass the report on.
  std::string err = Stderr();
  if (err.find("Sanitizer") != std::string::npos) fprintf(stderr, "%s\n", err.c_str());
  if (!stderr_path_.empty()) unlink(stderr_path_.c_str());
}

long ServerProcess::RssKb() const { return StatusField(pid_, "VmRSS"); }
long ServerProcess::VmDataKb() const { return StatusField(pid_, "VmData"); }
int ServerProcess::Threads() const { return static_cast<int>(StatusField(pid_, "Threads")); }

int ServerProcess::FdCount() const {
  DIR* d = opendir(("/proc/" + std::to_string(pid_) + "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

int ServerProcess::MaxFd() const {
  DIR* d = opendir(("/proc/" + std::to_string(pid_) + "/fd").c_str());
  if (d == nullptr) return -1;
  int m = -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') m = std::max(m, atoi(e->d_name));
  }
  closedir(d);
  return m;
}

double ServerProcess::CpuSeconds() const {
  std::string stat = ReadFile("/proc/" + std::to_string(pid_) + "/stat");
  // Fields after the ")" that closes the command name: state is field 3,
  // utime 14 and stime 15.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(stat.substr(close + 2));
  std::string f;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> f; ++i) {
    if (i == 14) utime = atol(f.c_str());
    if (i == 15) stime = atol(f.c_str());
  }
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

long ServerProcess::UnreadBytes() const {
  long total = 0;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      // "  sl  local_address rem_address   st tx_queue:rx_queue ..."
      std::istringstream fields(line);
      std::string sl, local, remote, st, queues;
      if (!(fields >> sl >> local >> remote >> st >> queues)) continue;
      size_t colon = local.rfind(':');
      size_t qcolon = queues.find(':');
      if (colon == std::string::npos || qcolon == std::string::npos || st != "01") continue;
      if (std::stoul(local.substr(colon + 1), nullptr, 16) != address_.port()) continue;
      total += std::stol(queues.substr(qcolon + 1), nullptr, 16);
    }
  }
  return total;
}

int ServerProcess::WaitFdCount(int want, std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int n = FdCount();
  while (n != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    n = FdCount();
  }
  return n;
}

std::string ServerProcess::Stderr() const { return ReadFile(stderr_path_); }

int ServerProcess::CountStderrLines(const std::string& text) const {
  std::istringstream in(Stderr());
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.find(text) != std::string::npos) ++n;
  }
  return n;
}

int ServerProcess::Stop(int sig, std::chrono::milliseconds timeout) {
  if (exited_) return -1;
  kill(pid_, sig);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      return status;
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool FastPathsRequested() {
  const char* v = getenv("CROSSFREE_ATTACK_FAST");
  return v != nullptr && std::string(v) == "1";
}

bool ConnectionThreadsRequested() {
  const char* v = getenv("CROSSFREE_ATTACK_THREADS");
  return v != nullptr && std::string(v) == "1";
}

std::string WellBehavedCalls(const Sockaddr& addr, int n) {
  MessengerOptions o;
  o.name = "good-client";
  o.num_reactors = 1;
  o.reactor_prefix = "cli-reactor";
  o.caller_reads_sync_responses = FastPathsRequested() || ConnectionThreadsRequested();
  std::shared_ptr<Messenger> m;
  Status s = Messenger::Create(o, &m);
  if (!s.ok()) return s.ToString();
  test::CalculatorServiceProxy proxy(m, addr);
  for (int i = 0; i < n; ++i) {
    test::AddRequestPB req;
    req.set_x(i);
    req.set_y(1000);
    test::AddResponsePB resp;
    RpcController c;
    c.set_timeout(std::chrono::seconds(5));
    s = proxy.Add(req, &resp, &c);
    if (!s.ok()) return "call " + std::to_string(i) + ": " + s.ToString();
    if (resp.result() != static_cast<uint32_t>(i + 1000)) return "wrong result";
  }
  m->Shutdown();
  return "";
}

}  // namespace crossfree::rpc::testing
