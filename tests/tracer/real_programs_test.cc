// SPDX-License-Identifier: Apache-2.0
// Real Debian programs under `crossfree record` with every unwinder: the
// exit status and stdout are those of the untraced run, files the program
// writes are identical, and every trace file of the run is valid
// (`crossfree dump --summary` exits 0). Programs come from scripts/setup's
// package list (binutils, g++, python3, sqlite3, git). Bounded: the whole
// suite runs in well under two minutes on the 2-core build VM.
#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

struct Program {
  const char* name;
  std::vector<std::pair<const char*, const char*>> files;  // written before each run
  const char* script;                                      // run by sh -c in the work dir
  std::vector<const char*> outputs;                        // files compared after the run
};

const char kTinyCc[] = R"(#include <cstdio>
#include <map>
#include <string>
#include <vector>
template <typename T> T Sum(const std::vector<T>& v) { T s{}; for (const T& x : v) s += x; return s; }
int main() {
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 100; ++i) m[std::to_string(i % 7)].push_back(i);
  long total = 0;
  for (auto& [k, v] : m) total += Sum(v) * static_cast<long>(k.size());
  std::printf("total %ld\n", total);
}
)";

const char kThreadsPy[] = R"(import threading
results = [None] * 4
def work(i):
    d = {}
    for n in range(20000):
        d[str(n)] = [n, str(n * i)]
    results[i] = sum(len(v[1]) for v in d.values())
threads = [threading.Thread(target=work, args=(i,), name="worker-%d" % i) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(results)
)";

std::string InsertsSql() {
  std::string sql = "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\nBEGIN;\n";
  for (int i = 0; i < 3000; ++i) {
    sql += "INSERT INTO t(name, v) VALUES('row" + std::to_string(i) + "', " +
           std::to_string(i * 0.5) + ");\n";
  }
  sql += "COMMIT;\nSELECT count(*), sum(v), max(name) FROM t;\n";
  return sql;
}

const char kGitScript[] =
    "git init -q repo && cd repo && printf 'one\\n' > a.txt && git add a.txt && "
    "git commit -q -m first && printf 'two\\n' >> a.txt && mkdir d && printf x > d/b && "
    "git add -A && git commit -q -m second && git log --format='%H %an %ad %s' && "
    "git ls-files";

const char kShScript[] =
    "x=$( (echo 3; echo 1; echo 2) | sort ); echo \"sorted: $x\" | tr '\\n' ' '; echo; "
    "( for i in 1 2 3; do (echo \"item $i\"); done ) | (while read a b; do echo \"$b:$a\"; done) "
    "| sort -r | (cat; echo end) ; (exit 3) || echo \"status $?\"";

std::vector<std::string> TraceFiles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind("trace", 0) == 0) out.push_back(dir + "/" + name);
  }
  closedir(d);
  return out;
}

struct Outcome {
  RunResult run;
  std::vector<std::string> outputs;
};

// Runs the program in a fresh work directory (the same path every time, so
// that paths in its output do not differ), traced with `record` options
// or not (empty).
Outcome RunProgram(const Program& p, const std::string& work, const std::string& traces,
                   const std::vector<std::string>& options) {
  REQUIRE(Run({"rm", "-rf", work}, {}, "").exit_code == 0);
  REQUIRE(mkdir(work.c_str(), 0755) == 0);
  for (const auto& [name, text] : p.files) {
    std::ofstream(work + "/" + name, std::ios::binary) << text;
  }
  const std::vector<std::string> env = {
      "HOME=" + work, "LC_ALL=C", "TZ=UTC", "GIT_CONFIG_NOSYSTEM=1",
      "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=ann@example.com",
      "GIT_COMMITTER_NAME=Ann", "GIT_COMMITTER_EMAIL=ann@example.com",
      "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
      "PYTHONHASHSEED=0"};
  const std::string script = "cd '" + work + "' && " + p.script;
  Outcome o;
  if (options.empty()) {
    o.run = Run({"sh", "-c", script}, env, "");
  } else {
    std::vector<std::string> argv = {CROSSFREE_CLI, "record"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"-o", traces + "/trace", "--", "sh", "-c", script});
    o.run = Run(argv, env, "");
  }
  for (const char* f : p.outputs) o.outputs.push_back(ReadAll(work + "/" + f));
  return o;
}

TEST_CASE("real programs: traced runs behave exactly like untraced ones", "[safety][real]") {
  const std::string sql = InsertsSql();
  const std::vector<Program> programs = {
      {"as", {{"a.s", ".text\n.globl f\nf: ret\n.data\nv: .quad 42\n"}},
       "as a.s -o a.o && echo assembled", {"a.o"}},
      {"g++", {{"tiny.cc", kTinyCc}},
       "g++ -O2 -c tiny.cc -o tiny.o && g++ -o tiny tiny.o && ./tiny", {"tiny.o"}},
      {"python3", {{"threads.py", kThreadsPy}}, "python3 threads.py", {}},
      {"sqlite3", {{"inserts.sql", sql.c_str()}}, "sqlite3 t.db < inserts.sql", {}},
      {"git", {}, kGitScript, {}},
      {"sh", {}, kShScript, {}},
  };
  const std::string root = MakeTempDir();
  const std::string work = root + "/work";
  for (const Program& p : programs) {
    INFO("program " << p.name);
    const Outcome plain = RunProgram(p, work, "", {});
    INFO("untraced stderr: " << plain.run.err);
    REQUIRE(plain.run.exit_code == 0);
    REQUIRE(!plain.run.out.empty());
    // Every unwinder, and sampling inside a window that opens and closes
    // while the program runs (or not at all, for the shortest ones).
    const std::vector<std::vector<std::string>> configs = {
        {"--unwind", "fp"},
        {"--unwind", "libunwind"},
        {"--unwind", "hybrid"},
        {"--sample", "7", "--delay", "0.005", "--duration", "0.05"},
    };
    for (size_t c = 0; c < configs.size(); ++c) {
      std::string label;
      for (const std::string& o : configs[c]) label += " " + o;
      INFO("record" << label);
      const std::string traces = root + "/" + p.name + "-" + std::to_string(c);
      REQUIRE(mkdir(traces.c_str(), 0755) == 0);
      const Outcome traced = RunProgram(p, work, traces, configs[c]);
      INFO("traced stderr: " << traced.run.err);
      CHECK(traced.run.exit_code == plain.run.exit_code);
      CHECK(traced.run.out == plain.run.out);
      CHECK(traced.outputs == plain.outputs);
      const std::vector<std::string> files = TraceFiles(traces);
      CHECK(!files.empty());
      for (const std::string& f : files) {
        RunResult dump = Run({CROSSFREE_CLI, "dump", "--summary", f}, {}, "");
        INFO("trace " << f << ": " << dump.err);
        CHECK(dump.exit_code == 0);
      }
    }
  }
}

}  // namespace
}  // namespace crossfree::tracer_test
