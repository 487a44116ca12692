/* graph/tests/test_cgr_corrupt.c — every check of the .cgr reader fires, with the
 * message that names it. Each case edits the bytes of a valid file written by
 * graph_save_cgr and, where the edit is meant to reach a later check, fixes the
 * section and header CRCs so that the intended check is the one that fires.
 * Base files: a dense single-label graph (synth:tiny), a hand-made graph with sparse
 * features and an unlabelled vertex, and a multilabel graph. No datasets needed. */
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

static char *tmpdir;
static char dense_path[4096], sparse_path[4096], multi_path[4096], bad_path[4096];

enum { ROWPTR, COLIDX, FEAT_ROWPTR, FEAT_COLIDX, FEAT_VALUES, LABELS, SPLIT };
static const char *const secname[7] = {"ROWPTR",      "COLIDX", "FEAT_ROWPTR", "FEAT_COLIDX",
                                       "FEAT_VALUES", "LABELS", "SPLIT"};

/* The sparse base graph: a triangle 0-1-2 with a tail 2-3-4 and isolated vertex 5;
 * 5 features stored as CSR; vertex 4 is unlabelled and in no split. */
static int64_t sp_rowptr[] = {0, 2, 4, 7, 9, 10, 10};
static int32_t sp_colidx[] = {1, 2, 0, 2, 0, 1, 3, 2, 4, 3};
static int64_t sp_frowptr[] = {0, 2, 3, 3, 6, 6, 7};
static int32_t sp_fcolidx[] = {0, 3, 4, 0, 1, 2, 4};
static float sp_fvalues[] = {1, 2, 3, 1, 1, 1, 5};
static int32_t sp_labels[] = {0, 1, 2, 0, -1, 1};
static uint8_t sp_split[] = {1, 2, 3, 1, 0, 3};

static void make_sparse(struct graph *g) {
  memset(g, 0, sizeof *g);
  strcpy(g->name, "handmade");
  g->n = 6;
  g->m = 10;
  g->rowptr = sp_rowptr;
  g->colidx = sp_colidx;
  g->feat_dim = 5;
  g->sparse_feat = 1;
  g->feat_nnz = 7;
  g->feat_rowptr = sp_frowptr;
  g->feat_colidx = sp_fcolidx;
  g->feat_values = sp_fvalues;
  g->num_classes = 3;
  g->labels = sp_labels;
  g->split = sp_split;
}

static int setup(void **state) {
  (void)state;
  tmpdir = gt_mkdtemp();
  if (!tmpdir) return -1;
  snprintf(dense_path, sizeof dense_path, "%s/dense.cgr", tmpdir);
  snprintf(sparse_path, sizeof sparse_path, "%s/sparse.cgr", tmpdir);
  snprintf(multi_path, sizeof multi_path, "%s/multi.cgr", tmpdir);
  snprintf(bad_path, sizeof bad_path, "%s/corrupt.cgr", tmpdir);
  struct graph g;
  if (graph_synth("synth:tiny", &g) || graph_save_cgr(dense_path, &g)) return -1;
  graph_free(&g);
  if (graph_synth("synth:tiny:multilabel=1", &g) || graph_save_cgr(multi_path, &g)) return -1;
  graph_free(&g);
  make_sparse(&g); /* static arrays: not graph_free'd */
  if (graph_save_cgr(sparse_path, &g)) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  gt_rmdir(tmpdir);
  return 0;
}

static unsigned char *base(const char *path, size_t *size) {
  unsigned char *b = gt_read(path, size);
  assert_non_null(b);
  return b;
}

/* Write the edited bytes, load them, expect `status` and a message containing `needle`. */
static void expect_fail(const unsigned char *b, size_t size, int status, const char *needle) {
  assert_int_equal(gt_write(bad_path, b, size), 0);
  struct graph g;
  memset(&g, 0xab, sizeof g);
  cg_err_clear();
  int st = graph_load_cgr(bad_path, &g);
  printf("  -> %s\n", cg_err_msg());
  assert_int_equal(st, status);
  assert_non_null(strstr(cg_err_msg(), needle));
  assert_non_null(strstr(cg_err_msg(), bad_path)); /* the message names the file */
  assert_null(g.rowptr);                           /* nothing leaks or dangles */
  assert_null(g.colidx);
  assert_int_equal(g.n, 0);
}

/* The base files themselves load. */
static void test_bases_load(void **state) {
  (void)state;
  const char *paths[] = {dense_path, sparse_path, multi_path};
  for (int i = 0; i < 3; i++) {
    struct graph g;
    int st = graph_load_cgr(paths[i], &g);
    if (st) cg_err_report("test");
    assert_int_equal(st, CG_OK);
    graph_free(&g);
  }
}

static void test_io_errors(void **state) {
  (void)state;
  char missing[4200];
  snprintf(missing, sizeof missing, "%s/missing.cgr", tmpdir);
  struct graph g;
  assert_int_equal(graph_load_cgr(missing, &g), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "cannot open"));
  assert_int_equal(graph_load_cgr(tmpdir, &g), CG_ERR_IO); /* a folder */
  assert_non_null(strstr(cg_err_msg(), "a folder, not a .cgr file"));
  /* a named pipe is refused at once, not waited on until a writer comes (issue #18) */
  char fifo[4200];
  snprintf(fifo, sizeof fifo, "%s/pipe.cgr", tmpdir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(graph_load_cgr(fifo, &g), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "a named pipe (FIFO), not a .cgr file"));
  assert_int_equal(remove(fifo), 0);
}

static void test_header_checks(void **state) {
  (void)state;
  size_t size;
  unsigned char *b = base(dense_path, &size), *c = malloc(size);
  assert_non_null(c);

  expect_fail(b, 100, CG_ERR_FORMAT, "file too short");
  expect_fail(b, 0, CG_ERR_FORMAT, "file too short");

  memcpy(c, b, size);
  c[7] = '2';
  expect_fail(c, size, CG_ERR_FORMAT, "bad magic");

  memcpy(c, b, size);
  gt_put_u32(c + 8, 3); /* version before the header CRC: a version-3 file is reported as such */
  expect_fail(c, size, CG_ERR_FORMAT, "unsupported version: expected 1 or 2, found 3");

  memcpy(c, b, size);
  gt_put_u32(c + 12, 512);
  expect_fail(c, size, CG_ERR_FORMAT, "header_bytes: expected 256, found 512");

  memcpy(c, b, size);
  gt_put_u32(c + 60, 8);
  expect_fail(c, size, CG_ERR_FORMAT, "num_sections: expected 7, found 8");

  memcpy(c, b, size);
  c[240] ^= 0x20; /* inside the name, CRC left stale */
  expect_fail(c, size, CG_ERR_FORMAT, "header CRC-32 mismatch");

  memcpy(c, b, size);
  gt_put_u32(c + 56, gt_u32(c + 56) | 0x4);
  gt_fix_header_crc(c);
  expect_fail(c, size, CG_ERR_FORMAT, "unknown flag bits");

  memcpy(c, b, size);
  gt_put_u32(c + 56, 0x80000000u);
  gt_fix_header_crc(c);
  expect_fail(c, size, CG_ERR_FORMAT, "unknown flag bits");

  memcpy(c, b, size);
  gt_put_u64(c + 16, 0);
  gt_fix_header_crc(c);
  expect_fail(c, size, CG_ERR_FORMAT, "num_nodes = 0");

  memcpy(c, b, size);
  gt_put_u64(c + 40, 0);
  gt_fix_header_crc(c);
  expect_fail(c, size, CG_ERR_FORMAT, "num_classes = 0");

  memcpy(c, b, size);
  gt_put_u64(c + 48, gt_u64(c + 48) - 1); /* dense: feat_nnz must be n*f */
  gt_fix_header_crc(c);
  expect_fail(c, size, CG_ERR_FORMAT, "feat_nnz");

  memcpy(c, b, size);
  memset(c + 232, 'a', 16); /* a 16-character name leaves no NUL */
  gt_fix_header_crc(c);
  expect_fail(c, size, CG_ERR_FORMAT, "name field is not NUL-terminated");

  unsigned char *longer = calloc(1, size + 64); /* the file goes on past the last section */
  assert_non_null(longer);
  memcpy(longer, b, size);
  expect_fail(longer, size + 64, CG_ERR_FORMAT, "64 trailing bytes after the last section");
  free(longer);
  free(b);
  free(c);
}

/* Check 5 for each section: size, bounds, CRC. */
static void section_checks(const char *path, int sparse) {
  size_t size;
  unsigned char *b = base(path, &size), *c = malloc(size + 64);
  assert_non_null(c);
  char needle[128];
  for (int s = 0; s < 7; s++) {
    uint64_t sz = gt_sec_size(b, s);
    int present = sz > 0;
    assert_int_equal(present, (s == FEAT_ROWPTR || s == FEAT_COLIDX) ? sparse : 1);

    /* Wrong size (a present section one element longer, an empty one non-empty). */
    memcpy(c, b, size);
    gt_put_u64(gt_sec_entry(c, s) + 8, sz + 4);
    gt_fix_header_crc(c);
    snprintf(needle, sizeof needle, "section %d (%s) size: expected %llu bytes, found %llu", s,
             secname[s], (unsigned long long)sz, (unsigned long long)(sz + 4));
    expect_fail(c, size, CG_ERR_FORMAT, needle);
    if (!present) continue;

    /* offset + size beyond the end of the file. */
    memcpy(c, b, size);
    gt_put_u64(gt_sec_entry(c, s), size - sz + 64);
    gt_fix_header_crc(c);
    snprintf(needle, sizeof needle, "section %d (%s) extends beyond end of file", s, secname[s]);
    expect_fail(c, size, CG_ERR_FORMAT, needle);
    memcpy(c, b, size);
    gt_put_u64(gt_sec_entry(c, s), UINT64_MAX - 8); /* offset + size would wrap around */
    gt_fix_header_crc(c);
    expect_fail(c, size, CG_ERR_FORMAT, needle);

    /* One flipped bit inside the section, CRC left stale. */
    memcpy(c, b, size);
    gt_sec(c, s)[sz / 2] ^= 0x10;
    snprintf(needle, sizeof needle, "section %d (%s) CRC-32 mismatch: stored 0x%08x", s, secname[s],
             gt_u32(gt_sec_entry(b, s) + 16));
    expect_fail(c, size, CG_ERR_FORMAT, needle);
  }
  /* A truncated file: the last section runs past the end. */
  expect_fail(b, size - 1, CG_ERR_FORMAT, "section 6 (SPLIT) extends beyond end of file");
  free(b);
  free(c);
}

static void test_section_checks_dense(void **state) {
  (void)state;
  section_checks(dense_path, 0);
}
static void test_section_checks_sparse(void **state) {
  (void)state;
  section_checks(sparse_path, 1);
}
static void test_section_checks_multilabel(void **state) {
  (void)state;
  section_checks(multi_path, 0);
}

/* Check 6 and the strong checks on the graph CSR (dense base, n = 200). */
static void test_graph_csr_checks(void **state) {
  (void)state;
  size_t size;
  unsigned char *b = base(dense_path, &size), *c = malloc(size);
  assert_non_null(c);
  const int64_t n = (int64_t)gt_u64(b + 16), m = (int64_t)gt_u64(b + 24);
  int64_t *rp;
  int32_t *ci;
#define FRESH()                              \
  do {                                       \
    memcpy(c, b, size);                      \
    rp = (int64_t *)gt_sec(c, ROWPTR);       \
    ci = (int32_t *)gt_sec(c, COLIDX);       \
  } while (0)

  FRESH();
  rp[0] = 1;
  gt_fix_all(c, ROWPTR);
  expect_fail(c, size, CG_ERR_FORMAT, "ROWPTR[0] = 1, expected 0");

  FRESH();
  rp[n] = m - 2;
  gt_fix_all(c, ROWPTR);
  expect_fail(c, size, CG_ERR_FORMAT, "ROWPTR[n] =");
  assert_non_null(strstr(cg_err_msg(), "expected m ="));

  /* Decreasing: make row 4 start after it ends. */
  FRESH();
  rp[4] = rp[5] + 1;
  gt_fix_all(c, ROWPTR);
  expect_fail(c, size, CG_ERR_FORMAT, "ROWPTR decreases at row 4");

  FRESH();
  ci[m - 1] = (int32_t)n;
  gt_fix_all(c, COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, "COLIDX column index out of range");
  FRESH();
  ci[0] = -1;
  gt_fix_all(c, COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, "COLIDX column index out of range");

  /* Find a row with at least two entries. */
  int64_t r = 0;
  while (r < n && rp[r + 1] - rp[r] < 2) r++;
  assert_true(r < n);
  char needle[128];
  snprintf(needle, sizeof needle, "COLIDX row %lld is not strictly increasing", (long long)r);
  FRESH();
  int32_t t = ci[rp[r]];
  ci[rp[r]] = ci[rp[r] + 1];
  ci[rp[r] + 1] = t;
  gt_fix_all(c, COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, needle); /* unsorted */
  FRESH();
  ci[rp[r] + 1] = ci[rp[r]];
  gt_fix_all(c, COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, needle); /* duplicate */

  /* Asymmetric: move one entry of row u to a column that keeps the row sorted but
   * whose row does not hold u. */
  FRESH();
  int found = 0;
  for (int64_t u = 0; u < n && !found; u++)
    for (int64_t k = rp[u]; k < rp[u + 1] && !found; k++) {
      int64_t lo = k > rp[u] ? ci[k - 1] : -1, hi = k + 1 < rp[u + 1] ? ci[k + 1] : n;
      if (ci[k] + 1 < hi && ci[k] + 1 != u && ci[k] + 1 > lo) {
        ci[k] = ci[k] + 1; /* a fresh column: it was not in the (sorted) row */
        int64_t v = ci[k];
        int mirrored = 0;
        for (int64_t q = rp[v]; q < rp[v + 1]; q++) mirrored |= ci[q] == u;
        if (mirrored) {
          ci[k] = ci[k] - 1;
          continue;
        }
        found = 1;
      }
    }
  assert_true(found);
  gt_fix_all(c, COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, "graph is not symmetric");

  /* Self-loop: replace an entry of row u by u where the row stays sorted. */
  FRESH();
  found = 0;
  for (int64_t u = 0; u < n && !found; u++)
    for (int64_t k = rp[u]; k < rp[u + 1] && !found; k++) {
      int64_t lo = k > rp[u] ? ci[k - 1] : -1, hi = k + 1 < rp[u + 1] ? ci[k + 1] : n;
      if (lo < u && u < hi) {
        ci[k] = (int32_t)u;
        found = 1;
        snprintf(needle, sizeof needle, "self-loop at vertex %lld", (long long)u);
      }
    }
  assert_true(found);
  gt_fix_all(c, COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, needle);
#undef FRESH
  free(b);
  free(c);
}

static void test_label_split_feature_checks(void **state) {
  (void)state;
  size_t size;
  unsigned char *b = base(dense_path, &size), *c = malloc(size);
  assert_non_null(c);
  const int64_t n = (int64_t)gt_u64(b + 16), cls = (int64_t)gt_u64(b + 40);
  int32_t *lab;
  uint8_t *spl;
  float *fv;
#define FRESH()                                  \
  do {                                           \
    memcpy(c, b, size);                          \
    lab = (int32_t *)gt_sec(c, LABELS);          \
    spl = (uint8_t *)gt_sec(c, SPLIT);           \
    fv = (float *)gt_sec(c, FEAT_VALUES);        \
  } while (0)

  FRESH();
  lab[7] = (int32_t)cls;
  gt_fix_all(c, LABELS);
  expect_fail(c, size, CG_ERR_FORMAT, "label out of range at vertex 7");
  FRESH();
  lab[7] = -2;
  gt_fix_all(c, LABELS);
  expect_fail(c, size, CG_ERR_FORMAT, "label out of range at vertex 7");

  FRESH();
  spl[n - 1] = 4;
  gt_fix_all(c, SPLIT);
  expect_fail(c, size, CG_ERR_FORMAT, "split value 4 at vertex");

  /* Unlabelled vertex in the train split (synth splits every vertex). */
  FRESH();
  int64_t u = 0;
  while (spl[u] != 1) u++;
  lab[u] = -1;
  gt_fix_all(c, LABELS);
  expect_fail(c, size, CG_ERR_FORMAT, "unlabelled vertex in a split");

  FRESH();
  fv[11] = NAN;
  gt_fix_all(c, FEAT_VALUES);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_VALUES entry 11 is not finite");
  FRESH();
  fv[12] = -INFINITY;
  gt_fix_all(c, FEAT_VALUES);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_VALUES entry 12 is not finite");
#undef FRESH
  free(b);
  free(c);

  /* Multilabel: entries are 0/1. */
  b = base(multi_path, &size);
  c = malloc(size);
  assert_non_null(c);
  memcpy(c, b, size);
  gt_sec(c, LABELS)[5] = 2;
  gt_fix_all(c, LABELS);
  expect_fail(c, size, CG_ERR_FORMAT, "label out of range: expected 0 or 1");
  free(b);
  free(c);
}

/* The sparse feature CSR passes the same structural checks as the graph. */
static void test_sparse_feature_checks(void **state) {
  (void)state;
  size_t size;
  unsigned char *b = base(sparse_path, &size), *c = malloc(size);
  assert_non_null(c);
  int64_t *rp;
  int32_t *ci;
  float *fv;
#define FRESH()                                  \
  do {                                           \
    memcpy(c, b, size);                          \
    rp = (int64_t *)gt_sec(c, FEAT_ROWPTR);      \
    ci = (int32_t *)gt_sec(c, FEAT_COLIDX);      \
    fv = (float *)gt_sec(c, FEAT_VALUES);        \
  } while (0)

  FRESH();
  rp[0] = 1;
  gt_fix_all(c, FEAT_ROWPTR);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_ROWPTR[0] = 1, expected 0");
  FRESH();
  rp[6] = 6;
  gt_fix_all(c, FEAT_ROWPTR);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_ROWPTR[n] = 6, expected feat_nnz = 7");
  FRESH();
  rp[2] = 4; /* row 2 now [4, 3) */
  gt_fix_all(c, FEAT_ROWPTR);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_ROWPTR decreases at row 2");
  FRESH();
  ci[2] = 5; /* f = 5 */
  gt_fix_all(c, FEAT_COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_COLIDX column index out of range: row 1");
  FRESH();
  ci[3] = 2; /* row 3 = {2, 1, 2}: unsorted */
  gt_fix_all(c, FEAT_COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_COLIDX row 3 is not strictly increasing");
  FRESH();
  ci[4] = 0; /* row 3 = {0, 0, 2}: duplicate */
  gt_fix_all(c, FEAT_COLIDX);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_COLIDX row 3 is not strictly increasing");
  FRESH();
  fv[6] = INFINITY;
  gt_fix_all(c, FEAT_VALUES);
  expect_fail(c, size, CG_ERR_FORMAT, "FEAT_VALUES entry 6 is not finite");

  /* The unlabelled vertex 4 moved into the test split. */
  memcpy(c, b, size);
  gt_sec(c, SPLIT)[4] = 3;
  gt_fix_all(c, SPLIT);
  expect_fail(c, size, CG_ERR_FORMAT, "unlabelled vertex in a split: vertex 4");
#undef FRESH
  free(b);
  free(c);
}

/* The in-memory checker and the writer refuse the same things. */
static void test_check_and_save(void **state) {
  (void)state;
  struct graph g;
  make_sparse(&g);
  assert_int_equal(graph_check(&g, "handmade"), CG_OK);
  sp_colidx[9] = 4; /* row 4 = {4}: a self-loop (and no mirror of 4-3) */
  assert_int_equal(graph_check(&g, "handmade"), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "handmade: self-loop at vertex 4"));
  char out[4200];
  snprintf(out, sizeof out, "%s/refused.cgr", tmpdir);
  assert_int_equal(graph_save_cgr(out, &g), CG_ERR_FORMAT);
  assert_false(gt_exists(out));
  assert_false(gt_tmp_exists(out));
  sp_colidx[9] = 3;
  assert_int_equal(graph_check(&g, "handmade"), CG_OK);

  /* A folder that does not exist: an I/O error, no file left behind. */
  snprintf(out, sizeof out, "%s/no/such/dir/x.cgr", tmpdir);
  assert_int_equal(graph_save_cgr(out, &g), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "cannot write the graph"));

  /* Saving over an existing file replaces it, and the temporary is gone afterwards. */
  snprintf(out, sizeof out, "%s/replace.cgr", tmpdir);
  assert_int_equal(gt_write(out, "junk", 4), 0);
  assert_int_equal(graph_save_cgr(out, &g), CG_OK);
  assert_false(gt_tmp_exists(out));
  struct graph h;
  assert_int_equal(graph_load_cgr(out, &h), CG_OK);
  assert_int_equal(h.n, 6);
  assert_int_equal(h.feat_nnz, 7);
  assert_int_equal(h.labels[4], -1);
  graph_free(&h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bases_load),
      cmocka_unit_test(test_io_errors),
      cmocka_unit_test(test_header_checks),
      cmocka_unit_test(test_section_checks_dense),
      cmocka_unit_test(test_section_checks_sparse),
      cmocka_unit_test(test_section_checks_multilabel),
      cmocka_unit_test(test_graph_csr_checks),
      cmocka_unit_test(test_label_split_feature_checks),
      cmocka_unit_test(test_sparse_feature_checks),
      cmocka_unit_test(test_check_and_save),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
