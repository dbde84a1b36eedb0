// SPDX-License-Identifier: Apache-2.0
// Test helpers: raw-socket clients of the RPC wire format, for the tests
// that send what a well-behaved client would not (bad bytes, stalled
// frames, floods), and the listening socket of a scripted fake server.
// Thread: whichever test thread owns the socket.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "rpc/sockaddr.h"

namespace crossfree::rpc::testing {

// Raw clients (blocking sockets with 5 s timeouts).
int RawConnect(const Sockaddr& addr);
// Sends all of `bytes`; false if the peer closed or the send timed out.
bool SendAll(int fd, const std::string& bytes);
// Receives exactly n bytes into *out; false on EOF, error or timeout.
bool RecvExactly(int fd, size_t n, std::string* out);
// The 8-byte connection header; `reserved` goes into byte 5.
std::string ConnHeader(uint8_t reserved = 0);
// A request frame of CalculatorService.<method> with `body`.
std::string RequestFrame(int32_t call_id, const std::string& method, const std::string& body);
std::string AddBody(uint32_t x, uint32_t y);
// Waits up to `timeout` for the server to close `fd` (EOF, or a reset:
// ECONNRESET/EPIPE; any other error is not a close), discarding whatever
// it sends first.
bool WaitClosed(int fd, std::chrono::milliseconds timeout);
// Non-blocking check: true if the server closed `fd` already.
bool IsClosed(int fd);

// A TCP socket listening on 127.0.0.1, on a port the kernel picks (a
// backlog of 4, close-on-exec); *address gets the address. -1 with errno
// set if the socket cannot be made.
int ListenOnLoopback(sockaddr_in* address);

}  // namespace crossfree::rpc::testing
