/* graph/norm.c — adjacency and feature normalisation, split counts.
 *
 * graph_norm_weight is the single formula for an aggregation weight: every
 * partition and backend calls it with global degrees, which is what makes a
 * P-rank run reproduce a 1-rank run (ARCHITECTURE.md, exactness contract). */
#include <math.h>
#include <string.h>

#include "core/status.h"
#include "graph/graph.h"
#include "graph_internal.h"

float graph_norm_weight(enum graph_norm kind, int64_t deg_u, int64_t deg_v) {
  /* Computed in double and rounded once, so that the float weight does not depend
   * on how a compiler orders the operations. A zero degree has no entries to weigh;
   * 0 keeps a stray call harmless. */
  if (kind == GRAPH_NORM_MEAN) return deg_u > 0 ? (float)(1.0 / (double)deg_u) : 0.0f;
  if (deg_u <= 0 || deg_v <= 0) return 0.0f;
  return (float)(1.0 / sqrt((double)deg_u * (double)deg_v));
}

float graph_norm_row_scale(enum graph_norm kind, int64_t deg) {
  if (deg <= 0) return 0.0f;
  return kind == GRAPH_NORM_MEAN ? (float)(1.0 / (double)deg) : (float)(1.0 / sqrt((double)deg));
}

float graph_norm_col_scale(enum graph_norm kind, int64_t deg) {
  if (kind == GRAPH_NORM_MEAN) return 1.0f;
  return deg > 0 ? (float)(1.0 / sqrt((double)deg)) : 0.0f;
}

int graph_set_norm_degrees(struct graph *g, const struct graph *super, const char *what) {
  if (super->n != g->n)
    return cg_err_set(CG_ERR_ARG, "%s: normalising a graph of %lld vertices by the degrees of one of %lld: they "
                      "must be the same vertices", what, (long long)g->n, (long long)super->n);
  int32_t *d = cg_malloc((size_t)(g->n > 0 ? g->n : 1) * sizeof *d, "normalisation degrees");
  if (!d) return CG_ERR_NOMEM;
  for (int64_t u = 0; u < g->n; u++) {
    const int64_t own = g->rowptr[u + 1] - g->rowptr[u];
    const int64_t s = super->norm_deg ? super->norm_deg[u] : super->rowptr[u + 1] - super->rowptr[u];
    if (s < own) {
      cg_free(d);
      return cg_err_set(CG_ERR_ARG, "%s: vertex %lld has %lld neighbours but a normalisation degree of %lld: the "
                        "degrees must come from a graph this one is part of", what, (long long)u, (long long)own,
                        (long long)s);
    }
    d[u] = (int32_t)s;
  }
  cg_free(g->norm_deg);
  g->norm_deg = d;
  return CG_OK;
}

int graph_aggr_build(const struct graph *g, enum graph_norm kind, int self_loops, struct cg_csr *out) {
  if (kind != GRAPH_NORM_GCN && kind != GRAPH_NORM_MEAN)
    return cg_err_set(CG_ERR_ARG, "graph_aggr_build: unknown normalisation %d", (int)kind);
  const int64_t n = g->n;
  const int diag = kind == GRAPH_NORM_GCN && self_loops;
  TRY(cg_csr_alloc(out, n, n, g->m + (diag ? n : 0), 1));
  if (cg_csr_alloc_scales(out) != CG_OK) {
    cg_csr_free(out);
    return CG_ERR_NOMEM;
  }
  for (int64_t u = 0; u < n; u++)
    out->rowptr[u + 1] = out->rowptr[u] + (g->rowptr[u + 1] - g->rowptr[u]) + diag;
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t u = 0; u < n; u++) {
    const int64_t du = graph_norm_degree(g, kind, self_loops, u);
    out->row_scale[u] = graph_norm_row_scale(kind, du);
    out->col_scale[u] = graph_norm_col_scale(kind, du);
    int64_t q = out->rowptr[u];
    int placed = !diag;
    for (int64_t k = g->rowptr[u]; k < g->rowptr[u + 1]; k++) {
      const int64_t v = g->colidx[k];
      if (!placed && v > u) { /* the self-loop, in column order */
        out->colidx[q] = (int32_t)u;
        out->vals[q++] = graph_norm_weight(kind, du, du);
        placed = 1;
      }
      out->colidx[q] = (int32_t)v;
      out->vals[q++] = graph_norm_weight(kind, du, graph_norm_degree(g, kind, self_loops, v));
    }
    if (!placed) {
      out->colidx[q] = (int32_t)u;
      out->vals[q++] = graph_norm_weight(kind, du, du);
    }
  }
  return CG_OK;
}

void graph_feat_rownorm(struct graph *g) {
  const int64_t n = g->n;
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t u = 0; u < n; u++) {
    float *v;
    int64_t len;
    if (g->sparse_feat) {
      v = g->feat_values + g->feat_rowptr[u];
      len = g->feat_rowptr[u + 1] - g->feat_rowptr[u];
    } else {
      v = g->feat_values + u * g->feat_dim;
      len = g->feat_dim;
    }
    graph_feat_row_normalise(v, len);
  }
}

void graph_feat_row_normalise(float *v, int64_t len) {
  /* Sum in double, divide in double, round once: the same result on every backend
   * and thread count. */
  double s = 0;
  for (int64_t j = 0; j < len; j++) s += v[j];
  if (s == 0) return;
  for (int64_t j = 0; j < len; j++) v[j] = (float)((double)v[j] / s);
}

void graph_feat_dense(const struct graph *g, const int64_t *rows, int64_t nrows, float *out) {
  const int64_t f = g->feat_dim;
  if (!rows) nrows = g->n;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < nrows; i++) {
    const int64_t u = rows ? rows[i] : i;
    float *dst = out + i * f;
    if (!g->sparse_feat) {
      memcpy(dst, g->feat_values + u * f, (size_t)f * sizeof *dst);
      continue;
    }
    memset(dst, 0, (size_t)f * sizeof *dst);
    for (int64_t k = g->feat_rowptr[u]; k < g->feat_rowptr[u + 1]; k++)
      dst[g->feat_colidx[k]] = g->feat_values[k];
  }
}

int graph_feat_csr(const struct graph *g, const int32_t *rows, int64_t nrows, struct cg_csr *out) {
  memset(out, 0, sizeof *out);
  const int64_t f = g->feat_dim;
  if (!rows) nrows = g->n;
  int64_t *rp = cg_malloc((size_t)(nrows + 1) * sizeof *rp, "sparse feature row pointers");
  if (!rp) return CG_ERR_NOMEM;
  rp[0] = 0;
  for (int64_t i = 0; i < nrows; i++) {
    const int64_t u = rows ? rows[i] : i;
    int64_t c = 0;
    if (g->sparse_feat) {
      c = g->feat_rowptr[u + 1] - g->feat_rowptr[u];
    } else {
      for (int64_t j = 0; j < f; j++) c += g->feat_values[u * f + j] != 0.0f;
    }
    rp[i + 1] = rp[i] + c;
  }
  const int st = cg_csr_alloc(out, nrows, f, rp[nrows], 1);
  if (st != CG_OK) {
    cg_free(rp);
    return st;
  }
  memcpy(out->rowptr, rp, (size_t)(nrows + 1) * sizeof *rp);
  cg_free(rp);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < nrows; i++) {
    const int64_t u = rows ? rows[i] : i;
    int64_t k = out->rowptr[i];
    if (g->sparse_feat) {
      const int64_t k0 = g->feat_rowptr[u], n = g->feat_rowptr[u + 1] - k0;
      memcpy(out->colidx + k, g->feat_colidx + k0, (size_t)n * sizeof(int32_t));
      memcpy(out->vals + k, g->feat_values + k0, (size_t)n * sizeof(float));
    } else {
      for (int64_t j = 0; j < f; j++)
        if (g->feat_values[u * f + j] != 0.0f) {
          out->colidx[k] = (int32_t)j;
          out->vals[k++] = g->feat_values[u * f + j];
        }
    }
  }
  return CG_OK;
}

int64_t graph_split_count(const struct graph *g, enum graph_split s) {
  int64_t cnt = 0;
#pragma omp parallel for reduction(+ : cnt) schedule(static)
  for (int64_t u = 0; u < g->n; u++) cnt += g->split[u] == (uint8_t)s;
  return cnt;
}
