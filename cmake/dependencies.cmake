# Finds crossfree's dependencies, all Debian packages. A missing one stops the
# configure step with the name of the package that provides it; scripts/setup
# installs them all.
include(FindPkgConfig)

function(crossfree_missing what package)
  message(FATAL_ERROR
    "crossfree: ${what} not found. Install the Debian package '${package}' "
    "(scripts/setup installs every dependency).")
endfunction()

find_package(PkgConfig QUIET)
if(NOT PkgConfig_FOUND)
  crossfree_missing("pkg-config" "pkg-config")
endif()

find_package(Threads REQUIRED)

find_package(fmt QUIET)
if(NOT fmt_FOUND)
  crossfree_missing("fmt" "libfmt-dev")
endif()

find_package(CLI11 QUIET)
if(NOT CLI11_FOUND)
  crossfree_missing("CLI11" "libcli11-dev")
endif()

find_package(Protobuf QUIET)
if(NOT Protobuf_FOUND OR NOT Protobuf_PROTOC_EXECUTABLE)
  crossfree_missing("protobuf and protoc" "libprotobuf-dev libprotoc-dev protobuf-compiler")
endif()

# Boost.Math, header-only: the exact Poisson intervals of sampled traces
# (analyzer/model/estimate.cc).
find_package(Boost 1.74 QUIET)
if(NOT Boost_FOUND OR NOT EXISTS "${Boost_INCLUDE_DIRS}/boost/math/special_functions/gamma.hpp")
  crossfree_missing("Boost.Math headers" "libboost-math1.74-dev")
endif()

pkg_check_modules(LIBUNWIND QUIET IMPORTED_TARGET libunwind)
if(NOT LIBUNWIND_FOUND)
  crossfree_missing("libunwind" "libunwind-dev")
endif()

pkg_check_modules(LIBDW QUIET IMPORTED_TARGET libdw)
if(NOT LIBDW_FOUND)
  crossfree_missing("elfutils libdw" "libdw-dev")
endif()

pkg_check_modules(TCMALLOC QUIET IMPORTED_TARGET libtcmalloc)
if(NOT TCMALLOC_FOUND)
  crossfree_missing("gperftools tcmalloc" "libgoogle-perftools-dev")
endif()
# Static archive, for the test target that links tcmalloc into the executable.
find_library(TCMALLOC_STATIC_LIB NAMES libtcmalloc.a)

pkg_check_modules(JEMALLOC QUIET IMPORTED_TARGET jemalloc)
if(NOT JEMALLOC_FOUND)
  crossfree_missing("jemalloc" "libjemalloc-dev")
endif()

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
  find_package(Catch2 QUIET)
  if(NOT Catch2_FOUND)
    crossfree_missing("Catch2" "catch2")
  endif()
endif()
