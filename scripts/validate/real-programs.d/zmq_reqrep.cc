// SPDX-License-Identifier: Apache-2.0
// Real-program harness (scripts/validate/real-programs): ZeroMQ REQ/REP over TCP on
// the loopback, server and client in one process (two threads, ZeroMQ's
// I/O thread between them). 3000 round trips of 300-byte requests and
// replies: messages received from the wire are allocated on the I/O thread
// and freed by the application threads.
#include <zmq.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {
constexpr int kRounds = 3000;
constexpr size_t kSize = 300;

__attribute__((noinline)) void Serve(void* rep) {
  char buf[kSize];
  for (int i = 0; i < kRounds; ++i) {
    int n = zmq_recv(rep, buf, sizeof(buf), 0);
    if (n < 0) return;
    buf[0] = static_cast<char>(buf[0] + 1);
    zmq_send(rep, buf, kSize, 0);
  }
}

__attribute__((noinline)) unsigned long Ask(void* req) {
  char buf[kSize];
  unsigned long sum = 0;
  for (int i = 0; i < kRounds; ++i) {
    std::memset(buf, i & 0x7f, sizeof(buf));
    zmq_send(req, buf, kSize, 0);
    zmq_recv(req, buf, sizeof(buf), 0);
    sum += static_cast<unsigned char>(buf[0]);
  }
  return sum;
}
}  // namespace

int main() {
  void* ctx = zmq_ctx_new();
  void* rep = zmq_socket(ctx, ZMQ_REP);
  if (zmq_bind(rep, "tcp://127.0.0.1:*") != 0) return 1;
  char endpoint[256];
  size_t len = sizeof(endpoint);
  zmq_getsockopt(rep, ZMQ_LAST_ENDPOINT, endpoint, &len);
  std::thread server([&] { Serve(rep); });
  void* req = zmq_socket(ctx, ZMQ_REQ);
  zmq_connect(req, endpoint);
  unsigned long sum = Ask(req);
  server.join();
  zmq_close(req);
  zmq_close(rep);
  zmq_ctx_term(ctx);
  std::printf("req/rep: %d round trips, checksum %lu\n", kRounds, sum);
  return 0;
}
