/* import/tests/test_import_fixtures.c — every importer against fixtures written by
 * import_fixtures.py (numpy/scipy, an independent .cgr writer): the converted file
 * must equal the expected one byte for byte (graph, features, labels, split,
 * checksum) and report the same changes; every malformed input must fail with a
 * message naming the file and the problem and leave no output behind.
 * Skipped (77) when /usr/bin/python3 cannot import numpy and scipy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "core/status.h"
#include "graph/graph.h"
#include "import/import.h"
#include "core/progress.h"
#include "graph_test_util.h"

#ifndef IMPORT_FIXTURES_PY
#error "IMPORT_FIXTURES_PY must name import_fixtures.py"
#endif
#ifndef FIXTURE_PYTHON
#define FIXTURE_PYTHON "/usr/bin/python3"
#endif

static char *tmpdir;

static void path_of(char *buf, size_t len, const char *c, const char *file) {
  snprintf(buf, len, "%s/%s/%s", tmpdir, c, file);
}

static void opts_for(struct import_opts *o, const char *c, char bufs[4][4200], const char *from) {
  memset(o, 0, sizeof *o);
  o->seed = 1;
  if (strcmp(from, "edgelist") == 0) {
    path_of(bufs[0], sizeof bufs[0], c, "edges.txt");
    path_of(bufs[1], sizeof bufs[1], c, "X.npy");
    path_of(bufs[2], sizeof bufs[2], c, "Y.npy");
    path_of(bufs[3], sizeof bufs[3], c, "S.npy");
    o->input = bufs[0];
    o->features = bufs[1];
    o->labels = bufs[2];
    o->split = bufs[3];
  } else {
    snprintf(bufs[0], sizeof bufs[0], "%s/%s", tmpdir, c);
    o->input = bufs[0];
  }
}

static void read_stats(const char *c, long long v[5]) {
  char p[4200];
  path_of(p, sizeof p, c, "expected_stats.txt");
  FILE *fp = fopen(p, "r");
  assert_non_null(fp);
  assert_int_equal(fscanf(fp, "%lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4]), 5);
  fclose(fp);
}

/* Convert case `c` and compare with expected.cgr, file bytes included. */
static void check_case(const char *c, const char *from) {
  char bufs[4][4200], out[4200], exp[4200];
  struct import_opts o;
  opts_for(&o, c, bufs, from);
  path_of(out, sizeof out, c, "converted.cgr");
  path_of(exp, sizeof exp, c, "expected.cgr");
  struct import_stats s;
  int st = import_convert(from, &o, out, &s);
  if (st) cg_err_report(c);
  assert_int_equal(st, CG_OK);

  size_t na, nb;
  unsigned char *a = gt_read(out, &na), *b = gt_read(exp, &nb);
  assert_non_null(a);
  assert_non_null(b);
  if (na != nb || memcmp(a, b, na) != 0) {
    /* Say what differs before failing. */
    struct graph ga, gb;
    assert_int_equal(graph_load_cgr(out, &ga), CG_OK);
    assert_int_equal(graph_load_cgr(exp, &gb), CG_OK);
    printf("%s: converted file differs from expected.cgr (%zu vs %zu bytes)\n", c, na, nb);
    gt_graph_equal(&ga, &gb);
    graph_free(&ga);
    graph_free(&gb);
    fail();
  }
  free(a);
  free(b);
  /* And it passes every check of the reader. */
  struct graph g;
  assert_int_equal(graph_load_cgr(out, &g), CG_OK);
  assert_string_equal(g.name, "converted");
  assert_string_equal(s.name, "converted");
  assert_int_equal(s.n, g.n);
  assert_int_equal(s.m, g.m);
  assert_int_equal(s.feat_nnz, g.feat_nnz);
  assert_int_equal(s.checksum, g.checksum);

  long long want[5];
  read_stats(c, want);
  assert_int_equal(s.edges_read, want[0]);
  assert_int_equal(s.self_loops, want[1]);
  assert_int_equal(s.duplicates, want[2]);
  assert_int_equal(s.reverse_added, want[3]);
  assert_int_equal(s.isolated, want[4]);
  int64_t count[4] = {0, 0, 0, 0};
  for (int64_t u = 0; u < g.n; u++) count[g.split[u]]++;
  for (int k = 0; k < 4; k++) assert_int_equal(s.split_count[k], count[k]);
  /* The report names what changed. */
  char *text = NULL;
  size_t tlen = 0;
  FILE *mem = open_memstream(&text, &tlen);
  import_stats_print(mem, &s, "");
  fclose(mem);
  char want_loops[64];
  snprintf(want_loops, sizeof want_loops, "removed %lld self-loops", want[1]);
  assert_non_null(strstr(text, want_loops));
  free(text);
  graph_free(&g);
}

static void test_reddit_coo(void **state) { (void)state; check_case("reddit_coo", "dgl-reddit"); }
static void test_reddit_csr(void **state) { (void)state; check_case("reddit_csr", "dgl-reddit"); }
static void test_saint_single(void **state) { (void)state; check_case("saint_single", "saint"); }
static void test_saint_multi(void **state) { (void)state; check_case("saint_multi", "saint"); }
static void test_ogb(void **state) { (void)state; check_case("ogb", "ogb"); }
static void test_ogb_multi(void **state) { (void)state; check_case("ogb_multi", "ogb"); }
static void test_edgelist(void **state) { (void)state; check_case("edgelist", "edgelist"); }

/* --feat-storage dense on a file whose features are stored sparse by default: the
 * same values, the other layout. */
static void test_feat_storage(void **state) {
  (void)state;
  char bufs[4][4200], exp[4200];
  struct import_opts o;
  opts_for(&o, "saint_single", bufs, "saint");
  o.feat_storage = IMPORT_FEAT_DENSE;
  struct graph g, e;
  assert_int_equal(import_graph("saint", &o, &g, NULL), CG_OK);
  path_of(exp, sizeof exp, "saint_single", "expected.cgr");
  assert_int_equal(graph_load_cgr(exp, &e), CG_OK);
  assert_int_equal(e.sparse_feat, 1);
  assert_int_equal(g.sparse_feat, 0);
  assert_int_equal(g.feat_dim, e.feat_dim);
  float *a = malloc((size_t)(g.n * g.feat_dim) * sizeof *a), *b = malloc((size_t)(g.n * g.feat_dim) * sizeof *b);
  graph_feat_dense(&g, NULL, g.n, a);
  graph_feat_dense(&e, NULL, e.n, b);
  assert_memory_equal(a, b, (size_t)(g.n * g.feat_dim) * sizeof *a);
  assert_memory_equal(g.colidx, e.colidx, (size_t)g.m * 4);
  free(a);
  free(b);
  graph_free(&g);
  graph_free(&e);
}

/* Multi-label (n, c) labels and no split file: a seeded 60/20/20 split of the
 * labelled vertices, exactly, and reproducible. */
static void test_edgelist_random_split(void **state) {
  (void)state;
  char bufs[4][4200], ym[4200];
  struct import_opts o;
  opts_for(&o, "edgelist", bufs, "edgelist");
  path_of(ym, sizeof ym, "edgelist", "Y_multi.npy");
  o.labels = ym;
  o.split = NULL;
  o.seed = 7;
  struct graph g1, g2, g3;
  struct import_stats s;
  assert_int_equal(import_graph("edgelist", &o, &g1, &s), CG_OK);
  assert_int_equal(g1.multilabel, 1);
  assert_int_equal(s.random_split, 1);
  int64_t L = 0, cnt[4] = {0, 0, 0, 0};
  for (int64_t u = 0; u < g1.n; u++) {
    int lab = 0;
    for (int64_t k = 0; k < g1.num_classes; k++) lab |= g1.mlabels[u * g1.num_classes + k];
    L += lab;
    if (!lab) assert_int_equal(g1.split[u], 0);
    cnt[g1.split[u]]++;
  }
  assert_int_equal(cnt[1], L * 6 / 10);
  assert_int_equal(cnt[2], L * 2 / 10);
  assert_int_equal(cnt[3], L - L * 6 / 10 - L * 2 / 10);
  assert_int_equal(import_graph("edgelist", &o, &g2, NULL), CG_OK);
  assert_memory_equal(g1.split, g2.split, (size_t)g1.n);
  o.seed = 8;
  assert_int_equal(import_graph("edgelist", &o, &g3, NULL), CG_OK);
  assert_true(memcmp(g1.split, g3.split, (size_t)g1.n) != 0);
  graph_free(&g1);
  graph_free(&g2);
  graph_free(&g3);
}

/* (n, 1) labels are a column of class ids, the same graph as with (n) labels (they were
 * read as a one-class multi-label matrix, silently dropping every vertex labelled 0 or
 * above 1). */
static void test_edgelist_label_column(void **state) {
  (void)state;
  char bufs[4][4200], yc[4200];
  struct import_opts o;
  opts_for(&o, "edgelist", bufs, "edgelist");
  struct graph g1, g2;
  assert_int_equal(import_graph("edgelist", &o, &g1, NULL), CG_OK);
  path_of(yc, sizeof yc, "edgelist", "Y_col.npy");
  o.labels = yc;
  assert_int_equal(import_graph("edgelist", &o, &g2, NULL), CG_OK);
  assert_int_equal(g2.multilabel, 0);
  assert_int_equal(g2.num_classes, g1.num_classes);
  assert_memory_equal(g1.labels, g2.labels, (size_t)g1.n * sizeof *g1.labels);
  assert_memory_equal(g1.split, g2.split, (size_t)g1.n);
  graph_free(&g1);
  graph_free(&g2);
}

/* --features identity: X = I (n x n) stored sparse, never dense; the structure, labels
 * and split those of the same edge list with X.npy. */
static void test_edgelist_identity(void **state) {
  (void)state;
  char bufs[4][4200];
  struct import_opts o;
  opts_for(&o, "edgelist", bufs, "edgelist");
  struct graph g1, g2;
  assert_int_equal(import_graph("edgelist", &o, &g1, NULL), CG_OK);
  o.features = "identity";
  struct import_stats s;
  assert_int_equal(import_graph("edgelist", &o, &g2, &s), CG_OK);
  assert_int_equal(g2.n, g1.n);
  assert_int_equal(g2.m, g1.m);
  assert_memory_equal(g1.rowptr, g2.rowptr, (size_t)(g1.n + 1) * sizeof *g1.rowptr);
  assert_memory_equal(g1.colidx, g2.colidx, (size_t)g1.m * sizeof *g1.colidx);
  assert_memory_equal(g1.labels, g2.labels, (size_t)g1.n * sizeof *g1.labels);
  assert_int_equal(g2.sparse_feat, 1);
  assert_int_equal(g2.feat_dim, g2.n);
  assert_int_equal(g2.feat_nnz, g2.n);
  for (int64_t u = 0; u < g2.n; u++) {
    assert_int_equal(g2.feat_rowptr[u], u);
    assert_int_equal(g2.feat_colidx[u], u);
    assert_true(g2.feat_values[u] == 1.0f);
  }
  assert_string_equal(s.feat_dtype, "identity");
  o.feat_storage = IMPORT_FEAT_DENSE;
  struct graph g3;
  assert_int_equal(import_graph("edgelist", &o, &g3, NULL), CG_ERR_ARG);
  graph_free(&g1);
  graph_free(&g2);
}

/* ---- malformed inputs ---------------------------------------------------------------- */

struct bad_case {
  const char *dir, *from;
  const char *file_part, *problem; /* both must appear in the message */
  int status;
};

static void expect_failure(const struct bad_case *b, const struct import_opts *o) {
  char out[4200];
  snprintf(out, sizeof out, "%s/%s/failed.cgr", tmpdir, b->dir);
  int st = import_convert(b->from, o, out, NULL);
  const char *msg = cg_err_msg();
  printf("  %-20s -> %s\n", b->dir, msg);
  assert_int_equal(st, b->status);
  assert_non_null(strstr(msg, b->file_part));
  assert_non_null(strstr(msg, b->problem));
  assert_false(gt_exists(out));
  assert_false(gt_tmp_exists(out));
}

static void test_malformed(void **state) {
  (void)state;
  static const struct bad_case cases[] = {
      {"bad_truncated_npz", "dgl-reddit", "reddit_graph.npz", "truncated", CG_ERR_FORMAT},
      {"bad_label_dtype", "dgl-reddit", "reddit_data.npz (array 'label')", "wrong dtype '<f4'", CG_ERR_FORMAT},
      {"bad_types_shape", "dgl-reddit", "(array 'node_types')", "wrong shape (39,), expected (40,)", CG_ERR_FORMAT},
      {"bad_types_value", "dgl-reddit", "(array 'node_types')", "split value 7 at vertex 17", CG_ERR_FORMAT},
      {"bad_multilabel", "saint", "class_map.json", "vertex 9, class 1: label out of range", CG_ERR_FORMAT},
      {"bad_json", "saint", "role.json", "invalid JSON", CG_ERR_FORMAT},
      {"bad_role_twice", "saint", "role.json", "is in both the train (tr) and the test (te) split", CG_ERR_FORMAT},
      {"bad_fortran", "saint", "feats.npy", "Fortran (column-major) order", CG_ERR_UNSUPPORTED},
      {"bad_bigendian", "saint", "feats.npy", "big-endian", CG_ERR_FORMAT},
      {"bad_feat_rows", "saint", "feats.npy has 49 rows", "adj_full.npz", CG_ERR_FORMAT},
      {"bad_missing_split", "ogb", "split/time", "missing split file valid.csv.gz", CG_ERR_NOT_FOUND},
      {"bad_ogb_label", "ogb", "node-label.csv.gz", "line 7: label out of range: -5", CG_ERR_FORMAT},
      {"bad_truncated_gz", "ogb", "node-feat.csv.gz", "truncated", CG_ERR_FORMAT},
      {"bad_feat_columns", "ogb", "node-feat.csv.gz", "line 4 has more than 7 values", CG_ERR_FORMAT},
      {"bad_vertex_id", "edgelist", "edges.txt", "line 13: vertex id out of range: 30", CG_ERR_FORMAT},
      {"bad_header", "edgelist", "edges.txt", "line 1: expected two vertex ids \"u v\", found \"src dst\" (a header "
       "or comment line must start with '#'", CG_ERR_FORMAT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char bufs[4][4200];
    struct import_opts o;
    opts_for(&o, cases[i].dir, bufs, cases[i].from);
    expect_failure(&cases[i], &o);
  }
  /* Option-level problems on good inputs. */
  char bufs[4][4200], nope[4200];
  struct import_opts o;
  opts_for(&o, "edgelist", bufs, "edgelist");
  o.num_classes = 2;
  struct bad_case c1 = {"edgelist", "edgelist", "Y.npy", "label out of range", CG_ERR_FORMAT};
  expect_failure(&c1, &o);
  opts_for(&o, "edgelist", bufs, "edgelist");
  path_of(nope, sizeof nope, "edgelist", "Y_nope.npy");
  o.labels = nope;
  struct bad_case c2 = {"edgelist", "edgelist", "Y_nope.npy", "cannot open", CG_ERR_NOT_FOUND};
  expect_failure(&c2, &o);
  opts_for(&o, "ogb", bufs, "ogb");
  o.ogb_split = "nope";
  struct bad_case c3 = {"ogb", "ogb", "split/nope", "missing split folder", CG_ERR_NOT_FOUND};
  expect_failure(&c3, &o);
  opts_for(&o, "reddit_coo", bufs, "saint");
  struct bad_case c4 = {"reddit_coo", "saint", "missing adj_full.npz", "GraphSAINT", CG_ERR_NOT_FOUND};
  expect_failure(&c4, &o);
}

int main(void) {
  tmpdir = gt_mkdtemp();
  if (!tmpdir) return 1;
  cg_progress_set_mode(CG_PROGRESS_OFF);
  char cmd[8400];
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", FIXTURE_PYTHON, IMPORT_FIXTURES_PY, tmpdir);
  int rc = access(FIXTURE_PYTHON, X_OK) == 0 ? system(cmd) : -1;
  int code = rc == -1 ? 77 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
  if (code != 0) {
    fprintf(stderr, code == 77 ? "skipped: %s cannot import numpy and scipy (install python3-numpy "
                                 "python3-scipy)\n"
                               : "fixture writer failed: %s\n",
            FIXTURE_PYTHON);
    gt_rmdir(tmpdir);
    return code == 77 ? 77 : 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reddit_coo),    cmocka_unit_test(test_reddit_csr),
      cmocka_unit_test(test_saint_single),  cmocka_unit_test(test_saint_multi),
      cmocka_unit_test(test_ogb),           cmocka_unit_test(test_ogb_multi),
      cmocka_unit_test(test_edgelist),      cmocka_unit_test(test_feat_storage),
      cmocka_unit_test(test_edgelist_random_split),
      cmocka_unit_test(test_edgelist_label_column),
      cmocka_unit_test(test_edgelist_identity), cmocka_unit_test(test_malformed),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  if (!failed) gt_rmdir(tmpdir);
  else {
    fprintf(stderr, "fixtures kept in %s\n", tmpdir);
    free(tmpdir);
  }
  return failed;
}
