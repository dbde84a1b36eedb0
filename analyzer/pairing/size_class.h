// SPDX-License-Identifier: Apache-2.0
// Analyzer: the size classes used to bucket allocations, modelled on
// tcmalloc's (a thread cache keeps one free list per class).
#pragma once

#include <array>
#include <cstdint>

namespace crossfree::analyzer {

// Classes: 8, 16, then every 16 bytes to 128, every 32 to 256, every 64 to
// 512, and from there four classes per doubling (640, 768, 896, 1024, ...)
// up to 256 KiB. Larger requests are "large" (index kLargeSizeClass), served
// from the page heap rather than a thread cache. Stateless; any thread.
inline constexpr int kSizeClassCount = 64;
inline constexpr int kLargeSizeClass = kSizeClassCount - 1;

namespace internal {

struct SizeClassTable {
  std::array<uint64_t, kSizeClassCount> bytes{};  // 0 for unused and large
  int count = 0;                                  // classes in use, before large
  std::array<uint8_t, 129> small{};               // class of sizes 0..1024, by (size+7)/8
};

constexpr SizeClassTable BuildSizeClassTable() {
  SizeClassTable t;
  auto add = [&t](uint64_t b) { t.bytes[t.count++] = b; };
  add(8);
  for (uint64_t b = 16; b <= 128; b += 16) add(b);
  for (uint64_t b = 160; b <= 256; b += 32) add(b);
  for (uint64_t b = 320; b <= 512; b += 64) add(b);
  for (uint64_t base = 512; base < (256u << 10); base *= 2) {
    for (uint64_t step = 1; step <= 4; ++step) add(base + base * step / 4);
  }
  int c = 0;
  for (uint64_t i = 0; i < t.small.size(); ++i) {
    while (t.bytes[c] < i * 8) ++c;
    t.small[i] = static_cast<uint8_t>(c);
  }
  return t;
}

inline constexpr SizeClassTable kSizeClasses = BuildSizeClassTable();
static_assert(kSizeClasses.count < kLargeSizeClass);

int LargeSizeClassIndex(uint64_t size);

}  // namespace internal

// Index of the smallest class that holds `size` bytes (size 0 -> class 8).
inline int SizeClassIndex(uint64_t size) {
  if (size <= 1024) return internal::kSizeClasses.small[(size + 7) / 8];
  return internal::LargeSizeClassIndex(size);
}

// Upper bound in bytes of a class; 0 for kLargeSizeClass.
inline uint64_t SizeClassBytes(int index) {
  if (index < 0 || index >= kSizeClassCount) return 0;
  return internal::kSizeClasses.bytes[index];
}

}  // namespace crossfree::analyzer
