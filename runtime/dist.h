/* runtime/dist.h — partition-parallel training: one rank per partition.
 *
 * The glue between partition/ (who owns which vertex, local graphs and exchange
 * plans), mpi/ (halo exchange, gradient all-reduce) and the runtime's model, which
 * only sees a struct rt_local and a struct cg_exchange (core/exchange.h). With the
 * exchange made here, training on P ranks computes what training on one rank
 * computes (the exactness contract of ARCHITECTURE.md; tested by
 * runtime/tests/test_dist_equiv.c).
 *
 * Set-up flow (rt_dist_create, collective over the world of `c`):
 *  1. every rank opens the graph itself (graph_open: a .cgr file every rank can
 *     read, or the same synthetic spec, which generates the same graph); the ranks
 *     then check that they hold the same graph (checksum, n, m). Opening on every
 *     rank avoids shipping the whole graph through MPI; the price is that each rank
 *     holds it for the duration of the set-up (step 6 frees it);
 *  2. feature row normalisation when cfg->feat_norm_row;
 *  3. rank 0 computes the owner of every vertex (part_assign_cached: METIS or the
 *     seeded random split, through the on-disk partition cache) and broadcasts it,
 *     so every rank partitions with the same owners and only one writes the cache;
 *  4. each rank builds its own local graph (part_local_build with the model's
 *     normalisation and GLOBAL degrees) and checks it (part_local_check);
 *  5. the rank's local problem (struct rt_local): inner rows' features, labels and
 *     split; feat_rows = n_inner, so the model fetches the halo feature rows once at
 *     set-up through a forward halo exchange; train/val/test counts of the whole graph;
 *  5b. with cfg->reorder (runtime.h, rt_local_reorder), each rank lays out its inner
 *     rows for locality, locally: owners, halo sets, halo blocks and the rows read per
 *     rank stay those of the file's order; the plan's ids and send lists (inner local
 *     ids) are renumbered with the rows. Not with a halo cache (its plan needs inner
 *     rows in global order): rcm/cluster/metis are refused, auto keeps the order;
 *  6. the global graph and the owner array are freed: after set-up a rank holds the
 *     features of its inner rows (host) and of its halo rows (in the model), never
 *     the whole feature matrix (rt_dist_feature_bytes; logged at DEBUG).
 * Every step ends with comm_agree: an error on any rank makes every rank return an
 * error (the failing rank keeps its message, the others name the failing rank), so
 * a failed set-up never hangs a peer.
 *
 * The exchange (rt_dist_bind, collective) is mpi/'s plain one (comm_exchange_create), or,
 * when the options ask for a halo cache (halo_cache.policy other than NONE), jaca/'s
 * caching exchange over it (jaca_exchange_create: fewer bytes between ranks and nodes,
 * the same values with staleness 0, rows up to S epochs old with staleness S; rows of up
 * to `hidden` values cached for layers 1..layers-1). The plain one is:
 * a comm_halo over the rank's plan sized for the widest rows the model exchanges
 * (max(feat_dim, hidden when layers > 1): layer 0 exchanges features once; a layer
 * l > 0 exchanges its hidden input or the narrower transformed rows, never more than
 * `hidden` columns), the flat gradient all-reduce (created at the first all-reduce,
 * when the parameter count is known; all ranks reach it together), host all-reduces,
 * and its own byte counters since it was created (bytes SENT by this rank, so that the
 * sum over ranks is the traffic).
 *
 * Failures inside the exchange are returned (status + a message naming the failing
 * call; the log prefix names the rank); the caller of rt_train must then end the job
 * with comm_abort, since peers may be waiting in a collective (apps/cmd_train.c does).
 *
 * Testing only: CAPGNN_TEST_FAIL_RANK=r (or a comma list of ranks, r1,r2) makes rank r
 * fail on purpose, at the point CAPGNN_TEST_FAIL_AT names: "setup" (default;
 * rt_dist_create fails as if the graph could not be opened), "train" (the 3rd halo
 * exchange returns an error, i.e. inside the first training step), "kill" (the rank
 * SIGKILLs itself there) or "skip" (the rank leaves out its first training forward
 * exchange of a hidden layer, begin and end alike, and goes on: its peers wait for rows
 * it never sends or writes, a schedule broken on one rank). The last three wrap rank
 * r's exchange in a fault-injecting one (runtime/fault.c); the other ranks run the
 * plain exchange.
 */
#ifndef CAPGNN_RUNTIME_DIST_H
#define CAPGNN_RUNTIME_DIST_H

#include <stdint.h>

#include "jaca/jaca.h"
#include "mpi/comm.h"
#include "partition/partition.h"
#include "runtime/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rapa_rates; /* rapa/balance.h */
struct rapa_links;
/* How rt_dist_create reads the graph:
 *  WHOLE     every rank opens the whole graph (graph_open), the flow above;
 *  PER_RANK  a .cgr file: rank 0 reuses the cached partition when there is one (its key,
 *            part_cache_lookup, needs only the header's name, checksum and n: no structure
 *            is read), or else reads only the structure (rowptr + colidx, checked,
 *            symmetry included) and partitions; the owners are broadcast, then every rank reads the row pointers (the global
 *            degrees, 8 (n + 1) bytes) and its own rows only (graph_cgr_read_rows: CSR
 *            rows, features, labels, split; verified per block in a version-2 file, per
 *            section in a version-1 file, docs/cgr-v2.md) and builds its local graph from
 *            them (part_local_build_rows: the same local graph bit for bit). The halo
 *            feature rows come from their owners through the forward exchange at set-up,
 *            as in WHOLE. A rank's set-up peak is then its rows, its local graph and
 *            O(n) arrays (row pointers, owners), plus on rank 0 the structure while it
 *            partitions. part_local_check (which needs the whole graph) is not run;
 *            the global split counts are summed over the ranks;
 *  AUTO      PER_RANK for a .cgr file, WHOLE for a synthetic spec (generated whole on
 *            every rank, as before). */
enum rt_load { RT_LOAD_AUTO = 0, RT_LOAD_WHOLE, RT_LOAD_PER_RANK };
const char *rt_load_name(enum rt_load l);                 /* "auto", "whole", "per-rank" */
int rt_load_parse(const char *name, enum rt_load *out);   /* CG_ERR_ARG on another name */

struct rt_dist_options {
  enum part_method method; /* PART_METIS (default) or PART_RANDOM */
  uint64_t part_seed;      /* METIS seed / random split key (default 1) */
  int use_cache;           /* 1 (default): part_assign_cached; 0: part_assign, no file */
  const char *cache_dir;   /* NULL: $CAPGNN_CACHE, else .capgnn-cache (partition.h) */
  struct jaca_options halo_cache; /* the halo cache (jaca/jaca.h); policy NONE (default):
                                     the plain exchange */
  enum comm_allreduce allreduce;  /* the gradient sum (mpi/comm.h, comm_set_allreduce;
                                     default AUTO) */
  /* --partition rapa (rapa/balance.h; builds with rapa/ only): METIS with part weights
   * proportional to each rank's capability, one correction pass from the cost model;
   * exact (only the owners change). The rates: rank r of the profile rapa_profile (its
   * rank count must be the job's), or, NULL, measured at start-up on every rank's
   * rapa_be (the backend training runs on: threads and emulated speed included) at the
   * model's shapes, with the links between the ranks. The owners are never cached (they
   * depend on measured rates). The prediction reaches the local problem (rt_local.pred)
   * and the training log and metrics. */
  int rapa;
  const char *rapa_profile;
  struct cg_backend *rapa_be;
  /* or the rates given (rank r's at rapa_rates[r], the links may be NULL: compute only),
   * e.g. measured once by the caller: neither profile nor measurement then */
  const struct rapa_rates *rapa_rates;
  const struct rapa_links *rapa_links;
  /* --prune-halo EPS (> 0; with rapa only): APPROXIMATE. After the weighted split, halo
   * vertices are pruned (rapa_prune_halo: their edges into the slow ranks go, both
   * directions) until std(lambda) < EPS x mean; every rank then trains on the pruned graph
   * (the exact training of that graph). prune_write: rank 0 writes it there as a .cgr.
   * prune_keep_degrees: the pruned graph is normalised with the original graph's degrees
   * (graph_set_norm_degrees: a pruned row keeps its weights and loses the pruned ones'
   * mass) instead of its own (the default: a pruned row's weights renormalised over the
   * neighbours that remain); one rank reproduces it with rt_config.norm_graph = the
   * original graph. */
  double prune_eps;
  const char *prune_write;
  int prune_keep_degrees;
  enum rt_load load;              /* how rt_dist_create reads a .cgr file (default AUTO) */
};
void rt_dist_options_defaults(struct rt_dist_options *o);

/* One rank's local problem from its local graph: gid, operator (moved out of pl:
 * pl->agg is left empty, the rest of pl stays the caller's), inner rows' dense features (feat_rows = n_inner), labels and split;
 * n_*_global from the whole graph `g`. pl must have been built from g. With `sparse`
 * the features as CSR instead (rt_features_choose): of the inner rows alone, or with
 * `halo_feat` of the inner AND halo rows (feat_rows = n_inner + n_halo: a local layer 0,
 * whose halo feature rows are never exchanged). */
int rt_local_from_part(const struct graph *g, struct part_local *pl, int sparse, int halo_feat,
                       struct rt_local *out);
/* The same from the rank's own rows (per-rank loading): `info` the graph's header values
 * (graph_cgr_info), pl built by part_local_build_rows from `rows`, split_global the
 * train/val/test counts of the whole graph. The rows' features, labels and split move
 * into *out (rows keeps its CSR arrays), and so does pl's operator. Rows read with GRAPH_ROWS_FEAT_SPARSE give
 * sparse features: then hrows holds the halo rows' (GRAPH_ROWS_FEAT_SPARSE too) for the
 * global ids hgid (increasing, the halo gids of pl sorted), and the local problem has
 * every inner and halo row's features; or hrows is NULL, and it has the inner rows'
 * alone (feat_rows = n_inner: layer 0 exchanged, no halo feature row is ever used).
 * Dense features ignore hrows and hgid (NULL). */
int rt_local_from_rows(const struct graph *info, struct part_local *pl, struct graph_rows *rows,
                       struct graph_rows *hrows, const int32_t *hgid, const int64_t split_global[3],
                       struct rt_local *out);

struct rt_dist; /* opaque: the rank's local problem, exchange plan and MPI objects */

/* Collective set-up from cfg->graph (flow above). `c` must outlive the object.
 * The model kind (normalisation) comes from cfg->model. Here and in rt_dist_bind
 * (cfg->layers, cfg->hidden: the exchange's width) `cfg` has passed rt_config_check
 * (rt_run_dist checks it; a direct caller checks it first). */
int rt_dist_create(struct comm *c, const struct rt_config *cfg, const struct rt_dist_options *o,
                   struct rt_dist **out);
/* The same from a graph every rank already holds (identical on every rank, used as
 * is: no feature normalisation, not freed). `owner` (n entries, the same on every
 * rank) may be NULL: rank 0 then computes it as in rt_dist_create. Collective. */
int rt_dist_create_from_graph(struct comm *c, const struct graph *g, const struct rt_config *cfg,
                              const struct rt_dist_options *o, const int32_t *owner,
                              struct rt_dist **out);
/* Create the rank's exchange on backend `be` (comm_exchange_create over its plan) and
 * hand it back in *ex, for rt_model_create / rt_train. Collective. `be` must outlive
 * d; *ex stays owned by d, valid until rt_dist_destroy (which releases it). */
int rt_dist_bind(struct rt_dist *d, struct cg_backend *be, const struct rt_config *cfg,
                 struct cg_exchange **ex);
/* Release the exchange rt_dist_bind made (collective: frees MPI objects), so that the
 * next rt_dist_bind starts afresh. A halo cache carries state from one training run to
 * the next (rows, their epochs, refresh generations), which another run (another seed,
 * the same run with other settings) must not inherit. No-op when not bound. */
void rt_dist_unbind(struct rt_dist *d);
/* Collective when bound (frees MPI objects). Accepts NULL / *d NULL. */
void rt_dist_destroy(struct rt_dist **d);

const struct rt_local *rt_dist_local(const struct rt_dist *d);
const struct part_local *rt_dist_part(const struct rt_dist *d); /* plan arrays; agg freed */
/* Feature bytes this rank holds after set-up: its inner rows (host, in the local
 * problem) plus its halo rows (the model's layer-0 input): (n_inner + n_halo) x
 * feat_dim x 4. */
int64_t rt_dist_feature_bytes(const struct rt_dist *d);
/* Widest row the exchange was sized for (0 before rt_dist_bind). */
int64_t rt_dist_max_cols(const struct rt_dist *d);
/* Per-rank loading: the bytes this rank read from the .cgr file (graph_cgr_bytes_read)
 * and, of them, those of the structure rank 0 reads to partition (0 on the other ranks,
 * and on rank 0 when the partition came from the cache); both 0 for whole loading. */
void rt_dist_bytes_read(const struct rt_dist *d, uint64_t *total, uint64_t *structure);

/* `capgnn train` on the ranks of `c`. The configuration is checked here (every rank,
 * agreed). One rank: rt_run, the single-process path (no partition, results as
 * without MPI). Several ranks: comm_set_path(path) (unless COMM_PATH_AUTO); before
 * the graph is loaded, the run's files checked by rank 0 (runtime.h, "checkpoints in
 * a run"; its error, message included, reaches every rank, so the job reports it
 * once) and the checkpoint to resume from read once by every rank; the backend (CUDA:
 * every rank bound to a GPU by comm_gpu_bind and the backend opened on that ordinal;
 * "auto" uses the CPU on every rank unless every rank sees a GPU), rt_dist_create,
 * the checkpoint checked against the graph (every rank agreeing: a checkpoint of
 * another graph is a set-up error), rt_dist_bind, rt_train with that checkpoint
 * (rank 0 writes the metrics file).
 * Collective. Set-up errors are agreed (every rank returns an error, *fatal = 0).
 * *fatal = 1 when the failure happened once training had started: a peer may be
 * waiting in a collective, so the caller must log it and comm_abort(). */
int rt_run_dist(struct comm *c, const struct rt_config *cfg, const struct rt_dist_options *o,
                enum comm_path path, struct rt_result *res, int *fatal);

#ifdef __cplusplus
}
#endif
#endif
