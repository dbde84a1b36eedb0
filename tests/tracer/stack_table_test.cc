// SPDX-License-Identifier: Apache-2.0
// Tests for StackTable / InternStack: ids, deduplication, races, overflow.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "format/trace_format.h"
#include "tracer/stack_table.h"
#include "tracer/stacks.h"

namespace crossfree::tracer {
namespace {

std::vector<uint64_t> MakeStack(uint64_t seed, int depth) {
  std::vector<uint64_t> frames;
  for (int i = 0; i < depth; ++i) frames.push_back(0x400000 + seed * 4096 + i * 16);
  return frames;
}

TEST_CASE("ParseUnwindMode accepts exactly fp, libunwind, hybrid") {
  UnwindMode mode = UnwindMode::kHybrid;
  CHECK(ParseUnwindMode("fp", &mode));
  CHECK(mode == UnwindMode::kFramePointer);
  CHECK(ParseUnwindMode("libunwind", &mode));
  CHECK(mode == UnwindMode::kLibunwind);
  CHECK(ParseUnwindMode("hybrid", &mode));
  CHECK(mode == UnwindMode::kHybrid);
  mode = UnwindMode::kLibunwind;
  for (const char* bad : {"", "FP", "dwarf", "hybrid ", "fp2"}) {
    CHECK_FALSE(ParseUnwindMode(bad, &mode));
  }
  CHECK_FALSE(ParseUnwindMode(nullptr, &mode));
  CHECK(mode == UnwindMode::kLibunwind);  // untouched on failure
}

TEST_CASE("StackTable gives the same id to the same stack and dense ids from 1") {
  StackTable table;
  REQUIRE(table.Init(100, 10000));
  const auto a = MakeStack(1, 5);
  const auto b = MakeStack(2, 5);
  const auto a_prefix = MakeStack(1, 4);
  // Interned in this order: the id Intern gives and whether it was new.
  struct Step {
    const char* what;
    const std::vector<uint64_t>* frames;
    int depth;
    uint32_t id;
    bool is_new;
  };
  const Step steps[] = {
      {"a", &a, 5, 1, true},
      {"b", &b, 5, 2, true},
      {"a's first 4 frames: a prefix is a different stack", &a_prefix, 4, 3, true},
      {"a again", &a, 5, 1, false},
      {"b again", &b, 5, 2, false},
  };
  bool is_new = false;
  for (const Step& step : steps) {
    INFO(step.what);
    CHECK(table.Intern(step.frames->data(), step.depth, &is_new) == step.id);
    CHECK(is_new == step.is_new);
  }
  CHECK(table.Count() == 3);
  CHECK(table.Intern(a.data(), 0, &is_new) == format::kNoStack);
  CHECK_FALSE(is_new);

  uint64_t out[8] = {};
  REQUIRE(table.Lookup(2, out, 8) == 5);
  CHECK(std::equal(b.begin(), b.end(), out));
  CHECK(table.Lookup(4, out, 8) == 0);
  CHECK(table.Lookup(0, out, 8) == 0);
  CHECK(table.Dropped() == 0);
  table.Release();
}

TEST_CASE("StackTable returns kNoStack when full and counts the drops") {
  SECTION("out of ids") {
    StackTable table;
    REQUIRE(table.Init(3, 1000));
    bool is_new = false;
    for (uint64_t i = 0; i < 3; ++i) {
      auto s = MakeStack(i, 4);
      CHECK(table.Intern(s.data(), 4, &is_new) == i + 1);
    }
    auto extra = MakeStack(99, 4);
    CHECK(table.Intern(extra.data(), 4, &is_new) == format::kNoStack);
    CHECK_FALSE(is_new);
    CHECK(table.Intern(extra.data(), 4, &is_new) == format::kNoStack);
    CHECK(table.Dropped() == 2);
    CHECK(table.Count() == 3);
    auto first = MakeStack(0, 4);  // existing stacks still resolve
    CHECK(table.Intern(first.data(), 4, &is_new) == 1);
    CHECK_FALSE(is_new);
  }
  SECTION("out of frame storage") {
    StackTable table;
    REQUIRE(table.Init(100, 10));
    bool is_new = false;
    auto s1 = MakeStack(1, 6);
    auto s2 = MakeStack(2, 6);
    CHECK(table.Intern(s1.data(), 6, &is_new) == 1);
    CHECK(table.Intern(s2.data(), 6, &is_new) == format::kNoStack);
    CHECK(table.Dropped() == 1);
    CHECK(table.Count() == 1);
  }
}

TEST_CASE("StackTable: exactly one racing thread gets is_new per stack") {
  constexpr int kThreads = 4;
  constexpr int kStacks = 2000;
  StackTable table;
  REQUIRE(table.Init(kStacks, kStacks * 8));
  std::vector<std::vector<uint64_t>> stacks;
  for (int i = 0; i < kStacks; ++i) stacks.push_back(MakeStack(i, 1 + i % 7));
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStacks));
  std::vector<std::vector<char>> fresh(kThreads, std::vector<char>(kStacks));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      // Half the threads walk forwards and half backwards, so they collide
      // on the same stacks both at once and at different times.
      for (int n = 0; n < kStacks; ++n) {
        int i = t % 2 == 0 ? n : kStacks - 1 - n;
        bool is_new = false;
        ids[t][i] = table.Intern(stacks[i].data(), static_cast<int>(stacks[i].size()), &is_new);
        fresh[t][i] = is_new;
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint32_t> distinct;
  for (int i = 0; i < kStacks; ++i) {
    int new_count = 0;
    for (int t = 0; t < kThreads; ++t) {
      new_count += fresh[t][i];
      CHECK(ids[t][i] == ids[0][i]);
    }
    CHECK(new_count == 1);
    distinct.insert(ids[0][i]);
  }
  CHECK(distinct.size() == kStacks);
  CHECK(*distinct.begin() == 1);
  CHECK(*distinct.rbegin() == kStacks);
  CHECK(table.Count() == kStacks);
  CHECK(table.Dropped() == 0);
  table.Release();
}

TEST_CASE("InternStack uses one process-wide table") {
  REQUIRE(InitStacks(UnwindMode::kFramePointer, 64));
  auto s = MakeStack(0xabcdef, 9);
  bool is_new = false;
  uint32_t before = InternedStackCount();
  uint32_t id = InternStack(s.data(), 9, &is_new);
  CHECK(id != format::kNoStack);
  CHECK(is_new);
  CHECK(InternedStackCount() == before + 1);
  uint32_t again = 0;
  std::thread other([&] {
    bool other_new = true;
    again = InternStack(s.data(), 9, &other_new);
    CHECK_FALSE(other_new);
  });
  other.join();
  CHECK(again == id);
  CHECK(InternStack(s.data(), 0, &is_new) == format::kNoStack);
  CHECK(DroppedStackCount() == 0);
}

}  // namespace
}  // namespace crossfree::tracer
