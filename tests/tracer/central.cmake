# The tracer's tcmalloc central free-list interposers (docs/guide/central.md),
# checked against the independent counting preload
# (tests/simulate/tc_count_preload.cc) in the same run. Included from
# tests/tracer/CMakeLists.txt.
add_executable(central_target targets/central_target.cc)
target_compile_options(central_target PRIVATE -O1 -fno-builtin)
target_link_libraries(central_target PRIVATE Threads::Threads)

find_file(CROSSFREE_CENTRAL_TCMALLOC_SO NAMES libtcmalloc.so.4
  PATHS /usr/lib/x86_64-linux-gnu NO_DEFAULT_PATH)

add_executable(central_tracer_test central_tracer_test.cc tracer_test_util.cc)
target_include_directories(central_tracer_test PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(central_tracer_test PRIVATE crossfree::format crossfree_test_support
                      crossfree_catch_main)
target_compile_definitions(central_tracer_test PRIVATE
  CROSSFREE_TT_DIR="${TRACER_TARGET_DIR}"
  CROSSFREE_CENTRAL_TARGET="$<TARGET_FILE:central_target>"
  CROSSFREE_TRACER_LIB="$<TARGET_FILE:crossfree-trace>"
  CROSSFREE_TCCOUNT_LIB="$<TARGET_FILE:crossfree-tccount>"
  CROSSFREE_TCMALLOC_SO="${CROSSFREE_CENTRAL_TCMALLOC_SO}")
add_dependencies(central_tracer_test central_target crossfree-trace crossfree-tccount)
catch_discover_tests(central_tracer_test TEST_PREFIX "central: " PROPERTIES LABELS preload)
