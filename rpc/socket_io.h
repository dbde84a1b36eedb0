// SPDX-License-Identifier: Apache-2.0
// The socket reads and writes of the call path as plain system calls.
// Why: glibc's recv/send/sendmsg are thread-cancellation points, and each
// brackets its system call with __pthread_enable_asynccancel /
// __pthread_disable_asynccancel, on every socket call of every RPC. Nothing in rpc/ cancels threads (pthread_cancel),
// so syscall(2) with the same arguments behaves identically: same result,
// -1 and errno on failure. Sanitizer builds keep the libc functions: the
// sanitizers intercept them (ThreadSanitizer orders threads through a
// descriptor's sends and receives, AddressSanitizer checks the buffers).
// Threads: any (pure functions of their arguments).
#pragma once

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CROSSFREE_RPC_LIBC_SOCKET_IO 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define CROSSFREE_RPC_LIBC_SOCKET_IO 1
#endif
#endif

namespace crossfree::rpc {

#if defined(CROSSFREE_RPC_LIBC_SOCKET_IO)
inline ssize_t SocketRecv(int fd, void* buf, size_t len, int flags) {
  return ::recv(fd, buf, len, flags);
}
inline ssize_t SocketSend(int fd, const void* buf, size_t len, int flags) {
  return ::send(fd, buf, len, flags);
}
inline ssize_t SocketSendMsg(int fd, const msghdr* msg, int flags) {
  return ::sendmsg(fd, msg, flags);
}
#else
inline ssize_t SocketRecv(int fd, void* buf, size_t len, int flags) {
  return syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr);
}
inline ssize_t SocketSend(int fd, const void* buf, size_t len, int flags) {
  return syscall(SYS_sendto, fd, buf, len, flags, nullptr, 0);
}
inline ssize_t SocketSendMsg(int fd, const msghdr* msg, int flags) {
  return syscall(SYS_sendmsg, fd, msg, flags);
}
#endif

}  // namespace crossfree::rpc
