# benchmarks/cuda.cmake — CUDA benchmarks; include()d from benchmarks/CMakeLists.txt
# when the CUDA backend is built (CAPGNN_HAVE_CUDA). kernel_lab generates its own
# matrices, or reads a graph (--graph: capgnn_graph), plus cJSON for --json.
add_executable(kernel_lab ${CMAKE_CURRENT_LIST_DIR}/kernel_lab.cu)
set_target_properties(kernel_lab PROPERTIES
  CUDA_STANDARD 17
  CUDA_STANDARD_REQUIRED ON
  CUDA_SEPARABLE_COMPILATION OFF)
target_link_libraries(kernel_lab PRIVATE capgnn_cuda capgnn_graph capgnn_core PkgConfig::CJSON capgnn_warnings)
