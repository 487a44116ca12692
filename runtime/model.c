/* runtime/model.c — GCN / GraphSAGE forward, backward and optimizer step.
 *
 * The model only orchestrates: every numeric op goes through the backend table
 * (core/ops.h), every backend buffer is allocated in rt_model_create, and the
 * training step allocates nothing (host or backend).
 *
 * Shapes (n_in = inner rows, n_tot = inner + halo rows, fin/fout per layer):
 *   in    [n_tot x fin]   layer input. Layer 0: the features (halo rows fetched once
 *                         at setup — they never change). Layer l > 0: inner rows are
 *                         the previous layer's ReLU output (kept for relu_bwd).
 *   in_d  [n_tot x fin]   dropout(in) (absent when the layer's dropout is 0: Hd = in)
 *   agg   [n_in x fin]    Â·Hd            (aggregate-first layers; layer 0 without
 *                         input dropout: Â·X, computed once by rt_model_create, and
 *                         layer 0 then runs no SpMM in forward or backward)
 *   t     [n_tot x fout]  Hd·W_neigh      (transform-first layers)
 *   z     [n_in x fout]   convolution output (the logits for the last layer)
 *   ln_y, ln_mean, ln_rstd                LayerNorm output and saved statistics
 * Backward uses three scratch buffers [n_tot x wmax], wmax = widest gradient, that
 * rotate between dZ, dT/dA and dHd.
 *
 * Halo rows and exchange (single process: n_halo = 0 and the exchange is never called):
 *   aggregate-first, l > 0: exchange H (width fin), dropout over all n_tot rows
 *     (the mask is keyed by global id, so the halo copy gets the owner's mask);
 *     backward: dHd = Âᵀ dA over n_tot rows, halo rows go back to owners.
 *   transform-first, l > 0: T = Hd·W on inner rows, then exchange T (width fout < fin,
 *     so less traffic); backward: dT = Âᵀ dZ, halo rows of dT go back to owners.
 *   layer 0: all n_tot rows of the input are local, so T (or Â·Hd) is computed
 *     without exchange and without sending gradients back (no gradient w.r.t. the
 *     input features is computed at all); the cached Â·X of the no-input-dropout case
 *     is computed after the halo rows of the features have arrived.
 * Âᵀ is a second uploaded operator: Â is not square when there are halo rows and
 * the SAGE mean is not symmetric even without them.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/exchange.h"
#include "core/log.h"
#include "core/philox.h"
#include "core/status.h"
#include "core/timer.h"
#include "runtime/runtime.h"

#define RT_LN_EPS 1e-5f
#define RT_MAX_TENSORS (64 * 5)

struct rt_layer {
  int64_t fin, fout;
  int transform_first; /* SpMM at width fout: Â(Hd·W); else (Â·Hd)·W */
  int agg_cached;      /* layer 0 without input dropout: agg = Â·X computed once */
  float p_drop;        /* dropout probability on this layer's input */
  int hidden;          /* not the last layer: [LayerNorm] -> ReLU follow */
  int64_t off_w, off_ws, off_b, off_g, off_beta; /* offsets in the flat buffers; -1 = absent */
  float *in, *in_d, *agg, *t, *z;
  float *ln_y, *ln_mean, *ln_rstd;
};

struct rt_model {
  struct cg_backend *be;
  const struct rt_local *loc;
  struct cg_exchange *ex;   /* NULL for a single process */
  struct rt_config cfg;
  int nlayers;
  struct rt_layer *layers;
  int64_t n_in, n_tot, classes;

  struct cg_spmat *a, *at;  /* Â and Âᵀ */
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

  float *scratch[3];
  int64_t t_step;           /* optimizer steps taken */
  int last_fwd_train;       /* whether the last forward applied dropout */
  uint32_t last_fwd_epoch;
};

/* ---- setup ------------------------------------------------------------------ */

/* Same shape, structure and values, bit for bit. */
static int csr_same(const struct cg_csr *a, const struct cg_csr *b) {
  if (a->nrows != b->nrows || a->ncols != b->ncols || a->nnz != b->nnz) return 0;
  if ((a->vals == NULL) != (b->vals == NULL)) return 0;
  if (memcmp(a->rowptr, b->rowptr, (size_t)(a->nrows + 1) * sizeof *a->rowptr)) return 0;
  if (a->nnz && memcmp(a->colidx, b->colidx, (size_t)a->nnz * sizeof *a->colidx)) return 0;
  if (a->vals && a->nnz && memcmp(a->vals, b->vals, (size_t)a->nnz * sizeof *a->vals)) return 0;
  /* (a backend may compute with the factors instead of vals: they must match too) */
  if (!a->row_scale != !b->row_scale) return 0;
  return !a->row_scale ||
         (memcmp(a->row_scale, b->row_scale, (size_t)a->nrows * sizeof *a->row_scale) == 0 &&
          memcmp(a->col_scale, b->col_scale, (size_t)a->ncols * sizeof *a->col_scale) == 0);
}

/* Whether a square operator looks symmetric to the bit on up to 4096 entries
 * spread evenly over its nonzeros: a(u, v) == a(v, u) (binary search in row v) and
 * equal factors. A cheap guard on a known property, not a proof. */
static int symmetric_sample(const struct cg_csr *a) {
  if (a->nrows != a->ncols) return 0;
  if (!a->row_scale != !a->col_scale) return 0;
  if (a->row_scale && memcmp(a->row_scale, a->col_scale, (size_t)a->nrows * sizeof(float)) != 0)
    return 0;
  const int64_t step = a->nnz / 4096 + 1;
  int64_t u = 0;
  for (int64_t k = 0; k < a->nnz; k += step) {
    while (a->rowptr[u + 1] <= k) u++;
    const int64_t v = a->colidx[k];
    int64_t lo = a->rowptr[v], hi = a->rowptr[v + 1];
    while (lo < hi) { /* first entry of row v with column >= u */
      int64_t mid = lo + (hi - lo) / 2;
      if (a->colidx[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    if (lo == a->rowptr[v + 1] || a->colidx[lo] != u) return 0;
    if (a->vals && memcmp(&a->vals[lo], &a->vals[k], sizeof(float)) != 0) return 0;
  }
  return 1;
}

static int add_tensor(struct rt_model *m, const char *name, enum rt_tensor_kind kind, int layer,
                      int64_t rows, int64_t cols, int decay, int64_t *off) {
  if (m->ntensors >= RT_MAX_TENSORS)
    return cg_err_set(CG_ERR_INTERNAL, "too many parameter tensors (%d)", m->ntensors);
  struct rt_tensor_info *t = &m->tensors[m->ntensors++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->kind = kind;
  t->offset = m->nparams;
  t->rows = rows;
  t->cols = cols;
  t->count = rows * cols;
  t->layer = layer;
  t->decay = decay;
  *off = t->offset;
  m->nparams += t->count;
  return CG_OK;
}

static int be_alloc(struct rt_model *m, float **p, int64_t nfloat, const char *what) {
  void *q = NULL;
  size_t bytes = (size_t)(nfloat > 0 ? nfloat : 1) * sizeof(float);
  TRY(m->be->alloc(m->be, &q, bytes, what));
  *p = q;
  return CG_OK;
}

/* Glorot/Xavier uniform U(-a, a), a = sqrt(6 / (fan_in + fan_out)), from Philox keyed by
 * the seed. Counter: (index / 4, tensor number, 'INIT', 0); dropout uses epoch >= 1 in c3
 * and small layer numbers in c2, so the two streams never overlap. */
static void init_glorot(float *w, int64_t rows, int64_t cols, uint64_t seed, uint32_t tensor) {
  const double a = sqrt(6.0 / (double)(rows + cols));
  const int64_t n = rows * cols;
  for (int64_t i = 0; i < n; i += 4) {
    struct cg_philox_out o = cg_philox4x32_10((uint32_t)(i >> 2), tensor, 0x494E4954u, 0u,
                                              (uint32_t)seed, (uint32_t)(seed >> 32));
    for (int j = 0; j < 4 && i + j < n; j++)
      w[i + j] = (float)((2.0 * (double)cg_u32_to_unit(o.v[j]) - 1.0) * a);
  }
}

static int exchange_needed(const struct rt_local *loc) { return loc->n_halo > 0 || loc->nranks > 1; }

int rt_model_create(struct cg_backend *be, const struct rt_local *loc, const struct rt_config *cfg,
                    struct cg_exchange *ex, struct rt_model **out) {
  int st = CG_OK;
  *out = NULL;
  TRY(rt_config_check(cfg));
  TRY(rt_local_check(loc, loc->name));
  int self_loops = 0;
  if (loc->norm != rt_model_norm(cfg->model, &self_loops))
    return cg_err_set(CG_ERR_ARG, "local problem of %s was built for another model's aggregation "
                      "operator than %s", loc->name, rt_model_kind_str(cfg->model));
  if (loc->n_train_global < 1)
    return cg_err_set(CG_ERR_ARG, "graph %s has no train vertices (split == 1); cannot train",
                      loc->name);
  if (exchange_needed(loc) &&
      (!ex || !ex->halo_begin || !ex->halo_end || !ex->allreduce_grads || !ex->allreduce_host))
    return cg_err_set(CG_ERR_ARG, "local problem of %s has halo rows or several ranks but no "
                      "exchange was given", loc->name);

  struct rt_model *m = cg_calloc(1, sizeof *m, "model");
  if (!m) return CG_ERR_NOMEM;
  m->be = be;
  m->loc = loc;
  m->cfg = *cfg;
  m->cfg.graph = NULL; /* not owned; never used after setup */
  m->cfg.metrics_path = NULL;
  m->cfg.device = NULL;
  m->ex = ex;
  m->nlayers = cfg->layers;
  m->n_in = loc->n_inner;
  m->n_tot = loc->n_inner + loc->n_halo;
  m->classes = loc->num_classes;
  float *host = NULL;
  struct cg_csr at = {0};

  m->layers = cg_calloc((size_t)m->nlayers, sizeof *m->layers, "model layers");
  if (!m->layers) {
    st = CG_ERR_NOMEM;
    goto fail;
  }

  /* ---- parameter layout: per layer W_neigh, [W_self], b, [gamma, beta] ---- */
  int64_t wmax = m->classes;
  for (int l = 0; l < m->nlayers; l++) {
    struct rt_layer *L = &m->layers[l];
    L->fin = l == 0 ? loc->feat_dim : cfg->hidden;
    L->fout = l == m->nlayers - 1 ? m->classes : cfg->hidden;
    L->hidden = l < m->nlayers - 1;
    /* Run the SpMM at the smaller width: its cost (and, for hidden layers, the halo
     * traffic) is nnz x width, while the GEMM costs the same either way. Â(HW) =
     * (ÂH)W exactly in real arithmetic, so the choice only changes rounding. */
    L->transform_first = L->fout < L->fin;
    L->p_drop = rt_config_layer_dropout(cfg, l);
    /* Layer 0 without dropout aggregates constant features: keep Â·X from setup. */
    L->agg_cached = l == 0 && L->p_drop == 0.0f;
    if (L->agg_cached) L->transform_first = 0;
    if (L->fout > wmax) wmax = L->fout;
    if (l > 0 && L->fin > wmax) wmax = L->fin;
    const int decay = cfg->weight_decay > 0.0f && (cfg->wd_scope == RT_WD_ALL || l == 0);
    char name[32];
    snprintf(name, sizeof name, "conv%d.weight", l);
    TRY_GOTO(add_tensor(m, name, RT_TENSOR_WEIGHT, l, L->fin, L->fout, decay, &L->off_w), fail);
    L->off_ws = -1;
    if (cfg->model == RT_MODEL_SAGE) {
      snprintf(name, sizeof name, "conv%d.weight_self", l);
      TRY_GOTO(add_tensor(m, name, RT_TENSOR_WEIGHT, l, L->fin, L->fout, decay, &L->off_ws), fail);
    }
    snprintf(name, sizeof name, "conv%d.bias", l);
    TRY_GOTO(add_tensor(m, name, RT_TENSOR_BIAS, l, 1, L->fout, 0, &L->off_b), fail);
    L->off_g = L->off_beta = -1;
    if (L->hidden && cfg->layernorm) {
      snprintf(name, sizeof name, "norm%d.weight", l);
      TRY_GOTO(add_tensor(m, name, RT_TENSOR_NORM_GAIN, l, 1, L->fout, 0, &L->off_g), fail);
      snprintf(name, sizeof name, "norm%d.bias", l);
      TRY_GOTO(add_tensor(m, name, RT_TENSOR_NORM_BIAS, l, 1, L->fout, 0, &L->off_beta), fail);
    }
  }

  /* ---- parameters, gradient, Adam state ---- */
  TRY_GOTO(be_alloc(m, &m->p, m->nparams, "model parameters"), fail);
  TRY_GOTO(be_alloc(m, &m->g, m->nparams, "flat gradient buffer"), fail);
  TRY_GOTO(be_alloc(m, &m->m1, m->nparams, "Adam first moment"), fail);
  TRY_GOTO(be_alloc(m, &m->m2, m->nparams, "Adam second moment"), fail);
  be->fill(be, m->g, m->nparams, 0.0f);
  be->fill(be, m->m1, m->nparams, 0.0f);
  be->fill(be, m->m2, m->nparams, 0.0f);
  host = cg_calloc((size_t)m->nparams, sizeof(float), "parameter initialisation");
  if (!host) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  for (int i = 0; i < m->ntensors; i++) {
    const struct rt_tensor_info *t = &m->tensors[i];
    float *w = host + t->offset;
    switch (t->kind) {
      case RT_TENSOR_WEIGHT: init_glorot(w, t->rows, t->cols, cfg->seed, (uint32_t)i); break;
      case RT_TENSOR_NORM_GAIN:
        for (int64_t k = 0; k < t->count; k++) w[k] = 1.0f;
        break;
      case RT_TENSOR_BIAS:
      case RT_TENSOR_NORM_BIAS: break; /* stay 0 (calloc) */
    }
  }
  TRY_GOTO(be->upload(be, m->p, host, (size_t)m->nparams * sizeof(float)), fail);
  cg_free(host);
  host = NULL;

  /* ---- operators ---- */
  TRY_GOTO(be->spmat_create(be, &loc->agg, &m->a), fail);
  /* GCN's Â on one rank is symmetric to the bit: then Âᵀ shares Â's backend copy
   * (on Reddit that saves ~0.9 GB and the second upload). Known without building
   * Âᵀ (1.7 s on Reddit) when the operator is GCN's over the whole graph (every
   * graph's adjacency is symmetric, graph_check; the weight and the factors are
   * symmetric in the two degrees, graph/tests/test_norm.c), confirmed on a sample;
   * otherwise, or if the sample disagrees, Âᵀ is built and compared whole. */
  if (loc->n_halo == 0 && loc->norm == GRAPH_NORM_GCN && symmetric_sample(&loc->agg)) {
    m->at = m->a;
  } else {
    TRY_GOTO(cg_csr_transpose(&loc->agg, &at), fail);
    if (csr_same(&loc->agg, &at)) m->at = m->a;
    else TRY_GOTO(be->spmat_create(be, &at, &m->at), fail);
    cg_csr_free(&at);
  }

  /* ---- ids, labels, index arrays ---- */
  {
    void *q = NULL;
    TRY_GOTO(be->alloc(be, &q, (size_t)(m->n_tot > 0 ? m->n_tot : 1) * sizeof(int32_t), "global ids"), fail);
    m->d_gid = q;
    if (m->n_tot > 0)
      TRY_GOTO(be->upload(be, m->d_gid, loc->gid, (size_t)m->n_tot * sizeof(int32_t)), fail);
    if (loc->multilabel) {
      size_t bytes = (size_t)m->n_in * (size_t)m->classes;
      TRY_GOTO(be->alloc(be, &q, bytes ? bytes : 1, "multi-label targets"), fail);
      m->d_mlabels = q;
      if (bytes) TRY_GOTO(be->upload(be, m->d_mlabels, loc->mlabels, bytes), fail);
    } else {
      size_t bytes = (size_t)m->n_in * sizeof(int32_t);
      TRY_GOTO(be->alloc(be, &q, bytes ? bytes : 4, "labels"), fail);
      m->d_labels = q;
      if (bytes) TRY_GOTO(be->upload(be, m->d_labels, loc->labels, bytes), fail);
    }
    int32_t *idx = cg_malloc((size_t)(m->n_in > 0 ? m->n_in : 1) * sizeof(int32_t), "split index");
    if (!idx) {
      st = CG_ERR_NOMEM;
      goto fail;
    }
    static const enum graph_split which[3] = {GRAPH_SPLIT_TRAIN, GRAPH_SPLIT_VAL, GRAPH_SPLIT_TEST};
    m->n_split_global[0] = loc->n_train_global;
    m->n_split_global[1] = loc->n_val_global;
    m->n_split_global[2] = loc->n_test_global;
    for (int s = 0; s < 3; s++) {
      int64_t k = 0;
      for (int64_t i = 0; i < m->n_in; i++)
        if (loc->split[i] == which[s]) idx[k++] = (int32_t)i;
      m->n_idx[s] = k;
      st = be->alloc(be, &q, (size_t)(k > 0 ? k : 1) * sizeof(int32_t), "split index");
      if (st == CG_OK) {
        m->d_idx[s] = q;
        if (k) st = be->upload(be, m->d_idx[s], idx, (size_t)k * sizeof(int32_t));
      }
      if (st < 0) {
        cg_free(idx);
        cg_err_trail(__FILE__, __LINE__, "split index upload");
        goto fail;
      }
    }
    cg_free(idx);
  }

  /* ---- activations ---- */
  for (int l = 0; l < m->nlayers; l++) {
    struct rt_layer *L = &m->layers[l];
    TRY_GOTO(be_alloc(m, &L->in, m->n_tot * L->fin, l == 0 ? "input features" : "layer input"), fail);
    if (L->p_drop > 0.0f)
      TRY_GOTO(be_alloc(m, &L->in_d, m->n_tot * L->fin, "dropout output"), fail);
    if (L->transform_first)
      TRY_GOTO(be_alloc(m, &L->t, m->n_tot * L->fout, "transformed rows"), fail);
    else
      TRY_GOTO(be_alloc(m, &L->agg, m->n_in * L->fin, "aggregated rows"), fail);
    TRY_GOTO(be_alloc(m, &L->z, m->n_in * L->fout, "convolution output"), fail);
    if (L->hidden && cfg->layernorm) {
      TRY_GOTO(be_alloc(m, &L->ln_y, m->n_in * L->fout, "LayerNorm output"), fail);
      TRY_GOTO(be_alloc(m, &L->ln_mean, m->n_in, "LayerNorm mean"), fail);
      TRY_GOTO(be_alloc(m, &L->ln_rstd, m->n_in, "LayerNorm rstd"), fail);
    }
    if (l > 0) be->fill(be, L->in, m->n_tot * L->fin, 0.0f);
  }
  for (int s = 0; s < 3; s++)
    TRY_GOTO(be_alloc(m, &m->scratch[s], m->n_tot * wmax, "backward scratch"), fail);

  /* Features: inner rows (and halo rows when given) uploaded; otherwise the halo rows
   * come from their owners once — they never change during training. */
  TRY_GOTO(be->upload(be, m->layers[0].in, loc->feat,
                      (size_t)loc->feat_rows * (size_t)loc->feat_dim * sizeof(float)), fail);
  if (loc->feat_rows < m->n_tot)
    TRY_GOTO(cg_exchange_halo(m->ex, CG_HALO_FORWARD, m->layers[0].in, loc->feat_dim), fail);
  if (m->layers[0].agg_cached)
    be->spmm(be, m->a, m->layers[0].in, loc->feat_dim, m->layers[0].agg, loc->feat_dim, loc->feat_dim);
  be->sync(be);

  LOG_DEBUG("train", "model %s: %d layers, %lld parameters in %d tensors", rt_model_kind_str(cfg->model),
            m->nlayers, (long long)m->nparams, m->ntensors);
  *out = m;
  return CG_OK;

fail:
  cg_free(host);
  cg_csr_free(&at);
  rt_model_destroy(&m);
  return st < 0 ? st : CG_ERR_INTERNAL;
}

void rt_model_destroy(struct rt_model **pm) {
  if (!pm || !*pm) return;
  struct rt_model *m = *pm;
  struct cg_backend *be = m->be;
  if (m->layers) {
    for (int l = 0; l < m->nlayers; l++) {
      struct rt_layer *L = &m->layers[l];
      be->free(be, L->in);
      be->free(be, L->in_d);
      be->free(be, L->agg);
      be->free(be, L->t);
      be->free(be, L->z);
      be->free(be, L->ln_y);
      be->free(be, L->ln_mean);
      be->free(be, L->ln_rstd);
    }
    cg_free(m->layers);
  }
  for (int s = 0; s < 3; s++) {
    be->free(be, m->scratch[s]);
    be->free(be, m->d_idx[s]);
  }
  be->free(be, m->d_gid);
  be->free(be, m->d_labels);
  be->free(be, m->d_mlabels);
  be->free(be, m->p);
  be->free(be, m->g);
  be->free(be, m->m1);
  be->free(be, m->m2);
  if (m->at != m->a) be->spmat_destroy(be, m->at);
  be->spmat_destroy(be, m->a);
  cg_free(m);
  *pm = NULL;
}

int64_t rt_model_num_params(const struct rt_model *m) { return m->nparams; }
int rt_model_num_tensors(const struct rt_model *m) { return m->ntensors; }

int rt_model_tensor(const struct rt_model *m, int i, struct rt_tensor_info *out) {
  if (i < 0 || i >= m->ntensors)
    return cg_err_set(CG_ERR_ARG, "parameter tensor %d out of range [0, %d)", i, m->ntensors);
  *out = m->tensors[i];
  return CG_OK;
}

int rt_model_layer_transform_first(const struct rt_model *m, int l) {
  return l >= 0 && l < m->nlayers ? m->layers[l].transform_first : 0;
}

int rt_model_params_get(const struct rt_model *m, float *host) {
  return m->be->download(m->be, host, m->p, (size_t)m->nparams * sizeof(float));
}
int rt_model_params_set(struct rt_model *m, const float *host) {
  return m->be->upload(m->be, m->p, host, (size_t)m->nparams * sizeof(float));
}
int rt_model_grads_get(const struct rt_model *m, float *host) {
  return m->be->download(m->be, host, m->g, (size_t)m->nparams * sizeof(float));
}
int rt_model_state_get(const struct rt_model *m, float *params, float *adam_m, float *adam_v,
                       int64_t *steps) {
  const size_t bytes = (size_t)m->nparams * sizeof(float);
  TRY(m->be->download(m->be, params, m->p, bytes));
  TRY(m->be->download(m->be, adam_m, m->m1, bytes));
  TRY(m->be->download(m->be, adam_v, m->m2, bytes));
  *steps = m->t_step;
  return CG_OK;
}
int rt_model_state_set(struct rt_model *m, const float *params, const float *adam_m,
                       const float *adam_v, int64_t steps) {
  if (steps < 0) return cg_err_set(CG_ERR_ARG, "rt_model_state_set: %lld steps", (long long)steps);
  const size_t bytes = (size_t)m->nparams * sizeof(float);
  TRY(m->be->upload(m->be, m->p, params, bytes));
  TRY(m->be->upload(m->be, m->m1, adam_m, bytes));
  TRY(m->be->upload(m->be, m->m2, adam_v, bytes));
  m->t_step = steps;
  return CG_OK;
}

/* ---- communication (timed; no-ops for a single process) ---------------------- */

/* Counters of the exchange (zeros without one): each step reports its deltas. */
static void counters_now(const struct rt_model *m, struct cg_exchange_counters *c) {
  memset(c, 0, sizeof *c);
  if (m->ex && m->ex->counters) m->ex->counters(m->ex, c);
}

static void stats_begin(struct rt_model *m, struct rt_step_stats *st) {
  struct cg_exchange_counters c;
  memset(st, 0, sizeof *st);
  counters_now(m, &c);
  st->halo_bytes = -c.halo_bytes;
  st->allreduce_bytes = -c.allreduce_bytes;
  st->cache_hits = -c.cache_hits;
  st->cache_lookups = -c.cache_lookups;
}

static void stats_end(struct rt_model *m, struct rt_step_stats *st) {
  struct cg_exchange_counters c;
  counters_now(m, &c);
  st->halo_bytes += c.halo_bytes;
  st->allreduce_bytes += c.allreduce_bytes;
  st->cache_hits += c.cache_hits;
  st->cache_lookups += c.cache_lookups;
}

/* One halo exchange of x (forward) or of the gradient dx (backward). The device is
 * synchronised on both sides so that comm_s holds only communication (and waiting for
 * peers), never queued compute. begin and end are the seam's two halves: this is the
 * one place where an overlapped schedule would run inner-row work between them. */
static int model_halo(struct rt_model *m, enum cg_halo_dir dir, float *x, int64_t cols,
                      struct rt_step_stats *st) {
  if (!exchange_needed(m->loc)) return CG_OK;
  m->be->sync(m->be);
  double t0 = cg_time_now();
  int rc = m->ex->halo_begin(m->ex, dir, x, cols);
  if (rc == CG_OK) rc = m->ex->halo_end(m->ex, dir, x, cols);
  m->be->sync(m->be);
  st->comm_s += cg_time_now() - t0;
  TRY(rc);
  return CG_OK;
}

/* Sum of a few host values over the ranks (losses, evaluation counts). */
static int model_reduce_host(struct rt_model *m, double *v, int n, struct rt_step_stats *st) {
  if (!exchange_needed(m->loc)) return CG_OK;
  double t0 = cg_time_now();
  int rc = m->ex->allreduce_host(m->ex, v, n, CG_REDUCE_SUM);
  st->comm_s += cg_time_now() - t0;
  TRY(rc);
  return CG_OK;
}

/* The one all-reduce of the flat gradient per step. */
static int model_reduce_grads(struct rt_model *m, struct rt_step_stats *st) {
  if (!exchange_needed(m->loc)) return CG_OK;
  m->be->sync(m->be);
  double t0 = cg_time_now();
  int rc = m->ex->allreduce_grads(m->ex, m->g, m->nparams);
  m->be->sync(m->be);
  st->comm_s += cg_time_now() - t0;
  TRY(rc);
  return CG_OK;
}

/* ---- forward ------------------------------------------------------------------ */

static struct cg_dropout_key drop_key(const struct rt_model *m, uint32_t epoch, int layer) {
  struct cg_dropout_key k;
  k.seed = m->cfg.seed;
  k.epoch = epoch;
  k.layer = (uint32_t)layer;
  return k;
}

static const float *layer_hd(const struct rt_model *m, const struct rt_layer *L) {
  return (m->last_fwd_train && L->p_drop > 0.0f) ? L->in_d : L->in;
}

static int forward(struct rt_model *m, uint32_t epoch, int train, struct rt_step_stats *st) {
  struct cg_backend *be = m->be;
  const int64_t n_in = m->n_in, n_tot = m->n_tot;
  m->last_fwd_train = train;
  m->last_fwd_epoch = epoch;
  for (int l = 0; l < m->nlayers; l++) {
    struct rt_layer *L = &m->layers[l];
    const int64_t fin = L->fin, fout = L->fout;
    /* Rows of the input this layer reads: layer 0 and aggregate-first layers read
     * all n_tot rows; a transform-first hidden layer transforms inner rows only and
     * exchanges the (narrower) result instead. */
    const int64_t rows = (l == 0 || !L->transform_first) ? n_tot : n_in;
    if (l > 0 && !L->transform_first) TRY(model_halo(m, CG_HALO_FORWARD, L->in, fin, st));
    const float *hd = L->in;
    if (train && L->p_drop > 0.0f) {
      be->dropout(be, L->in, L->in_d, rows, fin, m->d_gid, L->p_drop, drop_key(m, epoch, l));
      hd = L->in_d;
    }
    const float *w = m->p + L->off_w;
    if (L->transform_first) {
      be->gemm(be, 0, 0, rows, fout, fin, 1.0f, hd, fin, w, fout, 0.0f, L->t, fout);
      if (l > 0) TRY(model_halo(m, CG_HALO_FORWARD, L->t, fout, st));
      be->spmm(be, m->a, L->t, fout, L->z, fout, fout);
    } else {
      if (!L->agg_cached) be->spmm(be, m->a, hd, fin, L->agg, fin, fin);
      be->gemm(be, 0, 0, n_in, fout, fin, 1.0f, L->agg, fin, w, fout, 0.0f, L->z, fout);
    }
    if (L->off_ws >= 0)
      be->gemm(be, 0, 0, n_in, fout, fin, 1.0f, hd, fin, m->p + L->off_ws, fout, 1.0f, L->z, fout);
    be->bias_add(be, L->z, m->p + L->off_b, n_in, fout);
    if (L->hidden) {
      const float *act_in = L->z;
      if (L->ln_y) {
        be->layernorm_fwd(be, L->z, n_in, fout, m->p + L->off_g, m->p + L->off_beta, RT_LN_EPS,
                          L->ln_y, L->ln_mean, L->ln_rstd);
        act_in = L->ln_y;
      }
      be->relu_fwd(be, act_in, m->layers[l + 1].in, n_in * fout);
    }
  }
  return CG_OK;
}

/* Loss over the train rows: dlogits lands in scratch[0] (scaled for the mean over all
 * train vertices of the graph); returns the global mean loss. */
static int loss_train(struct rt_model *m, double *loss, struct rt_step_stats *st) {
  struct cg_backend *be = m->be;
  const struct rt_layer *last = &m->layers[m->nlayers - 1];
  double sum = 0.0;
  double denom = (double)m->n_split_global[0];
  if (m->loc->multilabel) {
    denom *= (double)m->classes;
    be->bce(be, last->z, m->n_in, m->classes, m->d_mlabels, m->d_idx[0], m->n_idx[0],
            (float)(1.0 / denom), m->scratch[0], &sum);
  } else {
    be->xent(be, last->z, m->n_in, m->classes, m->d_labels, m->d_idx[0], m->n_idx[0],
             (float)(1.0 / denom), m->scratch[0], &sum);
  }
  TRY(model_reduce_host(m, &sum, 1, st));
  *loss = sum / denom;
  return CG_OK;
}

/* ---- backward ---------------------------------------------------------------- */

static int backward(struct rt_model *m, struct rt_step_stats *st) {
  struct cg_backend *be = m->be;
  const int64_t n_in = m->n_in, n_tot = m->n_tot;
  float *dz = m->scratch[0]; /* dlogits from the loss */
  for (int l = m->nlayers - 1; l >= 0; l--) {
    struct rt_layer *L = &m->layers[l];
    const int64_t fin = L->fin, fout = L->fout;
    float *q = NULL, *r = NULL; /* the two scratch buffers not holding dz */
    for (int s = 0; s < 3; s++) {
      if (m->scratch[s] == dz) continue;
      if (!q) q = m->scratch[s];
      else r = m->scratch[s];
    }
    const float *hd = layer_hd(m, L);
    const float *w = m->p + L->off_w;
    float *gw = m->g + L->off_w;
    float *dhd = r; /* gradient w.r.t. this layer's (dropped) input, l > 0 */

    be->bias_grad(be, dz, n_in, fout, m->g + L->off_b);
    if (L->transform_first) {
      float *dt = q;
      be->spmm(be, m->at, dz, fout, dt, fout, fout); /* dT = Âᵀ dZ, n_tot rows */
      if (l == 0) {
        /* All n_tot rows of T were computed here from local input rows. */
        be->gemm(be, 1, 0, fin, fout, n_tot, 1.0f, hd, fin, dt, fout, 0.0f, gw, fout);
      } else {
        TRY(model_halo(m, CG_HALO_BACKWARD, dt, fout, st)); /* owners add the halo rows of dT */
        be->gemm(be, 1, 0, fin, fout, n_in, 1.0f, hd, fin, dt, fout, 0.0f, gw, fout);
        be->gemm(be, 0, 1, n_in, fin, fout, 1.0f, dt, fout, w, fout, 0.0f, dhd, fin);
      }
    } else {
      be->gemm(be, 1, 0, fin, fout, n_in, 1.0f, L->agg, fin, dz, fout, 0.0f, gw, fout);
      if (l > 0) {
        float *da = q;
        be->gemm(be, 0, 1, n_in, fin, fout, 1.0f, dz, fout, w, fout, 0.0f, da, fin);
        be->spmm(be, m->at, da, fin, dhd, fin, fin); /* n_tot rows */
      }
    }
    if (L->off_ws >= 0) {
      be->gemm(be, 1, 0, fin, fout, n_in, 1.0f, hd, fin, dz, fout, 0.0f, m->g + L->off_ws, fout);
      if (l > 0)
        be->gemm(be, 0, 1, n_in, fin, fout, 1.0f, dz, fout, m->p + L->off_ws, fout, 1.0f, dhd, fin);
    }
    if (l == 0) break; /* no gradient w.r.t. the input features */
    if (!L->transform_first) TRY(model_halo(m, CG_HALO_BACKWARD, dhd, fin, st));
    /* Inner rows of dhd now hold the full gradient w.r.t. Hd; undo dropout with the
     * same mask (keyed by global id), then the previous layer's ReLU and LayerNorm. */
    if (m->last_fwd_train && L->p_drop > 0.0f)
      be->dropout(be, dhd, dhd, n_in, fin, m->d_gid, L->p_drop, drop_key(m, m->last_fwd_epoch, l));
    be->relu_bwd(be, L->in, dhd, n_in * fin);
    struct rt_layer *P = &m->layers[l - 1];
    if (P->ln_y) {
      float *dzp = q; /* q is free again: dT / dA are consumed */
      be->layernorm_bwd(be, dhd, P->z, P->ln_mean, P->ln_rstd, m->p + P->off_g, n_in, P->fout, dzp,
                        m->g + P->off_g, m->g + P->off_beta);
      dz = dzp;
    } else {
      dz = dhd;
    }
  }
  return CG_OK;
}

/* ---- public steps ------------------------------------------------------------ */

int rt_model_loss(struct rt_model *m, uint32_t epoch, int train, double *loss) {
  struct rt_step_stats st;
  stats_begin(m, &st);
  TRY(forward(m, epoch, train, &st));
  TRY(loss_train(m, loss, &st));
  return CG_OK;
}

int rt_model_loss_grad(struct rt_model *m, uint32_t epoch, int train, double *loss,
                       struct rt_step_stats *st) {
  struct rt_step_stats local;
  if (!st) st = &local;
  stats_begin(m, st);
  TRY(forward(m, epoch, train, st));
  TRY(loss_train(m, loss, st));
  TRY(backward(m, st));
  TRY(model_reduce_grads(m, st));
  stats_end(m, st);
  st->loss = *loss;
  return CG_OK;
}

int rt_model_step(struct rt_model *m, uint32_t epoch, struct rt_step_stats *st) {
  struct rt_step_stats local;
  if (!st) st = &local;
  double loss = 0.0;
  TRY(rt_model_loss_grad(m, epoch, 1, &loss, st));
  m->t_step++;
  struct cg_adam_params ap;
  ap.lr = m->cfg.lr;
  ap.beta1 = m->cfg.beta1;
  ap.beta2 = m->cfg.beta2;
  ap.eps = m->cfg.adam_eps;
  ap.decoupled = m->cfg.optimizer == RT_OPT_ADAMW;
  /* One call per tensor: weight decay differs between tensors (weights vs biases and
   * LayerNorm; first layer only with RT_WD_FIRST). */
  for (int i = 0; i < m->ntensors; i++) {
    const struct rt_tensor_info *t = &m->tensors[i];
    ap.weight_decay = t->decay ? m->cfg.weight_decay : 0.0f;
    m->be->adam(m->be, m->p + t->offset, m->g + t->offset, m->m1 + t->offset, m->m2 + t->offset,
                t->count, &ap, m->t_step);
  }
  return CG_OK;
}

int rt_model_evaluate(struct rt_model *m, struct rt_eval *ev, struct rt_step_stats *st) {
  struct rt_step_stats local;
  if (!st) st = &local;
  stats_begin(m, st);
  struct cg_backend *be = m->be;
  TRY(forward(m, 0, 0, st));
  const struct rt_layer *last = &m->layers[m->nlayers - 1];
  const int ml = m->loc->multilabel;
  double v[11];
  for (int s = 0; s < 3; s++) {
    int64_t c[3] = {0, 0, 0};
    be->eval_counts(be, last->z, m->n_in, m->classes, ml ? NULL : m->d_labels,
                    ml ? m->d_mlabels : NULL, m->d_idx[s], m->n_idx[s], c);
    v[3 * s + 0] = (double)c[0];
    v[3 * s + 1] = (double)c[1];
    v[3 * s + 2] = (double)c[2];
  }
  /* Train and validation losses (unscaled sums; dlogits goes to scratch and is unused). */
  for (int s = 0; s < 2; s++) {
    double sum = 0.0;
    if (ml)
      be->bce(be, last->z, m->n_in, m->classes, m->d_mlabels, m->d_idx[s], m->n_idx[s], 1.0f,
              m->scratch[0], &sum);
    else
      be->xent(be, last->z, m->n_in, m->classes, m->d_labels, m->d_idx[s], m->n_idx[s], 1.0f,
               m->scratch[0], &sum);
    v[9 + s] = sum;
  }
  TRY(model_reduce_host(m, v, 11, st));
  double acc[3];
  for (int s = 0; s < 3; s++) {
    if (ml) {
      double tp = v[3 * s], fp = v[3 * s + 1], fn = v[3 * s + 2];
      acc[s] = (2.0 * tp + fp + fn) > 0.0 ? 2.0 * tp / (2.0 * tp + fp + fn)
                                          : (m->n_split_global[s] > 0 ? 1.0 : NAN);
    } else {
      acc[s] = m->n_split_global[s] > 0 ? v[3 * s] / (double)m->n_split_global[s] : NAN;
    }
  }
  ev->train_acc = acc[0];
  ev->val_acc = acc[1];
  ev->test_acc = acc[2];
  const double per = ml ? (double)m->classes : 1.0;
  ev->train_loss = m->n_split_global[0] > 0 ? v[9] / ((double)m->n_split_global[0] * per) : NAN;
  ev->val_loss = m->n_split_global[1] > 0 ? v[10] / ((double)m->n_split_global[1] * per) : NAN;
  stats_end(m, st);
  return CG_OK;
}
