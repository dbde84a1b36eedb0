# Finds crossfree's dependencies, all Debian packages. A missing one stops the
# configure step with the name of the package that provides it; scripts/setup
# installs them all.
include(FindPkgConfig)
include(${CMAKE_CURRENT_LIST_DIR}/require.cmake)
set(CROSSFREE_MISSING_HINT " (scripts/setup installs every dependency)")

crossfree_require_package(PkgConfig "pkg-config" "pkg-config")
find_package(Threads REQUIRED)
crossfree_require_package(fmt "fmt" "libfmt-dev")
crossfree_require_package(CLI11 "CLI11" "libcli11-dev")

find_package(Protobuf QUIET)
if(NOT Protobuf_FOUND OR NOT Protobuf_PROTOC_EXECUTABLE)
  crossfree_missing("protobuf and protoc" "libprotobuf-dev libprotoc-dev protobuf-compiler")
endif()

# pprof's own schema of its profile format (report --format pprof,
# analyzer/render/pprof.cc), as Debian ships it with pprof's sources.
find_file(CROSSFREE_PPROF_PROTO profile.proto
          PATHS /usr/share/gocode/src/github.com/google/pprof/proto NO_DEFAULT_PATH)
if(NOT CROSSFREE_PPROF_PROTO)
  crossfree_missing("pprof's profile.proto" "golang-github-google-pprof-dev")
endif()

# Boost.Math, header-only: the exact Poisson intervals of sampled traces
# (analyzer/model/estimate.cc).
find_package(Boost 1.74 QUIET)
if(NOT Boost_FOUND OR NOT EXISTS "${Boost_INCLUDE_DIRS}/boost/math/special_functions/gamma.hpp")
  crossfree_missing("Boost.Math headers" "libboost-math1.74-dev")
endif()

crossfree_require_module(LIBUNWIND libunwind "libunwind" "libunwind-dev")
crossfree_require_module(LIBDW libdw "elfutils libdw" "libdw-dev")
crossfree_require_module(TCMALLOC libtcmalloc "gperftools tcmalloc" "libgoogle-perftools-dev")
# Static archive, for the test target that links tcmalloc into the executable.
find_library(TCMALLOC_STATIC_LIB NAMES libtcmalloc.a)

crossfree_require_module(JEMALLOC jemalloc "jemalloc" "libjemalloc-dev")

# Compressed trace chunks (format/chunk_codec.cc).
find_path(ZSTD_INCLUDE_DIR zstd.h)
find_library(ZSTD_LIBRARY zstd)
if(NOT ZSTD_INCLUDE_DIR OR NOT ZSTD_LIBRARY)
  crossfree_missing("zstd" "libzstd-dev")
endif()

find_path(LIBEV_INCLUDE_DIR ev.h)
find_library(LIBEV_LIBRARY ev)
if(NOT LIBEV_INCLUDE_DIR OR NOT LIBEV_LIBRARY)
  crossfree_missing("libev" "libev-dev")
endif()
add_library(crossfree_libev INTERFACE)
target_include_directories(crossfree_libev INTERFACE ${LIBEV_INCLUDE_DIR})
target_link_libraries(crossfree_libev INTERFACE ${LIBEV_LIBRARY})
add_library(libev::libev ALIAS crossfree_libev)

if(CROSSFREE_TESTS)
  crossfree_require_package(Catch2 "Catch2" "catch2")
endif()
