// SPDX-License-Identifier: Apache-2.0
// CRC-32C against published check values, hardware vs table path.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "format/crc32c.h"

using crossfree::format::Crc32c;
using crossfree::format::Crc32cPortable;

TEST_CASE("crc32c check values", "[crc32c]") {
  const char* check = "123456789";
  CHECK(Crc32c(check, 9) == 0xE3069283u);
  CHECK(Crc32cPortable(check, 9) == 0xE3069283u);
  CHECK(Crc32c("", 0) == 0u);
  std::vector<uint8_t> zeros(32, 0);
  CHECK(Crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);  // RFC 3720 B.4
  std::vector<uint8_t> ones(32, 0xff);
  CHECK(Crc32c(ones.data(), ones.size()) == 0x62A8AB43u);
  std::vector<uint8_t> inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<uint8_t>(i);
  CHECK(Crc32c(inc.data(), inc.size()) == 0x46DD794Eu);
}

TEST_CASE("crc32c hardware and table agree, and extend", "[crc32c]") {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> data(4099);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t len : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4099}) {
    for (size_t off : {0, 1, 3}) {
      if (off + len > data.size()) continue;
      uint32_t a = Crc32c(data.data() + off, len);
      CHECK(a == Crc32cPortable(data.data() + off, len));
      size_t half = len / 3;
      uint32_t b = Crc32c(data.data() + off + half, len - half, Crc32c(data.data() + off, half));
      CHECK(a == b);
    }
  }
}
