# Stops the configure step when a dependency is missing, naming the Debian
# package(s) that provide it. Included by crossfree's build
# (dependencies.cmake) and by the standalone bench/grpc project; the
# message starts with the including project's name, and ends with
# CROSSFREE_MISSING_HINT when that is set.

# The configure error for a missing WHAT.
function(crossfree_missing what packages)
  message(FATAL_ERROR "${PROJECT_NAME}: ${what} not found. Install the Debian package(s) "
                      "'${packages}'${CROSSFREE_MISSING_HINT}.")
endfunction()

# find_package(NAME), or the error. A macro: the package's variables
# (NAME_FOUND, include directories) stay in the caller's scope.
macro(crossfree_require_package name what packages)
  find_package(${name} QUIET)
  if(NOT ${name}_FOUND)
    crossfree_missing("${what}" "${packages}")
  endif()
endmacro()

# pkg-config MODULE as the imported target PkgConfig::PREFIX, or the error.
macro(crossfree_require_module prefix module what packages)
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
  if(NOT ${prefix}_FOUND)
    crossfree_missing("${what}" "${packages}")
  endif()
endmacro()
