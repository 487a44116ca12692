/* graph/tests/test_cgr_range.c — the ranged .cgr reader (graph.h, "ranged reading") and
 * the version-2 layout (docs/cgr-v2.md):
 *  - version 2 round trip: graph_load_cgr reads it back identical, checksum included;
 *  - rows read by range equal the rows of the whole-file read (CSR rows, dense and sparse
 *    features, single and multi labels, split), for v1 and v2 and several block sizes;
 *  - the bytes read are exactly the header, the block table, the row pointers and the
 *    blocks that hold a wanted byte (v2), or every section touched whole (v1), computed
 *    here independently from the whole graph;
 *  - a corrupt block that a read touches is rejected (v2: that block; v1: the section CRC),
 *    one it does not touch is not read (v2) while the whole-file reader rejects it;
 *  - row-normalised rows equal the whole graph's after graph_feat_rownorm, bit for bit;
 *  - the shipped version-1 datasets (cora: sparse, karate: dense) read by range.
 * The shipped files are optional (that part is skipped without them). */
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

static char *tmpdir;

/* rows: pattern 0 = every third vertex, 1 = the first quarter, 2 = none */
static int32_t *pick_rows(int64_t n, int pattern, int64_t *nrows) {
  int32_t *r = malloc((size_t)n * sizeof *r);
  assert_non_null(r);
  int64_t k = 0;
  for (int64_t v = 0; v < n; v++)
    if ((pattern == 0 && v % 3 == 1) || (pattern == 1 && v < n / 4)) r[k++] = (int32_t)v;
  *nrows = k;
  return r;
}

/* Reads `rows` of `path` by range and compares with the whole graph g (the same file). */
static void check_rows_of(const char *path, const struct graph *g, int pattern) {
  int64_t nrows;
  int32_t *rows = pick_rows(g->n, pattern, &nrows);
  struct graph_cgr *f = NULL;
  int st = graph_cgr_open(path, &f);
  if (st) cg_err_report("test");
  assert_int_equal(st, CG_OK);
  struct graph info;
  graph_cgr_info(f, &info);
  assert_string_equal(info.name, g->name);
  assert_int_equal(info.n, g->n);
  assert_int_equal(info.m, g->m);
  assert_int_equal(info.feat_dim, g->feat_dim);
  assert_int_equal(info.checksum, g->checksum);
  int64_t *rp = malloc((size_t)(g->n + 1) * sizeof *rp);
  assert_non_null(rp);
  assert_int_equal(graph_cgr_read_rowptr(f, rp), CG_OK);
  assert_memory_equal(rp, g->rowptr, (size_t)(g->n + 1) * sizeof *rp);
  struct graph_rows r;
  st = graph_cgr_read_rows(f, rp, rows, nrows, GRAPH_ROWS_ADJ, &r);
  if (st) cg_err_report("test");
  assert_int_equal(st, CG_OK);
  float *dense = malloc((size_t)((nrows ? nrows : 1) * g->feat_dim) * sizeof *dense);
  int64_t *rl = malloc((size_t)(nrows ? nrows : 1) * sizeof *rl);
  assert_true(dense && rl);
  for (int64_t i = 0; i < nrows; i++) rl[i] = rows[i];
  if (nrows) graph_feat_dense(g, rl, nrows, dense);
  for (int64_t i = 0; i < nrows; i++) {
    int32_t v = rows[i];
    int64_t d = g->rowptr[v + 1] - g->rowptr[v];
    assert_int_equal(r.rowptr[i + 1] - r.rowptr[i], d);
    assert_memory_equal(r.colidx + r.rowptr[i], g->colidx + g->rowptr[v], (size_t)d * 4);
    assert_int_equal(r.split[i], g->split[v]);
    if (g->multilabel)
      assert_memory_equal(r.mlabels + i * g->num_classes, g->mlabels + v * g->num_classes,
                          (size_t)g->num_classes);
    else
      assert_int_equal(r.labels[i], g->labels[v]);
  }
  if (nrows) assert_memory_equal(r.feat, dense, (size_t)(nrows * g->feat_dim) * sizeof(float));
  size_t fsize;
  unsigned char *file = gt_read(path, &fsize);
  assert_non_null(file);
  uint64_t want = gt_cgr_bytes_needed(file, g, rows, nrows), got = graph_cgr_bytes_read(f);
  printf("  %s (v%u) rows %s: %lld of %lld rows, read %llu bytes (expected %llu) of %zu\n", path,
         graph_cgr_version(f), pattern == 0 ? "v%3==1" : pattern == 1 ? "first quarter" : "none",
         (long long)nrows, (long long)g->n, (unsigned long long)got, (unsigned long long)want, fsize);
  assert_int_equal(got, want);
  free(file);
  graph_rows_free(&r);
  /* row-normalised features: the bits graph_feat_rownorm gives the whole graph */
  struct graph gn;
  assert_int_equal(graph_load_cgr(path, &gn), CG_OK);
  graph_feat_rownorm(&gn);
  if (nrows) graph_feat_dense(&gn, rl, nrows, dense);
  assert_int_equal(graph_cgr_read_rows(f, rp, rows, nrows, GRAPH_ROWS_FEAT_ROWNORM, &r), CG_OK);
  assert_null(r.colidx);
  if (nrows) assert_memory_equal(r.feat, dense, (size_t)(nrows * g->feat_dim) * sizeof(float));
  graph_rows_free(&r);
  /* the adjacency first without features, the features afterwards: the same rows */
  assert_int_equal(graph_cgr_read_rows(f, rp, rows, nrows, GRAPH_ROWS_ADJ | GRAPH_ROWS_NO_FEAT, &r), CG_OK);
  assert_null(r.feat);
  assert_non_null(r.colidx);
  assert_int_equal(graph_cgr_read_rows_feat(f, rows, nrows, GRAPH_ROWS_FEAT_ROWNORM, &r), CG_OK);
  if (nrows) assert_memory_equal(r.feat, dense, (size_t)(nrows * g->feat_dim) * sizeof(float));
  assert_int_equal(graph_cgr_read_rows_feat(f, rows, nrows, 0, &r), CG_ERR_ARG); /* features already there */
  cg_err_clear();
  graph_rows_free(&r);
  graph_free(&gn);
  free(dense);
  free(rl);
  free(rp);
  free(rows);
  graph_cgr_close(&f);
  assert_null(f);
}

static void synth_to(const char *spec, struct graph *g) {
  int st = graph_synth(spec, g);
  if (st) cg_err_report("test");
  assert_int_equal(st, CG_OK);
}

static void test_v2_roundtrip_and_rows(void **state) {
  (void)state;
  const char *specs[] = {"synth:tiny", "synth:tiny:multilabel=1,seed=3"};
  const unsigned shifts[] = {6, 9, 16};
  for (size_t a = 0; a < 2; a++) {
    struct graph g, back;
    synth_to(specs[a], &g);
    char p1[4096];
    snprintf(p1, sizeof p1, "%s/v1.cgr", tmpdir);
    assert_int_equal(graph_save_cgr(p1, &g), CG_OK);
    assert_int_equal(graph_load_cgr(p1, &back), CG_OK);
    assert_int_equal(back.checksum, g.checksum);
    graph_free(&back);
    for (int pat = 0; pat < 3; pat++) check_rows_of(p1, &g, pat);
    for (size_t k = 0; k < 3; k++) {
      char p2[4096];
      snprintf(p2, sizeof p2, "%s/v2_%u.cgr", tmpdir, shifts[k]);
      assert_int_equal(graph_save_cgr_version(p2, &g, 2, shifts[k]), CG_OK);
      int st = graph_load_cgr(p2, &back);
      if (st) cg_err_report("test");
      assert_int_equal(st, CG_OK);
      assert_true(gt_graph_equal(&g, &back));
      assert_int_equal(back.checksum, g.checksum); /* the same graph, whatever the layout */
      graph_free(&back);
      for (int pat = 0; pat < 3; pat++) check_rows_of(p2, &g, pat);
    }
    /* a quarter of the rows in 64-byte blocks: well under the whole file */
    char p2[4096];
    snprintf(p2, sizeof p2, "%s/v2_6.cgr", tmpdir);
    struct graph_cgr *f = NULL;
    assert_int_equal(graph_cgr_open(p2, &f), CG_OK);
    int64_t nrows, *rp = malloc((size_t)(g.n + 1) * sizeof *rp);
    int32_t *rows = pick_rows(g.n, 1, &nrows);
    struct graph_rows r;
    assert_int_equal(graph_cgr_read_rows(f, g.rowptr, rows, nrows, GRAPH_ROWS_ADJ, &r), CG_OK);
    size_t fsize;
    unsigned char *file = gt_read(p2, &fsize);
    printf("  %s: a quarter of the rows read %llu of %zu bytes\n", specs[a],
           (unsigned long long)graph_cgr_bytes_read(f), fsize);
    assert_true(graph_cgr_bytes_read(f) < fsize / 2);
    free(file);
    free(rp);
    free(rows);
    graph_rows_free(&r);
    graph_cgr_close(&f);
    graph_free(&g);
  }
}

static void test_structure(void **state) {
  (void)state;
  struct graph g, s;
  synth_to("synth:tiny", &g);
  char p[4096];
  snprintf(p, sizeof p, "%s/s.cgr", tmpdir);
  assert_int_equal(graph_save_cgr_version(p, &g, 2, 8), CG_OK);
  struct graph_cgr *f = NULL;
  assert_int_equal(graph_cgr_open(p, &f), CG_OK);
  assert_int_equal(graph_cgr_read_structure(f, &s), CG_OK);
  assert_int_equal(s.checksum, g.checksum);
  assert_memory_equal(s.rowptr, g.rowptr, (size_t)(g.n + 1) * 8);
  assert_memory_equal(s.colidx, g.colidx, (size_t)g.m * 4);
  assert_null(s.feat_values);
  assert_null(s.labels);
  graph_free(&s);
  graph_cgr_close(&f);
  graph_free(&g);
}

/* Flip one byte of section s at byte `at` in a copy of src written to dst. */
static void corrupt_copy(const char *src, const char *dst, int s, uint64_t at) {
  size_t size;
  unsigned char *b = gt_read(src, &size);
  assert_non_null(b);
  b[gt_sec_off(b, s) + at] ^= 0x5a;
  assert_int_equal(gt_write(dst, b, size), 0);
  free(b);
}

static int read_rows_status(const char *path, const struct graph *g, const int32_t *rows, int64_t nrows) {
  struct graph_cgr *f = NULL;
  int st = graph_cgr_open(path, &f);
  if (st) return st;
  struct graph_rows r;
  st = graph_cgr_read_rows(f, g->rowptr, rows, nrows, GRAPH_ROWS_ADJ, &r);
  if (st == CG_OK) graph_rows_free(&r);
  graph_cgr_close(&f);
  return st;
}

static void test_corrupt_block(void **state) {
  (void)state;
  struct graph g, tmp;
  synth_to("synth:tiny", &g);
  char v1[4096], v2[4096], bad[4096];
  snprintf(v1, sizeof v1, "%s/c1.cgr", tmpdir);
  snprintf(v2, sizeof v2, "%s/c2.cgr", tmpdir);
  snprintf(bad, sizeof bad, "%s/bad.cgr", tmpdir);
  assert_int_equal(graph_save_cgr(v1, &g), CG_OK);
  assert_int_equal(graph_save_cgr_version(v2, &g, 2, 6), CG_OK);
  int64_t nrows;
  int32_t *rows = pick_rows(g.n, 1, &nrows); /* the first quarter */
  /* a byte the rows need (the first neighbour entry of the rows) and one in the last
   * 64-byte block of COLIDX, which the first quarter's rows do not reach */
  const uint64_t used = 4 * (uint64_t)g.rowptr[rows[0]], unused = 4 * (uint64_t)g.m - 1;
  assert_true(4 * (uint64_t)g.rowptr[rows[nrows - 1] + 1] < (unused / 64) * 64);

  corrupt_copy(v2, bad, 1, used);
  assert_int_equal(read_rows_status(bad, &g, rows, nrows), CG_ERR_FORMAT);
  printf("  v2, corrupt block read: %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "section 1 (COLIDX) block 0 CRC-32 mismatch"));
  assert_int_equal(graph_load_cgr(bad, &tmp), CG_ERR_FORMAT);

  corrupt_copy(v2, bad, 1, unused);
  assert_int_equal(read_rows_status(bad, &g, rows, nrows), CG_OK); /* never read */
  assert_int_equal(graph_load_cgr(bad, &tmp), CG_ERR_FORMAT);
  printf("  v2, corrupt block not read; the whole-file reader: %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "CRC-32 mismatch"));

  corrupt_copy(v2, bad, 6, 0); /* SPLIT: the first row's byte */
  assert_int_equal(read_rows_status(bad, &g, rows, nrows), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "section 6 (SPLIT) block 0 CRC-32 mismatch"));

  /* version 1: only the section CRC, so any corrupt byte of a section read fails */
  corrupt_copy(v1, bad, 1, unused);
  assert_int_equal(read_rows_status(bad, &g, rows, nrows), CG_ERR_FORMAT);
  printf("  v1, corrupt byte outside the rows: %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "section 1 (COLIDX) CRC-32 mismatch"));

  /* a corrupt block table */
  size_t size;
  unsigned char *b = gt_read(v2, &size);
  b[size - 8] ^= 1;
  assert_int_equal(gt_write(bad, b, size), 0);
  struct graph_cgr *f = NULL;
  assert_int_equal(graph_cgr_open(bad, &f), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "block CRC table CRC-32 mismatch"));
  assert_int_equal(graph_load_cgr(bad, &tmp), CG_ERR_FORMAT);
  /* a truncated v2 file */
  assert_int_equal(gt_write(bad, b, size - 4), 0);
  assert_int_equal(graph_cgr_open(bad, &f), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "block CRC table"));
  free(b);
  free(rows);
  graph_free(&g);
}

/* FEAT_ROWPTR that decreases between two rows read (found reading the code for fuzz/fuzz_cgr): the rows'
 * feature spans then overlap, which the span reader refused as an internal error ("out
 * of order") instead of naming the corrupt field as the whole-file reader does. */
static void test_feat_rowptr_decreasing(void **state) {
  (void)state;
  struct graph g, tmp;
  synth_to("synth:tiny:identity=1", &g); /* sparse features, FEAT_ROWPTR[i] = i */
  char path[4096];
  snprintf(path, sizeof path, "%s/frp.cgr", tmpdir);
  assert_int_equal(graph_save_cgr(path, &g), CG_OK);
  size_t size;
  unsigned char *b = gt_read(path, &size);
  assert_non_null(b);
  gt_put_u64(gt_sec(b, 2) + 8, 3); /* FEAT_ROWPTR[1] = 3 > FEAT_ROWPTR[2] = 2 */
  gt_fix_all(b, 2);
  assert_int_equal(gt_write(path, b, size), 0);
  free(b);
  assert_int_equal(graph_load_cgr(path, &tmp), CG_ERR_FORMAT);
  struct graph_cgr *f = NULL;
  assert_int_equal(graph_cgr_open(path, &f), CG_OK);
  const int32_t rows[2] = {0, 2}; /* [0, 3) and [2, 3): row 1, where it decreases, is not read */
  struct graph_rows r;
  const unsigned how[2] = {0, GRAPH_ROWS_FEAT_SPARSE};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(graph_cgr_read_rows(f, g.rowptr, rows, 2, how[k], &r), CG_ERR_FORMAT);
    printf("  FEAT_ROWPTR decreasing between rows read: %s\n", cg_err_msg());
    assert_non_null(strstr(cg_err_msg(), "FEAT_ROWPTR"));
    assert_non_null(strstr(cg_err_msg(), "check 6"));
  }
  graph_cgr_close(&f);
  graph_free(&g);
}

/* A small sparse file that declares a huge feat_dim (2^31 - 1, all FORMAT.md bounds):
 * its rows read dense would take rows x feat_dim floats (terabytes here); refused before
 * the allocation, against the host's available memory, with the way to keep them sparse
 * (it used to try the allocation: where it succeeds, filling it gets the process killed);
 * read sparse, the same rows still read. */
static void test_dense_feat_huge(void **state) {
  (void)state;
  struct graph g;
  synth_to("synth:tiny:identity=1", &g); /* sparse features, one value per row */
  g.feat_dim = ((int64_t)1 << 31) - 1;
  graph_checksum_update(&g);
  char path[4096];
  snprintf(path, sizeof path, "%s/wide.cgr", tmpdir);
  assert_int_equal(graph_save_cgr(path, &g), CG_OK);
  struct graph_cgr *f = NULL;
  assert_int_equal(graph_cgr_open(path, &f), CG_OK);
  int64_t nrows = 0;
  int32_t *rows = pick_rows(g.n, 0, &nrows);
  struct graph_rows r;
  assert_int_equal(graph_cgr_read_rows(f, g.rowptr, rows, nrows, GRAPH_ROWS_ADJ, &r), CG_ERR_NOMEM);
  printf("  dense rows of feat_dim 2^31 - 1: %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "wide.cgr: "));
  assert_non_null(strstr(cg_err_msg(), "memory this host has available"));
  assert_non_null(strstr(cg_err_msg(), "--sparse-features on"));
  cg_err_clear();
  assert_int_equal(graph_cgr_read_rows(f, g.rowptr, rows, nrows, GRAPH_ROWS_ADJ | GRAPH_ROWS_FEAT_SPARSE, &r), CG_OK);
  assert_int_equal(r.feat_csr.nnz, nrows);
  graph_rows_free(&r);
  free(rows);
  graph_cgr_close(&f);
  graph_free(&g);
}

static void test_shipped_v1(void **state) {
  (void)state;
  const char *names[] = {"cora", "karate"};
  int found = 0;
  for (int i = 0; i < 2; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s.cgr", CAPGNN_TEST_DATASETS, names[i]);
    if (!gt_exists(p)) continue;
    found++;
    struct graph g;
    assert_int_equal(graph_load_cgr(p, &g), CG_OK);
    for (int pat = 0; pat < 3; pat++) check_rows_of(p, &g, pat);
    graph_free(&g);
  }
  if (!found) skip();
}

static int setup(void **state) {
  (void)state;
  tmpdir = gt_mkdtemp();
  return tmpdir ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  gt_rmdir(tmpdir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v2_roundtrip_and_rows),
      cmocka_unit_test(test_structure),
      cmocka_unit_test(test_corrupt_block),
      cmocka_unit_test(test_feat_rowptr_decreasing),
      cmocka_unit_test(test_dense_feat_huge),
      cmocka_unit_test(test_shipped_v1),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
