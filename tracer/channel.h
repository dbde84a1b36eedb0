// SPDX-License-Identifier: Apache-2.0
// Tracer: the traced process's side of the chunk hand-off to `crossfree
// record` (protocol/shm_channel.h; docs/design.md, "The chunk hand-off").
// Under `record` the threads' chunk buffers are slots of a shared-memory
// region that `record` drains into the trace file, so the target makes no
// file writes and `record` can still take every whole record of a killed
// target. Without `record` (bare LD_PRELOAD) nothing here is attached and
// the tracer writes its own file. Images a process execs take its region
// over in turn (Attach). A fork child, or a process started without one,
// makes a region of its own and hands it to `record` through the channel's
// socket (BeginForkChild or BeginOwnRegion, then CompleteOffer); refused,
// it writes its own file.
//
// Threading: Attach, AttachSocket and the fork-child calls run
// single-threaded (start-up, the fork child: no allocation, no stdio, no
// lock there either). Everything else may be called by any thread at any
// time, from the hook path: no allocation, no lock, no stdio; the only
// system calls are futex (a wake when `record` sleeps, a wait when no
// slot is free) and getppid or poll while waiting. A slot, once claimed,
// belongs to whoever holds the ThreadState it is bound to
// (recorder_internal.h) until it is sealed or released.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace crossfree::tracer::channel {

// Maps the region whose descriptor CROSSFREE_CHANNEL names, if it is a
// `record` channel (a memfd named shm::kMemfdName, the right magic
// and version) that holds at least kMinSlots slots of slot_bytes, and
// claims it for this image: with first (the command's first image, pid
// CROSSFREE_MAIN_PID), record's fresh region, whose slots it lays out; a
// later image of the same pid (after exec; record's region or a fork
// child's) takes it over when its predecessor handed everything over
// (BeforeExec) and record has written that one's header. The descriptor
// stays open, close-on-exec (only BeforeExec lets it through an exec of
// this process). False leaves the file path in charge. fd < 0: not under
// record.
bool Attach(int fd, size_t slot_bytes, uint32_t pid, bool first);
// The socket through which a process hands record a region of its own
// (value: shm::kSocketEnv's text, "<fd>,<record's pid>"; with a
// region attached, record's pid must be the region's). Owned, and left
// inheritable, so that processes started without a fork handler (vfork,
// posix_spawn) reach record too. False: not record's socket; this process's
// children then write their own files.
bool AttachSocket(const char* value);

// Whether this image hands its chunks to `record`. Read on every chunk.
extern bool g_attached;
inline bool Attached() { return g_attached; }

// Puts the encoded file header where `record` reads it and marks the
// region ready. Once, at start-up, before any chunk.
bool PublishFileHeader(const uint8_t* header, size_t n);

// Claims a free slot: its index, or -1 when none is free. With wait, waits
// for `record` to free one, at most wait_ns in all (and not at all once a
// wait timed out and `record` freed nothing since, or `record` is gone).
int Claim(bool wait);
uint8_t* SlotBuffer(int slot);
// The word the slot's owner release-stores after each record
// (shm::PackCommitted).
std::atomic<uint64_t>* CommitWord(int slot);
// Hands the finished chunk (bytes long, sealed by ChunkWriter::Finish) in
// slot to `record`.
void Seal(int slot, size_t bytes);
// Gives an unused slot back (an empty chunk).
void Release(int slot);
// Copies a finished chunk that lives outside the region (the totals chunk,
// a chunk that overflowed into a thread's private buffer) into a slot and
// seals it, waiting for a slot like Claim(true). False: no slot (counted
// by the caller as dropped).
bool HandOff(const uint8_t* chunk, size_t bytes);
// Counts a chunk the tracer could not hand over (no slot in time).
void CountDropped(uint32_t events);
// True once `record` went away (the process is no longer its child):
// nothing can be handed over any more.
bool RecordGone();
// The clean end of the run: every chunk has been handed over.
void MarkCleanExit();
// exec: after the exit flush handed every chunk over, lets the region's
// descriptor through the exec and offers the region to the next image;
// AfterFailedExec takes both back (the exec returned, recording goes on).
void BeforeExec();
void AfterFailedExec();
// A region of the process's own (a sealed memfd, the same layout, origin
// kOriginForkChild), single-threaded, no allocation. In a fork child,
// BeginForkChild(pid) makes it on the parent region's descriptor number
// (the one CROSSFREE_CHANNEL names, so an exec'd image takes it over),
// unmaps the parent's and attaches the new one; at start-up, a process
// with no region (started by vfork or posix_spawn) does the same with
// BeginOwnRegion(pid, slot_bytes, env_fd), on env_fd when it is free here.
// Either way the header is then published into it, and CompleteOffer(pid)
// sends the region and a pidfd to record and waits (at most
// shm::kAdoptionWaitNs) for record to adopt it; false: refused,
// too late or record gone, and the caller calls Detach. Detach forgets any
// region and the socket (mapping and descriptors closed): the process writes
// a file of its own, and so do its children.
bool BeginForkChild(uint32_t pid);
bool BeginOwnRegion(uint32_t pid, size_t slot_bytes, int env_fd);
bool CompleteOffer(uint32_t pid);
void Detach();

// How long a thread waits for a free slot before its chunk goes to its
// private buffer (CROSSFREE_CHANNEL_WAIT_MS). Set by start-up.
extern uint64_t g_wait_ns;

}  // namespace crossfree::tracer::channel
