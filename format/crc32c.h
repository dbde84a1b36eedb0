// SPDX-License-Identifier: Apache-2.0
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) for trace chunks and
// the file header. Allocation-free and safe inside the preload tracer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace crossfree::format {

// Extends a CRC-32C: Crc32c(b, Crc32c(a)) == Crc32c(a followed by b). Start
// with crc = 0. Uses the SSE4.2 crc32 instruction when cpuid reports it and
// a slicing-by-8 table otherwise; both give identical results. Any thread.
uint32_t Crc32c(const void* data, size_t len, uint32_t crc = 0);

// The table-driven path alone (tests compare it with the hardware path).
uint32_t Crc32cPortable(const void* data, size_t len, uint32_t crc = 0);

// True when Crc32c uses the crc32 instruction on this machine.
bool Crc32cUsesHardware();

}  // namespace crossfree::format
