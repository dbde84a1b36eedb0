// SPDX-License-Identifier: Apache-2.0
// The closed loop's options that rpc-bench (bench/rpc/rpc_bench.cc) and
// grpc_bench (bench/grpc) share. scripts/bench/rpc-vs-grpc gives both
// programs the same --mode, --client_threads, --async_call_concurrency and
// --run_seconds and compares their RESULT lines, so the names, defaults and
// checks are declared here once instead of in each main(). Header-only:
// bench/grpc is a separate CMake project. Parsing runs on the main thread
// before either benchmark starts a thread.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace crossfree::bench {

struct LoopFlags {
  // sync: one blocking caller per client thread. async: per client,
  // async_call_concurrency chains of calls, each issued from the previous
  // one's completion.
  std::string mode = "sync";
  int client_threads = 16;
  int async_call_concurrency = 60;
  double run_seconds = 1;
};

// What --help says where the benchmarks differ: what their modes do, what
// each client thread has of its own, and what a client is (a gRPC channel,
// an rpc-bench messenger).
struct LoopHelp {
  const char* mode;
  const char* client_threads;
  const char* client;
};

// Registers the LoopFlags options; modes are the --mode values the
// benchmark has (sync and async, and rpc-bench's pingpong).
inline void AddLoopOptions(CLI::App& app, LoopFlags* f, std::vector<std::string> modes,
                           const LoopHelp& help) {
  app.add_option("--mode", f->mode, help.mode)->check(CLI::IsMember(std::move(modes)));
  app.add_option("--client_threads", f->client_threads, help.client_threads)
      ->check(CLI::PositiveNumber);
  app.add_option("--async_call_concurrency", f->async_call_concurrency,
                 std::string("Async: calls in flight per client ") + help.client)
      ->check(CLI::PositiveNumber);
  app.add_option("--run_seconds", f->run_seconds, "Measured run time in seconds")
      ->check(CLI::PositiveNumber);
}

}  // namespace crossfree::bench
