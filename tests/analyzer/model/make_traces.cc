// SPDX-License-Identifier: Apache-2.0
// Test tool: writes the fixed synthetic runs as trace files, for the CLI
// tests (`make_traces DIR` -> DIR/before.trc, DIR/after.trc, ...).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/analyzer/model/scenarios.h"

namespace {

// A large producer/consumer trace for throughput measurements: two producer
// threads allocate, two consumer threads free what they made (cross-thread),
// and each thread also churns same-thread objects. Streamed to the file.
int ProducerConsumer(const char* path, uint64_t events) {
  using namespace crossfree::analyzer::testing;
  FILE* f = std::fopen(path, "wb");
  if (!f) return 2;
  const uint32_t pid = 5000;
  SyntheticTrace t(pid, 1, "/usr/bin/producer-consumer");
  t.StreamTo(f);
  t.Stack(pid, 1, {0x401000, 0x402000, 0x403000});
  t.Stack(pid, 2, {0x401100, 0x402100, 0x403100});
  t.Stack(pid, 3, {0x401200, 0x402200});
  t.Stack(pid, 4, {0x401300, 0x402300});
  for (uint32_t k = 1; k <= 4; ++k) {
    t.ThreadName(pid + k, 1, k <= 2 ? "producer-" + std::to_string(k) : "consumer-" + std::to_string(k));
  }
  uint64_t ts = 1000, produced = 0, made = 0;
  const uint64_t batch = 256;
  uint64_t slot = 0;
  while (made < events) {
    for (uint32_t p = 0; p < 2; ++p) {
      uint32_t producer = pid + 1 + p, consumer = pid + 3 + p;
      uint64_t base = 0x7f0000000000ull + (p << 28) + (slot % 64) * batch * 64;
      for (uint64_t i = 0; i < batch; ++i) t.Alloc(producer, ts += 3, base + i * 64, 48 + (i & 15), 1);
      for (uint64_t i = 0; i < batch / 4; ++i) {
        uint64_t local = 0x600000000000ull + (uint64_t(p) << 24) + i * 32;
        t.Alloc(producer, ts += 2, local, 24, 3);
        t.Free(producer, ts += 2, local, 4);
        t.Alloc(consumer, ts += 2, local + (1 << 22), 24, 3);
        t.Free(consumer, ts += 2, local + (1 << 22), 4);
      }
      for (uint64_t i = 0; i < batch; ++i) t.Free(consumer, ts += 3, base + i * 64, 2);
      made += 2 * batch + batch;
      produced += batch;
    }
    ++slot;
  }
  t.Finish();
  std::fclose(f);
  std::printf("expected: cross_thread=%llu\n", static_cast<unsigned long long>(produced));
  return 0;
}

// A trace with `pairs` distinct cross-thread pairs (each its own allocation
// and free stack), for the HTML report's many-pairs check.
int ManyPairs(const char* path, uint32_t pairs) {
  using namespace crossfree::analyzer::testing;
  const uint32_t pid = 6000;
  SyntheticTrace t(pid, 1, "/usr/bin/many-pairs");
  t.ThreadName(pid + 1, 1, "maker");
  t.ThreadName(pid + 2, 1, "taker");
  uint64_t ts = 100;
  for (uint32_t i = 0; i < pairs; ++i) {
    uint32_t alloc_stack = 2 * i + 1, free_stack = 2 * i + 2;
    t.Stack(pid + 1, alloc_stack, {0x500000 + uint64_t{i} * 16, 0x401000});
    t.Stack(pid + 2, free_stack, {0x900000 + uint64_t{i} * 16, 0x402000});
    for (uint32_t k = 0; k <= i % 5; ++k) {
      uint64_t address = 0x10000000 + (uint64_t{i} * 8 + k) * 64;
      t.Alloc(pid + 1, ts += 10, address, 32 + (i % 200), alloc_stack);
      t.Free(pid + 2, ts += 10, address, free_stack);
    }
  }
  t.WriteTo(path);
  return 0;
}

// Sampled runs for the CLI tests: pid, period; the producer's objects of
// one pair freed by the consumer (`sampled` of them traced), one object of a
// second pair, and counts records claiming `allocations` allocations.
crossfree::analyzer::testing::SyntheticTrace SampledRun(uint32_t pid, uint32_t period,
                                                         uint64_t sampled, uint64_t allocations) {
  using namespace crossfree::analyzer::testing;
  crossfree::format::HeaderFields fields;
  fields.pid = pid;
  fields.sample_period = period;
  SyntheticTrace t(fields, "/usr/bin/sampled");
  t.ThreadName(pid + 1, 1, "producer-0");
  t.ThreadName(pid + 2, 1, "consumer-0");
  t.Stack(pid + 1, 1, {0x401000, 0x402000});
  t.Stack(pid + 1, 2, {0x401100, 0x402000});
  t.Stack(pid + 2, 3, {0x403000, 0x404000});
  uint64_t ts = 1000;
  for (uint64_t i = 0; i < sampled; ++i) {
    t.Alloc(pid + 1, ts += 100, 0x10000000 + i * 64, 64, 1);
    t.Free(pid + 2, ts += 100, 0x10000000 + i * 64, 3);
  }
  t.Alloc(pid + 1, ts += 100, 0x20000000, 32, 2);
  t.Free(pid + 2, ts += 100, 0x20000000, 3);
  t.Counts(pid + 1, {allocations, allocations / 2, 0});
  t.Counts(pid + 2, {0, allocations / 2, 0});
  return t;
}

// A recording that starts closed: a window from 1 s to 2 s. In it, a free
// of an object allocated before it, a cross-thread pair, and an object
// still live when it closes.
void WindowedRun(const std::string& path) {
  using namespace crossfree::analyzer::testing;
  crossfree::format::HeaderFields fields;
  fields.pid = 7000;
  fields.flags = crossfree::format::kHeaderFlagWindowed;
  fields.start_monotonic_ns = 1000;
  SyntheticTrace t(fields, "/usr/bin/windowed");
  t.Window(7000, 1000001000, crossfree::format::WindowState::kOpen,
           crossfree::format::WindowCause::kDelay);
  t.Free(7001, 1100000000, 0x1000);
  t.Alloc(7000, 1200000000, 0x2000, 48);
  t.Free(7001, 1300000000, 0x2000);
  t.Alloc(7000, 1400000000, 0x3000, 96);
  t.Window(7000, 2000001000, crossfree::format::WindowState::kClosed,
           crossfree::format::WindowCause::kDuration);
  t.WriteTo(path);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace crossfree::analyzer::testing;
  if (argc == 4 && std::string(argv[1]) == "--many-pairs") {
    return ManyPairs(argv[2], static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)));
  }
  if (argc == 4 && std::string(argv[1]) == "--producer-consumer") {
    return ProducerConsumer(argv[2], std::strtoull(argv[3], nullptr, 10));
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR | --producer-consumer FILE EVENTS | --many-pairs FILE PAIRS\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  BuildBeforeRun().WriteTo(dir + "/before.trc");
  SyntheticTrace after = BuildAfterRun();
  after.WriteTo(dir + "/after.trc");
  // A truncated copy: the last chunk cut in half.
  std::vector<uint8_t> bytes = after.bytes();
  FILE* f = std::fopen((dir + "/truncated.trc").c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size() - 100, f);
  std::fclose(f);
  // A corrupt copy: one payload byte flipped in the middle.
  bytes[bytes.size() / 2] ^= 0x5a;
  f = std::fopen((dir + "/corrupt.trc").c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  // Sampled 1/100: 10 objects of the main pair seen among 1,000,000
  // allocations (~1.0 per 1000, 95% 0.480 .. 1.839), one of the second.
  SampledRun(8000, 100, 10, 1000000).WriteTo(dir + "/sampled.trc");
  SampledRun(8100, 100, 60, 1000000).WriteTo(dir + "/sampled-more.trc");
  SampledRun(8200, 10, 10, 100000).WriteTo(dir + "/sampled10.trc");
  WindowedRun(dir + "/windowed.trc");
  f = std::fopen((dir + "/not-a-trace.trc").c_str(), "wb");
  std::fputs("hello, this is not a trace\n", f);
  std::fclose(f);
  return 0;
}
