// SPDX-License-Identifier: Apache-2.0
// Analyzer: size classes above 1 KiB (see size_class.h for the layout).
#include "analyzer/pairing/size_class.h"

namespace crossfree::analyzer::internal {

int LargeSizeClassIndex(uint64_t size) {
  const SizeClassTable& t = kSizeClasses;
  if (size > t.bytes[t.count - 1]) return kLargeSizeClass;
  int lo = 0, hi = t.count - 1;  // first class with bytes >= size
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (t.bytes[mid] >= size) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace crossfree::analyzer::internal
