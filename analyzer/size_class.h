// SPDX-License-Identifier: Apache-2.0
// Analyzer: the size classes used to bucket allocations, modelled on
// tcmalloc's (a thread cache keeps one free list per class).
#pragma once

#include <cstdint>

namespace crossfree::analyzer {

// Classes: 8, 16, then every 16 bytes to 128, every 32 to 256, every 64 to
// 512, and from there four classes per doubling (640, 768, 896, 1024, ...)
// up to 256 KiB. Larger requests are "large" (index kLargeSizeClass), served
// from the page heap rather than a thread cache. Stateless; any thread.
inline constexpr int kSizeClassCount = 64;
inline constexpr int kLargeSizeClass = kSizeClassCount - 1;

// Index of the smallest class that holds `size` bytes (size 0 -> class 8).
int SizeClassIndex(uint64_t size);
// Upper bound in bytes of a class; 0 for kLargeSizeClass.
uint64_t SizeClassBytes(int index);

}  // namespace crossfree::analyzer
