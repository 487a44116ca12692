/* runtime/local.c — the local problem of one rank: built from the whole graph for
 * a single process, or from a rank's local graph (partition/) for partition-parallel
 * training, with the same layout; checked and released for every producer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "runtime/runtime.h"
#ifdef CAPGNN_HAVE_DIST
#include "runtime/dist.h" /* rt_local_from_part: partition/ is part of the build */
#endif

void rt_local_release_inputs(struct rt_local *l) {
  cg_free(l->feat);
  l->feat = NULL;
  cg_csr_free(&l->agg);
}

void rt_local_free(struct rt_local *l) {
  if (!l) return;
  cg_free(l->gid);
  cg_csr_free(&l->agg);
  cg_free(l->feat);
  cg_csr_free(&l->feat_csr);
  cg_free(l->labels);
  cg_free(l->mlabels);
  cg_free(l->split);
  memset(l, 0, sizeof *l);
}

int rt_graph_trainable(const struct graph *g) {
  if (g->feat_dim < 1)
    return cg_err_set(CG_ERR_ARG, "graph %s has no features (feat_dim = 0); a GNN needs input features",
                      g->name);
  if (g->num_classes < 1)
    return cg_err_set(CG_ERR_ARG, "graph %s: num_classes = %lld, expected >= 1", g->name,
                      (long long)g->num_classes);
  return CG_OK;
}

const char *rt_sparse_features_str(enum rt_sparse_features s) {
  return s == RT_SPARSE_ON ? "on" : s == RT_SPARSE_OFF ? "off" : "auto";
}

int rt_features_choose(const struct graph *g, const struct rt_config *cfg, int log_it, int *sparse) {
  *sparse = 0;
  const double cells = (double)g->n * (double)g->feat_dim;
  const double density = cells > 0 ? (double)g->feat_nnz / cells : 1.0;
  const char *why = NULL;
  switch (cfg->sparse_features) {
    case RT_SPARSE_OFF: why = "--sparse-features off"; break;
    case RT_SPARSE_ON:
      *sparse = 1;
      why = g->sparse_feat ? "--sparse-features on" : "--sparse-features on; the file stores them dense, "
                                                      "layer 0's CSR keeps their nonzeros only";
      break;
    case RT_SPARSE_AUTO:
      if (!g->sparse_feat) why = "auto: the graph stores its features dense";
      else if (density > RT_SPARSE_AUTO_MAX_DENSITY) why = "auto: too dense to pay";
      else {
        *sparse = 1;
        why = "auto: stored sparse";
      }
      break;
  }
  /* (stored dense, feat_nnz counts every cell: the share of nonzeros is not known here) */
  if (log_it && g->sparse_feat)
    LOG_INFO("train", "input features of %s: %s (%lld x %lld, %lld stored, %.3g %% dense; %s)", g->name,
             *sparse ? "sparse, layer 0 multiplies them as CSR" : "dense", (long long)g->n,
             (long long)g->feat_dim, (long long)g->feat_nnz, 100.0 * density, why);
  else if (log_it)
    LOG_INFO("train", "input features of %s: %s (%lld x %lld, stored dense; %s)", g->name,
             *sparse ? "sparse, layer 0 multiplies them as CSR" : "dense", (long long)g->n,
             (long long)g->feat_dim, why);
  return CG_OK;
}

double rt_features_density(const struct graph *g, int sparse) {
  if (!sparse) return 0.0;
  const double cells = (double)g->n * (double)g->feat_dim;
  if (!g->sparse_feat || !(cells > 0)) return 1.0; /* stored dense: priced as if every entry were kept */
  const double d = (double)g->feat_nnz / cells;
  return d > 0 ? d : 1.0 / cells;
}

int rt_local_from_graph(const struct graph *g, enum rt_model_kind kind, struct rt_local *out) {
  return rt_local_from_graph_feat(g, kind, 0, out);
}

int rt_local_from_graph_feat(const struct graph *g, enum rt_model_kind kind, int sparse,
                             struct rt_local *out) {
  int st = CG_OK;
  memset(out, 0, sizeof *out);
  if (g->n < 1 || g->n > INT32_MAX)
    return cg_err_set(CG_ERR_ARG, "graph %s: %lld vertices, expected 1 .. 2^31-1", g->name,
                      (long long)g->n);
  TRY(rt_graph_trainable(g));
  snprintf(out->name, sizeof out->name, "%s", g->name);
  out->rank = 0;
  out->nranks = 1;
  out->n_global = g->n;
  out->m_global = g->m;
  out->graph_checksum = g->checksum;
  out->n_inner = g->n;
  out->n_halo = 0;
  out->feat_dim = g->feat_dim;
  out->feat_rows = g->n;
  out->num_classes = g->num_classes;
  out->multilabel = g->multilabel;

  int self_loops = 0;
  out->norm = rt_model_norm(kind, &self_loops);
  TRY_GOTO(graph_aggr_build(g, out->norm, self_loops, &out->agg), fail);

  st = CG_ERR_NOMEM;
  const size_t n = (size_t)g->n;
  out->gid = cg_malloc(n * sizeof(int32_t), "local global ids");
  if (!out->gid) goto fail;
  for (size_t i = 0; i < n; i++) out->gid[i] = (int32_t)i;

  if (sparse) {
    out->feat_sparse = 1;
    TRY_GOTO(graph_feat_csr(g, NULL, g->n, &out->feat_csr), fail);
    st = CG_ERR_NOMEM;
  } else {
    char what[96];
    snprintf(what, sizeof what, "graph %s", g->name);
    TRY_GOTO(graph_dense_feat_check(what, g->n, g->feat_dim, g->sparse_feat), fail);
    st = CG_ERR_NOMEM;
    out->feat = cg_malloc(n * (size_t)g->feat_dim * sizeof(float), "dense input features");
    if (!out->feat) goto fail;
    graph_feat_dense(g, NULL, g->n, out->feat);
  }

  if (g->multilabel) {
    out->mlabels = cg_malloc(n * (size_t)g->num_classes, "multi-label targets");
    if (!out->mlabels) goto fail;
    memcpy(out->mlabels, g->mlabels, n * (size_t)g->num_classes);
  } else {
    out->labels = cg_malloc(n * sizeof(int32_t), "labels");
    if (!out->labels) goto fail;
    memcpy(out->labels, g->labels, n * sizeof(int32_t));
  }
  out->split = cg_malloc(n, "split");
  if (!out->split) goto fail;
  memcpy(out->split, g->split, n);
  out->n_train_global = graph_split_count(g, GRAPH_SPLIT_TRAIN);
  out->n_val_global = graph_split_count(g, GRAPH_SPLIT_VAL);
  out->n_test_global = graph_split_count(g, GRAPH_SPLIT_TEST);
  TRY_GOTO(rt_local_check(out, g->name), fail);
  return CG_OK;

fail:
  rt_local_free(out);
  return st;
}

#ifdef CAPGNN_HAVE_DIST
/* ---- from a rank's local graph ------------------------------------------------------ */

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

int rt_local_from_part(const struct graph *g, struct part_local *pl, int sparse, int halo_feat,
                       struct rt_local *out) {
  int st = CG_OK;
  int64_t *rows = NULL;
  memset(out, 0, sizeof *out);
  if (pl->n_global != g->n)
    return cg_err_set(CG_ERR_ARG, "local graph of rank %d was built for %lld vertices, graph %s has %lld",
                      pl->rank, (long long)pl->n_global, g->name, (long long)g->n);
  TRY(rt_graph_trainable(g));
  snprintf(out->name, sizeof out->name, "%s", g->name);
  out->rank = pl->rank;
  out->nranks = pl->nparts;
  out->n_global = g->n;
  out->m_global = g->m;
  out->graph_checksum = g->checksum;
  out->n_inner = pl->n_inner;
  out->n_halo = pl->n_halo;
  out->norm = pl->norm;
  out->feat_dim = g->feat_dim;
  out->feat_rows = sparse && halo_feat ? pl->n_inner + pl->n_halo : pl->n_inner;
  out->feat_sparse = sparse;
  out->num_classes = g->num_classes;
  out->multilabel = g->multilabel;
  const size_t ni = (size_t)pl->n_inner, nt = (size_t)(pl->n_inner + pl->n_halo);

  st = CG_ERR_NOMEM;
  out->gid = cg_malloc((nt ? nt : 1) * sizeof(int32_t), "local global ids");
  if (!out->gid) goto fail;
  if (nt) memcpy(out->gid, pl->gid, nt * sizeof(int32_t));

  out->agg = pl->agg; /* moved: no second copy of the operator at the set-up's peak */
  memset(&pl->agg, 0, sizeof pl->agg);

  if (!sparse) { /* (as rt_local_from_graph_feat: a sparse file does not bound feat_dim) */
    char what[96];
    snprintf(what, sizeof what, "graph %s", g->name);
    TRY_GOTO(graph_dense_feat_check(what, (int64_t)ni, g->feat_dim, g->sparse_feat), fail);
  }
  st = CG_ERR_NOMEM;
  rows = cg_malloc((ni ? ni : 1) * sizeof(int64_t), "inner row list");
  if (!sparse) out->feat = cg_malloc((ni ? ni : 1) * (size_t)g->feat_dim * sizeof(float), "inner feature rows");
  out->split = cg_malloc(ni ? ni : 1, "inner split");
  if (!rows || (!sparse && !out->feat) || !out->split) goto fail;
  for (size_t i = 0; i < ni; i++) rows[i] = pl->gid[i];
  if (sparse) { /* inner (and halo) rows: the halo rows' features need no exchange */
    st = graph_feat_csr(g, pl->gid, out->feat_rows, &out->feat_csr);
    if (st != CG_OK) goto fail;
    st = CG_ERR_NOMEM;
  } else if (ni) {
    graph_feat_dense(g, rows, (int64_t)ni, out->feat);
  }
  if (g->multilabel) {
    const size_t c = (size_t)g->num_classes;
    out->mlabels = cg_malloc((ni ? ni : 1) * c, "inner multi-label targets");
    if (!out->mlabels) goto fail;
    for (size_t i = 0; i < ni; i++) memcpy(out->mlabels + i * c, g->mlabels + (size_t)rows[i] * c, c);
  } else {
    out->labels = cg_malloc((ni ? ni : 1) * sizeof(int32_t), "inner labels");
    if (!out->labels) goto fail;
    for (size_t i = 0; i < ni; i++) out->labels[i] = g->labels[rows[i]];
  }
  for (size_t i = 0; i < ni; i++) out->split[i] = g->split[rows[i]];
  out->n_train_global = graph_split_count(g, GRAPH_SPLIT_TRAIN);
  out->n_val_global = graph_split_count(g, GRAPH_SPLIT_VAL);
  out->n_test_global = graph_split_count(g, GRAPH_SPLIT_TEST);
  cg_free(rows);
  rows = NULL;
  st = CG_OK;
  TRY_GOTO(rt_local_check(out, g->name), fail);
  return CG_OK;

fail:
  cg_free(rows);
  rt_local_free(out);
  return st < 0 ? st : CG_ERR_INTERNAL;
}

/* The CSR rows of local rows 0..n-1 (global ids gid) from the inner rows (rows, in the
 * order of gid[0, n_inner)) and the halo rows (hrows, in increasing global id hgid). */
static int csr_local_rows(const struct graph_rows *rows, const struct graph_rows *hrows, const int32_t *hgid,
                          const int32_t *gid, int64_t n_inner, int64_t n, struct cg_csr *out) {
  const struct cg_csr *a = &rows->feat_csr, *h = &hrows->feat_csr;
  int64_t *src = cg_malloc((size_t)(n ? n : 1) * sizeof *src, "feature row sources");
  if (!src) return CG_ERR_NOMEM;
  int64_t nnz = 0;
  for (int64_t i = 0; i < n; i++) {
    if (i < n_inner) {
      src[i] = i;
      nnz += a->rowptr[i + 1] - a->rowptr[i];
      continue;
    }
    const int32_t *p = bsearch(&gid[i], hgid, (size_t)hrows->nrows, sizeof *hgid, cmp_i32);
    if (!p) {
      cg_free(src);
      return cg_err_set(CG_ERR_INTERNAL, "halo row %lld (global %d) missing from the rows read", (long long)i,
                        gid[i]);
    }
    src[i] = -1 - (int64_t)(p - hgid);
    const int64_t j = -1 - src[i];
    nnz += h->rowptr[j + 1] - h->rowptr[j];
  }
  int st = cg_csr_alloc(out, n, a->ncols, nnz, 1);
  if (st == CG_OK) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
      const struct cg_csr *m = src[i] >= 0 ? a : h;
      const int64_t j = src[i] >= 0 ? src[i] : -1 - src[i], c = m->rowptr[j + 1] - m->rowptr[j];
      memcpy(out->colidx + k, m->colidx + m->rowptr[j], (size_t)c * sizeof(int32_t));
      memcpy(out->vals + k, m->vals + m->rowptr[j], (size_t)c * sizeof(float));
      k += c;
      out->rowptr[i + 1] = k;
    }
  }
  cg_free(src);
  return st;
}

int rt_local_from_rows(const struct graph *info, struct part_local *pl, struct graph_rows *rows,
                       struct graph_rows *hrows, const int32_t *hgid, const int64_t split_global[3],
                       struct rt_local *out) {
  int st = CG_OK;
  memset(out, 0, sizeof *out);
  if (pl->n_global != info->n || rows->nrows != pl->n_inner || rows->feat_dim != info->feat_dim)
    return cg_err_set(CG_ERR_ARG, "local graph of rank %d (%lld of %lld vertices) and its %lld rows of %lld "
                      "features do not match graph %s (%lld vertices, %lld features)", pl->rank,
                      (long long)pl->n_inner, (long long)pl->n_global, (long long)rows->nrows,
                      (long long)rows->feat_dim, info->name, (long long)info->n, (long long)info->feat_dim);
  TRY(rt_graph_trainable(info));
  snprintf(out->name, sizeof out->name, "%s", info->name);
  out->rank = pl->rank;
  out->nranks = pl->nparts;
  out->n_global = info->n;
  out->m_global = info->m;
  out->graph_checksum = info->checksum;
  out->n_inner = pl->n_inner;
  out->n_halo = pl->n_halo;
  out->norm = pl->norm;
  out->feat_dim = info->feat_dim;
  out->feat_sparse = rows->feat == NULL;
  out->feat_rows = out->feat_sparse && hrows ? pl->n_inner + pl->n_halo : pl->n_inner;
  out->num_classes = info->num_classes;
  out->multilabel = info->multilabel;
  const size_t nt = (size_t)(pl->n_inner + pl->n_halo);
  if (out->feat_sparse && hrows && (!hrows->split || hrows->feat || (pl->n_halo > 0 && !hgid))) {
    st = cg_err_set(CG_ERR_ARG, "rank %d: sparse feature rows without the halo rows' sparse features", pl->rank);
    goto fail;
  }
  out->gid = cg_malloc((nt ? nt : 1) * sizeof(int32_t), "local global ids");
  if (!out->gid) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  if (nt) memcpy(out->gid, pl->gid, nt * sizeof(int32_t));
  out->agg = pl->agg; /* moved: no second copy of the operator at the set-up's peak */
  memset(&pl->agg, 0, sizeof pl->agg);
  if (out->feat_sparse && hrows)
    TRY_GOTO(csr_local_rows(rows, hrows, hgid, pl->gid, pl->n_inner, (int64_t)nt, &out->feat_csr), fail);
  else if (out->feat_sparse) /* the inner rows alone, as read */
    TRY_GOTO(cg_csr_copy(&rows->feat_csr, &out->feat_csr), fail);
  /* the rows' arrays move into the local problem (no second copy at the set-up's peak) */
  out->feat = rows->feat;
  out->split = rows->split;
  out->labels = rows->labels;
  out->mlabels = rows->mlabels;
  rows->feat = NULL;
  rows->split = NULL;
  rows->labels = NULL;
  rows->mlabels = NULL;
  out->n_train_global = split_global[0];
  out->n_val_global = split_global[1];
  out->n_test_global = split_global[2];
  TRY_GOTO(rt_local_check(out, info->name), fail);
  return CG_OK;
fail:
  rt_local_free(out);
  return st < 0 ? st : CG_ERR_INTERNAL;
}
#endif

int rt_local_check(const struct rt_local *l, const char *what) {
  const int64_t n_tot = l->n_inner + l->n_halo;
  if (l->n_inner < 0 || l->n_halo < 0 || n_tot > INT32_MAX)
    return cg_err_set(CG_ERR_INTERNAL, "%s: local problem has n_inner = %lld, n_halo = %lld", what,
                      (long long)l->n_inner, (long long)l->n_halo);
  if (l->nranks < 1 || l->rank < 0 || l->rank >= l->nranks)
    return cg_err_set(CG_ERR_INTERNAL, "%s: rank %d of %d", what, l->rank, l->nranks);
  if (!l->gid || !l->split || (l->feat_sparse ? !l->feat_csr.rowptr : !l->feat))
    return cg_err_set(CG_ERR_INTERNAL, "%s: local problem is missing gid, split or features", what);
  for (int64_t i = 0; i < n_tot; i++)
    if (l->gid[i] < 0 || l->gid[i] >= l->n_global)
      return cg_err_set(CG_ERR_INTERNAL, "%s: local row %lld has global id %d outside [0, %lld)",
                        what, (long long)i, l->gid[i], (long long)l->n_global);
  if (l->agg.nrows != l->n_inner || l->agg.ncols != n_tot)
    return cg_err_set(CG_ERR_INTERNAL, "%s: aggregation operator is %lld x %lld, expected %lld x %lld",
                      what, (long long)l->agg.nrows, (long long)l->agg.ncols, (long long)l->n_inner,
                      (long long)n_tot);
  TRY(cg_csr_check(&l->agg, what));
  if (l->feat_dim < 1 || (l->feat_rows != l->n_inner && l->feat_rows != n_tot))
    return cg_err_set(CG_ERR_INTERNAL, "%s: features are %lld x %lld, expected n_inner or n_inner + n_halo rows",
                      what, (long long)l->feat_rows, (long long)l->feat_dim);
  if (l->feat_sparse) {
    if (l->feat_csr.nrows != l->feat_rows || l->feat_csr.ncols != l->feat_dim || !l->feat_csr.vals ||
        n_tot > INT32_MAX || l->feat_dim > INT32_MAX)
      return cg_err_set(CG_ERR_INTERNAL, "%s: sparse features are %lld x %lld (%s values) for %lld rows of %lld "
                        "features, expected the inner rows or every inner and halo row", what,
                        (long long)l->feat_csr.nrows, (long long)l->feat_csr.ncols,
                        l->feat_csr.vals ? "with" : "without", (long long)l->feat_rows, (long long)l->feat_dim);
    TRY(cg_csr_check(&l->feat_csr, what));
  }
  if (l->num_classes < 1 || (l->multilabel ? !l->mlabels : !l->labels))
    return cg_err_set(CG_ERR_INTERNAL, "%s: labels missing for %lld classes (%s)", what,
                      (long long)l->num_classes, l->multilabel ? "multi-label" : "single-label");
  int64_t cnt[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < l->n_inner; i++) {
    if (l->split[i] > GRAPH_SPLIT_TEST)
      return cg_err_set(CG_ERR_INTERNAL, "%s: split value %u at local row %lld", what, l->split[i],
                        (long long)i);
    cnt[l->split[i]]++;
    if (!l->multilabel && l->split[i] != GRAPH_SPLIT_NONE &&
        (l->labels[i] < 0 || l->labels[i] >= l->num_classes))
      return cg_err_set(CG_ERR_INTERNAL, "%s: label %d of local row %lld outside [0, %lld)", what,
                        l->labels[i], (long long)i, (long long)l->num_classes);
  }
  if (cnt[GRAPH_SPLIT_TRAIN] > l->n_train_global || cnt[GRAPH_SPLIT_VAL] > l->n_val_global ||
      cnt[GRAPH_SPLIT_TEST] > l->n_test_global)
    return cg_err_set(CG_ERR_INTERNAL, "%s: local split counts exceed the global ones", what);
  return CG_OK;
}
