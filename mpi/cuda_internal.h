/* mpi/cuda_internal.h — private to mpi/: CUDA runtime errors as statuses, for the
 * files of mpi/ that call the CUDA runtime (gpu_bind.c, nccl.c, staging.c). Include
 * it only where CAPGNN_HAVE_CUDA is defined. */
#ifndef CAPGNN_MPI_CUDA_INTERNAL_H
#define CAPGNN_MPI_CUDA_INTERNAL_H

#ifndef CAPGNN_HAVE_CUDA
#error "mpi/cuda_internal.h is for builds with CUDA (CAPGNN_HAVE_CUDA)"
#endif

#include <cuda_runtime_api.h>

#include "core/status.h"

/* CG_ERR_CUDA with "what: call failed: CUDA's string". Clears CUDA's last error: a
 * handled error must not resurface at the next check. */
static inline int comm_cuda_fail(cudaError_t e, const char *call, const char *what) {
  (void)cudaGetLastError();
  return cg_err_set(CG_ERR_CUDA, "%s: %s failed: %s", what, call, cudaGetErrorString(e));
}

#define COMM_CUDA_TRY(call, what)                                      \
  do {                                                                 \
    cudaError_t ce_ = (call);                                          \
    if (ce_ != cudaSuccess) return comm_cuda_fail(ce_, #call, (what)); \
  } while (0)

#endif
