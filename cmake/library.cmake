# crossfree_add_library(NAME SOURCE...): the static library crossfree_NAME
# with the repository root on its public include path (its headers name
# each other "folder/file.h") and the alias crossfree::NAME that the other
# targets link. Dependencies and anything else stay with the caller.
function(crossfree_add_library name)
  add_library(crossfree_${name} STATIC ${ARGN})
  target_include_directories(crossfree_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  add_library(crossfree::${name} ALIAS crossfree_${name})
endfunction()
