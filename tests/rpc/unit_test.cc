// SPDX-License-Identifier: Apache-2.0
// Unit tests of the RPC core's building blocks: Status, InlineFunction,
// AllocPattern, frame serialization (with random input), sidecar splitting,
// Log2Histogram, CallIdMap, Sockaddr, InboundTransfer growth and its memory
// budget, DeferredPool, CROSSFREE_DCHECK.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/alloc_pattern.h"
#include "rpc/call_id_map.h"
#include "rpc/dcheck.h"
#include "rpc/deferred_pool.h"
#include "rpc/futex_mutex.h"
#include "rpc/memory_budget.h"
#include "rpc/sockaddr.h"
#include "rpc/transfer.h"
#include "rpc/histogram.h"
#include "rpc/inline_function.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"
#include "rpc/status.h"

namespace crossfree::rpc {
namespace {

TEST_CASE("Status carries code, message and errno", "[rpc][unit]") {
  CHECK(Status::OK().ok());
  CHECK(Status::OK().ToString() == "OK");
  Status s = Status::NetworkError("recv got EOF", 108);
  CHECK(s.IsNetworkError());
  CHECK(s.posix_code() == 108);
  CHECK(s.ToString() == "Network error: recv got EOF (error 108: Cannot send after transport "
                        "endpoint shutdown)");
  Status p = Status::TimedOut("late").CloneAndPrepend("Add");
  CHECK(p.IsTimedOut());
  CHECK(p.message() == "Add: late");
  // OK is a null state: empty message, no errno; copies of an error own
  // their own state, moves leave OK behind.
  CHECK(Status::OK().message().empty());
  CHECK(Status::OK().posix_code() == 0);
  CHECK(Status::OK().code() == Status::Code::kOk);
  Status copy = s;
  CHECK(copy.IsNetworkError());
  CHECK(copy.message() == s.message());
  CHECK(&copy.message() != &s.message());
  Status moved = std::move(copy);
  CHECK(moved.posix_code() == 108);
  CHECK(copy.ok());  // NOLINT(bugprone-use-after-move): a moved-from Status is OK
  moved = Status::OK();
  CHECK(moved.ok());
  moved = s;
  CHECK(moved.ToString() == s.ToString());
  const Status& same = moved;
  moved = same;  // self-assignment keeps the error
  CHECK(moved.IsNetworkError());
}

TEST_CASE("FutexMutex excludes: contended increments are all counted", "[rpc][unit]") {
  FutexMutex mu;
  uint64_t counter = 0;  // guarded by mu
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        std::lock_guard<FutexMutex> l(mu);
        ++counter;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(counter == uint64_t{kThreads} * kPerThread);
  CHECK(mu.try_lock());
  CHECK_FALSE(mu.try_lock());
  mu.unlock();
}

TEST_CASE("InlineFunction holds move-only captures inline and destroys them once",
          "[rpc][unit]") {
  auto counter = std::make_shared<int>(0);
  {
    auto owned = std::make_unique<int>(41);
    InlineFunction<int(int), 48> f([p = std::move(owned), counter](int add) {
      ++*counter;
      return *p + add;
    });
    CHECK(counter.use_count() == 2);
    InlineFunction<int(int), 48> g = std::move(f);
    CHECK_FALSE(static_cast<bool>(f));
    REQUIRE(static_cast<bool>(g));
    CHECK(g(1) == 42);
    CHECK(*counter == 1);
    g.Reset();
    CHECK(counter.use_count() == 1);  // the capture died on Reset
  }
  CHECK(counter.use_count() == 1);
  // A capture larger than the storage does not compile (static_assert); see
  // tests/rpc/inline_function_too_large.cc, run by ctest as a must-fail build.
}

TEST_CASE("AllocPattern names", "[rpc][unit]") {
  AllocPattern p;
  REQUIRE(AllocPattern::FromName("legacy", &p).ok());
  CHECK(p.ToString() == "legacy");
  REQUIRE(AllocPattern::FromName("fixed", &p).ok());
  CHECK(p.ToString() == "fixed");
  p.legacy_messages = true;
  p.legacy_call_response = true;
  CHECK(p.ToString() == "legacy_call_response,legacy_messages");
  Status s = AllocPattern::FromName("old", &p);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "unknown alloc pattern 'old' (expected fixed or legacy)");
}

TEST_CASE("connection header: magic, version and reserved bytes are checked", "[rpc][unit]") {
  uint8_t h[kConnHeaderLength];
  WriteConnHeader(h);
  CHECK(std::string(reinterpret_cast<char*>(h), 8) == std::string("cfrp\x01\0\0\0", 8));
  CHECK(ValidateConnHeader(h).ok());
  h[7] = 0x80;
  CHECK(ValidateConnHeader(h).message() ==
        "connection header reserved bytes must be zero, got 00 00 80");
  h[7] = 0;
  h[4] = 2;
  CHECK(ValidateConnHeader(h).message() ==
        "unsupported RPC version 2 (this build speaks version 1)");
  memcpy(h, "GET ", 4);
  CHECK(ValidateConnHeader(h).message() ==
        "bad connection header magic: got 47 45 54 20, expected 63 66 72 70 (\"cfrp\")");
}

TEST_CASE("connection header: received in pieces, checked once whole", "[rpc][unit]") {
  uint8_t stream[kConnHeaderLength + 3];
  WriteConnHeader(stream);
  stream[8] = stream[9] = stream[10] = 0xaa;  // the first frame's bytes
  ConnHeaderReceiver r;
  size_t used = 0;
  // One byte, then the rest with the frame behind it: only the header's
  // bytes are taken.
  CHECK(r.Consume(stream, 1, &used).ok());
  CHECK(used == 1);
  CHECK(!r.complete());
  CHECK(r.Consume(stream + 1, sizeof(stream) - 1, &used).ok());
  CHECK(used == kConnHeaderLength - 1);
  CHECK(r.complete());
  CHECK(r.Consume(stream + 8, 3, &used).ok());  // complete: takes nothing
  CHECK(used == 0);

  ConnHeaderReceiver bad;
  uint8_t h[kConnHeaderLength];
  WriteConnHeader(h);
  h[4] = 9;
  for (size_t i = 0; i + 1 < kConnHeaderLength; ++i) {
    CHECK(bad.Consume(h + i, 1, &used).ok());  // not whole yet: nothing to say
  }
  Status s = bad.Consume(h + kConnHeaderLength - 1, 1, &used);
  CHECK(s.message() == "unsupported RPC version 9 (this build speaks version 1)");
}

TEST_CASE("a frame round-trips and bad frames are Corruption", "[rpc][unit]") {
  ResponseHeader h;
  h.set_call_id(7);
  h.add_sidecar_offsets(3);
  h.add_sidecar_offsets(5);
  const std::string body = "abc";
  const std::string sidecars = "DEfgh";
  FrameLayout l = ComputeFrameLayout(h, body.size(), sidecars.size());
  std::string frame(l.head_bytes, '\0');
  SerializeFrameHeader(l, h, reinterpret_cast<uint8_t*>(frame.data()));
  frame += body + sidecars;
  REQUIRE(frame.size() == l.total);
  CHECK(DecodeBigEndian32(reinterpret_cast<const uint8_t*>(frame.data())) == l.total - 4);

  ResponseHeader parsed;
  std::string_view rest;
  REQUIRE(ParseFrame(std::string_view(frame).substr(4), &parsed, &rest).ok());
  CHECK(parsed.call_id() == 7);
  std::string_view pb;
  std::vector<std::string_view> sc;
  REQUIRE(SplitSidecars(rest, parsed.sidecar_offsets(), &pb, &sc, kMaxSidecars).ok());
  CHECK(pb == "abc");
  REQUIRE(sc.size() == 2);
  CHECK(sc[0] == "DE");
  CHECK(sc[1] == "fgh");

  SECTION("trailing bytes") {
    std::string bad = frame.substr(4) + "x";
    Status s = ParseFrame(bad, &parsed, &rest);
    CHECK(s.IsCorruption());
    CHECK(s.message() == "invalid frame: body length 8 but 9 bytes remain");
  }
  SECTION("truncated header") {
    Status s = ParseFrame(std::string_view(frame).substr(4, 3), &parsed, &rest);
    CHECK(s.IsCorruption());
    CHECK(s.message().find("header length") != std::string::npos);
  }
  SECTION("sidecar limits") {
    google::protobuf::RepeatedField<uint32_t> offs;
    offs.Add(1);
    offs.Add(2);
    offs.Add(3);
    CHECK(SplitSidecars("abcdef", offs, &pb, &sc, 2).message() == "too many sidecars: 3 (limit 2)");
    offs.Set(1, 0);
    CHECK(SplitSidecars("abcdef", offs, &pb, &sc, 10).message() ==
          "sidecar offsets decrease: 1 then 0");
  }
}

TEST_CASE("random bytes never crash the frame parser", "[rpc][unit]") {
  std::mt19937_64 next(88172645463325252ull);  // fixed seed: every run sees the same inputs
  // A valid request frame (after its length prefix) with sidecars, to mutate.
  RequestHeader valid;
  valid.set_call_id(9);
  valid.mutable_remote_method()->set_service_name("s");
  valid.mutable_remote_method()->set_method_name("m");
  valid.add_sidecar_offsets(2);
  valid.add_sidecar_offsets(4);
  FrameLayout l = ComputeFrameLayout(valid, 2, 4);
  std::string good(l.head_bytes, '\0');
  SerializeFrameHeader(l, valid, reinterpret_cast<uint8_t*>(good.data()));
  good = good.substr(4) + "bbSSss";
  {
    // The undamaged frame parses, and its sidecars are where they were put.
    RequestHeader h;
    std::string_view body, pb;
    std::vector<std::string_view> sc;
    REQUIRE(ParseFrame(good, &h, &body).ok());
    REQUIRE(SplitSidecars(body, h.sidecar_offsets(), &pb, &sc, kMaxSidecars).ok());
    CHECK(pb == "bb");
    REQUIRE(sc.size() == 2);
    CHECK(sc[0] == "SS");
    CHECK(sc[1] == "ss");
  }
  int ok = 0, corrupt = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string buf;
    if (i % 2 == 0) {
      // Random bytes.
      buf.assign(next() % 64, '\0');
      for (char& c : buf) c = static_cast<char>(next());
    } else {
      // The valid frame with one to three bytes changed.
      buf = good;
      for (uint64_t k = 0, n = 1 + next() % 3; k < n; ++k) {
        buf[next() % buf.size()] = static_cast<char>(next());
      }
    }
    RequestHeader h;
    std::string_view body;
    Status s = ParseFrame(buf, &h, &body);
    if (s.ok()) {
      std::string_view pb;
      std::vector<std::string_view> sc;
      // An accepted frame's body, and every slice of it, lies inside the
      // bytes received: nothing is read beyond them.
      const char* lo = buf.data();
      const char* hi = buf.data() + buf.size();
      CHECK((body.data() >= lo && body.data() + body.size() <= hi));
      Status t = SplitSidecars(body, h.sidecar_offsets(), &pb, &sc, kMaxSidecars);
      REQUIRE((t.ok() || t.IsCorruption()));
      if (t.ok()) {
        CHECK((pb.data() >= lo && pb.data() + pb.size() <= hi));
        for (std::string_view v : sc) CHECK((v.data() >= lo && v.data() + v.size() <= hi));
      }
      ++ok;
    } else {
      REQUIRE(s.IsCorruption());
      ++corrupt;
    }
  }
  CHECK(ok > 0);
  CHECK(corrupt > 0);
}

TEST_CASE("CallIdMap matches std::map under random insert/erase, growth and wrap-around ids",
          "[rpc][unit]") {
  CallIdMap<int> m;
  std::map<int32_t, int*> ref;
  std::vector<int> values(64);
  std::mt19937 rng(7);
  for (int step = 0; step < 200000; ++step) {
    // Ids cluster like call ids (sequential, around INT32_MAX -> 0 wrap) plus a few random ones.
    int32_t id = (step % 3 == 0) ? static_cast<int32_t>(rng())
                                 : static_cast<int32_t>(INT32_MAX - 300 + rng() % 600);
    int* v = &values[rng() % values.size()];
    switch (rng() % 3) {
      case 0:
      case 1: {
        bool fresh = ref.emplace(id, v).second;
        REQUIRE(m.Insert(id, v) == fresh);
        break;
      }
      default:
        REQUIRE(m.Erase(id) == (ref.erase(id) == 1));
    }
    if (step % 20000 == 0) {
      REQUIRE(m.size() == ref.size());
      for (auto& [k, val] : ref) REQUIRE(m.Find(k) == val);
    }
  }
  std::map<int32_t, int*> seen;
  m.ForEach([&seen](int32_t id, int* v) { seen[id] = v; });
  CHECK(seen == ref);
  CallIdMap<int> other;
  other.Swap(m);
  CHECK(m.empty());
  CHECK(other.size() == ref.size());
  CHECK(other.Find(ref.begin()->first) == ref.begin()->second);
}

TEST_CASE("Log2Histogram buckets and percentiles", "[rpc][unit]") {
  Log2Histogram h;
  for (int i = 0; i < 90; ++i) h.Record(3);    // bucket [2, 4)
  for (int i = 0; i < 10; ++i) h.Record(100);  // bucket [64, 128)
  CHECK(h.count() == 100);
  CHECK(h.max() == 100);
  CHECK(h.mean() == Approx(12.7));
  CHECK(h.PercentileUpperBound(50) == 3);
  CHECK(h.PercentileUpperBound(99) == 127);
  CHECK(h.ToString("us").find("[2, 4)us 90") != std::string::npos);
}

TEST_CASE("Sockaddr parses and prints IPv4 and IPv6", "[rpc][unit]") {
  Sockaddr a;
  REQUIRE(Sockaddr::Parse("127.0.0.1", 80, &a).ok());
  CHECK(a.ToString() == "127.0.0.1:80");
  CHECK_FALSE(a.is_ipv6());
  Sockaddr b;
  REQUIRE(Sockaddr::ParseHostPort("[::1]:8080", &b).ok());
  CHECK(b.is_ipv6());
  CHECK(b.ToString() == "[::1]:8080");
  CHECK(b.HostToString() == "::1");
  Sockaddr c;
  REQUIRE(Sockaddr::Parse("[::1]", 8080, &c).ok());
  CHECK(b == c);
  CHECK(b.Hash() == c.Hash());
  c.set_port(8081);
  CHECK(b != c);
  CHECK(a != b);
  CHECK_FALSE(Sockaddr::Parse("localhost", 1, &a).ok());
  CHECK_FALSE(Sockaddr::ParseHostPort("::1:80", &a).ok());  // IPv6 needs brackets
  CHECK_FALSE(Sockaddr::ParseHostPort("1.2.3.4:99999", &a).ok());
  CHECK_FALSE(Sockaddr::ParseHostPort("1.2.3.4", &a).ok());
}

std::string Prefix(uint32_t length) {
  uint8_t b[4];
  EncodeBigEndian32(length, b);
  return std::string(reinterpret_cast<char*>(b), 4);
}

TEST_CASE("InboundTransfer grows with the bytes that arrive, not with the length prefix",
          "[rpc][unit]") {
  MemoryBudget budget(0);  // unlimited, but counting
  {
    InboundTransfer t(64 * 1024 * 1024, &budget);
    const uint32_t len = 50 * 1024 * 1024;
    std::string p = Prefix(len);
    size_t used = 0;
    REQUIRE(t.Consume(reinterpret_cast<const uint8_t*>(p.data()), 4, &used).ok());
    CHECK(used == 4);
    CHECK(t.buffer_capacity() == 0);  // the announced 50 MiB cost nothing
    CHECK(budget.used() == 0);
    std::string chunk(1000, 'x');
    size_t received = 0;
    while (received < 3 * 1024 * 1024) {
      REQUIRE(t.Consume(reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size(), &used).ok());
      REQUIRE(used == chunk.size());
      received += used;
      // Doubling: never more than twice what arrived (or the 256-byte start).
      REQUIRE(t.buffer_capacity() <= std::max<size_t>(2 * received, 256));
    }
    CHECK(budget.used() == t.buffer_capacity());
    uint8_t* dst = nullptr;
    size_t room = t.PrepareDirectRead(64 * 1024, &dst);
    CHECK(room > 0);
    CHECK(t.buffer_capacity() <= 2 * (received + 64 * 1024));
    CHECK_FALSE(t.complete());
  }
  CHECK(budget.used() == 0);  // released with the buffer
}

TEST_CASE("InboundTransfer stops at the memory budget and resumes when it has room",
          "[rpc][unit]") {
  MemoryBudget budget(16384);
  budget.ForceCharge(12288);  // someone else's buffers: 4096 bytes are left
  InboundTransfer t(1024 * 1024, &budget);
  std::string frame = Prefix(10000) + std::string(10000, 'y');
  const uint8_t* data = reinterpret_cast<const uint8_t*>(frame.data());
  size_t off = 0, used = 0;
  // 1000 bytes at a time, as reads deliver them.
  auto feed = [&] {
    while (off < frame.size()) {
      size_t n = std::min<size_t>(1000, frame.size() - off);
      REQUIRE(t.Consume(data + off, n, &used).ok());
      off += used;
      if (t.blocked_on_memory()) return;
    }
  };
  feed();
  CHECK(t.blocked_on_memory());
  CHECK_FALSE(t.complete());
  CHECK(off < frame.size());
  CHECK(t.buffer_capacity() <= 4096);
  CHECK(budget.used() <= 16384);
  budget.Release(12288);  // the other buffers are freed
  feed();
  CHECK_FALSE(t.blocked_on_memory());
  REQUIRE(t.complete());
  CHECK(t.frame() == std::string(10000, 'y'));
  CHECK(t.buffer_capacity() == 10000);  // capped at the frame length
  CHECK(budget.used() == 10000);
}

TEST_CASE("MemoryBudget refuses beyond its limit and counts forced charges", "[rpc][unit]") {
  MemoryBudget b(100);
  CHECK(b.TryCharge(60));
  CHECK_FALSE(b.TryCharge(41));
  CHECK(b.TryCharge(40));
  CHECK(b.exhausted());
  b.ForceCharge(50);
  CHECK(b.used() == 150);
  b.Release(150);
  CHECK(b.used() == 0);
  CHECK_FALSE(b.exhausted());
}

TEST_CASE("DeferredPool: bounded threads, a full queue refuses, shutdown aborts the queued",
          "[rpc][unit]") {
  DeferredPool pool("deferred", 2, 3);
  CHECK(pool.threads() == 0);  // none until needed
  std::atomic<bool> release{false};
  std::atomic<int> ran{0}, aborted{0}, started{0};
  auto task = [&](const Status& s) {
    if (!s.ok()) {
      CHECK(s.IsAborted());
      aborted++;
      return;
    }
    started++;
    // Holds its thread until the test releases it (a poll on that flag).
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ran++;
  };
  int accepted = 0, refused = 0;
  for (int i = 0; i < 10; ++i) {
    DeferredTask t = task;
    Status s = pool.Submit(std::move(t));
    if (s.ok()) {
      accepted++;
    } else {
      CHECK(s.IsServiceUnavailable());
      refused++;
    }
    // The threads pick up the first two tasks before the next is submitted,
    // so the queue fills with the rest (waits on the task having started; the
    // 60 s deadline only fails the test).
    if (i < 2) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (started.load() < i + 1 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      REQUIRE(started.load() == i + 1);
    }
  }
  CHECK(pool.threads() == 2);
  CHECK(accepted == 5);  // 2 running + 3 queued
  CHECK(refused == 5);
  pool.BeginShutdown();  // the 3 queued ones are aborted here
  CHECK(aborted == 3);
  release = true;
  pool.Shutdown();
  CHECK(ran == 2);
  DeferredTask late = task;
  CHECK(pool.Submit(std::move(late)).IsServiceUnavailable());
}

TEST_CASE("CROSSFREE_DCHECK follows the build: on in Debug or with CROSSFREE_DCHECK=ON",
          "[rpc][unit]") {
  int evaluated = 0;
  CROSSFREE_DCHECK(++evaluated > 0);
#if CROSSFREE_DCHECK_IS_ON()
  CHECK(evaluated == 1);
#else
  CHECK(evaluated == 0);  // compiled, never evaluated
#endif
}

}  // namespace
}  // namespace crossfree::rpc
