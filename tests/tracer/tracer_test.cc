// SPDX-License-Identifier: Apache-2.0
// End-to-end tracer tests: each target program runs under
// LD_PRELOAD=libcrossfree-trace.so and its trace is read back and checked
// against the target's exactly known allocations.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "format/trace_format.h"
#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

using format::AllocFn;
using format::Event;
using format::EventOp;
using format::FreeFn;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

struct Counts {
  std::string where;  // for failure messages
  int allocs = 0;
  int frees = 0;
  std::map<uint8_t, int> alloc_fns;
  std::map<uint8_t, int> free_fns;
  std::set<uint32_t> tids;
  std::multiset<uint64_t> alloc_sizes;
};

Counts Count(const std::vector<Event>& events, const std::string& where = "") {
  Counts c;
  c.where = where;
  for (const Event& e : events) {
    c.tids.insert(e.tid);
    if (e.op == EventOp::kAlloc) {
      ++c.allocs;
      ++c.alloc_fns[e.fn];
      c.alloc_sizes.insert(e.size);
    } else {
      ++c.frees;
      ++c.free_fns[e.fn];
    }
  }
  return c;
}

uint8_t A(AllocFn fn) { return static_cast<uint8_t>(fn); }
uint8_t F(FreeFn fn) { return static_cast<uint8_t>(fn); }

// c is n allocations through fn, each of `size` bytes, and nothing else.
void CheckAllocs(const Counts& c, AllocFn fn, uint64_t size, int n) {
  INFO("allocations from " << c.where);
  CHECK(c.allocs == n);
  CHECK(c.frees == 0);
  CHECK(c.alloc_fns == std::map<uint8_t, int>{{A(fn), n}});
  CHECK(c.alloc_sizes.count(size) == static_cast<size_t>(n));
}

// c is n frees through fn, and nothing else.
void CheckFrees(const Counts& c, FreeFn fn, int n) {
  INFO("frees from " << c.where);
  CHECK(c.frees == n);
  CHECK(c.allocs == 0);
  CHECK(c.free_fns == std::map<uint8_t, int>{{F(fn), n}});
}

// A target run traced into a fresh directory: it exited with 0, its trace
// reads back whole, and fns holds the tt_ functions it printed.
struct Traced {
  std::string dir;
  RunResult run;
  Trace t;
  std::map<std::string, FnRange> fns;

  // The events whose first frame lies in tt_ function `fn`, counted.
  Counts In(const std::string& fn) { return Count(EventsFrom(t, fns[fn]), fn); }
};

Traced RunWhole(const std::string& name, const std::vector<std::string>& args = {},
                const std::vector<std::string>& env_extra = {},
                const std::string& extra_preload = "") {
  Traced r;
  r.dir = MakeTempDir();
  r.run = RunTraced(name, r.dir, args, env_extra, extra_preload);
  INFO(name << " stderr: " << r.run.err);
  REQUIRE(r.run.exit_code == 0);
  r.t = LoadCompleteTrace(r.dir + "/trace");
  r.fns = ParseFunctions(r.run.out);
  return r;
}

// What tt_churn does on its main thread (targets/churn.cc), and the
// functions the tracer sees it through.
struct Churn {
  int mallocs = 1000;  // malloc(12345) then free, TT_CHURN_MALLOCS times
  int news = 500;      // new Blob (12346 bytes) then delete, TT_CHURN_NEWS times
  AllocFn malloc_fn = AllocFn::kMalloc;
  FreeFn free_fn = FreeFn::kFree;
  AllocFn new_fn = AllocFn::kNew;
  FreeFn delete_fn = FreeFn::kDelete;
};

// Churn checks shared by the glibc, tcmalloc (dynamic and static) and
// jemalloc runs.
void CheckChurn(const Trace& t, const RunResult& run, const Churn& want = {}) {
  REQUIRE(t.complete);
  auto fns = ParseFunctions(run.out);
  REQUIRE(fns.size() == 4);
  auto mallocs = Count(EventsFrom(t, fns["tt_churn_malloc"]), "tt_churn_malloc");
  auto frees = Count(EventsFrom(t, fns["tt_churn_free"]), "tt_churn_free");
  auto news = Count(EventsFrom(t, fns["tt_churn_new"]), "tt_churn_new");
  auto deletes = Count(EventsFrom(t, fns["tt_churn_delete"]), "tt_churn_delete");
  CheckAllocs(mallocs, want.malloc_fn, 12345, want.mallocs);
  CheckFrees(frees, want.free_fn, want.mallocs);
  CheckAllocs(news, want.new_fn, 12346, want.news);
  CheckFrees(deletes, want.delete_fn, want.news);
  // One thread, the main one (its tid is the pid in the header).
  std::set<uint32_t> tids;
  for (const Counts* c : {&mallocs, &frees, &news, &deletes}) tids.insert(c->tids.begin(), c->tids.end());
  CHECK(tids == std::set<uint32_t>{t.header.fields.pid});
  // No event counted twice: every marker-size event comes from a tt_ frame
  // (libstdc++'s operator new calling malloc is not recorded again, nor is
  // an allocation tcmalloc's MallocHook reports).
  int marker_allocs = 0;
  for (const Event& e : t.events) {
    if (e.op == EventOp::kAlloc && (e.size == 12345 || e.size == 12346)) ++marker_allocs;
  }
  CHECK(marker_allocs == want.mallocs + want.news);
  CHECK(run.out.find("result " + std::to_string(want.mallocs + want.news)) != std::string::npos);
}

TEST_CASE("same-thread churn: exact counts, sizes, first frame", "[tracer]") {
  Traced r = RunWhole("tt_churn");
  CHECK(r.run.err.empty());
  Trace& t = r.t;
  CheckChurn(t, r.run);
  CHECK(t.header.fields.flags == format::kHeaderFlagEndsWithTotals);
  CHECK(t.header.exe_path == TargetPath("tt_churn"));
  // Module map: the executable itself is there, with a build id.
  bool exe_found = false;
  for (const auto& m : t.modules) {
    if (m.path == TargetPath("tt_churn")) exe_found = !m.build_id.empty() && !m.segments.empty();
  }
  CHECK(exe_found);
  // The main thread is named after the program.
  REQUIRE(t.thread_names.count(t.header.fields.pid) == 1);
  CHECK(t.thread_names[t.header.fields.pid].front() == "tt_churn");
}

bool ModuleLoaded(const Trace& t, const std::string& name) {
  for (const auto& m : t.modules) {
    if (m.path.size() >= name.size() &&
        m.path.compare(m.path.size() - name.size(), name.size(), name) == 0) {
      return true;
    }
  }
  return false;
}

// Runs tt_churn with the allocator library so preloaded and checks the
// same counts as under glibc; the library must really have been loaded (a
// preload the loader cannot open is ignored with a message, and the test
// would run on glibc's malloc).
Trace ChurnUnder(const std::string& so, const std::string& module) {
  Traced r = RunWhole("tt_churn", {}, {}, so);
  INFO(r.run.err);
  CHECK(ModuleLoaded(r.t, module));
  CheckChurn(r.t, r.run);
  return r.t;
}

TEST_CASE("churn under a dynamic tcmalloc (LD_PRELOAD libtcmalloc.so.4)", "[tracer]") {
  Trace t = ChurnUnder(CROSSFREE_TCMALLOC_SO, "libtcmalloc.so.4");
  CHECK((t.header.fields.flags & format::kHeaderFlagMallocHook) == 0);
}

TEST_CASE("churn under jemalloc (LD_PRELOAD libjemalloc.so.2)", "[tracer]") {
  ChurnUnder(CROSSFREE_JEMALLOC_SO, "libjemalloc.so.2");
}

TEST_CASE("producer/consumer: allocated on one thread, freed on another, named", "[tracer]") {
  Traced r = RunWhole("tt_prodcons");
  Trace& t = r.t;
  auto made = r.In("tt_produce");
  auto freed = r.In("tt_consume");
  CheckAllocs(made, AllocFn::kNew, 12347, 2000);
  CheckFrees(freed, FreeFn::kDelete, 2000);
  REQUIRE(made.tids.size() == 1);
  REQUIRE(freed.tids.size() == 1);
  uint32_t producer = *made.tids.begin();
  uint32_t consumer = *freed.tids.begin();
  CHECK(producer != consumer);
  CHECK(producer != t.header.fields.pid);
  CHECK(consumer != t.header.fields.pid);
  // Every object freed on the consumer was allocated on the producer.
  std::set<uint64_t> live;
  std::vector<Event> sorted = t.events;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Event& a, const Event& b) {
    return a.timestamp_ns < b.timestamp_ns;
  });
  int cross = 0;
  for (const Event& e : sorted) {
    if (e.op == EventOp::kAlloc && e.tid == producer && e.size == 12347) live.insert(e.address);
    if (e.op == EventOp::kFree && e.tid == consumer && live.erase(e.address) == 1) ++cross;
  }
  CHECK(cross == 2000);
  // Names: set by main with pthread_setname_np, and by the thread with prctl.
  REQUIRE(t.thread_names.count(producer) == 1);
  REQUIRE(t.thread_names.count(consumer) == 1);
  CHECK(t.thread_names[producer].back() == "producer");
  CHECK(t.thread_names[consumer].back() == "consumer");
  // Both threads were joined: each wrote its thread-exit record.
  CHECK(t.thread_exits.count(producer) == 1);
  CHECK(t.thread_exits.count(consumer) == 1);
}

// Both trace clocks (the calibrated TSC one and clock_gettime) must give
// CLOCK_MONOTONIC nanoseconds inside the run's window and keep the
// ordering rule across threads: sorted by time, each consumer free follows
// the producer allocation of its block.
TEST_CASE("timestamps: CLOCK_MONOTONIC, ordered across threads, TSC and fallback clock",
          "[tracer]") {
  for (const char* tsc : {"CROSSFREE_TSC=1", "CROSSFREE_TSC=0"}) {
    INFO(tsc);
    std::string dir = MakeTempDir();
    timespec before_ts, after_ts;
    clock_gettime(CLOCK_MONOTONIC, &before_ts);
    RunResult run = RunTraced("tt_prodcons", dir, {}, {tsc});
    clock_gettime(CLOCK_MONOTONIC, &after_ts);
    REQUIRE(run.exit_code == 0);
    const uint64_t before = before_ts.tv_sec * 1000000000ull + before_ts.tv_nsec;
    const uint64_t after = after_ts.tv_sec * 1000000000ull + after_ts.tv_nsec;
    Trace t = LoadTrace(dir + "/trace");
    REQUIRE(t.complete);
    REQUIRE(t.events.size() >= 4000);
    CHECK(t.header.fields.start_monotonic_ns >= before);
    CHECK(t.header.fields.start_monotonic_ns <= after);
    uint32_t outside = 0;
    for (const Event& e : t.events) {
      // 1 ms of slack for the TSC clock's calibration error.
      if (e.timestamp_ns < t.header.fields.start_monotonic_ns || e.timestamp_ns > after + 1000000) {
        ++outside;
      }
    }
    CHECK(outside == 0);
    std::vector<Event> sorted = t.events;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Event& a, const Event& b) {
      return a.timestamp_ns < b.timestamp_ns;
    });
    std::set<uint64_t> live;
    int cross = 0;
    for (const Event& e : sorted) {
      if (e.op == EventOp::kAlloc && e.size == 12347) live.insert(e.address);
      if (e.op == EventOp::kFree && e.fn == static_cast<uint8_t>(FreeFn::kDelete) && live.erase(e.address) == 1) {
        ++cross;
      }
    }
    CHECK(cross == 2000);
  }
}

TEST_CASE("realloc growth, shrink, NULL, zero and failure", "[tracer]") {
  Traced r = RunWhole("tt_realloc");
  std::vector<Event> ev = EventsFrom(r.t, r.fns["tt_realloc_steps"]);
  // Expected, in order (a realloc record reads back as free + alloc):
  struct Want {
    EventOp op;
    uint8_t fn;
    bool from_realloc;
    uint64_t size;
  };
  const std::vector<Want> want = {
      {EventOp::kAlloc, A(AllocFn::kRealloc), false, 20000},   // realloc(NULL, 20000)
      {EventOp::kFree, F(FreeFn::kRealloc), true, 0},          // grow
      {EventOp::kAlloc, A(AllocFn::kRealloc), true, 400000},
      {EventOp::kFree, F(FreeFn::kRealloc), true, 0},          // shrink
      {EventOp::kAlloc, A(AllocFn::kRealloc), true, 100},
      {EventOp::kFree, F(FreeFn::kRealloc), false, 0},         // realloc(p, 0)
      {EventOp::kAlloc, A(AllocFn::kReallocArray), false, 20010},
      {EventOp::kFree, F(FreeFn::kRealloc), true, 0},
      {EventOp::kAlloc, A(AllocFn::kReallocArray), true, 40010},
      {EventOp::kFree, F(FreeFn::kFree), false, 0},
  };
  REQUIRE(ev.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("event " << i);
    CHECK(ev[i].op == want[i].op);
    CHECK(ev[i].fn == want[i].fn);
    CHECK(ev[i].from_realloc == want[i].from_realloc);
    if (want[i].op == EventOp::kAlloc) CHECK(ev[i].size == want[i].size);
  }
  // Addresses chain: each free half releases the block allocated before it.
  CHECK(ev[1].address == ev[0].address);
  CHECK(ev[3].address == ev[2].address);
  CHECK(ev[5].address == ev[4].address);
  CHECK(ev[7].address == ev[6].address);
  CHECK(ev[9].address == ev[8].address);
  // Ordering rule: the free half is stamped no later than the alloc half.
  CHECK(ev[1].timestamp_ns <= ev[2].timestamp_ns);
}

TEST_CASE("every allocation function and operator new/delete variant", "[tracer]") {
  Traced r = RunWhole("tt_all_functions");
  CHECK(r.run.out.find("result 0") != std::string::npos);
  std::vector<Event> all = EventsFrom(r.t, r.fns["tt_all_functions"]);
  // __cxa_end_catch frees the std::bad_alloc object through tail calls, so
  // that one free (of a block libstdc++ allocated) also has
  // tt_all_functions as its first frame. Set it aside.
  std::vector<Event> ev;
  std::vector<Event> unpaired;
  for (const Event& e : all) {
    if (e.op == EventOp::kFree && (ev.empty() || ev.back().op != EventOp::kAlloc ||
                                   ev.back().address != e.address)) {
      unpaired.push_back(e);
    } else {
      ev.push_back(e);
    }
  }
  REQUIRE(unpaired.size() == 1);
  CHECK(unpaired[0].fn == F(FreeFn::kFree));
  Counts c = Count(ev);
  CHECK(c.allocs == 22);
  CHECK(c.frees == 22);
  std::map<uint8_t, int> want_allocs = {
      {A(AllocFn::kMalloc), 1},       {A(AllocFn::kCalloc), 1},
      {A(AllocFn::kRealloc), 1},      {A(AllocFn::kReallocArray), 1},
      {A(AllocFn::kPosixMemalign), 1}, {A(AllocFn::kAlignedAlloc), 1},
      {A(AllocFn::kMemalign), 1},     {A(AllocFn::kValloc), 1},
      {A(AllocFn::kPvalloc), 1},      {A(AllocFn::kNew), 7},
      {A(AllocFn::kNewArray), 6},
  };
  CHECK(c.alloc_fns == want_allocs);
  std::map<uint8_t, int> want_frees = {
      {F(FreeFn::kFree), 9}, {F(FreeFn::kDelete), 7}, {F(FreeFn::kDeleteArray), 6}};
  CHECK(c.free_fns == want_frees);
  std::multiset<uint64_t> sizes;
  for (uint64_t s = 1001; s <= 1022; ++s) sizes.insert(s);
  CHECK(c.alloc_sizes == sizes);
  // Sized deletes carry their size; the others record 0.
  std::multiset<uint64_t> free_sizes;
  for (const Event& e : ev) {
    if (e.op == EventOp::kFree && e.size != 0) free_sizes.insert(e.size);
  }
  CHECK(free_sizes == std::multiset<uint64_t>{1011, 1014, 1017, 1020});
  // Each free releases the block allocated just before it.
  for (size_t i = 0; i + 1 < ev.size(); i += 2) {
    INFO("pair " << i / 2);
    CHECK(ev[i].op == EventOp::kAlloc);
    CHECK(ev[i + 1].op == EventOp::kFree);
    CHECK(ev[i + 1].address == ev[i].address);
  }
}

TEST_CASE("a program's own operator new/delete: libstdc++'s other operators still reach them",
          "[tracer]") {
  Traced r = RunWhole("tt_custom_operators");
  CHECK(r.run.out.find("result 0") != std::string::npos);
  Counts c = r.In("tt_custom_operators");
  // The program's own new is not interposed (its definition comes
  // first; the malloc inside it is recorded from its frame), so from
  // tt_custom_operators only the operators the program lacks are seen,
  // each once: new[], nothrow new, delete[], and the sized deletes of
  // `delete i` (4 bytes) and of the nothrow block.
  CHECK(c.alloc_fns == std::map<uint8_t, int>{{A(AllocFn::kNewArray), 1}, {A(AllocFn::kNew), 1}});
  CHECK(c.alloc_sizes == std::multiset<uint64_t>{2001, 2002});
  CHECK(c.free_fns == std::map<uint8_t, int>{{F(FreeFn::kDeleteArray), 1}, {F(FreeFn::kDelete), 2}});
}

TEST_CASE("calloc in a constructor function before main", "[tracer]") {
  Traced r = RunWhole("tt_ctor_calloc");
  CheckAllocs(r.In("tt_early_ctor"), AllocFn::kCalloc, 12345, 1);
  CheckFrees(r.In("tt_late_free"), FreeFn::kFree, 1);
}

void CheckFork(bool child_uses_exit) {
  std::string dir = MakeTempDir();
  RunResult run = RunTraced("tt_fork", dir, child_uses_exit ? std::vector<std::string>{"exit"}
                                                           : std::vector<std::string>{});
  REQUIRE(run.exit_code == 0);
  auto pos = run.out.find("child ");
  REQUIRE(pos != std::string::npos);
  uint32_t child_pid = std::stoul(run.out.substr(pos + 6));
  Trace parent = LoadTrace(dir + "/trace");
  Trace child = LoadTrace(dir + "/trace." + std::to_string(child_pid));
  REQUIRE(parent.complete);
  REQUIRE(child.complete);
  auto fns = ParseFunctions(run.out);
  Counts p_alloc = Count(EventsFrom(parent, fns["tt_parent_alloc"]));
  Counts p_child = Count(EventsFrom(parent, fns["tt_child_work"]));
  Counts c_alloc = Count(EventsFrom(child, fns["tt_parent_alloc"]));
  Counts c_child = Count(EventsFrom(child, fns["tt_child_work"]));
  CHECK(p_alloc.allocs == 16);
  CHECK(p_alloc.alloc_sizes.count(12345) == 11);
  CHECK(p_alloc.alloc_sizes.count(12347) == 5);
  CHECK(p_child.allocs + p_child.frees == 0);
  CHECK(c_alloc.allocs + c_alloc.frees == 0);  // the parent's events stay in the parent's file
  CHECK(c_child.allocs == 7);
  CHECK(c_child.frees == 7);
  CHECK(c_child.alloc_sizes.count(12346) == 7);
  CHECK(c_child.tids == std::set<uint32_t>{child_pid});
  CHECK(child.header.fields.pid == child_pid);
  CHECK(child.header.fields.ppid == parent.header.fields.pid);
  CHECK((child.header.fields.flags & format::kHeaderFlagForkChild) != 0);
  CHECK((parent.header.fields.flags & format::kHeaderFlagForkChild) == 0);
}

TEST_CASE("fork: the child writes its own trace (child leaves with _exit)", "[tracer]") {
  CheckFork(false);
}

TEST_CASE("fork: the child writes its own trace (child leaves with exit)", "[tracer]") {
  CheckFork(true);
}

TEST_CASE("a thread still running at exit has all its events in the trace", "[tracer]") {
  // Default buffers, and 16 KiB ones (many full chunks plus a partial one).
  for (const char* kb : {"128", "16"}) {
    INFO("CROSSFREE_BUFFER_KB=" << kb);
    Traced r = RunWhole("tt_running_thread", {}, {std::string("CROSSFREE_BUFFER_KB=") + kb});
    Trace& t = r.t;
    Counts c = r.In("tt_worker_loop");
    CHECK(c.allocs == 10000);
    CHECK(c.frees == 10000);
    REQUIRE(c.tids.size() == 1);
    uint32_t worker = *c.tids.begin();
    CHECK(worker != t.header.fields.pid);
    CHECK(t.thread_exits.count(worker) == 0);  // it never exited
    if (std::string(kb) == "16") CHECK(t.chunk_sequences[worker].size() >= 5);
  }
}

TEST_CASE("a thread that only frees gets no allocation from the tracer", "[tracer]") {
  // The tracer's first stack capture on a thread reads the thread's stack
  // bounds (pthread_getattr_np allocates): those blocks must not come from
  // the program's allocator, where they would, under jemalloc, give the
  // thread a tcache it would not have had; nor must libdw's, when the
  // hybrid unwinder first reads a function's CFI on that thread. Two
  // free-only threads, one after the other.
  for (const char* unwind : {"fp", "hybrid", "libunwind"}) {
    INFO("CROSSFREE_UNWIND=" << unwind);
    Traced r = RunWhole("tt_free_only_thread", {}, {std::string("CROSSFREE_UNWIND=") + unwind},
                        TargetPath("tt_count_calls_preload.so"));
    const std::string& out = r.run.out;
    std::vector<std::string> counts;
    for (size_t at = 0; (at = out.find("thread allocations: ", at)) != std::string::npos;) {
      at += 20;
      counts.push_back(out.substr(at, out.find('\n', at) - at));
    }
    REQUIRE(counts.size() == 2);
    CHECK(counts[0] == "0");
    CHECK(counts[1] == "0");
    CHECK(r.In("tt_alloc_block").allocs == 2000);
    Counts frees = r.In("tt_free_block");
    CHECK(frees.frees == 2000);
    CHECK(frees.tids.size() == 2);
    CHECK(frees.tids.count(r.t.header.fields.pid) == 0);
  }
}

TEST_CASE("200 short-lived threads reuse thread buffers", "[tracer]") {
  Traced r = RunWhole("tt_threads", {}, {"CROSSFREE_VERBOSE=1"});
  Counts c = r.In("tt_thread_work");
  CHECK(c.allocs == 2000);
  CHECK(c.frees == 2000);
  CHECK(c.tids.size() == 200);
  for (uint32_t tid : c.tids) CHECK(r.t.thread_exits.count(tid) == 1);
  // At most two threads were ever alive at once: main and one worker.
  CHECK(r.run.err.find("from 2 thread buffers") != std::string::npos);
  CHECK(CountLines(r.run.err) == 1);
}

TEST_CASE("exit while 8 threads allocate: complete, nothing cut or doubled", "[tracer]") {
  Traced r = RunWhole("tt_threads", {"stress"});
  Trace& t = r.t;
  std::map<uint32_t, std::vector<Event>> per_thread;
  for (const Event& e : EventsFrom(t, r.fns["tt_stress_loop"])) per_thread[e.tid].push_back(e);
  CHECK(per_thread.size() == 8);
  for (const auto& [tid, events] : per_thread) {
    INFO("tid " << tid);
    CHECK(events.size() >= 40002);  // main exits after each thread's 20001st pair
    // Each thread's events alternate malloc(12345) / free of that block.
    bool alternate = true;
    for (size_t i = 0; i < events.size(); ++i) {
      bool want_alloc = i % 2 == 0;
      alternate &= (events[i].op == EventOp::kAlloc) == want_alloc;
      if (!want_alloc) alternate &= events[i].address == events[i - 1].address;
    }
    CHECK(alternate);
    // Chunks numbered 0, 1, 2... once each.
    const std::vector<uint32_t>& seqs = t.chunk_sequences[tid];
    bool contiguous = true;
    for (size_t i = 0; i < seqs.size(); ++i) contiguous &= seqs[i] == i;
    CHECK(contiguous);
  }
}

TEST_CASE("exec: the old image's events are written before exec", "[tracer]") {
  std::string dir = MakeTempDir();
  RunResult run = Run({"/bin/bash", "-c", "x=$(echo hi); exec " + TargetPath("tt_churn")},
                      {"CROSSFREE_OUTPUT=" + dir + "/trace"}, CROSSFREE_TRACER_LIB);
  REQUIRE(run.exit_code == 0);
  Trace shell = LoadTrace(dir + "/trace");
  Trace churn = LoadTrace(dir + "/trace.1");  // same pid after exec
  REQUIRE(shell.complete);
  REQUIRE(churn.complete);
  CHECK(shell.header.exe_path.find("bash") != std::string::npos);
  CHECK(!shell.events.empty());
  CHECK(churn.header.fields.pid == shell.header.fields.pid);
  CheckChurn(churn, run);
}

TEST_CASE("vfork children leaving with _exit do not stop the parent's trace", "[tracer]") {
  Traced r = RunWhole("tt_vfork", {}, {"CROSSFREE_VERBOSE=1"});
  Counts c = r.In("tt_after_vfork");
  CHECK(c.allocs == 3);
  CHECK(c.frees == 3);
  CHECK(CountLines(r.run.err) == 1);  // one exit summary: the parent's
}

TEST_CASE("a library loaded with dlopen gets a module record", "[tracer]") {
  Traced r = RunWhole("tt_dlopen");
  const Trace& t = r.t;
  int libz = 0;
  for (const auto& m : t.modules) {
    if (m.path.find("libz.so") != std::string::npos) {
      ++libz;
      CHECK(!m.segments.empty());
      CHECK(!m.build_id.empty());
    }
  }
  CHECK(libz == 1);
  // Every module appears once.
  std::set<std::string> paths;
  for (const auto& m : t.modules) CHECK(paths.insert(m.path + "@" + std::to_string(m.load_bias)).second);
}

TEST_CASE("a C program without libstdc++", "[tracer]") {
  Traced traced = RunWhole("tt_c");
  CHECK(traced.run.err.empty());
  bool has_libstdcxx = false;
  for (const auto& m : traced.t.modules) has_libstdcxx |= m.path.find("libstdc++") != std::string::npos;
  CHECK(!has_libstdcxx);
  CheckAllocs(traced.In("tt_c_alloc"), AllocFn::kMalloc, 12345, 100);
  CheckAllocs(traced.In("tt_c_calloc"), AllocFn::kCalloc, 12346, 100);
  Counts r = traced.In("tt_c_realloc");
  CHECK(r.allocs == 100);
  CHECK(r.frees == 100);  // realloc events: free half + alloc half
  CHECK(r.alloc_sizes.count(12347) == 100);
  CheckFrees(traced.In("tt_c_free"), FreeFn::kFree, 200);
}

TEST_CASE("system binaries (/bin/sh, /bin/ls) run traced", "[tracer]") {
  std::string dir = MakeTempDir();
  RunResult plain = Run({"/bin/ls", "-la", "/"}, {}, "");
  RunResult traced = Run({"/bin/ls", "-la", "/"}, {"CROSSFREE_OUTPUT=" + dir + "/ls.trace"},
                         CROSSFREE_TRACER_LIB);
  CHECK(traced.exit_code == plain.exit_code);
  CHECK(traced.err.empty());
  Trace t = LoadTrace(dir + "/ls.trace");
  REQUIRE(t.complete);
  CHECK(!t.events.empty());
  RunResult sh = Run({"/bin/sh", "-c", "echo hi; exit 3"}, {"CROSSFREE_OUTPUT=" + dir + "/sh.trace"},
                     CROSSFREE_TRACER_LIB);
  CHECK(sh.exit_code == 3);
  CHECK(sh.out == "hi\n");
  CHECK(LoadTrace(dir + "/sh.trace").complete);
}

TEST_CASE("unwritable output: one stderr line, the target runs unchanged", "[tracer]") {
  std::string dir = MakeTempDir();
  RunResult plain = Run({TargetPath("tt_churn")}, {}, "");
  RunResult run = RunTraced("tt_churn", dir, {},
                            {"CROSSFREE_OUTPUT=" + dir + "/no/such/dir/trace"});
  CHECK(run.exit_code == 0);
  CHECK(CountLines(run.err) == 1);
  CHECK(run.err.find("cannot open trace file") != std::string::npos);
  // Same output apart from the function addresses (ASLR).
  CHECK(run.out.substr(run.out.find("result")) == plain.out.substr(plain.out.find("result")));
}

#if CROSSFREE_HAVE_TCMALLOC_STATIC
// tt_churn linked with libtcmalloc.a, 300 mallocs and 200 news
// (tests/tracer/CMakeLists.txt).
void CheckStaticTcmalloc(const std::string& target) {
  Traced r = RunWhole(target);
  CHECK(r.run.err.empty());
  CHECK((r.t.header.fields.flags & format::kHeaderFlagMallocHook) != 0);
  // Seen once each (never twice), through MallocHook, with the tt_ function
  // as frames[0] (tcmalloc's own frames skipped).
  CheckChurn(r.t, r.run,
             {.mallocs = 300, .news = 200, .malloc_fn = AllocFn::kMallocHook,
              .free_fn = FreeFn::kMallocHook, .new_fn = AllocFn::kMallocHook,
              .delete_fn = FreeFn::kMallocHook});
}

TEST_CASE("static tcmalloc with the MallocHook API exported", "[tracer]") {
  CheckStaticTcmalloc("tt_tcmalloc_exported");
}

TEST_CASE("static tcmalloc with the MallocHook API only in .symtab", "[tracer]") {
  CheckStaticTcmalloc("tt_tcmalloc_symtab");
}

TEST_CASE("static tcmalloc, stripped: one line on how to relink", "[tracer]") {
  std::string dir = MakeTempDir();
  std::string stripped = dir + "/tt_tcmalloc_stripped";
  REQUIRE(Run({"strip", "-o", stripped, TargetPath("tt_tcmalloc_symtab")}, {}, "").exit_code == 0);
  RunResult run = Run({stripped}, {"CROSSFREE_OUTPUT=" + dir + "/trace"}, CROSSFREE_TRACER_LIB);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("result 500") != std::string::npos);
  CHECK(CountLines(run.err) == 1);
  CHECK(run.err.find("--export-dynamic-symbol=MallocHook_AddNewHook") != std::string::npos);
  Trace t = LoadTrace(dir + "/trace");
  CHECK(t.complete);
  CHECK((t.header.fields.flags & format::kHeaderFlagMallocHook) == 0);
}
#endif

TEST_CASE("crossfree record: traces, children, exit status", "[tracer]") {
  std::string dir = MakeTempDir();
  std::string out = dir + "/rec.trace";
  RunResult run = Run({CROSSFREE_CLI, "record", "-o", out, "--", TargetPath("tt_fork")}, {}, "");
  REQUIRE(run.exit_code == 0);
  auto pos = run.out.find("child ");
  REQUIRE(pos != std::string::npos);
  std::string child_pid = std::to_string(std::stoul(run.out.substr(pos + 6)));
  CHECK(Exists(out));
  CHECK(Exists(out + "." + child_pid));
  CHECK(run.err.find(": " + out + " (pid ") != std::string::npos);
  CHECK(run.err.find(out + "." + child_pid + " (pid " + child_pid + ", fork child)") !=
        std::string::npos);
  CHECK(run.err.find("main trace " + out) != std::string::npos);
  Trace t = LoadTrace(out);
  REQUIRE(t.complete);
  CHECK(t.header.fields.unwinder == format::Unwinder::kHybrid);
  CHECK(t.header.fields.max_depth == 32);

  RunResult status = Run({CROSSFREE_CLI, "record", "-o", dir + "/s.trace", "--no-stacks", "--",
                          "/bin/sh", "-c", "exit 7"},
                         {}, "");
  CHECK(status.exit_code == 7);
  Trace s = LoadTrace(dir + "/s.trace");
  CHECK(s.complete);
  CHECK(s.header.fields.unwinder == format::Unwinder::kNone);
  CHECK(s.stacks.empty());

  RunResult killed = Run({CROSSFREE_CLI, "record", "-o", dir + "/k.trace", "--unwind", "fp",
                          "--depth", "8", "--", "/bin/sh", "-c", "kill -9 $$"},
                         {}, "");
  CHECK(killed.exit_code == 128 + 9);
  RunResult depth = Run({CROSSFREE_CLI, "record", "-o", dir + "/d.trace", "--unwind", "fp",
                         "--depth", "8", "--", TargetPath("tt_churn")},
                        {}, "");
  CHECK(depth.exit_code == 0);
  Trace d = LoadTrace(dir + "/d.trace");
  REQUIRE(d.complete);
  CHECK(d.header.fields.unwinder == format::Unwinder::kFramePointer);
  CHECK(d.header.fields.max_depth == 8);
  size_t deepest = 0;
  for (const auto& [id, frames] : d.stacks) deepest = std::max(deepest, frames.size());
  CHECK(deepest <= 8);
}

}  // namespace
}  // namespace crossfree::tracer_test
