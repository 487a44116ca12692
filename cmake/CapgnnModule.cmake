# Module boundaries, enforced by the include layout.
#
# Sources include other modules' headers as "module/header.h". No target sees the
# source tree as an include path; instead the build tree holds
#   include/public/<module>/<module>/<header>  links to the headers the module declares public
#   include/private/<module>/<module>          a link to the module's own folder
# A module's library gets its public folder as a PUBLIC include directory (so it
# reaches exactly the targets that link the library, directly or through a PUBLIC
# link of another module) and its private folder as a PRIVATE one. So:
#  - a module that includes another module's private header (*_internal.h) fails to
#    build ("No such file or directory");
#  - a module sees the public headers of the modules it links, and only those, so
#    the target links carry the dependency table of ARCHITECTURE.md, which each
#    module also declares (USES) and tests/check_boundaries.sh checks against what
#    every module can actually see.
#
#   capgnn_module(NAME m TARGET capgnn_m USES core graph PUBLIC_HEADERS a.h b.h)
#     in m/CMakeLists.txt: publishes a.h and b.h, gives capgnn_m both views and
#     records the modules m may use (ARCHITECTURE.md's table).
#   capgnn_private_access(target m)
#     lets `target` (a test of m, or a program that needs m's internals) include
#     m's private headers. capgnn_add_test does this for tests in <m>/tests/.
#   capgnn_module_views(FILE)
#     writes, for tests/check_boundaries.sh, one line per module: name, USES, the
#     include directories its sources compile with, and those its users get.
#
# In a library module every header that is not public is named *_internal.h.
# Headers are linked, not copied: editing one needs no re-configure; adding or
# removing a public header does (it is a CMakeLists.txt change anyway).

set(CAPGNN_INCLUDE_ROOT ${CMAKE_BINARY_DIR}/include)

function(capgnn_module)
  cmake_parse_arguments(M "" "NAME;TARGET" "USES;PUBLIC_HEADERS" ${ARGN})
  set(pub ${CAPGNN_INCLUDE_ROOT}/public/${M_NAME})
  # Start from an empty folder so that a header made private again disappears.
  file(REMOVE_RECURSE ${pub})
  file(MAKE_DIRECTORY ${pub}/${M_NAME})
  foreach(h ${M_PUBLIC_HEADERS})
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${h})
      message(FATAL_ERROR "capgnn_module(${M_NAME}): public header ${h} does not exist")
    endif()
    file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR}/${h} ${pub}/${M_NAME}/${h} SYMBOLIC)
  endforeach()
  set(priv ${CAPGNN_INCLUDE_ROOT}/private/${M_NAME})
  file(MAKE_DIRECTORY ${priv})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${priv}/${M_NAME} SYMBOLIC) # replaces an old link
  target_include_directories(${M_TARGET} PUBLIC ${pub} PRIVATE ${priv})
  set_property(GLOBAL APPEND PROPERTY CAPGNN_MODULE_NAMES ${M_NAME})
  set_property(GLOBAL PROPERTY CAPGNN_MODULE_TARGET_${M_NAME} ${M_TARGET})
  set_property(GLOBAL PROPERTY CAPGNN_MODULE_USES_${M_NAME} "${M_USES}")
  set_property(GLOBAL PROPERTY CAPGNN_PRIVATE_INCLUDE_${M_NAME} ${priv})
endfunction()

function(capgnn_private_access target module)
  get_property(priv GLOBAL PROPERTY CAPGNN_PRIVATE_INCLUDE_${module})
  if(NOT priv)
    message(FATAL_ERROR "capgnn_private_access(${target} ${module}): no module ${module} declared yet")
  endif()
  target_include_directories(${target} PRIVATE ${priv})
endfunction()

function(capgnn_module_views file)
  get_property(names GLOBAL PROPERTY CAPGNN_MODULE_NAMES)
  set(content "")
  foreach(m ${names})
    get_property(t GLOBAL PROPERTY CAPGNN_MODULE_TARGET_${m})
    get_property(uses GLOBAL PROPERTY CAPGNN_MODULE_USES_${m})
    string(REPLACE ";" " " uses "${uses}")
    # fields separated by "|": module, uses, compile include dirs, interface include dirs
    string(APPEND content "${m}|${uses}|$<JOIN:$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>,:>|"
           "$<JOIN:$<TARGET_PROPERTY:${t},INTERFACE_INCLUDE_DIRECTORIES>,:>\n")
  endforeach()
  file(GENERATE OUTPUT ${file} CONTENT "${content}")
endfunction()
