/* mpi/gpu_bind_internal.h — private to mpi/: which ranks of a host share a GPU, as
 * the path choice needs it to keep NCCL away from shared GPUs (gpu_bind.c). */
#ifndef CAPGNN_MPI_GPU_BIND_INTERNAL_H
#define CAPGNN_MPI_GPU_BIND_INTERNAL_H

#include "mpi/comm_internal.h"

/* *out = the UUID of CUDA device dev ("GPU-..."), cached in c (one device per rank in
 * practice). Without CUDA in the build: CG_ERR_UNSUPPORTED. Local. */
int comm_gpu_uuid(struct comm *c, int dev, const char **out);
/* *count = ranks of this host whose UUID string equals `mine` (0 when mine is ""),
 * *maxc = the largest such count over the world. Collective over the world. */
int comm_gpu_count_same(struct comm *c, const char *mine, int *count, int *maxc);

#endif
