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

/* A stream of the exchange's own (the NCCL path's, so that a transfer runs beside the
 * backend's kernels) and events that order it against the backend's stream. Handles
 * are cudaStream_t / cudaEvent_t behind void *; a `stream` argument NULL means the
 * backend's stream. The stream does not synchronise with the legacy default stream;
 * the events record no timing. destroy and sync accept NULL (sync: no-op). */
int comm_dev_stream_create(void **stream);
void comm_dev_stream_destroy(void *stream);
void comm_dev_stream_sync(void *stream); /* failures are logged: used on release paths */
int comm_dev_event_create(void **ev);
void comm_dev_event_destroy(void *ev);
/* Record ev on `stream` after what was enqueued there so far. */
int comm_dev_event_record(struct cg_backend *be, void *ev, void *stream);
/* Work enqueued on `stream` from now on waits for ev. */
int comm_dev_stream_wait(struct cg_backend *be, void *stream, void *ev);
/* 1 when the work before ev's last record has completed, 0 when not yet. */
int comm_dev_event_query(void *ev);

#endif
