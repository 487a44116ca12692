/* mpi/nccl_internal.h — private to mpi/: the world's NCCL communicator and the two
 * operations the NCCL path needs (nccl.c). Without NCCL in the build they return
 * CG_ERR_UNSUPPORTED; comm_path_select never picks NCCL then. `be` must be a CUDA
 * backend on the device NCCL was started on. */
#ifndef CAPGNN_MPI_NCCL_INTERNAL_H
#define CAPGNN_MPI_NCCL_INTERNAL_H

#include <stdint.h>

#include "core/ops.h"
#include "mpi/comm_internal.h"

/* Start NCCL over the world on CUDA device dev (c->nccl, c->nccl_dev) and hand its
 * release to comm_finalize (comm_release_set). Collective; on failure every rank
 * returns an error and nothing is left started. */
int comm_nccl_start(struct comm *c, int dev);
/* One NCCL group: for each of the n neighbours, send scnt[k] rows of `cols` floats
 * from sbuf + sdsp[k] rows and receive rcnt[k] rows into rbuf + rdsp[k] rows
 * (zero counts skipped), on `stream` (a cudaStream_t; NULL: the backend's stream). */
int comm_nccl_exchange(struct comm *c, struct cg_backend *be, void *stream, int n, const int *peer,
                       const float *sbuf, const int *scnt, const int *sdsp, float *rbuf,
                       const int *rcnt, const int *rdsp, int64_t cols);
/* In-place sum of n floats over the world on the backend's stream. */
int comm_nccl_allreduce(struct comm *c, struct cg_backend *be, float *buf, int64_t n);

/* One round trip of `bytes` bytes with `peer` on the backend's stream (enqueued; the
 * caller synchronises): the initiator sends sbuf then receives into rbuf, the other
 * receives into rbuf then sends rbuf back. */
int comm_nccl_roundtrip(struct comm *c, struct cg_backend *be, int initiator, int peer,
                        const void *sbuf, void *rbuf, size_t bytes);
/* ncclGetVersion, 0 without NCCL in the build (or when it fails). */
int comm_nccl_version(void);

#endif
