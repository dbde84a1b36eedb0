// SPDX-License-Identifier: Apache-2.0
// `crossfree record`: the regions of the command's child processes
// (protocol/shm_channel.h, "Children's regions"; docs/design.md, "The chunk
// hand-off", **Forks.**). record makes an AF_UNIX SOCK_SEQPACKET
// socketpair and passes one end to the command (kSocketEnv); every fork
// child of a traced process under the hand-off, and every traced process
// started without a fork handler (vfork, posix_spawn), sends its own region
// and a pidfd of itself through it. A thread of this object adopts each region
// (validated as hostile input, ChunkChannel::Adopt), drains it to
// FILE.<pid> (the name the child would have written), and finishes it
// (partly filled slots included) once the child's pidfd says the process
// has ended, so a SIGKILLed child loses none of the events it recorded.
// At most shm::kMaxChildRegions live at once; a child refused
// writes its own file, as without record, and Totals says how many, why
// and which files (record's hand-off report names them in one line).
//
// Threading: the owner thread (RunRecord's) calls Create, the fork-time
// calls, Start and Finish, in that order; between Start and Finish the
// adopted regions are the drain thread's alone, and Finish joins it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "analyzer/record/record_channel.h"
#include "format/chunk_codec.h"

namespace crossfree::analyzer::record {

class ChildRegions {
 public:
  // What the regions' drains did, summed, and how many were adopted.
  struct Totals {
    uint64_t processes = 0;  // regions adopted (one per process image that offered one)
    uint64_t refused = 0;    // offered but refused (too many at once, bad input)
    uint64_t exec_images = 0;  // later images of those processes (after exec)
    ChunkChannel::Stats sum;  // files: every file written for them
    std::vector<std::string> errors;   // drains': the first few, one line each
    // Why offers were refused: the first few distinct reasons, each with
    // how many offers it refused.
    std::vector<std::pair<std::string, uint64_t>> refusals;
    // The traces refused processes write themselves (path_for of a pid
    // whose pidfd matched its offer): the first few, and how many in all.
    std::vector<std::string> refused_files;
    uint64_t refused_named = 0;
  };

  // The socketpair; null and *error on failure (the command's children
  // then write their own files). Each region's times are rounded to
  // time_resolution_ns (ChunkChannel::SetTimeResolution).
  static std::unique_ptr<ChildRegions> Create(uint32_t time_resolution_ns, std::string* error);
  ~ChildRegions();
  ChildRegions(const ChildRegions&) = delete;
  ChildRegions& operator=(const ChildRegions&) = delete;

  // Between fork and exec, in record's child: lets the command's end
  // through exec and names it in shm::kSocketEnv.
  void InChild();
  // In record after fork: closes the command's end here and starts the
  // thread. path_for(pid) names the trace of the child with that pid.
  void Start(std::function<std::string(uint32_t)> path_for);
  // Any thread: the window nudge every region gets, those adopted later
  // included (ChunkChannel::SetWindowNudges; the thread stores it within
  // its pump interval).
  void SetWindowNudges(uint32_t count) { window_nudges_.store(count, std::memory_order_relaxed); }
  // Once the command and the processes it left were reaped (or the wait for
  // them ran out): stops the thread, refuses what is still offered,
  // finishes every region (a process still running is taken as it is now)
  // and closes the socket, so such a process stops handing over.
  Totals Finish();

 private:
  struct Live {
    uint32_t pid;
    int pidfd;
    std::unique_ptr<ChunkChannel> region;
  };
  ChildRegions() = default;
  void Loop();
  // Reads every message waiting on the socket; adopt false refuses them.
  // False at end of file (no process holds the command's end any more).
  bool Receive(bool adopt);
  void Offered(const uint8_t* data, size_t n, const int* fds, size_t nfds, bool truncated,
               bool adopt);
  void Retire(Live& live, bool still_running = false);
  void Note(std::vector<std::string>& to, const std::string& text);
  // One refused offer: its reason counted, and, pid non-zero (verified by
  // its pidfd), the trace that process writes itself named.
  void Refused(const std::string& why, uint32_t pid);

  int sock_[2] = {-1, -1};  // [0] record's, [1] the command's
  int stop_[2] = {-1, -1};  // a pipe: Finish wakes the thread
  std::function<std::string(uint32_t)> path_for_;
  std::thread thread_;
  std::unique_ptr<format::ChunkCompressor> compressor_;  // one for every region
  uint32_t time_resolution_ns_ = 1;
  std::atomic<uint32_t> window_nudges_{0};
  std::vector<Live> live_;
  Totals totals_;
  bool finished_ = false;
};

}  // namespace crossfree::analyzer::record
