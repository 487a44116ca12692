/* mpi/tests/fake_device.h — a backend that pretends to be a device.
 *
 * It reports kind CG_DEVICE_CUDA, so mpi/ takes its staging path (download, MPI
 * on host buffers, upload), while running on the CPU. Its "device pointers" are
 * host pointers with bit 62 flipped: non-canonical addresses that fault when
 * dereferenced, so any code that hands device memory straight to MPI or reads it
 * on the host crashes instead of passing. Only the ops mpi/ uses are provided
 * (memory, sync, mem_info (the host's), fill, scale, gather_rows, scatter_add_rows); the
 * others are NULL. */
#ifndef CAPGNN_MPI_TESTS_FAKE_DEVICE_H
#define CAPGNN_MPI_TESTS_FAKE_DEVICE_H

#include "core/ops.h"

/* Wraps `cpu` (which must outlive the fake); release with cg_backend_destroy. */
int fake_device_create(struct cg_backend *cpu, struct cg_backend **out);
/* Number of upload and download calls so far. */
void fake_device_counts(const struct cg_backend *be, int64_t *uploads, int64_t *downloads);

#endif
