// SPDX-License-Identifier: Apache-2.0
// Tracer tests: process running (on tests/support) and trace loading helpers.
#include "tests/tracer/tracer_test_util.h"

#include <fcntl.h>
#include <spawn.h>

#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include <catch2/catch.hpp>

#include "tests/support/process.h"

extern char** environ;

namespace crossfree::tracer_test {
namespace {

class Collector : public format::RecordVisitor {
 public:
  explicit Collector(Trace* t) : t_(t) {}
  void OnEvent(const format::Event& e) override { t_->events.push_back(e); }
  void OnStack(uint32_t id, std::span<const uint64_t> frames) override {
    t_->stacks[id].assign(frames.begin(), frames.end());
  }
  void OnThreadName(uint32_t tid, uint64_t, std::string_view name) override {
    t_->thread_names[tid].emplace_back(name);
  }
  void OnModule(uint32_t, const format::Module& m) override { t_->modules.push_back(m); }
  void OnThreadExit(uint32_t tid, uint64_t) override { t_->thread_exits.insert(tid); }
  void OnCounts(uint32_t tid, const format::ThreadCounts& c) override {
    format::ThreadCounts& sum = t_->counts[tid];
    sum.allocs += c.allocs;
    sum.frees += c.frees;
    sum.samples_dropped += c.samples_dropped;
  }

 private:
  Trace* t_;
};

// The directories MakeTempDir made, removed at exit.
std::vector<std::unique_ptr<testing::TempDir>> g_dirs;

}  // namespace

RunResult Run(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra,
              const std::string& preload) {
  testing::ProcessLimits limits;
  limits.timeout_s = kRunTimeoutSeconds;
  limits.address_space = kRunAddressSpace;
  limits.unset_env = {"LD_PRELOAD", "CROSSFREE_*"};
  if (!preload.empty()) limits.env.push_back("LD_PRELOAD=" + preload);
  limits.env.insert(limits.env.end(), env_extra.begin(), env_extra.end());
  testing::ProcessResult p = testing::RunProcess(argv, limits);
  RunResult result;
  result.out = p.out;
  result.err = p.err;
  if (p.exited()) {
    result.exit_code = p.exit_code;
  } else if (p.started && !p.timed_out) {
    result.exit_code = 128 + p.signal;
  } else {
    result.err += "\n[" + argv[0] + ": " + p.Describe() + "]\n";
  }
  return result;
}

std::string MakeTempDir() {
  g_dirs.push_back(std::make_unique<testing::TempDir>("tracer-test"));
  return g_dirs.back()->path();
}

pid_t SpawnInBackground(const std::vector<std::string>& argv, const std::string& out,
                        const std::string& err, const std::vector<std::string>* env) {
  std::vector<std::string> args = argv, envs;
  std::vector<char*> argp, envp;
  for (std::string& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  if (env != nullptr) {
    envs = *env;
    for (std::string& kv : envs) envp.push_back(kv.data());
    envp.push_back(nullptr);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!err.empty()) {
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argp[0], &actions, nullptr, argp.data(),
                        env != nullptr ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Built by appending: GCC 12 at -O2 warns falsely (-Warray-bounds, its bug
// 105651) on std::string(literal) + "/" + name once Catch's header comes
// first, as the precompiled header puts it.
std::string TargetPath(const std::string& name) {
  std::string path = CROSSFREE_TT_DIR;
  path.append("/").append(name);
  return path;
}

RunResult RunTraced(const std::string& name, const std::string& dir,
                    const std::vector<std::string>& args,
                    const std::vector<std::string>& env_extra, const std::string& extra_preload) {
  std::vector<std::string> argv = {TargetPath(name)};
  argv.insert(argv.end(), args.begin(), args.end());
  // env_extra first: getenv returns the first match, so it can override.
  std::vector<std::string> env = env_extra;
  env.push_back("CROSSFREE_OUTPUT=" + dir + "/trace");
  std::string preload = CROSSFREE_TRACER_LIB;
  if (!extra_preload.empty()) preload += ":" + extra_preload;
  return Run(argv, env, preload);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

long long NumberBefore(const std::string& text, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("([0-9]+) " + what))) return -1;
  return std::stoll(m[1]);
}

bool DecodeAll(format::TraceReader& reader, format::RecordVisitor& visitor, std::string* error,
               const std::function<void(const format::Chunk&)>& on_chunk) {
  format::Chunk chunk;
  for (;;) {
    format::ReadResult r = reader.NextChunk(&chunk);
    if (r == format::ReadResult::kEnd) return true;
    if (r != format::ReadResult::kChunk) {
      *error = reader.error();
      return false;
    }
    if (on_chunk) on_chunk(chunk);
    if (!format::DecodeChunk(chunk, visitor, error)) return false;
  }
}

Trace LoadTrace(const std::string& path) {
  Trace t;
  std::string error;
  auto reader = format::TraceReader::Open(path, &error);
  if (reader == nullptr) {
    t.error = error;
    return t;
  }
  t.header = reader->header();
  Collector collector(&t);
  t.complete = DecodeAll(*reader, collector, &t.error, [&](const format::Chunk& chunk) {
    t.chunk_sequences[chunk.tid].push_back(chunk.sequence);
  });
  return t;
}

Trace LoadCompleteTrace(const std::string& path) {
  Trace t = LoadTrace(path);
  INFO(path << ": " << t.error);
  REQUIRE(t.complete);
  return t;
}

std::map<std::string, FnRange> ParseFunctions(const std::string& out) {
  std::map<std::string, FnRange> fns;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tag, name, start;
    uint64_t size = 0;
    if (!(ls >> tag >> name >> start >> size) || tag != "fn") continue;
    fns[name] = FnRange{std::stoull(start, nullptr, 16), size};
  }
  return fns;
}

uint64_t FirstFrame(const Trace& trace, const format::Event& event) {
  auto it = trace.stacks.find(event.stack_id);
  if (it == trace.stacks.end() || it->second.empty()) return 0;
  return it->second[0];
}

std::vector<format::Event> EventsFrom(const Trace& trace, const FnRange& fn) {
  std::vector<format::Event> out;
  for (const format::Event& e : trace.events) {
    if (fn.Contains(FirstFrame(trace, e))) out.push_back(e);
  }
  return out;
}

int CountLines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace crossfree::tracer_test
