/* runtime/runtime_internal.h — what the runtime's sources share. Not part of the
 * public API (runtime/runtime.h, runtime/dist.h). */
#ifndef CAPGNN_RUNTIME_INTERNAL_H
#define CAPGNN_RUNTIME_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "core/exchange.h"
#include "core/outfile.h"
#include "runtime/runtime.h"

/* ---- the aggregation operator (model_agg.c) ------------------------------------ */

/* Â (n_in x n_tot) and Âᵀ on the backend, as the model multiplies by them.
 * Whole (split = 0; a single process, which exchanges nothing): a and at (at == a when
 * Â is symmetric to the bit).
 * Split (split = 1; whenever the model exchanges halo rows, rt_local_exchanges):
 *   inner part  a_in[k]  = Â[blk[k]:blk[k+1], 0:n_in]   (the columns of inner rows)
 *               at_in[k] = Âᵀ[blk[k]:blk[k+1], 0:n_in]  (== a_in[k] when at_shared)
 *   halo part   a_h      = Â[hrows, n_in:n_tot]: the n_hrows inner rows with a halo
 *                          column (d_hrows, ascending), columns renumbered from 0;
 *                          its product goes to hbuf (n_hrows x hwidth) and is added
 *                          into those rows (scatter_add_rows)
 *               at_h     = Âᵀ[n_in:n_tot, 0:n_in]: the halo rows' gradients
 * so that Y = Â X is (inner part, then + halo part) per row, the same sums whatever
 * runs between them, and the halo rows of Âᵀ dY are a product of their own. Blocks
 * (nblk of them, bounds blk[0..nblk] on multiples of 1024 rows) are where the model
 * lets the exchange progress (model_agg.c says how they are chosen). */
struct rt_agg {
  int split;
  int64_t n_in;
  struct cg_spmat *a, *at;
  int nblk, at_shared;
  int64_t *blk; /* host, nblk + 1 */
  struct cg_spmat **a_in, **at_in;
  struct cg_spmat *a_h, *at_h;
  int32_t *d_hrows;
  int64_t n_hrows;
  float *hbuf;
  int64_t hwidth;
};

/* Build g for loc on be: whole, or split with a halo-part buffer for products up to
 * hwidth columns. Release with rt_agg_free (also after a failure). */
int rt_agg_build(struct cg_backend *be, const struct rt_local *loc, int split, int64_t hwidth,
                 struct rt_agg *g);
void rt_agg_free(struct cg_backend *be, struct rt_agg *g); /* accepts a zeroed struct */
/* Row blocks of an inner part of n_in rows, at most max_blocks: fills blk[0..nblk]
 * (blk[0] = 0, blk[nblk] = n_in, ascending, inner bounds multiples of 1024; an
 * operator of >= 32768 rows gets blocks of >= 16384 rows) and returns nblk (0 when
 * n_in == 0). */
int rt_agg_blocks(int64_t n_in, int64_t *blk, int max_blocks);
/* Same shape, structure, values and factors, bit for bit. */
int rt_csr_same(const struct cg_csr *a, const struct cg_csr *b);

/* The products (enqueued on be's stream). Row strides equal the widths f. `poll` (may
 * be NULL) is called after each block of an inner part, with ctx; its failure is
 * returned at once. Whole operator: the inner calls multiply by all of Â / Âᵀ and the
 * halo calls do nothing.
 *   fwd_inner  Y[0:n_in] = inner part · X[0:n_in]           (whole: Y = Â X)
 *   fwd_halo   Y[hrows] += a_h · X[n_in:n_tot], through hbuf (n_hrows x f, f <= its
 *              width: g->hbuf, or a caller's buffer)
 *   bwd_halo   dX[n_in:n_tot] = at_h · dY
 *   bwd_inner  dX[0:n_in] = inner part of Âᵀ · dY             (whole: dX = Âᵀ dY) */
int rt_agg_fwd_inner(struct cg_backend *be, const struct rt_agg *g, const float *x, int64_t f,
                     float *y, int (*poll)(void *ctx), void *ctx);
void rt_agg_fwd_halo(struct cg_backend *be, const struct rt_agg *g, const float *x, int64_t f,
                     float *y, float *hbuf);
void rt_agg_bwd_halo(struct cg_backend *be, const struct rt_agg *g, const float *dy, int64_t f,
                     float *dx);
int rt_agg_bwd_inner(struct cg_backend *be, const struct rt_agg *g, const float *dy, int64_t f,
                     float *dx, int (*poll)(void *ctx), void *ctx);

/* ---- the model (model_build.c, model.c) -------------------------------------- */

#define RT_LN_EPS 1e-5f        /* LayerNorm's epsilon */
#define RT_MAX_TENSORS (64 * 5)

/* One convolution layer: its shape, the schedule chosen at build time, where its
 * parameters sit in the flat buffers, and its backend buffers. */
struct rt_layer {
  int64_t fin, fout;
  int transform_first; /* SpMM at width fout: Â(Hd·W); else (Â·Hd)·W */
  int agg_cached;      /* layer 0 without input dropout: agg = Â·X computed once */
  float p_drop;        /* dropout probability on this layer's input */
  int hidden;          /* not the last layer: [LayerNorm] -> ReLU follow */
  int64_t off_w, off_ws, off_b, off_g, off_beta; /* offsets in the flat buffers; -1 = absent */
  float *in, *in_d, *agg, *t, *z;
  float *ln_y, *ln_mean, *ln_rstd;
  /* GAT (runtime/model_gat.c; shapes there): heads x fhead values per row before the
   * output layer's mean, the parameter offsets of the attention vectors, the attention
   * dropout, and the layer's buffers */
  int64_t heads, fhead;
  int64_t off_al, off_ar;
  float p_att;
  float *g_t, *g_er, *g_s, *g_alpha, *g_alpha_d, *g_y;
};

/* The model (runtime/model_build.c builds it, runtime/model.c runs its steps; the
 * shapes of the buffers are described there). */
struct rt_model {
  struct cg_backend *be;
  const struct rt_local *loc;
  struct cg_exchange *ex;   /* NULL for a single process */
  struct rt_config cfg;
  int nlayers;
  struct rt_layer *layers;
  int64_t n_in, n_tot, classes;

  struct rt_agg agg;         /* Â and Âᵀ, whole or split (model_agg.c); not built for GAT */
  /* GAT (model_gat.c): the in-edges of the inner rows (A + I) and the backward's buffers */
  struct cg_edges edges;
  float *g_dt, *g_der, *g_e1, *g_e2, *g_dy, *g_mean;
  /* Sparse input features (loc->feat_sparse; model_build.c): layer 0 computes Hd·W as
   * csr_mm of X (structure xs over all n_tot rows, with its transpose) and its weight
   * gradients as csr_mm_t; SAGE's self term reads the inner rows only (xs_in, their own
   * transpose; the same arrays as xs when there is no halo row). xs_vals are the stored
   * values, xs_vals_d their dropout (absent without input dropout). layers[0].in and
   * in_d are not allocated: X is never dense. */
  int xs_on, xs_in_own;
  /* --layer0-halo exchange (rt_layer0_exchange_choose): layer 0 is transform-first over
   * its inner rows only and exchanges T like a hidden layer; layers[0].in / in_d and xs
   * then hold the inner rows alone (l0_rows = n_in; else n_tot) */
  int l0x;
  int64_t l0_rows;
  struct cg_edges xs, xs_in;
  float *xs_vals, *xs_vals_d;
  int32_t *d_gid;
  int32_t *d_labels;
  uint8_t *d_mlabels;
  int32_t *d_idx[3];        /* inner rows in train, val, test */
  int64_t n_idx[3];
  int64_t n_split_global[3];

  int64_t nparams;
  float *p, *g, *m1, *m2;   /* flat params, grads, Adam moments */
  struct rt_tensor_info tensors[RT_MAX_TENSORS];
  int ntensors;

  float *scratch[3];        /* n_tot x wmax each */
  int64_t wmax;             /* the widest gradient the scratch buffers hold */
  int64_t t_step;           /* optimizer steps taken */
  int last_fwd_train;       /* whether the last forward applied dropout */
  uint32_t last_fwd_epoch;
  /* the halo exchange in flight (model.c: begun, not yet ended; --overlap) */
  struct {
    int open, done;         /* begun and not ended; its completion seen by a progress call */
    enum cg_halo_dir dir;
    struct cg_halo_tag tag;
    float *x;
    int64_t cols;
    double t_open, t_polls; /* when begin returned; time inside progress calls since */
    double t_begin;         /* time inside begin (with the sync before it) */
    int polls;              /* progress calls (the one that saw completion included) */
  } flight;
};

/* The halo exchange as the model places it (model.c): begin, a progress point, end
 * (timed into st; no-ops for a single process; with --overlap off the whole exchange
 * runs at end); a training step's exchanges carry its epoch, evaluation's epoch 0. */
int rt_model_halo_begin(struct rt_model *m, enum cg_halo_dir dir, int layer, uint32_t epoch, int train,
                        float *x, int64_t cols, struct rt_step_stats *st);
int rt_model_poll(struct rt_model *m, struct rt_step_stats *st);
int rt_model_halo_end(struct rt_model *m, struct rt_step_stats *st);

/* ---- GAT (model_gat.c) ------------------------------------------------------------ */

/* The layers and parameter layout (rt_model_build's model_layout for GAT; no buffers). */
int rt_gat_layout(struct rt_model *m, const struct rt_local *loc, const struct rt_config *cfg);
/* The edges on the backend and every buffer of the steps. */
int rt_gat_buffers(struct rt_model *m, const struct rt_local *loc);
void rt_gat_free(struct rt_model *m); /* what rt_gat_buffers allocated; accepts a partial model */
int rt_gat_forward(struct rt_model *m, uint32_t epoch, int train, struct rt_step_stats *st);
/* From dlogits in m->scratch[0]: every parameter's gradient in m->g (before the
 * all-reduce). */
int rt_gat_backward(struct rt_model *m, struct rt_step_stats *st);

/* Whether a local problem talks to other ranks at all (a single process does not). */
static inline int rt_local_exchanges(const struct rt_local *loc) {
  return loc->n_halo > 0 || loc->nranks > 1;
}

/* The number of parameters the model for `loc` and `cfg` has (its layout, without
 * building it): what a checkpoint must hold to continue on this problem. */
int rt_model_count_params(const struct rt_local *loc, const struct rt_config *cfg, int64_t *n);

/* rt_model_create for a configuration that has passed rt_config_check and a problem
 * with train vertices (rt_train's train_split_check says it first, in its words). */
int rt_model_build(struct cg_backend *be, const struct rt_local *loc, const struct rt_config *cfg,
                   struct cg_exchange *ex, struct rt_model **out);

/* The optimizer's update of step m->t_step (already counted) from the gradient in m->g:
 * Adam/AdamW or SGD at rt_lr_at's learning rate (runtime/optimizer.c). */
void rt_model_optimizer_step(struct rt_model *m);

/* ---- normalisation by another graph's degrees (run.c) --------------------------- */

/* cfg->norm_graph set: open it and normalise g by its degrees (graph_set_norm_degrees),
 * logged; nothing otherwise. */
int rt_graph_norm_apply(struct graph *g, const struct rt_config *cfg);
/* The graph whose degrees normalise loc's aggregation, as the checkpoint records it:
 * cfg->norm_graph, else the original graph when halo pruning kept its degrees
 * (--prune-norm original), else "" (the graph's own). */
const char *rt_norm_graph_of(const struct rt_config *cfg, const struct rt_local *loc);

/* ---- the training loop's bookkeeping (train.c, checkpoint_run.c) -------------- */

/* The best evaluation so far: the highest validation accuracy, ties to the lower
 * validation loss, then to the earlier epoch. */
struct rt_best {
  double val_acc, val_loss, test_acc;
  int epoch; /* 0: none yet */
};

/* Where a run stands between epochs besides the model and rt_result (what a
 * checkpoint keeps of it): the best over the evaluations of the --eval-every
 * schedule (the one after the last epoch, off the schedule, is reported but not kept:
 * a longer run would not have made it, so a run extended from a checkpoint must not
 * remember it), and the last validation accuracy (for the live line). */
struct rt_train_track {
  struct rt_best best;
  double last_val;
};

/* ---- early stopping (early_stop.c) ------------------------------------------- */

/* Where --early-stop N stands, over the evaluations of the --eval-every schedule
 * (runtime.h, rt_train, states the rules). */
struct rt_early_stop {
  int n;                     /* 0: off */
  enum rt_early_stop_rule rule;
  int evals;                 /* scheduled evaluations so far */
  double best_loss;          /* patience, gat: the lowest validation loss so far (inf: none) */
  double best_acc;           /* gat: the highest validation accuracy so far (-1: none) */
  int since;                 /* patience, gat: evaluations since the last improvement */
  double *hist;              /* window: the last n losses before this one, oldest first */
  int hist_n;
  int stopped;               /* the rule has fired */
};
int rt_early_stop_init(struct rt_early_stop *es, const struct rt_config *cfg);
/* The scheduled evaluation's validation loss and accuracy; returns 1 when the run stops
 * after it. */
int rt_early_stop_update(struct rt_early_stop *es, double val_loss, double val_acc);
/* To and from a checkpoint (its es_* fields; the copy in c is borrowed from es). */
void rt_early_stop_to_checkpoint(const struct rt_early_stop *es, struct rt_checkpoint *c);
int rt_early_stop_from_checkpoint(struct rt_early_stop *es, const struct rt_checkpoint *c);
void rt_early_stop_free(struct rt_early_stop *es);
/* Why the rule fired, for the log (a static buffer). */
const char *rt_early_stop_describe(const struct rt_early_stop *es);

/* ---- the metrics file (metrics.c) -------------------------------------------- */

/* Without a file (path NULL: no --metrics, or a rank other than 0) every call does
 * nothing. The records go to a temporary beside the file (core/outfile.h), flushed
 * one by one, which the run renames over the file when it ends. */
struct rt_metrics {
  FILE *f; /* of.fp */
  const char *path;
  struct cg_outfile of;
  int records; /* written by this run */
  double halo_bytes, allreduce_bytes, inter_node_bytes; /* summed over this run's epoch records */
  long complete;  /* bytes of the file's complete records (where a failed write is cut back to) */
  int broken;     /* a write failed (disk full): the file keeps its complete records, no more */
  int last_epoch; /* of the last record written */
  int file_epoch; /* appending: the highest epoch of the file's records before this run (0: none) */
};

/* What the halo cache did (jaca/jaca.h's struct jaca_stats, as doubles summed over the
 * ranks; age_max the maximum): per cached layer and in all. */
struct rt_cache_row {
  double lookups, rank_hits, node_hits, misses, refreshed;
  double bytes_intra, bytes_inter, bytes_shm, bytes_h2d, bytes_d2h, bytes_exact, bytes_exact_inter;
  double age_sum, age_max;
  double grad_bytes, grad_bytes_exact, grad_refreshed, grad_used, grad_age_max, grad_bytes_shm;
  double prefetched, end_copied, end_wait_s; /* prefetch: rows copied by the thread before end,
                                                by end itself; training thread's time in end */
  double adapt_sent, adapt_skipped; /* adaptive staleness: kept rows sent / skipped by drift */
  double grad_sent, grad_skipped;   /* adaptive gradients: halo gradients sent / skipped by drift */
};
#define RT_CACHE_MAX_LAYERS 64
struct rt_cache_record {
  int nlayers;                 /* layers 1..nlayers-1 are cached */
  /* the settings, every approximation among them (the summary names them) */
  char policy[8];
  double capacity, host_mb;
  int staleness, grad_staleness, prefetch;
  int adaptive;     /* --staleness adaptive:adapt_eps:staleness */
  double adapt_eps;
  int grad_adaptive; /* --grad-staleness adaptive:grad_adapt_eps:grad_staleness */
  double grad_adapt_eps;
  /* over one refresh window, summed over the nodes (jaca/jaca.h, struct jaca_window):
   * the hit rate the tiers' rows give and Belady's MIN's with the same slots; NaN when
   * a node's trace was too long to simulate */
  double policy_hit_rate, oracle_hit_rate;
  struct rt_cache_row total;
  struct rt_cache_row layer[RT_CACHE_MAX_LAYERS]; /* [l], l >= 1 */
};

/* Following the cache through a run (runtime/cache_metrics.c; partition-parallel builds
 * only). rt_cache_track_create: NULL in *out when the run has no halo cache (decided on
 * every rank together, collective over the exchange). rt_cache_track_epoch: the
 * differences since the last call, summed over the ranks (collective), added to the
 * run's totals (rt_cache_track_totals). */
struct rt_cache_track;
int rt_cache_track_create(struct cg_exchange *ex, int nlayers, struct rt_cache_track **out);
int rt_cache_track_epoch(struct rt_cache_track *t, struct cg_exchange *ex, struct rt_cache_record *out);
const struct rt_cache_record *rt_cache_track_totals(const struct rt_cache_track *t);
/* After restoring a checkpoint of epoch `epoch` (past the cache's warm-up): warns (every
 * rank alike) when the cache keeps rows or gradients between steps (--staleness,
 * --grad-staleness, adaptive with EPS > 0). Those are not in the checkpoint, so the run
 * continues like an uninterrupted one, not bit for bit. Accepts NULL (no cache). */
void rt_cache_track_resumed(const struct rt_cache_track *t, const char *path, int epoch);
void rt_cache_track_destroy(struct rt_cache_track **t); /* accepts NULL */

/* ---- every rank's times (ranks.c) --------------------------------------------- */

/* Per epoch, every rank's compute_s and comm_s, summed into place over the ranks
 * (collective over the exchange); NULL tracker (one rank): nothing. */
struct rt_ranks;
int rt_ranks_create(int epochs, int nranks, struct rt_ranks **out); /* *out NULL for one rank */
void rt_ranks_destroy(struct rt_ranks **t);                          /* accepts NULL */
/* Epoch e (1-based): *compute and *comm point at the epoch's nranks values (NULL without
 * a tracker). */
int rt_ranks_epoch(struct rt_ranks *t, struct cg_exchange *ex, int rank, int e, double compute_s, double comm_s,
                   const double **compute, const double **comm);
/* The medians over epochs [first, last) (0-based) per rank; with a prediction of the same
 * ranks, logs predicted against measured, one line per rank (rank 0). */
struct rt_rank_times {
  int nranks; /* 0: one rank, nothing to say */
  double compute_s[RT_PRED_MAX_RANKS], comm_s[RT_PRED_MAX_RANKS];
  const struct rt_prediction *pred; /* the prediction, when it covers these ranks */
};
int rt_ranks_medians(const struct rt_ranks *t, int first, int last, const struct rt_prediction *pred,
                     struct rt_rank_times *out);

/* What one epoch's record holds (runtime.h, rt_train, lists the fields). */
struct rt_epoch_record {
  int epoch;
  double loss;
  struct rt_eval ev;                 /* NaN on epochs without evaluation */
  double epoch_s, compute_s, comm_s; /* rank 0's */
  double comm_exposed_s, comm_hidden_s; /* rank 0's (halo exchanges) */
  double halo_bytes, allreduce_bytes, inter_node_bytes; /* summed over the ranks */
  double compute_max_s, compute_min_s;
  int64_t cache_hits, cache_lookups;
  double eval_s;                     /* NaN without evaluation */
  uint64_t seed;                     /* the run's --seed */
  const struct rt_cache_record *cache; /* the halo cache's epoch, NULL without one */
  int nranks;                        /* > 1: the per-rank times below */
  const double *rank_compute_s, *rank_comm_s;
};

/* The output kind of a metrics file (core/outfile.h): JSON Lines whose first record is
 * an epoch's or a summary, as rt_metrics_* write them; an earlier one is replaced. */
const struct cg_outfile_kind *rt_metrics_kind(void);
/* Whether the metrics file can be created (a temporary beside it, removed), before
 * anything long runs; an existing file is left as it is. */
int rt_metrics_probe(const char *path);
/* A resumed run appends to its file (the temporary starts as a copy of it); a fresh
 * one replaces it. */
int rt_metrics_open(struct rt_metrics *mt, const char *path, int append);
int rt_metrics_epoch(struct rt_metrics *mt, const struct rt_epoch_record *rec);
/* The last line, for a run that reached epoch `last` (its "epochs"; final_loss is
 * r->loss[last - 1]) and ended as `outcome` says: "completed" (last = --epochs),
 * "interrupted" (a stop on request) or "diverged" (the loss of epoch `last` is not
 * finite); total_s counts from t_start. */
int rt_metrics_summary(struct rt_metrics *mt, const struct rt_local *loc, const struct cg_backend *be,
                       const struct rt_config *cfg, const struct rt_result *r, int resumed_from,
                       double t_start, const struct rt_cache_record *cache, int last,
                       const char *outcome, const struct rt_rank_times *ranks);
/* Close the file at the end of a run whose status is st: the temporary becomes the
 * file when this run wrote a record (whatever st: the records say how far it got),
 * else it is removed and an earlier file stays as it was. Returns st, or CG_ERR_IO
 * when st is CG_OK and the file cannot be written (an earlier error keeps its
 * message). */
int rt_metrics_close(struct rt_metrics *mt, int st);

/* ---- checkpoints in a run (checkpoint.c, checkpoint_run.c) ---------------------- */

/* Whether a checkpoint can be written at `path` (core/outfile.h's rule, `inputs` being
 * the run's): a new file in a writable folder, or an existing capgnn checkpoint
 * (replaced; with warn_replace, a warning says so), or /dev/null; another existing
 * regular file only with force; a folder, FIFO or other device is refused (--resume
 * could not read it back). A temporary is created beside it and removed. */
/* The output kind of a checkpoint (core/outfile.h): a file with the checkpoint magic. */
const struct cg_outfile_kind *rt_checkpoint_kind(void);
int rt_checkpoint_probe_target(const char *path, int warn_replace, const struct cg_outfile_input *inputs,
                               int ninputs, int force);
/* The run's files must be distinct: the checkpoint, the resume file, the metrics
 * file, the best-weights file and the graph file (when --graph names a file) cannot
 * be one another (the metrics appended to a checkpoint, a checkpoint written over the
 * dataset); the checkpoint and the best-weights file may be the resume file. */
int rt_checkpoint_check_paths(const struct rt_config *cfg);
/* The checkpoint a run resumes from, read once, before the graph is loaded:
 * cfg->resume_path reads back and rt_checkpoint_fits the run (without warnings; the
 * graph is checked once it is loaded, by rt_checkpoint_fits_problem). Without
 * resume_path *out is zeroed and CG_OK returned. Release with rt_checkpoint_free. */
int rt_checkpoint_read_resume(const struct rt_config *cfg, struct rt_checkpoint *out);

/* Whether checkpoint c, read from `path`, fits the local problem: written for the
 * same graph (checksum, vertices, features, classes) and holding the parameter count
 * that cfg's model has on it (rt_model_count_params). CG_ERR_ARG naming the
 * difference otherwise. Depends only on the whole graph and cfg, so every rank of a
 * run gets the same answer and message: rt_run and rt_run_dist (agreed over the
 * ranks) check it before training starts. */
int rt_checkpoint_fits_problem(const struct rt_checkpoint *c, const char *path,
                               const struct rt_local *loc, const struct rt_config *cfg);

/* Continue from checkpoint c, read from `path` (rt_checkpoint_fits with warnings and
 * rt_checkpoint_fits_problem: the same model on the same graph, or an error naming
 * the difference). Fills the model state, the losses so far (r->loss), the result's
 * bookkeeping and *tr; *done gets the checkpoint's epoch. */
int rt_checkpoint_restore(const struct rt_checkpoint *c, const char *path, struct rt_model *m,
                          const struct cg_backend *be, const struct rt_local *loc, const struct rt_config *cfg,
                          struct rt_result *r, struct rt_train_track *tr, struct rt_early_stop *es, int *done);
/* Write the state after `epoch` epochs to cfg->checkpoint_path. Every rank holds the
 * same parameters: rank 0 writes, and all ranks learn (through ex, when given)
 * whether it worked, so that a failed write stops every rank or none. */
int rt_checkpoint_save(struct rt_model *m, const struct cg_backend *be, const struct rt_local *loc,
                       struct cg_exchange *ex, const struct rt_config *cfg, const struct rt_result *r,
                       const struct rt_train_track *tr, const struct rt_early_stop *es, int epoch);
/* The same to `path`, with the parameters and optimizer state of backend arrays
 * (params, mom1, mom2: rt_model_num_params floats each; rank 0's are written) after
 * `steps` optimizer steps: the model's own (rt_checkpoint_save) or a copy kept at the
 * best epoch (runtime/best.c). es may be NULL (the rule's state then starts afresh). */
int rt_checkpoint_save_state(const char *path, const struct rt_model *m, const struct cg_backend *be,
                             const struct rt_local *loc, struct cg_exchange *ex, const struct rt_config *cfg,
                             const struct rt_result *r, const struct rt_train_track *tr,
                             const struct rt_early_stop *es, int epoch, const float *params,
                             const float *mom1, const float *mom2, int64_t steps);

/* ---- the best epoch's weights (best.c; --save-best) --------------------------------- */

/* A copy of the parameters and optimizer state on the backend, taken whenever a
 * scheduled evaluation becomes the best (rank 0 only; the others hold the same), and
 * written as a checkpoint of that epoch when the run ends, however it ends. */
struct rt_best_keep {
  float *p, *m1, *m2;        /* backend arrays; NULL: not kept (no --save-best, rank != 0) */
  int64_t steps;
  int epoch;                 /* 0: nothing taken in this run */
  struct rt_train_track tr;  /* the bookkeeping at that epoch */
  double train_acc, val_acc, test_acc;
};
int rt_best_keep_init(struct rt_best_keep *k, struct rt_model *m, const struct rt_local *loc,
                      const struct rt_config *cfg);
void rt_best_keep_take(struct rt_best_keep *k, struct rt_model *m, const struct rt_train_track *tr,
                       const struct rt_eval *ev);
/* Every rank calls it (the write is agreed, as rt_checkpoint_save); *written = 1 when the
 * file was written. */
int rt_best_keep_save(struct rt_best_keep *k, struct rt_model *m, const struct cg_backend *be,
                      const struct rt_local *loc, struct cg_exchange *ex, const struct rt_config *cfg,
                      const struct rt_result *r, int *written);
void rt_best_keep_free(struct rt_best_keep *k, struct rt_model *m);

/* ---- emulated heterogeneity (backend.c) ----------------------------------------- */

/* When CAPGNN_EMULATE_SPEED is set, wrap *be in core/ops_emulate.h's emulating backend
 * at rank `rank`'s speed (the wrapper owns the old *be) and log it (WARN, every rank:
 * it is never a default); unset: nothing. CG_ERR_ARG on a bad list. */
int rt_backend_emulate(struct cg_backend **be, int rank, int nranks);

/* ---- a whole run (run.c, train.c; dist.c for several ranks) -------------------- */

/* The checks of a run's files before anything long runs, made by the rank that
 * writes them (rank 0): rt_checkpoint_check_paths, the metrics file can be created
 * (rt_metrics_probe), the checkpoint target can take one (rt_checkpoint_probe_target,
 * with a warning when it replaces a checkpoint that this run does not resume from). */
int rt_run_check_files(const struct rt_config *cfg);
/* rt_run and rt_train for a configuration that has passed rt_config_check: what
 * rt_run_dist, which checks it itself, calls. */
int rt_run_checked(const struct rt_config *cfg, struct rt_result *res);
int rt_train_checked(struct cg_backend *be, const struct rt_local *loc, struct cg_exchange *ex,
                     const struct rt_config *cfg, const struct rt_checkpoint *resume,
                     struct rt_result *res);
/* rt_train_checked for a caller that hands its local problem over for the run: once the
 * model is built (it has copied them to the backend), the host copies of the features and
 * of the operator are freed (rt_local_release_inputs) instead of staying resident beside
 * the model's for the whole run. The counts, ids, labels and split stay. */
int rt_train_owned(struct cg_backend *be, struct rt_local *loc, struct cg_exchange *ex,
                   const struct rt_config *cfg, const struct rt_checkpoint *resume,
                   struct rt_result *res);
/* Frees loc->feat and loc->agg (their sizes stay in feat_rows, feat_dim); rt_local_check
 * fails on the result: only for a problem whose model is built. */
void rt_local_release_inputs(struct rt_local *loc);

/* ---- the stall watchdog's view (stall.c) --------------------------------------- */

/* An exchange that forwards every call to `inner` and marks, for core/watchdog.h,
 * where this rank is around each (waiting for the other ranks or not). `inner` stays
 * the caller's and must outlive it; cg_exchange_destroy releases the wrapper alone. */
int rt_watch_exchange_wrap(struct cg_exchange *inner, struct cg_exchange **out);

/* ---- test-only fault injection (fault.c; partition-parallel builds) ----------- */

/* What CAPGNN_TEST_FAIL_RANK / CAPGNN_TEST_FAIL_AT ask of rank `rank` (runtime/dist.h):
 * SETUP: rt_dist_create fails as if the graph could not be opened; TRAIN / KILL: the
 * 3rd halo exchange returns an error / SIGKILLs the rank; SKIP: the first training
 * forward exchange of a hidden layer is left out (begin and end return at once). */
enum rt_fault { RT_FAULT_NONE = 0, RT_FAULT_SETUP, RT_FAULT_TRAIN, RT_FAULT_KILL, RT_FAULT_SKIP };
enum rt_fault rt_fault_from_env(int rank);
/* For TRAIN, KILL and SKIP: replace *ex by an exchange that forwards to it (and owns
 * it) except where it fails as `mode` says. Other modes: nothing. */
int rt_fault_exchange_wrap(struct cg_exchange **ex, int rank, enum rt_fault mode);

/* model_build.c: append a parameter tensor (rows x cols, at the end of the flat buffer)
 * to the model's layout; *off gets its offset. Used by GCN/SAGE and GAT (model_gat.c). */
int rt_model_add_tensor(struct rt_model *m, const char *name, enum rt_tensor_kind kind, int layer,
                        int64_t rows, int64_t cols, int decay, int64_t *off);

#endif
