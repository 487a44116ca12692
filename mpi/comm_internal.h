/* mpi/comm_internal.h — private to mpi/: the comm struct and MPI error helpers.
 * Only files of mpi/ include this (and mpi.h). */
#ifndef CAPGNN_MPI_COMM_INTERNAL_H
#define CAPGNN_MPI_COMM_INTERNAL_H

#include <mpi.h>

#include "core/status.h"
#include "mpi/comm.h"

struct comm {
  MPI_Comm world; /* dup of MPI_COMM_WORLD, MPI_ERRORS_RETURN */
  MPI_Comm host;  /* ranks sharing memory (MPI_COMM_TYPE_SHARED) */
  MPI_Comm node;  /* host, or an emulated sub-node of it */
  int rank, size;
  int node_id, nnodes, local_rank, local_size;
  int host_local_rank, host_local_size;
  int we_initialised; /* comm_init called MPI_Init_thread, so finalize calls MPI_Finalize */
  struct comm_stats stats;
  /* GPU placement and communication path (mpi/gpu.c) */
  enum comm_path path_req;    /* comm_set_path (AUTO by default) */
  int path_logged;            /* last path (x16, + request) announced at INFO, -1: none */
  int gpu_ordinal, gpu_share; /* comm_gpu_bind: -1 / 0 before */
  int uuid_dev;               /* device whose UUID is cached in uuid, -1: none */
  char uuid[48];
  int cuda_aware;             /* MPI accepts device pointers: -1 not asked yet, 0, 1 */
  const char *cuda_aware_how; /* where that answer came from (for messages) */
  int warned_host_forced;     /* warned that a forced GPU path does not apply to the CPU backend */
  void *nccl;                 /* ncclComm_t over the world, started by the first NCCL object */
  int nccl_dev;               /* its device */
  int nccl_failed;            /* AUTO tried NCCL and it did not start: do not try again */
};

/* What comm_path_select decided for one object.
 * pinned: MPI_STAGED on the CUDA backend itself (pinned buffers, async copies on its
 *   stream); 0 on MPI_STAGED means staging through be->download / be->upload.
 * p2p: halo by MPI_Isend/Irecv instead of the neighbourhood collective; set on every
 *   rank when any rank uses MPI_CUDA (the two mechanisms do not match each other). */
struct comm_sel {
  enum comm_path path; /* HOST, NCCL, MPI_CUDA or MPI_STAGED */
  int pinned;
  int p2p;
};

/* Choose the path of an object over `be` (comm_path_resolve's work; see comm.h).
 * Collective over the world; errors are agreed (every rank fails together). */
int comm_path_select(struct comm *c, struct cg_backend *be, struct comm_sel *sel);
/* Release what the GPU paths hold (the NCCL communicator). Called by comm_finalize. */
void comm_gpu_release(struct comm *c);

/* Device helpers for the pinned staged path and NCCL (mpi/gpu.c). Without CUDA (or
 * NCCL) in the build they return CG_ERR_UNSUPPORTED; comm_path_select never picks a
 * path that needs them then. `be` must be a CUDA backend. */
int comm_pinned_alloc(void **p, size_t bytes, const char *what);
void comm_pinned_free(void *p); /* accepts NULL */
/* cudaMemcpyAsync on the backend's stream (device -> host, host -> device). */
int comm_dev_d2h(struct cg_backend *be, void *h_dst, const void *d_src, size_t bytes);
int comm_dev_h2d(struct cg_backend *be, void *d_dst, const void *h_src, size_t bytes);
/* cudaStreamSynchronize of the backend's stream, as a status. */
int comm_dev_sync(struct cg_backend *be);
/* One NCCL group: for each of the n neighbours, send scnt[k] rows of `cols` floats
 * from sbuf + sdsp[k] rows and receive rcnt[k] rows into rbuf + rdsp[k] rows
 * (zero counts skipped), on the backend's stream. */
int comm_nccl_exchange(struct comm *c, struct cg_backend *be, int n, const int *peer,
                       const float *sbuf, const int *scnt, const int *sdsp, float *rbuf,
                       const int *rcnt, const int *rdsp, int64_t cols);
/* In-place sum of n floats over the world on the backend's stream. */
int comm_nccl_allreduce(struct comm *c, struct cg_backend *be, float *buf, int64_t n);

/* Turn an MPI return code into CG_ERR_MPI with "call failed at file:line: MPI string". */
int comm_mpi_error(int rc, const char *call, const char *file, int line);

#define COMM_MPI_TRY(call)                                          \
  do {                                                              \
    int mpi_rc_ = (call);                                           \
    if (mpi_rc_ != MPI_SUCCESS) {                                   \
      int st_ = comm_mpi_error(mpi_rc_, #call, __FILE__, __LINE__); \
      cg_err_trail(__FILE__, __LINE__, #call);                      \
      return st_;                                                   \
    }                                                               \
  } while (0)

/* Same, but into `st` and jump to a cleanup label. */
#define COMM_MPI_TRY_GOTO(call, label)                         \
  do {                                                         \
    int mpi_rc_ = (call);                                      \
    if (mpi_rc_ != MPI_SUCCESS) {                              \
      st = comm_mpi_error(mpi_rc_, #call, __FILE__, __LINE__); \
      goto label;                                              \
    }                                                          \
  } while (0)

#endif
