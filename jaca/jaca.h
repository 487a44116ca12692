/* jaca/jaca.h — JACA, the two-level halo cache, behind the exchange seam.
 *
 * The only public header of the jaca/ module (ARCHITECTURE.md, "JACA"). The cache is
 * an exchange (core/exchange.h) that wraps mpi/'s plain one: the model calls it like
 * any exchange and never knows which rows came from where.
 *
 * What it does:
 *  - Node tier: one shared-memory segment per node (comm_shm, mpi/comm.h) holding,
 *    per hidden layer, one row per halo vertex needed by any rank of the node that the
 *    tier admits (its budget, by priority for the jaca policy). A vertex needed by k
 *    ranks of a node is stored once. An owner on the node writes its rows there itself;
 *    a row whose owner is on another node crosses the network once per destination node
 *    (to one receiving rank there, which writes it into the segment), not once per
 *    consuming rank. Rows are published with a per-row sequence number (a seqlock:
 *    jaca/seqlock_internal.h) and the generation of the exchange that wrote them;
 *    readers copy, re-check, and wait for the generation they need.
 *  - Rank tier: the other halo rows of a rank ("direct" rows: its node's tier does not
 *    hold them) travel from their owner to that rank; the rank keeps those its budget
 *    admits in backend memory, each with the epoch it was produced in.
 *  - Staleness S (--staleness): a kept row is reused for up to S generations of its
 *    layer (one per training step, so S epochs), then sent again; rows are spread over
 *    S + 1 phases so that each step sends about 1 / (S + 1) of them (node_internal.h
 *    says how). S = 0 refreshes every row every step: the same values reach the same
 *    halo rows as without the cache, so training is exact (tested against one rank and
 *    bit for bit against the plain exchange). Every row served is checked against the
 *    bound: an older row is an error, never a value.
 *  - Halo gradients (backward, G = 0): a consumer whose row's owner is on its node
 *    writes the gradient into a node segment, the owner reads it from there and adds
 *    it (jaca/ngrad_internal.h); gradients for other nodes go through MPI. The owner
 *    adds in the plain exchange's order: exact, bit for bit (tested).
 *  - Gradient staleness G (--grad-staleness): a consumer sends the gradient of a halo
 *    row only in the steps of the row's phase (G + 1 phases, as above); its owner keeps
 *    the last gradient each consumer sent for each row and adds it every step, so a
 *    gradient is never more than G epochs old. G = 0: every gradient is sent back every
 *    epoch (exact).
 *  - Adaptive gradient staleness (--grad-staleness adaptive:EPS:G, struct jaca_options):
 *    one class instead of the phases; every step each consumer sends the gradient of a
 *    halo row only when it drifted by more than EPS (relative) from the one it last sent
 *    or when the owner's kept copy would become older than G; through mpi/'s
 *    variable-length exchange (comm_vhalo), to owners on the node too. The owner adds
 *    the last gradient received per (consumer, row) every step, each checked against G.
 *    EPS = 0: bit for bit G = 0 (the same adds in the same order). Counted in struct
 *    jaca_stats (grad_sent, grad_skipped).
 *  - Evaluation (epoch 0), the set-up exchange of the input features, and the first
 *    --cache-warmup epochs go through the plain exchange unchanged.
 *  - Coded rows (--halo-bits B < 32, mpi/comm.h comm_set_halo_bits): every MPI exchange
 *    of the cache (rows to other nodes and direct consumers, gradients) sends B-bit codes;
 *    rows and gradients written into a node segment stay floats. Refused with adaptive
 *    staleness of rows or gradients (comm_vhalo sends floats).
 *
 *  - Capacity: besides --cache-capacity (a fraction of the rows), each tier's memory
 *    budget is by default Algorithm 1 of the paper on memory measured free at set-up,
 *    less a reserve (jaca_capacity_rows); --cache-host-mb / --cache-device-mb N fix it.
 *  - Beside the measured hit rate, the hit rate Belady's MIN would reach on the same
 *    reads with the same slots (jaca_exchange_window).
 *
 *  - Adaptive staleness (--staleness adaptive:EPS:S, struct jaca_options): every kept
 *    row is a candidate every step; its sender keeps the copy it last published per
 *    destination and sends the row only when it drifted by more than EPS (relative) or
 *    when the copy held would become older than S. The rows that travel then depend on
 *    the data: they go through mpi/'s variable-length exchange (comm_vhalo), and the
 *    readers of a node tier wait for every rank of the node to have finished its writes
 *    of the generation (a per-rank done word in the segment) instead of for a row's
 *    generation. Counted in struct jaca_stats (adapt_sent, adapt_skipped).
 *
 *  - Prefetch (--cache-prefetch, on by default): one background thread per exchange
 *    copies the node-tier rows a forward exchange reads into the rank tier (on a device
 *    backend: into the host staging buffer) from begin on, as each row is published with
 *    the generation needed; end() copies only the rows the thread has not, then
 *    gathers. The thread calls no MPI and no backend function (jaca/prefetch_internal.h).
 *    With adaptive staleness the prefetch is off (which rows are new depends on the
 *    writers' data: readers wait for the node's done words, then read).
 *
 * On a CUDA backend the rank tier is device memory and the node tier is reached through
 * host staging buffers; with prefetch, the rows the thread copied go up on the
 * exchange's upload channel (core/ops.h side uploads: its own stream, from pinned
 * staging; jaca/prefetch.c), the backend's stream waiting for them before end's gather;
 * the other copies (adaptive staleness's rows and gradients, the gradient store) are
 * synchronous. Compiled, tested with a fake device (mpi/tests/fake_device.h) and by
 * test_jaca_gpu against the CPU cache where a GPU is present. Not built: serving layer
 * 0's exchanged rows from the tiers (struct jaca_layers).
 *
 * Counters (struct cg_exchange_counters through the seam): halo_bytes counts the bytes
 * this rank sends through MPI (forward rows to other nodes' receivers and to direct
 * consumers, backward gradients); a row written into the node's segment is not sent.
 * cache_lookups counts the halo rows of hidden layers read in training forward
 * exchanges; cache_hits those of them that reached this rank without being sent to it
 * (struct jaca_stats: node_hits). jaca_exchange_stats gives the details. */
#ifndef CAPGNN_JACA_H
#define CAPGNN_JACA_H

#include <stdint.h>

#include "core/exchange.h"
#include "core/ops.h"
#include "mpi/comm.h"
#include "partition/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which rows a tier keeps when it cannot hold them all (jaca/policy_internal.h):
 *  NONE  no cache: the plain exchange (the default)
 *  JACA  admission by priority: overlap ratio R(v) (the number of partitions holding v
 *        as a halo) times v's influence on the tier's ranks (the sum of its normalised
 *        edge weights there), ties by global id
 *  LRU   least recently used; FIFO  first in, first out. */
#define JACA_MAX_STALENESS 1000

enum jaca_policy { JACA_POLICY_NONE = 0, JACA_POLICY_JACA = 1, JACA_POLICY_LRU = 2, JACA_POLICY_FIFO = 3 };

const char *jaca_policy_name(enum jaca_policy p); /* "none", "jaca", "lru", "fifo" */
/* The names above -> policy; CG_ERR_ARG listing them for anything else. */
int jaca_policy_parse(const char *s, enum jaca_policy *out);

/* host_mb / device_mb: the budget from measured free memory (Algorithm 1, below). */
#define JACA_MB_AUTO (-1)
#define JACA_RESERVE_MB_DEFAULT 1024

struct jaca_options {
  enum jaca_policy policy; /* NONE: no cache at all */
  /* Node tier budget. capacity: the fraction of the node's halo rows it may hold, in
   * (0, 1] (1 = every row); host_mb > 0 caps its size in MiB besides (the smaller of the
   * two wins), 0 = no MiB cap, JACA_MB_AUTO (the default) = Algorithm 1 on the node's
   * available host memory less reserve_mb (jaca_capacity_rows). */
  double capacity;
  int64_t host_mb;
  int64_t device_mb; /* rank tier budget per rank, besides capacity (the fraction of a
                        rank's direct rows it keeps, with staleness > 0): > 0 MiB, 0 = no
                        MiB cap, JACA_MB_AUTO (default) = Algorithm 1 on the backend's
                        free memory less reserve_mb, shared by the node's ranks on the
                        CPU backend (their memory is the host's) */
  int64_t reserve_mb; /* Algorithm 1's reserved memory, MiB (default 1024): left free for
                         everything the job allocates after the cache */
  int staleness;     /* S in [0, JACA_MAX_STALENESS]: 0 = exact */
  int grad_staleness; /* G: 0 = every gradient sent back every epoch (exact); G > 0: a
                         halo row's gradient is sent at most every G + 1 steps (by phase)
                         and its owner adds the last one it received meanwhile */
  int warmup;        /* epochs with the cache off (the plain exchange) at the start */
  int prefetch;      /* 1 (default): a background thread per exchange copies the node-tier
                        rows a forward exchange reads into the rank tier while the layer
                        computes (--cache-prefetch on|off); the same values either way */
  /* Adaptive staleness (--staleness adaptive[:EPS[:S]]): adaptive = 1 replaces the
   * phase schedule for the forward rows. Every step the sender of each kept row (its
   * owner, for its direct consumers and for the rows it writes into its node's tier)
   * compares the row with the copy it last published to that destination and sends it
   * only when the relative drift ||new - held|| / max(||held||, 1e-30) exceeds adapt_eps
   * or when the held copy would otherwise become older than staleness (S stays a hard
   * bound, checked on every row served). adapt_eps = 0: every row every step (exact, bit
   * for bit the exchange at staleness 0). */
  int adaptive;
  double adapt_eps;
  /* Adaptive gradient staleness (--grad-staleness adaptive[:EPS[:G]]): grad_adaptive = 1
   * replaces the gradients' phase schedule. Every training step each consumer compares
   * the gradient of each halo row with the copy it last sent that row's owner, and sends
   * it only when the relative drift ||new - sent|| / max(||sent||, 1e-30) exceeds
   * grad_adapt_eps or when the owner's kept copy would otherwise become older than
   * grad_staleness (G stays a hard bound, checked on every gradient added); the owner
   * adds the last gradient it received per (consumer, row) every step. grad_adapt_eps =
   * 0: every gradient every step (exact, bit for bit the exchange at grad_staleness 0). */
  int grad_adaptive;
  double grad_adapt_eps;
  /* How long a rank waits for a row (or gradient) that another rank of its node writes
   * into the node tier before it fails, naming the row, its writer, the layer and epoch:
   * > 0 seconds; 0 (the default) = JACA_READ_TIMEOUT_S. The environment variable
   * CAPGNN_JACA_TIMEOUT=SECONDS, when set, overrides it. */
  double read_timeout_s;
};

/* The readers' timeout without read_timeout_s or CAPGNN_JACA_TIMEOUT (a writer gone or
 * stuck, or a broken schedule, ends in an error rather than a wait without end). */
#define JACA_READ_TIMEOUT_S 600.0

/* The defaults of --staleness adaptive without EPS or S. */
#define JACA_ADAPT_EPS_DEFAULT 0.01
#define JACA_ADAPT_S_DEFAULT 10

/* --staleness's value into o: "S" (epochs, adaptive off) or "adaptive[:EPS[:S]]"
 * (EPS >= 0, default JACA_ADAPT_EPS_DEFAULT; S in [1, JACA_MAX_STALENESS], default
 * JACA_ADAPT_S_DEFAULT). CG_ERR_ARG naming the syntax for anything else. */
int jaca_staleness_parse(const char *s, struct jaca_options *o);
/* --grad-staleness's value into o (grad_staleness, grad_adaptive, grad_adapt_eps): the
 * same syntax and defaults as jaca_staleness_parse ("G" or "adaptive[:EPS[:G]]"). */
int jaca_grad_staleness_parse(const char *s, struct jaca_options *o);

/* policy NONE, capacity 1, MiB budgets JACA_MB_AUTO with 1024 MiB reserved, staleness 0,
 * grad_staleness 0, warmup 0, adaptive off (rows and gradients), prefetch on, readers'
 * timeout 0 (JACA_READ_TIMEOUT_S). */
void jaca_options_defaults(struct jaca_options *o);
/* Range checks; CG_ERR_ARG naming the option and its range. */
int jaca_options_check(const struct jaca_options *o);
/* One line for the log naming the policy and every approximation in force
 * ("jaca, node tier 10 % of the halo rows, exact (staleness 0)"). */
const char *jaca_options_describe(const struct jaca_options *o, char *buf, size_t len);

/* Algorithm 1 of the CaPGNN paper (its cache capacity), as used here: a tier holds
 *   min(floor((avail_bytes - reserve_bytes) / vertex_bytes), candidates)
 * rows, where avail_bytes is the memory measured free where the tier lives (the node's
 * available host memory for the node tier, the least any of its ranks sees; the
 * backend's free memory for a rank tier), reserve_bytes what must stay free for the
 * rest of the job, vertex_bytes the bytes one vertex takes in the tier over every
 * cached layer (the sum of its rows' sizes), candidates the rows the tier could hold at
 * most (the node's halo vertices; a rank's direct rows). 0 when nothing is left after
 * the reserve; vertex_bytes <= 0 gives candidates. */
int64_t jaca_capacity_rows(int64_t avail_bytes, int64_t reserve_bytes, int64_t vertex_bytes, int64_t candidates);

/* The layers a cache serves: layer l in [1, nlayers) exchanges rows of at most `cols`
 * values (the model's hidden width: a hidden layer's input or its transformed rows);
 * layer 0 is never cached: its exchanges go to the plain exchange underneath, both the
 * set-up fetch of the input features (--layer0-halo local) and, with --layer0-halo
 * exchange, every step's transformed rows of layer 0 and their gradients (so they are
 * exact whatever the staleness; serving them from the tiers like a hidden layer's is
 * not built). */
struct jaca_layers {
  int nlayers;
  int64_t cols;
};

/* The caching exchange over `pl`'s plan (part_local_build; its arrays are read here and
 * not kept) on backend `be`: a plain exchange (comm_exchange_create, rows of up to
 * max_cols values) for what the cache does not serve, the node tier (one comm_shm per
 * node) and the forward exchange of the rows the node tiers receive from other nodes and
 * of the rows no tier holds. Priorities need each rank's influence: `agg` is the rank's
 * aggregation operator (pl->agg, n_inner x (n_inner + n_halo) with global-degree
 * weights). Collective over the world (every rank fails together, comm_agree); `c` and
 * `be` must outlive the exchange. Release with cg_exchange_destroy (collective).
 * o->policy NONE gives the plain exchange itself.
 *
 * Calling it: every rank makes the same exchanges in the same order. Between two
 * training forward exchanges of one layer (tag epoch > 0, after the warm-up) every rank
 * must pass a collective that it enters only after ending the first one (in training:
 * the step's loss and gradient all-reduces, runtime/model.c), for the second writes the
 * node tier's rows of that layer again while the first's may still be read. A begin
 * that would write them while a rank of its node has not ended the exchange before
 * returns CG_ERR_ARG naming this rule, before it writes or sends anything. (A begin
 * without the collective that finds the others done is not refused: nothing is
 * overwritten then.) The same holds for two training backward exchanges of one layer
 * through the node tier (--grad-staleness 0): the second writes the gradient blocks
 * their owners read in the first, and a begin that would write a block whose owner has
 * not ended the exchange before returns CG_ERR_ARG naming the rule. */
int jaca_exchange_create(struct comm *c, struct cg_backend *be, const struct part_local *pl,
                         const struct cg_csr *agg, int64_t max_cols, const struct jaca_layers *layers,
                         const struct jaca_options *o, struct cg_exchange **out);

/* What the cache did, cumulative since it was created, for one layer (layer in
 * [1, nlayers)) or summed over them (layer 0). Forward rows of training exchanges only
 * (evaluation and set-up go through the plain exchange and count nowhere here). */
struct jaca_stats {
  int64_t lookups;     /* halo rows read */
  int64_t rank_hits;   /* served by the rank tier: kept, not sent this time */
  int64_t node_hits;   /* read from the node tier, not sent to this rank now (its owner is
                          on the node, another rank of the node received it, or it is kept
                          there from an earlier refresh) */
  int64_t misses;      /* sent to this rank: to it as the node's receiver, or directly */
  int64_t refreshed;   /* rows read with values of this generation (the others are kept
                          ones, at most --staleness epochs old) */
  int64_t node_writes; /* rows this rank wrote into the node tier (owned or received) */
  int64_t torn_reads;  /* seqlock copies thrown away and retried */
  int64_t bytes_intra; /* forward bytes this rank sent through MPI to ranks of its node */
  int64_t bytes_inter; /* ... to ranks of other nodes */
  int64_t bytes_shm;   /* forward bytes this rank wrote into the node segment */
  int64_t bytes_h2d, bytes_d2h; /* between host staging and device memory (0 on the CPU) */
  int64_t bytes_exact; /* forward bytes the plain exchange would have sent for the same
                          exchanges (this rank's rows to every rank holding them) */
  int64_t bytes_exact_inter; /* ... of them to ranks of other nodes */
  int64_t age_sum, age_max; /* epochs between a row's production and its use, over the
                               rows read (0 with staleness 0) */
  /* halo gradients of training steps (after the warm-up): at grad_staleness 0 every
   * gradient every step, those for owners on this node through the node tier, the
   * others through MPI (exact); with G > 0 the stale-gradient path, all through MPI */
  int64_t grad_bytes;       /* gradient bytes this rank sent through MPI */
  int64_t grad_bytes_shm;   /* ... wrote into the node segment instead */
  int64_t grad_bytes_exact; /* ... the plain exchange would have sent */
  int64_t grad_refreshed;   /* gradients received with this step's values (as owner) */
  int64_t grad_used;        /* gradients added (fresh and kept) */
  int64_t grad_age_max;     /* the oldest gradient added, in epochs */
  /* adaptive gradient staleness: halo gradients this rank sent its owners because they
   * drifted by more than EPS or were due, and those it skipped (the owner added the copy
   * it kept); grad_index_bytes: bytes of row positions sent beside them (in grad_bytes) */
  int64_t grad_sent, grad_skipped, grad_index_bytes;
  /* prefetch (forward rows read from the node tier): */
  int64_t prefetched;   /* rows the prefetch thread had copied before end() needed them */
  int64_t end_copied;   /* rows end() copied itself (not prefetched; all of them with
                           prefetch off) */
  int64_t end_wait_ns;  /* time the training thread spent in end() on the node tier's rows
                           (waiting for their writers and copying) */
  /* adaptive staleness: candidate rows (kept rows this rank sends or writes into its
   * node's tier) it sent / wrote because they drifted or were due, and those it skipped
   * (their consumers kept the copy they hold) */
  int64_t adapt_sent, adapt_skipped;
  int64_t adapt_index_bytes; /* bytes of row indices sent beside them (in bytes_intra/inter) */
};
/* CG_ERR_ARG when ex is not a caching exchange from jaca_exchange_create or layer is
 * out of range. */
int jaca_exchange_stats(const struct cg_exchange *ex, int layer, struct jaca_stats *out);
/* Sets every layer's age_max and grad_age_max to 0: the next jaca_exchange_stats then
 * gives the oldest row and gradient used since this call (the other counters keep
 * counting). The runtime calls it after each epoch's record, so that a record's maxima
 * are the epoch's. CG_ERR_ARG when ex is not a caching exchange. */
int jaca_exchange_restart_max(struct cg_exchange *ex);
/* How far the tiers are from the best any cache of their size could do, over one
 * refresh window (S + 1 training steps; the cache's values live that long). The trace
 * is a node's halo reads of the window (each rank's halo rows in order, by local rank),
 * after each vertex owned on the node is written once by its owner:
 *  reads        the reads of the window
 *  policy_hits  those the tiers serve without sending the row to the reader (what
 *               cache_hit_rate tends to over a long run)
 *  oracle_hits  those Belady's MIN serves on the same trace with the same slots (the
 *               node tier's and the node's rank tiers' as one cache); -1 when the trace
 *               was too long to simulate (more than 4M entries)
 * On each node's local rank 0, zeros on its other ranks: sums over the ranks are the
 * job's. CG_ERR_ARG for an exchange that is not a caching one. */
struct jaca_window {
  int64_t reads, policy_hits, oracle_hits;
};
int jaca_exchange_window(const struct cg_exchange *ex, struct jaca_window *out);

/* The options a caching exchange was created with (CG_ERR_ARG for any other exchange). */
int jaca_exchange_options(const struct cg_exchange *ex, struct jaca_options *out);

#ifdef __cplusplus
}
#endif
#endif
