/* runtime/model_gat.c — GAT (Veličković et al., ICLR 2018): layout, buffers, forward
 * and backward, behind the same op table (core/ops.h, "graph attention") and the same
 * exchange seam as GCN and SAGE (runtime/model.c places the exchanges).
 *
 * Layer l with H heads of F values (hidden layers: H = --heads, F = --hidden, outputs
 * concatenated, H*F wide; the output layer: H = --out-heads, F = classes, averaged):
 *   Hd  = dropout(in)                          (feature dropout, keyed by global id)
 *   T   = [Hd W | el]                          [rows x (H*F + H)], el[u,h] = a_src[h]·(HdW)[u,h]
 *   er[v,h] = a_dst[h]·(HdW)[v,h]              [n_in x H]
 *   s   = LeakyReLU_0.2(el[u] + er[v])         per in-edge (u -> v) of A + I  [nnz x H]
 *   α   = softmax of s over v's in-edges       (stable: the row maximum subtracted)
 *   αd  = dropout(α)                           (attention dropout, keyed by the global
 *                                               (source, destination) pair, core/attn.h)
 *   Y[v, h] = sum over u of αd[u->v, h] (HdW)[u, h]
 *   z   = Y (concatenated) or the mean over heads (Y M, M = [I; ...; I] / H), + bias
 *   next layer's in = ELU(z) (hidden layers)
 * Parameters per layer: convL.weight [fin x H*F], convL.att_src and convL.att_dst
 * [H x F] (Glorot, decayed like the weights), convL.bias [1 x out] (not decayed).
 * The per-head products a·(HdW) and their gradients are GEMMs on column slices of T
 * (one per head), so they need no op of their own.
 *
 * Partitions (ARCHITECTURE.md, exactness contract). v's softmax needs only v's
 * in-edges, all on v's owner: what a rank needs of a halo vertex u is its row of T,
 * (HdW)[u] and el[u], exchanged as one halo row (H*F + H values) like any other:
 *   layer 0  all n_tot rows of T are computed here (the features' halo rows arrived at
 *            set-up; sparse features, m->xs_on: T = Xd·W is csr_mm, the weight
 *            gradient csr_mm_t, X's halo rows were read with the inner ones), no exchange, and the halo rows' gradients stay here: they enter
 *            the weight gradients over n_tot rows, which the all-reduce sums (each
 *            edge counted on its destination's owner only);
 *   l > 0    T's inner rows are computed, its halo rows exchanged (forward); backward,
 *            the gradient of T (w.r.t. HdW and el) over n_tot rows, the halo rows
 *            returned to their owners, which add them to their own before the weight
 *            gradients and dHd are formed from inner rows.
 * Between begin and end of an exchange only er (forward) and the gradient of a_dst
 * (backward) are computed: they read T's inner rows and write other buffers.
 *
 * Buffers (rt_gat_buffers; nothing is allocated in a step):
 *   per layer  in [rows x fin] (rows = n_tot for layer 0, n_in after), in_d (feature
 *              dropout), g_t [n_tot x (H*F + H)], g_er [n_in x H], g_s, g_alpha,
 *              g_alpha_d [nnz x H], z [n_in x out], g_y [n_in x H*F] (averaged output)
 *   model      edges (A + I's in-edges of the inner rows, and their transpose), g_dt
 *              [n_tot x widest T row], g_der [n_in x H], g_e1, g_e2 [nnz x H], g_dy,
 *              g_mean [H*C x C] (averaged output), scratch[3] (dz, dHd). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/attn.h"
#include "core/exchange.h"
#include "core/log.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

#define GAT_SLOPE 0.2f /* LeakyReLU's negative slope, as in the paper */


/* The output layer averages its heads (when it has several). */
static int layer_mean(const struct rt_layer *L) { return !L->hidden && L->heads > 1; }

int rt_gat_layout(struct rt_model *m, const struct rt_local *loc, const struct rt_config *cfg) {
  m->wmax = m->classes;
  for (int l = 0; l < m->nlayers; l++) {
    struct rt_layer *L = &m->layers[l];
    L->hidden = l < m->nlayers - 1;
    L->heads = L->hidden ? cfg->heads : cfg->out_heads;
    L->fhead = L->hidden ? cfg->hidden : m->classes;
    L->fin = l == 0 ? loc->feat_dim : (int64_t)cfg->heads * cfg->hidden;
    L->fout = L->hidden ? L->heads * L->fhead : m->classes;
    L->transform_first = 0;
    L->agg_cached = 0;
    L->p_drop = rt_config_layer_dropout(cfg, l);
    L->p_att = rt_config_attn_dropout(cfg);
    if (L->fout > m->wmax) m->wmax = L->fout;
    if (l > 0 && L->fin > m->wmax) m->wmax = L->fin;
    const int decay = cfg->weight_decay > 0.0f && (cfg->wd_scope == RT_WD_ALL || l == 0);
    char name[32];
    snprintf(name, sizeof name, "conv%d.weight", l);
    TRY(rt_model_add_tensor(m, name, RT_TENSOR_WEIGHT, l, L->fin, L->heads * L->fhead, decay, &L->off_w));
    snprintf(name, sizeof name, "conv%d.att_src", l);
    TRY(rt_model_add_tensor(m, name, RT_TENSOR_WEIGHT, l, L->heads, L->fhead, decay, &L->off_al));
    snprintf(name, sizeof name, "conv%d.att_dst", l);
    TRY(rt_model_add_tensor(m, name, RT_TENSOR_WEIGHT, l, L->heads, L->fhead, decay, &L->off_ar));
    snprintf(name, sizeof name, "conv%d.bias", l);
    TRY(rt_model_add_tensor(m, name, RT_TENSOR_BIAS, l, 1, L->fout, 0, &L->off_b));
    L->off_ws = L->off_g = L->off_beta = -1;
  }
  return CG_OK;
}

static int alloc_f(struct rt_model *m, float **p, int64_t nfloat, const char *what) {
  void *q = NULL;
  TRY(m->be->alloc(m->be, &q, (size_t)(nfloat > 0 ? nfloat : 1) * sizeof(float), what));
  *p = q;
  return CG_OK;
}

int rt_gat_buffers(struct rt_model *m, const struct rt_local *loc) {
  struct cg_backend *be = m->be;
  const int64_t n_in = m->n_in, n_tot = m->n_tot;
  TRY(cg_edges_upload(be, &loc->agg, &m->edges));
  const int64_t nnz = m->edges.nnz;
  int64_t ldt_max = 1, h_max = 1, wide_mean = 0;
  for (int l = 0; l < m->nlayers; l++) {
    struct rt_layer *L = &m->layers[l];
    const int64_t H = L->heads, W = H * L->fhead, ldt = W + H, rows = l == 0 ? n_tot : n_in;
    if (l > 0 || !m->xs_on) { /* sparse features: uploaded as CSR (model_build.c) */
      TRY(alloc_f(m, &L->in, rows * L->fin, l == 0 ? "input features" : "layer input"));
      if (L->p_drop > 0.0f) TRY(alloc_f(m, &L->in_d, rows * L->fin, "dropout output"));
    }
    TRY(alloc_f(m, &L->g_t, n_tot * ldt, "GAT transformed rows and source terms"));
    TRY(alloc_f(m, &L->g_er, n_in * H, "GAT destination terms"));
    TRY(alloc_f(m, &L->g_s, nnz * H, "GAT edge scores"));
    TRY(alloc_f(m, &L->g_alpha, nnz * H, "GAT attention coefficients"));
    if (L->p_att > 0.0f) TRY(alloc_f(m, &L->g_alpha_d, nnz * H, "GAT attention dropout output"));
    TRY(alloc_f(m, &L->z, n_in * L->fout, "convolution output"));
    if (layer_mean(L)) {
      TRY(alloc_f(m, &L->g_y, n_in * W, "GAT heads before their mean"));
      wide_mean = W;
    }
    be->fill(be, L->g_t, n_tot * ldt, 0.0f);
    if (l > 0) be->fill(be, L->in, rows * L->fin, 0.0f);
    if (ldt > ldt_max) ldt_max = ldt;
    if (H > h_max) h_max = H;
  }
  TRY(alloc_f(m, &m->g_dt, n_tot * ldt_max, "GAT gradient of the transformed rows"));
  TRY(alloc_f(m, &m->g_der, n_in * h_max, "GAT gradient of the destination terms"));
  TRY(alloc_f(m, &m->g_e1, nnz * h_max, "GAT per-edge gradient"));
  TRY(alloc_f(m, &m->g_e2, nnz * h_max, "GAT per-edge gradient"));
  if (wide_mean > 0) {
    const struct rt_layer *L = &m->layers[m->nlayers - 1];
    const int64_t C = m->classes, H = L->heads;
    TRY(alloc_f(m, &m->g_dy, n_in * wide_mean, "GAT gradient of the heads"));
    TRY(alloc_f(m, &m->g_mean, H * C * C, "GAT mean over heads"));
    float *host = cg_calloc((size_t)(H * C * C), sizeof(float), "GAT mean over heads");
    if (!host) return CG_ERR_NOMEM;
    for (int64_t h = 0; h < H; h++)
      for (int64_t c = 0; c < C; c++) host[(h * C + c) * C + c] = 1.0f / (float)H;
    const int st = be->upload(be, m->g_mean, host, (size_t)(H * C * C) * sizeof(float));
    cg_free(host);
    TRY(st);
  }
  for (int s = 0; s < 3; s++) TRY(alloc_f(m, &m->scratch[s], n_tot * m->wmax, "backward scratch"));
  return CG_OK;
}

void rt_gat_free(struct rt_model *m) {
  struct cg_backend *be = m->be;
  if (!be) return;
  if (m->layers)
    for (int l = 0; l < m->nlayers; l++) {
      struct rt_layer *L = &m->layers[l];
      float **bufs[6] = {&L->g_t, &L->g_er, &L->g_s, &L->g_alpha, &L->g_alpha_d, &L->g_y};
      for (int i = 0; i < 6; i++) {
        be->free(be, *bufs[i]);
        *bufs[i] = NULL;
      }
    }
  float **bufs[6] = {&m->g_dt, &m->g_der, &m->g_e1, &m->g_e2, &m->g_dy, &m->g_mean};
  for (int i = 0; i < 6; i++) {
    be->free(be, *bufs[i]);
    *bufs[i] = NULL;
  }
  cg_edges_free(be, &m->edges);
}

static struct cg_dropout_key gat_key(const struct rt_model *m, uint32_t epoch, int layer) {
  struct cg_dropout_key k;
  k.seed = m->cfg.seed;
  k.epoch = epoch;
  k.layer = (uint32_t)layer;
  return k;
}

/* out[r, h] = a[h] · x[r, h*F : (h+1)*F] for r < rows (a GEMM per head). */
static void head_dots(struct cg_backend *be, int64_t rows, int64_t H, int64_t F, const float *x,
                      int64_t ldx, const float *a, float *out, int64_t ldo) {
  for (int64_t h = 0; h < H; h++)
    be->gemm(be, 0, 0, rows, 1, F, 1.0f, x + h * F, ldx, a + h * F, 1, 0.0f, out + h, ldo);
}

int rt_gat_forward(struct rt_model *m, uint32_t epoch, int train, struct rt_step_stats *st) {
  struct cg_backend *be = m->be;
  const int64_t n_in = m->n_in, n_tot = m->n_tot;
  m->last_fwd_train = train;
  m->last_fwd_epoch = epoch;
  for (int l = 0; l < m->nlayers; l++) {
    struct rt_layer *L = &m->layers[l];
    const int64_t H = L->heads, F = L->fhead, W = H * F, ldt = W + H, fin = L->fin;
    const int64_t rows = l == 0 ? n_tot : n_in; /* layer 0: the halo rows are local */
    const struct cg_dropout_key key = gat_key(m, epoch, l);
    const float *p = m->p;
    const float *hd = L->in;
    if (l == 0 && m->xs_on) { /* sparse features: T = Xd W as a sparse product */
      const float *xv = m->xs_vals;
      if (train && L->p_drop > 0.0f) {
        be->csr_dropout(be, &m->xs, m->xs_vals, m->xs_vals_d, m->d_gid, L->p_drop, key);
        xv = m->xs_vals_d;
      }
      be->csr_mm(be, &m->xs, xv, W, p + L->off_w, W, L->g_t, ldt);
    } else {
      if (train && L->p_drop > 0.0f) {
        be->dropout(be, L->in, L->in_d, rows, fin, m->d_gid, L->p_drop, key);
        hd = L->in_d;
      }
      be->gemm(be, 0, 0, rows, W, fin, 1.0f, hd, fin, p + L->off_w, W, 0.0f, L->g_t, ldt);
    }
    head_dots(be, rows, H, F, L->g_t, ldt, p + L->off_al, L->g_t + W, ldt); /* el, sent with T */
    if (l > 0) TRY(rt_model_halo_begin(m, CG_HALO_FORWARD, l, epoch, train, L->g_t, ldt, st));
    head_dots(be, n_in, H, F, L->g_t, ldt, p + L->off_ar, L->g_er, H);
    if (l > 0) {
      TRY(rt_model_poll(m, st));
      TRY(rt_model_halo_end(m, st));
    }
    be->edge_scores(be, &m->edges, L->g_t + W, ldt, L->g_er, H, H, GAT_SLOPE, L->g_s);
    be->edge_softmax(be, &m->edges, L->g_s, H, L->g_alpha);
    const float *alpha = L->g_alpha;
    if (train && L->p_att > 0.0f) {
      be->edge_dropout(be, &m->edges, L->g_alpha, L->g_alpha_d, H, m->d_gid, L->p_att, key);
      alpha = L->g_alpha_d;
    }
    if (layer_mean(L)) {
      be->spmm_edge(be, &m->edges, alpha, H, F, L->g_t, ldt, L->g_y, W);
      be->gemm(be, 0, 0, n_in, F, W, 1.0f, L->g_y, W, m->g_mean, F, 0.0f, L->z, F);
    } else {
      be->spmm_edge(be, &m->edges, alpha, H, F, L->g_t, ldt, L->z, W);
    }
    be->bias_add(be, L->z, p + L->off_b, n_in, L->fout);
    if (L->hidden) be->elu_fwd(be, L->z, m->layers[l + 1].in, n_in * L->fout);
  }
  return CG_OK;
}

int rt_gat_backward(struct rt_model *m, struct rt_step_stats *st) {
  struct cg_backend *be = m->be;
  const int64_t n_in = m->n_in, n_tot = m->n_tot;
  const int train = m->last_fwd_train;
  const uint32_t epoch = m->last_fwd_epoch;
  float *dz = m->scratch[0]; /* dlogits from the loss */
  for (int l = m->nlayers - 1; l >= 0; l--) {
    struct rt_layer *L = &m->layers[l];
    const int64_t H = L->heads, F = L->fhead, W = H * F, ldt = W + H, fin = L->fin;
    const int64_t rows = l == 0 ? n_tot : n_in;
    const struct cg_dropout_key key = gat_key(m, epoch, l);
    const float *p = m->p;
    float *g = m->g, *dt = m->g_dt, *del = m->g_dt + W;
    const float *hd = (train && L->p_drop > 0.0f) ? L->in_d : L->in;
    const int att_drop = train && L->p_att > 0.0f;
    const float *alpha = att_drop ? L->g_alpha_d : L->g_alpha;

    be->bias_grad(be, dz, n_in, L->fout, g + L->off_b);
    const float *dy = dz;
    if (layer_mean(L)) {
      be->gemm(be, 0, 1, n_in, W, F, 1.0f, dz, F, m->g_mean, F, 0.0f, m->g_dy, W);
      dy = m->g_dy;
    }
    /* through the aggregation: the coefficients' gradient and T's (HdW part, n_tot rows) */
    be->spmm_edge_bwd_alpha(be, &m->edges, H, F, L->g_t, ldt, dy, W, m->g_e1);
    be->spmm_edge_bwd_x(be, &m->edges, alpha, H, F, dy, W, dt, ldt);
    if (att_drop) be->edge_dropout(be, &m->edges, m->g_e1, m->g_e1, H, m->d_gid, L->p_att, key);
    be->edge_softmax_bwd(be, &m->edges, L->g_alpha, m->g_e1, H, m->g_e2);
    be->edge_scores_bwd(be, &m->edges, L->g_s, m->g_e2, H, GAT_SLOPE, del, ldt, m->g_der, H);
    /* l > 0: T's halo rows (HdW and el) go back to their owners */
    if (l > 0) TRY(rt_model_halo_begin(m, CG_HALO_BACKWARD, l, epoch, train, dt, ldt, st));
    for (int64_t h = 0; h < H; h++) /* d a_dst: inner rows only (er has no halo rows) */
      be->gemm(be, 1, 0, F, 1, n_in, 1.0f, L->g_t + h * F, ldt, m->g_der + h, H, 0.0f,
               g + L->off_ar + h * F, 1);
    if (l > 0) {
      TRY(rt_model_poll(m, st));
      TRY(rt_model_halo_end(m, st)); /* inner rows of dT now hold every rank's share */
    }
    for (int64_t h = 0; h < H; h++) {
      /* d a_src, then dHdW += del a_src + der a_dst (per head) */
      be->gemm(be, 1, 0, F, 1, rows, 1.0f, L->g_t + h * F, ldt, del + h, ldt, 0.0f,
               g + L->off_al + h * F, 1);
      be->gemm(be, 0, 0, rows, F, 1, 1.0f, del + h, ldt, p + L->off_al + h * F, F, 1.0f, dt + h * F, ldt);
      be->gemm(be, 0, 0, n_in, F, 1, 1.0f, m->g_der + h, H, p + L->off_ar + h * F, F, 1.0f, dt + h * F,
               ldt);
    }
    if (l == 0 && m->xs_on)
      be->csr_mm_t(be, &m->xs, (train && L->p_drop > 0.0f) ? m->xs_vals_d : m->xs_vals, W, dt, ldt,
                   g + L->off_w, W);
    else
      be->gemm(be, 1, 0, fin, W, rows, 1.0f, hd, fin, dt, ldt, 0.0f, g + L->off_w, W);
    if (l == 0) break; /* no gradient w.r.t. the input features */
    float *dhd = dz == m->scratch[1] ? m->scratch[2] : m->scratch[1];
    be->gemm(be, 0, 1, n_in, fin, W, 1.0f, dt, ldt, p + L->off_w, W, 0.0f, dhd, fin);
    if (train && L->p_drop > 0.0f) be->dropout(be, dhd, dhd, n_in, fin, m->d_gid, L->p_drop, key);
    be->elu_bwd(be, L->in, dhd, n_in * fin); /* L->in is the previous layer's ELU output */
    dz = dhd;
  }
  return CG_OK;
}
