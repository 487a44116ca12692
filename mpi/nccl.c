/* mpi/nccl.c — the NCCL path: the world's NCCL communicator, grouped send/receive of
 * halo rows and the in-place all-reduce, both enqueued on the backend's stream.
 *
 * Design notes (the why):
 * - One NCCL communicator per struct comm, over the world, started by the first object
 *   that needs it (setup, never inside a step) and kept until comm_finalize: creating
 *   one costs a collective bootstrap, and every object of the job can share it.
 * - Once it has started, its release is handed to comm_release_set, so comm.c (the
 *   base of the module) stops NCCL before MPI without knowing NCCL exists.
 * - Without NCCL in the build everything here still compiles and reports
 *   CG_ERR_UNSUPPORTED; comm_path_select never picks NCCL then. */
#include "mpi/nccl_internal.h"

#include <string.h>

#include "core/log.h"
#include "core/status.h"

#ifdef CAPGNN_HAVE_NCCL
#include <nccl.h>

#include "cuda/cuda_backend.h"
#include "mpi/cuda_internal.h"

static int nccl_fail(struct comm *c, ncclResult_t r, const char *call) {
  const char *last = ncclGetLastError(c ? (ncclComm_t)c->nccl : NULL);
  return cg_err_set(CG_ERR_MPI, "%s failed: %s%s%s", call, ncclGetErrorString(r),
                    last && last[0] ? ": " : "", last ? last : "");
}

#define COMM_NCCL_TRY(call)                                  \
  do {                                                       \
    ncclResult_t nr_ = (call);                               \
    if (nr_ != ncclSuccess) return nccl_fail(c, nr_, #call); \
  } while (0)

/* comm_finalize's release (comm_release_set): NCCL was started after MPI, stop it
 * before MPI. */
static void nccl_release(struct comm *c) {
  if (!c || !c->nccl) return;
  ncclResult_t r = ncclCommDestroy((ncclComm_t)c->nccl);
  if (r != ncclSuccess) LOG_WARN("mpi", "ncclCommDestroy failed: %s", ncclGetErrorString(r));
  c->nccl = NULL;
  c->nccl_dev = -1;
}

int comm_nccl_start(struct comm *c, int dev) {
  int st = CG_OK;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  int ok = 1;
  if (c->rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      st = nccl_fail(NULL, r, "ncclGetUniqueId");
      ok = 0;
    }
  }
  COMM_MPI_TRY(MPI_Bcast(&ok, 1, MPI_INT, 0, c->world));
  if (!ok)
    return c->rank == 0 ? st
                        : cg_err_set(CG_ERR_MPI,
                                     "rank 0 could not create the NCCL unique id "
                                     "(ncclGetUniqueId; see its log)");
  COMM_MPI_TRY(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->world));
  ncclComm_t nc = NULL;
  cudaError_t e = cudaSetDevice(dev);
  if (e != cudaSuccess) {
    st = comm_cuda_fail(e, "cudaSetDevice", "starting NCCL");
  } else {
    ncclResult_t r = ncclCommInitRank(&nc, c->size, id, c->rank);
    if (r != ncclSuccess) {
      st = nccl_fail(NULL, r, "ncclCommInitRank");
      nc = NULL;
    }
  }
  st = comm_agree(c, st, "starting NCCL (ncclCommInitRank)");
  if (st < 0) {
    if (nc) ncclCommAbort(nc); /* peers failed: this one would never be usable */
    return st;
  }
  c->nccl = nc;
  c->nccl_dev = dev;
  comm_release_set(c, nccl_release);
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) version = 0;
  if (c->rank == 0)
    LOG_DEBUG("mpi", "NCCL %d started over %d rank%s", version, c->size, c->size == 1 ? "" : "s");
  return CG_OK;
}

int comm_nccl_exchange(struct comm *c, struct cg_backend *be, void *stream, int n, const int *peer,
                       const float *sbuf, const int *scnt, const int *sdsp, float *rbuf,
                       const int *rcnt, const int *rdsp, int64_t cols) {
  ncclComm_t nc = (ncclComm_t)c->nccl;
  cudaStream_t s = stream ? (cudaStream_t)stream : cg_cuda_stream(be);
  if (n == 0) return CG_OK;
  COMM_NCCL_TRY(ncclGroupStart());
  for (int k = 0; k < n; k++) {
    ncclResult_t r = ncclSuccess;
    const char *call = NULL;
    if (scnt[k] > 0) {
      r = ncclSend(sbuf + (size_t)sdsp[k] * (size_t)cols, (size_t)scnt[k] * (size_t)cols, ncclFloat,
                   peer[k], nc, s);
      call = "ncclSend (halo rows)";
    }
    if (r == ncclSuccess && rcnt[k] > 0) {
      r = ncclRecv(rbuf + (size_t)rdsp[k] * (size_t)cols, (size_t)rcnt[k] * (size_t)cols, ncclFloat,
                   peer[k], nc, s);
      call = "ncclRecv (halo rows)";
    }
    if (r != ncclSuccess) {
      int st = nccl_fail(c, r, call);
      (void)ncclGroupEnd(); /* close the group; its result adds nothing to the message */
      return st;
    }
  }
  COMM_NCCL_TRY(ncclGroupEnd());
  return CG_OK;
}

int comm_nccl_allreduce(struct comm *c, struct cg_backend *be, float *buf, int64_t n) {
  if (n <= 0) return CG_OK;
  COMM_NCCL_TRY(ncclAllReduce(buf, buf, (size_t)n, ncclFloat, ncclSum, (ncclComm_t)c->nccl,
                              cg_cuda_stream(be)));
  return CG_OK;
}

int comm_nccl_roundtrip(struct comm *c, struct cg_backend *be, int initiator, int peer,
                        const void *sbuf, void *rbuf, size_t bytes) {
  ncclComm_t nc = (ncclComm_t)c->nccl;
  cudaStream_t s = cg_cuda_stream(be);
  if (initiator) {
    COMM_NCCL_TRY(ncclSend(sbuf, bytes, ncclChar, peer, nc, s));
    COMM_NCCL_TRY(ncclRecv(rbuf, bytes, ncclChar, peer, nc, s));
  } else {
    COMM_NCCL_TRY(ncclRecv(rbuf, bytes, ncclChar, peer, nc, s));
    COMM_NCCL_TRY(ncclSend(rbuf, bytes, ncclChar, peer, nc, s));
  }
  return CG_OK;
}

int comm_nccl_version(void) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) v = 0;
  return v;
}

#else /* !CAPGNN_HAVE_NCCL */

int comm_nccl_start(struct comm *c, int dev) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "this build has no NCCL");
}
int comm_nccl_exchange(struct comm *c, struct cg_backend *be, void *stream, int n, const int *peer,
                       const float *sbuf, const int *scnt, const int *sdsp, float *rbuf,
                       const int *rcnt, const int *rdsp, int64_t cols) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "comm_nccl_exchange: this build has no NCCL");
}
int comm_nccl_allreduce(struct comm *c, struct cg_backend *be, float *buf, int64_t n) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "comm_nccl_allreduce: this build has no NCCL");
}

int comm_nccl_roundtrip(struct comm *c, struct cg_backend *be, int initiator, int peer,
                        const void *sbuf, void *rbuf, size_t bytes) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "comm_nccl_roundtrip: this build has no NCCL");
}
int comm_nccl_version(void) { return 0; }

#endif /* CAPGNN_HAVE_NCCL */
