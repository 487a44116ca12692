/* runtime/tests/test_dist_equiv.c — the exactness contract: training on P ranks
 * (one partition each, halo exchange both ways, gradient all-reduce) computes what
 * training on one rank computes.
 *
 * Run under mpiexec -n P. Every rank first trains the 1-rank reference itself (the
 * whole graph, rt_local_from_graph, no exchange), then the distributed run
 * (rt_dist_create + rt_dist_bind), both on the CPU backend with 1 thread, and
 * compares: per-epoch training loss (dropout 0.5 on) within 1e-5 relative, final
 * parameters within 1e-4 + 1e-4 |ref|, train/val/test accuracy equal. Cases: GCN,
 * GraphSAGE and GAT (3 heads, 2 averaged output heads, attention dropout on), 2 and 3 layers, METIS and random partitions, on Cora (when present) and
 * synth:small, two of them without dropout on the input features (layer 0's Â·X
 * computed once at set-up), and two with the CPU SpMM's tiled layout forced on a
 * dense synthetic graph. Also checked per case: each rank holds only its inner + halo feature
 * rows after set-up, and the halo bytes counted in a training step equal the bytes
 * modelled from the partition (sum of halo rows x the widths the model exchanges x
 * 4 bytes x 2 directions), and the tags the model puts on its halo exchanges
 * (core/exchange.h): the features once at set-up as layer 0 outside training, then
 * per step layers 1..L-1 forward and L-1..1 backward with the step's epoch, and
 * evaluation's forward with epoch 0; every end repeats its begin's tag. An exchange
 * whose table lacks a member is refused by rt_model_create.
 *
 * Layer 0 (--layer0-halo): with auto, every GCN/SAGE case whose layer 0 transforms first
 * with input dropout (dense or sparse features) exchanges layer 0's transformed rows
 * instead of fetching the halo feature rows; explicit local and exchange cases cover the
 * other choices. Checked per case: the exchanges' tags include layer 0 (forward first,
 * backward last) exactly when it is exchanged; set-up moves no byte then (else each halo
 * row's features once); the modelled halo bytes add layer 0's fout-wide rows.
 *
 * Overlap (issue #14): every distributed case runs three times on the same exchange —
 * overlap on (the exchange progressed between the inner row blocks), overlap off
 * (each exchange ended right after its begin), and overlap on through an exchange
 * without halo_progress (as one written before that member existed, e.g. a halo
 * cache) — and the three must agree bit for bit: every epoch's loss (forward), the
 * first step's gradient (forward and backward), the final parameters after 12 Adam
 * steps and the evaluation. The recorder checks that progress is called only between
 * a begin and its end, that overlap on calls it on every rank with inner rows and
 * halo traffic, and that overlap off never does.
 *
 * Why the seed matters (measured, not guessed): reassociation changes values by
 * ~1e-7 relative; a ReLU input within that distance of 0 takes the other branch on
 * one side, which changes the gradient discretely (one vertex's share, ~5e-4 of an
 * entry) while the loss stays equal; Adam then amplifies the difference over the
 * following epochs. With seed 7, 2 ranks, SAGE 3 layers on synth:small this happens
 * at epoch 5: with the same weights on both sides the gradients differ by 5e-4 at one
 * entry, and the difference vanishes when the weights are scaled by 1 + 2e-5 — a knife
 * edge, not a routing error (those show from the first step, which is checked on its
 * own below). The default seed 1 has no such event for 1-4 ranks; CAPGNN_TEST_SEED
 * overrides it and CAPGNN_TEST_VERBOSE=1 prints the per-epoch losses. Such an event in
 * the FIRST step is detected (relu_flips: the signs of the ReLU inputs differ at entries
 * within rounding of 0 while every input agrees with one rank's to 1e-5 of the largest)
 * and the case is run again with the next seed, at most twice (run_case); with 6 ranks
 * on an AMD EPYC VM seed 1 meets one (GCN, 3 layers, no input dropout: one entry).
 *
 * With the argument "cache" it runs the halo cache's cases instead (run_cache_cases): the
 * same checks with jaca/'s caching exchange, every policy at 100 % and 10 % of the node
 * tier (halo gradients to owners on the node through the node tier, none through MPI on
 * one node), and the results equal, bit for bit, those of the run without the cache; run on
 * 2-4 ranks and on 4 ranks as 2 emulated nodes (CAPGNN_EMULATE_NODES=2). With
 * --staleness 2 and 5 (approximate) it checks what still must hold: no row older than the
 * bound, rows reused, fewer bytes, the first step exact, the loss going down.
 *
 * With the argument "perrank" (issue #17, per-rank loading) it runs cases on .cgr files
 * (synth:small written as version 2 with 4 KiB blocks and as version 1, and cora when
 * present) with RT_LOAD_PER_RANK: every rank reads only its own rows; each case also
 * builds the local problem with RT_LOAD_WHOLE and requires it equal bit for bit (ids,
 * features, labels, split, operator, plans), then the usual checks against one rank;
 * run on 2-4 ranks, 4 ranks as 2 x 2 and 6 ranks as 2 x 3 emulated nodes.
 *
 * Any failed check prints "[rank R] FAIL ..." and aborts the whole job. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/status.h"
#include "mpi/comm.h"
#include "rapa/balance.h"
#include "runtime/dist.h"
#include "runtime/runtime.h"
#include "runtime/runtime_internal.h" /* the first step's ReLU inputs (relu_flips) */

static struct comm *g_comm;

#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "[rank %d] FAIL %s:%d: %s: ", g_comm ? comm_rank(g_comm) : -1, __FILE__, \
              __LINE__, #cond);                                                                \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fprintf(stderr, "\n");                                                                   \
      comm_abort(g_comm, 1);                                                                   \
    }                                                                                          \
  } while (0)

#define OK(expr)                                                                                \
  do {                                                                                          \
    int ok_st_ = (expr);                                                                        \
    if (ok_st_ < 0) {                                                                           \
      fprintf(stderr, "[rank %d] FAIL %s:%d: %s returned %s: %s\n", g_comm ? comm_rank(g_comm) : -1, \
              __FILE__, __LINE__, #expr, cg_status_str(ok_st_), cg_err_msg());                  \
      comm_abort(g_comm, 1);                                                                    \
    }                                                                                           \
  } while (0)

#define LOSS_RTOL 1e-5
#define W_ATOL 1e-4
#define W_RTOL 1e-4
#define G_ATOL_OF_MAX 1e-5 /* first-step gradients: 1e-5 x max |g| + 1e-4 |g| */
#define G_RTOL 1e-4

struct run_out {
  int epochs;
  double loss[64];
  int64_t halo_bytes[64]; /* this rank's, per training step */
  float *params;
  float *grads0; /* gradient of the first step (before any update) */
  int64_t nparams;
  struct rt_eval ev;
  int64_t widths_sum; /* sum over layers l > 0 of the width layer l exchanges */
  int l0x;            /* layer 0 exchanged (--layer0-halo) */
  int64_t l0_width;   /* the width it exchanges (0: local) */
  int64_t setup_bytes; /* halo bytes this rank sent while the model was built (the
                          features' halo rows: none when layer 0 is exchanged) */
  /* The first step's ReLU inputs: every hidden layer's (z, or LayerNorm's output) for the
   * inner rows, a row's layers side by side (act_cols values), and the rows' global ids;
   * none for GAT. relu_flips compares them when a run misses a tolerance. */
  float *act;
  int32_t *act_gid;
  int64_t act_rows, act_cols;
};

/* ---- a recording exchange: forwards to the real one, logs the tags ---- */

#define TAG_LOG_MAX 4096
struct tag_entry {
  enum cg_halo_dir dir;
  struct cg_halo_tag tag;
};
struct tag_recorder {
  struct cg_exchange ex; /* first: the seam's table */
  struct cg_exchange *inner; /* not owned */
  struct tag_entry log[TAG_LOG_MAX];
  int n, open; /* entries; 1 while a begin awaits its end */
  int64_t polls; /* halo_progress calls */
};

static struct tag_recorder *rec_of(struct cg_exchange *ex) { return (struct tag_recorder *)ex; }

static int rec_begin(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                     int64_t cols) {
  struct tag_recorder *r = rec_of(ex);
  CHECK(!r->open && r->n < TAG_LOG_MAX, "halo_begin with %d entries, one open: %d", r->n, r->open);
  r->log[r->n++] = (struct tag_entry){dir, tag};
  r->open = 1;
  return r->inner->halo_begin(r->inner, dir, tag, x, cols);
}
static int rec_end(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                   int64_t cols) {
  struct tag_recorder *r = rec_of(ex);
  CHECK(r->open, "halo_end without a begin");
  const struct tag_entry *b = &r->log[r->n - 1];
  CHECK(b->dir == dir && b->tag.layer == tag.layer && b->tag.epoch == tag.epoch,
        "halo_end(dir %d, layer %d, epoch %u) does not match its begin (dir %d, layer %d, epoch %u)",
        (int)dir, tag.layer, tag.epoch, (int)b->dir, b->tag.layer, b->tag.epoch);
  r->open = 0;
  return r->inner->halo_end(r->inner, dir, tag, x, cols);
}
static int rec_progress(struct cg_exchange *ex) {
  struct tag_recorder *r = rec_of(ex);
  CHECK(r->open, "halo_progress outside a begin/end pair (after %d exchanges)", r->n);
  r->polls++;
  return cg_exchange_halo_progress(r->inner);
}
static int rec_grads(struct cg_exchange *ex, float *buf, int64_t n) {
  return rec_of(ex)->inner->allreduce_grads(rec_of(ex)->inner, buf, n);
}
static int rec_host(struct cg_exchange *ex, double *v, int n, enum cg_reduce op) {
  return rec_of(ex)->inner->allreduce_host(rec_of(ex)->inner, v, n, op);
}
static void rec_counters(const struct cg_exchange *ex, struct cg_exchange_counters *out) {
  const struct tag_recorder *r = (const struct tag_recorder *)ex;
  r->inner->counters(r->inner, out);
}
static void rec_destroy(struct cg_exchange *ex) { (void)ex; } /* the test owns both */

/* with_progress = 0: a table without halo_progress (optional, core/exchange.h). */
static void rec_init(struct tag_recorder *r, struct cg_exchange *inner, int with_progress) {
  memset(r, 0, sizeof *r);
  r->inner = inner;
  r->ex.halo_begin = rec_begin;
  r->ex.halo_end = rec_end;
  r->ex.halo_progress = with_progress ? rec_progress : NULL;
  r->ex.allreduce_grads = rec_grads;
  r->ex.allreduce_host = rec_host;
  r->ex.counters = rec_counters;
  r->ex.destroy = rec_destroy;
}

/* The tags run_model's calls must carry: set-up (the features, when the rank has halo
 * rows to fetch: one exchange per slice of rt_config_feature_cols columns),
 * rt_model_loss_grad at epoch 1, the steps 1..epochs, evaluation. */
static void rec_expect(const struct tag_recorder *r, const struct rt_local *loc, const struct rt_config *cfg,
                       int l0x) {
  const int layers = cfg->layers, epochs = cfg->epochs, first = l0x ? 0 : 1;
  struct tag_entry want[TAG_LOG_MAX];
  int n = 0;
  if (!l0x && loc->feat_rows < loc->n_inner + loc->n_halo) {
    const int64_t w = rt_config_feature_cols(cfg, loc->feat_dim, loc->num_classes);
    for (int64_t c0 = 0; c0 < loc->feat_dim && n < TAG_LOG_MAX; c0 += w)
      want[n++] = (struct tag_entry){CG_HALO_FORWARD, {0, 0}};
  }
  if (loc->n_halo > 0 || loc->nranks > 1) {
    for (int pass = 0; pass <= epochs + 1; pass++) {
      const uint32_t epoch = pass == epochs + 1 ? 0u : (uint32_t)(pass == 0 ? 1 : pass);
      for (int l = first; l < layers; l++) want[n++] = (struct tag_entry){CG_HALO_FORWARD, {l, epoch}};
      if (pass <= epochs)
        for (int l = layers - 1; l >= first; l--) want[n++] = (struct tag_entry){CG_HALO_BACKWARD, {l, epoch}};
    }
  }
  CHECK(r->n == n, "%d halo exchanges recorded, %d expected", r->n, n);
  for (int i = 0; i < n; i++)
    CHECK(r->log[i].dir == want[i].dir && r->log[i].tag.layer == want[i].tag.layer &&
              r->log[i].tag.epoch == want[i].tag.epoch,
          "halo exchange %d: dir %d, layer %d, epoch %u; expected dir %d, layer %d, epoch %u", i,
          (int)r->log[i].dir, r->log[i].tag.layer, r->log[i].tag.epoch, (int)want[i].dir,
          want[i].tag.layer, want[i].tag.epoch);
}

/* Copies the ReLU inputs of the step just run (inner rows of every hidden layer) and the
 * rows' global ids into o (GCN and SAGE; GAT's hidden layers are not kept this way). */
static void capture_relu_inputs(const struct rt_model *m, const struct rt_local *loc, struct run_out *o) {
  o->act_rows = m->n_in;
  o->act_cols = 0;
  if (m->cfg.model == RT_MODEL_GAT) return;
  for (int l = 0; l < m->nlayers; l++)
    if (m->layers[l].hidden) o->act_cols += m->layers[l].fout;
  o->act = malloc((size_t)(o->act_rows * o->act_cols + 1) * sizeof(float));
  o->act_gid = malloc((size_t)(o->act_rows + 1) * sizeof(int32_t));
  float *tmp = malloc((size_t)(o->act_rows * (o->act_cols + 1) + 1) * sizeof(float));
  CHECK(o->act != NULL && o->act_gid != NULL && tmp != NULL, "out of memory");
  memcpy(o->act_gid, loc->gid, (size_t)o->act_rows * sizeof(int32_t));
  int64_t off = 0;
  for (int l = 0; l < m->nlayers; l++) {
    const struct rt_layer *L = &m->layers[l];
    if (!L->hidden) continue;
    const float *src = L->ln_y ? L->ln_y : L->z;
    if (o->act_rows > 0) OK(m->be->download(m->be, tmp, src, (size_t)(o->act_rows * L->fout) * sizeof(float)));
    for (int64_t r = 0; r < o->act_rows; r++)
      memcpy(o->act + r * o->act_cols + off, tmp + r * L->fout, (size_t)L->fout * sizeof(float));
    off += L->fout;
  }
  free(tmp);
}

static void run_out_free(struct run_out *o) {
  free(o->params);
  free(o->grads0);
  free(o->act);
  free(o->act_gid);
  memset(o, 0, sizeof *o);
}

/* A discrete event of rounding, not an error: reassociation moves a value by ~1e-7
 * relative, and a ReLU input that close to 0 takes the other branch on one side, which
 * changes the gradient by that vertex's whole share (see the top of the file). Compares
 * the first step's ReLU inputs of this rank's inner rows with the reference's rows of the
 * same global ids (collective). Returns the number of entries whose sign differs over
 * all ranks when every entry agrees within FLIP_RTOL of its layer's largest |value| (so
 * the flipped ones sat at 0 within rounding), -1 when some entry differs by more (an
 * error the tolerances must report), 0 without a flip. */
#define FLIP_RTOL 1e-5
static int64_t relu_flips(const struct run_out *dist, const struct run_out *ref, double *worst_rel) {
  int64_t v[2] = {0, 0}; /* flips, entries beyond FLIP_RTOL */
  double worst = 0.0;
  if (dist->act_cols > 0 && dist->act_cols == ref->act_cols) {
    const int64_t W = ref->act_cols;
    double scale = 0.0; /* one scale for every layer: the largest |ReLU input| of the reference */
    for (int64_t i = 0; i < ref->act_rows * W; i++)
      if (fabs(ref->act[i]) > scale) scale = fabs(ref->act[i]);
    for (int64_t r = 0; r < dist->act_rows; r++) {
      const int32_t g = dist->act_gid[r];
      CHECK(g >= 0 && g < ref->act_rows && ref->act_gid[g] == g, "reference row of vertex %d", (int)g);
      for (int64_t c = 0; c < W; c++) {
        const double a = dist->act[r * W + c], b = ref->act[(int64_t)g * W + c];
        const double rel = scale > 0 ? fabs(a - b) / scale : fabs(a - b);
        if (rel > worst) worst = rel;
        if (rel > FLIP_RTOL) v[1]++;
        if ((a > 0) != (b > 0)) v[0]++;
      }
    }
  } else {
    v[1] = 1; /* nothing to compare: not a known flip */
  }
  OK(comm_allreduce_i64(g_comm, v, 2, COMM_SUM));
  double w[1] = {worst};
  OK(comm_allreduce_host(g_comm, w, 1, COMM_MAX));
  *worst_rel = w[0];
  return v[1] > 0 ? -1 : v[0];
}

static void run_model(struct cg_backend *be, const struct rt_local *loc, struct cg_exchange *ex,
                      const struct rt_config *cfg, struct run_out *o) {
  struct rt_model *m = NULL;
  struct cg_exchange_counters c0, c1;
  memset(&c0, 0, sizeof c0);
  memset(&c1, 0, sizeof c1);
  if (ex) ex->counters(ex, &c0);
  OK(rt_model_create(be, loc, cfg, ex, &m));
  if (ex) ex->counters(ex, &c1);
  o->setup_bytes = c1.halo_bytes - c0.halo_bytes;
  o->l0x = rt_model_layer0_exchanged(m);
  o->l0_width = o->l0x ? (cfg->layers > 1 ? cfg->hidden : loc->num_classes) : 0;
  if (o->l0x) CHECK(rt_model_layer_transform_first(m, 0), "an exchanged layer 0 must transform first");
  o->epochs = cfg->epochs;
  o->nparams = rt_model_num_params(m);
  o->params = malloc((size_t)o->nparams * sizeof(float));
  o->grads0 = malloc((size_t)o->nparams * sizeof(float));
  CHECK(o->params != NULL && o->grads0 != NULL, "out of memory");
  double loss0 = 0.0;
  OK(rt_model_loss_grad(m, 1, 1, &loss0, NULL));
  OK(rt_model_grads_get(m, o->grads0));
  capture_relu_inputs(m, loc, o);
  for (int e = 1; e <= cfg->epochs; e++) {
    struct rt_step_stats st;
    OK(rt_model_step(m, (uint32_t)e, &st));
    o->loss[e - 1] = st.loss;
    o->halo_bytes[e - 1] = st.halo_bytes;
  }
  OK(rt_model_evaluate(m, &o->ev, NULL));
  OK(rt_model_params_get(m, o->params));
  o->widths_sum = 0;
  for (int l = 1; l < cfg->layers; l++) {
    const int64_t fin = cfg->hidden, fout = l == cfg->layers - 1 ? loc->num_classes : cfg->hidden;
    if (cfg->model == RT_MODEL_GAT) /* T's rows: heads x (width + the source term) */
      o->widths_sum += l == cfg->layers - 1 ? cfg->out_heads * (loc->num_classes + 1)
                                            : cfg->heads * (cfg->hidden + 1);
    else
      o->widths_sum += rt_model_layer_transform_first(m, l) ? fout : fin;
  }
  rt_model_destroy(&m);
}

/* b computed what a computed, bit for bit (the overlapped and non-overlapped runs). */
static void same_bits(const struct run_out *a, const struct run_out *b, const char *what) {
  CHECK(a->nparams == b->nparams && a->epochs == b->epochs, "%s: shapes differ", what);
  for (int e = 0; e < a->epochs; e++)
    CHECK(memcmp(&a->loss[e], &b->loss[e], sizeof a->loss[e]) == 0,
          "%s: epoch %d loss %.17g, overlapped %.17g", what, e + 1, b->loss[e], a->loss[e]);
  for (int64_t i = 0; i < a->nparams; i++)
    CHECK(memcmp(&a->grads0[i], &b->grads0[i], sizeof(float)) == 0,
          "%s: first-step gradient %lld is %.9g, overlapped %.9g", what, (long long)i,
          (double)b->grads0[i], (double)a->grads0[i]);
  for (int64_t i = 0; i < a->nparams; i++)
    CHECK(memcmp(&a->params[i], &b->params[i], sizeof(float)) == 0,
          "%s: parameter %lld is %.9g, overlapped %.9g", what, (long long)i, (double)b->params[i],
          (double)a->params[i]);
  CHECK(memcmp(&a->ev, &b->ev, sizeof a->ev) == 0, "%s: evaluation differs", what);
  for (int e = 0; e < a->epochs; e++)
    CHECK(a->halo_bytes[e] == b->halo_bytes[e], "%s: epoch %d halo bytes %lld vs %lld", what, e + 1,
          (long long)b->halo_bytes[e], (long long)a->halo_bytes[e]);
}

/* Who owns which vertex: the partitioner (rt_dist_create), or an owner array given
 * to rt_dist_create_from_graph: v mod P (every vertex's neighbours scattered), or
 * v mod (P - 1) (the last rank owns nothing: no inner row, no halo, no peer). */
enum owners {
  OWN_PARTITIONER = 0,
  OWN_MOD_P = 1,
  OWN_LAST_EMPTY = 2,
  OWN_RAPA = 3,
  OWN_RAPA_PRUNE = 4,
  OWN_RAPA_PRUNE_DEG = 5
};

/* OWN_RAPA: --partition rapa (capability-weighted METIS) with rank r's rates those of a
 * device of speed g_speeds[P][r] (given, so that the split does not depend on what a
 * shared machine measures), so the parts are far from equal. OWN_RAPA_PRUNE: the same
 * with halo pruning (--prune-halo 0.001, approximate): the reference is then one rank
 * trained on the pruned graph as rank 0 wrote it (a .cgr), which the P ranks must
 * equal like any other graph. OWN_RAPA_PRUNE_DEG: pruned, normalised with the original
 * graph's degrees (--prune-norm original); the reference trains the written graph
 * normalised by the original's degrees (--norm-degrees). */
static const double g_speeds[5][4] = {{1}, {1}, {1, 0.33}, {1, 0.5, 0.25}, {1, 0.5, 0.25, 0.25}};

struct tcase {
  const char *graph; /* filled at run time for cora */
  int feat_norm;
  enum rt_model_kind model;
  int layers;
  enum part_method method;
  enum owners owners;
  int features_kept; /* 1: no dropout on the input features (layer 0's Â·X cached) */
  int tiled;         /* 1: the CPU SpMM's tiled layout with 16-vertex tiles (factored) */
  int sparse;        /* 1: the distributed run with --sparse-features on (the reference
                        stays dense: sparse on P ranks equals dense on one); 0: off */
  enum rt_layer0_halo l0; /* --layer0-halo (0: auto, exchange wherever layer 0 transforms
                             first with input dropout: most cases below) */
};

static double worst_loss_all = 0.0, worst_w_all = 0.0;

/* The "perrank" mode: rt_dist_create loads with this (RT_LOAD_PER_RANK), and each case
 * also builds the local problem with RT_LOAD_WHOLE, which must be the same bit for bit. */
static enum rt_load g_load = RT_LOAD_AUTO;
static int g_perrank_cases;

#define SAME_ARR(a, b, cnt, what)                                                            \
  CHECK(((cnt) == 0) || memcmp((a), (b), (size_t)(cnt) * sizeof *(a)) == 0,                  \
        "per-rank loading: %s differs from the whole-graph set-up", what)

static void same_local_problem(const struct rt_dist *a, const struct rt_dist *b) {
  const struct rt_local *x = rt_dist_local(a), *y = rt_dist_local(b);
  const struct part_local *p = rt_dist_part(a), *q = rt_dist_part(b);
  CHECK(x->n_inner == y->n_inner && x->n_halo == y->n_halo && x->feat_rows == y->feat_rows &&
            x->feat_dim == y->feat_dim && x->graph_checksum == y->graph_checksum &&
            x->n_train_global == y->n_train_global && x->n_val_global == y->n_val_global &&
            x->n_test_global == y->n_test_global && x->m_global == y->m_global,
        "per-rank loading: sizes or counts differ from the whole-graph set-up");
  SAME_ARR(x->gid, y->gid, x->n_inner + x->n_halo, "gid");
  CHECK(x->feat_sparse == y->feat_sparse, "per-rank loading: sparse features %d, whole %d", x->feat_sparse,
        y->feat_sparse);
  if (x->feat_sparse) {
    CHECK(x->feat_csr.nnz == y->feat_csr.nnz, "per-rank loading: %lld stored features, whole %lld",
          (long long)x->feat_csr.nnz, (long long)y->feat_csr.nnz);
    SAME_ARR(x->feat_csr.rowptr, y->feat_csr.rowptr, x->feat_rows + 1, "sparse feature rows");
    SAME_ARR(x->feat_csr.colidx, y->feat_csr.colidx, x->feat_csr.nnz, "sparse feature columns");
    SAME_ARR(x->feat_csr.vals, y->feat_csr.vals, x->feat_csr.nnz, "sparse feature values");
  } else {
    SAME_ARR(x->feat, y->feat, x->feat_rows * x->feat_dim, "features");
  }
  SAME_ARR(x->split, y->split, x->n_inner, "split");
  if (!x->multilabel) SAME_ARR(x->labels, y->labels, x->n_inner, "labels");
  SAME_ARR(x->agg.rowptr, y->agg.rowptr, x->agg.nrows + 1, "operator rows");
  SAME_ARR(x->agg.colidx, y->agg.colidx, x->agg.rowptr[x->agg.nrows], "operator columns");
  SAME_ARR(x->agg.vals, y->agg.vals, x->agg.rowptr[x->agg.nrows], "operator values");
  CHECK(p->npeers == q->npeers, "per-rank loading: %d peers vs %d", p->npeers, q->npeers);
  SAME_ARR(p->peer, q->peer, p->npeers, "peers");
  SAME_ARR(p->send_count, q->send_count, p->npeers, "send counts");
  SAME_ARR(p->recv_count, q->recv_count, p->npeers, "receive counts");
  int64_t ns = 0;
  for (int i = 0; i < p->npeers; i++) ns += p->send_count[i];
  SAME_ARR(p->send_idx, q->send_idx, ns, "send lists");
}

/* Per-rank loading with the partition cache (issue #17): the first set-up computes the
 * partition (rank 0 reads the structure) and stores it; the second reuses it and rank 0
 * reads no structure byte (its other reads unchanged, the local problem the same bit for
 * bit); after rank 0 rewrites the file with another graph at the same path, the cache
 * misses and the structure is read again. */
static void perrank_partition_cache(const char *dir, const char *path) {
  const int rank = comm_rank(g_comm);
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.graph = path;
  cfg.device = "cpu";
  cfg.threads = 1;
  cfg.quiet = 1;
  char cache[600];
  snprintf(cache, sizeof cache, "%s/partcache", dir);
  struct rt_dist_options o;
  rt_dist_options_defaults(&o);
  o.method = PART_METIS;
  o.part_seed = 3;
  o.use_cache = 1;
  o.cache_dir = cache;
  o.load = RT_LOAD_PER_RANK;
  struct rt_dist *d[3] = {NULL, NULL, NULL};
  uint64_t tot[3], str[3];
  for (int i = 0; i < 2; i++) {
    OK(rt_dist_create(g_comm, &cfg, &o, &d[i]));
    rt_dist_bytes_read(d[i], &tot[i], &str[i]);
  }
  same_local_problem(d[1], d[0]);
  if (rank == 0)
    CHECK(str[0] > 0 && str[1] == 0 && tot[1] == tot[0] - str[0],
          "partition cache: rank 0 read %llu bytes (%llu of structure), then %llu (%llu of structure)",
          (unsigned long long)tot[0], (unsigned long long)str[0], (unsigned long long)tot[1],
          (unsigned long long)str[1]);
  else
    CHECK(str[0] == 0 && str[1] == 0 && tot[1] == tot[0], "rank %d read %llu then %llu bytes", rank,
          (unsigned long long)tot[0], (unsigned long long)tot[1]);
  OK(comm_barrier(g_comm));
  if (rank == 0) { /* the same path, another graph: the cache must miss */
    struct graph g;
    OK(graph_synth("synth:small:seed=2", &g));
    OK(graph_save_cgr_version(path, &g, 2, 12));
    graph_free(&g);
  }
  OK(comm_barrier(g_comm));
  OK(rt_dist_create(g_comm, &cfg, &o, &d[2]));
  rt_dist_bytes_read(d[2], &tot[2], &str[2]);
  if (rank == 0) CHECK(str[2] > 0, "partition cache: a rewritten file reused the old graph's partition");
  for (int i = 0; i < 3; i++) rt_dist_destroy(&d[i]);
  OK(comm_barrier(g_comm));
  if (rank == 0) {
    DIR *dd = opendir(cache);
    CHECK(dd != NULL, "the partition cache folder %s was not created", cache);
    int files = 0;
    for (struct dirent *e; (e = readdir(dd)) != NULL;) {
      if (e->d_name[0] == '.') continue;
      char f[1200];
      snprintf(f, sizeof f, "%s/%s", cache, e->d_name);
      remove(f);
      files++;
    }
    closedir(dd);
    rmdir(cache);
    CHECK(files == 2, "partition cache: %d files, expected one per graph", files);
    printf("partition cache with per-rank loading: rank 0 read %llu bytes (%llu of structure) computing the "
           "partition, %llu (none of structure) reusing it; a rewritten file missed\n",
           (unsigned long long)tot[0], (unsigned long long)str[0], (unsigned long long)tot[1]);
  }
}

/* The "cache" mode: each case runs first without the halo cache (kept in g_plain), then
 * with every cache configuration (g_cache), which must give the plain run's losses and
 * parameters bit for bit (the cache moves the same values) besides passing every check
 * against the reference. */
static const struct jaca_options *g_cache;
static struct {
  int valid, epochs;
  double loss[64];
  float *params;
  int64_t nparams;
} g_plain;
/* Approximate runs (staleness > 0) have no exact run to equal: with g_pf_mode 1 a run's
 * losses and parameters are kept in g_pf (prefetch off), with 2 the run (prefetch on)
 * must equal them bit for bit. */
static int g_pf_mode;
static struct {
  double loss[64];
  float *params;
  int64_t nparams;
} g_pf;

/* The 1-rank reference: the whole graph, no exchange, CPU backend, 1 thread. */
static void reference(const struct rt_config *cfg, struct run_out *ref) {
  struct graph g;
  struct rt_local loc;
  struct cg_backend *be = NULL;
  memset(&g, 0, sizeof g);
  OK(graph_open(cfg->graph, &g));
  if (cfg->norm_graph) { /* as rt_run does (--norm-degrees) */
    struct graph s;
    memset(&s, 0, sizeof s);
    OK(graph_open(cfg->norm_graph, &s));
    OK(graph_set_norm_degrees(&g, &s, "the reference"));
    graph_free(&s);
  }
  if (cfg->feat_norm_row) graph_feat_rownorm(&g);
  OK(rt_local_from_graph(&g, cfg->model, &loc));
  graph_free(&g);
  OK(cg_backend_cpu_create(1, &be));
  run_model(be, &loc, NULL, cfg, ref);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
}

/* One case with the given seed: 0 when it passed, 1 when it missed a tolerance because
 * of a rounding-induced ReLU flip in the first step (relu_flips; run_case retries). */
static int run_case_seed(const struct tcase *tc, uint64_t seed, int last_try) {
  const int rank = comm_rank(g_comm), P = comm_size(g_comm);
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.graph = tc->graph;
  cfg.feat_norm_row = tc->feat_norm;
  cfg.model = tc->model;
  cfg.layers = tc->layers;
  cfg.hidden = 16;
  cfg.dropout = 0.5f;
  if (tc->model == RT_MODEL_GAT) { /* 3 heads of 4 (concatenated), 2 output heads (averaged);
                                      attention dropout 0.5 (as --dropout) */
    cfg.hidden = 4;
    cfg.heads = 3;
    cfg.out_heads = 2;
  }
  if (tc->features_kept) cfg.input_dropout = 0.0f;
  cfg.sparse_features = tc->sparse ? RT_SPARSE_ON : RT_SPARSE_OFF;
  cfg.layer0_halo = tc->l0;
  cfg.epochs = 12;
  cfg.device = "cpu";
  cfg.threads = 1;
  cfg.quiet = 1;
  cfg.seed = seed;
  if (tc->tiled) { /* read when each backend matrix is created */
    setenv("CAPGNN_CPU_SPMM", "tiled", 1);
    setenv("CAPGNN_CPU_SPMM_TILE", "16", 1);
  }

  /* ---- the 1-rank reference, computed by every rank (after the distributed set-up when
   * it trains the graph that set-up pruned) ---- */
  struct run_out ref, dist;
  memset(&ref, 0, sizeof ref);
  memset(&dist, 0, sizeof dist);
  char pruned_path[256] = "";
  const int pruned = tc->owners == OWN_RAPA_PRUNE || tc->owners == OWN_RAPA_PRUNE_DEG;
  if (pruned) {
    const char *tag = strrchr(tc->graph, '/') ? strrchr(tc->graph, '/') + 1 : tc->graph;
    snprintf(pruned_path, sizeof pruned_path, "prune_equiv_%.40s_%s_L%d_P%d%s.cgr", tag, rt_model_kind_str(tc->model),
             tc->layers, P, tc->owners == OWN_RAPA_PRUNE_DEG ? "_deg" : "");
    for (char *q = pruned_path; *q; q++)
      if (*q == ':' || *q == '=' || *q == ',') *q = '_';
  } else {
    reference(&cfg, &ref);
  }

  /* ---- the distributed run ---- */
  struct rt_dist_options o;
  rt_dist_options_defaults(&o);
  o.method = tc->method;
  o.part_seed = 3;
  o.use_cache = 0;
  if (g_cache) o.halo_cache = *g_cache;
  o.load = g_load;
  struct rt_dist *d = NULL;
  const char *how = part_method_name(tc->method);
  if (tc->owners == OWN_PARTITIONER) {
    OK(rt_dist_create(g_comm, &cfg, &o, &d));
    if (g_load == RT_LOAD_PER_RANK) {
      struct rt_dist_options ow = o;
      ow.load = RT_LOAD_WHOLE;
      struct rt_dist *dw = NULL;
      OK(rt_dist_create(g_comm, &cfg, &ow, &dw));
      same_local_problem(d, dw);
      rt_dist_destroy(&dw);
      g_perrank_cases++;
    }
  } else if (tc->owners == OWN_RAPA || pruned) {
    struct rapa_rates rates[RAPA_MAX_RANKS];
    for (int p = 0; p < P && p < RAPA_MAX_RANKS; p++) {
      const double f = P <= 4 ? g_speeds[P][p] : 1.0;
      rates[p] = (struct rapa_rates){.gemm_flops = 5e10 * f, .spmm_rate = 5e9 * f, .mem_bps = 2e10 * f,
                                      .rng_eps = 3e8 * f, .op_s = 3e-7 / f};
    }
    o.rapa = 1;
    o.rapa_rates = rates;
    if (pruned) {
      o.prune_eps = 1e-3;
      o.prune_write = pruned_path;
      o.prune_keep_degrees = tc->owners == OWN_RAPA_PRUNE_DEG;
    }
    OK(rt_dist_create(g_comm, &cfg, &o, &d));
    how = tc->owners == OWN_RAPA ? "rapa" : tc->owners == OWN_RAPA_PRUNE ? "pruned" : "pruned, original degrees";
    if (pruned) { /* the reference trains the written pruned graph */
      const struct rt_prediction *pr = rt_dist_local(d)->pred;
      if (P > 1 && P <= 4)
        CHECK(pr->pruned_edges > 0 && pr->pruned_edges <= pr->cut_edges, "pruning removed %lld of %lld cut edges",
              (long long)pr->pruned_edges, (long long)pr->cut_edges);
      if (P == 1) CHECK(pr->pruned_edges == 0, "one rank pruned %lld edges", (long long)pr->pruned_edges);
      if (rank == 0)
        printf("  pruned %lld of %lld cut edges (%lld halo vertices): the reference trains %s\n",
               (long long)pr->pruned_edges, (long long)pr->cut_edges, (long long)pr->pruned_vertices, pruned_path);
      struct rt_config rc = cfg;
      rc.graph = pruned_path;
      rc.feat_norm_row = cfg.feat_norm_row; /* the written features are the graph's own */
      if (tc->owners == OWN_RAPA_PRUNE_DEG) rc.norm_graph = cfg.graph;
      reference(&rc, &ref);
    }
    const struct rt_local *l = rt_dist_local(d);
    CHECK(l->pred != NULL && l->pred->nranks == P, "no prediction from --partition rapa");
    int64_t first_last[2] = {rank == 0 ? l->n_inner : 0, rank == P - 1 ? l->n_inner : 0};
    OK(comm_allreduce_i64(g_comm, first_last, 2, COMM_SUM));
    if (P > 1 && P <= 4)
      CHECK(first_last[0] > first_last[1], "rank 0 (speed 1) owns %lld rows, rank %d (speed %g) %lld: not weighted",
            (long long)first_last[0], P - 1, g_speeds[P][P - 1], (long long)first_last[1]);
  } else {
    struct graph g;
    memset(&g, 0, sizeof g);
    OK(graph_open(cfg.graph, &g));
    if (cfg.feat_norm_row) graph_feat_rownorm(&g);
    int32_t *owner = malloc((size_t)g.n * sizeof *owner);
    CHECK(owner != NULL, "out of memory");
    const int k = tc->owners == OWN_LAST_EMPTY && P > 1 ? P - 1 : P;
    for (int64_t v = 0; v < g.n; v++) owner[v] = (int32_t)(v % k);
    how = tc->owners == OWN_LAST_EMPTY ? "empty" : "mod-P";
    OK(rt_dist_create_from_graph(g_comm, &g, &cfg, &o, owner, &d));
    free(owner);
    graph_free(&g);
  }
  const struct rt_local *loc = rt_dist_local(d);
  /* After set-up a rank holds its own feature rows and its halo's, never the matrix. */
  CHECK(loc->nranks == P && loc->rank == rank, "local problem of rank %d of %d", loc->rank, loc->nranks);
  if (tc->sparse) { /* sparse: the inner rows' stored values, and with a local layer 0 the halo rows' too
                     * (read, never exchanged); an exchanged layer 0 never uses a halo feature row */
    const int l0x = rt_layer0_exchange_choose(&cfg, loc->feat_dim, loc->num_classes, 1,
                                              loc->n_halo > 0 || loc->nranks > 1, NULL);
    CHECK(loc->feat_sparse && loc->feat == NULL && loc->feat_rows == loc->n_inner + (l0x ? 0 : loc->n_halo) &&
          loc->feat_csr.nrows == loc->feat_rows,
          "sparse features: %d, %lld feature rows (%lld in the CSR), %lld inner + %lld halo, layer 0 %s",
          loc->feat_sparse, (long long)loc->feat_rows, (long long)loc->feat_csr.nrows, (long long)loc->n_inner,
          (long long)loc->n_halo, l0x ? "exchanged" : "local");
    CHECK(rt_dist_feature_bytes(d) == (loc->feat_rows + 1) * 8 + loc->feat_csr.nnz * 8, "feature bytes %lld",
          (long long)rt_dist_feature_bytes(d));
  } else { /* dense: the halo rows too unless layer 0 is exchanged (then never) */
    const int l0x = rt_layer0_exchange_choose(&cfg, loc->feat_dim, loc->num_classes, 0,
                                              loc->n_halo > 0 || loc->nranks > 1, NULL);
    CHECK(!loc->feat_sparse && loc->feat_rows == loc->n_inner, "feature rows %lld, inner rows %lld",
          (long long)loc->feat_rows, (long long)loc->n_inner);
    CHECK(rt_dist_feature_bytes(d) == (loc->n_inner + (l0x ? 0 : loc->n_halo)) * loc->feat_dim * 4,
          "feature bytes %lld (layer 0 %s)", (long long)rt_dist_feature_bytes(d), l0x ? "exchanged" : "local");
  }
  CHECK(loc->n_inner + loc->n_halo <= loc->n_global, "inner + halo > n");
  int64_t cnt[2] = {loc->n_inner, loc->n_halo};
  OK(comm_allreduce_i64(g_comm, cnt, 2, COMM_SUM));
  CHECK(cnt[0] == loc->n_global, "inner rows over ranks sum to %lld, expected %lld", (long long)cnt[0],
        (long long)loc->n_global);
  if (P > 1 && tc->owners != OWN_LAST_EMPTY)
    CHECK(loc->n_inner < loc->n_global, "rank %d owns the whole graph", rank);
  if (P > 1 && tc->owners == OWN_LAST_EMPTY && rank == P - 1)
    CHECK(loc->n_inner == 0 && loc->n_halo == 0, "the last rank should own nothing");
  const int64_t halo_total = cnt[1];

  struct cg_backend *be = NULL;
  struct cg_exchange *ex = NULL;
  OK(cg_backend_cpu_create(1, &be));
  OK(rt_dist_bind(d, be, &cfg, &ex));
  static struct tag_recorder rec; /* large: not on the stack */
  rec_init(&rec, ex, 1);
  { /* every member of the table is required: one missing is refused, before any call */
    struct rt_model *m = NULL;
    rec.ex.counters = NULL;
    CHECK(rt_model_create(be, loc, &cfg, &rec.ex, &m) == CG_ERR_ARG && m == NULL &&
              strstr(cg_err_msg(), "lacks members") != NULL,
          "an exchange without counters was accepted: %s", cg_err_msg());
    cg_err_clear();
    rec.ex.counters = rec_counters;
  }
  run_model(be, loc, &rec.ex, &cfg, &dist);
  rec_expect(&rec, loc, &cfg, dist.l0x);
  if (tc->l0 == RT_L0_LOCAL || tc->model == RT_MODEL_GAT || P == 1)
    CHECK(!dist.l0x, "layer 0 exchanged with --layer0-halo %s, %s, P = %d", rt_layer0_halo_str(tc->l0),
          rt_model_kind_str(tc->model), P);
  if (tc->l0 == RT_L0_EXCHANGE && tc->model != RT_MODEL_GAT && P > 1)
    CHECK(dist.l0x, "layer 0 local with --layer0-halo exchange");
  { /* set-up: the features' halo rows, each once, whole, unless layer 0 is exchanged or the
     * features are sparse (read, not fetched); the exchanged mode fetches none at all */
    int64_t sb = dist.setup_bytes;
    OK(comm_allreduce_i64(g_comm, &sb, 1, COMM_SUM));
    const int64_t want = dist.l0x || tc->sparse ? 0 : halo_total * loc->feat_dim * 4;
    if (dist.l0x || !g_cache) CHECK(sb == want, "set-up moved %lld halo bytes, expected %lld (layer 0 %s)",
                                    (long long)sb, (long long)want, dist.l0x ? "exchanged" : "local");
  }
  /* a rank with inner rows and halo traffic has inner blocks to poll between */
  const int polled = loc->n_inner > 0 && (loc->n_halo > 0 || rt_dist_part(d)->npeers > 0);
  CHECK(cfg.overlap == 1 && (!polled || rec.polls > 0), "overlap on: %lld progress calls",
        (long long)rec.polls);
  const int64_t polls_on = rec.polls;

  /* ---- overlap off, and on through an exchange without halo_progress: the same bits ---- */
  struct run_out off, noprog;
  memset(&off, 0, sizeof off);
  memset(&noprog, 0, sizeof noprog);
  struct rt_config cfg_off = cfg;
  cfg_off.overlap = 0;
  /* A halo cache keeps its rows and generations from one run to the next: the first
   * run's statistics are checked below; each later run gets an exchange of its own. */
  struct jaca_stats js_first;
  memset(&js_first, 0, sizeof js_first);
  if (g_cache) OK(jaca_exchange_stats(ex, 0, &js_first));
  if (g_cache) {
    rt_dist_unbind(d);
    OK(rt_dist_bind(d, be, &cfg, &ex));
  }
  rec_init(&rec, ex, 1);
  run_model(be, loc, &rec.ex, &cfg_off, &off);
  rec_expect(&rec, loc, &cfg, dist.l0x);
  CHECK(rec.polls == 0, "overlap off: %lld progress calls", (long long)rec.polls);
  if (g_cache) {
    rt_dist_unbind(d);
    OK(rt_dist_bind(d, be, &cfg, &ex));
  }
  rec_init(&rec, ex, 0);
  run_model(be, loc, &rec.ex, &cfg, &noprog);
  rec_expect(&rec, loc, &cfg, dist.l0x);
  same_bits(&dist, &off, "overlap off");
  same_bits(&dist, &noprog, "overlap on without halo_progress");

  /* ---- compare ---- */
  double worst_loss = 0.0, worst_w = 0.0;
  int worst_e = 0;
  int64_t worst_i = 0;
  CHECK(dist.nparams == ref.nparams, "%lld parameters vs %lld", (long long)dist.nparams,
        (long long)ref.nparams);
  for (int e = 0; e < cfg.epochs; e++) {
    CHECK(isfinite(ref.loss[e]) && isfinite(dist.loss[e]), "epoch %d: loss %g / %g", e + 1, ref.loss[e],
          dist.loss[e]);
    double r = fabs(dist.loss[e] - ref.loss[e]) / fabs(ref.loss[e]);
    if (r > worst_loss) {
      worst_loss = r;
      worst_e = e + 1;
    }
  }
  for (int64_t i = 0; i < ref.nparams; i++) {
    double a = dist.params[i], b = ref.params[i];
    double r = fabs(a - b) / (W_ATOL + W_RTOL * fabs(b)); /* <= 1 passes */
    if (!(r <= worst_w)) {
      worst_w = r;
      worst_i = i;
    }
  }
  /* The first step's gradient, before Adam can amplify rounding differences (it
   * normalises each gradient entry, so a near-zero entry moves its weight by ~lr
   * whatever its size): the most direct check of forward + backward + exchange. */
  double gmax = 0.0, worst_g = 0.0;
  int64_t worst_gi = 0;
  for (int64_t i = 0; i < ref.nparams; i++)
    if (fabs(ref.grads0[i]) > gmax) gmax = fabs(ref.grads0[i]);
  for (int64_t i = 0; i < ref.nparams; i++) {
    double a = dist.grads0[i], b = ref.grads0[i];
    double r = fabs(a - b) / (G_ATOL_OF_MAX * gmax + G_RTOL * fabs(b));
    if (!(r <= worst_g)) {
      worst_g = r;
      worst_gi = i;
    }
  }
  if (getenv("CAPGNN_TEST_VERBOSE") && rank == 0)
    for (int e = 0; e < cfg.epochs; e++)
      printf("    epoch %2d: loss %.9f vs %.9f, rel err %.2e\n", e + 1, dist.loss[e], ref.loss[e],
             fabs(dist.loss[e] - ref.loss[e]) / fabs(ref.loss[e]));
  /* Halo bytes: counted (sum over ranks of the bytes each rank sent) vs modelled. */
  int64_t counted[64];
  for (int e = 0; e < cfg.epochs; e++) counted[e] = dist.halo_bytes[e];
  OK(comm_allreduce_i64(g_comm, counted, cfg.epochs, COMM_SUM));
  /* (an exchanged layer 0 moves fout-wide rows, through the plain exchange even with the
   * halo cache: jaca/jaca.h caches hidden layers only) */
  const int64_t l0_bytes = halo_total * dist.l0_width * 4 * 2;
  int64_t modelled = halo_total * dist.widths_sum * 4 * 2 + l0_bytes;
  /* adaptive at EPS 0 sends every row / gradient every step: exact */
  const int approx = g_cache && ((g_cache->staleness > 0 && !(g_cache->adaptive && g_cache->adapt_eps == 0.0)) ||
                                 (g_cache->grad_staleness > 0 &&
                                  !(g_cache->grad_adaptive && g_cache->grad_adapt_eps == 0.0)));
  if (approx) {
    /* staleness S: rows up to S epochs old, never more (the cache checks every row it
     * serves; its statistics say the oldest); rows reused; fewer bytes; the first step
     * is still exact (the first loss_grad refreshed every row with the same weights) */
    const struct jaca_stats js = js_first;
    int64_t v[3] = {js.rank_hits + js.node_hits, js.grad_age_max, js.age_max};
    int64_t sent = 0, plain_cnt = 0;
    for (int e = 0; e < cfg.epochs; e++) sent += counted[e];
    plain_cnt = (int64_t)cfg.epochs * modelled;
    OK(comm_allreduce_i64(g_comm, v, 3, COMM_MAX));
    CHECK(v[2] <= g_cache->staleness && v[1] <= g_cache->grad_staleness,
          "a row %lld epochs old (staleness %d) or a gradient %lld epochs old (grad staleness %d) was used",
          (long long)v[2], g_cache->staleness, (long long)v[1], g_cache->grad_staleness);
    if (P > 1 && halo_total > 0) CHECK(v[0] > 0 && sent < plain_cnt, "staleness %d: %lld hits, %lld of %lld bytes",
                                       g_cache->staleness, (long long)v[0], (long long)sent, (long long)plain_cnt);
    CHECK(dist.loss[0] == g_plain.loss[0], "staleness %d: the first step's loss %.17g, exact %.17g",
          g_cache->staleness, dist.loss[0], g_plain.loss[0]);
    CHECK(isfinite(dist.loss[cfg.epochs - 1]) && dist.loss[cfg.epochs - 1] < dist.loss[0],
          "staleness %d: no learning (%g -> %g)", g_cache->staleness, dist.loss[0], dist.loss[cfg.epochs - 1]);
    if (rank == 0)
      printf("  %-40s %-4s L%d P%d cache %s %g%% staleness %d, grad %d: loss %.5f -> %.5f (exact %.5f), oldest row "
             "%lld, gradient %lld epochs, halo bytes %lld of the exact run's %lld\n",
             tc->graph, rt_model_kind_str(tc->model), tc->layers, P, jaca_policy_name(g_cache->policy),
             g_cache->capacity * 100, g_cache->staleness, g_cache->grad_staleness, dist.loss[0],
             dist.loss[cfg.epochs - 1], g_plain.loss[cfg.epochs - 1], (long long)v[2], (long long)v[1],
             (long long)sent, (long long)plain_cnt);
    if (g_pf_mode == 1) {
      free(g_pf.params);
      g_pf.params = malloc((size_t)dist.nparams * sizeof(float));
      CHECK(g_pf.params != NULL, "out of memory");
      memcpy(g_pf.params, dist.params, (size_t)dist.nparams * sizeof(float));
      memcpy(g_pf.loss, dist.loss, sizeof g_pf.loss);
      g_pf.nparams = dist.nparams;
    } else if (g_pf_mode == 2) {
      CHECK(g_pf.params && g_pf.nparams == dist.nparams, "no prefetch-off run to compare");
      for (int e = 0; e < cfg.epochs; e++)
        CHECK(dist.loss[e] == g_pf.loss[e], "staleness %d: epoch %d loss %.17g with prefetch, %.17g without",
              g_cache->staleness, e + 1, dist.loss[e], g_pf.loss[e]);
      CHECK(memcmp(dist.params, g_pf.params, (size_t)dist.nparams * sizeof(float)) == 0,
            "staleness %d: parameters differ with and without prefetch", g_cache->staleness);
      if (rank == 0) printf("  ... prefetch on = off, bit for bit (staleness %d)\n", g_cache->staleness);
    }
    run_out_free(&ref);
    run_out_free(&dist);
    run_out_free(&off);
    run_out_free(&noprog);
    rt_dist_destroy(&d);
    cg_backend_destroy(&be);
    return 0;
  }
  if (g_cache) {
    /* forward rows through the cache's own plan (jaca_exchange_stats: the same every
     * training forward pass, epochs + the first loss_grad); gradients through the node
     * tier to owners on the node, through MPI to the others: none on one node */
    const struct jaca_stats js = js_first;
    int64_t v[5] = {js.bytes_intra + js.bytes_inter, js.lookups, js.node_hits, js.grad_bytes,
                    js.grad_bytes + js.grad_bytes_shm};
    OK(comm_allreduce_i64(g_comm, v, 5, COMM_SUM));
    CHECK(v[0] % (cfg.epochs + 1) == 0 && v[3] % (cfg.epochs + 1) == 0,
          "cached forward bytes %lld or gradient bytes %lld not a multiple of %d passes", (long long)v[0],
          (long long)v[3], cfg.epochs + 1);
    CHECK(v[4] == (cfg.epochs + 1) * halo_total * dist.widths_sum * 4,
          "gradient bytes %lld through MPI and the node tier, expected every halo row's: %lld", (long long)v[4],
          (long long)((cfg.epochs + 1) * halo_total * dist.widths_sum * 4));
    /* (adaptive gradients all go through MPI, to owners on the node too) */
    if (comm_nnodes(g_comm) == 1 && !g_cache->grad_adaptive)
      CHECK(v[3] == 0, "one node, yet %lld gradient bytes went through MPI", (long long)v[3]);
    CHECK(v[1] == (cfg.epochs + 1) * halo_total * (cfg.layers - 1), "cache lookups %lld, expected %lld",
          (long long)v[1], (long long)((cfg.epochs + 1) * halo_total * (cfg.layers - 1)));
    if (P > 1 && halo_total > 0) CHECK(v[2] > 0, "the node tier served no row");
    modelled = v[3] / (cfg.epochs + 1) + v[0] / (cfg.epochs + 1) + l0_bytes;
    CHECK(modelled <= halo_total * dist.widths_sum * 4 * 2 + l0_bytes, "the cache sends more than the plain exchange");
  }

  char cache_label[64] = "";
  if (g_cache) snprintf(cache_label, sizeof cache_label, "%s %g%%", jaca_policy_name(g_cache->policy), g_cache->capacity * 100);
  if (rank == 0)
    printf("  %-40s %-4s L%d%s%s %-6s P%d%s%s: halo %6lld rows, loss %.5f -> %.5f, worst loss rel err %.2e "
           "(epoch %d), first-step gradient err %.2e of tolerance, worst weight err %.2e of tolerance (param %lld: %.7g vs %.7g), acc "
           "%.4f/%.4f/%.4f, halo bytes/epoch %lld (modelled %lld); overlap on = off = on without "
           "progress, bit for bit (%lld progress calls on rank 0)\n",
           tc->graph, rt_model_kind_str(tc->model), tc->layers, tc->features_kept ? " x0" : tc->sparse ? " sp" : "", dist.l0x ? " l0x" : " l0l", how, P,
           g_cache ? " cache " : "", g_cache ? cache_label : "", (long long)halo_total, ref.loss[0], ref.loss[cfg.epochs - 1], worst_loss, worst_e, worst_g, worst_w,
           (long long)worst_i, (double)dist.params[worst_i], (double)ref.params[worst_i],
           ref.ev.train_acc, ref.ev.val_acc, ref.ev.test_acc, (long long)counted[0],
           (long long)modelled, (long long)polls_on);
  if (!(worst_loss <= LOSS_RTOL && worst_g <= 1.0 && worst_w <= 1.0) && !last_try && !g_cache) {
    double rel = 0.0;
    const int64_t flips = relu_flips(&dist, &ref, &rel);
    if (flips > 0) { /* a knife edge of this seed, not an error: the next seed decides */
      if (rank == 0)
        printf("  %-40s %-4s L%d %-6s P%d seed %llu: %lld ReLU input(s) of the first step at 0 within rounding took "
               "the other branch (every input within %.1e of the reference, relative): retrying with seed %llu\n",
               tc->graph, rt_model_kind_str(tc->model), tc->layers, how, P, (unsigned long long)seed, (long long)flips,
               rel, (unsigned long long)seed + 1);
      run_out_free(&ref);
      run_out_free(&dist);
      run_out_free(&off);
      run_out_free(&noprog);
      rt_dist_destroy(&d);
      cg_backend_destroy(&be);
      if (tc->tiled) {
        unsetenv("CAPGNN_CPU_SPMM");
        unsetenv("CAPGNN_CPU_SPMM_TILE");
      }
      if (g_load == RT_LOAD_PER_RANK && tc->owners == OWN_PARTITIONER) g_perrank_cases--; /* counted again */
      return 1;
    }
  }
  CHECK(worst_loss <= LOSS_RTOL, "%s: per-epoch loss differs by %.3e relative at epoch %d (tolerance %g)",
        tc->graph, worst_loss, worst_e, LOSS_RTOL);
  CHECK(worst_g <= 1.0, "%s: first-step gradient %lld is %.9g, reference %.9g (tolerance %g max|g| + %g |ref|)",
        tc->graph, (long long)worst_gi, (double)dist.grads0[worst_gi], (double)ref.grads0[worst_gi],
        G_ATOL_OF_MAX, G_RTOL);
  CHECK(worst_w <= 1.0, "%s: parameter %lld is %.9g, reference %.9g (tolerance %g + %g |ref|)", tc->graph,
        (long long)worst_i, (double)dist.params[worst_i], (double)ref.params[worst_i], W_ATOL, W_RTOL);
  CHECK(dist.ev.train_acc == ref.ev.train_acc && dist.ev.val_acc == ref.ev.val_acc &&
            dist.ev.test_acc == ref.ev.test_acc,
        "accuracy train/val/test %.6f/%.6f/%.6f, reference %.6f/%.6f/%.6f", dist.ev.train_acc,
        dist.ev.val_acc, dist.ev.test_acc, ref.ev.train_acc, ref.ev.val_acc, ref.ev.test_acc);
  CHECK(ref.loss[cfg.epochs - 1] < ref.loss[0], "the reference does not learn (%g -> %g)", ref.loss[0],
        ref.loss[cfg.epochs - 1]);
  for (int e = 0; e < cfg.epochs; e++)
    CHECK(counted[e] == modelled, "epoch %d: %lld halo bytes counted, %lld modelled", e + 1,
          (long long)counted[e], (long long)modelled);
  /* (sparse features: X·W summed over the stored entries, not by the GEMM: rounding) */
  if (P == 1 && !tc->sparse)
    CHECK(worst_loss == 0.0 && worst_w == 0.0, "one rank must be bit-identical to the reference");
  if (g_cache) {
    CHECK(g_plain.valid && g_plain.nparams == dist.nparams && g_plain.epochs == cfg.epochs, "no plain run to compare");
    for (int e = 0; e < cfg.epochs; e++)
      CHECK(dist.loss[e] == g_plain.loss[e], "cache %s %g: epoch %d loss %.17g, without the cache %.17g",
            jaca_policy_name(g_cache->policy), g_cache->capacity, e + 1, dist.loss[e], g_plain.loss[e]);
    CHECK(memcmp(dist.params, g_plain.params, (size_t)dist.nparams * sizeof(float)) == 0,
          "cache %s %g: the parameters differ from the run without the cache", jaca_policy_name(g_cache->policy),
          g_cache->capacity);
  } else {
    free(g_plain.params);
    g_plain.params = malloc((size_t)dist.nparams * sizeof(float));
    CHECK(g_plain.params != NULL, "out of memory");
    memcpy(g_plain.params, dist.params, (size_t)dist.nparams * sizeof(float));
    memcpy(g_plain.loss, dist.loss, sizeof g_plain.loss);
    g_plain.nparams = dist.nparams;
    g_plain.epochs = cfg.epochs;
    g_plain.valid = 1;
  }
  if (worst_loss > worst_loss_all) worst_loss_all = worst_loss;
  if (worst_w > worst_w_all) worst_w_all = worst_w;

  run_out_free(&ref);
  run_out_free(&dist);
  run_out_free(&off);
  run_out_free(&noprog);
  rt_dist_destroy(&d);
  cg_backend_destroy(&be);
  if (tc->tiled) {
    unsetenv("CAPGNN_CPU_SPMM");
    unsetenv("CAPGNN_CPU_SPMM_TILE");
  }
  return 0;
}

/* A case at seed 1 (CAPGNN_TEST_SEED overrides it). A seed whose first step puts a ReLU
 * input at 0 within rounding (relu_flips: every other value agrees) is a knife edge of
 * that seed, which no tolerance absorbs: the case is run again with the next seed, at
 * most twice; the last try must pass every check. The halo cache's runs use the seed
 * their plain run passed with (they are compared with it bit for bit) and never retry. */
static uint64_t g_case_seed;
static void run_case(const struct tcase *tc) {
  uint64_t seed = 1;
  if (getenv("CAPGNN_TEST_SEED")) seed = strtoull(getenv("CAPGNN_TEST_SEED"), NULL, 10);
  if (g_cache) {
    run_case_seed(tc, g_case_seed, 1);
    return;
  }
  for (int t = 0; t < 3; t++, seed++)
    if (run_case_seed(tc, seed, t == 2) == 0) break;
  g_case_seed = seed;
}

/* The halo cache (jaca/jaca.h) at --staleness 0: every policy at 100 % and 10 % of the
 * node tier, GCN and SAGE (3 layers: two cached hidden exchanges per step), dropout on;
 * against the reference and bit for bit against the run without the cache. */
static int run_cache_cases(void) {
  const struct tcase cases[] = {
      {"synth:small", 0, RT_MODEL_GCN, 3, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_SAGE, 3, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GAT, 3, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
  };
  const enum jaca_policy pols[] = {JACA_POLICY_JACA, JACA_POLICY_LRU, JACA_POLICY_FIFO};
  const double caps[] = {1.0, 0.1};
  int ran = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    g_cache = NULL;
    run_case(&cases[i]);
    ran++;
    for (int p = 0; p < 3; p++)
      for (int k = 0; k < 2; k++) {
        struct jaca_options jo;
        jaca_options_defaults(&jo);
        jo.host_mb = jo.device_mb = 0; /* no MiB budget: the same tiers whatever memory is free */
        jo.policy = pols[p];
        jo.capacity = caps[k];
        g_cache = &jo;
        run_case(&cases[i]); /* prefetch on (the default) */
        ran++;
        if (i == 0 && p == 0) { /* and off (GCN, jaca): the plain run's results too */
          jo.prefetch = 0;
          run_case(&cases[i]);
          ran++;
        }
        g_cache = NULL;
      }
    /* approximate: staleness 2 and 5, gradients too (the exact run above is the comparison) */
    const int stale[] = {2, 5, 0, 3}, gstale[] = {0, 0, 2, 3};
    for (int k = 0; k < 4; k++) {
      struct jaca_options jo;
      jaca_options_defaults(&jo);
      jo.host_mb = jo.device_mb = 0;
      jo.policy = k % 2 == 0 ? JACA_POLICY_JACA : JACA_POLICY_LRU;
      jo.capacity = k % 2 == 0 ? 1.0 : 0.5;
      jo.staleness = stale[k];
      jo.grad_staleness = gstale[k];
      g_cache = &jo;
      run_case(&cases[i]);
      g_cache = NULL;
      ran++;
    }
    /* adaptive gradients at EPS 0 (rows exact, then adaptive rows at EPS 0 too): exact,
     * bit for bit the run without the cache (which the exact cache equals bit for bit,
     * gradients at --grad-staleness 0); then at EPS 0.05 (approximate, ages checked) */
    for (int k = 0; i == 0 && k < 3; k++) {
      struct jaca_options jo;
      jaca_options_defaults(&jo);
      jo.host_mb = jo.device_mb = 0;
      jo.policy = JACA_POLICY_JACA;
      jo.capacity = k == 1 ? 0.1 : 1.0;
      if (k == 1) OK(jaca_staleness_parse("adaptive:0:3", &jo));
      OK(jaca_grad_staleness_parse(k == 2 ? "adaptive:0.05:3" : "adaptive:0:3", &jo));
      g_cache = &jo;
      run_case(&cases[i]);
      g_cache = NULL;
      ran++;
    }
    /* approximate, prefetch off then on: bit for bit (staleness 2 at 10 %, 5 at 100 %) */
    for (int k = 0; i == 0 && k < 2; k++) {
      struct jaca_options jo;
      jaca_options_defaults(&jo);
      jo.host_mb = jo.device_mb = 0;
      jo.policy = JACA_POLICY_JACA;
      jo.capacity = k == 0 ? 0.1 : 1.0;
      jo.staleness = k == 0 ? 2 : 5;
      g_cache = &jo;
      jo.prefetch = 0;
      g_pf_mode = 1;
      run_case(&cases[i]);
      jo.prefetch = 1;
      g_pf_mode = 2;
      run_case(&cases[i]);
      g_pf_mode = 0;
      g_cache = NULL;
      ran += 2;
    }
  }
  free(g_plain.params);
  free(g_pf.params);
  g_pf.params = NULL;
  return ran;
}

/* argv[1]: "cora" (exit 77 when cora.cgr is absent), "synth", "cache" (the halo cache's
 * cases), or nothing for cora and synth. */
int main(int argc, char **argv) {
  OK(comm_init(&argc, &argv, &g_comm));
  if (!getenv("CAPGNN_LOG_LEVEL")) cg_log_set_level(CG_LOG_WARN);
  const char *which = argc > 1 ? argv[1] : "all";
  CHECK(!strcmp(which, "all") || !strcmp(which, "cora") || !strcmp(which, "synth") || !strcmp(which, "cache") ||
            !strcmp(which, "perrank"),
        "argument '%s': expected cora, synth, cache, perrank or nothing", which);
  if (!strcmp(which, "perrank")) {
    /* rank 0 writes synth:small as version 2 (4 KiB blocks) and version 1; every rank
     * then loads its own rows of it (and of the shipped cora, version 1, when present) */
    char dir[256] = "", v2[512], v1[512], cora[4096];
    if (comm_rank(g_comm) == 0) {
      snprintf(dir, sizeof dir, "/tmp/capgnn_perrank_XXXXXX");
      CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
      struct graph g;
      OK(graph_synth("synth:small", &g));
      snprintf(v2, sizeof v2, "%s/small2.cgr", dir);
      snprintf(v1, sizeof v1, "%s/small1.cgr", dir);
      OK(graph_save_cgr_version(v2, &g, 2, 12));
      OK(graph_save_cgr(v1, &g));
      graph_free(&g);
    }
    OK(comm_bcast(g_comm, dir, sizeof dir, 0));
    snprintf(v2, sizeof v2, "%s/small2.cgr", dir);
    snprintf(v1, sizeof v1, "%s/small1.cgr", dir);
    snprintf(cora, sizeof cora, "%s/cora.cgr", CAPGNN_TEST_DATASETS);
    g_load = RT_LOAD_PER_RANK;
    const struct tcase pcases[] = {
        {v2, 0, RT_MODEL_GCN, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
        {v2, 1, RT_MODEL_SAGE, 3, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
        {v2, 0, RT_MODEL_GCN, 3, PART_METIS, OWN_PARTITIONER, 1, 0, 0, RT_L0_AUTO},
        {v1, 0, RT_MODEL_SAGE, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
        {cora, 1, RT_MODEL_GCN, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
        /* sparse features (issue #14): each rank reads its inner and halo rows' stored
         * values (v2 synth:small's dense ones kept as their nonzeros) */
        {cora, 1, RT_MODEL_SAGE, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 1, RT_L0_AUTO},
        {v2, 0, RT_MODEL_GCN, 2, PART_RANDOM, OWN_PARTITIONER, 0, 0, 1, RT_L0_AUTO},
        /* a synthetic spec generated per rank (graph_synth_rows): the same local problem */
        {"synth:small", 0, RT_MODEL_GCN, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
        {"synth:small:seed=5,degree=40", 1, RT_MODEL_SAGE, 2, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof pcases / sizeof pcases[0]; i++) {
      if (pcases[i].graph == cora && access(cora, R_OK) != 0) continue;
      run_case(&pcases[i]);
      ran++;
    }
    perrank_partition_cache(dir, v2); /* last: it rewrites v2 */
    OK(comm_barrier(g_comm));
    if (comm_rank(g_comm) == 0) {
      remove(v1);
      remove(v2);
      rmdir(dir);
      printf("%d ranks on %d nodes, per-rank loading: %d cases, each local problem equal to the whole-graph "
             "set-up's bit for bit, worst loss rel err %.3e (tolerance %g), worst weight err %.3f of the "
             "tolerance\n",
             comm_size(g_comm), comm_nnodes(g_comm), g_perrank_cases, worst_loss_all, LOSS_RTOL, worst_w_all);
    }
    CHECK(g_perrank_cases == ran, "%d of %d cases compared", g_perrank_cases, ran);
    comm_finalize(&g_comm);
    return 0;
  }
  if (!strcmp(which, "cache")) {
    const int ran = run_cache_cases();
    if (comm_rank(g_comm) == 0)
      printf("%d ranks on %d nodes: %d cases with and without the halo cache, worst loss rel err %.3e (tolerance "
             "%g), worst weight err %.3f of the tolerance; the cache changed no bit\n",
             comm_size(g_comm), comm_nnodes(g_comm), ran, worst_loss_all, LOSS_RTOL, worst_w_all);
    comm_finalize(&g_comm);
    return 0;
  }
  char cora[4096];
  snprintf(cora, sizeof cora, "%s/cora.cgr", CAPGNN_TEST_DATASETS);
  const int have_cora = access(cora, R_OK) == 0;
  if (!strcmp(which, "cora") && !have_cora) {
    if (comm_rank(g_comm) == 0) printf("%s not found: skipped\n", cora);
    comm_finalize(&g_comm);
    return 77;
  }
  const char *dense = "synth:tiny:degree=80,communities=4";
  /* Each (model, layers, method) appears on both graphs. */
  const struct tcase cases[] = {
      {cora, 1, RT_MODEL_GCN, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {cora, 1, RT_MODEL_GCN, 3, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {cora, 1, RT_MODEL_SAGE, 2, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {cora, 1, RT_MODEL_SAGE, 3, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GCN, 2, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GCN, 3, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_SAGE, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_SAGE, 3, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GCN, 3, PART_METIS, OWN_MOD_P, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_SAGE, 2, PART_METIS, OWN_LAST_EMPTY, 0, 0, 0, RT_L0_AUTO},
      /* layer 0 aggregated once at set-up, after the halo feature rows arrived */
      {"synth:small", 0, RT_MODEL_GCN, 3, PART_METIS, OWN_PARTITIONER, 1, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_SAGE, 2, PART_RANDOM, OWN_MOD_P, 1, 0, 0, RT_L0_AUTO},
      /* the tiled layout computing with the operators' factors (core/csr.h) on every
       * rank: a graph dense enough for 16 x 16 tiles (42 % of the nonzeros in dense
       * tiles at P = 1, 35-53 % per rank at P = 3 with METIS, seen in the CPU backend's debug
       * log), so that both the tiles and the far part run */
      {dense, 0, RT_MODEL_GCN, 2, PART_METIS, OWN_PARTITIONER, 0, 1, 0, RT_L0_AUTO},
      {dense, 0, RT_MODEL_SAGE, 3, PART_RANDOM, OWN_PARTITIONER, 1, 1, 0, RT_L0_AUTO},
      /* GAT (issue #19): attention over each vertex's in-edges on its owner, the halo
       * rows of W h and their source terms exchanged, attention dropout keyed by the
       * global edge; both dropouts on, or none on the input features */
      {cora, 1, RT_MODEL_GAT, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {cora, 1, RT_MODEL_GAT, 3, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GAT, 2, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GAT, 3, PART_METIS, OWN_PARTITIONER, 1, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GAT, 3, PART_METIS, OWN_MOD_P, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GAT, 2, PART_RANDOM, OWN_LAST_EMPTY, 0, 0, 0, RT_L0_AUTO},
      /* --partition rapa: capability-weighted METIS on ranks of emulated speeds (exact) */
      {cora, 1, RT_MODEL_GCN, 2, PART_METIS, OWN_RAPA, 0, 0, 0, RT_L0_AUTO},
      {cora, 1, RT_MODEL_SAGE, 3, PART_METIS, OWN_RAPA, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_GCN, 3, PART_METIS, OWN_RAPA, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_SAGE, 2, PART_METIS, OWN_RAPA, 1, 0, 0, RT_L0_AUTO},
      /* ... with halo pruning: P ranks equal one rank on the pruned graph */
      {cora, 1, RT_MODEL_GCN, 2, PART_METIS, OWN_RAPA_PRUNE, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_SAGE, 3, PART_METIS, OWN_RAPA_PRUNE, 0, 0, 0, RT_L0_AUTO},
      /* ... normalised with the original degrees: one rank on the pruned graph with them */
      {cora, 1, RT_MODEL_GCN, 2, PART_METIS, OWN_RAPA_PRUNE_DEG, 0, 0, 0, RT_L0_AUTO},
      {"synth:small", 0, RT_MODEL_SAGE, 2, PART_METIS, OWN_RAPA_PRUNE_DEG, 0, 0, 0, RT_L0_AUTO},
      /* sparse input features (issue #14), dropout on: layer 0 multiplies X as CSR on
       * every rank (halo rows' features read, not exchanged), against the dense
       * reference; Cora's bag of words and an identity-feature graph */
      {cora, 1, RT_MODEL_GCN, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 1, RT_L0_AUTO},
      {cora, 1, RT_MODEL_SAGE, 2, PART_RANDOM, OWN_PARTITIONER, 0, 0, 1, RT_L0_AUTO},
      {cora, 1, RT_MODEL_GAT, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 1, RT_L0_AUTO},
      {"synth:small:nodes=1000,identity=1", 0, RT_MODEL_GCN, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 1, RT_L0_AUTO},
      {"synth:small:nodes=1000,identity=1", 0, RT_MODEL_SAGE, 2, PART_METIS, OWN_MOD_P, 0, 0, 1, RT_L0_AUTO},
      /* --layer0-halo (the cases above use auto: exchange wherever layer 0 transforms
       * first with input dropout, dense or sparse): local, layer 0 over the inner and
       * fetched halo feature rows, dense and sparse; exchange forced without input
       * dropout (layer 0 then transforms first instead of keeping Â·X) */
      {cora, 1, RT_MODEL_GCN, 2, PART_METIS, OWN_PARTITIONER, 0, 0, 0, RT_L0_LOCAL},
      {cora, 1, RT_MODEL_SAGE, 2, PART_RANDOM, OWN_PARTITIONER, 0, 0, 1, RT_L0_LOCAL},
      {"synth:small", 0, RT_MODEL_SAGE, 3, PART_RANDOM, OWN_PARTITIONER, 0, 0, 0, RT_L0_LOCAL},
      {"synth:small", 0, RT_MODEL_GCN, 3, PART_METIS, OWN_PARTITIONER, 1, 0, 0, RT_L0_EXCHANGE},
  };
  int ran = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int is_cora = cases[i].graph == cora;
    if (is_cora && (!have_cora || !strcmp(which, "synth"))) continue;
    if (!is_cora && !strcmp(which, "cora")) continue;
    run_case(&cases[i]);
    ran++;
  }
  if (comm_rank(g_comm) == 0) {
    printf("%d ranks: %d cases, worst loss rel err %.3e (tolerance %g), worst weight err %.3f of the "
           "tolerance\n",
           comm_size(g_comm), ran, worst_loss_all, LOSS_RTOL, worst_w_all);
    if (!have_cora && strcmp(which, "synth"))
      printf("cora.cgr not found in %s: its cases were skipped\n", CAPGNN_TEST_DATASETS);
  }
  comm_finalize(&g_comm);
  return 0;
}
