// SPDX-License-Identifier: Apache-2.0
// ServiceIf: the base of generated service classes; maps method names to
// handlers and turns an InboundCall into a typed handler call.
#pragma once

#include <cstddef>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/arena.h>
#include <google/protobuf/message_lite.h>

namespace crossfree::rpc {

class InboundCall;
class RpcContext;
class ServiceIf;

// One method of a service, as registered by generated code.
struct MethodInfo {
  std::string name;
  // Make a request/response message, on `arena` or (nullptr) with new.
  google::protobuf::MessageLite* (*new_request)(google::protobuf::Arena* arena);
  google::protobuf::MessageLite* (*new_response)(google::protobuf::Arena* arena);
  void (*handler)(ServiceIf* service, const google::protobuf::MessageLite* request,
                  google::protobuf::MessageLite* response, RpcContext* context);
  // Fixed pattern: the messages constructed without an arena in storage the
  // caller provides (`at`: request_size / response_size bytes, aligned to
  // message_align), destroyed with their virtual destructor. Why: a protobuf
  // Arena costs more to set up and tear down than a small call's messages
  // (InboundCall::ConstructMessages uses this when both fit in the call).
  size_t request_size = 0;
  size_t response_size = 0;
  size_t message_align = 0;
  google::protobuf::MessageLite* (*place_request)(void* at) = nullptr;
  google::protobuf::MessageLite* (*place_response)(void* at) = nullptr;
};

// Owner: the ServicePool it is registered with. Thread: Handle runs on the
// pool's worker threads concurrently, and, for the methods the pool runs
// inline (ServicePoolOptions::inline_methods), on the server reactors too,
// and, with MessengerOptions::connection_threads, every method on the
// connection threads instead; implementations must be thread-safe.
class ServiceIf {
 public:
  virtual ~ServiceIf() = default;
  virtual const std::string& service_name() const = 0;

  // Worker thread: finds the method (unless the pool already did,
  // InboundCall::method_index), makes and parses the messages and runs the
  // handler; answers ERROR_NO_SUCH_METHOD / ERROR_INVALID_REQUEST itself.
  void Handle(InboundCall* call);
  // The same for a method already looked up (index from FindMethod; -1:
  // none), on whichever thread the pool runs it.
  void Handle(InboundCall* call, int method_index);
  // Index of the method named `name`, or -1. Any thread (the table is
  // fixed once the service is registered).
  int FindMethod(std::string_view name) const;

 protected:
  void AddMethod(MethodInfo info) { methods_.push_back(std::move(info)); }

 private:
  std::vector<MethodInfo> methods_;
};

}  // namespace crossfree::rpc
