// SPDX-License-Identifier: Apache-2.0
// Tracer test target: a program that defines its own operator new(size_t)
// and operator delete(void*), and only those. libstdc++'s other plain
// operators (new[], nothrow new, delete[], sized delete) forward to them,
// so the tracer must not take its shortcut past libstdc++ to malloc and
// free here (real_alloc.h, StdOperatorsDirect): a block from the
// program's operator new carries a header that the real free would not
// accept, and the program counts every call of its operators.
//
// tt_custom_operators makes, once each: new int (the program's own new;
// its delete is a sized delete, which the program lacks), new char[2001] /
// delete[], nothrow new of 2002 bytes / sized delete. Prints "result 0" when every one of them went through
// the program's operators (3 news, 3 deletes), else "result 1".
#include <cstdint>
#include <cstdlib>
#include <new>

#include "target_util.h"

// Deliberately no sized delete: libstdc++'s must forward to the one below.
#pragma GCC diagnostic ignored "-Wsized-deallocation"

namespace {
constexpr uint64_t kMagic = 0x6375'7374'6f6d'6f70ull;  // "customop"
int g_news = 0;
int g_deletes = 0;
}  // namespace

void* operator new(size_t n) {
  ++g_news;
  auto* header = static_cast<uint64_t*>(malloc(n + 16));
  if (header == nullptr) throw std::bad_alloc();
  header[0] = kMagic;
  return header + 2;
}

void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  ++g_deletes;
  uint64_t* header = static_cast<uint64_t*>(p) - 2;
  if (header[0] != kMagic) abort();  // not from the operator new above
  header[0] = 0;
  free(header);
}

extern "C" {
TT_FN int tt_custom_operators() {
  int* i = new int(7);
  TtSink(i);
  delete i;
  char* a = new char[2001];
  TtSink(a);
  delete[] a;
  void* n = operator new(2002, std::nothrow);
  TtSink(n);
  operator delete(n, size_t{2002});
  return g_news == 3 && g_deletes == 3 ? 0 : 1;
}
}

int main() {
  TT_REPORT(tt_custom_operators);
  printf("result %d\n", tt_custom_operators());
  return 0;
}
