/* mpi/staging_internal.h — private to mpi/: pinned host buffers and asynchronous
 * copies on the CUDA backend's stream, for the MPI_STAGED path of the CUDA backend
 * itself (staging.c). Without CUDA in the build they return CG_ERR_UNSUPPORTED;
 * comm_path_select never picks pinned staging then. `be` must be a CUDA backend. */
#ifndef CAPGNN_MPI_STAGING_INTERNAL_H
#define CAPGNN_MPI_STAGING_INTERNAL_H

#include <stddef.h>

#include "core/ops.h"

/* `what` names the buffer in the out-of-memory message. */
int comm_pinned_alloc(void **p, size_t bytes, const char *what);
void comm_pinned_free(void *p); /* accepts NULL */
/* cudaMemcpyAsync on the backend's stream (device -> host, host -> device); 0 bytes
 * is a no-op. */
int comm_dev_d2h(struct cg_backend *be, void *h_dst, const void *d_src, size_t bytes);
int comm_dev_h2d(struct cg_backend *be, void *d_dst, const void *h_src, size_t bytes);
/* cudaStreamSynchronize of the backend's stream, as a status. */
int comm_dev_sync(struct cg_backend *be);

#endif
