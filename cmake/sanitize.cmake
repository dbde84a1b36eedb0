# CROSSFREE_SANITIZE: sanitizers for everything that is not injected into a
# target, e.g. -DCROSSFREE_SANITIZE=address,undefined or =thread.
# The preload tracer and what it links in (crossfree_stacks,
# crossfree_format_writer) are always built without them (see
# crossfree_no_sanitize, called from the top CMakeLists.txt); tests that
# preload the tracer carry the ctest label `preload` (ctest -LE preload).
set(CROSSFREE_SANITIZE "" CACHE STRING
    "Sanitizers for everything but the tracer (address,undefined or thread)")
# CROSSFREE_SANITIZE_SKIP: checks of those sanitizers left out
# (-fno-sanitize=...), e.g. null,alignment (scripts/test --asan says why).
set(CROSSFREE_SANITIZE_SKIP "" CACHE STRING
    "Checks of CROSSFREE_SANITIZE left out (-fno-sanitize=), e.g. null,alignment")
if(CROSSFREE_SANITIZE)
  add_compile_options(-fsanitize=${CROSSFREE_SANITIZE} -fno-sanitize-recover=all)
  if(CROSSFREE_SANITIZE_SKIP)
    add_compile_options(-fno-sanitize=${CROSSFREE_SANITIZE_SKIP})
  endif()
  add_link_options(-fsanitize=${CROSSFREE_SANITIZE})
endif()

# Removes the sanitizer flags from the given targets (they inherit the
# directory's options when created).
function(crossfree_no_sanitize)
  foreach(t IN LISTS ARGN)
    if(NOT TARGET ${t})
      continue()
    endif()
    foreach(prop COMPILE_OPTIONS LINK_OPTIONS)
      get_target_property(opts ${t} ${prop})
      if(opts)
        list(FILTER opts EXCLUDE REGEX "^-f(no-)?sanitize")
        set_property(TARGET ${t} PROPERTY ${prop} ${opts})
      endif()
    endforeach()
  endforeach()
endfunction()
