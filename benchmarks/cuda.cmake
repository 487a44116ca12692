# benchmarks/cuda.cmake — CUDA benchmarks; include()d from benchmarks/CMakeLists.txt
# when the CUDA backend is built (CAPGNN_HAVE_CUDA). Needs only capgnn_cuda and
# capgnn_core (kernel_lab generates its own matrix), plus cJSON for --json.
add_executable(kernel_lab ${CMAKE_CURRENT_LIST_DIR}/kernel_lab.cu)
set_target_properties(kernel_lab PROPERTIES
  CUDA_STANDARD 17
  CUDA_STANDARD_REQUIRED ON
  CUDA_SEPARABLE_COMPILATION OFF)
target_link_libraries(kernel_lab PRIVATE capgnn_cuda capgnn_core PkgConfig::CJSON capgnn_warnings)
