/* runtime/model_build.c — building the model: the parameter layout, the initial
 * values, the operators Â and Âᵀ, the index arrays and every buffer the steps use,
 * and the layout and state accessors. Everything the model allocates on the backend
 * is allocated here, so that a training step allocates nothing; the step itself
 * (and what the buffers hold) is runtime/model.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/attn.h"
#include "core/exchange.h"
#include "core/log.h"
#include "core/philox.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

/* ---- helpers ------------------------------------------------------------------ */

int rt_model_add_tensor(struct rt_model *m, const char *name, enum rt_tensor_kind kind, int layer,
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

/* ---- the parts of the model, in the order they are built ---------------------- */

/* Layers and the parameter layout: per layer W_neigh, [W_self], b, [gamma, beta];
 * m->wmax, the widest gradient the backward scratch buffers hold. */
static int model_layout(struct rt_model *m, const struct rt_local *loc, const struct rt_config *cfg) {
  m->layers = cg_calloc((size_t)m->nlayers, sizeof *m->layers, "model layers");
  if (!m->layers) return CG_ERR_NOMEM;
  m->l0x = rt_layer0_exchange_choose(cfg, loc->feat_dim, loc->num_classes, loc->feat_sparse,
                                     rt_local_exchanges(loc), NULL);
  m->l0_rows = m->l0x ? m->n_in : m->n_tot;
  if (cfg->model == RT_MODEL_GAT) return rt_gat_layout(m, loc, cfg); /* model_gat.c */
  m->wmax = m->classes;
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
    /* Sparse features: X·W is the sparse product (Â·X would be sparse times sparse), then
     * the aggregation at width fout, every step (cheap: nnz x fout). */
    if (l == 0 && loc->feat_sparse) {
      L->transform_first = 1;
      L->agg_cached = 0;
    }
    /* --layer0-halo exchange: T = Xd·W on the inner rows, exchanged like a hidden
     * layer's (whatever the widths; the cached Â·X would need the halo rows of X) */
    if (l == 0 && m->l0x) {
      L->transform_first = 1;
      L->agg_cached = 0;
    }
    if (L->fout > m->wmax) m->wmax = L->fout;
    if (l > 0 && L->fin > m->wmax) m->wmax = L->fin;
    const int decay = cfg->weight_decay > 0.0f && (cfg->wd_scope == RT_WD_ALL || l == 0);
    char name[32];
    snprintf(name, sizeof name, "conv%d.weight", l);
    TRY(rt_model_add_tensor(m, name, RT_TENSOR_WEIGHT, l, L->fin, L->fout, decay, &L->off_w));
    L->off_ws = -1;
    if (cfg->model == RT_MODEL_SAGE) {
      snprintf(name, sizeof name, "conv%d.weight_self", l);
      TRY(rt_model_add_tensor(m, name, RT_TENSOR_WEIGHT, l, L->fin, L->fout, decay, &L->off_ws));
    }
    snprintf(name, sizeof name, "conv%d.bias", l);
    TRY(rt_model_add_tensor(m, name, RT_TENSOR_BIAS, l, 1, L->fout, 0, &L->off_b));
    L->off_g = L->off_beta = -1;
    if (L->hidden && cfg->layernorm) {
      snprintf(name, sizeof name, "norm%d.weight", l);
      TRY(rt_model_add_tensor(m, name, RT_TENSOR_NORM_GAIN, l, 1, L->fout, 0, &L->off_g));
      snprintf(name, sizeof name, "norm%d.bias", l);
      TRY(rt_model_add_tensor(m, name, RT_TENSOR_NORM_BIAS, l, 1, L->fout, 0, &L->off_beta));
    }
  }
  return CG_OK;
}

int rt_model_count_params(const struct rt_local *loc, const struct rt_config *cfg, int64_t *n) {
  struct rt_model m;
  memset(&m, 0, sizeof m);
  m.nlayers = cfg->layers;
  m.classes = loc->num_classes;
  const int st = model_layout(&m, loc, cfg); /* the layout the model will have, no buffers */
  cg_free(m.layers);
  *n = m.nparams;
  return st;
}

/* Parameters, gradient and Adam state; initial values by tensor kind: weight matrices
 * Glorot uniform (keyed by the seed and the tensor's number), LayerNorm gains 1,
 * biases 0. */
static int model_params(struct rt_model *m, uint64_t seed) {
  int st = CG_OK;
  struct cg_backend *be = m->be;
  float *host = NULL;
  /* Four copies on the backend, every byte written before the first step: held to its
   * free memory first. Layer 0 has feat_dim rows, which a sparse file does not bound
   * (< 2^31): past what the host has, the fills would get the process killed. */
  size_t free_b = 0, total_b = 0;
  const double need = 4.0 * (double)m->nparams * sizeof(float);
  if (be->mem_info && be->mem_info(be, &free_b, &total_b) == CG_OK) {
    if (need > (double)free_b)
      return cg_err_set(CG_ERR_NOMEM, "model for graph %s: %lld parameters (layer 0: %lld features x %lld) take "
                        "%.3g GB with their gradients and Adam's two moments, more than the %.3g GB free on the %s "
                        "backend (fewer features, or a smaller --hidden)", m->loc->name, (long long)m->nparams,
                        (long long)m->layers[0].fin, (long long)m->layers[0].fout, need / 1e9,
                        (double)free_b / 1e9, rt_backend_describe(be));
  } else {
    cg_err_clear();
  }
  TRY(be_alloc(m, &m->p, m->nparams, "model parameters"));
  TRY(be_alloc(m, &m->g, m->nparams, "flat gradient buffer"));
  TRY(be_alloc(m, &m->m1, m->nparams, "Adam first moment"));
  TRY(be_alloc(m, &m->m2, m->nparams, "Adam second moment"));
  be->fill(be, m->g, m->nparams, 0.0f);
  be->fill(be, m->m1, m->nparams, 0.0f);
  be->fill(be, m->m2, m->nparams, 0.0f);
  host = cg_calloc((size_t)m->nparams, sizeof(float), "parameter initialisation");
  if (!host) return CG_ERR_NOMEM;
  for (int i = 0; i < m->ntensors; i++) {
    const struct rt_tensor_info *t = &m->tensors[i];
    float *w = host + t->offset;
    switch (t->kind) {
      case RT_TENSOR_WEIGHT: init_glorot(w, t->rows, t->cols, seed, (uint32_t)i); break;
      case RT_TENSOR_NORM_GAIN:
        for (int64_t k = 0; k < t->count; k++) w[k] = 1.0f;
        break;
      case RT_TENSOR_BIAS:
      case RT_TENSOR_NORM_BIAS: break; /* stay 0 (calloc) */
    }
  }
  TRY_GOTO(be->upload(be, m->p, host, (size_t)m->nparams * sizeof(float)), done);
done:
  cg_free(host);
  return st;
}

/* Â and Âᵀ on the backend: whole for a single process, split into inner and halo
 * parts when the model exchanges halo rows (model_agg.c), with a halo-part buffer as
 * wide as the widest aggregation of a step. */
static int model_operators(struct rt_model *m, const struct rt_local *loc) {
  if (m->cfg.model == RT_MODEL_GAT) return CG_OK; /* attention: its edges (rt_gat_buffers) */
  int64_t hwidth = 1;
  for (int l = 0; l < m->nlayers; l++) {
    const struct rt_layer *L = &m->layers[l];
    const int64_t w = L->agg_cached ? 0 : L->transform_first ? L->fout : L->fin;
    if (w > hwidth) hwidth = w;
  }
  return rt_agg_build(m->be, loc, rt_local_exchanges(loc), hwidth, &m->agg);
}

/* Global ids (dropout keys), labels, and the inner rows of each split. */
static int model_index_arrays(struct rt_model *m, const struct rt_local *loc) {
  int st = CG_OK;
  struct cg_backend *be = m->be;
  void *q = NULL;
  int32_t *idx = NULL;
  TRY(be->alloc(be, &q, (size_t)(m->n_tot > 0 ? m->n_tot : 1) * sizeof(int32_t), "global ids"));
  m->d_gid = q;
  if (m->n_tot > 0) TRY(be->upload(be, m->d_gid, loc->gid, (size_t)m->n_tot * sizeof(int32_t)));
  if (loc->multilabel) {
    size_t bytes = (size_t)m->n_in * (size_t)m->classes;
    TRY(be->alloc(be, &q, bytes ? bytes : 1, "multi-label targets"));
    m->d_mlabels = q;
    if (bytes) TRY(be->upload(be, m->d_mlabels, loc->mlabels, bytes));
  } else {
    size_t bytes = (size_t)m->n_in * sizeof(int32_t);
    TRY(be->alloc(be, &q, bytes ? bytes : 4, "labels"));
    m->d_labels = q;
    if (bytes) TRY(be->upload(be, m->d_labels, loc->labels, bytes));
  }
  idx = cg_malloc((size_t)(m->n_in > 0 ? m->n_in : 1) * sizeof(int32_t), "split index");
  if (!idx) return CG_ERR_NOMEM;
  static const enum graph_split which[3] = {GRAPH_SPLIT_TRAIN, GRAPH_SPLIT_VAL, GRAPH_SPLIT_TEST};
  m->n_split_global[0] = loc->n_train_global;
  m->n_split_global[1] = loc->n_val_global;
  m->n_split_global[2] = loc->n_test_global;
  for (int s = 0; s < 3; s++) {
    int64_t k = 0;
    for (int64_t i = 0; i < m->n_in; i++)
      if (loc->split[i] == which[s]) idx[k++] = (int32_t)i;
    m->n_idx[s] = k;
    TRY_GOTO(be->alloc(be, &q, (size_t)(k > 0 ? k : 1) * sizeof(int32_t), "split index"), done);
    m->d_idx[s] = q;
    if (k) TRY_GOTO(be->upload(be, m->d_idx[s], idx, (size_t)k * sizeof(int32_t)), done);
  }
done:
  cg_free(idx);
  return st;
}

/* Activations, saved tensors and the backward scratch buffers (shapes: model.c). */
static int model_buffers(struct rt_model *m) {
  struct cg_backend *be = m->be;
  if (m->cfg.model == RT_MODEL_GAT) return rt_gat_buffers(m, m->loc); /* model_gat.c */
  for (int l = 0; l < m->nlayers; l++) {
    struct rt_layer *L = &m->layers[l];
    if (l > 0 || !m->xs_on) { /* sparse features: model_features uploads them as CSR */
      const int64_t rows = l == 0 ? m->l0_rows : m->n_tot;
      TRY(be_alloc(m, &L->in, rows * L->fin, l == 0 ? "input features" : "layer input"));
      if (L->p_drop > 0.0f) TRY(be_alloc(m, &L->in_d, rows * L->fin, "dropout output"));
    }
    if (L->transform_first) TRY(be_alloc(m, &L->t, m->n_tot * L->fout, "transformed rows"));
    else TRY(be_alloc(m, &L->agg, m->n_in * L->fin, "aggregated rows"));
    TRY(be_alloc(m, &L->z, m->n_in * L->fout, "convolution output"));
    if (L->hidden && m->cfg.layernorm) {
      TRY(be_alloc(m, &L->ln_y, m->n_in * L->fout, "LayerNorm output"));
      TRY(be_alloc(m, &L->ln_mean, m->n_in, "LayerNorm mean"));
      TRY(be_alloc(m, &L->ln_rstd, m->n_in, "LayerNorm rstd"));
    }
    if (l > 0) be->fill(be, L->in, m->n_tot * L->fin, 0.0f);
  }
  for (int s = 0; s < 3; s++) TRY(be_alloc(m, &m->scratch[s], m->n_tot * m->wmax, "backward scratch"));
  return CG_OK;
}

/* The identity operator of n rows, pattern only (every value 1); NULL when n is 0. */
static int identity_create(struct cg_backend *be, int64_t n, struct cg_spmat **out) {
  *out = NULL;
  if (n == 0) return CG_OK;
  struct cg_csr h;
  TRY(cg_csr_alloc(&h, n, n, n, 0));
  for (int64_t i = 0; i < n; i++) {
    h.rowptr[i + 1] = i + 1;
    h.colidx[i] = (int32_t)i;
  }
  const int st = be->spmat_create(be, &h, out);
  cg_csr_free(&h);
  return st;
}

/* The halo rows of the features from their owners (set-up, not timed; they never change
 * during training): one forward exchange of layer 0's input when the features are at
 * most rt_config_feature_cols wide, else one per slice of that many columns, so that
 * the exchange is sized for the training's rows, not the features (runtime.h). A slice
 * moves through a buffer of n_tot x w: the inner rows' columns packed into it, its
 * halo rows exchanged, then copied into the features' halo rows. The copies are
 * products with the identity (strided, so they run on any backend, and exact: each
 * value is 0 + x, the same value; only a negative zero comes out positive). */
static int fetch_halo_features(struct rt_model *m, const struct rt_local *loc) {
  struct cg_backend *be = m->be;
  float *x = m->layers[0].in, *buf = NULL;
  const int64_t f = loc->feat_dim, n_in = m->n_in, n_halo = m->n_tot - m->n_in;
  const int64_t w = rt_config_feature_cols(&m->cfg, f, m->classes);
  const struct cg_halo_tag features = {0, 0}; /* layer 0's input, outside training */
  if (w >= f) return cg_exchange_halo(m->ex, CG_HALO_FORWARD, features, x, f);
  int st = CG_OK;
  struct cg_spmat *id_in = NULL, *id_halo = NULL;
  TRY_GOTO(identity_create(be, n_in, &id_in), done);
  TRY_GOTO(identity_create(be, n_halo, &id_halo), done);
  TRY_GOTO(be_alloc(m, &buf, m->n_tot * w, "a slice of the features (set-up)"), done);
  for (int64_t c0 = 0; c0 < f; c0 += w) {
    const int64_t wc = f - c0 < w ? f - c0 : w;
    if (id_in) be->spmm(be, id_in, x + c0, f, buf, wc, wc);
    TRY_GOTO(cg_exchange_halo(m->ex, CG_HALO_FORWARD, features, buf, wc), done);
    be->spmm(be, id_halo, buf + n_in * wc, wc, x + n_in * f + c0, f, wc);
  }
  be->sync(be);
done:
  be->free(be, buf);
  be->spmat_destroy(be, id_in);
  be->spmat_destroy(be, id_halo);
  return st;
}

/* Sparse input features: the CSR of the rows the local problem holds (the inner rows,
 * and with a local layer 0 the halo rows, read with them and never exchanged) uploaded
 * with its transpose. */
static int model_sparse_features(struct rt_model *m, const struct rt_local *loc) {
  struct cg_backend *be = m->be;
  const struct cg_csr *x = &loc->feat_csr;
  struct cg_csr inner;
  memset(&inner, 0, sizeof inner);
  if (m->l0x && m->n_in < x->nrows) { /* layer 0 exchanged: the inner rows alone */
    TRY(cg_csr_slice(x, 0, m->n_in, 0, x->ncols, &inner));
    x = &inner;
  }
  if (x->nrows < m->l0_rows && !m->l0x)
    return cg_err_set(CG_ERR_INTERNAL, "sparse input features of %lld rows, but a local layer 0 needs the %lld inner "
                      "and halo rows", (long long)x->nrows, (long long)m->l0_rows);
  int st = cg_edges_upload(be, x, &m->xs);
  const int64_t nnz = x->nnz;
  if (st == CG_OK) st = be_alloc(m, &m->xs_vals, nnz, "sparse input feature values");
  if (st == CG_OK && nnz > 0) st = be->upload(be, m->xs_vals, x->vals, (size_t)nnz * sizeof(float));
  if (st == CG_OK && m->layers[0].p_drop > 0.0f) st = be_alloc(m, &m->xs_vals_d, nnz, "sparse input feature dropout");
  if (st == CG_OK && m->n_in == x->nrows) m->xs_in = m->xs;
  be->sync(be);
  const int64_t log_rows = x->nrows;
  cg_csr_free(&inner);
  TRY(st);
  if (m->n_in == log_rows) {
    LOG_DEBUG("train", "sparse input features: the %lld inner rows, %lld stored values (layer 0 %s)",
              (long long)log_rows, (long long)nnz, m->l0x ? "exchanged: no halo feature row kept" : "local");
    return CG_OK;
  }
  x = &loc->feat_csr;
  { /* the inner rows alone, with their own transpose (SAGE's self term) */
    struct cg_csr in;
    TRY(cg_csr_slice(x, 0, m->n_in, 0, x->ncols, &in));
    const int st_in = cg_edges_upload(be, &in, &m->xs_in);
    cg_csr_free(&in);
    m->xs_in_own = 1;
    TRY(st_in);
  }
  be->sync(be);
  LOG_DEBUG("train", "sparse input features: %lld x %lld, %lld stored values (%lld bytes on the backend with the "
            "transpose; dense: %lld)", (long long)x->nrows, (long long)x->ncols, (long long)nnz,
            (long long)(nnz * (4 + 4 + 4 + 8 + (m->xs_vals_d ? 4 : 0)) + (x->nrows + x->ncols + 2) * 8),
            (long long)(x->nrows * x->ncols * 4));
  return CG_OK;
}

/* Features: inner rows (and halo rows when given) uploaded; otherwise the halo rows
 * come from their owners (fetch_halo_features). Then layer 0's cached Â·X when it has
 * one. */
static int model_features(struct rt_model *m, const struct rt_local *loc) {
  struct cg_backend *be = m->be;
  struct rt_layer *L0 = &m->layers[0];
  if (m->xs_on) return model_sparse_features(m, loc);
  /* layer 0 exchanged: the inner rows only (the halo rows are never fetched) */
  const int64_t rows = m->l0x ? m->n_in : loc->feat_rows;
  TRY(be->upload(be, L0->in, loc->feat, (size_t)rows * (size_t)loc->feat_dim * sizeof(float)));
  if (rows < m->l0_rows) TRY(fetch_halo_features(m, loc));
  if (L0->agg_cached) {
    const int64_t f = loc->feat_dim;
    float *hbuf = m->agg.hbuf, *tmp = NULL;
    if (m->agg.n_hrows > 0 && f > m->agg.hwidth) { /* wider than any step's: set-up only */
      TRY(be_alloc(m, &tmp, m->agg.n_hrows * f, "halo part of Â·X"));
      hbuf = tmp;
    }
    int st = rt_agg_fwd_inner(be, &m->agg, L0->in, f, L0->agg, NULL, NULL);
    if (st == CG_OK) rt_agg_fwd_halo(be, &m->agg, L0->in, f, L0->agg, hbuf);
    be->sync(be);
    be->free(be, tmp);
    TRY(st);
  }
  be->sync(be);
  return CG_OK;
}

/* ---- create / destroy --------------------------------------------------------------- */

/* What the model needs of its inputs beyond a checked configuration. */
static int model_inputs_check(const struct rt_local *loc, const struct rt_config *cfg,
                              const struct cg_exchange *ex) {
  TRY(rt_local_check(loc, loc->name));
  int self_loops = 0;
  if (loc->norm != rt_model_norm(cfg->model, &self_loops))
    return cg_err_set(CG_ERR_ARG, "local problem of %s was built for another model's aggregation "
                      "operator than %s", loc->name, rt_model_kind_str(cfg->model));
  if (rt_local_exchanges(loc) && !ex)
    return cg_err_set(CG_ERR_ARG, "local problem of %s has halo rows or several ranks but no "
                      "exchange was given", loc->name);
  /* every member is required (core/exchange.h): the steps call them unchecked */
  if (ex && (!ex->halo_begin || !ex->halo_end || !ex->allreduce_grads || !ex->allreduce_host ||
             !ex->counters || !ex->destroy))
    return cg_err_set(CG_ERR_ARG, "the exchange given for %s lacks members of its table (every "
                      "member of struct cg_exchange is required)", loc->name);
  return CG_OK;
}

int rt_model_build(struct cg_backend *be, const struct rt_local *loc, const struct rt_config *cfg,
                   struct cg_exchange *ex, struct rt_model **out) {
  int st = CG_OK;
  *out = NULL;
  TRY(model_inputs_check(loc, cfg, ex));
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
  m->xs_on = loc->feat_sparse;
  TRY_GOTO(model_layout(m, loc, cfg), fail);
  TRY_GOTO(model_params(m, cfg->seed), fail);
  TRY_GOTO(model_operators(m, loc), fail);
  TRY_GOTO(model_index_arrays(m, loc), fail);
  TRY_GOTO(model_buffers(m), fail);
  TRY_GOTO(model_features(m, loc), fail);
  LOG_DEBUG("train", "model %s: %d layers, %lld parameters in %d tensors", rt_model_kind_str(cfg->model),
            m->nlayers, (long long)m->nparams, m->ntensors);
  *out = m;
  return CG_OK;

fail:
  rt_model_destroy(&m);
  return st;
}

int rt_model_create(struct cg_backend *be, const struct rt_local *loc, const struct rt_config *cfg,
                    struct cg_exchange *ex, struct rt_model **out) {
  *out = NULL;
  TRY(rt_config_check(cfg));
  /* (rt_train says it in its own words before it builds the model: train_split_check) */
  if (loc->n_train_global < 1)
    return cg_err_set(CG_ERR_ARG, "rt_model_create: the local problem of graph %s has no train vertices (split "
                      "== 1): rt_model_step's loss is a mean over them", loc->name);
  return rt_model_build(be, loc, cfg, ex, out);
}

void rt_model_destroy(struct rt_model **pm) {
  if (!pm || !*pm) return;
  struct rt_model *m = *pm;
  struct cg_backend *be = m->be;
  rt_gat_free(m); /* before the layers it reads */
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
  if (m->xs_in_own) cg_edges_free(be, &m->xs_in);
  cg_edges_free(be, &m->xs);
  be->free(be, m->xs_vals);
  be->free(be, m->xs_vals_d);
  rt_agg_free(be, &m->agg);
  cg_free(m);
  *pm = NULL;
}

/* ---- layout and state ---------------------------------------------------------------- */

int64_t rt_model_num_params(const struct rt_model *m) { return m->nparams; }
int rt_model_num_tensors(const struct rt_model *m) { return m->ntensors; }

int rt_model_tensor(const struct rt_model *m, int i, struct rt_tensor_info *out) {
  if (i < 0 || i >= m->ntensors)
    return cg_err_set(CG_ERR_ARG, "parameter tensor %d out of range [0, %d)", i, m->ntensors);
  *out = m->tensors[i];
  return CG_OK;
}

int rt_model_layer0_exchanged(const struct rt_model *m) { return m->l0x; }

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

