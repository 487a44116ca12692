/* test_part_plan — local graphs and exchange plans of hand-made partitions, compared
 * exactly with values worked out by hand (see the adjacency in part_test_util.h), and
 * the invariant checkers catching deliberately broken plans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "partition/partition.h"
#include "part_test_util.h"

/* ---- expected plans, written out by hand ---------------------------------- */

struct expect_plan {
  int rank;
  int64_t n_inner, n_halo;
  int32_t gid[8];
  int npeers;
  int32_t peer[2];
  int64_t recv_offset[2], recv_count[2], send_offset[2], send_count[2];
  int32_t send_idx[8];
};

struct expect_agg {
  int64_t nrows;
  int64_t rowptr[5];
  int32_t col[20];
  double val[20]; /* from the formulas 1/sqrt(d'u d'v) (GCN) or 1/deg(u) (mean) */
};

static void expect_plan_equal(const struct part_local *pl, const struct expect_plan *e) {
  assert_int_equal(pl->rank, e->rank);
  assert_int_equal(pl->n_inner, e->n_inner);
  assert_int_equal(pl->n_halo, e->n_halo);
  assert_true(test_i32_equal(pl->gid, e->gid, e->n_inner + e->n_halo, "gid"));
  assert_int_equal(pl->npeers, e->npeers);
  assert_true(test_i32_equal(pl->peer, e->peer, e->npeers, "peer"));
  assert_true(test_i64_equal(pl->recv_offset, e->recv_offset, e->npeers, "recv_offset"));
  assert_true(test_i64_equal(pl->recv_count, e->recv_count, e->npeers, "recv_count"));
  assert_true(test_i64_equal(pl->send_offset, e->send_offset, e->npeers, "send_offset"));
  assert_true(test_i64_equal(pl->send_count, e->send_count, e->npeers, "send_count"));
  int64_t ns = 0;
  for (int i = 0; i < e->npeers; i++) ns += e->send_count[i];
  assert_true(test_i32_equal(pl->send_idx, e->send_idx, ns, "send_idx"));
}

static void expect_agg_equal(const struct part_local *pl, const struct expect_agg *e) {
  assert_int_equal(pl->agg.nrows, e->nrows);
  assert_int_equal(pl->agg.ncols, pl->n_inner + pl->n_halo);
  assert_true(test_i64_equal(pl->agg.rowptr, e->rowptr, e->nrows + 1, "agg rowptr"));
  int64_t nnz = e->rowptr[e->nrows];
  assert_int_equal(pl->agg.nnz, nnz);
  assert_true(test_i32_equal(pl->agg.colidx, e->col, nnz, "agg col"));
  double worst = 0;
  for (int64_t k = 0; k < nnz; k++) {
    double err = fabs((double)pl->agg.vals[k] - e->val[k]);
    double tol = 1e-7 + 1e-6 * fabs(e->val[k]);
    if (err / tol > worst) worst = err / tol;
    if (err > tol) fprintf(stderr, "agg val[%lld] = %.9g, expected %.9g\n", (long long)k, (double)pl->agg.vals[k], e->val[k]);
  }
  printf("  agg values: worst error / tolerance = %.3g\n", worst);
  assert_true(worst <= 1.0);
}

/* The local operator equals the global operator (graph_aggr_build) row by row,
 * bit for bit, once local columns are mapped back to global ids. */
static void expect_agg_matches_global(const struct graph *g, const struct part_local *pl) {
  struct cg_csr a;
  assert_int_equal(graph_aggr_build(g, pl->norm, pl->self_loops, &a), CG_OK);
  for (int64_t r = 0; r < pl->n_inner; r++) {
    int32_t v = pl->gid[r];
    int64_t lo = pl->agg.rowptr[r], len = pl->agg.rowptr[r + 1] - lo;
    assert_int_equal(len, a.rowptr[v + 1] - a.rowptr[v]);
    for (int64_t k = 0; k < len; k++) {
      int32_t u = pl->gid[pl->agg.colidx[lo + k]];
      int64_t j = a.rowptr[v];
      while (j < a.rowptr[v + 1] && a.colidx[j] != u) j++;
      assert_true(j < a.rowptr[v + 1]);
      assert_true(pl->agg.vals[lo + k] == a.vals[j]);
    }
  }
  cg_csr_free(&a);
}

static void build_all(const struct graph *g, const int32_t *owner, int P, enum graph_norm kind,
                      int self_loops, struct part_local *pls) {
  for (int p = 0; p < P; p++) {
    int st = part_local_build(g, owner, P, p, kind, self_loops, &pls[p]);
    if (st != CG_OK) fprintf(stderr, "%s\n", cg_err_msg());
    assert_int_equal(st, CG_OK);
    st = part_local_check(g, owner, &pls[p]);
    if (st != CG_OK) fprintf(stderr, "%s\n", cg_err_msg());
    assert_int_equal(st, CG_OK);
    expect_agg_matches_global(g, &pls[p]);
  }
  int st = part_plans_check_global(pls, P);
  if (st != CG_OK) fprintf(stderr, "%s\n", cg_err_msg());
  assert_int_equal(st, CG_OK);
}

static void free_all(struct part_local *pls, int P) {
  for (int p = 0; p < P; p++) part_local_free(&pls[p]);
}

#define S(x) (1.0 / sqrt((double)(x)))

/* Case A: two contiguous halves. Vertices 0 and 1 (rank 0) and 7 (rank 1) are interior. */
static const int32_t owner_a[8] = {0, 0, 0, 0, 1, 1, 1, 1};
static void test_two_parts(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_local pls[2];
  build_all(&g, owner_a, 2, GRAPH_NORM_GCN, 1, pls);
  const struct expect_plan e0 = {.rank = 0, .n_inner = 4, .n_halo = 3, .gid = {0, 1, 2, 3, 4, 5, 6},
                                 .npeers = 1, .peer = {1}, .recv_offset = {0}, .recv_count = {3},
                                 .send_offset = {0}, .send_count = {2}, .send_idx = {2, 3}};
  const struct expect_plan e1 = {.rank = 1, .n_inner = 4, .n_halo = 2, .gid = {4, 5, 6, 7, 2, 3},
                                 .npeers = 1, .peer = {0}, .recv_offset = {0}, .recv_count = {2},
                                 .send_offset = {0}, .send_count = {3}, .send_idx = {0, 1, 2}};
  expect_plan_equal(&pls[0], &e0);
  expect_plan_equal(&pls[1], &e1);
  /* GCN degrees d' = 3 4 5 4 4 4 5 3; local ids = global ids on rank 0. */
  const struct expect_agg a0 = {
      .nrows = 4,
      .rowptr = {0, 3, 7, 12, 16},
      .col = {0, 1, 2, /**/ 0, 1, 2, 3, /**/ 0, 1, 2, 4, 6, /**/ 1, 3, 4, 5},
      .val = {S(9), S(12), S(15), /**/ S(12), S(16), S(20), S(16), /**/ S(15), S(20), S(25), S(20),
              S(25), /**/ S(16), S(16), S(16), S(16)}};
  expect_agg_equal(&pls[0], &a0);
  free_all(pls, 2);
  graph_free(&g);
}

/* Case B: three parts; ranks 0 and 2 share no edge, so they are not peers. */
static const int32_t owner_b[8] = {0, 0, 0, 1, 1, 2, 1, 2};
static void test_three_parts_chain(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_local pls[3];
  build_all(&g, owner_b, 3, GRAPH_NORM_GCN, 1, pls);
  const struct expect_plan e0 = {.rank = 0, .n_inner = 3, .n_halo = 3, .gid = {0, 1, 2, 3, 4, 6},
                                 .npeers = 1, .peer = {1}, .recv_offset = {0}, .recv_count = {3},
                                 .send_offset = {0}, .send_count = {2}, .send_idx = {1, 2}};
  const struct expect_plan e1 = {.rank = 1, .n_inner = 3, .n_halo = 4, .gid = {3, 4, 6, 1, 2, 5, 7},
                                 .npeers = 2, .peer = {0, 2}, .recv_offset = {0, 2},
                                 .recv_count = {2, 2}, .send_offset = {0, 3}, .send_count = {3, 2},
                                 .send_idx = {0, 1, 2, 0, 2}};
  const struct expect_plan e2 = {.rank = 2, .n_inner = 2, .n_halo = 2, .gid = {5, 7, 3, 6},
                                 .npeers = 1, .peer = {1}, .recv_offset = {0}, .recv_count = {2},
                                 .send_offset = {0}, .send_count = {2}, .send_idx = {0, 1}};
  expect_plan_equal(&pls[0], &e0);
  expect_plan_equal(&pls[1], &e1);
  expect_plan_equal(&pls[2], &e2);
  /* Rank 1: local 0..6 = gid 3 4 6 | 1 2 | 5 7. */
  const struct expect_agg a1 = {
      .nrows = 3,
      .rowptr = {0, 4, 8, 13},
      .col = {0, 1, 3, 5, /**/ 0, 1, 2, 4, /**/ 1, 2, 4, 5, 6},
      .val = {S(16), S(16), S(16), S(16), /**/ S(16), S(16), S(20), S(20), /**/ S(20), S(25), S(25),
              S(20), S(15)}};
  expect_agg_equal(&pls[1], &a1);
  free_all(pls, 3);

  /* GraphSAGE mean: 1/deg(row), no self-loop even when self_loops is set. */
  build_all(&g, owner_b, 3, GRAPH_NORM_MEAN, 1, pls);
  expect_plan_equal(&pls[2], &e2);
  const struct expect_agg m2 = {.nrows = 2,
                                .rowptr = {0, 3, 5},
                                .col = {1, 2, 3, /**/ 0, 3},
                                .val = {1.0 / 3, 1.0 / 3, 1.0 / 3, /**/ 0.5, 0.5}};
  expect_agg_equal(&pls[2], &m2);
  free_all(pls, 3);
  graph_free(&g);
}

/* Case C: interleaved owners; halo order (by owner) differs from gid order, so the
 * operator's columns must be re-sorted, and send lists are proper subsets. */
static const int32_t owner_c[8] = {2, 0, 0, 1, 2, 1, 0, 2};
static void test_three_parts_interleaved(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_local pls[3];
  build_all(&g, owner_c, 3, GRAPH_NORM_GCN, 1, pls);
  const struct expect_plan e0 = {.rank = 0, .n_inner = 3, .n_halo = 5,
                                 .gid = {1, 2, 6, 3, 5, 0, 4, 7}, .npeers = 2, .peer = {1, 2},
                                 .recv_offset = {0, 2}, .recv_count = {2, 3}, .send_offset = {0, 2},
                                 .send_count = {2, 3}, .send_idx = {0, 2, 0, 1, 2}};
  const struct expect_plan e1 = {.rank = 1, .n_inner = 2, .n_halo = 4, .gid = {3, 5, 1, 6, 4, 7},
                                 .npeers = 2, .peer = {0, 2}, .recv_offset = {0, 2},
                                 .recv_count = {2, 2}, .send_offset = {0, 2}, .send_count = {2, 2},
                                 .send_idx = {0, 1, 0, 1}};
  const struct expect_plan e2 = {.rank = 2, .n_inner = 3, .n_halo = 5,
                                 .gid = {0, 4, 7, 1, 2, 6, 3, 5}, .npeers = 2, .peer = {0, 1},
                                 .recv_offset = {0, 3}, .recv_count = {3, 2}, .send_offset = {0, 3},
                                 .send_count = {3, 2}, .send_idx = {0, 1, 2, 1, 2}};
  expect_plan_equal(&pls[0], &e0);
  expect_plan_equal(&pls[1], &e1);
  expect_plan_equal(&pls[2], &e2);
  /* Rank 0: local 0..7 = gid 1 2 6 | 3 5 | 0 4 7. */
  const struct expect_agg a0 = {
      .nrows = 3,
      .rowptr = {0, 4, 9, 14},
      .col = {0, 1, 3, 5, /**/ 0, 1, 2, 5, 6, /**/ 1, 2, 4, 6, 7},
      .val = {S(16), S(20), S(16), S(12), /**/ S(20), S(25), S(25), S(15), S(20), /**/ S(25), S(25),
              S(20), S(20), S(15)}};
  expect_agg_equal(&pls[0], &a0);
  /* Without self-loops: degrees 2 3 4 3 3 3 4 2, no diagonal entry. */
  part_local_free(&pls[0]);
  assert_int_equal(part_local_build(&g, owner_c, 3, 0, GRAPH_NORM_GCN, 0, &pls[0]), CG_OK);
  assert_int_equal(part_local_check(&g, owner_c, &pls[0]), CG_OK);
  const struct expect_agg n0 = {
      .nrows = 3,
      .rowptr = {0, 3, 7, 11},
      .col = {1, 3, 5, /**/ 0, 2, 5, 6, /**/ 1, 4, 6, 7},
      .val = {S(12), S(9), S(6), /**/ S(12), S(16), S(8), S(12), /**/ S(16), S(12), S(12), S(8)}};
  expect_agg_equal(&pls[0], &n0);
  expect_agg_matches_global(&g, &pls[0]);
  free_all(pls, 3);
  graph_free(&g);
}

/* One part: everything inner, no halo, no peers, the operator is the global one. */
static void test_one_part(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  int32_t owner[8] = {0};
  struct part_local pl;
  build_all(&g, owner, 1, GRAPH_NORM_GCN, 1, &pl);
  assert_int_equal(pl.n_inner, 8);
  assert_int_equal(pl.n_halo, 0);
  assert_int_equal(pl.npeers, 0);
  struct cg_csr a;
  assert_int_equal(graph_aggr_build(&g, GRAPH_NORM_GCN, 1, &a), CG_OK);
  assert_int_equal(pl.agg.nnz, a.nnz);
  assert_true(test_i64_equal(pl.agg.rowptr, a.rowptr, 9, "rowptr"));
  assert_true(test_i32_equal(pl.agg.colidx, a.colidx, a.nnz, "colidx"));
  assert_memory_equal(pl.agg.vals, a.vals, (size_t)a.nnz * sizeof(float));
  cg_csr_free(&a);
  part_local_free(&pl);
  part_local_free(&pl); /* a freed struct is zeroed: freeing again is harmless */
  graph_free(&g);
}

/* A rank that owns nothing still gets a valid (empty) local graph. */
static void test_empty_rank(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_local pls[3];
  build_all(&g, owner_a, 3, GRAPH_NORM_GCN, 1, pls); /* rank 2 owns no vertex */
  assert_int_equal(pls[2].n_inner, 0);
  assert_int_equal(pls[2].n_halo, 0);
  assert_int_equal(pls[2].npeers, 0);
  assert_int_equal(pls[2].agg.nrows, 0);
  free_all(pls, 3);
  graph_free(&g);
}

static void test_bad_arguments(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_local pl;
  int32_t bad[8] = {0, 0, 0, 3, 1, 1, 1, 1};
  assert_int_equal(part_local_build(&g, bad, 2, 0, GRAPH_NORM_GCN, 1, &pl), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "owner[3]"));
  assert_int_equal(part_local_build(&g, owner_a, 2, 2, GRAPH_NORM_GCN, 1, &pl), CG_ERR_ARG);
  assert_int_equal(part_local_build(&g, owner_a, 2, -1, GRAPH_NORM_GCN, 1, &pl), CG_ERR_ARG);
  graph_free(&g);
}

/* ---- the checker catches broken plans -------------------------------------- */

typedef void (*breaker)(struct part_local *pl);
static void brk_halo_order(struct part_local *pl) { /* swap 3 and 5 in rank 0's halo */
  int32_t t = pl->gid[3]; pl->gid[3] = pl->gid[4]; pl->gid[4] = t;
}
static void brk_inner_not_owned(struct part_local *pl) { pl->gid[0] = 0; }
static void brk_send_wrong_vertex(struct part_local *pl) { pl->send_idx[0] = 1; }
static void brk_send_missing(struct part_local *pl) { /* drop vertex 6 from the list to rank 2 */
  pl->send_count[1] = 2;
}
static void brk_recv_boundary(struct part_local *pl) {
  pl->recv_count[0] = 1; pl->recv_offset[1] = 1; pl->recv_count[1] = 4;
}
static void brk_recv_offset(struct part_local *pl) { pl->recv_offset[1] = 3; }
static void brk_drop_peer(struct part_local *pl) { pl->npeers = 1; }
static void brk_agg_value(struct part_local *pl) { pl->agg.vals[3] = nextafterf(pl->agg.vals[3], 1.0f); }
static void brk_agg_column(struct part_local *pl) { pl->agg.colidx[2] = 4; } /* gid 5: not a neighbour of 1 */
static void brk_agg_unsorted(struct part_local *pl) {
  int32_t t = pl->agg.colidx[0]; pl->agg.colidx[0] = pl->agg.colidx[1]; pl->agg.colidx[1] = t;
}
static void brk_agg_missing_self(struct part_local *pl) { pl->self_loops = 0; }
static void brk_halo_extra(struct part_local *pl) { pl->n_halo = 4; pl->recv_count[1] = 2; pl->agg.ncols = 7; }

static void test_checker_catches(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  const struct {
    breaker f;
    const char *msg;
  } cases[] = {
      {brk_halo_order, "grouped by owner"},
      {brk_inner_not_owned, "owned by rank 2"},
      {brk_send_wrong_vertex, "not in the send list"},
      {brk_send_missing, "not in the send list"},
      {brk_recv_boundary, "holds vertex 5 owned by rank 1"},
      {brk_recv_offset, "expected to start at 2"},
      {brk_drop_peer, "cover 2 of 5"},
      {brk_agg_value, "the global operator has"},
      {brk_agg_column, "not an edge"},
      {brk_agg_unsorted, "not strictly increasing"},
      {brk_agg_missing_self, "entries, the global row has"},
      {brk_halo_extra, "halo has 4 vertices"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct part_local pl;
    assert_int_equal(part_local_build(&g, owner_c, 3, 0, GRAPH_NORM_GCN, 1, &pl), CG_OK);
    assert_int_equal(part_local_check(&g, owner_c, &pl), CG_OK);
    cases[i].f(&pl);
    int st = part_local_check(&g, owner_c, &pl);
    printf("  case %zu: %s\n", i, cg_err_msg());
    assert_int_equal(st, CG_ERR_INTERNAL);
    assert_non_null(strstr(cg_err_msg(), cases[i].msg));
    /* restore what the free needs */
    pl.npeers = 2;
    part_local_free(&pl);
  }
  /* Checked against a different owner array. */
  struct part_local pl;
  assert_int_equal(part_local_build(&g, owner_c, 3, 0, GRAPH_NORM_GCN, 1, &pl), CG_OK);
  assert_int_equal(part_local_check(&g, owner_b, &pl), CG_ERR_INTERNAL);
  part_local_free(&pl);
  graph_free(&g);
}

static void test_global_check_catches(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_local pls[3];
  build_all(&g, owner_c, 3, GRAPH_NORM_GCN, 1, pls);
  /* Rank 2 sends its rows to rank 0 in the wrong order. */
  int32_t t = pls[2].send_idx[0];
  pls[2].send_idx[0] = pls[2].send_idx[1];
  pls[2].send_idx[1] = t;
  assert_int_equal(part_plans_check_global(pls, 3), CG_ERR_INTERNAL);
  printf("  %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "from rank 2 to rank 0 is vertex 4, rank 0 expects vertex 0"));
  pls[2].send_idx[1] = pls[2].send_idx[0];
  pls[2].send_idx[0] = t;
  assert_int_equal(part_plans_check_global(pls, 3), CG_OK);

  /* Ranks 1 and 2 built from a different owner array (vertex 7 moved to rank 1):
   * each rank's plan is locally valid, but they disagree with rank 0's. */
  int32_t owner_c2[8];
  memcpy(owner_c2, owner_c, sizeof owner_c2);
  owner_c2[7] = 1;
  for (int p = 1; p < 3; p++) {
    part_local_free(&pls[p]);
    assert_int_equal(part_local_build(&g, owner_c2, 3, p, GRAPH_NORM_GCN, 1, &pls[p]), CG_OK);
    assert_int_equal(part_local_check(&g, owner_c2, &pls[p]), CG_OK);
  }
  assert_int_equal(part_plans_check_global(pls, 3), CG_ERR_INTERNAL);
  printf("  %s\n", cg_err_msg());
  /* Entries out of rank order. */
  struct part_local swap = pls[0];
  pls[0] = pls[1];
  pls[1] = swap;
  assert_int_equal(part_plans_check_global(pls, 3), CG_ERR_INTERNAL);
  assert_non_null(strstr(cg_err_msg(), "entry 0 is rank 1"));
  free_all(pls, 3);
  graph_free(&g);
}

/* A directed CSR (not symmetric): plans follow in-edges, so the sender list is
 * derived from who reads whom, not from the sender's own row. */
static void test_directed_in_edges(void **state) {
  (void)state;
  /* Row v lists the sources of v's in-edges: 1 reads 0, 2 reads 1, 3 reads 0 and 2. */
  static const int32_t e[][2] = {{1, 0}, {2, 1}, {3, 0}, {3, 2}};
  struct graph g;
  test_graph_from_edges(&g, "dir4", 4, e, 4, 1);
  const int32_t owner[4] = {0, 1, 0, 1};
  struct part_local pls[2];
  build_all(&g, owner, 2, GRAPH_NORM_MEAN, 0, pls);
  /* Rank 0 (inner 0, 2): row 0 empty, row 2 reads 1 -> halo {1}. Rank 1 (1, 3)
   * reads 0 and 2 -> rank 0 sends both, though neither of their rows reads rank 1. */
  const struct expect_plan e0 = {.rank = 0, .n_inner = 2, .n_halo = 1, .gid = {0, 2, 1},
                                 .npeers = 1, .peer = {1}, .recv_offset = {0}, .recv_count = {1},
                                 .send_offset = {0}, .send_count = {2}, .send_idx = {0, 1}};
  const struct expect_plan e1 = {.rank = 1, .n_inner = 2, .n_halo = 2, .gid = {1, 3, 0, 2},
                                 .npeers = 1, .peer = {0}, .recv_offset = {0}, .recv_count = {2},
                                 .send_offset = {0}, .send_count = {1}, .send_idx = {0}};
  expect_plan_equal(&pls[0], &e0);
  expect_plan_equal(&pls[1], &e1);
  free_all(pls, 2);
  graph_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_parts),
      cmocka_unit_test(test_three_parts_chain),
      cmocka_unit_test(test_three_parts_interleaved),
      cmocka_unit_test(test_one_part),
      cmocka_unit_test(test_empty_rank),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_checker_catches),
      cmocka_unit_test(test_global_check_catches),
      cmocka_unit_test(test_directed_in_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
