# Stack capture and interning for the preload tracer. Included from tracer/CMakeLists.txt; defines crossfree_stacks.
add_library(crossfree_stacks STATIC
  ${CMAKE_CURRENT_LIST_DIR}/code_ranges.cc
  ${CMAKE_CURRENT_LIST_DIR}/own_allocation.cc
  ${CMAKE_CURRENT_LIST_DIR}/stacks.cc
  ${CMAKE_CURRENT_LIST_DIR}/stack_table.cc
  ${CMAKE_CURRENT_LIST_DIR}/unwind_cfi.cc
  ${CMAKE_CURRENT_LIST_DIR}/unwind_fp.cc
  ${CMAKE_CURRENT_LIST_DIR}/unwind_libunwind.cc)
set_target_properties(crossfree_stacks PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(crossfree_stacks PUBLIC ${PROJECT_SOURCE_DIR})
# Linked into the preload library: no exceptions or RTTI on the hook path.
target_compile_options(crossfree_stacks PRIVATE -fno-exceptions -fno-rtti)
target_link_libraries(crossfree_stacks PUBLIC PkgConfig::LIBUNWIND PkgConfig::LIBDW Threads::Threads)
add_library(crossfree::stacks ALIAS crossfree_stacks)
