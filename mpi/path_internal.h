/* mpi/path_internal.h — private to mpi/: the communication path of one object, as
 * the halo exchange and the gradient all-reduce need it (path.c). */
#ifndef CAPGNN_MPI_PATH_INTERNAL_H
#define CAPGNN_MPI_PATH_INTERNAL_H

#include "core/ops.h"
#include "mpi/comm_internal.h"

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
 * Starts NCCL when that is the choice and it is not running yet. Collective over the
 * world; errors are agreed (every rank fails together). */
int comm_path_select(struct comm *c, struct cg_backend *be, struct comm_sel *sel);

/* Whether MPI accepts device pointers (1) or not (0), asked once and cached in c
 * (c->cuda_aware, c->cuda_aware_how says where the answer came from):
 * CAPGNN_MPI_CUDA_AWARE=1|0 overrides Open MPI's MPIX_Query_cuda_support(). Local. */
int comm_mpi_cuda_aware(struct comm *c);

#endif
