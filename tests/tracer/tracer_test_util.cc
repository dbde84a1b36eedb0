// SPDX-License-Identifier: Apache-2.0
// Tracer tests: process running and trace loading helpers.
#include "tests/tracer/tracer_test_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace crossfree::tracer_test {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

 private:
  Trace* t_;
};

std::vector<std::string> g_dirs;

struct Cleanup {
  ~Cleanup() {
    for (const std::string& d : g_dirs) {
      std::string cmd = "rm -rf '" + d + "'";
      if (std::system(cmd.c_str()) != 0) {
        // Best effort only.
      }
    }
  }
} g_cleanup;

}  // namespace

RunResult Run(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra,
              const std::string& preload) {
  std::string dir = MakeTempDir();
  std::string out_path = dir + "/stdout";
  std::string err_path = dir + "/stderr";
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (kv.rfind("LD_PRELOAD=", 0) == 0 || kv.rfind("CROSSFREE_", 0) == 0) continue;
    env.push_back(kv);
  }
  if (!preload.empty()) env.push_back("LD_PRELOAD=" + preload);
  for (const std::string& kv : env_extra) env.push_back(kv);
  std::vector<char*> envp;
  for (std::string& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (std::string& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  RunResult result;
  pid_t pid;
  int rc = posix_spawnp(&pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    result.err = std::string("spawn failed: ") + std::strerror(rc);
    return result;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

std::string MakeTempDir() {
  const char* tmp = getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                      "/crossfree-tracer-test.XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "/tmp";
  g_dirs.emplace_back(buf.data());
  return buf.data();
}

std::string TargetPath(const std::string& name) { return std::string(CROSSFREE_TT_DIR) + "/" + name; }

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
  format::Chunk chunk;
  for (;;) {
    format::ReadResult r = reader->NextChunk(&chunk);
    if (r == format::ReadResult::kEnd) break;
    if (r != format::ReadResult::kChunk) {
      t.error = reader->error();
      return t;
    }
    t.chunk_sequences[chunk.tid].push_back(chunk.sequence);
    if (!format::DecodeChunk(chunk, collector, &error)) {
      t.error = error;
      return t;
    }
  }
  t.complete = true;
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
