# capgnn_add_test(NAME name SOURCES a.c ... LIBS lib ... LABELS unit|gpu|mpi|e2e|slow
#                 [MPI_RANKS n] [ARGS ...] [TIMEOUT s])
# Builds one cmocka (or plain) test executable into bin/ and registers it with CTest.
# Exit code 77 means "skipped" (a GPU test without a GPU, a dataset that is absent).
# MPI_RANKS runs it under mpiexec -n N --oversubscribe (allowed as root for CI containers).
function(capgnn_add_test)
  cmake_parse_arguments(T "" "NAME;MPI_RANKS;TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  if(NOT TARGET ${T_NAME})
    add_executable(${T_NAME} ${T_SOURCES})
    target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} PkgConfig::CMOCKA capgnn_warnings)
    target_compile_definitions(${T_NAME} PRIVATE CAPGNN_TEST_DATASETS="${CAPGNN_TEST_DATASETS}")
    # A test sees the public headers of the libraries it links; a module's tests
    # (<module>/tests/) may also use its private headers, tests/ may not.
    get_filename_component(parent ${CMAKE_CURRENT_SOURCE_DIR} DIRECTORY)
    get_filename_component(module ${parent} NAME)
    get_property(priv GLOBAL PROPERTY CAPGNN_PRIVATE_INCLUDE_${module})
    if(priv)
      capgnn_private_access(${T_NAME} ${module})
    endif()
  endif()
  set(test_name ${T_NAME})
  if(T_MPI_RANKS)
    set(test_name ${T_NAME}_np${T_MPI_RANKS})
    add_test(NAME ${test_name} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_MPI_RANKS}
             --oversubscribe --allow-run-as-root $<TARGET_FILE:${T_NAME}> ${T_ARGS})
  else()
    add_test(NAME ${test_name} COMMAND ${T_NAME} ${T_ARGS})
  endif()
  set_tests_properties(${test_name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${T_LABELS}")
  if(T_TIMEOUT)
    set_tests_properties(${test_name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  endif()
endfunction()
