// SPDX-License-Identifier: Apache-2.0
// Test fixtures: the scenario runs (see scenarios.h).
#include "tests/analyzer/model/scenarios.h"

namespace crossfree::analyzer::testing {
namespace {

// Return addresses of the fake program.
enum : uint64_t {
  kMalloc = 0x401000,
  kOperatorNew = 0x401100,
  kNewAllocator = 0x401200,
  kCallCreate = 0x402000,
  kProxyAsync = 0x402100,
  kWorkerRun = 0x402200,
  kResponseCreate = 0x402300,
  kReactorRun = 0x402400,
  kSlicesPush = 0x402500,  // inlined into kTransferSend
  kFree = 0x403000,
  kOperatorDelete = 0x403100,
  kCallDtor = 0x403200,
  kReactorComplete = 0x403300,
  kResponseDtor = 0x403400,
  kWorkerHandle = 0x403500,
  kStartThread = 0x404000,
  kMain = 0x404100,
  kBufferGrow = 0x405000,
  kLogFlush = 0x405100,
};

enum : uint32_t {
  kStackCallAlloc = 1,      // operator new <- OutboundCall::Create <- Proxy::AsyncRequest <- Worker::Run
  kStackCallFree = 2,       // operator delete <- ~OutboundCall <- Reactor::CompleteCall <- Reactor::Run
  kStackRespAlloc = 3,      // operator new <- Response::Create <- Reactor::Run
  kStackRespFree = 4,       // operator delete <- ~Response <- Worker::Handle <- Worker::Run
  kStackSliceAlloc = 5,     // malloc <- __new_allocator <- Transfer::Send (inlined push) <- Worker::Run
  kStackSliceFree = 6,      // free <- Reactor::CompleteCall <- Reactor::Run
  kStackLocalAlloc = 7,     // malloc <- Buffer::Grow <- main
  kStackLocalFree = 8,      // free <- Buffer::Grow <- main
  kStackLogAlloc = 9,       // malloc <- Log::Flush <- Worker::Run
  kStackLogFree = 10,       // free <- Log::Flush <- Reactor::Run
};

void DefineStacks(SyntheticTrace& t, uint32_t tid) {
  t.Stack(tid, kStackCallAlloc, {kOperatorNew, kCallCreate, kProxyAsync, kWorkerRun, kStartThread});
  t.Stack(tid, kStackCallFree,
          {kOperatorDelete, kCallDtor, kReactorComplete, kReactorRun, kStartThread});
  t.Stack(tid, kStackRespAlloc, {kOperatorNew, kResponseCreate, kReactorRun, kStartThread});
  t.Stack(tid, kStackRespFree,
          {kOperatorDelete, kResponseDtor, kWorkerHandle, kWorkerRun, kStartThread});
  t.Stack(tid, kStackSliceAlloc, {kMalloc, kNewAllocator, kSlicesPush, kWorkerRun, kStartThread});
  t.Stack(tid, kStackSliceFree, {kFree, kReactorComplete, kReactorRun, kStartThread});
  t.Stack(tid, kStackLocalAlloc, {kMalloc, kBufferGrow, kMain});
  t.Stack(tid, kStackLocalFree, {kFree, kBufferGrow, kMain});
  t.Stack(tid, kStackLogAlloc, {kMalloc, kLogFlush, kWorkerRun, kStartThread});
  t.Stack(tid, kStackLogFree, {kFree, kLogFlush, kReactorRun, kStartThread});
}

struct Mix {
  int calls;        // outbound calls per worker
  bool call_crosses;
  int slices_per_call;
  bool log_pair;
};

SyntheticTrace BuildRun(const Mix& mix) {
  const uint32_t pid = kScenarioPid;
  SyntheticTrace t(pid, 1, "/usr/bin/rpc-demo");
  DefineStacks(t, pid);
  t.ThreadName(pid + 1, 1, "worker-0");
  t.ThreadName(pid + 2, 1, "worker-1");
  t.ThreadName(pid + 3, 1, "reactor-0");
  t.ThreadName(pid + 4, 1, "reactor-1");
  uint64_t ts = 100;
  uint64_t next = 0x10000000;
  // main: same-thread churn, one allocation live at exit.
  for (int i = 0; i < 400; ++i) {
    t.Alloc(pid, ts++, 0x20000000 + i * 256, 200, kStackLocalAlloc);
    t.Free(pid, ts++, 0x20000000 + i * 256, kStackLocalFree);
  }
  t.Alloc(pid, ts++, 0x30000000, 4096, kStackLocalAlloc);
  t.Free(pid, ts++, 0x30001000, kStackLocalFree);  // unknown
  t.Alloc(pid, ts++, 0x30002000, 64, kStackLocalAlloc);
  t.Free(pid, ts++, 0x30002000, kStackLocalFree);
  t.Free(pid, ts++, 0x30002000, kStackLocalFree);  // double
  for (int w = 0; w < 2; ++w) {
    uint32_t worker = pid + 1 + w, reactor = pid + 3 + w;
    for (int i = 0; i < mix.calls; ++i) {
      uint64_t call = next, resp = next + 0x100;
      next += 0x1000;
      t.Alloc(worker, ts++, call, 120, kStackCallAlloc);
      std::vector<uint64_t> slices;
      for (int s = 0; s < mix.slices_per_call; ++s) {
        slices.push_back(next);
        t.Alloc(worker, ts++, next, 32, kStackSliceAlloc);
        next += 0x40;
      }
      if (mix.log_pair) {
        t.Alloc(worker, ts++, next, 900, kStackLogAlloc);
        t.Free(reactor, ts++, next, kStackLogFree);
        next += 0x400;
      }
      t.Alloc(reactor, ts++, resp, 56, kStackRespAlloc);
      for (uint64_t s : slices) t.Free(reactor, ts++, s, kStackSliceFree);
      t.Free(mix.call_crosses ? reactor : worker, ts++, call,
             mix.call_crosses ? kStackCallFree : kStackCallFree);
      t.Free(worker, ts++, resp, kStackRespFree);
      if (i % 50 == 49) {
        t.Flush(reactor);
        t.Flush(worker);
      }
    }
  }
  return t;
}

SymbolFrame F(uint64_t address, const char* function, const char* file, int line,
              const char* module = "/usr/bin/rpc-demo", bool inlined = false) {
  return {.address = address, .function = function, .file = file, .line = line,
          .module = module, .module_offset = address - 0x400000, .inlined = inlined};
}

}  // namespace

SyntheticTrace BuildBeforeRun() { return BuildRun({200, true, 2, false}); }
SyntheticTrace BuildAfterRun() { return BuildRun({300, false, 8, true}); }

FakeResolver::FakeResolver() {
  const char* libc = "/lib/x86_64-linux-gnu/libc.so.6";
  const char* libstdcxx = "/lib/x86_64-linux-gnu/libstdc++.so.6";
  table_[kMalloc] = {F(kMalloc, "malloc", "", 0, libc)};
  table_[kFree] = {F(kFree, "free", "", 0, libc)};
  table_[kOperatorNew] = {F(kOperatorNew, "operator new(unsigned long)", "", 0, libstdcxx)};
  table_[kOperatorDelete] = {
      F(kOperatorDelete, "operator delete(void*, unsigned long)", "", 0, libstdcxx)};
  table_[kNewAllocator] = {F(kNewAllocator,
                             "std::__new_allocator<rpc::Slice>::allocate(unsigned long, void "
                             "const*)",
                             "/usr/include/c++/12/bits/new_allocator.h", 137)};
  table_[kCallCreate] = {F(kCallCreate, "rpc::OutboundCall::Create()", "rpc/outbound_call.cc", 41)};
  table_[kProxyAsync] = {F(kProxyAsync, "rpc::Proxy::AsyncRequest(rpc::Request const&)",
                           "rpc/proxy.cc", 88)};
  table_[kWorkerRun] = {F(kWorkerRun, "rpc::Worker::Run()", "rpc/worker.cc", 57)};
  table_[kResponseCreate] = {
      F(kResponseCreate, "rpc::Response::Create()", "rpc/response.cc", 19)};
  table_[kReactorRun] = {F(kReactorRun, "rpc::Reactor::Run()", "rpc/reactor.cc", 210)};
  // An inlined frame: push_back inlined into Transfer::Send.
  table_[kSlicesPush] = {
      F(kSlicesPush, "rpc::Slices::Push(rpc::Slice)", "rpc/transfer.h", 33, "/usr/bin/rpc-demo",
        true),
      F(kSlicesPush, "rpc::Transfer::Send()", "rpc/transfer.cc", 75)};
  table_[kCallDtor] = {
      F(kCallDtor, "rpc::OutboundCall::~OutboundCall()", "rpc/outbound_call.cc", 60)};
  table_[kReactorComplete] = {
      F(kReactorComplete, "rpc::Reactor::CompleteCall(rpc::OutboundCall*)", "rpc/reactor.cc",
        144)};
  table_[kResponseDtor] = {F(kResponseDtor, "rpc::Response::~Response()", "rpc/response.cc", 25)};
  table_[kWorkerHandle] = {
      F(kWorkerHandle, "rpc::Worker::HandleResponse(rpc::Response*)", "rpc/worker.cc", 90)};
  table_[kStartThread] = {F(kStartThread, "start_thread", "", 0, libc)};
  table_[kMain] = {F(kMain, "main", "demo/main.cc", 12)};
  table_[kBufferGrow] = {F(kBufferGrow, "Buffer::Grow(unsigned long)", "demo/buffer.cc", 30)};
  table_[kLogFlush] = {F(kLogFlush, "Log::Flush()", "demo/log.cc", 77)};
}

const std::vector<SymbolFrame>& FakeResolver::Resolve(size_t, uint64_t address) {
  auto it = table_.find(address);
  if (it != table_.end()) return it->second;
  auto& u = unknown_[address];
  if (u.empty()) {
    SymbolFrame f;
    f.address = address;
    u.push_back(f);
  }
  return u;
}

}  // namespace crossfree::analyzer::testing
