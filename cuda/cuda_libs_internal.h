/* cuda/cuda_libs_internal.h — cuBLAS and cuSPARSE, loaded when the first CUDA
 * backend is created instead of when the program starts.
 *
 * Why. Linked normally, libcublasLt's start-up code alone makes ~210 MB of every
 * process resident (its tables are written at load time), and cuSPARSE with
 * nvJitLink another ~35 MB: a CPU rank of a CUDA build paid ~250 MB before it read a
 * byte of its graph, which made its set-up peak 1.5x its partition instead of the
 * 1.13x of a CPU-only build. Loaded with dlopen, only ranks that use a GPU pay.
 *
 * Use: cuda_libs_load() once (idempotent, thread-safe), then call the functions
 * through cuda_lib: cuda_lib.cublasCreate(&h). The field names are the API names,
 * macro-expanded as in the headers (cublasCreate is cublasCreate_v2), so a call reads
 * like the plain API and each pointer is checked against the header's prototype. */
#ifndef CAPGNN_CUDA_LIBS_INTERNAL_H
#define CAPGNN_CUDA_LIBS_INTERNAL_H

#include <cublas_v2.h>
#ifndef DISABLE_CUSPARSE_DEPRECATED
#define DISABLE_CUSPARSE_DEPRECATED /* the legacy types; we use only the generic API */
#endif
#include <cusparse.h>

/* Every function the project calls, by library. A new call needs its name here. */
#define CUDA_LIBS_CUBLAS(X) \
  X(cublasCreate)           \
  X(cublasDestroy)          \
  X(cublasSetStream)        \
  X(cublasSetWorkspace)     \
  X(cublasSetMathMode)      \
  X(cublasSgemm_64)         \
  X(cublasGetProperty)      \
  X(cublasGetStatusString)
#define CUDA_LIBS_CUSPARSE(X)  \
  X(cusparseCreate)            \
  X(cusparseDestroy)           \
  X(cusparseSetStream)         \
  X(cusparseCreateCsr)         \
  X(cusparseDestroySpMat)      \
  X(cusparseCreateDnMat)       \
  X(cusparseCreateConstDnMat)  \
  X(cusparseDestroyDnMat)      \
  X(cusparseSpMM_bufferSize)   \
  X(cusparseSpMM)              \
  X(cusparseGetErrorString)

#define CUDA_LIBS_FIELD(fn) __typeof__(fn) *fn;
struct cuda_libs {
  CUDA_LIBS_CUBLAS(CUDA_LIBS_FIELD)
  CUDA_LIBS_CUSPARSE(CUDA_LIBS_FIELD)
};
#undef CUDA_LIBS_FIELD

/* Filled by cuda_libs_load(); all NULL before. */
extern struct cuda_libs cuda_lib;

/* Loads both libraries and every function above. CG_OK, or CG_ERR_CUDA with a
 * message naming the library, where it was looked for and what the loader said
 * (cg_err_msg()). A failure is remembered: later calls return it again. */
int cuda_libs_load(void);

#endif
