# The tracer's tcmalloc central free-list interposers (docs/guide/central.md),
# checked against the independent counting preload
# (tests/analyzer/simulate/tc_count_preload.cc) in the same run. Included from
# tests/tracer/CMakeLists.txt.
add_executable(central_target targets/central_target.cc)
target_compile_options(central_target PRIVATE -O1 -fno-builtin)
target_link_libraries(central_target PRIVATE Threads::Threads)

find_file(CROSSFREE_CENTRAL_TCMALLOC_SO NAMES libtcmalloc.so.4
  PATHS /usr/lib/x86_64-linux-gnu NO_DEFAULT_PATH)

crossfree_preload_test(central_tracer_test SOURCES central_tracer_test.cc PREFIX "tracer.central."
  DEFINITIONS CROSSFREE_CENTRAL_TARGET="$<TARGET_FILE:central_target>"
              CROSSFREE_TCCOUNT_LIB="$<TARGET_FILE:crossfree-tccount>"
              CROSSFREE_TCMALLOC_SO="${CROSSFREE_CENTRAL_TCMALLOC_SO}"
  DEPENDS central_target crossfree-tccount)
