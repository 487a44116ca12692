/* mpi/staging.c — pinned host buffers and asynchronous copies on the CUDA backend's
 * stream: what the MPI_STAGED path of the CUDA backend moves device rows through; and
 * the stream and events with which the NCCL path runs a halo exchange beside the
 * backend's kernels (mpi/halo.c).
 *
 * Design notes (the why):
 * - Pinned (page-locked) buffers make cudaMemcpyAsync truly asynchronous and fast;
 *   they are allocated once when an object is created (never inside a step) and as
 *   portable memory, so they stay pinned whatever device is current later.
 * - Copies go on the backend's own stream, so they are ordered after the ops that
 *   wrote the rows and before the ops that read them, with no device-wide sync; the
 *   caller synchronises that stream before MPI touches a host buffer.
 * - Without CUDA in the build everything here still compiles: the CPU backend and
 *   wrapped device backends stage through be->download / be->upload instead, and
 *   these helpers report CG_ERR_UNSUPPORTED (comm_path_select never picks pinned
 *   staging then). */
#include "mpi/staging_internal.h"

#include "core/log.h"
#include "core/status.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#include "mpi/cuda_internal.h"

int comm_pinned_alloc(void **p, size_t bytes, const char *what) {
  *p = NULL;
  /* Portable: pinned for every CUDA context, whatever device is current here. */
  cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *p = NULL;
    return cg_err_set(CG_ERR_NOMEM,
                      "cudaHostAlloc of %zu bytes (%.1f MiB) of pinned host memory for %s failed: "
                      "%s (pinned memory is bounded by RAM and `ulimit -l`; use --comm nccl or "
                      "mpi-cuda, or narrower layers)",
                      bytes, (double)bytes / 1048576.0, what ? what : "?", cudaGetErrorString(e));
  }
  return CG_OK;
}

void comm_pinned_free(void *p) {
  if (!p) return;
  cudaError_t e = cudaFreeHost(p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    LOG_WARN("mpi", "cudaFreeHost failed: %s", cudaGetErrorString(e));
  }
}

int comm_dev_d2h(struct cg_backend *be, void *h_dst, const void *d_src, size_t bytes) {
  if (!bytes) return CG_OK;
  COMM_CUDA_TRY(cudaMemcpyAsync(h_dst, d_src, bytes, cudaMemcpyDeviceToHost, cg_cuda_stream(be)),
                "staging device rows to pinned host memory");
  return CG_OK;
}

int comm_dev_h2d(struct cg_backend *be, void *d_dst, const void *h_src, size_t bytes) {
  if (!bytes) return CG_OK;
  COMM_CUDA_TRY(cudaMemcpyAsync(d_dst, h_src, bytes, cudaMemcpyHostToDevice, cg_cuda_stream(be)),
                "copying received rows from pinned host memory to the device");
  return CG_OK;
}

int comm_dev_sync(struct cg_backend *be) {
  COMM_CUDA_TRY(cudaStreamSynchronize(cg_cuda_stream(be)),
                "waiting for the backend stream before MPI");
  return CG_OK;
}

int comm_dev_stream_create(void **stream) {
  cudaStream_t s = NULL;
  *stream = NULL;
  COMM_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                "creating the halo exchange's stream");
  *stream = s;
  return CG_OK;
}

void comm_dev_stream_destroy(void *stream) {
  if (stream && cudaStreamDestroy((cudaStream_t)stream) != cudaSuccess) {
    (void)cudaGetLastError();
    LOG_WARN("mpi", "cudaStreamDestroy of the halo exchange's stream failed");
  }
}

void comm_dev_stream_sync(void *stream) {
  if (!stream) return;
  cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    LOG_WARN("mpi", "waiting for the halo exchange's stream failed: %s", cudaGetErrorString(e));
  }
}

int comm_dev_event_create(void **ev) {
  cudaEvent_t e = NULL;
  *ev = NULL;
  COMM_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                "creating an event of the halo exchange");
  *ev = e;
  return CG_OK;
}

void comm_dev_event_destroy(void *ev) {
  if (ev && cudaEventDestroy((cudaEvent_t)ev) != cudaSuccess) {
    (void)cudaGetLastError();
    LOG_WARN("mpi", "cudaEventDestroy of a halo exchange event failed");
  }
}

int comm_dev_event_record(struct cg_backend *be, void *ev, void *stream) {
  cudaStream_t s = stream ? (cudaStream_t)stream : cg_cuda_stream(be);
  COMM_CUDA_TRY(cudaEventRecord((cudaEvent_t)ev, s), "ordering the halo exchange's streams");
  return CG_OK;
}

int comm_dev_stream_wait(struct cg_backend *be, void *stream, void *ev) {
  cudaStream_t s = stream ? (cudaStream_t)stream : cg_cuda_stream(be);
  COMM_CUDA_TRY(cudaStreamWaitEvent(s, (cudaEvent_t)ev, 0), "ordering the halo exchange's streams");
  return CG_OK;
}

int comm_dev_event_query(void *ev) {
  cudaError_t e = cudaEventQuery((cudaEvent_t)ev);
  if (e == cudaSuccess) return 1;
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return 0;
  }
  return comm_cuda_fail(e, "cudaEventQuery", "testing the halo exchange's transfer");
}

#else /* !CAPGNN_HAVE_CUDA */

static int no_cuda(const char *fn) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "%s: this build has no CUDA support", fn);
}
int comm_pinned_alloc(void **p, size_t bytes, const char *what) {
  *p = NULL;
  return no_cuda("comm_pinned_alloc");
}
void comm_pinned_free(void *p) { (void)p; }
int comm_dev_d2h(struct cg_backend *be, void *h_dst, const void *d_src, size_t bytes) {
  return no_cuda("comm_dev_d2h");
}
int comm_dev_h2d(struct cg_backend *be, void *d_dst, const void *h_src, size_t bytes) {
  return no_cuda("comm_dev_h2d");
}
int comm_dev_sync(struct cg_backend *be) { return no_cuda("comm_dev_sync"); }
int comm_dev_stream_create(void **stream) {
  *stream = NULL;
  return no_cuda("comm_dev_stream_create");
}
void comm_dev_stream_destroy(void *stream) { (void)stream; }
void comm_dev_stream_sync(void *stream) { (void)stream; }
int comm_dev_event_create(void **ev) {
  *ev = NULL;
  return no_cuda("comm_dev_event_create");
}
void comm_dev_event_destroy(void *ev) { (void)ev; }
int comm_dev_event_record(struct cg_backend *be, void *ev, void *stream) {
  return no_cuda("comm_dev_event_record");
}
int comm_dev_stream_wait(struct cg_backend *be, void *stream, void *ev) {
  return no_cuda("comm_dev_stream_wait");
}
int comm_dev_event_query(void *ev) { return no_cuda("comm_dev_event_query"); }

#endif /* CAPGNN_HAVE_CUDA */
