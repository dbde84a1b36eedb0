// SPDX-License-Identifier: Apache-2.0
// The bound on record's end when the trace file stops taking bytes.
//
// Once the command has ended, ChunkChannel::Finish bounds the work it
// chooses to do (compression stops kFinishCompressNs in; the rest goes
// plain, at the disk's speed). What it cannot bound is a write(2) that
// does not return: a hung NFS or FUSE mount, a disk that stopped. A
// WriteWatchdog guards each finishing step of RunRecord: a thread of its
// own watches record's trace writes (NoteWriteBegins/NoteWriteEnds, from
// every thread that writes a trace) and, when a write is under way and no
// byte was written for kStallNs, says so on stderr and ends record at
// once with kExitEventsLost. Only a write under way counts: compressing
// one large chunk at a high level may take seconds without a byte
// written, and is no stall. What is
// on disk is whole chunks and at most one cut short, which readers skip
// with a warning (docs/trace-format.md, section 10); what record still
// held in memory is lost, and the message says so.
//
// Threading: NoteWriteBegins/NoteWriteEnds are called by any thread (one
// relaxed atomic add each). A WriteWatchdog is made and destroyed on one thread (RunRecord's);
// its own thread only reads the counter and the clock, and the only thing
// it does besides is the final message and _exit.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace crossfree::analyzer::record {

// Around each write(2) of a trace: a write is under way, then it returned
// having written n bytes (0 on an error).
void NoteWriteBegins();
void NoteWriteEnds(uint64_t n);

class WriteWatchdog {
 public:
  // 3 s: a write that stalls at the command's end still ends record within
  // the 5 s the guide promises; a working disk writes a chunk (at most
  // 16 MiB, 128 KiB by default) many times over in that time.
  static constexpr uint64_t kStallNs = 3'000'000'000;

  // Starts watching; step names what is being finished, for the message.
  explicit WriteWatchdog(const char* step, uint64_t stall_ns = kStallNs);
  // Stops watching (the step ended in time).
  ~WriteWatchdog();
  WriteWatchdog(const WriteWatchdog&) = delete;
  WriteWatchdog& operator=(const WriteWatchdog&) = delete;

 private:
  void Watch();

  const char* step_;
  uint64_t stall_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // guarded by mu_
  std::thread thread_;
};

// Test only: CROSSFREE_RECORD_TEST_STALL_WRITES=N makes every trace write
// once record has written N bytes in all block for good (as on a hung
// mount), so that a test can prove the bound. Called before each write.
void StallIfTesting();

}  // namespace crossfree::analyzer::record
