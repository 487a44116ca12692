/* runtime/tests/test_agg.c — the split aggregation operator (runtime/model_agg.c,
 * issue #14) against the whole one, on the CPU backend.
 *
 * 1. Row blocks: bounds ascend from 0 to n_in, inner bounds are multiples of 1024, at
 *    most the asked number of blocks, blocks of >= 16384 rows for an operator of >=
 *    32768 rows, none empty.
 * 2. Products: a rank's local problem (synth:small, vertex v owned by v mod 2, rank 1,
 *    GCN and SAGE operators): Â X as inner part + halo part equals the whole Â X to
 *    rounding (|err| <= 1e-6 sum |a x|: the sum is only split in two), and bit for bit
 *    in the plain CSR layout when the halo part is empty for a row; Âᵀ dY by halo rows
 *    and inner blocks equals the whole Âᵀ dY bit for bit in the CSR layout (a row
 *    split does not change a row's sum). The inner blocks of GCN's operator share Â's
 *    (symmetric), SAGE's do not.
 * 3. The poll callback runs after each inner block, and its failure stops the product
 *    and is returned.
 * 4. A rank's dense feature rows past the host's available memory are refused before
 *    they are allocated (rt_local_from_part). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/status.h"
#include "partition/partition.h"
#include "runtime/dist.h"
#include "runtime/runtime_internal.h"

static void test_blocks(void **state) {
  (void)state;
  const int64_t sizes[] = {0, 1, 1000, 1024, 1025, 5000, 11648, 16383, 32767, 32768, 116480, 1000000};
  int64_t blk[9];
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    const int64_t n = sizes[i];
    const int nb = rt_agg_blocks(n, blk, 8);
    printf("  %7lld rows: %d blocks of", (long long)n, nb);
    for (int k = 0; k < nb; k++) printf(" %lld", (long long)(blk[k + 1] - blk[k]));
    printf("\n");
    if (n == 0) {
      assert_int_equal(nb, 0);
      continue;
    }
    assert_true(nb >= 1 && nb <= 8);
    assert_int_equal(blk[0], 0);
    assert_int_equal(blk[nb], n);
    for (int k = 0; k < nb; k++) {
      assert_true(blk[k + 1] > blk[k]);
      if (k > 0) assert_int_equal(blk[k] % 1024, 0);
      if (n >= 32768) assert_true(blk[k + 1] - blk[k] >= 16384);
    }
    /* enough progress points: about 8 below 32768 rows, then at least 2 of >= 16384 */
    if (n >= 8 * 1024 && n < 32768) assert_true(nb >= 4);
    if (n >= 32768) assert_true(nb >= 2 && (nb == 8 || n / nb < 2 * 16384));
  }
  assert_int_equal(rt_agg_blocks(5000, blk, 1), 1);
}

/* Rank 1's local problem of synth:small with owners v mod 2 (1500 inner rows: 2 blocks). */
static void local_problem(enum rt_model_kind kind, struct rt_local *loc) {
  struct graph g;
  struct part_local pl;
  memset(&g, 0, sizeof g);
  memset(&pl, 0, sizeof pl);
  assert_int_equal(graph_open("synth:small", &g), CG_OK);
  int32_t *owner = malloc((size_t)g.n * sizeof *owner);
  assert_non_null(owner);
  for (int64_t v = 0; v < g.n; v++) owner[v] = (int32_t)(v % 2);
  int self_loops = 0;
  const enum graph_norm norm = rt_model_norm(kind, &self_loops);
  assert_int_equal(part_local_build(&g, owner, 2, 1, norm, self_loops, &pl), CG_OK);
  assert_int_equal(rt_local_from_part(&g, &pl, 0, 0, loc), CG_OK);
  assert_true(loc->n_halo > 0);
  part_local_free(&pl);
  free(owner);
  graph_free(&g);
}

/* A rank's inner rows of a sparse file whose feat_dim the file does not bound (2^31 - 1,
 * one value per row), asked dense (--sparse-features off under --load whole): refused
 * against the host's available memory before the allocation, as one process's are
 * (rt_local_from_graph_feat); it used to allocate them (where that succeeds, filling
 * them gets the process killed). Kept sparse, the same rows build. */
static void test_wide_dense_refused(void **state) {
  (void)state;
  struct graph g;
  struct part_local pl;
  memset(&pl, 0, sizeof pl);
  assert_int_equal(graph_open("synth:small:identity=1", &g), CG_OK);
  g.feat_dim = ((int64_t)1 << 31) - 1;
  int32_t *owner = malloc((size_t)g.n * sizeof *owner);
  assert_non_null(owner);
  for (int64_t v = 0; v < g.n; v++) owner[v] = (int32_t)(v % 2);
  int self_loops = 0;
  const enum graph_norm norm = rt_model_norm(RT_MODEL_GCN, &self_loops);
  struct rt_local loc;
  for (int sparse = 0; sparse < 2; sparse++) {
    assert_int_equal(part_local_build(&g, owner, 2, 1, norm, self_loops, &pl), CG_OK);
    const int st = rt_local_from_part(&g, &pl, sparse, 0, &loc);
    printf("  sparse %d: %s\n", sparse, st == CG_OK ? "built" : cg_err_msg());
    if (sparse) {
      assert_int_equal(st, CG_OK);
      assert_int_equal(loc.feat_csr.nnz, loc.n_inner);
      rt_local_free(&loc);
    } else {
      assert_int_equal(st, CG_ERR_NOMEM);
      if (!strstr(cg_err_msg(), "memory this host has available") || !strstr(cg_err_msg(), "--sparse-features on"))
        fail_msg("not the dense features' refusal: %s", cg_err_msg());
      cg_err_clear();
    }
    part_local_free(&pl);
  }
  free(owner);
  graph_free(&g);
}

static void check_products(enum rt_model_kind kind) {
  struct rt_local loc;
  memset(&loc, 0, sizeof loc);
  local_problem(kind, &loc);
  struct cg_backend *be = NULL;
  setenv("CAPGNN_CPU_SPMM", "csr", 1); /* the plain layout: per-row sums in column order */
  assert_int_equal(cg_backend_cpu_create(1, &be), CG_OK);
  const int64_t n_in = loc.n_inner, n_tot = loc.n_inner + loc.n_halo, f = 5;
  struct rt_agg whole, split;
  assert_int_equal(rt_agg_build(be, &loc, 0, f, &whole), CG_OK);
  assert_int_equal(rt_agg_build(be, &loc, 1, f, &split), CG_OK);
  unsetenv("CAPGNN_CPU_SPMM");
  assert_true(split.split && !whole.split && split.nblk >= 1 && split.n_hrows > 0);
  assert_int_equal(split.at_shared, kind == RT_MODEL_GCN); /* GCN's inner block is symmetric */
  float *x = malloc((size_t)(n_tot * f) * sizeof(float)), *dy = malloc((size_t)(n_in * f) * sizeof(float));
  float *y1 = calloc((size_t)(n_in * f), sizeof(float)), *y2 = calloc((size_t)(n_in * f), sizeof(float));
  float *d1 = calloc((size_t)(n_tot * f), sizeof(float)), *d2 = calloc((size_t)(n_tot * f), sizeof(float));
  assert_true(x && dy && y1 && y2 && d1 && d2);
  uint64_t s = 99;
  for (int64_t i = 0; i < n_tot * f; i++) x[i] = (float)((double)((s = s * 6364136223846793005ull + 1) >> 40) / 16777216.0 - 0.5);
  for (int64_t i = 0; i < n_in * f; i++) dy[i] = (float)((double)((s = s * 6364136223846793005ull + 1) >> 40) / 16777216.0 - 0.5);
  assert_int_equal(rt_agg_fwd_inner(be, &whole, x, f, y1, NULL, NULL), CG_OK);
  rt_agg_fwd_halo(be, &whole, x, f, y1, whole.hbuf); /* nothing: whole */
  assert_int_equal(rt_agg_fwd_inner(be, &split, x, f, y2, NULL, NULL), CG_OK);
  rt_agg_fwd_halo(be, &split, x, f, y2, split.hbuf);
  double worst = 0.0;
  int64_t exact_rows = 0, halo_free_rows = 0;
  for (int64_t r = 0; r < n_in; r++) {
    int has_halo = 0;
    for (int64_t k = loc.agg.rowptr[r]; k < loc.agg.rowptr[r + 1]; k++) has_halo |= loc.agg.colidx[k] >= n_in;
    halo_free_rows += !has_halo;
    int same = 1;
    for (int64_t j = 0; j < f; j++) {
      double sum = 0.0;
      for (int64_t k = loc.agg.rowptr[r]; k < loc.agg.rowptr[r + 1]; k++)
        sum += fabs((double)loc.agg.vals[k] * x[(int64_t)loc.agg.colidx[k] * f + j]);
      const double err = fabs((double)y1[r * f + j] - (double)y2[r * f + j]);
      if (err / (1e-6 * sum + 1e-30) > worst) worst = err / (1e-6 * sum + 1e-30);
      same &= memcmp(&y1[r * f + j], &y2[r * f + j], sizeof(float)) == 0;
    }
    exact_rows += same;
    if (!has_halo) assert_true(same); /* nothing added: the inner sum is the whole sum */
  }
  printf("  %s: %lld inner + %lld halo rows, %d blocks, %lld boundary rows; forward: worst error "
         "%.3g of 1e-6 sum|a x|, %lld of %lld rows bit-identical (%lld have no halo column)\n",
         rt_model_kind_str(kind), (long long)n_in, (long long)loc.n_halo, split.nblk,
         (long long)split.n_hrows, worst, (long long)exact_rows, (long long)n_in, (long long)halo_free_rows);
  assert_true(worst <= 1.0);
  rt_agg_bwd_halo(be, &whole, dy, f, d1); /* nothing: whole */
  assert_int_equal(rt_agg_bwd_inner(be, &whole, dy, f, d1, NULL, NULL), CG_OK);
  rt_agg_bwd_halo(be, &split, dy, f, d2);
  assert_int_equal(rt_agg_bwd_inner(be, &split, dy, f, d2, NULL, NULL), CG_OK);
  assert_memory_equal(d1, d2, (size_t)(n_tot * f) * sizeof(float));
  printf("  %s: backward (halo rows, then inner blocks) == whole Âᵀ dY bit for bit\n", rt_model_kind_str(kind));
  free(x);
  free(dy);
  free(y1);
  free(y2);
  free(d1);
  free(d2);
  rt_agg_free(be, &whole);
  rt_agg_free(be, &split);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
}

/* The poll callback runs after every inner block, and its failure stops the product. */
static int poll_count(void *ctx) {
  int *n = ctx;
  return ++*n == 2 ? CG_ERR_MPI : CG_OK;
}

static void test_products(void **state) {
  (void)state;
  check_products(RT_MODEL_GCN);
  check_products(RT_MODEL_SAGE);
}

static void test_poll(void **state) {
  (void)state;
  struct rt_local loc;
  memset(&loc, 0, sizeof loc);
  local_problem(RT_MODEL_GCN, &loc);
  struct cg_backend *be = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &be), CG_OK);
  struct rt_agg g;
  assert_int_equal(rt_agg_build(be, &loc, 1, 4, &g), CG_OK);
  const int64_t n_tot = loc.n_inner + loc.n_halo;
  float *x = calloc((size_t)(n_tot * 4), sizeof(float)), *y = calloc((size_t)(n_tot * 4), sizeof(float));
  assert_true(x && y);
  int n = 0;
  const int want = g.nblk >= 2 ? CG_ERR_MPI : CG_OK;
  assert_true(g.nblk >= 2);
  assert_int_equal(rt_agg_fwd_inner(be, &g, x, 4, y, poll_count, &n), want);
  assert_int_equal(n, 2);
  n = 0;
  assert_int_equal(rt_agg_bwd_inner(be, &g, y, 4, x, poll_count, &n), want);
  assert_int_equal(n, 2);
  free(x);
  free(y);
  rt_agg_free(be, &g);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_blocks), cmocka_unit_test(test_products),
                                     cmocka_unit_test(test_poll), cmocka_unit_test(test_wide_dense_refused)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
