/* partition/tests/test_local_rows.c — part_local_build_rows (per-rank loading: a rank's
 * local graph from its own rows and the global row pointers) equals part_local_build on
 * the whole graph, field for field and bit for bit, for METIS and random owners, GCN
 * (with and without self-loops) and mean normalisation, and a rank with no vertex; the
 * rows come from the whole graph and, once, from a version-2 .cgr file read by range,
 * where each rank's bytes read must equal what its partition's rows need (the blocks
 * holding them), less than the whole file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/status.h"
#include "graph/graph.h"
#include "partition/partition.h"
#include "../../graph/tests/graph_test_util.h"

static void rows_of(const struct graph *g, const int32_t *owner, int rank, struct graph_rows *r) {
  memset(r, 0, sizeof *r);
  int64_t k = 0, e = 0;
  for (int64_t v = 0; v < g->n; v++)
    if (owner[v] == rank) {
      k++;
      e += g->rowptr[v + 1] - g->rowptr[v];
    }
  r->nrows = k;
  r->rowptr = malloc((size_t)(k + 1) * sizeof *r->rowptr);
  r->colidx = malloc((size_t)(e ? e : 1) * sizeof *r->colidx);
  assert_true(r->rowptr && r->colidx);
  r->rowptr[0] = 0;
  k = 0;
  for (int64_t v = 0; v < g->n; v++)
    if (owner[v] == rank) {
      int64_t d = g->rowptr[v + 1] - g->rowptr[v];
      memcpy(r->colidx + r->rowptr[k], g->colidx + g->rowptr[v], (size_t)d * sizeof(int32_t));
      r->rowptr[k + 1] = r->rowptr[k] + d;
      k++;
    }
}

static void free_rows(struct graph_rows *r) {
  free(r->rowptr);
  free(r->colidx);
  memset(r, 0, sizeof *r);
}

#define SAME(a, b, cnt) assert_memory_equal((a), (b), (size_t)(cnt) * sizeof *(a))

static void same_local(const struct part_local *a, const struct part_local *b) {
  assert_int_equal(a->n_inner, b->n_inner);
  assert_int_equal(a->n_halo, b->n_halo);
  assert_int_equal(a->npeers, b->npeers);
  SAME(a->gid, b->gid, a->n_inner + a->n_halo);
  SAME(a->peer, b->peer, a->npeers);
  SAME(a->recv_offset, b->recv_offset, a->npeers);
  SAME(a->recv_count, b->recv_count, a->npeers);
  SAME(a->send_offset, b->send_offset, a->npeers);
  SAME(a->send_count, b->send_count, a->npeers);
  int64_t ns = 0;
  for (int i = 0; i < a->npeers; i++) ns += a->send_count[i];
  SAME(a->send_idx, b->send_idx, ns);
  assert_int_equal(a->agg.nrows, b->agg.nrows);
  assert_int_equal(a->agg.ncols, b->agg.ncols);
  SAME(a->agg.rowptr, b->agg.rowptr, a->agg.nrows + 1);
  SAME(a->agg.colidx, b->agg.colidx, a->agg.rowptr[a->agg.nrows]);
  SAME(a->agg.vals, b->agg.vals, a->agg.rowptr[a->agg.nrows]); /* bits, not a tolerance */
  SAME(a->agg.row_scale, b->agg.row_scale, a->agg.nrows);
  SAME(a->agg.col_scale, b->agg.col_scale, a->agg.ncols);
}

static void compare_all(const struct graph *g, const int32_t *owner, int P) {
  const struct {
    enum graph_norm k;
    int self;
  } norms[] = {{GRAPH_NORM_GCN, 1}, {GRAPH_NORM_GCN, 0}, {GRAPH_NORM_MEAN, 0}};
  for (size_t t = 0; t < 3; t++)
    for (int p = 0; p < P; p++) {
      struct part_local whole, own;
      struct graph_rows r;
      rows_of(g, owner, p, &r);
      assert_int_equal(part_local_build(g, owner, P, p, norms[t].k, norms[t].self, &whole), CG_OK);
      int st = part_local_build_rows(g->n, g->rowptr, &r, owner, P, p, norms[t].k, norms[t].self, &own);
      if (st) cg_err_report("test");
      assert_int_equal(st, CG_OK);
      same_local(&whole, &own);
      assert_int_equal(part_local_check(g, owner, &own), CG_OK);
      part_local_free(&whole);
      part_local_free(&own);
      free_rows(&r);
    }
}

static void test_equal_to_whole(void **state) {
  (void)state;
  struct graph g;
  assert_int_equal(graph_synth("synth:small", &g), CG_OK);
  int32_t *owner = malloc((size_t)g.n * sizeof *owner);
  assert_non_null(owner);
  const struct {
    enum part_method m;
    int P;
  } cases[] = {{PART_METIS, 3}, {PART_METIS, 4}, {PART_RANDOM, 6}};
  for (size_t c = 0; c < 3; c++) {
    struct part_options po = {.method = cases[c].m, .nparts = cases[c].P, .seed = 1};
    assert_int_equal(part_assign(&g, &po, owner), CG_OK);
    compare_all(&g, owner, cases[c].P);
    printf("  synth:small, %s, %d parts: every rank's local graph equal\n", part_method_name(cases[c].m),
           cases[c].P);
  }
  /* rank 2 of 3 owns nothing */
  for (int64_t v = 0; v < g.n; v++) owner[v] = (int32_t)(v % 2);
  compare_all(&g, owner, 3);
  free(owner);
  graph_free(&g);
}

/* The rows read by range from a version-2 file give the same local graph. */
static void test_from_file(void **state) {
  (void)state;
  struct graph g;
  assert_int_equal(graph_synth("synth:small", &g), CG_OK);
  char path[] = "/tmp/capgnn_local_rows_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(close(fd), 0);
  assert_int_equal(graph_save_cgr_version(path, &g, 2, 12), CG_OK);
  int32_t *owner = malloc((size_t)g.n * sizeof *owner);
  struct part_options po = {.method = PART_METIS, .nparts = 4, .seed = 1};
  assert_int_equal(part_assign(&g, &po, owner), CG_OK);
  for (int p = 0; p < 4; p++) {
    struct graph_cgr *f = NULL;
    assert_int_equal(graph_cgr_open(path, &f), CG_OK);
    int64_t *rp = malloc((size_t)(g.n + 1) * sizeof *rp);
    assert_int_equal(graph_cgr_read_rowptr(f, rp), CG_OK);
    int32_t *mine = malloc((size_t)g.n * sizeof *mine);
    int64_t k = 0;
    for (int64_t v = 0; v < g.n; v++)
      if (owner[v] == p) mine[k++] = (int32_t)v;
    struct graph_rows r;
    assert_int_equal(graph_cgr_read_rows(f, rp, mine, k, GRAPH_ROWS_ADJ, &r), CG_OK);
    struct part_local whole, own;
    assert_int_equal(part_local_build(&g, owner, 4, p, GRAPH_NORM_GCN, 1, &whole), CG_OK);
    assert_int_equal(part_local_build_rows(g.n, rp, &r, owner, 4, p, GRAPH_NORM_GCN, 1, &own), CG_OK);
    same_local(&whole, &own);
    /* the bytes this rank read: exactly the header, the block table, the row pointers and
     * the blocks holding its rows (computed from the partition), and well under the file */
    size_t fsize;
    unsigned char *file = gt_read(path, &fsize);
    assert_non_null(file);
    const uint64_t want = gt_cgr_bytes_needed(file, &g, mine, k), got = graph_cgr_bytes_read(f);
    printf("  rank %d of 4: %lld of %lld rows, read %llu bytes (expected from its partition %llu) of %zu\n",
           p, (long long)k, (long long)g.n, (unsigned long long)got, (unsigned long long)want, fsize);
    assert_int_equal(got, want);
    assert_true(got < fsize);
    free(file);
    part_local_free(&whole);
    part_local_free(&own);
    graph_rows_free(&r);
    free(mine);
    free(rp);
    graph_cgr_close(&f);
  }
  remove(path);
  free(owner);
  graph_free(&g);
}

static void test_wrong_rows(void **state) {
  (void)state;
  struct graph g;
  assert_int_equal(graph_synth("synth:tiny", &g), CG_OK);
  int32_t *owner = calloc((size_t)g.n, sizeof *owner);
  for (int64_t v = 0; v < g.n; v++) owner[v] = (int32_t)(v % 2);
  struct graph_rows r;
  rows_of(&g, owner, 0, &r);
  struct part_local pl;
  /* rank 1's rows given as rank 0's: refused by count (n is even, so make them differ) */
  owner[0] = 1;
  assert_int_equal(part_local_build_rows(g.n, g.rowptr, &r, owner, 2, 0, GRAPH_NORM_GCN, 1, &pl), CG_ERR_ARG);
  free_rows(&r);
  free(owner);
  graph_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal_to_whole),
      cmocka_unit_test(test_from_file),
      cmocka_unit_test(test_wrong_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
