/* jaca/node_internal.h — the node tier's plan: which halo rows a node keeps in its
 * shared segment, who writes each of them, who reads it, and the forward exchange of
 * the rows that still travel between ranks. Built once at set-up, the same on every
 * rank of a node (each rank keeps its own part of it).
 *
 * Terms, for one node N (its ranks are the node communicator's):
 *  - node halo U(N): the union of the halo vertices of N's ranks, numbered by
 *    increasing global id. A vertex needed by k ranks of N is one entry.
 *  - admitted rows A(N) ⊆ U(N): those the node tier holds (its budget, chosen by the
 *    policy's directory, jaca/policy_internal.h, over one epoch of the node's reads:
 *    local rank 0's halo rows in order, then local rank 1's, ...); node row r of a
 *    layer is the r-th admitted vertex by increasing global id.
 *  - for an admitted vertex v: its owner writes v into N's segment when the owner is on
 *    N; otherwise one receiving rank of N (the rank of N needing v at position
 *    gid mod k among the k that need it, by local rank) gets v from its owner over MPI
 *    and writes it. Every rank of N needing v reads it from the segment.
 *  - a halo row of a rank that its node did not admit travels from its owner to that
 *    rank directly ("direct" rows), as in the plain exchange.
 * The forward exchange (fwd plan, a comm_halo plan in mpi/comm.h's terms) carries the
 * direct rows and the rows for receivers, in one message per pair of ranks: towards
 * owner o, rank q's receive block from o lists first its direct rows from o (in q's
 * halo order), then the rows it receives for its node (by increasing global id).
 *
 * The rank tier (staleness S > 0): the direct rows this rank keeps between refreshes
 * (its budget: o->capacity of its direct rows, and o->device_mb MiB when > 0, chosen by
 * the policy's directory over one epoch of its reads, with this rank's priorities); a
 * direct row it does not keep is refreshed every generation. Rows of the node tier are
 * kept there between refreshes.
 *
 * Priorities (policy JACA): R(v), the number of partitions holding v as a halo (the
 * owner counts the send lists v appears in), times v's influence on N: the sum over
 * N's ranks needing v of the weights of v's column in their aggregation operators;
 * ties by global id (the lower id first). */
#ifndef CAPGNN_JACA_NODE_INTERNAL_H
#define CAPGNN_JACA_NODE_INTERNAL_H

#include <stdint.h>

#include "core/csr.h"
#include "jaca/jaca.h"
#include "mpi/comm.h"
#include "partition/partition.h"

/* One class of rows' forward exchange (a comm_halo plan in mpi/comm.h's terms): the
 * rows of that class this rank sends and receives. */
struct jaca_fwd_plan {
  int npeers;
  int32_t *peer;
  int64_t *send_offset, *send_count, *recv_offset, *recv_count;
  int32_t *send_idx;
  int64_t send_rows, recv_rows;
  int64_t send_rows_intra, send_rows_inter; /* to ranks of this node / other nodes */
  /* what each received row is: the halo row it fills (>= 0, direct) or, for a row this
   * rank receives for its node, -1 - node row */
  int64_t *recv_dest;
  int64_t recv_base;  /* where its received rows start in the rank's staging, in rows */
  int64_t n_received; /* received rows this rank writes into the node tier */
};

/* Refresh classes (staleness S = o->staleness): classes 0..S are phases, class S+1
 * ("always") holds the direct rows the rank tier does not keep. A row of phase k is
 * refreshed at the cache's first exchange of a layer (generation 1) and at every
 * generation g with (g - 1) mod (S + 1) == k; an "always" row at every generation. So
 * a row is never more than S generations old, and each generation refreshes about
 * 1 / (S + 1) of the cached rows. A vertex's phase is a hash of its global id, the same
 * on every rank (jaca_phase), so owners and consumers agree on the schedule without
 * sending it. With S = 0 every row is refreshed every generation (exact).
 * Adaptive staleness (o->adaptive) builds the classes of S = 0 but keeps direct rows in
 * the rank tier as with S > 0: class 0 is then every kept row, class 1 the direct rows
 * not kept (sent every step). */
struct jaca_node_plan {
  /* the node */
  int node, nnodes, local_rank, local_size;
  int64_t n_union;    /* |U(N)| */
  int64_t n_admitted; /* |A(N)|: node rows per layer */
  int32_t *admitted_gid; /* n_admitted, increasing */
  /* this rank's halo: n_halo rows (local ids n_inner + i) */
  int64_t n_inner, n_halo;
  int32_t *halo_owner;   /* owner rank of each halo row */
  int64_t *halo_node_row; /* node row of each halo row, -1 when direct */
  int32_t *halo_class;   /* refresh class of each halo row (node rows: their phase) */
  int32_t *halo_r;       /* R(v) of each halo row */
  double *halo_infl;     /* influence of each halo row on this rank */
  /* the forward exchanges, one per refresh class */
  int staleness, nclasses; /* S, S + 2 (adaptive: 0 and 2, its bound is the options') */
  int adaptive;            /* adaptive staleness: class 0 holds every kept row (direct
                              rows the rank tier keeps and rows for the node tier), each
                              a candidate every step, sent when its sender decides */
  struct jaca_fwd_plan *cls;
  int64_t recv_rows;     /* over the classes: the staging holds these, then the node reads */
  int64_t send_rows;
  int64_t n_direct;      /* received rows that are this rank's own halo rows */
  int64_t n_rank_cached; /* ... of them kept in the rank tier (classes 0..S) */
  int64_t n_received;    /* received rows this rank writes into the node tier */
  /* rows this rank owns that it writes into its node's tier: inner local id, node row,
   * phase */
  int64_t n_write;
  int32_t *write_idx;
  int64_t *write_row;
  int32_t *write_phase;
  /* this rank's halo rows the node tier serves: halo row, node row, phase */
  int64_t n_read;
  int64_t *read_halo, *read_row;
  int32_t *read_phase;
  /* Hit rates over one refresh window (S + 1 steps), on each node's local rank 0 (zeros
   * on its other ranks, so that sums over the ranks are the job's). The node's access
   * trace: each vertex owned on the node once (its owner writing it into the tier, a
   * fill that sends nothing), then the node's halo reads of S + 1 steps (local rank 0's
   * halo rows in order, then local rank 1's, ...). A value lives S + 1 steps, so one
   * window is the steady state.
   *  win_reads        the reads of the window
   *  win_policy_hits  reads the plan serves without sending the row to the reader: an
   *                   admitted vertex all its reads but, when its owner is on another
   *                   node, the receiver's one per window; a row a rank tier keeps S of
   *                   its S + 1 reads. What cache_hit_rate tends to over a long run (and
   *                   equals over generations 2 .. S + 2 of a layer: tested).
   *  win_oracle_hits  Belady's MIN (jaca_oracle_hits) on that trace with the node tier's
   *                   and the node's rank tiers' slots as one cache: no arrangement of the
   *                   same slots serves more (>= win_policy_hits, tested); -1 when the
   *                   trace is longer than JACA_ORACLE_MAX_TRACE entries. */
  int64_t win_reads, win_policy_hits, win_oracle_hits;
  int64_t node_rows_budget; /* the node tier's capacity in rows (capacity and memory) */
};

/* The longest access trace simulated for win_oracle_hits (32 bytes of set-up memory an
 * entry). */
#define JACA_ORACLE_MAX_TRACE (1 << 22)

/* The phase of vertex gid under staleness S (0 when S = 0). */
int jaca_phase(int64_t gid, int staleness);
/* The generation at which a row of class `cls` last got new values, as of generation
 * g >= 1 (g itself when the class is refreshed at g). */
uint32_t jaca_last_refresh(uint32_t g, int cls, int staleness);

/* The memory budgets of the tiers in bytes, for jaca_capacity_rows (jaca/jaca.h); the
 * caller measures them (jaca_exchange_create: --cache-host-mb / --cache-device-mb).
 *  node_avail, node_reserve  the node tier: bytes it may use, less the reserve; the
 *                            same on every rank of a node; node_avail < 0: no limit
 *  rank_avail, rank_reserve  a rank tier: likewise (rank_avail < 0: no limit), divided
 *                            by rank_share (the ranks sharing that memory), after the
 *                            node tier's bytes when rank_after_node (the same host
 *                            memory) */
struct jaca_budget {
  int64_t node_avail, node_reserve;
  int node_by_shm; /* node_avail is the shared-memory folder's free space (comm_shm_dir), not host memory */
  int64_t rank_avail, rank_reserve;
  int rank_share, rank_after_node;
};

/* Build this rank's part of the plan for policy o->policy, staleness o->staleness, the
 * node budget (o->capacity of the node halo, within b's node bytes over `layers`) and the
 * rank budget (o->capacity of its direct rows, within b's rank bytes). Collective over
 * the world (agreed). `agg` is n_inner x (n_inner + n_halo). */
int jaca_node_plan_build(struct comm *c, const struct part_local *pl, const struct cg_csr *agg,
                         const struct jaca_options *o, const struct jaca_layers *layers,
                         const struct jaca_budget *b, struct jaca_node_plan *out);
void jaca_node_plan_free(struct jaca_node_plan *p); /* accepts a zeroed struct */

/* Invariant checker of this rank's part against its local graph: every halo row is
 * either direct (received exactly once, in its class, from its owner) or read from the
 * node tier (admitted, at the node row of its global id, its class its phase); receive
 * blocks are packed in peer order; send lists hold inner rows only; written rows are
 * owned rows at their node rows. CG_ERR_INTERNAL naming the broken invariant. */
int jaca_node_plan_check(const struct jaca_node_plan *p, const struct part_local *pl);


#endif
