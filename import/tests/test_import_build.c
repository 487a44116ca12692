/* import/tests/test_import_build.c — the importers' building blocks, without Python:
 * the float/integer parsers against strtof/strtoll, the (gzip) line reader across
 * chunk boundaries and on damaged files, the CSR builder against a sort-based
 * reference (across edge blocks), feature storage choices, the random split, and
 * the edge-list importer end to end on files written here. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "core/philox.h"
#include "core/status.h"
#include "graph/graph.h"
#include "import/import.h"
#include "import/import_internal.h"
#include "core/progress.h"
#include "graph_test_util.h"
#include "import_test_util.h"

static char *tmpdir;
static char pbuf[5][4200];

static const char *P(int slot, const char *name) {
  snprintf(pbuf[slot], sizeof pbuf[slot], "%s/%s", tmpdir, name);
  return pbuf[slot];
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { /* splitmix64: fixed sequence, no libc rand */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- parsers ------------------------------------------------------------------------- */

static void random_number(char *s) {
  int k = 0;
  uint64_t r = rnd();
  if (r & 1) s[k++] = '-';
  int ndig = (int)((r >> 1) % 13), nfrac = (int)((r >> 5) % 13);
  if ((r >> 9) % 4 == 0) ndig = 1;
  for (int i = 0; i < ndig; i++) s[k++] = (char)('0' + rnd() % 10);
  if (nfrac || !ndig) {
    s[k++] = '.';
    if (!ndig && !nfrac) nfrac = 1;
    for (int i = 0; i < nfrac; i++) s[k++] = (char)('0' + rnd() % 10);
  }
  if ((r >> 13) % 3 == 0) {
    s[k++] = (r >> 15) & 1 ? 'e' : 'E';
    if ((r >> 16) & 1) s[k++] = '-';
    k += sprintf(s + k, "%d", (int)((r >> 17) % 50));
  }
  s[k++] = ',';
  s[k] = '\0';
}

static void test_parse_f32_matches_strtof(void **state) {
  (void)state;
  static const char *const fixed[] = {
      "0", "-0", "0.0", "-0.0", "1", "0.1", "-0.057943", "16777216", "16777217", "1e10", "1e-10", "1e11",
      "3.4028235e38", "3.4028236e38", "1e39", "1e-45", "1e-46", "7e-46", "1.17549435e-38", ".5", "5.",
      "0.000000000000000000000000000000000001", "123456789012345678901234567890", "nan", "inf", "-inf",
      "0x1p3", "1.00000005960464477539", "1.000000059604644775390625", "9999999.5", "0.30000001192092896"};
  char buf[128];
  long worst = 0;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] + 2000000; i++) {
    if (i < sizeof fixed / sizeof fixed[0]) snprintf(buf, sizeof buf, "%s,", fixed[i]);
    else random_number(buf);
    const char *p = buf;
    float ours = 0;
    char *end = NULL;
    float ref = strtof(buf, &end);
    int rc = import_parse_f32(&p, &ours);
    assert_int_equal(rc, 0);
    uint32_t a, b;
    memcpy(&a, &ours, 4);
    memcpy(&b, &ref, 4);
    if (a != b || p != end) {
      printf("  '%s': ours %a (consumed %ld), strtof %a (consumed %ld)\n", buf, (double)ours, (long)(p - buf),
             (double)ref, (long)(end - buf));
      worst++;
    }
  }
  assert_int_equal(worst, 0);
  const char *p = "x";
  float f;
  assert_int_equal(import_parse_f32(&p, &f), -1);
}

static void test_parse_i64(void **state) {
  (void)state;
  struct {
    const char *s;
    int ok;
    int64_t v;
  } c[] = {{"0", 1, 0},       {"-5,", 1, -5}, {"+7", 1, 7}, {"9223372036854775807", 1, INT64_MAX},
           {"9223372036854775808", 0, 0}, {"x1", 0, 0}, {"-", 0, 0}, {"12 34", 1, 12}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    const char *p = c[i].s;
    int64_t v = -1;
    assert_int_equal(import_parse_i64(&p, &v) == 0, c[i].ok);
    if (c[i].ok) assert_int_equal(v, c[i].v);
  }
}

/* ---- text reader ------------------------------------------------------------------------- */

static char *make_text(size_t *len) {
  /* Lines of every length class, a 5 MB line (longer than the 4 MB buffer), CRLF
   * endings, and no newline at the end. */
  size_t cap = 16u << 20, k = 0;
  char *t = malloc(cap);
  for (int i = 0; i < 200000; i++) {
    int l = (int)(rnd() % 40);
    for (int j = 0; j < l; j++) t[k++] = (char)('a' + (i + j) % 26);
    if (i % 7 == 0) t[k++] = '\r';
    t[k++] = '\n';
    if (i == 100000) {
      for (int j = 0; j < (5 << 20); j++) t[k++] = (char)('A' + j % 26);
      t[k++] = '\n';
    }
  }
  memcpy(t + k, "last line", 9);
  k += 9;
  *len = k;
  return t;
}

static void check_lines(const char *path, const char *text, size_t len) {
  struct import_text t;
  assert_int_equal(import_text_open(&t, path), CG_OK);
  const char *q = text, *end = text + len;
  char *line;
  int64_t nlines = 0;
  int r;
  while ((r = import_text_next(&t, &line)) > 0) {
    const char *nl = memchr(q, '\n', (size_t)(end - q));
    size_t l = nl ? (size_t)(nl - q) : (size_t)(end - q);
    if (l && q[l - 1] == '\r') l--;
    assert_int_equal(strlen(line), l);
    assert_memory_equal(line, q, l);
    q = nl ? nl + 1 : end;
    nlines++;
    assert_int_equal(t.line, nlines);
  }
  assert_int_equal(r, 0);
  assert_ptr_equal(q, end);
  import_text_close(&t);
}

static void test_text_reader(void **state) {
  (void)state;
  size_t len;
  char *text = make_text(&len);
  assert_int_equal(gt_write(P(0, "plain.txt"), text, len), 0);
  check_lines(P(0, "plain.txt"), text, len);
  gzFile gz = gzopen(P(1, "text.gz"), "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, text, (unsigned)len), (int)len);
  assert_int_equal(gzclose(gz), Z_OK);
  check_lines(P(1, "text.gz"), text, len);

  /* Truncated and corrupt gzip streams fail with the file name. */
  size_t gsize;
  unsigned char *g = gt_read(P(1, "text.gz"), &gsize);
  assert_int_equal(gt_write(P(2, "cut.gz"), g, gsize / 2), 0);
  for (int which = 0; which < 2; which++) {
    if (which == 1) {
      for (size_t i = gsize / 3; i < gsize / 3 + 64; i++) g[i] ^= 0xa5;
      assert_int_equal(gt_write(P(2, "bad.gz"), g, gsize), 0);
    }
    struct import_text t;
    assert_int_equal(import_text_open(&t, which ? P(2, "bad.gz") : P(2, "cut.gz")), CG_OK);
    char *line;
    int r;
    while ((r = import_text_next(&t, &line)) > 0) {
    }
    printf("  -> %s\n", cg_err_msg());
    assert_int_equal(r, CG_ERR_FORMAT);
    assert_non_null(strstr(cg_err_msg(), which ? "bad.gz" : "cut.gz"));
    assert_non_null(strstr(cg_err_msg(), which ? "corrupt" : "truncated"));
    import_text_close(&t);
  }
  free(g);
  free(text);
  struct import_text t;
  assert_int_equal(import_text_open(&t, P(0, "nope.txt")), CG_ERR_NOT_FOUND);
}

/* ---- CSR builder -------------------------------------------------------------------------- */

static int cmp_pair(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Reference: sort all (u, v) keys, dedupe; the same for the symmetric closure. */
static void reference(int64_t n, const int32_t *u, const int32_t *v, int64_t E, int64_t **rowptr,
                      int32_t **col, int64_t *m, int64_t stats[4]) {
  int64_t *dir = malloc((size_t)E * sizeof *dir), *sym = malloc((size_t)2 * E * sizeof *sym);
  int64_t nd = 0, ns = 0, loops = 0;
  for (int64_t i = 0; i < E; i++) {
    if (u[i] == v[i]) {
      loops++;
      continue;
    }
    dir[nd++] = (int64_t)u[i] * n + v[i];
    sym[ns++] = (int64_t)u[i] * n + v[i];
    sym[ns++] = (int64_t)v[i] * n + u[i];
  }
  qsort(dir, (size_t)nd, sizeof *dir, cmp_pair);
  qsort(sym, (size_t)ns, sizeof *sym, cmp_pair);
  int64_t ud = 0, us = 0;
  for (int64_t i = 0; i < nd; i++)
    if (i == 0 || dir[i] != dir[i - 1]) ud++;
  *rowptr = calloc((size_t)n + 1, sizeof **rowptr);
  *col = malloc((size_t)(ns ? ns : 1) * sizeof **col);
  for (int64_t i = 0; i < ns; i++)
    if (i == 0 || sym[i] != sym[i - 1]) {
      (*col)[us++] = (int32_t)(sym[i] % n);
      (*rowptr)[sym[i] / n + 1]++;
    }
  for (int64_t x = 0; x < n; x++) (*rowptr)[x + 1] += (*rowptr)[x];
  *m = us;
  stats[0] = loops;
  stats[1] = nd - ud;
  stats[2] = us - ud;
  stats[3] = 0;
  for (int64_t x = 0; x < n; x++) stats[3] += (*rowptr)[x + 1] == (*rowptr)[x];
  free(dir);
  free(sym);
}

static void build_and_compare(int64_t n, int64_t E, int use_alloc) {
  int32_t *u = malloc((size_t)E * sizeof *u), *v = malloc((size_t)E * sizeof *v);
  for (int64_t i = 0; i < E; i++) {
    uint64_t r = rnd();
    /* Skewed: low ids are hubs, so rows are long and duplicates common. */
    u[i] = (int32_t)((r % (uint64_t)n) * ((r >> 40) % 4 == 0 ? 1 : 0) + ((r >> 20) % (uint64_t)(n / 50 + 1)));
    v[i] = (int32_t)((r >> 32) % (uint64_t)(n - 3)); /* the last 3 ids only as u (some never) */
    if (u[i] >= n - 2) u[i] = (int32_t)(n - 3); /* ids n-2, n-1: isolated */
    if (i % 97 == 0) v[i] = u[i];
  }
  struct import_edges e;
  memset(&e, 0, sizeof e);
  if (use_alloc) {
    assert_int_equal(import_edges_alloc(&e, E), CG_OK);
    for (int64_t i = 0; i < E; i++) {
      e.u[i >> IMPORT_EDGE_BLOCK_SHIFT][i & (IMPORT_EDGE_BLOCK - 1)] = u[i];
      e.v[i >> IMPORT_EDGE_BLOCK_SHIFT][i & (IMPORT_EDGE_BLOCK - 1)] = v[i];
    }
  } else {
    for (int64_t i = 0; i < E; i++) assert_int_equal(import_edges_push(&e, u[i], v[i]), CG_OK);
  }
  struct graph g;
  memset(&g, 0, sizeof g);
  struct import_stats st;
  memset(&st, 0, sizeof st);
  int rc = import_edges_to_csr(&e, n, "test edges", &g, &st);
  if (rc) cg_err_report("csr");
  assert_int_equal(rc, CG_OK);
  assert_null(e.u);
  int64_t *rp, m, ref[4];
  int32_t *col;
  reference(n, u, v, E, &rp, &col, &m, ref);
  assert_int_equal(g.n, n);
  assert_int_equal(g.m, m);
  assert_memory_equal(g.rowptr, rp, (size_t)(n + 1) * sizeof *rp);
  assert_memory_equal(g.colidx, col, (size_t)m * sizeof *col);
  assert_int_equal(st.edges_read, E);
  assert_int_equal(st.self_loops, ref[0]);
  assert_int_equal(st.duplicates, ref[1]);
  assert_int_equal(st.reverse_added, ref[2]);
  assert_int_equal(st.isolated, ref[3]);
  printf("  n=%lld E=%lld -> m=%lld (loops %lld, dups %lld, added %lld, isolated %lld)\n", (long long)n,
         (long long)E, (long long)m, (long long)ref[0], (long long)ref[1], (long long)ref[2], (long long)ref[3]);
  free(rp);
  free(col);
  free(u);
  free(v);
  graph_free(&g);
}

static void test_csr_builder(void **state) {
  (void)state;
  build_and_compare(50, 400, 0);
  build_and_compare(3000, 60000, 1);
  /* Across an edge-block boundary. */
  build_and_compare(200000, IMPORT_EDGE_BLOCK + 12345, 0);
  build_and_compare(5000, IMPORT_EDGE_BLOCK + 777, 1);
  /* A vertex id out of range names the source and the edge. */
  struct import_edges e;
  memset(&e, 0, sizeof e);
  assert_int_equal(import_edges_push(&e, 0, 1), CG_OK);
  assert_int_equal(import_edges_push(&e, 2, 10), CG_OK);
  struct graph g;
  memset(&g, 0, sizeof g);
  struct import_stats st;
  assert_int_equal(import_edges_to_csr(&e, 10, "my.npz", &g, &st), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "my.npz: vertex id out of range in edge 1 (2, 10): 10"));
  assert_null(e.u);
  assert_null(g.rowptr);
  /* No edges at all: every vertex isolated. */
  memset(&e, 0, sizeof e);
  assert_int_equal(import_edges_to_csr(&e, 4, "empty", &g, &st), CG_OK);
  assert_int_equal(g.m, 0);
  assert_int_equal(st.isolated, 4);
  graph_free(&g);
}

/* ---- features, split --------------------------------------------------------------------- */

static void test_feat_store(void **state) {
  (void)state;
  const int64_t n = 100, f = 40;
  for (int mode = 0; mode < 3; mode++)
    for (int density = 0; density < 2; density++) {
      struct graph g;
      memset(&g, 0, sizeof g);
      g.n = n;
      g.feat_dim = f;
      g.feat_values = cg_malloc((size_t)(n * f) * sizeof(float), "test");
      float *ref = malloc((size_t)(n * f) * sizeof *ref);
      int64_t nz = 0;
      for (int64_t k = 0; k < n * f; k++) {
        uint64_t r = rnd();
        float x = (r % 100) < (density ? 90u : 10u) ? (float)((int64_t)(r >> 8) % 1000 - 500) / 7.0f : 0.0f;
        if (k == 5) x = -0.0f;
        ref[k] = g.feat_values[k] = x;
        uint32_t bits;
        memcpy(&bits, &x, 4);
        nz += bits != 0;
      }
      struct import_stats st;
      memset(&st, 0, sizeof st);
      assert_int_equal(import_feat_store(&g, (enum import_feat_storage)mode, &st), CG_OK);
      assert_int_equal(st.nonzero_feats, nz);
      int want_sparse = mode == IMPORT_FEAT_SPARSE || (mode == IMPORT_FEAT_AUTO && !density);
      assert_int_equal(g.sparse_feat, want_sparse);
      assert_int_equal(g.feat_nnz, want_sparse ? nz : n * f);
      float *back = malloc((size_t)(n * f) * sizeof *back);
      graph_feat_dense(&g, NULL, n, back);
      assert_memory_equal(back, ref, (size_t)(n * f) * sizeof *ref); /* bitwise: -0.0 kept */
      free(back);
      free(ref);
      graph_free(&g);
    }
}

static void test_random_split(void **state) {
  (void)state;
  struct graph g;
  memset(&g, 0, sizeof g);
  g.n = 1003;
  g.num_classes = 3;
  g.labels = cg_malloc((size_t)g.n * sizeof *g.labels, "t");
  g.split = cg_malloc((size_t)g.n, "t");
  int64_t L = 0;
  for (int64_t u = 0; u < g.n; u++) {
    g.labels[u] = u % 10 == 3 ? -1 : (int32_t)(u % 3);
    L += g.labels[u] >= 0;
  }
  assert_int_equal(import_random_split(&g, 5), CG_OK);
  int64_t cnt[4] = {0, 0, 0, 0};
  for (int64_t u = 0; u < g.n; u++) {
    cnt[g.split[u]]++;
    if (g.labels[u] < 0) assert_int_equal(g.split[u], 0);
  }
  assert_int_equal(cnt[0], g.n - L);
  assert_int_equal(cnt[1], L * 6 / 10);
  assert_int_equal(cnt[2], L * 2 / 10);
  assert_int_equal(cnt[3], L - L * 6 / 10 - L * 2 / 10);
  /* Not a block of consecutive ids: the train set is spread over the range. */
  int64_t first_half = 0;
  for (int64_t u = 0; u < g.n / 2; u++) first_half += g.split[u] == 1;
  assert_true(first_half > cnt[1] / 3 && first_half < 2 * cnt[1] / 3);
  graph_free(&g);
}

/* ---- the edge-list importer, end to end ------------------------------------------------------ */

static void test_edgelist_import(void **state) {
  (void)state;
  const int64_t n = 500, f = 40, E = 3000;
  int32_t *u = malloc((size_t)E * sizeof *u), *v = malloc((size_t)E * sizeof *v);
  gzFile gz = gzopen(P(0, "graph.el.gz"), "wb");
  gzprintf(gz, "# source target\n");
  for (int64_t i = 0; i < E; i++) {
    u[i] = (int32_t)(rnd() % (uint64_t)(n - 1));
    v[i] = (int32_t)(rnd() % (uint64_t)(n - 1));
    if (i % 50 == 0) v[i] = u[i];
    gzprintf(gz, i % 2 ? "%d %d\n" : "%d,%d\n", u[i], v[i]);
  }
  gzclose(gz);
  float *x = malloc((size_t)(n * f) * sizeof *x);
  int32_t *y = malloc((size_t)n * sizeof *y);
  uint8_t *s = malloc((size_t)n);
  for (int64_t k = 0; k < n * f; k++) x[k] = rnd() % 5 == 0 ? (float)(rnd() % 1000) / 8.0f : 0.0f;
  for (int64_t i = 0; i < n; i++) {
    y[i] = (int32_t)(rnd() % 4);
    s[i] = (uint8_t)(rnd() % 4);
  }
  y[9] = -1;
  s[9] = 0;
  char shape2[64], shape1[64];
  snprintf(shape2, sizeof shape2, "(%lld, %lld)", (long long)n, (long long)f);
  snprintf(shape1, sizeof shape1, "(%lld,)", (long long)n);
  assert_int_equal(it_write_npy(P(1, "X.npy"), "<f4", shape2, x, (size_t)(n * f) * 4), 0);
  assert_int_equal(it_write_npy(P(2, "Y.npy"), "<i4", shape1, y, (size_t)n * 4), 0);
  assert_int_equal(it_write_npy(P(3, "S.npy"), "|u1", shape1, s, (size_t)n), 0);
  struct import_opts o = {.input = pbuf[0], .features = pbuf[1], .labels = pbuf[2], .split = pbuf[3]};
  struct graph g;
  struct import_stats st;
  int rc = import_graph("edgelist", &o, &g, &st);
  if (rc) cg_err_report("edgelist");
  assert_int_equal(rc, CG_OK);
  assert_string_equal(g.name, "graph"); /* graph.el.gz without its extensions */
  int64_t *rp, m, ref[4];
  int32_t *col;
  reference(n, u, v, E, &rp, &col, &m, ref);
  assert_int_equal(g.m, m);
  assert_memory_equal(g.rowptr, rp, (size_t)(n + 1) * 8);
  assert_memory_equal(g.colidx, col, (size_t)m * 4);
  assert_int_equal(st.self_loops, ref[0]);
  assert_int_equal(g.sparse_feat, 1); /* 20 % dense: auto picks CSR */
  float *back = malloc((size_t)(n * f) * sizeof *back);
  graph_feat_dense(&g, NULL, n, back);
  assert_memory_equal(back, x, (size_t)(n * f) * 4);
  assert_memory_equal(g.labels, y, (size_t)n * 4);
  assert_memory_equal(g.split, s, (size_t)n);
  assert_int_equal(g.num_classes, 4);
  assert_int_equal(graph_check(&g, "imported"), CG_OK);
  graph_free(&g);

  /* An edge list with self-loops only: a graph without edges, imported, with a note. */
  FILE *fl = fopen(P(4, "loops.txt"), "w");
  assert_non_null(fl);
  fputs("# only loops\n3 3\n7 7\n", fl);
  fclose(fl);
  struct import_opts o2 = o;
  o2.input = pbuf[4];
  assert_int_equal(import_graph("edgelist", &o2, &g, &st), CG_OK);
  assert_int_equal(g.m, 0);
  int noted = 0;
  for (int i = 0; i < st.nnotes; i++) noted |= strstr(st.notes[i], "holds no edge") != NULL;
  assert_true(noted);
  graph_free(&g);

  /* A split without test vertices (a 0 train / 1 val / 2 test file): imported, with a
   * note saying the values; one without train vertices: refused. */
  uint8_t *s2 = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++) s2[i] = y[i] < 0 ? 0 : (uint8_t)(i % 3);
  assert_int_equal(it_write_npy(P(3, "S.npy"), "|u1", shape1, s2, (size_t)n), 0);
  assert_int_equal(import_graph("edgelist", &o, &g, &st), CG_OK);
  noted = 0;
  for (int i = 0; i < st.nnotes; i++) noted |= strstr(st.notes[i], "has no test (3) vertex") && strstr(st.notes[i], "shifted by one");
  assert_true(noted);
  graph_free(&g);
  for (int64_t i = 0; i < n; i++) s2[i] = y[i] < 0 ? 0 : 2;
  assert_int_equal(it_write_npy(P(3, "S.npy"), "|u1", shape1, s2, (size_t)n), 0);
  assert_int_equal(import_graph("edgelist", &o, &g, NULL), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "S.npy: no vertex is in the train split"));
  free(s2);

  /* A label without a vertex in a split, and a split value out of range. */
  s[9] = 1;
  assert_int_equal(it_write_npy(P(3, "S.npy"), "|u1", shape1, s, (size_t)n), 0);
  assert_int_equal(import_graph("edgelist", &o, &g, NULL), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "S.npy: vertex 9 is in the train split but has no label in"));
  s[9] = 4;
  assert_int_equal(it_write_npy(P(3, "S.npy"), "|u1", shape1, s, (size_t)n), 0);
  assert_int_equal(import_graph("edgelist", &o, &g, NULL), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "S.npy: split value 4 at vertex 9"));
  /* Labels of the wrong dtype and features of the wrong rank. */
  assert_int_equal(it_write_npy(P(2, "Y.npy"), "<f4", shape1, x, (size_t)n * 4), 0);
  assert_int_equal(import_graph("edgelist", &o, &g, NULL), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "Y.npy: wrong dtype '<f4' for labels"));
  assert_int_equal(it_write_npy(P(1, "X.npy"), "<f4", "(20000,)", x, (size_t)(n * f) * 4), 0);
  assert_int_equal(import_graph("edgelist", &o, &g, NULL), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "X.npy: wrong shape (20000,), expected (*, *)"));
  /* Missing --labels; unknown source. */
  o.labels = NULL;
  assert_int_equal(import_graph("edgelist", &o, &g, NULL), CG_ERR_ARG);
  assert_int_equal(import_graph("planetoid", &o, &g, NULL), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "unknown source format 'planetoid'"));
  free(back);
  free(rp);
  free(col);
  free(u);
  free(v);
  free(x);
  free(y);
  free(s);
}

int main(void) {
  tmpdir = gt_mkdtemp();
  if (!tmpdir) return 1;
  cg_progress_set_mode(CG_PROGRESS_OFF);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_f32_matches_strtof), cmocka_unit_test(test_parse_i64),
      cmocka_unit_test(test_text_reader),             cmocka_unit_test(test_csr_builder),
      cmocka_unit_test(test_feat_store),              cmocka_unit_test(test_random_split),
      cmocka_unit_test(test_edgelist_import),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  gt_rmdir(tmpdir);
  return failed;
}
