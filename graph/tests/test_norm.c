/* graph/tests/test_norm.c — aggregation operators against hand-computed values on a
 * 5-vertex graph (GCN with and without self-loops, mean), properties on a synthetic
 * graph, feature row normalisation (dense and sparse), dense expansion, split counts. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/csr.h"
#include "core/status.h"
#include "graph/graph.h"

/* 0-1, 0-2, 1-2, 2-3 and an isolated vertex 4. Degrees 2, 2, 3, 1, 0. */
static int64_t h_rowptr[] = {0, 2, 4, 7, 8, 8};
static int32_t h_colidx[] = {1, 2, 0, 2, 0, 1, 3, 2};
static int32_t h_labels[] = {0, 1, 1, 0, 1};
static uint8_t h_split[] = {1, 1, 2, 3, 0};
static float h_dense[5 * 4];

static void make_graph(struct graph *g) {
  memset(g, 0, sizeof *g);
  strcpy(g->name, "five");
  g->n = 5;
  g->m = 8;
  g->rowptr = h_rowptr;
  g->colidx = h_colidx;
  g->feat_dim = 4;
  g->feat_nnz = 20;
  g->feat_values = h_dense;
  g->num_classes = 2;
  g->labels = h_labels;
  g->split = h_split;
}

/* Compare an operator with the expected CSR; values to a relative 1e-6. */
static void expect_csr(const char *what, const struct cg_csr *a, const int64_t *rowptr,
                       const int32_t *colidx, const double *vals, int64_t nnz) {
  assert_int_equal(a->nrows, 5);
  assert_int_equal(a->ncols, 5);
  assert_int_equal(a->nnz, nnz);
  assert_int_equal(cg_csr_check(a, what), CG_OK);
  for (int i = 0; i <= 5; i++) assert_int_equal(a->rowptr[i], rowptr[i]);
  double worst = 0;
  int64_t wk = 0;
  for (int64_t k = 0; k < nnz; k++) {
    assert_int_equal(a->colidx[k], colidx[k]);
    double err = fabs((double)a->vals[k] - vals[k]) / fabs(vals[k]);
    if (err > worst) {
      worst = err;
      wk = k;
    }
  }
  printf("  %s: worst relative error %.3g at entry %lld (got %.9g, expected %.9g)\n", what, worst,
         (long long)wk, (double)a->vals[wk], vals[wk]);
  assert_true(worst <= 1e-6);
  /* the factors reproduce every value to rounding */
  assert_non_null(a->row_scale);
  assert_non_null(a->col_scale);
  for (int64_t r = 0; r < 5; r++)
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
      const double f = (double)a->row_scale[r] * (double)a->col_scale[a->colidx[k]];
      assert_true(fabs(f - vals[k]) <= 1e-6 * fabs(vals[k]));
    }
}

static void test_gcn_self_loops(void **state) {
  (void)state;
  struct graph g;
  make_graph(&g);
  /* Degrees with the self-loop: 3, 3, 4, 2, 1. */
  const double s3 = 1.0 / 3, s12 = 1 / sqrt(12.0), s8 = 1 / sqrt(8.0);
  const int64_t rp[] = {0, 3, 6, 10, 12, 13};
  const int32_t ci[] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 2, 3, 4};
  const double v[] = {s3, s3, s12, s3, s3, s12, s12, s12, 0.25, s8, s8, 0.5, 1.0};
  struct cg_csr a;
  assert_int_equal(graph_aggr_build(&g, GRAPH_NORM_GCN, 1, &a), CG_OK);
  expect_csr("GCN + I", &a, rp, ci, v, 13);
  cg_csr_free(&a);
  assert_int_equal(graph_norm_degree(&g, GRAPH_NORM_GCN, 1, 2), 4);
  assert_int_equal(graph_norm_degree(&g, GRAPH_NORM_GCN, 1, 4), 1);
}

static void test_gcn_no_self_loops(void **state) {
  (void)state;
  struct graph g;
  make_graph(&g);
  const double s6 = 1 / sqrt(6.0), s3 = 1 / sqrt(3.0);
  const int64_t rp[] = {0, 2, 4, 7, 8, 8};
  const int32_t ci[] = {1, 2, 0, 2, 0, 1, 3, 2};
  const double v[] = {0.5, s6, 0.5, s6, s6, s6, s3, s3};
  struct cg_csr a;
  assert_int_equal(graph_aggr_build(&g, GRAPH_NORM_GCN, 0, &a), CG_OK);
  expect_csr("GCN", &a, rp, ci, v, 8);
  cg_csr_free(&a);
  assert_int_equal(graph_norm_degree(&g, GRAPH_NORM_GCN, 0, 4), 0);
}

static void test_mean(void **state) {
  (void)state;
  struct graph g;
  make_graph(&g);
  const int64_t rp[] = {0, 2, 4, 7, 8, 8}; /* the isolated vertex's row stays empty */
  const int32_t ci[] = {1, 2, 0, 2, 0, 1, 3, 2};
  const double t = 1.0 / 3;
  const double v[] = {0.5, 0.5, 0.5, 0.5, t, t, t, 1.0};
  for (int loops = 0; loops <= 1; loops++) { /* MEAN never adds a self-loop */
    struct cg_csr a;
    assert_int_equal(graph_aggr_build(&g, GRAPH_NORM_MEAN, loops, &a), CG_OK);
    expect_csr(loops ? "MEAN (self_loops=1 ignored)" : "MEAN", &a, rp, ci, v, 8);
    cg_csr_free(&a);
    assert_int_equal(graph_norm_degree(&g, GRAPH_NORM_MEAN, loops, 2), 3);
  }
}

static void test_norm_weight(void **state) {
  (void)state;
  assert_true(graph_norm_weight(GRAPH_NORM_GCN, 4, 9) == (float)(1.0 / 6.0));
  assert_true(graph_norm_weight(GRAPH_NORM_GCN, 2, 2) == 0.5f);
  assert_true(graph_norm_weight(GRAPH_NORM_MEAN, 4, 9) == 0.25f);
  assert_true(graph_norm_weight(GRAPH_NORM_MEAN, 0, 9) == 0.0f);
  assert_true(graph_norm_weight(GRAPH_NORM_GCN, 0, 3) == 0.0f);
  /* Symmetric in its degrees for GCN (so the operator is symmetric). */
  for (int64_t a = 1; a < 50; a++)
    for (int64_t b = 1; b < 50; b++)
      assert_true(graph_norm_weight(GRAPH_NORM_GCN, a, b) == graph_norm_weight(GRAPH_NORM_GCN, b, a));
  assert_int_equal(graph_aggr_build(&(struct graph){0}, (enum graph_norm)7, 0, &(struct cg_csr){0}),
                   CG_ERR_ARG);
}

/* On a synthetic graph: the GCN operator is exactly symmetric, has the diagonal in
 * column order, and the MEAN rows sum to 1. */
static void test_properties_synth(void **state) {
  (void)state;
  struct graph g;
  assert_int_equal(graph_synth("synth:small", &g), CG_OK);
  struct cg_csr a, at, mean;
  assert_int_equal(graph_aggr_build(&g, GRAPH_NORM_GCN, 1, &a), CG_OK);
  assert_int_equal(a.nnz, g.m + g.n);
  assert_int_equal(cg_csr_transpose(&a, &at), CG_OK);
  assert_int_equal(memcmp(a.rowptr, at.rowptr, 8 * (size_t)(g.n + 1)), 0);
  assert_int_equal(memcmp(a.colidx, at.colidx, 4 * (size_t)a.nnz), 0);
  assert_int_equal(memcmp(a.vals, at.vals, 4 * (size_t)a.nnz), 0);
  /* the factors too (runtime/model.c shares Â as Âᵀ on this premise) */
  assert_int_equal(memcmp(a.row_scale, a.col_scale, 4 * (size_t)g.n), 0);
  assert_int_equal(memcmp(a.row_scale, at.row_scale, 4 * (size_t)g.n), 0);
  for (int64_t u = 0; u < g.n; u++) {
    int diag = 0;
    for (int64_t k = a.rowptr[u]; k < a.rowptr[u + 1]; k++) {
      if (k > a.rowptr[u]) assert_true(a.colidx[k] > a.colidx[k - 1]);
      diag += a.colidx[k] == u;
    }
    assert_int_equal(diag, 1);
  }
  assert_int_equal(graph_aggr_build(&g, GRAPH_NORM_MEAN, 0, &mean), CG_OK);
  double worst = 0;
  for (int64_t u = 0; u < g.n; u++) {
    if (mean.rowptr[u + 1] == mean.rowptr[u]) continue;
    double s = 0;
    for (int64_t k = mean.rowptr[u]; k < mean.rowptr[u + 1]; k++) s += mean.vals[k];
    if (fabs(s - 1) > worst) worst = fabs(s - 1);
  }
  printf("  MEAN row sums: worst |sum - 1| = %.3g\n", worst);
  assert_true(worst <= 1e-5);
  cg_csr_free(&a);
  cg_csr_free(&at);
  cg_csr_free(&mean);
  graph_free(&g);
}

/* Rows: a normal row, an all-zero row, a row with negatives, a non-zero row that
 * sums to zero, and a row with a single entry. */
static const float rn_in[5][4] = {{1, 2, 3, 4}, {0, 0, 0, 0}, {2, -1, 0, 1}, {1, -1, 0, 0}, {0, 0, 5, 0}};
static const double rn_out[5][4] = {
    {0.1, 0.2, 0.3, 0.4}, {0, 0, 0, 0}, {1, -0.5, 0, 0.5}, {1, -1, 0, 0}, {0, 0, 1, 0}};

static void check_rows(const char *what, const float *x) {
  double worst = 0;
  for (int u = 0; u < 5; u++)
    for (int j = 0; j < 4; j++) {
      double err = fabs((double)x[u * 4 + j] - rn_out[u][j]);
      if (err > worst) worst = err;
    }
  printf("  %s: worst |err| %.3g\n", what, worst);
  assert_true(worst <= 1e-7);
}

static void test_rownorm_dense(void **state) {
  (void)state;
  struct graph g;
  make_graph(&g);
  memcpy(h_dense, rn_in, sizeof h_dense);
  graph_feat_rownorm(&g);
  check_rows("dense rownorm", h_dense);
  float out[20];
  graph_feat_dense(&g, NULL, 0, out);
  assert_int_equal(memcmp(out, h_dense, sizeof out), 0);
  const int64_t rows[] = {4, 0};
  graph_feat_dense(&g, rows, 2, out);
  assert_int_equal(memcmp(out, h_dense + 16, 16), 0);
  assert_int_equal(memcmp(out + 4, h_dense, 16), 0);
}

static void test_rownorm_sparse(void **state) {
  (void)state;
  struct graph g;
  make_graph(&g);
  /* The same matrix as CSR (zeros not stored). */
  int64_t frp[6];
  int32_t fci[20];
  float fv[20];
  int64_t k = 0;
  for (int u = 0; u < 5; u++) {
    frp[u] = k;
    for (int j = 0; j < 4; j++)
      if (rn_in[u][j] != 0) {
        fci[k] = j;
        fv[k++] = rn_in[u][j];
      }
  }
  frp[5] = k;
  g.sparse_feat = 1;
  g.feat_nnz = k;
  g.feat_rowptr = frp;
  g.feat_colidx = fci;
  g.feat_values = fv;
  assert_int_equal(graph_check(&g, "five (sparse)"), CG_OK);
  graph_feat_rownorm(&g);
  float out[20];
  memset(out, 0x7f, sizeof out);
  graph_feat_dense(&g, NULL, 5, out);
  check_rows("sparse rownorm, expanded", out);
  const int64_t rows[] = {2};
  graph_feat_dense(&g, rows, 1, out);
  assert_true(out[0] == 1.0f && out[1] == -0.5f && out[2] == 0.0f && out[3] == 0.5f);
}

/* The five-vertex graph without the edge 0-2, normalised with the whole graph's degrees
 * (what --prune-norm original trains): the remaining entries keep their weights. */
static void test_norm_degrees(void **state) {
  (void)state;
  struct graph full, cut;
  make_graph(&full);
  make_graph(&cut);
  int64_t rp_cut[] = {0, 1, 3, 5, 6, 6};
  int32_t ci_cut[] = {1, 0, 2, 1, 3, 2};
  cut.rowptr = rp_cut;
  cut.colidx = ci_cut;
  cut.m = 6;
  assert_int_equal(graph_set_norm_degrees(&cut, &full, "test"), CG_OK);
  assert_int_equal(graph_norm_degree(&cut, GRAPH_NORM_GCN, 1, 0), 3); /* 2 + the self-loop, not 1 + 1 */
  const double s3 = 1.0 / 3, s12 = 1 / sqrt(12.0), s8 = 1 / sqrt(8.0), t = 1.0 / 3;
  {
    const int64_t rp[] = {0, 2, 5, 8, 10, 11};
    const int32_t ci[] = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3, 4};
    const double v[] = {s3, s3, s3, s3, s12, s12, 0.25, s8, s8, 0.5, 1.0};
    struct cg_csr a;
    assert_int_equal(graph_aggr_build(&cut, GRAPH_NORM_GCN, 1, &a), CG_OK);
    expect_csr("GCN + I, the whole graph's degrees", &a, rp, ci, v, 11);
    cg_csr_free(&a);
  }
  {
    const int64_t rp[] = {0, 1, 3, 5, 6, 6};
    const double v[] = {0.5, 0.5, 0.5, t, t, 1.0};
    struct cg_csr a;
    assert_int_equal(graph_aggr_build(&cut, GRAPH_NORM_MEAN, 0, &a), CG_OK);
    expect_csr("MEAN, the whole graph's degrees", &a, rp, ci_cut, v, 6);
    cg_csr_free(&a);
  }
  /* a graph normalised as itself keeps its degrees (and the ones it was given) */
  assert_int_equal(graph_set_norm_degrees(&cut, &cut, "test"), CG_OK);
  assert_int_equal(graph_norm_degree(&cut, GRAPH_NORM_MEAN, 0, 0), 2);
  cg_free(cut.norm_deg);
  cut.norm_deg = NULL;
  /* refused: degrees below the graph's own (the whole graph by the cut one's), other vertices */
  assert_int_equal(graph_set_norm_degrees(&full, &cut, "test"), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "vertex 0 has 2 neighbours but a normalisation degree of 1"));
  assert_null(full.norm_deg);
  cut.n = 4;
  assert_int_equal(graph_set_norm_degrees(&full, &cut, "test"), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "must be the same vertices"));
}

static void test_split_count(void **state) {
  (void)state;
  struct graph g;
  make_graph(&g);
  assert_int_equal(graph_split_count(&g, GRAPH_SPLIT_TRAIN), 2);
  assert_int_equal(graph_split_count(&g, GRAPH_SPLIT_VAL), 1);
  assert_int_equal(graph_split_count(&g, GRAPH_SPLIT_TEST), 1);
  assert_int_equal(graph_split_count(&g, GRAPH_SPLIT_NONE), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gcn_self_loops),  cmocka_unit_test(test_gcn_no_self_loops),
      cmocka_unit_test(test_mean),            cmocka_unit_test(test_norm_weight),
      cmocka_unit_test(test_properties_synth), cmocka_unit_test(test_rownorm_dense),
      cmocka_unit_test(test_rownorm_sparse),  cmocka_unit_test(test_split_count),
      cmocka_unit_test(test_norm_degrees),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
