// SPDX-License-Identifier: Apache-2.0
// `crossfree record`'s side of the chunk hand-off (protocol/shm_channel.h;
// docs/design.md, "The chunk hand-off"): creates the shared-memory region
// the traced command fills, and drains it into the trace file on a thread
// of its own, so that the command makes no file writes; when the command
// has ended (even by SIGKILL) it takes what is left, partly filled buffers
// included, up to their last whole record.
//
// Threading: one owner thread (RunRecord) calls Create, Start and Finish
// in that order; the drain and rescue threads Start makes are joined by
// Finish. The drain alone writes files; the rescue thread only copies
// sealed chunks out of their slots when the drain gets no core. Nothing
// the traced process wrote into the region is trusted: every layout field
// is bounds-checked and every chunk validated (header, length, CRC) before
// it is written.
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "format/chunk_codec.h"
#include "format/time_rounding.h"

namespace crossfree::analyzer::record {

class ChunkChannel {
 public:
  struct Stats {
    bool attached = false;    // the command's tracer took the region
    bool clean_exit = false;  // and said it had handed everything over
    uint64_t events = 0;      // in the chunks written
    uint64_t chunks = 0;
    uint64_t partial_chunks = 0;  // of chunks: sealed by record after the command ended
    uint64_t partial_events = 0;  // of events
    uint64_t plain_bytes = 0;     // header and chunks as the tracer made them
    uint64_t bytes_written = 0;   // to the trace file
    uint64_t dropped_events = 0;  // the tracer found no free slot in time (its count)
    uint64_t dropped_chunks = 0;
    uint64_t damaged_chunks = 0;  // failed validation: not written
    uint64_t out_of_order = 0;    // written after a later chunk (a seal that never finished)
    uint64_t plain_to_keep_up = 0;  // chunks written uncompressed: free slots ran low
    uint64_t held_back = 0;  // chunks copied out of their slot, compressed later
    uint64_t rescued = 0;    // chunks the rescue thread took out of their slot
    std::string error;            // a write error or a damaged region, if any
    // The files of the images the first one exec'd that took the region
    // over (PATH.<n>); for an adopted region, first_file is the first
    // image's (made here).
    std::vector<std::string> files;
    std::string first_file;
  };

  // A region of region_bytes (format::shm bounds), zero-filled, with its
  // control block set up for a command started by this process. Null and
  // *error on failure.
  static std::unique_ptr<ChunkChannel> Create(size_t region_bytes, std::string* error);
  ~ChunkChannel();
  ChunkChannel(const ChunkChannel&) = delete;
  ChunkChannel& operator=(const ChunkChannel&) = delete;

  // Rounds every chunk's times down to multiples of ns before it is
  // compressed or written, and writes headers with that resolution
  // (docs/trace-format.md 7.1; 1, the default: nanoseconds, chunks as the
  // tracer made them). The owner calls it before Start or Claim.
  void SetTimeResolution(uint32_t ns) { rounder_ = format::ChunkRounder(ns); }

  // The region's descriptor (close-on-exec; the command's child process
  // clears that before exec and passes the number in CROSSFREE_CHANNEL).
  int fd() const { return fd_; }

  // Starts draining into output_fd, the file at path (owned by the caller,
  // kept open until Finish returns): the file header once the tracer
  // published it, then every sealed chunk in the order the tracer sealed
  // them. An image the command exec'd gets a file of its own, path.<n>
  // (the first n free, as the tracer would pick), owned by this object.
  // The drain thread compresses at zstd level CROSSFREE_RECORD_LEVEL (default
  // kDrainLevel; 0 writes the chunks plain) and runs at nice
  // CROSSFREE_RECORD_NICE (default kDrainNice).
  void Start(int output_fd, const std::string& path);
  // Level 1, not zstd's 3: on 2 busy cores the deep-stack workload ran
  // 1.23x its own-file time against 1.40x at level 3, for a trace 2%
  // larger (docs/results/trace-size.md).
  static constexpr int kDrainLevel = 1;
  // CROSSFREE_RECORD_LEVEL (default kDrainLevel; 0: chunks written plain;
  // -7 to -1: zstd's fast levels), read once.
  static int Level();
  // Nice 19: the command's threads run first, and the drain uses the
  // time they leave (on a machine other work keeps busy as well, the
  // rescue thread below keeps the command's slots free). gRPC's sync server, which leaves a core's worth idle
  // waiting on its own hand-offs, served 5-6% more requests than at nice 0
  // (medians of 7 and 9 alternated rounds); the deep-stack workload, which
  // keeps both cores busy, ran no slower with 4 or 16 thread pairs (its
  // trace within 0.5%: a drain that falls behind writes chunks plain, and
  // threads short of a slot sleep, which lets it run). docs/results/record.md.
  static constexpr int kDrainNice = 19;

  // A child process's region (protocol/shm_channel.h, "Children's
  // regions"), received from the child as memfd (owned from here on):
  // checked as hostile input (a sealed memfd of the channel's name, its
  // size within bounds, magic, version, origin). Null and *error when it
  // is none. Then Claim tells the child it was adopted (false: the child
  // had given up; drop it), and Pump drains it on the caller's thread into
  // path (created at the first header; path.<n> when taken), compressing
  // with *compressor (the caller's, shared by all such regions; null at
  // level 0: plain chunks). Its
  // slots' pages leave this process's memory as they are written.
  static std::unique_ptr<ChunkChannel> Adopt(int memfd, std::string* error);
  bool Claim(const std::string& path, format::ChunkCompressor* compressor);
  // Tells the child, still waiting, not to use the region (it writes its
  // own file at once).
  void Refuse();
  // The pid the region says it is attached to (untrusted: compare it).
  uint32_t AttachedPid() const;
  // Stores count in the region's window nudge (protocol/shm_channel.h,
  // Control::window_nudges; window_alarm.h). Any thread, while the
  // object lives: one atomic store into the mapping.
  void SetWindowNudges(uint32_t count);
  // Writes what is sealed and whole (no thread); returns the chunks written.
  size_t Pump();

  // Call once the process that attached has ended (it was reaped), or, for
  // a child's region, when record stops taking a process still running
  // (still_running): writes what is still sealed, then every partly
  // filled slot up to its last whole record, stops the drain thread and
  // returns what was done. A file whose image did not end with its exit
  // flush gets an end-taken chunk saying how it ended (trace format 6.9).
  Stats Finish(bool still_running = false);

 private:
  ChunkChannel() = default;
  void DrainLoop();
  // The rescue thread (Start; record's own region only). A drain at nice
  // 19 gets almost no core while other programs keep the machine busy (a
  // CI runner: 119 of 151 chunks were dropped when a parallel test ran),
  // and a tracer thread that finds no free slot within
  // CROSSFREE_CHANNEL_WAIT_MS drops its events. This thread runs at the
  // command's priority and does almost nothing: every kRescueTickNs it
  // looks whether a tracer thread waits for a slot while the drain has
  // freed none since its last look;
  // then it copies every sealed chunk into record's memory (rescued_) and
  // frees its slot, as a plain write would cost the command. The drain
  // writes rescued chunks in ticket order with the sealed ones (held back
  // and compressed later, as when behind). It also takes the layout's one
  // snapshot (CheckLayout), so that a starved drain does not delay it.
  void RescueLoop();
  void RescueSealed();
  void StopRescue();  // the owner's; joins the rescue thread
  // The owner's, from Finish or the destructor: joins both threads.
  void StopThreads();
  // Bumps freed_seq and wakes the threads waiting for a slot.
  void NotifyFreed();
  static constexpr uint64_t kRescueTickNs = 20'000'000;
  // Beyond this much rescued and not yet written, the rescue thread stops
  // taking chunks (the tracer then drops events, counted): record's memory
  // stays bounded whatever the drain's state.
  static constexpr size_t kRescueMiB = 256;
  // Validates the layout once (slots_, slot_bytes_, claims_) and publishes
  // it (layout_known_); broken_ when the target damaged it.
  void CheckLayout();
  // Whoever copies or writes a sealed slot owns it first: the drain and
  // the rescue thread each take claims_[slot] (0 -> 1) and give it back
  // after the slot is free.
  bool ClaimSlot(uint32_t slot);
  void UnclaimSlot(uint32_t slot);
  // Writes the sealed slots in ticket order; with final, every one of
  // them (gaps no longer wait). Returns how many were written.
  size_t DrainSealed(bool final);
  // Checks the layout once, then writes every file header published and
  // not yet written (one per image), each to its file. The drain's.
  void TakeHeaders();
  // Copies the file headers published and not yet copied into
  // header_copies_ and tells the tracer the header area is free again
  // (headers_taken): an exec'd image waits for that at most a second
  // before it writes a file of its own, so the rescue thread does it too
  // when the drain gets no core. Either thread, under header_mu_.
  void CopyHeaders();
  int OpenImageFile();
  void WritePartial(uint32_t slot);
  // The file of the image that filled slot (its generation), or -1 (a
  // damaged tag).
  int FileOf(uint32_t slot) const;
  int FileOfGeneration(uint32_t generation) const;
  // Validates the whole chunk in [data, data + n) and writes it to fd.
  void EmitValidated(int fd, const uint8_t* data, size_t n);
  // The one place a finished chunk goes to a file: compressed (trace
  // format 5.1), or as it is when compressing would not make it smaller;
  // when record is behind, copied into the backlog (below) first.
  void EmitChunk(int fd, const uint8_t* chunk, size_t n);
  // Compresses (plain once late) and writes the backlog's oldest chunk.
  // False when the backlog is empty.
  bool WriteOldestHeldBack();
  // The copy of [chunk, chunk + n) the backlog keeps: the rescued chunk
  // itself when owned_ is it (moved, not copied), else a spare buffer.
  std::vector<uint8_t> HoldBuffer(const uint8_t* chunk, size_t n);
  // Chunk buffers go back to spare_ once written and are reused by the
  // next copy: a chunk's worth of fresh pages per copy cost record a page
  // fault per 4 KiB (a fifth of its CPU on the deep-stack workload).
  std::vector<uint8_t> SpareBuffer();
  void ReturnBuffer(std::vector<uint8_t>&& buffer);
  // At most this many spares and this much capacity in all: 32 slots of
  // the tracer's default 128 KiB, and no more than 8 MiB when the target
  // chose (or scribbled) slots of up to 16 MiB. Beyond the rescue cap.
  static constexpr size_t kSpareBuffers = 32;
  static constexpr size_t kSpareMiB = 8;
  void CompressAndWrite(int fd, const uint8_t* chunk, size_t n);
  void Write(int fd, const uint8_t* data, size_t n);
  void FreeSlot(uint32_t slot);
  // At Finish, when events the command recorded did not reach the file:
  // the losses chunk (trace format 6.9) after every other chunk of the
  // last image's file, so that the trace itself says it is incomplete.
  void WriteLosses();
  // Before it: the end-taken chunk, when the last image did not end with
  // its exit flush or left buffers open (Finish).
  void WriteTakenEnd(bool still_running);

  int OpenFirstFile();
  format::ChunkCompressor* Compressor();

  int fd_ = -1;
  bool adopted_ = false;  // a fork child's region: files all ours, pages released
  format::ChunkCompressor* shared_compressor_ = nullptr;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  int out_ = -1;
  std::string path_;
  std::vector<int> files_;  // per image (generation): out_, then the files opened here
  // The headers CopyHeaders took from the header area, per image; the
  // drain writes header_copies_[files_.size()] and on. header_error_: why
  // CopyHeaders set broken_, for the drain to report.
  std::mutex header_mu_;
  std::vector<std::vector<uint8_t>> header_copies_;
  std::string header_error_;
  std::thread drain_;
  std::thread rescue_;
  bool stop_ = false;  // the owner's request, read by the drain thread (atomic access)
  std::atomic<uint32_t> rescue_stop_{0};  // the owner's request to the rescue thread (a futex)
  // Set by CheckLayout (the rescue thread's, or the drain's without one)
  // after slots_, slot_bytes_, claims_ and broken_; read with acquire.
  std::atomic<bool> layout_known_{false};
  std::atomic<bool> rescue_running_{false};  // until StopRescue has joined it
  std::unique_ptr<std::atomic<uint8_t>[]> claims_;
  // Chunks the rescue thread copied out of their slots, in the order it
  // took them; the drain moves them out under rescued_mu_ (held only for
  // a push or a swap). rescued_bytes_ counts them until written.
  struct RescuedChunk {
    uint64_t ticket;
    uint32_t generation;
    std::vector<uint8_t> bytes;
    bool written = false;  // by the drain: dropped from rescued_taken_
  };
  std::mutex rescued_mu_;
  std::vector<RescuedChunk> rescued_;
  std::atomic<size_t> rescued_bytes_{0};
  std::vector<RescuedChunk> rescued_taken_;  // the drain's, not yet written
  std::vector<std::vector<uint8_t>> spare_;  // under rescued_mu_; at most kSpareBuffers
  size_t spare_bytes_ = 0;                   // under rescued_mu_: spare_'s capacity
  std::vector<uint8_t>* owned_ = nullptr;    // the drain's: the copy it emits (rescued, or a slot's)
  // The region cannot be read any more (damaged, or no file): set by
  // CheckLayout, CopyHeaders (either thread) or the drain's TakeHeaders,
  // read by both threads (the rescue thread then stops taking chunks
  // nobody will write).
  std::atomic<bool> broken_{false};
  uint32_t slots_ = 0;
  uint32_t slot_bytes_ = 0;
  uint64_t next_ticket_ = 0;
  uint64_t gap_since_ns_ = 0;
  // Set by DrainSealed for the chunk it is writing: free slots are below
  // a quarter of the region (or a thread waits for one), so EmitChunk
  // holds it back (below), or writes it plain when it cannot. Compressing
  // costs record about 5x a plain write (docs/results/trace-size.md); a
  // thread that finds no slot waits, then drops its events, and the
  // command must never pay for the compressor.
  bool behind_ = false;
  static constexpr uint32_t kKeepUpDivisor = 4;  // behind below slots_ / 4 free
  // Behind, a chunk is copied out of its slot into record's own memory and
  // its slot freed at once, and the drain compresses these chunks, oldest
  // first, whenever no slot waits for it (and the rest at Finish). The
  // drain runs at nice 19, so on cores the command keeps busy it falls
  // behind; writing those chunks plain doubled the deep-stack workload's
  // trace (47 MB at nice 0, 90-97 MB at nice 19, 20 M events), while a copy
  // costs the command no more than a plain write. At most
  // CROSSFREE_RECORD_BACKLOG_MB (default kBacklogMiB; 0: none, chunks go
  // plain as before) are held: past that the oldest is written plain. Any
  // chunk that comes while some are held joins them, so the file keeps
  // the drain's order. Used by the drain thread, then by Finish.
  static constexpr size_t kBacklogMiB = 256;
  size_t backlog_limit_ = 0;  // bytes; set by Start
  size_t backlog_bytes_ = 0;
  struct HeldChunk {
    int fd;
    std::vector<uint8_t> bytes;
  };
  std::deque<HeldChunk> backlog_;
  // Once the command has ended, record must end within a bound whatever is
  // left: chunks are compressed for kFinishCompressNs after Finish starts,
  // then written plain (at the disk's speed). Set by Finish, read by the
  // drain thread (atomic access).
  static constexpr uint64_t kFinishCompressNs = 2'000'000'000;
  uint64_t plain_after_ns_ = UINT64_MAX;
  // Used by the drain thread, then by Finish once it has joined it.
  // Made by Start (CROSSFREE_RECORD_LEVEL) for record's own region; none
  // at level 0 (plain chunks), nor in a child's region (shared_compressor_).
  std::unique_ptr<format::ChunkCompressor> compressor_;
  std::vector<uint8_t> compressed_;
  format::ChunkRounder rounder_{1};  // SetTimeResolution
  std::vector<uint8_t> rounded_;     // the chunk EmitValidated rounded
  Stats stats_;
};

}  // namespace crossfree::analyzer::record
