/* mpi/comm_internal.h — private to mpi/: the comm struct, MPI error helpers and the
 * finalize hook. The base layer of the module (comm.c): every other file of mpi/
 * builds on it, and it depends on none of them. Only files of mpi/ include this (and
 * mpi.h). */
#ifndef CAPGNN_MPI_COMM_INTERNAL_H
#define CAPGNN_MPI_COMM_INTERNAL_H

#include <mpi.h>

#include "core/status.h"
#include "mpi/comm.h"

#define COMM_UUID_LEN 48 /* a GPU UUID: "GPU-" + 36 characters + NUL, rounded up */

struct comm {
  MPI_Comm world; /* dup of MPI_COMM_WORLD, MPI_ERRORS_RETURN */
  MPI_Comm host;  /* ranks sharing memory (MPI_COMM_TYPE_SHARED) */
  MPI_Comm node;  /* host, or an emulated sub-node of it */
  MPI_Comm cross; /* local rank i of every node, in node order (allreduce.c); NULL until needed */
  enum comm_allreduce allreduce_req; /* comm_set_allreduce (AUTO by default) */
  int halo_bits; /* comm_set_halo_bits: 4, 8, 16; 0 (never set) or 32 = full precision */
  int rank, size;
  int node_id, nnodes, local_rank, local_size;
  int host_local_rank, host_local_size;
  int emulate_k;  /* emulated nodes this host is split into (CAPGNN_EMULATE_NODES, clamped); 1: none */
  int *node_of;   /* node id of every world rank (comm_node_of) */
  int *node_ranks; /* world ranks of this node, by local rank (comm_node_world_rank) */
  int we_initialised; /* comm_init called MPI_Init_thread, so finalize calls MPI_Finalize */
  /* core/fatal.h's handler before comm_init installed comm's; comm_finalize puts it back */
  void (*prev_fatal)(int code, void *ctx);
  void *prev_fatal_ctx;
  struct comm_stats stats;
  /* GPU placement (gpu_bind.c), communication path (path.c) and NCCL (nccl.c) */
  enum comm_path path_req;    /* comm_set_path (AUTO by default) */
  int path_logged;            /* last path (x16, + request) announced at INFO, -1: none */
  int grad_logged;            /* last gradient all-reduce (algorithm x 16 + path) announced, -1: none */
  int gpu_ordinal, gpu_share; /* comm_gpu_bind: -1 / 0 before */
  int uuid_dev;               /* device whose UUID is cached in uuid, -1: none */
  char uuid[COMM_UUID_LEN];
  int cuda_aware;             /* MPI accepts device pointers: -1 not asked yet, 0, 1 */
  const char *cuda_aware_how; /* where that answer came from (for messages) */
  int warned_host_forced;     /* warned that a forced GPU path does not apply to the CPU backend */
  void *nccl;                 /* ncclComm_t over the world, started by the first NCCL object */
  int nccl_dev;               /* its device */
  int nccl_failed;            /* AUTO tried NCCL and it did not start: do not try again */
  void (*release)(struct comm *c); /* comm_release_set; NULL: nothing to stop */
  uint64_t relay_hash;        /* the last "rank R failed during ..." agree_in set here (0: none) */
  MPI_Win shared_win;         /* comm_host_shared's block, MPI_WIN_NULL: none */
  void *shared_base;
  size_t shared_bytes;
};

/* Have comm_finalize call fn(c) before it frees the communicators and finalises MPI:
 * how the part of mpi/ that starts something MPI must outlive gets it stopped without
 * comm.c calling into it. One function, since one thing needs it: NCCL (nccl.c sets it
 * when NCCL has started). Setting it again replaces it; NULL clears it. */
void comm_release_set(struct comm *c, void (*fn)(struct comm *c));

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

/* allreduce.c: buf (host memory, n values, the same n on every rank) becomes the sum
 * over all ranks in the fixed order described there; a = FLAT or HIER (resolved).
 * scratch: room for n + comm_size values. Adds the bytes sent to comm_stats'
 * allreduce_intra_bytes / allreduce_inter_bytes. Collective. */
int comm_sum_ordered(struct comm *c, enum comm_allreduce a, float *buf, int64_t n, float *scratch);

#endif
