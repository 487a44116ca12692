/* graph/tests/test_reorder.c — locality reordering (graph/reorder.c) and the generator's
 * shuffle=1: orders are permutations, RCM lays a shuffled path out with bandwidth 1, the
 * cluster order recovers the communities of a shuffled synthetic graph (dense tiles come
 * back), the locality measure on hand-computable cases, graph_permute moves every
 * edge, feature row, label and split entry with its vertex (and back), and the shuffled
 * generator gives the same graph under other names, deterministically. */
#include <math.h>
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

#define OK(x)                                        \
  do {                                               \
    int st_ = (x);                                   \
    if (st_ != CG_OK) cg_err_report("test_reorder"); \
    assert_int_equal(st_, CG_OK);                    \
  } while (0)

static int32_t *inverse(const int32_t *order, int64_t n) {
  int32_t *pos = malloc((size_t)n * sizeof *pos);
  assert_non_null(pos);
  for (int64_t i = 0; i < n; i++) pos[order[i]] = (int32_t)i;
  return pos;
}

static int has_edge(const struct graph *g, int64_t u, int32_t v) {
  for (int64_t k = g->rowptr[u]; k < g->rowptr[u + 1]; k++)
    if (g->colidx[k] == v) return 1;
  return 0;
}

/* out is g in `order`: every field of vertex order[i] of g is vertex i's of out. */
static void check_permuted(const struct graph *g, const struct graph *out, const int32_t *order) {
  OK(graph_check(out, "permuted"));
  assert_int_equal(out->n, g->n);
  assert_int_equal(out->m, g->m);
  int32_t *pos = inverse(order, g->n);
  for (int64_t i = 0; i < g->n; i++) {
    const int64_t v = order[i];
    assert_int_equal(out->rowptr[i + 1] - out->rowptr[i], g->rowptr[v + 1] - g->rowptr[v]);
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) assert_true(has_edge(out, i, pos[g->colidx[k]]));
    assert_int_equal(out->split[i], g->split[v]);
    if (g->labels) assert_int_equal(out->labels[i], g->labels[v]);
    if (!g->sparse_feat)
      assert_memory_equal(out->feat_values + i * g->feat_dim, g->feat_values + v * g->feat_dim,
                          (size_t)g->feat_dim * sizeof(float));
  }
  free(pos);
}

static void test_permute_roundtrip(void **state) {
  (void)state;
  struct graph g, p, back;
  OK(graph_synth("synth:tiny", &g));
  const int64_t n = g.n;
  int32_t *order = malloc((size_t)n * sizeof *order);
  for (int64_t i = 0; i < n; i++) order[i] = (int32_t)((i * 37 + 11) % n); /* 37 is prime to 200 */
  OK(graph_order_check(order, n, "test"));
  OK(graph_permute(&g, order, &p));
  check_permuted(&g, &p, order);
  assert_true(p.checksum != g.checksum);
  int32_t *pos = inverse(order, n); /* pos as an order undoes order */
  OK(graph_permute(&p, pos, &back));
  assert_int_equal(back.checksum, g.checksum);
  assert_memory_equal(back.colidx, g.colidx, (size_t)g.m * sizeof(int32_t));
  /* the identity keeps the checksum; a non-permutation is refused */
  graph_free(&back);
  graph_free(&p);
  for (int64_t i = 0; i < n; i++) order[i] = (int32_t)i;
  OK(graph_permute(&g, order, &back));
  assert_int_equal(back.checksum, g.checksum);
  order[3] = 4;
  assert_int_equal(graph_order_check(order, n, "test"), CG_ERR_INTERNAL);
  assert_int_equal(graph_permute(&g, order, &p), CG_ERR_INTERNAL);
  cg_err_clear();
  free(order);
  free(pos);
  graph_free(&back);
  graph_free(&g);
}

/* A path 0-1-...-(n-1) under shuffled names: RCM must lay it out as a path again
 * (every edge between neighbouring positions). */
static void test_rcm_path(void **state) {
  (void)state;
  const int64_t n = 257;
  int32_t *name = malloc((size_t)n * sizeof *name); /* vertex of path position p */
  for (int64_t p = 0; p < n; p++) name[p] = (int32_t)((p * 101 + 7) % n);
  int64_t *rowptr = calloc((size_t)n + 1, sizeof *rowptr);
  int32_t *colidx = malloc((size_t)(2 * n) * sizeof *colidx);
  int32_t *at = malloc((size_t)n * sizeof *at); /* path position of each vertex */
  for (int64_t p = 0; p < n; p++) at[name[p]] = (int32_t)p;
  for (int64_t v = 0; v < n; v++) rowptr[v + 1] = rowptr[v] + (at[v] > 0) + (at[v] < n - 1);
  for (int64_t v = 0; v < n; v++) {
    int64_t k = rowptr[v];
    int32_t a = at[v] > 0 ? name[at[v] - 1] : -1, b = at[v] < n - 1 ? name[at[v] + 1] : -1;
    if (a >= 0 && b >= 0 && a > b) {
      int32_t t = a;
      a = b;
      b = t;
    }
    if (a >= 0) colidx[k++] = a;
    if (b >= 0) colidx[k++] = b;
  }
  struct graph_locality before, after;
  int32_t *order = malloc((size_t)n * sizeof *order);
  OK(graph_order_rcm(n, rowptr, colidx, order));
  OK(graph_order_check(order, n, "rcm"));
  int32_t *pos = inverse(order, n);
  for (int64_t v = 0; v < n; v++)
    for (int64_t k = rowptr[v]; k < rowptr[v + 1]; k++) assert_int_equal(abs(pos[v] - pos[colidx[k]]), 1);
  graph_locality_measure(n, rowptr, colidx, NULL, &before);
  graph_locality_measure(n, rowptr, colidx, order, &after);
  printf("  path of %lld: mean |i-j|/n %.4f shuffled, %.4f after rcm\n", (long long)n, before.mean_dist,
         after.mean_dist);
  assert_int_equal(after.nnz, 2 * (n - 1));
  assert_true(after.mean_dist * (double)n < 1.0 + 1e-9);
  free(name);
  free(rowptr);
  free(colidx);
  free(at);
  free(order);
  free(pos);
}

/* The measure on a hand-computable case: a clique on 128 vertices (16,256 nonzeros, over
 * the 8 x 1024 of a dense tile) in a graph of 2048. Inside one row/column block it is one
 * dense tile; split 64/64 over two blocks, four tiles of 4,032 or 4,096 nonzeros, none
 * dense. */
static void test_locality_clique(void **state) {
  (void)state;
  const int64_t n = 2048, K = 128;
  int64_t *rowptr = calloc((size_t)n + 1, sizeof *rowptr);
  int32_t *colidx = malloc((size_t)(K * (K - 1)) * sizeof *colidx);
  for (int64_t v = 0; v < n; v++) {
    rowptr[v + 1] = rowptr[v];
    if (v < K)
      for (int64_t u = 0; u < K; u++)
        if (u != v) colidx[rowptr[v + 1]++] = (int32_t)u;
  }
  struct graph_locality l;
  graph_locality_measure(n, rowptr, colidx, NULL, &l);
  assert_int_equal(l.nnz, K * (K - 1));
  assert_int_equal(l.dense_tiles, 1);
  assert_true(l.dense_frac == 1.0);
  /* reuse 16,256 / 1,024; a random order would spread them over 2 x 2 tiles: 4x less */
  assert_true(fabs(l.reuse - 16256.0 / 1024.0) < 1e-9);
  assert_true(fabs(l.concentration - 4.0) < 1e-9);
  int32_t *order = malloc((size_t)n * sizeof *order); /* clique vertices 64..127 to positions 1024.. */
  for (int64_t i = 0; i < n; i++) order[i] = (int32_t)i;
  for (int64_t i = 64; i < 128; i++) {
    order[i] = (int32_t)(i + 960);
    order[i + 960] = (int32_t)i;
  }
  OK(graph_order_check(order, n, "swap"));
  graph_locality_measure(n, rowptr, colidx, order, &l);
  assert_int_equal(l.dense_tiles, 0);
  assert_true(l.dense_frac == 0.0);
  const double sq = 2.0 * 4032.0 * 4032.0 + 2.0 * 4096.0 * 4096.0;
  assert_true(fabs(l.reuse - sq / 16256.0 / 1024.0) < 1e-9);
  assert_true(l.concentration < 1.001);
  free(rowptr);
  free(colidx);
  free(order);
}

/* shuffle=1: the same graph under other names (same degree multiset, labels, split
 * counts), deterministic, and the communities come back with the cluster order. */
static void test_shuffle_and_cluster(void **state) {
  (void)state;
  const char *spec = "synth:small:nodes=8192,degree=40";
  struct graph g, s, s2, c;
  OK(graph_synth(spec, &g));
  char sspec[128];
  snprintf(sspec, sizeof sspec, "%s,shuffle=1", spec);
  OK(graph_synth(sspec, &s));
  OK(graph_check(&s, sspec));
  OK(graph_synth(sspec, &s2));
  assert_int_equal(s.checksum, s2.checksum);
  assert_true(s.checksum != g.checksum);
  assert_int_equal(s.n, g.n);
  assert_int_equal(s.m, g.m);
  for (int sp = 0; sp <= 3; sp++)
    assert_int_equal(graph_split_count(&s, (enum graph_split)sp), graph_split_count(&g, (enum graph_split)sp));
  int64_t *dg = calloc((size_t)g.n, sizeof *dg);
  for (int64_t v = 0; v < g.n; v++) dg[g.rowptr[v + 1] - g.rowptr[v]]++;
  for (int64_t v = 0; v < s.n; v++) dg[s.rowptr[v + 1] - s.rowptr[v]]--;
  for (int64_t d = 0; d < g.n; d++) assert_int_equal(dg[d], 0);
  free(dg);

  struct graph_locality lg, ls, lc, lr;
  graph_locality_measure(g.n, g.rowptr, g.colidx, NULL, &lg);
  graph_locality_measure(s.n, s.rowptr, s.colidx, NULL, &ls);
  int32_t *order = malloc((size_t)s.n * sizeof *order);
  OK(graph_order_cluster(s.n, s.rowptr, s.colidx, order));
  OK(graph_order_check(order, s.n, "cluster"));
  graph_locality_measure(s.n, s.rowptr, s.colidx, order, &lc);
  OK(graph_permute(&s, order, &c));
  check_permuted(&s, &c, order);
  OK(graph_order_rcm(s.n, s.rowptr, s.colidx, order));
  OK(graph_order_check(order, s.n, "rcm"));
  graph_locality_measure(s.n, s.rowptr, s.colidx, order, &lr);
  printf("  %s: tile reuse / concentration / mean |i-j|/n: generated %.2f / %.2f / %.4f, shuffled %.2f / %.2f / "
         "%.4f, cluster %.2f / %.2f / %.4f, rcm %.2f / %.2f / %.4f\n", spec, lg.reuse, lg.concentration, lg.mean_dist,
         ls.reuse, ls.concentration, ls.mean_dist, lc.reuse, lc.concentration, lc.mean_dist, lr.reuse,
         lr.concentration, lr.mean_dist);
  assert_true(ls.concentration < 1.2);     /* no locality left */
  assert_true(ls.mean_dist > 0.3);         /* ~1/3: random */
  assert_true(lc.reuse > 0.8 * lg.reuse);  /* the communities are found again */
  assert_true(lc.concentration > 3.0);
  free(order);
  graph_free(&g);
  graph_free(&s);
  graph_free(&s2);
  graph_free(&c);
}

static void test_names(void **state) {
  (void)state;
  enum graph_reorder r;
  const char *names[] = {"none", "rcm", "cluster", "metis", "auto"};
  for (int i = 0; i < 5; i++) {
    OK(graph_reorder_parse(names[i], &r));
    assert_int_equal((int)r, i);
    assert_string_equal(graph_reorder_name(r), names[i]);
  }
  assert_int_equal(graph_reorder_parse("bfs", &r), CG_ERR_ARG);
  cg_err_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_permute_roundtrip),
      cmocka_unit_test(test_rcm_path),
      cmocka_unit_test(test_locality_clique),
      cmocka_unit_test(test_shuffle_and_cluster),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
