// SPDX-License-Identifier: Apache-2.0
// Test helpers for tests/rpc/attack_test.cc: an rpc-server child process,
// its resource use read from /proc (raw-socket clients: raw_client.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rpc/sockaddr.h"
#include "tests/rpc/raw_client.h"

namespace crossfree::rpc::testing {

// Owns one `rpc-server` process (the binary named by CROSSFREE_RPC_SERVER
// at build time). Thread: the test's main thread.
class ServerProcess {
 public:
  // Starts rpc-server with `args` (after --port 0) and waits up to 5 s for
  // its "listening on HOST:PORT" line. Its stderr goes to a file (stderr()).
  // nullptr (and *error) on failure.
  static std::unique_ptr<ServerProcess> Start(const std::vector<std::string>& args,
                                              std::string* error);
  ~ServerProcess();  // SIGKILL if still running

  pid_t pid() const { return pid_; }
  const Sockaddr& address() const { return address_; }
  const std::string& listening_line() const { return line_; }

  // From /proc/PID: resident and data (virtual) size in KiB, threads, open
  // descriptors, the highest descriptor number, user+system CPU seconds.
  long RssKb() const;
  long VmDataKb() const;
  int Threads() const;
  int FdCount() const;
  int MaxFd() const;
  double CpuSeconds() const;
  // Bytes that clients sent to the server's port and the server has not
  // read yet: the sum of rx_queue over the established TCP sockets (IPv4 and
  // IPv6) whose local port is the server's, from /proc/PID/net/tcp{,6}. 0
  // once the server has read every frame that reached it.
  long UnreadBytes() const;
  // Polls up to `timeout` until FdCount() == `want`; returns the last count.
  int WaitFdCount(int want, std::chrono::milliseconds timeout) const;

  // Everything the server wrote to stderr so far, and the number of lines
  // containing `text`.
  std::string Stderr() const;
  int CountStderrLines(const std::string& text) const;

  // Sends `sig` and waits up to `timeout` for the exit; the exit status
  // (as from waitpid), or -1 if it did not exit in time.
  int Stop(int sig, std::chrono::milliseconds timeout);

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  bool exited_ = false;
  Sockaddr address_;
  std::string line_;
  std::string stderr_path_;
};

// True when CROSSFREE_ATTACK_FAST=1: run the attacks with the fast paths on
// (inline handlers on the server, callers reading their own responses).
bool FastPathsRequested();
// True when CROSSFREE_ATTACK_THREADS=1: run the attacks against
// `rpc-server --connection_threads` (a thread per connection), with the
// well-behaved clients reading their own responses.
bool ConnectionThreadsRequested();

// `n` sync Add calls from a fresh client messenger; "" if all succeeded
// with the right result, else the first failure. Its callers read their
// own responses when FastPathsRequested().
std::string WellBehavedCalls(const Sockaddr& addr, int n);

}  // namespace crossfree::rpc::testing
