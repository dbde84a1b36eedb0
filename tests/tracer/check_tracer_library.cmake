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
string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" bad_needed "${needed}")
list(REMOVE_ITEM bad_needed ${allowed_needed})
if(bad_needed)
  message(FATAL_ERROR "libcrossfree-trace.so needs libraries outside the allow-list: ${bad_needed}")
endif()
if(NOT needed MATCHES "libc.so.6")
  message(FATAL_ERROR "no NEEDED entries read from ${LIB}: ${dynamic}")
endif()

# nm_symbols(VAR FLAG TYPES): the names `nm -D FLAG` lists with a type
# letter in TYPES, without their version suffix, each once.
function(nm_symbols var flag types)
  execute_process(COMMAND ${NM} -D ${flag} --format=posix ${LIB}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm ${flag} failed on ${LIB}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(names "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([^ @]+)(@[^ ]*)? [${types}]( |$)")
      list(APPEND names ${CMAKE_MATCH_1})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${var} "${names}" PARENT_SCOPE)
endfunction()

nm_symbols(undefined --undefined-only UwvV)
set(forbidden
  "^(malloc|calloc|realloc|free|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc)$"
  "^(printf|fprintf|vfprintf|sprintf|snprintf|vsnprintf|puts|fputs|fwrite|fopen|fclose|fflush|perror|fdopen)$"
  "^pthread_(mutex|rwlock|cond|spin)_"
  "^_Zn[wa]m|^_Zd[la]Pv|^__cxa_(guard|throw|allocate_exception|begin_catch|atexit)|^_ZTV|^_ZTI|^__dynamic_cast")
set(bad "")
foreach(sym IN LISTS undefined)
  foreach(pattern IN LISTS forbidden)
    if(sym MATCHES "${pattern}")
      list(APPEND bad ${sym})
    endif()
  endforeach()
endforeach()
list(LENGTH undefined count)
if(count LESS 10)
  message(FATAL_ERROR "only ${count} undefined symbols read from ${LIB}")
endif()
if(bad)
  message(FATAL_ERROR "libcrossfree-trace.so references forbidden symbols: ${bad}")
endif()

# Exports: exactly the hook table's symbols (the version script generated
# from tracer/hook_table.h), each defined.
if(DEFINED MAP)
  file(READ ${MAP} map_text)
  # The rows are "    SYMBOL;" (4 spaces); semicolons would split a CMake list.
  string(REPLACE ";" "" map_text "${map_text}")
  string(REGEX MATCHALL "\n    [^ \n]+" rows "${map_text}")
  set(want "")
  foreach(row IN LISTS rows)
    string(STRIP "${row}" sym)
    list(APPEND want ${sym})
  endforeach()
  list(LENGTH want want_n)
  if(want_n LESS 40)
    message(FATAL_ERROR "only ${want_n} symbols read from the version script ${MAP}")
  endif()
  nm_symbols(have --defined-only TWiV)
  set(missing ${want})
  set(extra ${have})
  if(have)
    list(REMOVE_ITEM missing ${have})
  endif()
  list(REMOVE_ITEM extra ${want})
  if(missing)
    message(FATAL_ERROR "hook table rows the library does not define: ${missing}")
  endif()
  if(extra)
    message(FATAL_ERROR "exported symbols that are not in the hook table: ${extra}")
  endif()
  message(STATUS "${want_n} exported hooks, as in tracer/hook_table.h")
endif()
message(STATUS "${count} undefined symbols, NEEDED: ${needed}")
