// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: the per-chunk state of compressed layout 2
// (docs/trace-format.md 5.2), shared by its writer (ChunkCompressor) and
// its reader (DecodeChunk) so that both step it identically: the chunk's
// allocations, which a free may name instead of carrying its address, and
// per size class a short stack of the blocks the chunk freed, which an
// allocation may reuse.
//
// Memory is fixed at construction (about 600 KiB), whatever a chunk
// claims: a crafted chunk cannot make it grow. Threading: one object per
// thread (a reader keeps one per decoding thread); Reset() between chunks.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>

namespace crossfree::format {

class ChunkRefs {
 public:
  // Allocations a free may refer back to.
  static constexpr uint32_t kRefWindow = 1u << 16;
  static constexpr uint32_t kClasses = 64;  // classes 2..63: sizes up to 1000
  static constexpr uint32_t kDepth = 8;     // blocks kept per class
  static constexpr uint8_t kNoClass = 0;

  ChunkRefs()
      : addresses_(std::make_unique<uint64_t[]>(kRefWindow)),
        classes_(std::make_unique<uint8_t[]>(kRefWindow)) {
    Reset();
  }

  // glibc's chunk size in 16-byte units (sizes it serves from one bin share
  // a class); kNoClass above 1000 bytes.
  static uint8_t ClassOf(uint64_t size) {
    if (size > 1000) return kNoClass;
    const uint64_t c = (size + 23) >> 4;
    return static_cast<uint8_t>(c < 2 ? 2 : c);
  }

  void Reset() {
    allocs_ = 0;
    std::memset(count_, 0, sizeof(count_));
    std::memset(top_, 0, sizeof(top_));
  }

  uint64_t allocs() const { return allocs_; }

  // An allocation event of the chunk, after its address is known.
  void AddAlloc(uint64_t address, uint64_t size) {
    const uint32_t i = static_cast<uint32_t>(allocs_ & (kRefWindow - 1));
    addresses_[i] = address;
    classes_[i] = ClassOf(size);
    ++allocs_;
  }

  // A free that names the k-th last allocation (k = 1: the latest): its
  // address in *address, and the block pushed on its class's stack. False
  // when there is no such allocation (k = 0, beyond the chunk's allocations
  // or beyond kRefWindow).
  bool Free(uint64_t k, uint64_t* address) {
    if (k == 0 || k > allocs_ || k > kRefWindow) return false;
    const uint32_t i = static_cast<uint32_t>((allocs_ - k) & (kRefWindow - 1));
    *address = addresses_[i];
    if (classes_[i] != kNoClass) Push(classes_[i], *address);
    return true;
  }

  // The most recently freed block of size's class, or false when none
  // (Reuse also takes it off the stack).
  bool Peek(uint64_t size, uint64_t* address) const {
    const uint8_t c = ClassOf(size);
    if (c == kNoClass || count_[c] == 0) return false;
    *address = stack_[c][(top_[c] + kDepth - 1) % kDepth];
    return true;
  }
  bool Reuse(uint64_t size, uint64_t* address) {
    if (!Peek(size, address)) return false;
    const uint8_t c = ClassOf(size);
    top_[c] = static_cast<uint8_t>((top_[c] + kDepth - 1) % kDepth);
    --count_[c];
    return true;
  }

 private:
  // When full, the oldest entry (the one at top_) is overwritten.
  void Push(uint8_t c, uint64_t address) {
    stack_[c][top_[c]] = address;
    top_[c] = static_cast<uint8_t>((top_[c] + 1) % kDepth);
    if (count_[c] < kDepth) ++count_[c];
  }

  std::unique_ptr<uint64_t[]> addresses_;  // ring of the last kRefWindow allocations
  std::unique_ptr<uint8_t[]> classes_;
  uint64_t allocs_ = 0;
  uint64_t stack_[kClasses][kDepth];
  uint8_t top_[kClasses];    // where the next push goes
  uint8_t count_[kClasses];  // entries on the stack, at most kDepth
};

}  // namespace crossfree::format
