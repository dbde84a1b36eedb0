// SPDX-License-Identifier: Apache-2.0
// The two varint readers (wire.h): GetVarintRoomy, for a caller that knows
// ten bytes are left, must accept, reject and read exactly what GetVarint
// does. And the two branch-free writers of the event record,
// PutVarintFlat and PutVarintFlat4, must write exactly PutVarint's bytes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "format/wire.h"

using crossfree::format::wire::GetVarint;
using crossfree::format::wire::GetVarintRoomy;
using crossfree::format::wire::PutVarint;
using crossfree::format::wire::PutVarintFlat;
using crossfree::format::wire::PutVarintFlat4;

namespace {

// Writes v with writer into a buffer prefilled with fill and checks that
// the bytes up to the returned end equal PutVarint's; the bytes after the
// end may hold anything (the flat writers store whole words).
template <typename Writer>
bool SameAsPutVarint(Writer writer, uint64_t v, uint8_t fill) {
  uint8_t want[16], got[16];
  for (int i = 0; i < 16; ++i) want[i] = got[i] = fill;
  const size_t want_len = static_cast<size_t>(PutVarint(want, v) - want);
  const size_t got_len = static_cast<size_t>(writer(got, v) - got);
  if (want_len != got_len) return false;
  for (size_t i = 0; i < want_len; ++i) {
    if (want[i] != got[i]) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the flat writers write PutVarint's bytes for every value below 2^22", "[wire]") {
  // Every one-, two- and three-byte value, then every width and its edges.
  bool all = true;
  for (uint64_t v = 0; v < (uint64_t{1} << 22); ++v) {
    all = all && SameAsPutVarint(PutVarintFlat, v, 0xff) && SameAsPutVarint(PutVarintFlat4, v, 0);
    if (!all) {
      FAIL_CHECK("differs at " << v);
      break;
    }
  }
  CHECK(all);
  for (int bits = 0; bits <= 64; ++bits) {
    const uint64_t top = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    for (uint64_t v : {top, top + 1, top >> 1, top ^ 1, top - (top >> 2)}) {
      CHECK(SameAsPutVarint(PutVarintFlat, v, 0xaa));
      CHECK(SameAsPutVarint(PutVarintFlat4, v, 0x55));
    }
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    CHECK(SameAsPutVarint(PutVarintFlat, v, 0));
    CHECK(SameAsPutVarint(PutVarintFlat4, v, 0xff));
  }
}

TEST_CASE("varints of every width round-trip through both readers", "[wire]") {
  for (int bits = 0; bits <= 64; ++bits) {
    uint64_t top = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    for (uint64_t v : {top, top >> 1, top ^ 1, static_cast<uint64_t>(bits)}) {
      uint8_t buf[16] = {};
      const uint8_t* end = PutVarint(buf, v);
      uint64_t a = 0, b = 0;
      CHECK(GetVarint(buf, buf + sizeof(buf), &a) == end);
      CHECK(GetVarintRoomy(buf, &b) == end);
      CHECK(a == v);
      CHECK(b == v);
    }
  }
}

TEST_CASE("the readers agree on random, overlong and overflowing bytes", "[wire]") {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    uint8_t buf[16];
    for (auto& byte : buf) byte = static_cast<uint8_t>(rng());
    // A continuation run of 1 to 11 bytes, so that the tenth byte (which
    // may only be 0 or 1) and longer runs are exercised too.
    int run = 1 + static_cast<int>(rng() % 11);
    for (int k = 0; k < run - 1; ++k) buf[k] |= 0x80;
    if (run <= 10) buf[run - 1] &= 0x7f;
    if (rng() % 2) buf[9] = static_cast<uint8_t>(rng() % 4);
    uint64_t a = 0, b = 0;
    const uint8_t* pa = GetVarint(buf, buf + sizeof(buf), &a);
    const uint8_t* pb = GetVarintRoomy(buf, &b);
    REQUIRE(pa == pb);
    if (pa != nullptr) REQUIRE(a == b);
  }
}
