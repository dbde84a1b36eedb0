# Fails when libcrossfree-trace.so needs a library or a symbol it must not:
# it is loaded into any program, so it may depend on libc, the unwinders'
# libraries (libunwind, libdw, libelf) and libgcc_s only (no libstdc++: it
# must load into C programs), and it may not call into stdio, a lock, the
# C++ runtime, or the allocation functions it defines itself (a call to the
# real allocator goes through the dlsym table, never the PLT).
# Usage: cmake -DREADELF=<readelf> -DNM=<nm> -DLIB=<libcrossfree-trace.so> -P this-file
execute_process(COMMAND ${READELF} -d ${LIB} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf failed on ${LIB}")
endif()
set(allowed_needed libc.so.6 libunwind.so.8 libdw.so.1 libelf.so.1 libgcc_s.so.1)
string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" needed "${dynamic}")
set(bad_needed "")
foreach(entry IN LISTS needed)
  string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" lib "${entry}")
  list(FIND allowed_needed ${lib} idx)
  if(idx EQUAL -1)
    list(APPEND bad_needed ${lib})
  endif()
endforeach()
if(bad_needed)
  message(FATAL_ERROR "libcrossfree-trace.so needs libraries outside the allow-list: ${bad_needed}")
endif()
if(NOT needed MATCHES "libc.so.6")
  message(FATAL_ERROR "no NEEDED entries read from ${LIB}: ${dynamic}")
endif()

execute_process(COMMAND ${NM} -D --undefined-only --format=posix ${LIB}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIB}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(forbidden
  "^(malloc|calloc|realloc|free|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc)(@|$)"
  "^(printf|fprintf|vfprintf|sprintf|snprintf|vsnprintf|puts|fputs|fwrite|fopen|fclose|fflush|perror|fdopen)(@|$)"
  "^pthread_(mutex|rwlock|cond|spin)_"
  "^_Zn[wa]m|^_Zd[la]Pv|^__cxa_(guard|throw|allocate_exception|begin_catch|atexit)|^_ZTV|^_ZTI|^__dynamic_cast")
set(bad "")
set(count 0)
foreach(line IN LISTS lines)
  string(REGEX MATCH "^([^ ]+) [UwvV]" m "${line}")
  if(NOT m)
    continue()
  endif()
  math(EXPR count "${count} + 1")
  set(sym ${CMAKE_MATCH_1})
  foreach(pattern IN LISTS forbidden)
    if(sym MATCHES "${pattern}")
      list(APPEND bad ${sym})
    endif()
  endforeach()
endforeach()
if(count LESS 10)
  message(FATAL_ERROR "only ${count} undefined symbols read from ${LIB}: ${out}")
endif()
if(bad)
  message(FATAL_ERROR "libcrossfree-trace.so references forbidden symbols: ${bad}")
endif()
message(STATUS "${count} undefined symbols, NEEDED: ${needed}")
