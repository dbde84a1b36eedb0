// SPDX-License-Identifier: Apache-2.0
// Tracer: the descriptors the tracer keeps open inside the traced program
// (the trace file, libunwind's address-validation pipe), kept out of the
// program's reach. The program never opened them, so to the program they
// are not open, as they would not be without the tracer:
//   - close() of one fails with EBADF and leaves it open;
//   - close_range() and closefrom() close everything else in their range;
//   - dup2()/dup3() onto one first move the tracer's descriptor to another
//     number (its holder is updated, writes in flight on the old number
//     are waited for), then do what the program asked; dup2/dup3 *from*
//     one fails with EBADF.
// The hooks are in interpose_descriptors.cc. A raw close syscall still
// closes a tracer descriptor; the trace file then reopens by path and a
// number the program reused is recognised by its inode (recorder.cc).
//
// A descriptor is registered by its holder, the int through which the
// tracer uses it: a move stores the new number there. Entries also keep
// the file's device and inode, so a number that became the program's
// (after a raw close) is recognised and forgotten, never protected.
//
// Threads: any thread, including from inside the hooks and fork children;
// no allocation, no lock, no stdio: a fixed table of atomics. Registering
// and forgetting are rare (start, reopen, fork); lookups scan 8 entries
// and run only in the descriptor hooks, never on the allocation path.
#pragma once

#include <atomic>
#include <cstdint>

namespace crossfree::tracer {

constexpr int kMaxOwnedFds = 8;

// Registers the descriptor *holder (>= 0). users, when not null, counts
// the tracer's writes in flight through *holder (WriteBegin/WriteEnd
// below): a move waits for them. False when the table is full or fstat
// fails (the descriptor then stays unprotected, as before this table).
bool OwnFd(int* holder, std::atomic<uint32_t>* users);

// Forgets fd (before the tracer closes it itself). No-op if not owned.
void DisownFd(int fd);

// True when fd is registered and still refers to the file it was
// registered with; a registered number that now names another file is
// forgotten and false is returned.
bool IsOwnedFd(int fd);

// Moves the owned descriptor fd to a number >= 500 and stores the new
// number in its holder, after the writes in flight on it finished. False
// if fd is not owned or could not be moved (it is then forgotten: the
// program's dup2 will replace it, and the trace file reopens by path).
bool MoveOwnedFd(int fd);

// The owned descriptors in [first, last] (checked like IsOwnedFd), in
// ascending order, at most kMaxOwnedFds. Returns how many.
int OwnedFdsIn(unsigned first, unsigned last, int* out);

// libunwind's address-validation pipe. libunwind (1.6, x86-64) opens it
// once per process, at its first use, into a static pair of its own; it
// validates addresses with mincore() instead whenever mincore works, and
// reopens the pipe only when a read from it fails (a closed or -1
// descriptor).
//
// NoteUnwinderPipe: called by the pipe2 hook (interpose_process.cc) with
// that pair, once it has moved both descriptors to 500 and above and owns
// them; the last pair noted is the one ReleaseUnwinderPipe closes.
void NoteUnwinderPipe(int* fds);

// Attach mode, at the end of a session, when no thread can be inside
// libunwind for the tracer (the condition of ReleaseCfiFiles): closes the
// pipe and sets libunwind's pair back to -1, so that a detached process
// keeps none of the tracer's descriptors. A later session validates with
// mincore(), or reopens the pipe through the pipe2 hook. A number that is
// the program's by now (after a raw close) is not closed. Returns how many
// descriptors it closed. The attach control thread only.
int ReleaseUnwinderPipe();

// Brackets a write by the tracer through a holder registered with users:
// increments/decrements users with sequentially consistent ordering, so a
// move either sees the write in flight or the writer sees the new number.
inline void WriteBegin(std::atomic<uint32_t>& users) {
  users.fetch_add(1, std::memory_order_seq_cst);
}
inline void WriteEnd(std::atomic<uint32_t>& users) {
  users.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace crossfree::tracer
