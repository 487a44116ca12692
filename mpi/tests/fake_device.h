/* mpi/tests/fake_device.h — a backend that pretends to be a device.
 *
 * It reports kind CG_DEVICE_CUDA, so mpi/ takes its staging path (download, MPI
 * on host buffers, upload), while running on the CPU. Its "device pointers" are
 * host pointers with bit 62 flipped: non-canonical addresses that fault when
 * dereferenced, so any code that hands device memory straight to MPI or reads it
 * on the host crashes instead of passing. Only the ops mpi/ uses are provided
 * (memory, sync, mem_info (the host's), fill, scale, gather_rows, scatter_add_rows); the
 * others are NULL.
 *
 * Side uploads (core/ops.h), once fake_device_side_uploads(be, 1) turned them on: host
 * memory from plain malloc, and channels whose uploads are *deferred*: enqueued (from any
 * thread) into a list that upchan_join, upchan_begin and upchan_destroy carry out. So
 * rows read on the "device" before a join are the old ones, and a staging row rewritten
 * after its upload was enqueued arrives rewritten: code that joins late or reuses its
 * staging too early computes wrong values. */
#ifndef CAPGNN_MPI_TESTS_FAKE_DEVICE_H
#define CAPGNN_MPI_TESTS_FAKE_DEVICE_H

#include "core/ops.h"

/* Wraps `cpu` (which must outlive the fake); release with cg_backend_destroy. */
int fake_device_create(struct cg_backend *cpu, struct cg_backend **out);
/* Number of upload and download calls so far. */
void fake_device_counts(const struct cg_backend *be, int64_t *uploads, int64_t *downloads);
/* Side uploads on (the seven entries set) or off (all NULL; the default) from now on
 * (channels already made must have been destroyed). */
void fake_device_side_uploads(struct cg_backend *be, int on);
/* Side upload counters since create: upchan_upload calls, those made from another thread
 * than the one that created the backend, bytes they carried, joins, and pinned buffers
 * allocated and not freed. */
struct fake_side_counts {
  int64_t uploads, uploads_other_thread, bytes, joins, host_live;
};
void fake_device_side_counts(const struct cg_backend *be, struct fake_side_counts *out);

#endif
