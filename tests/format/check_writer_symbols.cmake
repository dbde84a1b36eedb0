# Fails when the allocation-free writer library (linked into the preload
# tracer) references anything outside a short allow-list: no malloc, no
# stdio, no libstdc++ runtime (operator new, exceptions, RTTI, guards).
# Usage: cmake -DNM=<nm> -DLIB=<libcrossfree_format_writer.a> -P this-file
execute_process(COMMAND ${NM} -u --format=posix ${LIB}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIB}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(allowed _GLOBAL_OFFSET_TABLE_ memcpy memset memmove)
set(undefined "")
foreach(line IN LISTS lines)
  string(REGEX MATCH "^([^ ]+) U" m "${line}")
  if(NOT m)
    continue()
  endif()
  set(sym ${CMAKE_MATCH_1})
  # Our own symbols defined in the other object of the library.
  if(sym MATCHES "^_ZN9crossfree6format")
    continue()
  endif()
  list(APPEND undefined ${sym})
endforeach()
set(bad ${undefined})
list(REMOVE_ITEM bad ${allowed})
if(bad)
  message(FATAL_ERROR "crossfree_format_writer references forbidden symbols: ${bad}")
endif()
message(STATUS "crossfree_format_writer: only allowed external symbols")
