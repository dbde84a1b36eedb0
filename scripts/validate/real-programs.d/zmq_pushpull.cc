// SPDX-License-Identifier: Apache-2.0
// Real-program harness (scripts/validate/real-programs): ZeroMQ PUSH/PULL between two
// threads over inproc. The producer makes 20000 messages of 200 bytes
// (zmq_msg_init_size allocates them, above ZeroMQ's 33-byte inline limit);
// the consumer receives and closes them, so each is freed on the consumer:
// the expected cross-thread pair is ProduceMessages -> ConsumeMessages.
#include <zmq.h>

#include <cstdio>
#include <cstring>
#include <thread>

namespace {
constexpr int kMessages = 20000;
constexpr size_t kSize = 200;

__attribute__((noinline)) void ProduceMessages(void* push) {
  for (int i = 0; i < kMessages; ++i) {
    zmq_msg_t msg;
    zmq_msg_init_size(&msg, kSize);
    std::memset(zmq_msg_data(&msg), i & 0xff, kSize);
    zmq_msg_send(&msg, push, 0);
  }
}

__attribute__((noinline)) unsigned long ConsumeMessages(void* pull) {
  unsigned long sum = 0;
  for (int i = 0; i < kMessages; ++i) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    zmq_msg_recv(&msg, pull, 0);
    sum += static_cast<const unsigned char*>(zmq_msg_data(&msg))[0];
    zmq_msg_close(&msg);
  }
  return sum;
}
}  // namespace

int main() {
  void* ctx = zmq_ctx_new();
  void* push = zmq_socket(ctx, ZMQ_PUSH);
  int hwm = 0;  // unbounded: the producer never waits
  zmq_setsockopt(push, ZMQ_SNDHWM, &hwm, sizeof(hwm));
  zmq_bind(push, "inproc://crossfree-q");
  unsigned long sum = 0;
  std::thread consumer([&] {
    void* pull = zmq_socket(ctx, ZMQ_PULL);
    zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof(hwm));
    zmq_connect(pull, "inproc://crossfree-q");
    sum = ConsumeMessages(pull);
    zmq_close(pull);
  });
  ProduceMessages(push);
  consumer.join();
  zmq_close(push);
  zmq_ctx_term(ctx);
  std::printf("push/pull: %d messages, checksum %lu\n", kMessages, sum);
  return 0;
}
