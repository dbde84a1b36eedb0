// SPDX-License-Identifier: Apache-2.0
// Simulate tests: the modelled size classes against the real allocator.
// gperftools has no public size-class API, but tc_nallocx(size, 0) returns
// the size of the class a request lands in, so the whole table is checked
// against Debian's libtcmalloc.so.4 (loaded with dlopen, RTLD_LOCAL: it does
// not replace this process's malloc).
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include "analyzer/simulate/tcmalloc_model.h"

// LeakSanitizer (scripts/test --asan) reads this at exit. Loading
// libtcmalloc.so.4 runs its MallocExtension::Register, which allocates a
// default MallocExtension and then overwrites the only pointer to it with
// tcmalloc's own (gperftools tells its heap checker to ignore the object):
// a leak by design, in the library, once per process.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:MallocExtension::Register\n";
}

namespace crossfree::analyzer::simulate {
namespace {

TEST_CASE("size classes: every size up to 256 KiB matches tc_nallocx of libtcmalloc.so.4",
          "[simulate]") {
  void* lib = dlopen("libtcmalloc.so.4", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) FAIL("libtcmalloc.so.4 not loadable: " << dlerror());
  auto nallocx = reinterpret_cast<size_t (*)(size_t, int)>(dlsym(lib, "tc_nallocx"));
  REQUIRE(nallocx != nullptr);
  SizeMap map;
  uint64_t mismatches = 0;
  uint64_t first_bad = 0;
  for (uint64_t size = 0; size <= kMaxSize; ++size) {
    int cl = map.SizeClass(size);
    uint64_t modelled = cl == 0 ? 0 : map.ClassSize(cl);
    if (modelled != nallocx(size, 0)) {
      if (mismatches++ == 0) first_bad = size;
    }
  }
  INFO("first mismatch at size " << first_bad);
  CHECK(mismatches == 0);
  // 85 classes plus the unused class 0, as the library's table has.
  CHECK(map.num_classes() == 86);
  CHECK(map.SizeClass(kMaxSize + 1) == 0);
}

TEST_CASE("size classes: known classes and batch sizes (NumMoveSize, cap 32)", "[simulate]") {
  SizeMap map;
  struct Row {
    uint64_t size;
    uint64_t class_size;
    int batch;  // min(32, max(2, 65536 / class_size))
  };
  for (const Row& r : {Row{0, 8, 32}, Row{1, 8, 32}, Row{9, 16, 32}, Row{17, 32, 32},
                       Row{1000, 1024, 32}, Row{1025, 1152, 32}, Row{4000, 4096, 16},
                       Row{8192, 8192, 8}, Row{32768, 32768, 2}, Row{40000, 40960, 2},
                       Row{262144, 262144, 2}}) {
    INFO("size " << r.size);
    int cl = map.SizeClass(r.size);
    CHECK(map.ClassSize(cl) == r.class_size);
    CHECK(map.NumObjectsToMove(cl) == r.batch);
  }
  // TCMALLOC_TRANSFER_NUM_OBJ caps the batch.
  SizeMap small_batches(8);
  CHECK(small_batches.NumObjectsToMove(small_batches.SizeClass(32)) == 8);
}

}  // namespace
}  // namespace crossfree::analyzer::simulate
