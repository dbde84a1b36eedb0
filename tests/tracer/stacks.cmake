# Tests for stack capture and interning (tracer/stacks.cmake), and the
# known-answer workload (bench/tracer/workload.cc). Included from
# tests/tracer/CMakeLists.txt.
add_executable(crossfree_stacks_test stack_table_test.cc capture_test.cc)
target_link_libraries(crossfree_stacks_test PRIVATE crossfree_stacks crossfree_catch_main
                      Threads::Threads ${CMAKE_DL_LIBS})
# dladdr must see the test's exported chain functions.
set_target_properties(crossfree_stacks_test PROPERTIES ENABLE_EXPORTS ON)
catch_discover_tests(crossfree_stacks_test TEST_PREFIX "stacks.")

# Separate binary: it interposes malloc to prove the warm hook path never
# allocates.
add_executable(crossfree_stacks_noalloc_test no_alloc_test.cc)
target_link_libraries(crossfree_stacks_noalloc_test PRIVATE crossfree_stacks crossfree_catch_main
                      Threads::Threads)
catch_discover_tests(crossfree_stacks_noalloc_test TEST_PREFIX "stacks.")

# Its expected counts, per mode (2 producers): allocs = 2*objects*(1+churn);
# cross-thread = every object (producer-consumer), none (churn), or the
# even-numbered ones (mixed).
add_test(NAME "stacks.workload producer-consumer counts"
         COMMAND crossfree-workload --mode producer-consumer --objects 1000 --churn 2)
set_tests_properties("stacks.workload producer-consumer counts" PROPERTIES PASS_REGULAR_EXPRESSION
  "expected: allocs=6000 frees=6000 cross_thread=2000 same_thread=4000\n")
add_test(NAME "stacks.workload churn counts"
         COMMAND crossfree-workload --mode churn --objects 1000 --producers 3)
set_tests_properties("stacks.workload churn counts" PROPERTIES PASS_REGULAR_EXPRESSION
  "expected: allocs=6000 frees=6000 cross_thread=0 same_thread=6000\n")
add_test(NAME "stacks.workload mixed counts"
         COMMAND crossfree-workload --mode mixed --objects 1001 --consumers 3 --churn 0)
set_tests_properties("stacks.workload mixed counts" PROPERTIES PASS_REGULAR_EXPRESSION
  "expected: allocs=2002 frees=2002 cross_thread=1002 same_thread=1000\n")
add_test(NAME "stacks.workload rejects bad flags" COMMAND crossfree-workload --mode sideways)
set_tests_properties("stacks.workload rejects bad flags" PROPERTIES WILL_FAIL TRUE)
