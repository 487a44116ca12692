/* graph/tests/test_synth.c — the synthetic generator: valid graphs (graph_check),
 * bit-identical output for the same spec whatever the thread count, the spec
 * grammar (scale, overrides, errors), skewed degrees, labels tied to communities,
 * the 60/20/20 split, the multilabel variant, and features that need the graph. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/status.h"
#include "graph/graph.h"
#include "graph_test_util.h"

static void synth_ok(const char *spec, struct graph *g) {
  int st = graph_synth(spec, g);
  if (st) cg_err_report("test");
  assert_int_equal(st, CG_OK);
  st = graph_check(g, spec);
  if (st) cg_err_report("test");
  assert_int_equal(st, CG_OK);
}

static int64_t max_degree(const struct graph *g) {
  int64_t mx = 0;
  for (int64_t u = 0; u < g->n; u++)
    if (g->rowptr[u + 1] - g->rowptr[u] > mx) mx = g->rowptr[u + 1] - g->rowptr[u];
  return mx;
}

static void test_presets_valid(void **state) {
  (void)state;
  struct {
    const char *spec, *name;
    int64_t n, f, c;
    double degree;
  } cases[] = {
      {"synth:tiny", "tiny", 200, 16, 4, 8},
      {"synth:small", "small", 3000, 64, 8, 20},
  };
  for (int i = 0; i < 2; i++) {
    struct graph g;
    synth_ok(cases[i].spec, &g);
    double mean = (double)g.m / (double)g.n;
    int64_t mx = max_degree(&g);
    printf("  %s: n=%lld m=%lld mean degree %.2f, max %lld, checksum 0x%08x\n", cases[i].spec,
           (long long)g.n, (long long)g.m, mean, (long long)mx, g.checksum);
    assert_string_equal(g.name, cases[i].name);
    assert_int_equal(g.n, cases[i].n);
    assert_int_equal(g.feat_dim, cases[i].f);
    assert_int_equal(g.num_classes, cases[i].c);
    assert_int_equal(g.sparse_feat, 0);
    assert_int_equal(g.multilabel, 0);
    assert_int_equal(g.feat_nnz, g.n * g.feat_dim);
    /* The average degree is the preset's, within the generator's 1.5 % tolerance. */
    assert_true(fabs(mean / cases[i].degree - 1) <= 0.016);
    /* Power law: the largest degree is far above the mean. */
    assert_true((double)mx >= 5 * mean);
    /* Every label is a class; every class occurs; every vertex is in a split. */
    int64_t *cnt = calloc((size_t)g.num_classes, sizeof *cnt);
    assert_non_null(cnt);
    for (int64_t u = 0; u < g.n; u++) {
      assert_true(g.labels[u] >= 0 && g.labels[u] < g.num_classes);
      cnt[g.labels[u]]++;
    }
    for (int64_t k = 0; k < g.num_classes; k++) assert_true(cnt[k] > 0);
    free(cnt);
    int64_t tr = graph_split_count(&g, GRAPH_SPLIT_TRAIN), va = graph_split_count(&g, GRAPH_SPLIT_VAL),
            te = graph_split_count(&g, GRAPH_SPLIT_TEST);
    printf("  split %lld / %lld / %lld\n", (long long)tr, (long long)va, (long long)te);
    assert_int_equal(tr + va + te, g.n);
    double sd = sqrt(0.25 * (double)g.n); /* binomial sd bound */
    assert_true(fabs((double)tr - 0.6 * (double)g.n) <= 4 * sd);
    assert_true(fabs((double)va - 0.2 * (double)g.n) <= 4 * sd);
    /* Labels follow communities: most edges join same-label vertices (10 % label
     * noise and 15 % inter-community draws allow about 0.65). */
    int64_t same = 0;
    for (int64_t u = 0; u < g.n; u++)
      for (int64_t k = g.rowptr[u]; k < g.rowptr[u + 1]; k++) same += g.labels[u] == g.labels[g.colidx[k]];
    double hom = (double)same / (double)g.m;
    printf("  edge homophily %.3f\n", hom);
    assert_true(hom > 0.5);
    graph_free(&g);
  }
}

static void test_deterministic(void **state) {
  (void)state;
  const char *specs[] = {"synth:tiny", "synth:small", "synth:small:multilabel=1",
                         "synth:tiny:scale=3,seed=9"};
  int saved = omp_get_max_threads();
  for (int i = 0; i < 4; i++) {
    struct graph a, b, c;
    omp_set_num_threads(2);
    synth_ok(specs[i], &a);
    synth_ok(specs[i], &b);
    assert_true(gt_graph_equal(&a, &b));
    omp_set_num_threads(1);
    synth_ok(specs[i], &c);
    assert_true(gt_graph_equal(&a, &c));
    graph_free(&c);
    omp_set_num_threads(3);
    synth_ok(specs[i], &c);
    assert_true(gt_graph_equal(&a, &c));
    printf("  %s: identical on 1, 2, 3 threads (checksum 0x%08x)\n", specs[i], a.checksum);
    graph_free(&a);
    graph_free(&b);
    graph_free(&c);
  }
  omp_set_num_threads(saved);
  /* Another seed, another graph. */
  struct graph a, b;
  synth_ok("synth:small", &a);
  synth_ok("synth:small:seed=2", &b);
  assert_true(a.checksum != b.checksum);
  assert_true(a.m != b.m || memcmp(a.colidx, b.colidx, 4 * (size_t)a.m) != 0);
  graph_free(&a);
  graph_free(&b);
}

/* Pinned values: the generator uses only exactly rounded arithmetic, so these hold
 * on every IEEE-754 machine and compiler. A change means every saved partition keyed
 * by a synthetic graph's checksum is stale: update them deliberately, with the model. */
static void test_checksum_pinned(void **state) {
  (void)state;
  struct {
    const char *spec;
    uint32_t checksum;
    int64_t m;
  } cases[] = {
      {"synth:tiny", 0xb4c50673u, 1604},
      {"synth:small", 0x2b5f4203u, 60190},
  };
  for (int i = 0; i < 2; i++) {
    struct graph g;
    synth_ok(cases[i].spec, &g);
    printf("  %s: checksum 0x%08x (pinned 0x%08x), m %lld (pinned %lld)\n", cases[i].spec,
           g.checksum, cases[i].checksum, (long long)g.m, (long long)cases[i].m);
    assert_int_equal(g.m, cases[i].m);
    assert_int_equal(g.checksum, cases[i].checksum);
    graph_free(&g);
  }
}

static void test_scale_and_overrides(void **state) {
  (void)state;
  struct graph g;
  synth_ok("synth:small:scale=2", &g);
  assert_int_equal(g.n, 6000);
  assert_true(fabs((double)g.m / (double)g.n / 20 - 1) <= 0.016);
  graph_free(&g);
  synth_ok("synth:small:scale=0.25", &g);
  assert_int_equal(g.n, 750);
  assert_true(fabs((double)g.m / (double)g.n / 20 - 1) <= 0.016);
  graph_free(&g);
  /* Large-preset shape, scaled down: the degree stays, the class count too. */
  synth_ok("synth:reddit:scale=0.004", &g);
  assert_int_equal(g.n, 932);
  assert_int_equal(g.feat_dim, 602);
  assert_int_equal(g.num_classes, 41);
  assert_string_equal(g.name, "reddit");
  printf("  reddit x0.004: n=%lld mean degree %.1f\n", (long long)g.n, (double)g.m / (double)g.n);
  graph_free(&g);

  synth_ok("synth:tiny:nodes=500,degree=10,feats=7,classes=3,communities=5,seed=4", &g);
  assert_int_equal(g.n, 500);
  assert_int_equal(g.feat_dim, 7);
  assert_int_equal(g.num_classes, 3);
  assert_true(fabs((double)g.m / 500.0 / 10 - 1) <= 0.016);
  graph_free(&g);

  /* The degree is capped by n - 1. */
  synth_ok("synth:tiny:nodes=12,degree=100", &g);
  assert_int_equal(g.n, 12);
  assert_true(max_degree(&g) <= 11);
  graph_free(&g);
  synth_ok("synth:tiny:nodes=1", &g);
  assert_int_equal(g.n, 1);
  assert_int_equal(g.m, 0);
  graph_free(&g);
  synth_ok("synth:tiny:degree=0", &g);
  assert_int_equal(g.m, 0);
  graph_free(&g);
}

static void test_spec_errors(void **state) {
  (void)state;
  struct {
    const char *spec, *needle;
  } cases[] = {
      {"synth:nope", "unknown preset 'nope'"},
      {"synth:", "unknown preset ''"},
      {"tiny", "starts with \"synth:\""},
      {"synth:tiny:bogus=1", "unknown option 'bogus'"},
      {"synth:tiny:scale", "has no value"},
      {"synth:tiny:scale=-1", "scale=-1"},
      {"synth:tiny:scale=abc", "scale=abc"},
      {"synth:tiny:nodes=0", "nodes=0"},
      {"synth:tiny:nodes=12x", "nodes=12x"},
      {"synth:tiny:multilabel=2", "multilabel=2"},
      {"synth:tiny:seed=-3", "seed=-3"},
      {"synth:tiny:feats=5,,classes=2", "malformed option list"},
      {"synth:reddit:scale=100000", "nodes"},
      {"synth:tiny:seed=2:shuffle=1", "separated by commas"},
      {"synth:tiny:shuffle=1,shuffle=0", "'shuffle' given twice"},
      {"synth:tiny:scale=0.5,seed=1,scale=2", "'scale' given twice"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct graph g;
    int st = graph_synth(cases[i].spec, &g);
    printf("  %s -> %s\n", cases[i].spec, cg_err_msg());
    assert_int_equal(st, CG_ERR_ARG);
    assert_non_null(strstr(cg_err_msg(), cases[i].needle));
    assert_null(g.rowptr);
  }
}

static void test_multilabel(void **state) {
  (void)state;
  struct graph g;
  synth_ok("synth:small:multilabel=1", &g);
  assert_int_equal(g.multilabel, 1);
  assert_null(g.labels);
  assert_non_null(g.mlabels);
  int64_t total = 0, none = 0;
  int64_t *cnt = calloc((size_t)g.num_classes, sizeof *cnt);
  assert_non_null(cnt);
  for (int64_t u = 0; u < g.n; u++) {
    int64_t k = 0;
    for (int64_t c = 0; c < g.num_classes; c++) {
      k += g.mlabels[u * g.num_classes + c];
      cnt[c] += g.mlabels[u * g.num_classes + c];
    }
    total += k;
    none += k == 0;
  }
  double mean = (double)total / (double)g.n;
  printf("  %.2f labels per vertex, %lld vertices without any\n", mean, (long long)none);
  assert_true(mean >= 1.5 && mean <= 3.5); /* "a few classes per vertex" */
  assert_true(none < g.n / 10);
  for (int64_t c = 0; c < g.num_classes; c++) assert_true(cnt[c] > 0);
  free(cnt);
  /* Save / load keeps everything, including the checksum. */
  char *dir = gt_mkdtemp();
  assert_non_null(dir);
  char path[4200];
  snprintf(path, sizeof path, "%s/ml.cgr", dir);
  assert_int_equal(graph_save_cgr(path, &g), CG_OK);
  struct graph h;
  assert_int_equal(graph_load_cgr(path, &h), CG_OK);
  assert_true(gt_graph_equal(&g, &h));
  graph_free(&h);
  gt_rmdir(dir);
  graph_free(&g);
}

/* The checksum set by the generator is the one the reader computes from the file. */
static void test_checksum_round_trip(void **state) {
  (void)state;
  struct graph g, h;
  synth_ok("synth:small", &g);
  char *dir = gt_mkdtemp();
  assert_non_null(dir);
  char path[4200];
  snprintf(path, sizeof path, "%s/small.cgr", dir);
  assert_int_equal(graph_save_cgr(path, &g), CG_OK);
  assert_int_equal(graph_load_cgr(path, &h), CG_OK);
  assert_int_equal(g.checksum, h.checksum);
  assert_true(gt_graph_equal(&g, &h));
  graph_free(&h);
  gt_rmdir(dir);
  graph_free(&g);
}

/* Nearest class mean (estimated on train) accuracy on the test split. */
static double nearest_mean_acc(const struct graph *g, const float *x) {
  const int64_t n = g->n, f = g->feat_dim, c = g->num_classes;
  double *mu = calloc((size_t)(c * f), sizeof *mu);
  int64_t *cnt = calloc((size_t)c, sizeof *cnt);
  assert_non_null(mu);
  assert_non_null(cnt);
  for (int64_t u = 0; u < n; u++)
    if (g->split[u] == GRAPH_SPLIT_TRAIN) {
      cnt[g->labels[u]]++;
      for (int64_t j = 0; j < f; j++) mu[g->labels[u] * f + j] += x[u * f + j];
    }
  for (int64_t k = 0; k < c; k++)
    for (int64_t j = 0; j < f; j++) mu[k * f + j] /= cnt[k] ? (double)cnt[k] : 1.0;
  int64_t ok = 0, tot = 0;
  for (int64_t u = 0; u < n; u++) {
    if (g->split[u] != GRAPH_SPLIT_TEST) continue;
    double best = INFINITY;
    int64_t arg = -1;
    for (int64_t k = 0; k < c; k++) {
      double d = 0;
      for (int64_t j = 0; j < f; j++) d += (x[u * f + j] - mu[k * f + j]) * (x[u * f + j] - mu[k * f + j]);
      if (d < best) {
        best = d;
        arg = k;
      }
    }
    ok += arg == g->labels[u];
    tot++;
  }
  free(mu);
  free(cnt);
  return (double)ok / (double)tot;
}

static void spmm(const struct cg_csr *a, const float *x, float *y, int64_t f) {
  for (int64_t r = 0; r < a->nrows; r++) {
    for (int64_t j = 0; j < f; j++) y[r * f + j] = 0;
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++)
      for (int64_t j = 0; j < f; j++) y[r * f + j] += a->vals[k] * x[(int64_t)a->colidx[k] * f + j];
  }
}


/* Per-rank generation (issue #17): the rows of P = 2 and 3 ranks (vertices v with
 * v mod P = r, and contiguous blocks), generated alone by graph_synth_rows with
 * graph_synth_ex's factor, equal the whole graph's rows bit for bit: neighbours,
 * features (also row-normalised), labels or multi-labels, split. On 1 and 2 threads. */
static void test_synth_rows(void **state) {
  (void)state;
  const char *specs[] = {"synth:small", "synth:tiny:multilabel=1", "synth:small:seed=5,degree=40"};
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    struct graph g, gn;
    double factor = 0.0;
    assert_int_equal(graph_synth_ex(specs[s], &g, &factor), CG_OK);
    assert_true(factor > 0.0);
    assert_int_equal(graph_synth(specs[s], &gn), CG_OK);
    graph_feat_rownorm(&gn);
    const int64_t n = g.n, f = g.feat_dim, c = g.num_classes;
    int32_t *rows = malloc((size_t)n * sizeof *rows);
    assert_non_null(rows);
    int cases = 0;
    for (int P = 2; P <= 3; P++)
      for (int layout = 0; layout < 2; layout++)
        for (int r = 0; r < P; r++) {
          int64_t k = 0;
          for (int64_t v = 0; v < n; v++)
            if (layout == 0 ? v % P == r : v * P / n == r) rows[k++] = (int32_t)v;
          omp_set_num_threads(1 + (r & 1));
          struct graph_rows gr, grn;
          assert_int_equal(graph_synth_rows(specs[s], factor, rows, k, GRAPH_ROWS_ADJ, &gr), CG_OK);
          assert_int_equal(graph_synth_rows(specs[s], factor, rows, k, GRAPH_ROWS_FEAT_ROWNORM, &grn), CG_OK);
          assert_int_equal(gr.nrows, k);
          assert_null(grn.colidx);
          for (int64_t i = 0; i < k; i++) {
            const int64_t u = rows[i], deg = g.rowptr[u + 1] - g.rowptr[u];
            assert_int_equal(gr.rowptr[i + 1] - gr.rowptr[i], deg);
            assert_memory_equal(gr.colidx + gr.rowptr[i], g.colidx + g.rowptr[u], (size_t)deg * sizeof(int32_t));
            assert_memory_equal(gr.feat + i * f, g.feat_values + u * f, (size_t)f * sizeof(float));
            assert_memory_equal(grn.feat + i * f, gn.feat_values + u * f, (size_t)f * sizeof(float));
            assert_int_equal(gr.split[i], g.split[u]);
            if (g.multilabel) assert_memory_equal(gr.mlabels + i * c, g.mlabels + u * c, (size_t)c);
            else assert_int_equal(gr.labels[i], g.labels[u]);
          }
          graph_rows_free(&gr);
          graph_rows_free(&grn);
          cases++;
        }
    omp_set_num_threads(2);
    printf("  %s: %d row sets of P = 2, 3 ranks equal the whole graph's rows (factor %.6f)\n", specs[s], cases,
           factor);
    free(rows);
    graph_free(&g);
    graph_free(&gn);
  }
  /* rows not strictly increasing, and a factor <= 0, are refused */
  struct graph_rows gr;
  const int32_t bad[2] = {5, 5};
  assert_int_equal(graph_synth_rows("synth:tiny", 1.0, bad, 2, GRAPH_ROWS_ADJ, &gr), CG_ERR_ARG);
  assert_int_equal(graph_synth_rows("synth:tiny", 0.0, bad, 1, GRAPH_ROWS_ADJ, &gr), CG_ERR_ARG);
}

/* Features alone are a weak witness of the class, features propagated over the graph
 * (two GCN hops, the SGC view of a 2-layer GCN) a strong one. */
static void test_features_need_graph(void **state) {
  (void)state;
  const char *specs[] = {"synth:tiny", "synth:small", "synth:products:scale=0.002"};
  for (int i = 0; i < 3; i++) {
    struct graph g;
    synth_ok(specs[i], &g);
    const int64_t n = g.n, f = g.feat_dim;
    float *x = malloc((size_t)(n * f) * sizeof *x), *y = malloc((size_t)(n * f) * sizeof *y),
          *z = malloc((size_t)(n * f) * sizeof *z);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(z);
    graph_feat_dense(&g, NULL, n, x);
    struct cg_csr a;
    assert_int_equal(graph_aggr_build(&g, GRAPH_NORM_GCN, 1, &a), CG_OK);
    spmm(&a, x, y, f);
    spmm(&a, y, z, f);
    double ax = nearest_mean_acc(&g, x), a2x = nearest_mean_acc(&g, z);
    printf("  %s: nearest-mean test accuracy, features %.3f, two GCN hops %.3f (chance %.3f)\n",
           specs[i], ax, a2x, 1.0 / (double)g.num_classes);
    assert_true(ax > 1.5 / (double)g.num_classes); /* features carry signal */
    assert_true(ax < 0.75);                          /* but not enough */
    assert_true(a2x > 0.75);                         /* the graph makes it learnable */
    assert_true(a2x > ax + 0.15);
    cg_csr_free(&a);
    free(x);
    free(y);
    free(z);
    graph_free(&g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_presets_valid),      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_checksum_pinned),    cmocka_unit_test(test_scale_and_overrides),
      cmocka_unit_test(test_spec_errors),        cmocka_unit_test(test_multilabel),
      cmocka_unit_test(test_checksum_round_trip), cmocka_unit_test(test_features_need_graph),
      cmocka_unit_test(test_synth_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
