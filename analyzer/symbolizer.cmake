# Symbolization of recorded return addresses with elfutils libdw (libdwfl
# offline reporting). Included from analyzer/CMakeLists.txt; defines
# crossfree_symbolizer (alias crossfree::symbolizer).
add_library(crossfree_symbolizer STATIC ${CMAKE_CURRENT_LIST_DIR}/symbolizer.cc)
target_include_directories(crossfree_symbolizer PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(crossfree_symbolizer PUBLIC PkgConfig::LIBDW)
add_library(crossfree::symbolizer ALIAS crossfree_symbolizer)
