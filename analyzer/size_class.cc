// SPDX-License-Identifier: Apache-2.0
// Analyzer: size-class table (see size_class.h for the layout).
#include "analyzer/size_class.h"

#include <array>

namespace crossfree::analyzer {
namespace {

struct Table {
  std::array<uint64_t, kSizeClassCount> bytes{};
  int count = 0;  // classes below kLargeSizeClass actually used
  // Lookup for sizes up to 1024 in 8-byte steps: index (size+7)/8.
  std::array<uint8_t, 129> small{};
};

Table BuildTable() {
  Table t;
  auto add = [&t](uint64_t b) { t.bytes[t.count++] = b; };
  add(8);
  for (uint64_t b = 16; b <= 128; b += 16) add(b);
  for (uint64_t b = 160; b <= 256; b += 32) add(b);
  for (uint64_t b = 320; b <= 512; b += 64) add(b);
  for (uint64_t base = 512; base < (256u << 10); base *= 2) {
    for (uint64_t step = 1; step <= 4; ++step) add(base + base * step / 4);
  }
  // Unused slots between count and kLargeSizeClass stay 0; the large class
  // has bytes 0 too.
  int c = 0;
  for (uint64_t i = 0; i < t.small.size(); ++i) {
    uint64_t size = i * 8;
    while (t.bytes[c] < size) ++c;
    t.small[i] = static_cast<uint8_t>(c);
  }
  return t;
}

const Table& GetTable() {
  static const Table table = BuildTable();
  return table;
}

}  // namespace

int SizeClassIndex(uint64_t size) {
  const Table& t = GetTable();
  if (size <= 1024) return t.small[(size + 7) / 8];
  if (size > t.bytes[t.count - 1]) return kLargeSizeClass;
  int lo = 0, hi = t.count - 1;  // first class with bytes >= size
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (t.bytes[mid] >= size) hi = mid; else lo = mid + 1;
  }
  return lo;
}

uint64_t SizeClassBytes(int index) {
  if (index < 0 || index >= kSizeClassCount) return 0;
  return GetTable().bytes[index];
}

}  // namespace crossfree::analyzer
