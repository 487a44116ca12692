/* graph/tests/test_cgr_read.c — the reader on the shipped datasets (karate, cora,
 * citeseer): header values and facts from datasets/README.md, the checksum definition,
 * and the writer's round trip, which must reproduce the files byte for byte.
 * Exits 77 (skipped) when the dataset folder is absent. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/status.h"
#include "graph/graph.h"
#include "graph_test_util.h"

static const char *datasets = CAPGNN_TEST_DATASETS;
static char *tmpdir;

struct expect {
  const char *name;
  int64_t n, m, f, c, nnz;
  uint32_t flags, header_crc;
  int64_t train, val, test;
  int64_t unlabelled, isolated;
};

/* datasets/README.md, "Header values" and the per-dataset notes. */
static const struct expect expects[] = {
    {"karate", 34, 156, 34, 2, 1156, 0, 0x811d8fcc, 4, 10, 20, 0, 0},
    {"cora", 2708, 10556, 1433, 7, 49216, 2, 0xb2f73d1a, 140, 500, 1000, 0, 0},
    {"citeseer", 3327, 9104, 3703, 6, 105165, 2, 0xc4ba2d25, 120, 500, 1000, 15, 48},
};

static void path_of(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s.cgr", datasets, name);
}

static void load_ok(const char *path, struct graph *g) {
  int st = graph_load_cgr(path, g);
  if (st) cg_err_report("test");
  assert_int_equal(st, CG_OK);
}

static void test_header_values(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof expects / sizeof expects[0]; i++) {
    const struct expect *e = &expects[i];
    char path[4096];
    path_of(path, sizeof path, e->name);
    struct graph g;
    load_ok(path, &g);
    printf("  %s: n=%lld m=%lld f=%lld c=%lld nnz=%lld sparse=%d checksum=0x%08x\n", e->name,
           (long long)g.n, (long long)g.m, (long long)g.feat_dim, (long long)g.num_classes,
           (long long)g.feat_nnz, g.sparse_feat, g.checksum);
    assert_string_equal(g.name, e->name);
    assert_int_equal(g.n, e->n);
    assert_int_equal(g.m, e->m);
    assert_int_equal(g.feat_dim, e->f);
    assert_int_equal(g.num_classes, e->c);
    assert_int_equal(g.feat_nnz, e->nnz);
    assert_int_equal(g.sparse_feat, (e->flags & 2) != 0);
    assert_int_equal(g.multilabel, (e->flags & 1) != 0);
    assert_non_null(g.labels);
    assert_null(g.mlabels);
    assert_int_equal(g.sparse_feat ? g.feat_rowptr != NULL : g.feat_rowptr == NULL, 1);
    assert_int_equal(graph_split_count(&g, GRAPH_SPLIT_TRAIN), e->train);
    assert_int_equal(graph_split_count(&g, GRAPH_SPLIT_VAL), e->val);
    assert_int_equal(graph_split_count(&g, GRAPH_SPLIT_TEST), e->test);
    int64_t unl = 0, iso = 0;
    for (int64_t u = 0; u < g.n; u++) {
      unl += g.labels[u] == -1;
      iso += g.rowptr[u + 1] == g.rowptr[u];
    }
    assert_int_equal(unl, e->unlabelled);
    assert_int_equal(iso, e->isolated);

    /* The stored header CRC is the documented one, and the checksum is the CRC-32
     * over the seven section CRCs followed by n, m, f, c as u64 (graph.h). */
    size_t size;
    unsigned char *b = gt_read(path, &size);
    assert_non_null(b);
    assert_int_equal(gt_u32(b + 252), e->header_crc);
    unsigned char buf[60];
    for (int s = 0; s < 7; s++) gt_put_u32(buf + 4 * s, gt_u32(gt_sec_entry(b, s) + 16));
    gt_put_u64(buf + 28, (uint64_t)g.n);
    gt_put_u64(buf + 36, (uint64_t)g.m);
    gt_put_u64(buf + 44, (uint64_t)g.feat_dim);
    gt_put_u64(buf + 52, (uint64_t)g.num_classes);
    assert_int_equal(g.checksum, (uint32_t)crc32(0L, buf, sizeof buf));
    free(b);
    graph_free(&g);
  }
}

static void test_karate_facts(void **state) {
  (void)state;
  char path[4096];
  path_of(path, sizeof path, "karate");
  struct graph g;
  load_ok(path, &g);
  /* Identity features, dense; 17 members per club; train nodes {1, 6, 15, 32}. */
  for (int64_t u = 0; u < g.n; u++)
    for (int64_t j = 0; j < g.feat_dim; j++)
      assert_true(g.feat_values[u * g.feat_dim + j] == (u == j ? 1.0f : 0.0f));
  int64_t c0 = 0;
  for (int64_t u = 0; u < g.n; u++) c0 += g.labels[u] == 0;
  assert_int_equal(c0, 17);
  const int64_t train[] = {1, 6, 15, 32};
  for (int i = 0; i < 4; i++) assert_int_equal(g.split[train[i]], GRAPH_SPLIT_TRAIN);
  graph_free(&g);
  assert_null(g.rowptr); /* graph_free leaves the struct zeroed */
  graph_free(&g);        /* and accepts it again */
}

static void test_round_trip(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof expects / sizeof expects[0]; i++) {
    char path[4096], out[4096];
    path_of(path, sizeof path, expects[i].name);
    snprintf(out, sizeof out, "%s/%s.cgr", tmpdir, expects[i].name);
    struct graph g, h;
    load_ok(path, &g);
    int st = graph_save_cgr(out, &g);
    if (st) cg_err_report("test");
    assert_int_equal(st, CG_OK);
    assert_false(gt_tmp_exists(out)); /* renamed into place */
    /* The writer follows the same layout rules as the files' writer: same bytes. */
    size_t s1 = 0, s2 = 0;
    unsigned char *b1 = gt_read(path, &s1), *b2 = gt_read(out, &s2);
    assert_non_null(b1);
    assert_non_null(b2);
    printf("  %s: original %zu bytes, rewritten %zu bytes\n", expects[i].name, s1, s2);
    assert_int_equal(s1, s2);
    assert_true(gt_same_bytes(expects[i].name, b1, b2, s1));
    /* graph_cgr_data_bytes: the file less its alignment padding (< 64 per section). */
    const uint64_t data = graph_cgr_data_bytes(&g);
    assert_true(data <= s2 && s2 - data < 64 * 7);
    free(b1);
    free(b2);
    load_ok(out, &h);
    assert_true(gt_graph_equal(&g, &h));
    graph_free(&g);
    graph_free(&h);
  }
}

static void test_rownorm_citeseer(void **state) {
  (void)state;
  /* Row-normalised binary bag-of-words: every non-empty row sums to 1, each value is
   * 1/row_nnz, and the dense expansion agrees with the CSR. */
  char path[4096];
  path_of(path, sizeof path, "citeseer");
  struct graph g;
  load_ok(path, &g);
  graph_feat_rownorm(&g);
  double worst = 0;
  int64_t empty = 0;
  for (int64_t u = 0; u < g.n; u++) {
    int64_t len = g.feat_rowptr[u + 1] - g.feat_rowptr[u];
    if (len == 0) {
      empty++;
      continue;
    }
    for (int64_t k = g.feat_rowptr[u]; k < g.feat_rowptr[u + 1]; k++) {
      double err = fabs((double)g.feat_values[k] - 1.0 / (double)len);
      if (err > worst) worst = err;
    }
  }
  printf("  citeseer rownorm: worst |x - 1/nnz_row| = %.3g, %lld empty rows\n", worst,
         (long long)empty);
  assert_true(worst <= 1e-7);
  assert_true(empty >= 15); /* the 15 featureless nodes stay all-zero */
  const int64_t rows[] = {0, 3326, 7};
  float *d = malloc(3 * (size_t)g.feat_dim * sizeof *d);
  assert_non_null(d);
  graph_feat_dense(&g, rows, 3, d);
  for (int i = 0; i < 3; i++) {
    int64_t u = rows[i];
    int64_t nz = 0;
    for (int64_t j = 0; j < g.feat_dim; j++) nz += d[i * g.feat_dim + j] != 0;
    assert_int_equal(nz, g.feat_rowptr[u + 1] - g.feat_rowptr[u]);
    for (int64_t k = g.feat_rowptr[u]; k < g.feat_rowptr[u + 1]; k++)
      assert_true(d[i * g.feat_dim + g.feat_colidx[k]] == g.feat_values[k]);
  }
  free(d);
  graph_free(&g);
}

int main(void) {
  char probe[4096];
  snprintf(probe, sizeof probe, "%s/karate.cgr", datasets);
  if (!gt_exists(probe)) {
    printf("datasets not found at %s: skipped\n", datasets);
    return 77;
  }
  tmpdir = gt_mkdtemp();
  if (!tmpdir) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_values),
      cmocka_unit_test(test_karate_facts),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_rownorm_citeseer),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  gt_rmdir(tmpdir);
  return rc;
}
