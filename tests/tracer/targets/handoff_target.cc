// SPDX-License-Identifier: Apache-2.0
// Tracer test target for `crossfree record`'s chunk hand-off: threads that
// record a known number of events and then go idle where the tracer never
// writes on its own (a condition variable, a blocking read on a pipe).
//
//   handoff_target idle   the main thread allocates 250 blocks and frees
//                         them (tt_handoff_main: 500 events); four threads
//                         run: "hf-futex" 1,000 malloc/free pairs
//                         (tt_handoff_futex: 2,000 events) then waits on a
//                         condition variable nobody signals; "hf-read" 1,500
//                         pairs (tt_handoff_read: 3,000 events) then reads a
//                         pipe nobody writes; "hf-bulk" 60,000 pairs
//                         (tt_handoff_bulk: 120,000 events, many chunks) then
//                         waits on the condition variable. When all four have
//                         done their work the main thread writes
//                         "done <pid>\n" to stdout and reads stdin: the test
//                         SIGKILLs it there. "idle exit": the same, but the
//                         main thread returns from main when stdin ends
//                         (process exit with the threads still blocked).
//   handoff_target flood  writes "ready <pid>\n", waits for a byte on stdin,
//                         then one thread "hf-flood" makes 100,000 pairs
//                         (tt_handoff_flood: 200,000 events) and exits; the
//                         main thread writes "flooded\n", waits for stdin to
//                         end and returns.
//   handoff_target scribble  makes 50 pairs (tt_handoff_futex: 100 events),
//                         then damages `record`'s region the way a wild
//                         pointer could: in five slots it does not use, three
//                         sealed chunks that are not chunks (a length past the
//                         slot, a bad magic, a bad checksum) and two partly
//                         filled ones (a committed length past the slot, a
//                         bad magic); then writes "scribbled" and returns.
//   handoff_target forge count|size|bytes
//                         one thread "hf-bulk-exit" makes 60,000 pairs
//                         (tt_handoff_bulk: 120,000 events) and exits; once
//                         `record` has taken every sealed chunk (at most
//                         120 s), the main thread forges the region's file
//                         header area the way a wild pointer could: count,
//                         two more headers published than were written;
//                         size, one header published with a length past the
//                         area; bytes, one header published whose bytes are
//                         not a trace header. Then it makes 50 pairs
//                         (tt_handoff_futex: 100 events), writes "forged"
//                         and returns.
// Output goes through write(2) (no stdio buffer to allocate in between), after
// the fn lines.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include "protocol/shm_channel.h"
#include "idle_workers.h"
#include "target_util.h"

extern "C" {

TT_FN void tt_handoff_main(void** blocks, int n) {
  for (int i = 0; i < n; ++i) blocks[i] = malloc(48 + i);
  for (int i = 0; i < n; ++i) free(blocks[i]);
}

TT_FN void tt_handoff_bulk(int pairs) { TtMallocFreePairs(pairs, 16, 255); }

TT_FN void tt_handoff_flood(int pairs) { TtMallocFreePairs(pairs, 24, 127); }

}  // extern "C"

namespace {

using namespace idle_workers;

void SayWithPid(const char* word) {
  char line[64];
  int n = snprintf(line, sizeof(line), "%s %d\n", word, static_cast<int>(getpid()));
  ssize_t ignored = write(1, line, static_cast<size_t>(n));
  (void)ignored;
}

// The workers of "idle" besides idle_workers' kFutex and kRead, and the
// flood thread.
const Worker kBulk = {"hf-bulk", tt_handoff_bulk, 60000, true, false};
const Worker kFlood = {"hf-flood", tt_handoff_flood, 100000, false, false};

// Reads stdin until a byte arrives (true) or it ends (false).
bool ReadByte() {
  char c;
  for (;;) {
    ssize_t n = read(0, &c, 1);
    if (n == 1) return true;
    if (n == 0) return false;
  }
}

// The region `record` passed (mapped by the tracer), from /proc/self/maps.
uint8_t* FindRegion() {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == nullptr) return nullptr;
  char line[512];
  uint8_t* found = nullptr;
  while (fgets(line, sizeof(line), maps) != nullptr) {
    if (strstr(line, crossfree::shm::kMemfdName) == nullptr) continue;
    found = reinterpret_cast<uint8_t*>(strtoull(line, nullptr, 16));
    break;
  }
  fclose(maps);
  return found;
}

// Waits until `record` has taken every sealed chunk (true), for at most
// 120 s: a bound against a hang, not a deadline for a loaded machine. At 10
// s it ran out under TSan beside three busy loops (record's drain runs at
// nice 19, and nothing waits for a slot here to call its rescue thread in),
// and the target exited 4 before forging anything.
bool WaitUntilDrained(uint8_t* base) {
  namespace shm = crossfree::shm;
  const shm::Control* ctl = shm::ControlOf(base);
  for (int tries = 0; tries < 12000; ++tries) {
    bool sealed = false;
    for (uint32_t i = 0; i < ctl->slot_count && !sealed; ++i) {
      sealed = shm::DescOf(base, i)->state.load(std::memory_order_acquire) == shm::kSealed;
    }
    if (!sealed) return true;
    struct timespec tick = {0, 10'000'000};
    nanosleep(&tick, nullptr);
  }
  return false;
}

int Forge(const char* kind) {
  namespace shm = crossfree::shm;
  uint8_t* base = FindRegion();
  if (base == nullptr) return 3;
  const Worker bulk = {"hf-bulk-exit", tt_handoff_bulk, 60000, false, false};
  pthread_join(Start(bulk), nullptr);  // its exit seals its last chunk
  if (!WaitUntilDrained(base)) return 4;
  shm::Control* ctl = shm::ControlOf(base);
  const uint32_t published = ctl->headers_published.load(std::memory_order_acquire);
  if (strcmp(kind, "count") == 0) {
    ctl->headers_published.store(published + 2, std::memory_order_release);
  } else if (strcmp(kind, "size") == 0) {
    ctl->file_header_bytes = static_cast<uint32_t>(shm::kFileHeaderAreaBytes) + 1;
    ctl->headers_published.store(published + 1, std::memory_order_release);
  } else if (strcmp(kind, "bytes") == 0) {
    memset(shm::FileHeaderOf(base), 0x5a, 512);
    ctl->file_header_bytes = 512;
    ctl->headers_published.store(published + 1, std::memory_order_release);
  } else {
    return 2;
  }
  tt_handoff_futex(50);
  Say("forged\n");
  return 0;
}

int Scribble() {
  namespace shm = crossfree::shm;
  tt_handoff_futex(50);
  uint8_t* base = FindRegion();
  if (base == nullptr) return 3;
  shm::Control* ctl = shm::ControlOf(base);
  const uint32_t n = ctl->slot_count, bytes = ctl->slot_bytes;
  auto fake = [&](uint32_t i, uint32_t state, uint32_t sealed, uint64_t committed,
                  uint32_t magic) {
    shm::SlotDesc* d = shm::DescOf(base, i);
    uint8_t* buf = base + shm::SlotOffset(i, bytes);
    memset(buf, 0x5a, 256);
    memcpy(buf, &magic, 4);
    d->sealed_bytes.store(sealed, std::memory_order_relaxed);
    d->committed.store(committed, std::memory_order_relaxed);
    d->ticket.store(0, std::memory_order_relaxed);
    d->state.store(state, std::memory_order_release);
  };
  const uint32_t kMagic = 0x4b4e4843;  // "CHNK": a header that fails later checks
  fake(n - 1, shm::kSealed, bytes + 4096, 0, kMagic);
  fake(n - 2, shm::kSealed, 200, 0, 0xdeadbeef);
  fake(n - 3, shm::kSealed, 200, 0, kMagic);
  fake(n - 4, shm::kFilling, 0, shm::PackCommitted(bytes + 64, 3), kMagic);
  fake(n - 5, shm::kFilling, 0, shm::PackCommitted(96, 2), 0xdeadbeef);
  Say("scribbled\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  TT_REPORT(tt_handoff_main);
  TT_REPORT(tt_handoff_futex);
  TT_REPORT(tt_handoff_read);
  TT_REPORT(tt_handoff_bulk);
  TT_REPORT(tt_handoff_flood);
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "scribble") == 0) return Scribble();
  if (argc > 2 && strcmp(argv[1], "forge") == 0) return Forge(argv[2]);
  const bool flood = argc > 1 && strcmp(argv[1], "flood") == 0;
  if (flood) {
    SayWithPid("ready");
    if (!ReadByte()) return 1;
    pthread_join(Start(kFlood), nullptr);
    Say("flooded\n");
    while (ReadByte()) {
    }
    return 0;
  }
  const bool exit_at_end = argc > 2 && strcmp(argv[2], "exit") == 0;
  static void* blocks[250];
  tt_handoff_main(blocks, 250);
  if (pipe(g_idle_pipe) != 0) return 1;
  pthread_barrier_init(&g_done, nullptr, 4);
  for (const Worker* w : {&kFutex, &kRead, &kBulk}) Start(*w);
  pthread_barrier_wait(&g_done);
  SayWithPid("done");
  while (ReadByte()) {
  }
  if (exit_at_end) return 0;
  for (;;) pause();
}
