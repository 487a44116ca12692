/* jaca/ngrad_internal.h — halo gradients through the node tier (exact, --grad-staleness 0).
 *
 * In the backward pass every consumer returns the gradient of each of its halo rows to
 * the row's owner, which adds it into its own row (core/exchange.h, CG_HALO_BACKWARD).
 * Here a consumer whose owner is on its node writes those gradients into a node segment
 * (seqlock rows, jaca/seqlock_internal.h, tagged with the layer's backward generation
 * and the vertex) instead of sending them through MPI; the owner reads them from there.
 * Gradients for owners on other nodes still travel through MPI (a comm_halo plan of
 * those peers only, reversed: consumers send their halo rows' gradients).
 *
 * Exactness: the owner adds every peer's block with be->scatter_add_rows in ascending
 * peer order and, within a block, in its send order: the order of the plain exchange
 * (mpi/halo.c), so the sums are bit for bit those without the cache.
 *
 * Segment: per cached layer l in [1, nlayers), one block per (consumer, owner) pair of
 * ranks of the node that share halo rows, in (consumer local rank, owner local rank)
 * order; a block holds the consumer's halo rows from that owner in its halo order, which
 * is the owner's send order to that consumer (part_local's plan). Each layer has its own
 * rows, so a consumer's next layer never overwrites rows an owner still reads; the same
 * layer is written again only after the step's gradient all-reduce, which every owner
 * enters after its reads (jaca.h's rule; checked without a wait: after its reads an owner
 * marks the generation in its read word of the layer, after the rows, and a consumer's
 * begin refuses to write for an owner that is not at the generation before, CG_ERR_ARG,
 * before it writes or sends anything).
 *
 * Deadlock freedom, as in the forward tier: a consumer writes its rows in begin, before
 * it waits for any MPI transfer; an owner reads the segment in end, after its own MPI
 * transfer has completed. The seam's rules hold: begin reads only dx's halo rows, and
 * the owner's adds into its inner rows happen in end, after what the caller wrote there
 * between begin and end (the overlapped schedule). */
#ifndef CAPGNN_JACA_NGRAD_INTERNAL_H
#define CAPGNN_JACA_NGRAD_INTERNAL_H

#include <stdint.h>

#include "core/ops.h"
#include "jaca/jaca.h"
#include "mpi/comm.h"
#include "partition/partition.h"

struct jaca_ngrad;

/* The plan, the segment (comm_shm_create) and the buffers for rows of up to layers->cols
 * values. Collective over the world (agreed); `pl`'s arrays are copied. timeout_s: how
 * long an owner waits for a consumer's row before it reports it stuck. *out is NULL
 * (CG_OK, on every rank, with a warning) when the segment does not fit the shared-memory
 * folder: the caller then returns gradients through the plain exchange. */
int jaca_ngrad_create(struct comm *c, struct cg_backend *be, const struct part_local *pl,
                      const struct jaca_layers *layers, double timeout_s, struct jaca_ngrad **out);
/* Collective over the world, like the create. Accepts NULL. */
void jaca_ngrad_destroy(struct jaca_ngrad **g);

/* One backward exchange of layer `layer` (>= 1) at training epoch `epoch`: begin sends
 * the gradients for other nodes and writes those for the node; end completes the
 * transfer, reads the node's rows for this rank and adds everything into dx's inner
 * rows. *bytes_mpi / *bytes_shm get what this rank sent / wrote; *torn the torn copies
 * retried. Every rank calls them for the same layers in the same order. */
int jaca_ngrad_begin(struct jaca_ngrad *g, int layer, uint32_t epoch, float *dx, int64_t cols, int64_t *bytes_mpi,
                     int64_t *bytes_shm);
int jaca_ngrad_end(struct jaca_ngrad *g, int layer, uint32_t epoch, float *dx, int64_t cols, int64_t *torn);

/* Advance the MPI part of the exchange in flight without waiting (core/exchange.h,
 * Progress): 1 once it has completed; the node tier's rows are read in end. */
int jaca_ngrad_progress(struct jaca_ngrad *g);

/* Code the gradients sent to other nodes with `bits` bits (comm_halo_set_quant; the
 * node segment's stay floats). Local. */
int jaca_ngrad_set_quant(struct jaca_ngrad *g, int bits);
/* Bytes sent through MPI since creation (the seam's halo_bytes). */
int64_t jaca_ngrad_bytes_sent(const struct jaca_ngrad *g);
/* ... of them to ranks of other nodes (the seam's inter_node_bytes: all of them). */
int64_t jaca_ngrad_inter_bytes_sent(const struct jaca_ngrad *g);
/* Gradient rows this rank writes into / reads from the node segment per exchange. */
int64_t jaca_ngrad_rows_out(const struct jaca_ngrad *g);
int64_t jaca_ngrad_rows_in(const struct jaca_ngrad *g);

#endif
