# Symbolizer tests: known call sites in this executable, in a dlopen'd plugin
# and in libc, symbolized through crossfree_symbolizer. Included from
# tests/analyzer/model/CMakeLists.txt.

# The call sites: tail calls off so every capture is a real call/return.
add_library(symbolizer_test_sites STATIC symbolizer_test_lib.cc)
target_include_directories(symbolizer_test_sites PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(symbolizer_test_sites PUBLIC crossfree_bench_process_modules)
target_compile_options(symbolizer_test_sites PRIVATE -g -fno-optimize-sibling-calls)

add_library(symbolizer_test_plugin MODULE symbolizer_test_plugin.cc)
target_include_directories(symbolizer_test_plugin PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_options(symbolizer_test_plugin PRIVATE -g -fno-optimize-sibling-calls)
set_target_properties(symbolizer_test_plugin PROPERTIES PREFIX "lib")

# A copy of the plugin without DWARF, and its DWARF alone (what a Debian
# -dbgsym package holds); the test files the latter under .build-id/.
set(separate_debug_dir ${CMAKE_CURRENT_BINARY_DIR}/separate-debug)
add_custom_command(TARGET symbolizer_test_plugin POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${separate_debug_dir}
  COMMAND ${CMAKE_OBJCOPY} --only-keep-debug $<TARGET_FILE:symbolizer_test_plugin>
          ${separate_debug_dir}/plugin.debug
  COMMAND ${CMAKE_STRIP} --strip-debug -o ${separate_debug_dir}/libsymbolizer_test_stripped.so
          $<TARGET_FILE:symbolizer_test_plugin>
  VERBATIM)

# A non-PIE executable (ET_EXEC, load bias 0) whose site the test symbolizes.
add_executable(symbolizer_nopie_helper nopie_helper.cc)
target_link_libraries(symbolizer_nopie_helper PRIVATE symbolizer_test_sites)
set_target_properties(symbolizer_nopie_helper PROPERTIES POSITION_INDEPENDENT_CODE OFF)
target_compile_options(symbolizer_nopie_helper PRIVATE -fno-pie)
target_link_options(symbolizer_nopie_helper PRIVATE -no-pie)

add_executable(symbolizer_test symbolizer_test.cc)
target_link_libraries(symbolizer_test PRIVATE crossfree_symbolizer symbolizer_test_sites
                      crossfree_test_support crossfree_catch_main ${CMAKE_DL_LIBS})
target_compile_definitions(symbolizer_test PRIVATE
  CROSSFREE_SYMBOLIZER_PLUGIN="$<TARGET_FILE:symbolizer_test_plugin>"
  CROSSFREE_SYMBOLIZER_SEPARATE_DEBUG_DIR="${separate_debug_dir}"
  CROSSFREE_SYMBOLIZER_NOPIE_HELPER="$<TARGET_FILE:symbolizer_nopie_helper>")
add_dependencies(symbolizer_test symbolizer_test_plugin symbolizer_nopie_helper)
catch_discover_tests(symbolizer_test TEST_PREFIX "analyzer.model.symbolizer.")
