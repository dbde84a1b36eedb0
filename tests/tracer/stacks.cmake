# Tests for stack capture and interning (tracer/stacks.cmake), and the
# known-answer workload (bench/tracer/workload.cc). Included from
# tests/tracer/CMakeLists.txt.
# Under ThreadSanitizer the test links a copy of crossfree_stacks built from
# the same sources with the sanitizer on (crossfree_stacks itself never has
# it: it goes into the preload library), so that TSan sees the stack table's
# concurrent interning and the unwinders' caches (scripts/test --tsan).
set(stacks_under_test crossfree_stacks)
if(CROSSFREE_SANITIZE MATCHES "thread")
  get_target_property(stacks_sources crossfree_stacks SOURCES)
  add_library(crossfree_stacks_tsan STATIC EXCLUDE_FROM_ALL ${stacks_sources})
  target_include_directories(crossfree_stacks_tsan PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(crossfree_stacks_tsan PRIVATE -fno-exceptions -fno-rtti)
  target_link_libraries(crossfree_stacks_tsan PUBLIC PkgConfig::LIBUNWIND PkgConfig::LIBDW
                        Threads::Threads)
  set(stacks_under_test crossfree_stacks_tsan)
endif()
add_executable(crossfree_stacks_test stack_table_test.cc capture_test.cc)
target_link_libraries(crossfree_stacks_test PRIVATE ${stacks_under_test} crossfree_catch_main
                      Threads::Threads ${CMAKE_DL_LIBS})
# dladdr must see the test's exported chain functions.
set_target_properties(crossfree_stacks_test PROPERTIES ENABLE_EXPORTS ON)
catch_discover_tests(crossfree_stacks_test TEST_PREFIX "tracer.stacks.")

# Separate binary: it interposes malloc to prove the warm hook path never
# allocates.
add_executable(crossfree_stacks_noalloc_test no_alloc_test.cc)
target_link_libraries(crossfree_stacks_noalloc_test PRIVATE crossfree_stacks crossfree_catch_main
                      Threads::Threads)
catch_discover_tests(crossfree_stacks_noalloc_test TEST_PREFIX "tracer.stacks.")

# The workload itself: a bad flag is refused with a message naming it. (Its
# counts are checked against what the tracer and the analysis see, in
# tests/e2e/analyzer_e2e_test.sh, not against its own arithmetic.)
add_test(NAME "tracer.stacks.workload rejects bad flags"
         COMMAND sh -c [=[out=$("$0" --mode sideways 2>&1); rc=$?; echo "$out"; [ $rc -eq 2 ] && echo "$out" | grep -q -- "--mode must be producer-consumer, churn or mixed"]=]
                 $<TARGET_FILE:crossfree-workload>)
