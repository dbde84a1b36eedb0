// SPDX-License-Identifier: Apache-2.0
// The tracer never breaks its target: adversarial frames (code without CFI
// calling the allocator with any %rbp, on the main thread, a pthread, a
// coroutine, a sigaltstack handler and a raw clone(2) thread) under every
// unwinder; the exit status and stdout are those of the untraced run.
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "format/trace_format.h"
#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

const char* const kUnwinders[] = {"fp", "libunwind", "hybrid"};

TEST_CASE("adversarial frames: every unwinder leaves the target's behaviour unchanged",
          "[safety]") {
  const std::string dir = MakeTempDir();
  RunResult plain = Run({TargetPath("tt_adversarial")}, {}, "");
  REQUIRE(plain.exit_code == 0);
  // main, pthread, coroutine, sigaltstack, clone; the first free descriptor
  REQUIRE(CountLines(plain.out) == 6);
  for (const char* unwind : kUnwinders) {
    INFO("unwinder " << unwind);
    const std::string sub = dir + "/" + unwind;
    REQUIRE(Run({"mkdir", "-p", sub}, {}, "").exit_code == 0);
    RunResult traced =
        RunTraced("tt_adversarial", sub, {}, {std::string("CROSSFREE_UNWIND=") + unwind});
    INFO("stderr: " << traced.err);
    CHECK(traced.exit_code == 0);
    CHECK(traced.out == plain.out);
    Trace t = LoadTrace(sub + "/trace");
    REQUIRE(t.complete);
    auto fns = ParseFunctions(traced.err);
    REQUIRE(fns.count("tt_adv_call") == 1);
    REQUIRE(fns.count("tt_adv_malloc_m8") == 1);
    // 18 %rbp values x (malloc, free, new, delete) in each of the four
    // contexts that run as the thread itself; the clone(2) task shares the
    // main thread's TLS without being it and records nothing.
    CHECK(EventsFrom(t, fns["tt_adv_call"]).size() == 4 * 18 * 4);
    CHECK(EventsFrom(t, fns["tt_adv_malloc_m8"]).size() == 4);
  }
}

}  // namespace
}  // namespace crossfree::tracer_test
