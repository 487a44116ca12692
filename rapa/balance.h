/* rapa/balance.h — resource-aware partitioning: a cost model of one training epoch per
 * rank, partitions whose sizes follow the ranks' measured speeds, and the memory each
 * rank needs.
 *
 * 1. Rates (struct rapa_rates): what one rank's device does, from a profile
 *    (rapa_rates_from_profile: `capgnn profile`'s summary and link matrix) or measured
 *    at start-up on the rank's own backend at the model's shapes (rapa_rates_measure,
 *    collective: the backend as training runs it, threads and emulated speed included).
 * 2. Loads (struct rapa_load): what one rank computes and sends for a given owner array
 *    (rapa_loads_compute: inner and halo rows, aggregation nonzeros, halo rows per peer).
 * 3. The cost model (rapa_cost_rank): the predicted epoch of rank i,
 *      lambda_i = T_comp,i + T_comm,i
 *    T_comp,i sums, over the ops runtime/model.c runs in one training step (forward,
 *    loss, backward, Adam), GEMM FLOPs / gemm_flops + SpMM nonzero-columns / spmm_rate +
 *    elementwise bytes / mem_bps + dropout elements / rng_eps + parameters / adam_eps (the
 *    optimizer) + ops x op_s, and with sparse
 *    features layer 0's CSR products and dropout at their own rates (csr_rate, csr_t_rate,
 *    csr_drop_eps). T_comm,i sums, over the hidden layers'
 *    halo exchanges (and layer 0's when it is exchanged: rapa_shape.layer0_exchange;
 *    forward rows and backward gradients, at the width the model exchanges), per peer
 *    q: latency(i,q) + bytes / bandwidth(i,q) (both directions), plus the staging
 *    copies (bytes / h2d_bps and / d2h_bps when rows go through the host), plus the
 *    gradient all-reduce (measured: rapa_links.allreduce_s; else a ring: 2 (P-1)/P x
 *    parameter bytes over the slowest link, 2 (P-1) of the largest latency) and the
 *    loss's reduction (2 (P-1) latencies more).
 *    Memory_i: the model's buffers as
 *    runtime/model_build.c allocates them for the rank's rows (features, activations,
 *    scratch, operator and its transpose, parameters and Adam state) against its free
 *    memory.
 * 4. Weighted METIS (rapa_partition_weighted): target part weights proportional to the
 *    ranks' capabilities (1 / the time each would take for the whole graph alone), with
 *    vertex weights that make METIS balance modelled compute (a vertex costs its row's
 *    share of GEMM and elementwise work plus its in-edges' share of SpMM work); then one
 *    correction pass: when the predicted lambda of the first split misses its mean by
 *    more than `tolerance`, the targets are scaled by mean / lambda_i and METIS runs
 *    again; the better of the two splits (lower max lambda) is kept. Exact: only the
 *    owners change.
 *
 * All functions return CG_OK or a negative status with a message (core/status.h). */
#ifndef CAPGNN_RAPA_BALANCE_H
#define CAPGNN_RAPA_BALANCE_H

#include <stdint.h>

#include "core/ops.h"
#include "graph/graph.h"
#include "mpi/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rapa_profile; /* rapa/rapa.h */

/* ---- rates ------------------------------------------------------------------------- */

struct rapa_rates {
  double gemm_flops;  /* GEMM, FLOP/s */
  double spmm_rate;   /* SpMM, nonzero-columns per second (nnz x width / s) */
  double mem_bps;     /* elementwise ops inside the device, bytes per second */
  double rng_eps;     /* dropout (counter-based RNG), elements per second */
  double op_s;        /* fixed cost of one op (a call, a kernel launch), seconds */
  double h2d_bps, d2h_bps; /* host <-> device staging of halo rows, bytes/s; 0: not staged */
  double free_bytes;  /* memory free on the device (0: unknown, never "does not fit") */
  /* Sparse input features (rapa_shape.feat_density > 0), measured on the features' own CSR:
   * 0 = not measured, priced as the fallback says. */
  double csr_rate;     /* csr_mm (X·W), stored entries x width per second; 0: spmm_rate */
  double csr_t_rate;   /* csr_mm_t (Xᵀ·dT), the same unit; 0: spmm_rate */
  double csr_drop_eps; /* csr_dropout, stored entries per second; 0: one draw (rng_eps) and 8 bytes
                          (mem_bps) per entry */
  double adam_eps;     /* the optimizer's update, parameters per second (measured at the model's
                          parameter count); 0: 28 bytes per parameter at mem_bps (read w, g, m, v;
                          write w, m, v). On a CPU the update is arithmetic-bound (a square root and
                          a division per parameter): 4-5 G parameters/s measured against the ~1.3 G
                          the memory rate says */
};

/* The P x P links: bandwidth (bytes/s) and one-way latency (s) from rank i to rank j at
 * [i * P + j] (the diagonal is unused). */
struct rapa_links {
  int P;
  double *bw_bps, *lat_s;
  /* the gradient all-reduce of the model, one call, as measured on this job's ranks
   * (rapa_rates_measure: comm_grad, the algorithm training uses; the slowest rank's
   * median); 0: priced from the links (the ring below). On the 2-core VM the ring from
   * ping-pong latencies priced cora's 92 KB at ~20-30 us where a step's all-reduce took
   * 150-185 us (collectives of ranks that share cores). */
  double allreduce_s;
};
int rapa_links_alloc(struct rapa_links *l, int P); /* bw 0, latency 0 */
void rapa_links_free(struct rapa_links *l);         /* accepts a zeroed struct */

/* Rank r's rates from a profile's entry r (summary.mm_gflops, spmm_gnnz_s, idt_gbs,
 * rng_eps = idt / 8 bytes,
 * h2d_gbs / d2h_gbs when the device is a GPU and rows are staged: `staged`), op_s 0, and
 * free_bytes from device.memory_bytes; the links from links.matrix (host buffers).
 * CG_ERR_FORMAT when a rate is missing. */
int rapa_rates_from_profile(const struct rapa_profile *p, int r, int staged, struct rapa_rates *out);
int rapa_links_from_profile(const struct rapa_profile *p, struct rapa_links *out);

/* ---- the model's shape ------------------------------------------------------------- */

struct rapa_shape {
  int layers;
  int64_t features, hidden, classes;
  int sage;            /* GraphSAGE (a second weight per layer, no self-loop) */
  float dropout;       /* on hidden layers' input */
  float input_dropout; /* on the features (0: layer 0's aggregation computed once) */
  int layer0_exchange; /* 1: --layer0-halo exchange (runtime: rt_layer0_exchange_choose):
                          layer 0 transforms first over the inner rows only and exchanges
                          its transformed rows (fout wide) and their gradients every step
                          like a hidden layer; no halo feature row is held. 0: layer 0 runs
                          over the inner and halo rows, no layer-0 exchange in training */
  double feat_density; /* > 0: the features are multiplied sparse (rt_features_choose: layer 0
                          transforms first whatever its widths, X·W and Xᵀ·dT as CSR products
                          over the stored entries, this fraction of rows x features, priced
                          at rapa_rates.csr_rate / csr_t_rate; dropout on the stored entries at
                          csr_drop_eps); 0: dense */
};

/* ---- loads ------------------------------------------------------------------------- */

struct rapa_load {
  int64_t n_inner, n_halo;
  int64_t nnz;        /* nonzeros of the rank's aggregation operator (self-loops included) */
  int64_t *recv_rows; /* [P]: halo rows this rank receives from rank q */
  int64_t *send_rows; /* [P]: rows it sends to rank q (= q's recv_rows[this rank]) */
};
/* loads[p] for p < P from a symmetric graph's owner array (as part_local_build would
 * build them: the halo is the non-owned in-neighbours of the inner rows). self_loops: 1
 * for GCN (a self-loop per inner row). O(n + m). Free with rapa_loads_free. */
int rapa_loads_compute(const struct graph *g, const int32_t *owner, int P, int self_loops,
                       struct rapa_load *loads);
void rapa_loads_free(struct rapa_load *loads, int P);

/* ---- the cost model ---------------------------------------------------------------- */

struct rapa_cost {
  double comp_s, comm_s, lambda_s; /* predicted seconds per training step */
  double gemm_flops, spmm_nnzcols, mem_bytes, ops; /* the work behind comp_s (spmm: the aggregations;
                                                      mem: the elementwise ops and the loss) */
  double adam_params;                               /* parameters the optimizer updates (adam_eps) */
  double csr_nnzcols, csr_t_nnzcols, csr_drop;     /* sparse features: X·W and Xᵀ·dT stored entries x
                                                      width, dropout's stored entries */
  double halo_bytes, allreduce_bytes;               /* the traffic behind comm_s (sent + received) */
  double memory_bytes;                              /* the model's buffers on the device */
  int fits;                                         /* memory_bytes <= free_bytes (or unknown) */
};
/* Rank i's predicted epoch for its load. `links` may be NULL (no exchange: T_comm = 0, as
 * for one rank); P = number of ranks (the all-reduce). */
int rapa_cost_rank(const struct rapa_shape *s, const struct rapa_load *load, const struct rapa_rates *r,
                   const struct rapa_links *links, int i, int P, struct rapa_cost *out);
/* The parameters of the model (the all-reduce's floats). */
int64_t rapa_shape_params(const struct rapa_shape *s);

/* ---- capability-weighted METIS ------------------------------------------------------- */

#define RAPA_MAX_RANKS 64
struct rapa_split {
  int P;
  double target[RAPA_MAX_RANKS];   /* the target shares METIS was given (after the correction, if any) */
  double capability[RAPA_MAX_RANKS]; /* relative capability per rank (sums to 1) */
  double share[RAPA_MAX_RANKS];    /* the vertex-weight share each part received */
  struct rapa_cost cost[RAPA_MAX_RANKS];
  int corrected;       /* 1: the correction pass ran and its split was kept */
  int passes;          /* METIS runs (1 or 2) */
};

/* owner[] (n entries) for P ranks with rates[P] and links (may be NULL). seed: METIS'.
 * tolerance: the correction pass runs when max |lambda_i - mean| / mean > tolerance
 * (0.05 recommended; < 0: never). parts_are_ranks: the parts are a training job's ranks
 * (part_options.parts_are_ranks: an empty part advises fewer ranks). Deterministic for
 * given inputs. */
int rapa_partition_weighted(const struct graph *g, const struct rapa_shape *s, const struct rapa_rates *rates,
                            const struct rapa_links *links, int P, uint64_t seed, double tolerance,
                            int parts_are_ranks, int32_t *owner, struct rapa_split *out);
/* Predicted costs of every rank for a given owner array (out->cost, share; target and
 * capability as for the weighted split, corrected = 0, passes = 0). */
int rapa_split_evaluate(const struct graph *g, const struct rapa_shape *s, const struct rapa_rates *rates,
                        const struct rapa_links *links, int P, const int32_t *owner, struct rapa_split *out);

/* ---- halo pruning (approximate, opt-in) ------------------------------------------- */

/* Balance the modelled cost by pruning halo vertices (the paper's Algorithms 2 and 3,
 * rapa/prune.c has the rules): ranks in order of capability, weakest first; a rank
 * whose lambda exceeds the mean or whose memory does not fit removes halo vertices in
 * ascending influence score (Eq. 16 over the edges that go, global degrees, times the
 * vertex's overlap count; ties by id) until its estimated lambda <= (lambda + mean) / 2
 * and it fits; rounds until std(lambda) < eps x mean or a round changes nothing. A pruned
 * halo vertex u of rank p takes its edges with p's inner rows, BOTH directions: *pruned
 * is a symmetric graph (a valid .cgr: features, labels and split copied, checksum
 * updated, normalisation by its own degrees), and training on it with the same owners is
 * the exact training of the pruned graph. eps <= 0: nothing pruned (*pruned is a copy).
 * Free *pruned with graph_free, res with rapa_prune_result_free. */
struct rapa_prune_result {
  int64_t cut_edges;     /* undirected edges between parts before pruning */
  int64_t removed_edges; /* undirected edges removed (all of them cut edges) */
  int rounds;
  int64_t nlog;          /* removals in order: (log_part[i], log_vertex[i]) */
  int32_t *log_part, *log_vertex;
  struct rapa_cost before[RAPA_MAX_RANKS], after[RAPA_MAX_RANKS];
};
int rapa_prune_halo(const struct graph *g, const int32_t *owner, int P, const struct rapa_shape *s,
                    const struct rapa_rates *rates, const struct rapa_links *links, double eps, struct graph *pruned,
                    struct rapa_prune_result *res);
void rapa_prune_result_free(struct rapa_prune_result *r); /* accepts a zeroed struct */

/* ---- measured at start-up (collective) ------------------------------------------------ */

/* Every rank measures its rates on `be` at the shapes of `s` on graph g (GEMMs of n/P
 * rows at each layer's widths, the graph's aggregation operator at the widths the model
 * runs its SpMMs, an elementwise op, a one-element op for op_s; the median of a few
 * repetitions after a warm-up), every pair of ranks its link (MPI ping-pong, 8 bytes
 * and 256 KiB), and all ranks together the model's gradient all-reduce
 * (links->allreduce_s). All ranks receive every rank's rates (rates[P]) and the links. */
int rapa_rates_measure(struct comm *c, struct cg_backend *be, const struct graph *g, const struct rapa_shape *s,
                       struct rapa_rates *rates, struct rapa_links *links);

/* The same measurement on this process alone (no links), as for one rank of P. */
int rapa_rates_measure_local(struct cg_backend *be, const struct graph *g, const struct rapa_shape *s, int P,
                             struct rapa_rates *r);

/* Each of the P ranks' rates at its emulated speed f (CAPGNN_EMULATE_SPEED; core/ops_emulate.h;
 * nothing when the variable is unset or empty): every compute rate the cost model prices
 * times f (the elementwise memory rate included), the per-op cost divided by it (a rank at
 * speed f takes 1/f as long for each op); staging rates and free memory untouched. The
 * sparse-feature ops' rates too, else a slow rank's layer 0 is priced at full speed and its
 * capability overstated (cora at 1,0.25: 0.29 instead of 0.20). CG_ERR_ARG when the list
 * does not fit P. */
int rapa_rates_emulate(struct rapa_rates *rates, int P);

#ifdef __cplusplus
}
#endif
#endif
