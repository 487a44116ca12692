# Module boundaries, enforced by the include layout.
#
# Sources include other modules' headers as "module/header.h". No target sees the
# source tree as an include path; instead the build tree holds
#   include/public/<module>/<header>  links to the headers each module declares public
#   include/private/<module>/<module> a link to the module's own folder
# Every target sees include/public; only a module's own library, its tests and the
# targets it names with capgnn_private_access see include/private/<module>. A module
# that includes another module's private header therefore fails to build with
# "No such file or directory" (tested by tests/boundary_*).
#
#   capgnn_module(NAME m TARGET capgnn_m PUBLIC_HEADERS a.h b.h)
#     in m/CMakeLists.txt: publishes a.h and b.h, gives capgnn_m its private view.
#   capgnn_private_access(target m)
#     lets `target` (a test of m, or a program that needs m's internals, such as a
#     kernel benchmark) include m's private headers.
#
# Headers are linked, not copied: editing one needs no re-configure; adding or
# removing a public header does (it is a CMakeLists.txt change anyway).

set(CAPGNN_PUBLIC_INCLUDE ${CMAKE_BINARY_DIR}/include/public)

function(capgnn_module)
  cmake_parse_arguments(M "" "NAME;TARGET" "PUBLIC_HEADERS" ${ARGN})
  set(dir ${CAPGNN_PUBLIC_INCLUDE}/${M_NAME})
  # Start from an empty folder so a header made private again disappears.
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  foreach(h ${M_PUBLIC_HEADERS})
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${h})
      message(FATAL_ERROR "capgnn_module(${M_NAME}): public header ${h} does not exist")
    endif()
    file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR}/${h} ${dir}/${h} SYMBOLIC)
  endforeach()
  set(priv ${CMAKE_BINARY_DIR}/include/private/${M_NAME})
  file(MAKE_DIRECTORY ${priv})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${priv}/${M_NAME} SYMBOLIC) # replaces an old link
  set_property(GLOBAL PROPERTY CAPGNN_PRIVATE_INCLUDE_${M_NAME} ${priv})
  if(M_TARGET)
    target_include_directories(${M_TARGET} PUBLIC ${CAPGNN_PUBLIC_INCLUDE} PRIVATE ${priv})
  endif()
endfunction()

function(capgnn_private_access target module)
  get_property(priv GLOBAL PROPERTY CAPGNN_PRIVATE_INCLUDE_${module})
  if(NOT priv)
    message(FATAL_ERROR "capgnn_private_access(${target} ${module}): no module ${module} declared yet")
  endif()
  target_include_directories(${target} PRIVATE ${priv})
endfunction()
