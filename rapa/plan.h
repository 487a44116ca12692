/* rapa/plan.h — the scale model behind `capgnn plan`: one training step of every rank
 * of a job of P ranks on N nodes, predicted from a partition, the cost model of
 * rapa/balance.h and the links' bandwidths, with and without the halo cache.
 *
 * Per rank i (the partition's part i, on node i * N / P: contiguous blocks of ranks, as
 * mpi/ lays out nodes and emulated nodes):
 *  - compute: rapa_cost_rank's T_comp (its ops, at the rank's rates); when the host's
 *    cores C are known and ranks have one thread, the k-th rank of a host runs on core
 *    k mod C (as `mpirun --map-by core --bind-to core` binds them) and a rank's compute
 *    is the summed T_comp of its core's ranks (they take turns, so its ops stretch over
 *    their slices; oversub = that sum / its own); with several threads per rank, T_comp
 *    x max(1, ranks on the host x threads / cores). A device rank (rates with h2d/d2h:
 *    it computes on its device) shares no core. With a known round-robin quantum Q
 *    (quantum_s), a compute phase (the step's work between two synchronisations: one per
 *    exchange each way and exchanged layer, the loss and the gradient all-reduce, so
 *    T_comp / phases long) shorter than Q runs unpreempted and the core-mates compute
 *    while the rank waits (its compute: T_comp); a longer one is shared a quantum at a
 *    time with the mates' phase of the same step (of two, the one that starts first ends
 *    after 2t - Q, the other after 2t): its compute is T_comp + (core sum - T_comp) x
 *    (2t - Q) / 2t on average, with t = T_comp / phases (t >> Q: the core sum). The rest of
 *    the core sum is core_wait_s, in its epoch but not in its compute;
 *  - halo exchange, per hidden layer (the width the model exchanges: the transformed
 *    rows when a layer transforms first, as rapa_cost_rank): per peer q, rows in and
 *    out forward, gradients back, each direction priced latency + bytes / bandwidth of
 *    the link (intra- or inter-node). Without the cache every halo row goes from its
 *    owner to each rank that needs it. With the cache (JACA, exact: staleness 0, every
 *    row in the node tier, jaca/jaca.h): a row owned on the node goes through the
 *    node's shared memory (written once by its owner, read by each rank that needs
 *    it: bytes at the device's memory rate), a row owned on another node crosses the
 *    network once per node, to one receiving rank there (the needing ranks of the node
 *    in rank order, the (global id mod their count)-th, as jaca/node.c picks it), which
 *    writes it into the node tier; gradients go to an owner on the node through shared
 *    memory and to other nodes through MPI from every consuming rank. Device ranks
 *    (rates.h2d_bps, d2h_bps > 0) also stage what they send (D2H) and receive (H2D)
 *    through MPI, unless gpu_direct, and what they write into and read from the node tier;
 *  - gradient all-reduce of the parameters (B = 4 x rapa_shape_params bytes): when a
 *    profile measured it on this layout (ar_points), its curve at B; else
 *    RAPA_ALLREDUCE_FLAT and _MPI priced as a ring over the slowest link,
 *    2 (P-1)/P B / bw + 2 (P-1) latencies (rapa_cost_rank's term); _HIER (the node's
 *    ranks reduce, the nodes exchange each node's sum split over its k ranks, the node
 *    gathers) 2 (k-1)/k B / bw_intra + 2 (k-1) lat_intra + 2 (N-1)/N B / k / bw_inter +
 *    2 (N-1) lat_inter; plus the loss's reduction, 2 (P-1) latencies;
 *  - memory: rapa_cost_rank's (the model's buffers on the device); the node tier's
 *    shared memory per node with the cache.
 * The step of the job (the epoch) is the slowest rank's compute + communication: every
 * rank ends in the same all-reduce. wait_s is what the others wait for it.
 *
 * Counted bytes follow the metrics' definitions (README "Metrics"): halo bytes sent
 * through MPI (forward rows and gradients), inter-node bytes (halo bytes to ranks of
 * other nodes, and the ordered all-reduce's wire bytes between nodes: _FLAT's pairwise
 * reduce-scatter and all-gather, _HIER's; MPI_Allreduce's own traffic is not counted).
 * All functions return CG_OK or a negative status with a message (core/status.h). */
#ifndef CAPGNN_RAPA_PLAN_H
#define CAPGNN_RAPA_PLAN_H

#include <stdint.h>

#include "graph/graph.h"
#include "rapa/balance.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RAPA_PLAN_MAX_RANKS 4096
#define RAPA_PLAN_AR_POINTS 8 /* points of a measured all-reduce curve the plan keeps */

enum rapa_allreduce { RAPA_ALLREDUCE_MPI = 0, RAPA_ALLREDUCE_FLAT = 1, RAPA_ALLREDUCE_HIER = 2 };
const char *rapa_allreduce_name(enum rapa_allreduce a); /* "mpi", "flat", "hier" */

struct rapa_plan_opts {
  int P;             /* ranks (1 .. RAPA_PLAN_MAX_RANKS) */
  int nodes;         /* 1 .. P */
  int hosts;         /* machines whose cores the ranks share (1 .. nodes; 0: = nodes). Emulated
                        nodes on one machine: 1 */
  double host_cores; /* cores per host; 0: unknown (no oversubscription modelled) */
  int threads;       /* threads per rank (>= 1) */
  double quantum_s;  /* ranks of one thread sharing a core: the scheduler's round-robin quantum
                        (SCHED_RR, /proc/sys/kernel/sched_rr_timeslice_ms); 0: unknown (a rank's
                        ops stretch over its core's summed compute) */
  int cache;         /* 1: the exact halo cache (node tier) */
  int gpu_direct;    /* device ranks: halo rows go from device to device (NCCL, CUDA-aware MPI), not
                        staged through the host; the node tier (host memory) still is */
  enum rapa_allreduce allreduce;
  double bw_intra, bw_inter;   /* bytes/s between ranks of a node / of different nodes */
  double lat_intra, lat_inter; /* one-way latency, seconds */
  /* The gradient all-reduce as measured on this job's layout (rapa_plan_allreduce_from_profile:
   * a profile of P ranks on N nodes whose all-reduce used this algorithm): ar_points
   * sizes ar_bytes[] (increasing) that took ar_s[] seconds (medians), interpolated
   * linearly at the job's bytes (below the smallest size: its time; past the largest: the
   * last two points' line, or the largest's time where that line falls), in place of the
   * formula from the links above (P > 1). 0: the formula. */
  int ar_points;
  double ar_bytes[RAPA_PLAN_AR_POINTS], ar_s[RAPA_PLAN_AR_POINTS];
};

struct rapa_plan_rank {
  int node;
  struct rapa_cost cost;      /* rapa_cost_rank without links: compute, work, memory */
  double oversub;             /* the compute's slow-down factor (>= 1) */
  double comp_s;              /* cost.comp_s x oversub: the compute its own clock sees */
  double core_wait_s;         /* shared cores: its core-mates' compute that runs while it waits in
                                 the step's synchronisations (the core's summed compute - comp_s) */
  double halo_s, shm_s, staging_s, allreduce_s, loss_s;
  double comm_s;              /* halo + shm + staging + all-reduce + loss */
  double lambda_s;            /* comp_s + comm_s + core_wait_s */
  double wait_s;              /* epoch - lambda: waiting for the slowest rank */
  int peers;                  /* ranks it exchanges with through MPI */
  double halo_bytes_intra;    /* sent through MPI to ranks of its node (both directions of a step) */
  double halo_bytes_inter;    /* sent through MPI to ranks of other nodes */
  double shm_bytes;           /* written into and read from the node tier (cache) */
  double allreduce_inter;     /* all-reduce wire bytes it sends to other nodes (flat, hier) */
};

struct rapa_plan {
  int P, nodes, layers;
  struct rapa_load *loads;          /* [P]: rows per peer (rapa_loads_compute) */
  int64_t *fwd_rows;                /* [P x P]: forward rows sent by i to j through MPI per
                                       hidden layer ([i * P + j]); the plain exchange: loads'
                                       send_rows; with the cache: rows to other nodes' receivers */
  int64_t *width;                   /* [layers]: exchanged width per layer (layer 0: 0, not exchanged, unless rapa_shape.layer0_exchange) */
  struct rapa_plan_rank *rank;      /* [P] */
  int64_t *node_tier_rows;          /* [nodes]: distinct halo rows the node's ranks need (cache) */
  double node_tier_bytes_max;       /* the largest node tier: rows x hidden widths x 4 */
  double epoch_s;                   /* max over ranks of lambda_s */
  int slowest;                      /* its rank */
  double halo_bytes, inter_node_bytes, allreduce_bytes; /* per step, summed over ranks */
};

/* The plan of a job for a symmetric graph's owner array (owner[v] in [0, P)), model s,
 * rates[P]. GraphSAGE (s->sage) aggregates without self-loops. Free with rapa_plan_free. */
int rapa_plan_compute(const struct graph *g, const int32_t *owner, const struct rapa_shape *s,
                      const struct rapa_rates *rates, const struct rapa_plan_opts *o, struct rapa_plan *out);
void rapa_plan_free(struct rapa_plan *p); /* accepts a zeroed struct */

/* From a profile (rapa/rapa.h): the medians over its pairs of ranks of the host-buffer
 * links' bandwidth (bytes/s) and one-way latency (s), for pairs on one node and pairs on
 * different nodes (0 when the profile has no such pair). Per pair, from the fastest
 * round trip of each message size (min_s): latency half the smallest message's,
 * bandwidth the best bytes / half a round trip. */
struct rapa_profile;
int rapa_plan_links_from_profile(const struct rapa_profile *p, double *bw_intra, double *lat_intra, double *bw_inter,
                                 double *lat_inter);
/* The profile's gradient all-reduce curve (links.allreduce.curve: medians by size) into
 * o->ar_points / ar_bytes / ar_s, when it was measured on o->P ranks on o->nodes nodes on
 * as many machines as o->hosts (emulated nodes: one), with o->threads threads a rank and
 * o->allreduce's algorithm; else o is left as it is. *why says which (a profile from
 * before the curve, another layout, machine count, thread count or algorithm). */
int rapa_plan_allreduce_from_profile(const struct rapa_profile *p, struct rapa_plan_opts *o, char *why, size_t n);
/* The all-reduce of `bytes` from o's curve (o->ar_points > 0), as described there. */
double rapa_plan_allreduce_curve(const struct rapa_plan_opts *o, double bytes);

/* Rank r's device kind ("cpu", "cuda"), its threads and its host's cores (0: unknown). */
int rapa_plan_host_from_profile(const struct rapa_profile *p, int r, const char **kind, int *threads, int *cores);
/* Whether a rank computes on a device: its rates stage halo rows through the host (H2D
 * and D2H both > 0). A device rank shares no host core. */
int rapa_plan_device_rank(const struct rapa_rates *r);
/* This machine's cores as a profile counts them (hwloc's cores in the allowed cpuset, not
 * hardware threads); 0 when hwloc cannot tell. */
int rapa_plan_host_cores(void);

#ifdef __cplusplus
}
#endif
#endif
