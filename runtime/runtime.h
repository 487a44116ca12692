/* runtime/runtime.h — models, training loop, evaluation and metrics.
 *
 * The runtime trains GCN and GraphSAGE (mean aggregator) full-batch. It works on
 * one rank's *local problem* (struct rt_local): the rows this rank owns ("inner"
 * vertices), the halo rows it reads from other ranks, and the layer's aggregation
 * operator restricted to the inner rows. A single process builds the local problem
 * from the whole graph (rt_local_from_graph: no halo, no exchange); partition-parallel
 * training builds it from a partition and passes the exchange seam (struct
 * cg_exchange, core/exchange.h; runtime/dist.h creates it). The model code is the
 * same in both cases.
 *
 * What the model computes (ARCHITECTURE.md, exactness contract)
 * - GCN layer:  Z = Â Hd W + b,  Â = D^-1/2 (A+I) D^-1/2 with global degrees.
 * - SAGE layer: Z = Hd W_self + mean_{u in N(v)}(Hd_u) W_neigh + b, global in-degree,
 *               no self-loop in the mean.
 * - Hd = dropout(H) keyed by (seed, epoch, layer, global id, column) on the input of
 *   every layer (input features included, with their own probability when
 *   input_dropout is set). Hidden layers: conv -> [LayerNorm] -> ReLU; the last
 *   layer's Z are the logits.
 * - Without dropout on the input features, layer 0's aggregation Â·X never changes:
 *   it is computed once at model creation and layer 0 costs GEMMs only (no SpMM in
 *   the forward or backward pass). Â(XW) = (ÂX)W up to rounding.
 * - Loss: softmax cross-entropy (single-label) or sigmoid BCE (multi-label), mean
 *   over ALL train vertices of the graph (BCE: over train vertices x classes, as
 *   torch's BCEWithLogitsLoss(reduction="mean")); every rank adds its share.
 * - Weight init: Glorot uniform from Philox keyed by the seed; biases 0, LayerNorm
 *   gamma 1 and beta 0. Same seed, same thread count -> bit-identical run.
 * - Optimizer: Adam (L2 added to the gradient, as torch.optim.Adam), AdamW
 *   (decoupled) or SGD with momentum (L2 in the gradient, as torch.optim.SGD; its
 *   momentum buffer is kept where Adam keeps its first moment), at the learning rate
 *   of the step's schedule (rt_lr_at). Weight decay applies to the weight matrices only — never to
 *   biases or LayerNorm gamma/beta — and, with RT_WD_FIRST, only to the first
 *   layer's weights (Kipf & Welling's setup).
 *
 * Memory: rt_model_create allocates every backend buffer (parameters, the one flat
 * gradient buffer, Adam state, activations, saved tensors, index arrays, labels);
 * the training step allocates nothing.
 */
#ifndef CAPGNN_RUNTIME_H
#define CAPGNN_RUNTIME_H

#include <stdint.h>

#include "core/csr.h"
#include "core/exchange.h"
#include "core/ops.h"
#include "graph/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration --------------------------------------------------------- */

/* Upper bound of --epochs: ten million full-batch epochs is already far beyond any
 * use, and a typo such as 2000000000 should be an error, not a 48 GB allocation. */
#define RT_MAX_EPOCHS 10000000
/* Upper bound of --early-stop N: the window rule keeps N validation losses in the
 * checkpoint's header (at most 1 MiB). */
#define RT_MAX_EARLY_STOP 10000

enum rt_model_kind { RT_MODEL_GCN = 0, RT_MODEL_SAGE = 1, RT_MODEL_GAT = 2 };
enum rt_optimizer { RT_OPT_ADAM = 0, RT_OPT_ADAMW = 1, RT_OPT_SGD = 2 };
/* The learning rate over the optimizer steps (rt_lr_at). */
enum rt_lr_schedule { RT_LR_NONE = 0, RT_LR_STEP = 1, RT_LR_COSINE = 2 };
/* When --early-stop N stops a run (rt_early_stop_*, runtime/early_stop.c). */
enum rt_early_stop_rule { RT_ES_PATIENCE = 0, RT_ES_WINDOW = 1, RT_ES_GAT = 2 };
/* Which weight matrices weight decay applies to (biases/LayerNorm never decay). */
enum rt_wd_scope { RT_WD_ALL = 0, RT_WD_FIRST = 1 };
/* --sparse-features: whether layer 0 multiplies the input features as a sparse matrix
 * (rt_features_choose says when auto does). */
enum rt_sparse_features { RT_SPARSE_AUTO = 0, RT_SPARSE_ON = 1, RT_SPARSE_OFF = 2 };
/* auto: sparse when the file stores the features sparse and at most this fraction of
 * the n x f entries is stored. */
#define RT_SPARSE_AUTO_MAX_DENSITY 0.10
/* --layer0-halo: where a partitioned run gets the halo rows layer 0 aggregates
 * (rt_layer0_exchange_choose says what auto picks and why):
 *   local     every rank holds the halo rows of the input features (fetched once at
 *             set-up) and computes layer 0 over all n_inner + n_halo rows itself;
 *   exchange  layer 0 runs as a hidden transform-first layer: each rank computes
 *             T = dropout(X)·W0 on its inner rows only, exchanges T's fout-wide rows
 *             (forward) and the halo rows of dT (backward, to their owners); no halo
 *             feature row is fetched or kept. */
enum rt_layer0_halo { RT_L0_AUTO = 0, RT_L0_LOCAL = 1, RT_L0_EXCHANGE = 2 };

struct rt_config {
  /* data */
  const char *graph;      /* NAME | FILE | synth:... (graph_open); default "synth:small" */
  const char *norm_graph; /* NULL, or a graph on the same vertices that contains `graph`: its
                             degrees normalise the aggregation (graph_set_norm_degrees; e.g.
                             a pruned graph trained as `--prune-norm original` trained it) */
  int feat_norm_row;      /* 1: divide each feature row by its sum before training */
  enum rt_sparse_features sparse_features; /* default auto */
  enum rt_layer0_halo layer0_halo; /* default auto (rt_layer0_exchange_choose) */
  int halo_cache;         /* 1: a halo cache (--cache-policy) serves the hidden layers' exchanges
                             (layer 0's goes around it); set by the runtime from the run's
                             options (rt_run_dist), weighed by --layer0-halo auto */
  int on_gpu;             /* 1: the ranks compute on GPUs; set by the runtime once the backend
                             is open (rt_run_dist), weighed with halo_cache by auto */
  /* model */
  enum rt_model_kind model;
  int layers;             /* >= 1 convolution layers */
  int64_t hidden;         /* width of hidden layers */
  float dropout;          /* in [0, 1) */
  float input_dropout;    /* on the input features (layer 0); < 0 (default): = dropout */
  int layernorm;          /* 1: LayerNorm (eps 1e-5) after every hidden convolution */
  /* GAT (model = RT_MODEL_GAT; runtime/model_gat.c): a hidden layer has `heads` heads of
   * `hidden` values each, concatenated (heads * hidden wide), ELU after it; the output
   * layer `out_heads` heads of `classes` values, averaged. Attention dropout on the
   * coefficients with probability attn_dropout (< 0: = dropout). */
  int heads, out_heads;
  float attn_dropout;
  /* optimisation */
  enum rt_optimizer optimizer;
  float lr, weight_decay, beta1, beta2, adam_eps;
  enum rt_wd_scope wd_scope;
  float momentum;         /* SGD's momentum in [0, 1) (0: plain SGD); unused by Adam */
  /* learning-rate schedule (rt_lr_at): none, step (x lr_gamma every lr_step_size
   * steps), cosine (to 0 over lr_epochs steps); lr_warmup first steps ramp up linearly */
  enum rt_lr_schedule lr_schedule;
  int lr_step_size;       /* step: >= 1 */
  float lr_gamma;         /* step: in (0, 1]; default 0.1 */
  int lr_warmup;          /* >= 0 steps (0: none) */
  int lr_epochs;          /* steps the schedule spans; 0 (default): epochs */
  /* early stopping on the validation loss (runtime/early_stop.c); 0: off */
  int early_stop;         /* N evaluations */
  enum rt_early_stop_rule early_stop_rule;
  int epochs;             /* in [1, RT_MAX_EPOCHS] */
  int eval_every;         /* evaluate every N epochs (and always after the last) */
  uint64_t seed;          /* weights and dropout masks */
  /* execution */
  const char *device;     /* "auto" | "cpu" | "cuda" */
  int threads;            /* CPU threads per rank; 0: rt_threads_setup's default (rt_run and
                             rt_run_dist resolve it first: the run, its summary and its
                             checkpoints see the count used) */
  const char *threads_list; /* --threads N,N,...: one count per rank as given (threads is this
                               rank's; the summary names the list), NULL otherwise */
  int tf32;               /* CUDA: allow TF32 GEMM (off by default: exactness) */
  int overlap;            /* 1 (default): halo exchanges overlap the inner rows'
                             aggregation ("communication" below); 0: each exchange
                             completes before the aggregation starts. Results are
                             bit-identical either way. */
  int halo_bits;          /* partitioned runs: bits per value of the halo rows and
                             gradients training steps send through MPI (--halo-bits;
                             mpi/comm.h, comm_set_halo_bits): 32 (default) floats,
                             exact; 16, 8 or 4 APPROXIMATE (stochastic rounding per
                             row); evaluation's exchanges stay exact */
  /* Locality reordering (runtime/reorder.c, rt_local_reorder): the inner rows of the
   * local problem in the order graph_reorder names (default none). The model computes
   * the same values up to summation order within a row (rounding); everything a user
   * sees (metrics, predictions, embeddings) stays in the graph's vertex order. */
  enum graph_reorder reorder;
  const char *metrics_path; /* JSON Lines metrics file, NULL = none */
  int quiet;              /* 1: no per-epoch INFO lines */
  int log_every;          /* without a terminal: a line every N epochs (and the first and
                             last); 0 (default): about 20 lines a run */
  const char *save_best_path; /* the weights of the best epoch, as a checkpoint; NULL = none */
  int metrics_append;     /* 1: add to an existing metrics file instead of replacing it (the
                             later runs of --seeds; a resumed run always appends) */
  /* checkpoints (rt_run, rt_run_dist, rt_train: "checkpoints in a run" below) */
  const char *checkpoint_path; /* write the training state here, NULL = never */
  int checkpoint_every;   /* ... every N epochs and after the last; 0 = after the last only */
  const char *resume_path; /* continue from this checkpoint, NULL = start afresh */
  /* a rank that makes no progress for this long (seconds) ends the job, with a message
   * naming it and where it stopped (core/watchdog.h); 0 = never. Default 300. It
   * watches the training loop (set-up, whose length depends on the graph, is not
   * watched): it must exceed the longest step of the run (an epoch's layer, a
   * checkpoint's write). */
  double stall_timeout_s;
  /* outputs (the rule of core/outfile.h: "checkpoints in a run" below) */
  int force;              /* replace an existing --metrics / --checkpoint file of another kind */
  const char *const *inputs; /* other files the run reads (settings files), NULL-terminated;
                                no output may be one of them. NULL: none */
};

/* Defaults: synth:small, GCN, 2 layers, 16 hidden, dropout 0.5, no LayerNorm (GAT: 8
 * heads, 1 output head, attention dropout as dropout), Adam
 * lr 0.01, weight decay 5e-4 on all weight matrices, 200 epochs, eval every epoch,
 * seed 1, no feature normalisation, device auto, overlap on. */
void rt_config_defaults(struct rt_config *c);
/* Dropout probability on the input of layer l (input_dropout for l = 0). */
float rt_config_layer_dropout(const struct rt_config *c, int l);
/* GAT's dropout probability on the attention coefficients. */
float rt_config_attn_dropout(const struct rt_config *c);
/* The widest row a hidden layer (l >= 1) exchanges between ranks, for a model of
 * `classes` outputs: GCN and SAGE their hidden width (a layer's input or transformed
 * rows); GAT the transformed rows and their attention terms, heads * (width + 1). */
int64_t rt_config_halo_cols(const struct rt_config *c, int64_t classes);
/* The widest slice of the input features the set-up exchange moves at once: the model
 * fetches its halo feature rows in column slices of at most this many values, so that
 * the exchange's buffers need not be as wide as the features (on synth:products,
 * P = 4, a 100-wide buffer of ~1.3 M rows was 0.53 GB per rank, resident for the whole
 * run although training moves 16-wide rows). At least RT_FEATURE_COLS_MIN, at least
 * rt_config_halo_cols when there are hidden layers, at least feat_dim /
 * RT_FEATURE_SLICES_MAX (rounded up: at most that many set-up exchanges, each a
 * collective), at most feat_dim. */
#define RT_FEATURE_COLS_MIN 16
#define RT_FEATURE_SLICES_MAX 8
int64_t rt_config_feature_cols(const struct rt_config *c, int64_t feat_dim, int64_t classes);
/* Range checks; CG_ERR_ARG with a message naming the option and the valid range.
 * A configuration is checked once, where it enters: every public function that trains
 * from one (rt_run, rt_run_dist, rt_train, rt_model_create) checks it on entry, before
 * it uses any of it, and hands it on as checked to the internal code it calls (rt_run
 * does not check again through rt_train and rt_model_create), so a direct caller with
 * a bad configuration gets this error, never a crash. The command line checks it after
 * parsing, for its usage error (exit code 2), before MPI starts. (rt_dist_create and
 * rt_dist_bind, runtime/dist.h, read a few fields of a configuration checked by their
 * caller.) */
int rt_config_check(const struct rt_config *c);
const char *rt_model_kind_str(enum rt_model_kind k);  /* "gcn", "sage", "gat" */
const char *rt_optimizer_str(enum rt_optimizer o);    /* "adam", "adamw", "sgd" */
const char *rt_wd_scope_str(enum rt_wd_scope s);      /* "all", "first" */
const char *rt_lr_schedule_str(enum rt_lr_schedule s); /* "none", "step", "cosine" */
const char *rt_early_stop_rule_str(enum rt_early_stop_rule r); /* "patience", "window", "gat" */
/* The learning rate of optimizer step t >= 1 (runtime/schedule.c), as torch's
 * schedulers stepped once an epoch give it, after W = lr_warmup warm-up steps:
 *   t <= W:  lr * t / W                                  (linear warm-up)
 *   else, u = t - W - 1 (0 for the first step after the warm-up), T = lr_epochs (or
 *   epochs) - W:
 *     none    lr
 *     step    lr * lr_gamma^floor(u / lr_step_size)       (torch StepLR)
 *     cosine  lr * (1 + cos(pi * min(u, T) / T)) / 2       (torch CosineAnnealingLR,
 *                                                          eta_min 0, T_max T)
 * Computed in double, rounded to float once. */
float rt_lr_at(const struct rt_config *c, int64_t t);
/* The aggregation operator a model kind uses (GCN: GRAPH_NORM_GCN with self-loops;
 * SAGE: GRAPH_NORM_MEAN without; GAT: the structure of GCN's, A + I, whose values it
 * does not use: its coefficients are the attention softmax). */
enum graph_norm rt_model_norm(enum rt_model_kind k, int *self_loops);

/* ---- the local problem of one rank ---------------------------------------- */

/* What the resource-aware partitioner predicted for every rank of the job (rapa/
 * balance.h's cost model), which training logs and writes next to what it measures.
 * Owned by whoever built the local problem (runtime/dist.c); NULL: no prediction. */
#define RT_PRED_MAX_RANKS 64
struct rt_prediction {
  int nranks;
  char rates[160];  /* where the rates came from ("measured at start-up", "profile FILE") */
  double compute_s[RT_PRED_MAX_RANKS], comm_s[RT_PRED_MAX_RANKS], memory_bytes[RT_PRED_MAX_RANKS];
  double target[RT_PRED_MAX_RANKS]; /* the part weight shares METIS was given */
  int passes, corrected;            /* METIS runs; 1 when the correction pass's split was kept */
  /* halo pruning (--prune-halo EPS > 0: APPROXIMATE, the training of the pruned graph) */
  double prune_eps;                 /* 0: none */
  int prune_keep_degrees;           /* 1: normalised with the original degrees */
  int64_t cut_edges, pruned_edges;  /* undirected edges between parts / removed by pruning */
  int64_t pruned_vertices;          /* halo vertices dropped (per part, summed) */
};

/* Local ids [0, n_inner) are owned rows, [n_inner, n_inner + n_halo) halo rows
 * (grouped by owner, ARCHITECTURE.md). All arrays are host memory allocated with
 * cg_malloc (agg with cg_csr_alloc); rt_local_free releases them. */
struct rt_local {
  char name[64];             /* graph name, for logs and metrics */
  int rank, nranks;          /* 0 and 1 for a single process */
  int64_t n_global, m_global;/* vertices and directed edges of the whole graph */
  uint32_t graph_checksum;   /* the graph's checksum (struct graph), for checkpoints */
  int64_t n_inner, n_halo;
  int32_t *gid;              /* n_inner + n_halo global ids (dropout keys) */
  enum graph_norm norm;      /* which operator `agg` holds (must match the model) */
  struct cg_csr agg;         /* n_inner x (n_inner + n_halo), GLOBAL-degree weights
                                (graph_norm_weight) */
  int64_t feat_dim;
  int64_t feat_rows;         /* n_inner: the halo feature rows come from their owners
                                through one forward halo exchange when the model is
                                built (rt_model_create); or n_inner + n_halo: all
                                rows given here */
  float *feat;               /* feat_rows x feat_dim, dense row-major; NULL when feat_sparse */
  /* Sparse input features (--sparse-features): feat_csr [feat_rows x feat_dim] with
   * values, and feat_rows = n_inner + n_halo (the halo rows' features are read with the
   * inner rows, never exchanged; layer 0 transforms before it aggregates). */
  int feat_sparse;
  struct cg_csr feat_csr;
  int64_t num_classes;
  int multilabel;
  int32_t *labels;           /* single-label: n_inner labels, -1 = unlabelled; else NULL */
  uint8_t *mlabels;          /* multi-label: n_inner x num_classes 0/1; else NULL */
  uint8_t *split;            /* n_inner entries, enum graph_split */
  int64_t n_train_global, n_val_global, n_test_global;
  /* What --reorder did, for the log and the metrics summary: the method applied
   * (rt_local_reorder; GRAPH_REORDER_NONE: the input order kept) and on how many ranks (on
   * P ranks each decides `auto` for its own inner rows: runtime/dist.c gathers them, and
   * reorder_applied is then the method any rank applied) */
  enum graph_reorder reorder_applied;
  int reorder_ranks;
  const struct rt_prediction *pred; /* not owned; NULL: no resource-aware prediction */
  const struct rt_job *job;         /* not owned; NULL: one process (no partition) */
};

/* How a partitioned job was set up (runtime/dist.c), for the metrics summary: what a
 * run on a cluster must be told apart by. */
struct rt_job {
  char partition[16];  /* metis, random, rapa */
  uint64_t part_seed;
  char load[12];       /* whole, per-rank (what --load auto chose) */
  char allreduce[8];   /* mpi, flat, hier (what --allreduce auto chose) */
  int nodes;           /* machines, or emulated nodes */
  int emulated_nodes;  /* 1: CAPGNN_EMULATE_NODES split the hosts */
};

/* The whole graph as the local problem of one process (n_halo = 0, gid = identity,
 * agg = graph_aggr_build(g, norm, ...)). `g` stays owned by the caller. */
int rt_local_from_graph(const struct graph *g, enum rt_model_kind kind, struct rt_local *out);
/* The same with sparse features when `sparse` (graph_feat_csr: the stored entries, or
 * the nonzeros of dense features), never a dense copy. */
int rt_local_from_graph_feat(const struct graph *g, enum rt_model_kind kind, int sparse,
                             struct rt_local *out);
/* Whether a run of cfg trains on sparse features of the graph described by g (only its
 * header fields are read: n, feat_dim, feat_nnz, sparse_feat, name): off -> no; on -> yes
 * (a dense file's features converted); auto -> yes when the graph stores its features
 * sparse and at most RT_SPARSE_AUTO_MAX_DENSITY of them are stored. Every model (GCN,
 * SAGE, GAT) runs its first layer on them. Logs the choice and why (INFO, rank 0) when
 * log_it. */
int rt_features_choose(const struct graph *g, const struct rt_config *cfg, int log_it, int *sparse);
/* The cost model's feature density (struct rapa_shape.feat_density): 0 when the features
 * are dense (sparse = 0), else the fraction of rows x features stored (1 for a file that
 * stores them dense, all of its entries kept). */
double rt_features_density(const struct graph *g, int sparse);
const char *rt_sparse_features_str(enum rt_sparse_features s);
const char *rt_layer0_halo_str(enum rt_layer0_halo h); /* "auto", "local", "exchange" */
/* Whether layer 0 of a run exchanges its transformed rows (--layer0-halo exchange) or
 * reads local halo feature rows (local); *why (may be NULL) gets a static phrase for the
 * log. 0 whenever the run is not partitioned (`partitioned` 0: one rank, no halo) or
 * the model is GAT (its layer 0 attends over the halo rows of X·W and their attention
 * terms: not built). auto picks exchange when layer 0 transforms first (fout < fin, or
 * sparse features), unless the input has no dropout and is dense: then Â·X is computed
 * once at set-up and training does no layer-0 halo work at all, which beats sending
 * fout-wide rows every step; and unless a halo cache serves the run (c->halo_cache), which
 * does not carry layer 0's rows: then local where transforming the halo rows costs less
 * than sending them beside the cache, i.e. for sparse features (a row's few stored
 * entries) and on GPUs (c->on_gpu: their GEMM is hundreds of times their links' rate),
 * and exchange for dense features on the CPU (README, "Layer 0 on P ranks"). An explicit
 * exchange makes layer 0 transform first whatever its widths (and gives up the cached
 * Â·X). */
int rt_layer0_exchange_choose(const struct rt_config *c, int64_t feat_dim, int64_t classes, int sparse,
                              int partitioned, const char **why);
/* Whether a graph can be trained on at all (features and classes present); the
 * check both local-problem builders run first. CG_ERR_ARG with a message if not. */
int rt_graph_trainable(const struct graph *g);
/* ---- locality reordering (runtime/reorder.c) ------------------------------------------
 * The order of a structure (graph.h's conventions: order[i] = old id at position i;
 * columns outside [0, n) and the diagonal ignored) by `method`; *chosen says what was
 * applied (NONE: order is the identity). auto measures the input order and applies the
 * cluster order only when it pays (graph.h, GRAPH_REORDER_AUTO_*), logging both measures.
 * metis: partition/'s METIS k-way into ceil(n / GRAPH_LOCALITY_TILE) parts, laid out part
 * by part (CG_ERR_UNSUPPORTED in a build without partition/). `what` names the structure
 * in the log. */
int rt_reorder_order(enum graph_reorder method, int64_t n, const int64_t *rowptr, const int32_t *colidx,
                     const char *what, int32_t *order, enum graph_reorder *chosen);
/* Reorder the inner rows of a local problem by `method`, after it was built (after
 * partitioning: owners, halo sets and the exchange's halo blocks do not change): the
 * operator's rows and its columns < n_inner (each row sorted again, values and factors
 * moved with their entries), gid[0, n_inner), the inner feature rows, labels and split.
 * gid keeps naming each row's vertex, so dropout masks (keyed by global id), the loss,
 * the metrics and the predictions (written by gid) are those of the original order; only
 * the summation order within an operator row changes (rounding). *pos (optional; NULL
 * when nothing moved, else cg_malloc'd, n_inner entries) gets the new local id of each
 * old inner id, for whoever holds other local ids (the exchange plan's send lists). */
int rt_local_reorder(struct rt_local *l, enum graph_reorder method, int32_t **pos);

/* Invariant checker (shapes, ids, operator columns, labels, split counts <= global). */
int rt_local_check(const struct rt_local *l, const char *what);
void rt_local_free(struct rt_local *l); /* accepts a zeroed struct; leaves it zeroed */

/* ---- communication ----------------------------------------------------------- */

/* The model reaches the other ranks only through the exchange seam (struct
 * cg_exchange, core/exchange.h): a halo exchange is its begin then its end, tagged
 * with the layer whose rows move and the step's epoch (struct cg_halo_tag; 0 in
 * evaluation and at set-up); the flat gradient and a few host values are summed over
 * the ranks; the per-step metrics are deltas of its counters. A single process passes
 * no exchange (NULL): with n_halo == 0 and nranks == 1 the model never calls one.
 *
 * Overlap (cfg->overlap, issue #14). With halo rows to exchange, each layer's
 * aggregation is split into its inner part (the operator's columns of inner rows,
 * which need no halo row) and its halo part (runtime_internal.h, struct rt_agg):
 *   forward   begin the exchange of the layer's input (or transformed rows), compute
 *             the inner part, end the exchange, add the halo part;
 *   backward  compute the halo rows' gradients (rows [n_inner, n_tot) of Âᵀ dZ),
 *             begin their return to the owners, compute the inner rows' gradients
 *             (and the weight gradients that need no exchange), end (the owners add
 *             what came back).
 * Between begin and end the inner part runs in row blocks with the exchange's
 * progress called after each (halo_progress: MPI without a progress thread moves a
 * large message only inside MPI calls). With overlap off the same products run in the
 * same order, each exchange ended right after its begin, so the results are
 * bit-identical; only the time spent waiting differs. One rank (no halo) multiplies by
 * the whole operator as before. Timing: the backend is synchronised before begin,
 * before each progress call and before end, and after end, so that compute is never
 * counted as communication nor communication as compute. On the CUDA backend the NCCL
 * path runs the transfer on the exchange's own stream, beside the inner blocks'
 * kernels; the MPI paths (CUDA-aware, staged through pinned memory) move data in the
 * progress calls between the blocks (every MPI call stays on the calling thread:
 * MPI_THREAD_FUNNELED, mpi/comm.h). */

/* ---- the model ------------------------------------------------------------- */

struct rt_model;

/* What a parameter tensor is; it decides the initialisation (Glorot uniform, 0, 1, 0). */
enum rt_tensor_kind {
  RT_TENSOR_WEIGHT = 0,    /* a convolution's weight matrix (W_neigh, SAGE's W_self) */
  RT_TENSOR_BIAS = 1,      /* a convolution's bias */
  RT_TENSOR_NORM_GAIN = 2, /* LayerNorm gamma */
  RT_TENSOR_NORM_BIAS = 3  /* LayerNorm beta */
};

/* Describes one parameter tensor inside the flat parameter/gradient buffers. */
struct rt_tensor_info {
  char name[32];           /* "conv0.weight", "conv0.weight_self", "conv0.bias", "norm0.weight" ... */
  enum rt_tensor_kind kind;
  int64_t offset, count;   /* in floats, within the flat buffer */
  int64_t rows, cols;      /* matrices: fin x fout; vectors: 1 x n */
  int layer;
  int decay;               /* 1 when weight decay applies to it */
};

/* Results of one evaluation pass (full graph, no dropout). acc = accuracy, or
 * micro-F1 for multi-label graphs; NaN when the split is empty. */
struct rt_eval {
  double train_acc, val_acc, test_acc;
  double train_loss, val_loss;
};

/* Host-side timing of one step (seconds; comm includes the synchronisations). */
struct rt_step_stats {
  double loss;           /* mean loss over all train vertices (before the update) */
  double comm_s;         /* time inside communication calls: comm_exposed_s + the
                            gradient all-reduce and host reductions */
  double comm_exposed_s; /* time inside halo begin, progress and end calls (waiting) */
  double comm_hidden_s;  /* halo exchanges in flight while the step computed (overlap) */
  int64_t halo_bytes;    /* delta of the exchange's counter during the step (this rank) */
  int64_t cache_hits, cache_lookups;
  int64_t allreduce_bytes; /* delta of the all-reduce counter during the step (this rank) */
  int64_t inter_node_bytes; /* delta of the inter-node counter (cg_exchange_counters) */
};

/* Build the model for `loc` on `be`: uploads the operator and its transpose, the
 * features (halo feature rows through one forward halo exchange of `ex` when
 * loc->feat_rows == n_inner), labels and index arrays; initialises parameters from
 * cfg->seed. `be`, `loc` and `ex` must outlive the model (`ex` may be NULL for one
 * process; it stays the caller's; when given, every member of its table must be set,
 * CG_ERR_ARG otherwise). CG_ERR_ARG too when the graph has no train vertices. */
int rt_model_create(struct cg_backend *be, const struct rt_local *loc, const struct rt_config *cfg,
                    struct cg_exchange *ex, struct rt_model **out);
void rt_model_destroy(struct rt_model **m); /* accepts NULL */

int64_t rt_model_num_params(const struct rt_model *m);
int rt_model_num_tensors(const struct rt_model *m);
int rt_model_tensor(const struct rt_model *m, int i, struct rt_tensor_info *out);
/* Whether layer l aggregates after transforming (Â(HW)) rather than before ((ÂH)W). */
int rt_model_layer_transform_first(const struct rt_model *m, int l);
/* Whether layer 0 exchanges its transformed rows (--layer0-halo; rt_layer0_exchange_choose). */
int rt_model_layer0_exchanged(const struct rt_model *m);

/* Copy the flat parameters / gradients between the backend and host arrays of
 * rt_model_num_params floats. */
int rt_model_params_get(const struct rt_model *m, float *host);
int rt_model_params_set(struct rt_model *m, const float *host);
int rt_model_grads_get(const struct rt_model *m, float *host);
/* The whole training state: parameters, Adam's first and second moments (host
 * arrays of rt_model_num_params floats each) and the optimizer steps taken. */
int rt_model_state_get(const struct rt_model *m, float *params, float *adam_m, float *adam_v,
                       int64_t *steps);
int rt_model_state_set(struct rt_model *m, const float *params, const float *adam_m,
                       const float *adam_v, int64_t steps);

/* Forward pass and loss only. train = 1 applies dropout with the masks of `epoch`. */
int rt_model_loss(struct rt_model *m, uint32_t epoch, int train, double *loss);
/* Forward, loss, backward and the gradient all-reduce; no parameter update. */
int rt_model_loss_grad(struct rt_model *m, uint32_t epoch, int train, double *loss,
                       struct rt_step_stats *st);
/* One training step: rt_model_loss_grad(train = 1) then the optimizer update
 * (step counter t = number of steps so far + 1). `st` may be NULL. */
int rt_model_step(struct rt_model *m, uint32_t epoch, struct rt_step_stats *st);
/* Full-graph deterministic evaluation. `st` (may be NULL) receives comm time. */
int rt_model_evaluate(struct rt_model *m, struct rt_eval *ev, struct rt_step_stats *st);

/* ---- training -------------------------------------------------------------- */

struct rt_result {
  int epochs;
  double *loss;                 /* per-epoch training loss, `epochs` entries (cg_malloc) */
  double best_val_acc, test_acc_at_best_val;
  int best_epoch;               /* 0 when no evaluation happened */
  double final_train_acc, final_val_acc, final_test_acc;
  double median_epoch_s;
  double median_comm_hidden_s, median_comm_exposed_s; /* medians over the epochs run */
  int64_t num_params;
  int epochs_run;               /* the last epoch reached (< epochs when stopped early) */
  int stopped_early;            /* 1: --early-stop ended the run */
  int ended_together;           /* set also when rt_train fails: every rank failed at the same
                                   point, agreed (a final checkpoint that could not be
                                   written), so no collective is left pending */
  int trained;                  /* set also when the run fails: 1 once its set-up was done and
                                   its epochs began; 0: it failed before (the graph, the
                                   settings, the files: nothing of its seed) */
};
void rt_result_free(struct rt_result *r); /* accepts a zeroed struct */

/* Open a backend: "cpu", "cuda" (error when not built or no GPU), or "auto" (CUDA
 * when built and a GPU answers, else CPU). Its log lines (what auto chose, --tf32 on
 * the CPU) go under the subsystem "train". */
int rt_backend_open(const char *device, int threads, int tf32, struct cg_backend **out);
/* The same on CUDA device `ordinal` (the one comm_gpu_bind chose for this rank), its
 * log lines under `subsys`, the command's ("train", "predict"); rt_backend_open uses
 * ordinal 0 and "train". The ordinal is ignored for the CPU backend. */
int rt_backend_open_ordinal(const char *subsys, const char *device, int threads, int tf32, int ordinal,
                            struct cg_backend **out);
/* ---- threads of a rank (--threads) ----------------------------------------------
 * --threads N runs N threads per rank; 0 (the default) gives each rank the host's
 * CPUs divided by the ranks on that host (at least 1), so that `mpirun -np 4` on 2
 * cores runs 1 thread per rank and `mpirun -np 1` uses every core. A launcher that
 * bound the rank to one CPU (Open MPI binds each of at most 2 ranks to a core) would
 * squeeze those threads onto it: with the default the binding is then widened to
 * every CPU of the host; a binding to several CPUs per rank is the user's choice and
 * caps the default. Ranks x threads above the host's CPUs is warned about, once per
 * host (except on GPUs, where the threads do little). */
struct rt_threads {
  int threads;        /* per rank */
  int widen;          /* widen the rank's CPU binding (cg_cpus_unbind) */
  int oversubscribed; /* ranks_on_host x threads > host CPUs */
  int squeezed;       /* an explicit --threads above the CPUs the rank is bound to */
};
/* The decision alone, from the counts (no hardware): for tests and rt_threads_setup. */
void rt_threads_plan(int requested, int host_cpus, int bound_cpus, int ranks_on_host, struct rt_threads *out);
/* The threads per rank rt_threads_setup will choose for `requested` (0: the default)
 * with this process's counts, without setting anything: what a device key such as a
 * profile's cpu-t<N> must name before the setup runs. */
int rt_threads_expected(int requested, int ranks_on_host);
/* Decide for this process (core/cpus.h's counts), widen the binding when the plan says
 * so, make it OpenMP's default, log it (INFO on rank 0; the warnings on host-local rank
 * 0). Call before any OpenMP region runs. Returns the threads per rank (>= 1).
 * With several ranks on the host, their counts may differ (--threads 2,1): the
 * oversubscription warning is then the caller's, after summing the counts over the
 * host (rt_threads_warn_host). */
int rt_threads_setup(const char *subsys, int requested, int ranks_on_host, int host_rank, const char *device);
/* Warn (on host-local rank 0, not for CUDA) when the host's ranks run more threads in
 * all (host_threads) than the host has CPUs; threads and requested are this rank's.
 * `subsys`: the log's subsystem, the command's ("train", "predict", "profile"). */
void rt_threads_warn_host(const char *subsys, int64_t host_threads, int ranks_on_host, int threads, int requested,
                          int host_rank, const char *device);

/* One line naming the backend's device for logs and metrics ("cpu", or the GPU's
 * model, memory and UUID for CUDA). */
const char *rt_backend_describe(const struct cg_backend *be);

struct rt_checkpoint; /* "checkpoints" below */

/* Train on a local problem: epochs of rt_model_step, evaluation every eval_every
 * epochs (and after the last), progress lines (below), JSON Lines metrics (rank
 * 0 writes them) and a final summary object. The best epoch is the one with the
 * highest validation accuracy (ties: lower validation loss, then the earlier epoch).
 * `resume` is the checkpoint read from cfg->resume_path (rt_checkpoint_read), given
 * exactly when cfg->resume_path is set (CG_ERR_ARG otherwise): rt_train restores it
 * once the model is built (an error when it does not fit the graph or the model;
 * rt_run and rt_run_dist have checked that before) and continues after its epoch.
 * rt_train does not check the
 * run's files (rt_run and rt_run_dist do, before loading the graph): a checkpoint or
 * metrics path that cannot be written fails when it is written.
 *
 * Early stopping (cfg->early_stop = N > 0) watches the validation loss (val_loss, the
 * cross-entropy) of the evaluations on the --eval-every schedule:
 *   RT_ES_PATIENCE  stop after N evaluations in a row without a new lowest loss;
 *   RT_ES_WINDOW    (Kipf & Welling's gcn/train.py) stop at the k-th evaluation, k > N + 1,
 *                   when its loss is greater than the mean of the N before it.
 *   RT_ES_GAT       (Veličković et al.'s GAT code) stop after N evaluations in a row with
 *                   neither a validation loss at or below the lowest so far nor a
 *                   validation accuracy at or above the highest so far.
 * The run ends after that epoch (its checkpoint written there, outcome "early_stopped").
 * cfg->save_best_path gets the best epoch's checkpoint when the run ends, however it ends.
 * Progress (core/progress.h, rank 0, not with quiet): on a terminal one live line;
 * otherwise a line at this run's first epoch, every log_every and its last; then one
 * line naming the files written.
 *
 * Metrics file (cfg->metrics_path), one JSON object per line:
 *   per epoch: epoch, loss (training loss of the step, with dropout, before the
 *     update), train_acc, val_acc, test_acc, val_loss (after the update; null on
 *     epochs without evaluation; micro-F1 for multi-label graphs), epoch_s, compute_s,
 *     comm_s, comm_exposed_s, comm_hidden_s, halo_bytes, allreduce_bytes,
 *     inter_node_bytes, compute_max_s, compute_min_s, cache_hit_rate, cache_oracle_hit_rate,
 *     eval_s, seed (the run's: tells a --seeds sweep's runs apart).
 *   last line: {"summary": true, graph, nodes, edges, features, features_sparse (layer 0
 *     multiplied them as CSR), classes, multilabel,
 *     device, threads,
 *     ranks, model, layers, hidden, dropout, input_dropout, layernorm, optimizer, lr,
 *     weight_decay,
 *     wd_scope, feat_norm, sparse_features (the option), eval_every, momentum (SGD), lr_schedule, early_stop,
 *     early_stop_rule (when on), seed, overlap, params, epochs (the last epoch reached),
 *     outcome ("completed"; "early_stopped": --early-stop's rule ended it after that
 *     epoch; "interrupted": stopped on request; "diverged": the loss of
 *     the last epoch is not finite; a run that stops early writes its summary too),
 *     resumed_from_epoch, best_val_acc,
 *     test_acc_at_best_val, best_epoch, final_loss, final_train_acc, final_val_acc,
 *     final_test_acc, median_epoch_s, median_comm_exposed_s, median_comm_hidden_s,
 *     total_s, peak_rss_bytes}.
 * Timers (the backend is synchronised before every reading):
 *   epoch_s    wall time of one training step: forward, loss, backward, gradient
 *              all-reduce, optimizer update (evaluation excluded: that is eval_s);
 *              rank 0's (every rank's step ends in the same all-reduce)
 *   comm_s     time inside communication calls during the step: halo exchanges
 *              (comm_exposed_s), the gradient all-reduce and the host reductions
 *              (the loss), including the synchronisations around them and waiting for
 *              peers (0 on one rank); rank 0's. The communication the step waited for:
 *              what overlap hides is not in it (as before overlap, when nothing ran
 *              during an exchange, it was all of the exchanges' time)
 *   comm_exposed_s  the halo exchanges' part of comm_s: time inside their begin,
 *              progress and end calls (with the synchronisations before begin, before
 *              end and after end); rank 0's
 *   comm_hidden_s  halo exchange time covered by compute: for each exchange, from the
 *              return of its begin to the progress call that saw its transfer complete,
 *              or to the call of its end when none did, minus the time inside progress
 *              calls in between (counted in comm_exposed_s); 0 with overlap off and on
 *              one rank; rank 0's. An exchange lasts comm_exposed_s + comm_hidden_s from
 *              begin to completion: the fraction hidden is hidden / (hidden + exposed).
 *              (The time a transfer needed cannot be observed: an exchange that waited
 *              for a slower peer counts that wait too, hidden when compute covered it.)
 *   compute_s  epoch_s - comm_s (rank 0's)
 *   compute_max_s, compute_min_s  the largest and smallest compute_s over the ranks
 *              (load imbalance: waiting for the slowest rank shows up in the others'
 *              comm_s); both equal compute_s on one rank
 *   halo_bytes halo bytes sent during the training step, summed over the ranks (each
 *              halo row's forward values and backward gradients, float32; the halo
 *              feature rows, fetched once at set-up, are not in any epoch); 0 on one rank
 *   allreduce_bytes  gradient all-reduce payload of the step summed over the ranks
 *              (ranks x parameters x 4); 0 on one rank
 *   inter_node_bytes  bytes sent between nodes during the step, summed over the ranks:
 *              the halo rows and gradients sent to ranks of other nodes, and the wire
 *              bytes of the ordered all-reduce (--allreduce flat|hier; mpi/comm.h) between
 *              nodes; 0 on one node (MPI_Allreduce's and NCCL's traffic is not counted)
 *   cache_hit_rate  halo cache hits / lookups in the step, summed over the ranks
 *              (lookups: halo rows of hidden layers read in the step's forward pass;
 *              hits: those that were not sent to the rank that read them, jaca/jaca.h);
 *              null without a cache
 *   cache_oracle_hit_rate  beside it: the hit rate Belady's MIN reaches on the same
 *              reads over one refresh window (S + 1 steps) with the same slots
 *              (jaca/jaca.h, struct jaca_window; a set-up figure, the same every
 *              epoch); null where cache_hit_rate is, or when a node's trace was too
 *              long to simulate. The summary's "cache" object also holds it
 *              (oracle_hit_rate) and the tiers' own rate over a window
 *              (policy_hit_rate, what cache_hit_rate tends to)
 * The cross-rank sums and extremes are gathered after each step, outside epoch_s. */
int rt_train(struct cg_backend *be, const struct rt_local *loc, struct cg_exchange *ex,
             const struct rt_config *cfg, const struct rt_checkpoint *resume, struct rt_result *res);

/* ---- several seeds (--seeds; runtime/seeds.c) ---------------------------------- */

/* Mean and standard deviation over the runs of several seeds. std is the population
 * one (numpy's np.std, ddof 0); over the finite values only (n counts them). */
struct rt_stat {
  double mean, std;
  int n;
};
struct rt_seeds_summary {
  int runs;
  struct rt_stat test_acc_at_best_val, best_val_acc, final_test_acc, best_epoch, epochs;
};
void rt_seeds_summarize(const struct rt_result *res, int n, struct rt_seeds_summary *out);
/* The aggregate record appended to cfg->metrics_path (when set) after the runs' own
 * records: {"aggregate": true, "seeds": [...], "runs": n, and for each of
 * test_acc_at_best_val, best_val_acc, final_test_acc, best_epoch, epochs an object
 * {"mean", "std", "n", "values": [one per run, in the order of seeds]}}. */
int rt_seeds_write_aggregate(const struct rt_config *cfg, const uint64_t *seeds, const struct rt_result *res,
                             int n);

/* ---- predictions from a checkpoint (capgnn predict; runtime/predict.c) ---------- */

/* What to predict: the model of `checkpoint` (its shape, its feature normalisation,
 * its parameters) on `graph` (NULL: the checkpoint's graph name), one process. */
struct rt_predict_options {
  const char *checkpoint;
  const char *graph;            /* NAME | FILE | synth:...; NULL: the checkpoint's */
  const char *logits_path;      /* .npy float32 [n, classes]: the last layer's output */
  const char *embeddings_path;  /* .npy float32 [n, hidden]: the last layer's input (the
                                   last hidden layer after its ReLU); NULL: none */
  const char *device;           /* "auto" | "cpu" | "cuda" */
  int threads;                  /* 0: rt_threads_setup's default */
  int force;                    /* replace an existing .npy (core/outfile.h's rule) */
  enum graph_reorder reorder;   /* compute in this order (rt_config.reorder); the files
                                   are in the graph's vertex order whatever it is */
};
struct rt_predict_result {
  int64_t n, classes, hidden;   /* rows written; columns of the logits and embeddings */
  int epoch;                    /* the checkpoint's */
  struct rt_eval ev;            /* accuracies of the predictions (train/val/test) */
  int multilabel;               /* the graph's: ev holds micro-F1, as training reports it */
};
/* Rows are in the graph's own vertex order (row v is vertex v, however a run
 * partitioned or renumbered it). The outputs follow core/outfile.h's rule: never the
 * checkpoint, the graph or each other; an existing .npy (it may be anyone's array) is
 * replaced only with force; written whole or not at all. The graph must be the one the
 * checkpoint was trained on (checksum, vertices, features, classes). `res` may be NULL. */
int rt_predict(const struct rt_predict_options *o, struct rt_predict_result *res);

/* ---- checkpoints ------------------------------------------------------------ */
/* A training state after `epoch` epochs, enough to continue bit for bit (the
 * dropout masks depend on the epoch number, Adam on the step count): what the run
 * was (graph, model, optimizer), the parameters and Adam moments, the per-epoch
 * losses so far and the best-epoch bookkeeping, so that a resumed run reports what
 * an uninterrupted one would. Independent of the number of ranks (every rank holds
 * the same parameters): a run may resume on another rank count or device, equal up
 * to rounding then.
 * File: "CAPGNN-CKPT" magic, format version, a JSON header (readable with `head`),
 * the float32 arrays and float64 losses (little-endian), and a CRC-32 of everything
 * before it; written whole or not at all (core/outfile.h). */
struct rt_checkpoint {
  /* what was trained */
  char graph[64];
  char graph_spec[256];      /* the synth: spec as given ("": a file, or an older checkpoint):
                                what `capgnn predict` generates when no --graph is given */
  uint32_t graph_checksum;
  int64_t nodes, features, classes;
  int feat_norm_row;
  char norm_graph[256];      /* the graph whose degrees normalised the aggregation ("": its own):
                                --norm-degrees, or the original graph of --prune-norm original */
  enum rt_model_kind model;
  int layers, layernorm;
  int64_t hidden;
  int heads, out_heads;         /* GAT only (the header holds them for GAT models) */
  float attn_dropout;           /* GAT only, as in rt_config */
  float dropout, input_dropout; /* as in rt_config */
  enum rt_optimizer optimizer;
  float lr, weight_decay, beta1, beta2, adam_eps;
  enum rt_wd_scope wd_scope;
  uint64_t seed;
  int eval_every;
  /* where it ran (a resume elsewhere is equal up to rounding only) */
  char device[16];           /* be->name: "cpu", "cuda" */
  int threads;               /* rt_config threads (CPU backend) */
  char gemm[16];             /* the CPU backend's GEMM library (cg_backend_cpu_gemm_name); "":
                                another backend, or a checkpoint from before it was recorded */
  int ranks;
  /* where it stands */
  int epoch;                 /* epochs completed */
  int64_t steps;             /* optimizer steps taken */
  int64_t num_params;
  float *params, *adam_m, *adam_v; /* num_params each (cg_malloc) */
  double *loss;              /* epoch entries (cg_malloc) */
  /* the best over the --eval-every schedule's evaluations (NaN / inf, epoch 0: none) */
  double best_val_acc, best_val_loss, test_acc_at_best_val;
  int best_epoch;
  double final_train_acc, final_val_acc, final_test_acc, last_val_acc;
  /* SGD and the learning-rate schedule (absent from older files: Adam's defaults, no
   * schedule). adam_m holds SGD's momentum buffer, adam_v zeros. lr_epochs is the
   * span the schedule used (--lr-epochs, else that run's --epochs). */
  float momentum;
  enum rt_lr_schedule lr_schedule;
  int lr_step_size, lr_warmup, lr_epochs;
  float lr_gamma;
  /* early stopping (runtime/early_stop.c): the settings and where the rule stands */
  int early_stop;
  enum rt_early_stop_rule early_stop_rule;
  int stopped_early;         /* 1: the run ended here by its rule */
  int es_evals, es_since;
  double es_best_loss;       /* inf: none yet */
  double es_best_acc;        /* gat rule: the highest validation accuracy so far (-1: none) */
  int es_hist_n;             /* the window's last val losses, oldest first (cg_malloc) */
  double *es_hist;
};
/* CG_ERR_IO / CG_ERR_FORMAT with a message naming the file and what is wrong. The
 * reader also refuses a checkpoint whose parameters or Adam moments are not all
 * finite (a run on its way to diverging wrote it): CG_ERR_FORMAT naming the first. */
int rt_checkpoint_write(const char *path, const struct rt_checkpoint *c);
int rt_checkpoint_read(const char *path, struct rt_checkpoint *c);
/* What a --seeds run wrote instead of `path`: one PATH.seedN per seed (apps/cmd_train.c).
 * 1 and the name of the one with the lowest N in path's folder (path + ".seedN") in out,
 * else 0; any N, as the seeds are. For the readers' hint (--resume, predict, info). */
int rt_checkpoint_seed_file(const char *path, char *out, size_t len);
/* Whether checkpoint c (read from `path`) can continue the run cfg describes: the
 * same model shape and epochs left to train (CG_ERR_ARG naming the difference
 * otherwise; the graph and the parameter count are checked once the graph is loaded:
 * "checkpoints in a run" below). With warn, each
 * other setting that differs (learning rate, dropout, seed, ...) is logged: the
 * continuation is then not the uninterrupted run. */
int rt_checkpoint_fits(const struct rt_checkpoint *c, const char *path, const struct rt_config *cfg,
                       int warn);
void rt_checkpoint_free(struct rt_checkpoint *c); /* accepts a zeroed struct; leaves it zeroed */

/* Ask a running rt_train to stop after its current epoch; async-signal-safe (for
 * SIGINT/SIGTERM handlers). Returns 1 when a training loop is running (it will stop:
 * every rank at the same epoch, which is checkpointed when cfg->checkpoint_path is
 * set, and rt_train returns CG_ERR_INTERRUPTED), 0 when none is (the caller then
 * applies the signal's default action). */
int rt_train_request_stop(void);

/* Checkpoints in a run. Before the graph is loaded, rt_run (and rt_run_dist, every
 * rank agreeing on each step) checks the run's files once — the checkpoint, resume,
 * metrics and graph files are distinct; each output follows core/outfile.h's rule:
 * never the graph (a name resolves to its file), the checkpoint resumed from (for
 * the metrics) or a file of cfg->inputs; an existing metrics file (JSON Lines records
 * of an earlier run) or checkpoint is replaced (a checkpoint the run does not resume
 * from with a warning); any other existing file only with cfg->force; a checkpoint
 * goes to a regular file or /dev/null; both can be created — and reads
 * cfg->resume_path once:
 * it must read back and hold the same model shape with epochs left to train. Once the
 * graph is loaded and the local problem built, before the backend is opened (rt_run)
 * or the exchange created (rt_run_dist, every rank agreeing, so that the job reports
 * one error), the checkpoint must have been written for that graph (checksum,
 * vertices, features, classes) and hold the parameter count the configuration gives
 * on it. That checkpoint goes to rt_train, which restores it once the model is built
 * (other settings that differ are warned about). Rank 0 writes
 * cfg->checkpoint_path after epochs that are multiples of cfg->checkpoint_every and
 * after the last, every rank agreeing on success. */

/* One process, end to end: check the configuration and the run's files, read the
 * checkpoint to resume from, open the graph, normalise features, build the local
 * problem, check the checkpoint against it, open the backend, train. `res` may be
 * NULL. */
int rt_run(const struct rt_config *cfg, struct rt_result *res);

#ifdef __cplusplus
}
#endif
#endif
