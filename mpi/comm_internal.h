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
};

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
