/* cuda/tests/test_spmm_tiles.c — the tiled SpMM layout (cuda/spmm_tiles_internal.h), built on
 * the host; needs no GPU.
 *
 * Checked: the invariants (cgk_tiles_check); every nonzero of the matrix lands
 * exactly once in the far part or in a tile, with its value; heavy rows stay whole
 * in the far part; rows without tile nonzeros get no slot; the host emulation of
 * the kernels' order equals the plain product (|y - ref| <= 1e-6 + 2e-5 * sum of
 * |terms|, worst error printed); factored / valued / all-ones matrices; a matrix
 * whose factors do not reproduce its values keeps the values; no tiles when the
 * share is below min_share; the same layout with 1 and 2 threads. */
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

#include "core/csr.h"
#include "core/status.h"
#include "cuda/spmm_tiles_internal.h"
#include "tile_matrices.h"

static uint64_t seed = 0x9E3779B97F4A7C15ull;
static double unif(void) { return tm_unif(&seed); }

static void make_matrix(struct cg_csr *a, int64_t nrows, int64_t ncols, int64_t comm, double p_in,
                        double p_out, int64_t hub_every, double p_hub, enum tm_values vals) {
  assert_int_equal(tm_clustered(a, nrows, ncols, comm, p_in, p_out, hub_every, p_hub, vals, &seed),
                   CG_OK);
}

/* Every nonzero of a is found exactly once in t (far or tiles), with its value;
 * every tile segment is padded to CGK_TILE_GROUP entries with zeros at its end. */
static void check_cover(const struct cg_csr *a, const struct cgk_tiles_host *t, int64_t skip_degree) {
  /* dense marks: 0 absent, else 1 + index of the nonzero */
  int64_t n = a->nrows * a->ncols;
  int64_t *slot = calloc((size_t)n, sizeof *slot);
  unsigned char *seen = calloc((size_t)n, 1);
  assert_non_null(slot);
  assert_non_null(seen);
  for (int64_t r = 0; r < a->nrows; r++)
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) slot[r * a->ncols + a->colidx[k]] = k + 1;
  int64_t found = 0, padding = 0;
  for (int64_t r = 0; r < a->nrows; r++)
    for (int64_t k = t->far.rowptr[r]; k < t->far.rowptr[r + 1]; k++) {
      int64_t at = r * a->ncols + t->far.colidx[k];
      assert_true(slot[at] > 0);
      assert_int_equal(seen[at]++, 0);
      if (a->vals) assert_true(t->far.vals[k] == a->vals[slot[at] - 1]);
      found++;
    }
  for (int64_t rb = 0; rb < t->nrb; rb++) {
    for (int64_t tl = t->rb_tile[rb]; tl < t->rb_tile[rb + 1]; tl++) {
      const int32_t *rp = t->tile_rowptr + tl * (CGK_TILE_ROWS + 1);
      for (int sl = 0; sl < CGK_TILE_ROWS; sl++) {
        assert_int_equal((rp[sl + 1] - rp[sl]) % CGK_TILE_GROUP, 0);
        for (int64_t e = t->tile_edge[tl] + rp[sl]; e < t->tile_edge[tl] + rp[sl + 1]; e++) {
          if (t->t_off[e] == CGK_TILE_PAD_OFF) { /* padding: a zero, after the segment's nonzeros */
            assert_true(e + 1 == t->tile_edge[tl] + rp[sl + 1] || t->t_off[e + 1] == CGK_TILE_PAD_OFF);
            if (t->t_val) assert_true(t->t_val[e] == 0.0f);
            padding++;
            continue;
          }
          int64_t r = rb * CGK_TILE_ROWS + t->perm[rb * CGK_TILE_ROWS + sl];
          int64_t c = (int64_t)t->tile_col[tl] * CGK_TILE_COLS + t->t_off[e];
          int64_t at = r * a->ncols + c;
          assert_true(slot[at] > 0);
          assert_int_equal(seen[at]++, 0);
          assert_true(a->rowptr[r + 1] - a->rowptr[r] <= skip_degree); /* heavy rows stay far */
          if (t->t_val) assert_true(t->t_val[e] == a->vals[slot[at] - 1]);
          found++;
        }
      }
    }
    /* a slot holds a row only when that row has tile nonzeros */
    for (int sl = 0; sl < CGK_TILE_ROWS; sl++) {
      if (t->perm[rb * CGK_TILE_ROWS + sl] == CGK_TILE_NO_ROW) continue;
      int64_t len = 0;
      for (int64_t tl = t->rb_tile[rb]; tl < t->rb_tile[rb + 1]; tl++)
        len += t->tile_rowptr[tl * (CGK_TILE_ROWS + 1) + sl + 1] - t->tile_rowptr[tl * (CGK_TILE_ROWS + 1) + sl];
      assert_true(len > 0);
    }
  }
  assert_int_equal(found, a->nnz);
  assert_int_equal(t->far.nnz + t->tile_nnz, a->nnz);
  assert_int_equal(t->tile_nnz + padding, t->tile_len);
  assert_true(padding < (CGK_TILE_GROUP - 1) * (int64_t)CGK_TILE_ROWS * (t->ntiles > 0 ? t->ntiles : 1));
  free(slot);
  free(seen);
}

/* cgk_tiles_spmm_host against a double-precision product. */
static void check_product(const struct cg_csr *a, const struct cgk_tiles_host *t, int64_t f,
                          int64_t pad) {
  int64_t ld = f + pad;
  float *x = malloc((size_t)(a->ncols * ld) * sizeof *x);
  float *y = malloc((size_t)(a->nrows * ld) * sizeof *y);
  assert_non_null(x);
  assert_non_null(y);
  for (int64_t i = 0; i < a->ncols * ld; i++) x[i] = (float)(2.0 * unif() - 1.0);
  for (int64_t i = 0; i < a->nrows * ld; i++) y[i] = 12345.0f;
  cgk_tiles_spmm_host(t, x, ld, y, ld, f);
  double worst = 0.0;
  assert_int_equal(tm_compare_spmm("host emulation", a, x, ld, y, ld, f, 12345.0f, &worst), 0);
  printf("  f=%lld ld=%lld: worst error %.3f of the tolerance\n", (long long)f, (long long)ld, worst);
  free(x);
  free(y);
}

static void layout_case(const struct cg_csr *a, const struct cgk_tile_params *p, const char *label,
                        int want_factored) {
  struct cgk_tiles_host t;
  assert_int_equal(cgk_tiles_build(a, p, &t), CG_OK);
  printf("%s: %lld x %lld, nnz %lld: %lld tiles hold %lld nonzeros (%.1f %%), %s\n", label,
         (long long)a->nrows, (long long)a->ncols, (long long)a->nnz, (long long)t.ntiles,
         (long long)t.tile_nnz, 100.0 * (double)t.tile_nnz / (double)a->nnz,
         t.t_val ? "values" : "factored");
  assert_true(t.ntiles > 0);
  assert_int_equal(cgk_tiles_check(&t), CG_OK);
  assert_int_equal(t.t_val == NULL, want_factored);
  check_cover(a, &t, p->skip_degree);
  check_product(a, &t, 1, 0);
  check_product(a, &t, 41, 3);
  check_product(a, &t, 64, 0);
  cgk_tiles_free(&t);
  assert_int_equal(t.ntiles, 0);
}

static void test_layouts(void **state) {
  (void)state;
  struct cgk_tile_params p = {.min_reuse = 4.0, .skip_degree = 1 << 30, .min_share = 0.3};
  struct cg_csr a;
  /* rectangular, neither side a multiple of the tile: last blocks are partial */
  make_matrix(&a, 1100, 1300, 300, 0.25, 0.01, 0, 0.0, TM_RANDOM);
  layout_case(&a, &p, "valued", 0);
  /* heavy rows stay whole in the far part */
  p.skip_degree = 200;
  layout_case(&a, &p, "valued, heavy rows > 200", 0);
  cg_csr_free(&a);
  p.skip_degree = 1 << 30;
  make_matrix(&a, 900, 900, 250, 0.3, 0.02, 97, 0.6, TM_FACTORED);
  layout_case(&a, &p, "factored", 1);
  /* a value the factors do not reproduce: the layout keeps the values */
  a.vals[a.rowptr[5]] *= 1.01f;
  layout_case(&a, &p, "factors off by 1 %", 0);
  cg_csr_free(&a);
  make_matrix(&a, 700, 600, 200, 0.35, 0.0, 0, 0.0, TM_ONES);
  layout_case(&a, &p, "all ones", 1);
  cg_csr_free(&a);
}

static void test_no_tiles(void **state) {
  (void)state;
  struct cgk_tile_params p = {.min_reuse = 4.0, .skip_degree = 1 << 30, .min_share = 0.3};
  struct cg_csr a;
  struct cgk_tiles_host t;
  /* uniform and sparse: no tile reaches 4 x 256 nonzeros */
  make_matrix(&a, 600, 600, 600, 0.01, 0.01, 0, 0.0, TM_RANDOM);
  assert_int_equal(cgk_tiles_build(&a, &p, &t), CG_OK);
  assert_int_equal(t.ntiles, 0);
  assert_null(t.far.rowptr);
  cg_csr_free(&a);
  /* tiles exist but hold less than min_share of the nonzeros */
  make_matrix(&a, 600, 600, 100, 0.2, 0.014, 0, 0.0, TM_RANDOM);
  p.min_share = 0.95;
  assert_int_equal(cgk_tiles_build(&a, &p, &t), CG_OK);
  assert_int_equal(t.ntiles, 0);
  p.min_share = 0.0;
  assert_int_equal(cgk_tiles_build(&a, &p, &t), CG_OK);
  assert_true(t.ntiles > 0);
  cgk_tiles_free(&t);
  /* bad parameters */
  p.min_reuse = 0.0;
  assert_int_equal(cgk_tiles_build(&a, &p, &t), CG_ERR_ARG);
  cg_csr_free(&a);
  /* empty matrix */
  p.min_reuse = 4.0;
  assert_int_equal(cg_csr_alloc(&a, 10, 10, 0, 1), CG_OK);
  assert_int_equal(cgk_tiles_build(&a, &p, &t), CG_OK);
  assert_int_equal(t.ntiles, 0);
  cg_csr_free(&a);
}

static void test_thread_independent(void **state) {
  (void)state;
  struct cgk_tile_params p = {.min_reuse = 2.0, .skip_degree = 300, .min_share = 0.0};
  struct cg_csr a;
  make_matrix(&a, 1500, 1500, 350, 0.2, 0.02, 101, 0.5, TM_RANDOM);
  struct cgk_tiles_host t1, t2;
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  assert_int_equal(cgk_tiles_build(&a, &p, &t1), CG_OK);
  omp_set_num_threads(2);
  assert_int_equal(cgk_tiles_build(&a, &p, &t2), CG_OK);
  omp_set_num_threads(saved);
  assert_true(t1.ntiles > 0);
  assert_int_equal(t1.ntiles, t2.ntiles);
  assert_int_equal(t1.tile_nnz, t2.tile_nnz);
  assert_memory_equal(t1.rb_tile, t2.rb_tile, (size_t)(t1.nrb + 1) * sizeof *t1.rb_tile);
  assert_memory_equal(t1.tile_col, t2.tile_col, (size_t)t1.ntiles * sizeof *t1.tile_col);
  assert_memory_equal(t1.tile_edge, t2.tile_edge, (size_t)(t1.ntiles + 1) * sizeof *t1.tile_edge);
  assert_memory_equal(t1.tile_rowptr, t2.tile_rowptr,
                      (size_t)t1.ntiles * (CGK_TILE_ROWS + 1) * sizeof *t1.tile_rowptr);
  assert_memory_equal(t1.perm, t2.perm, (size_t)t1.nrb * CGK_TILE_ROWS * sizeof *t1.perm);
  assert_memory_equal(t1.t_off, t2.t_off, (size_t)t1.tile_nnz * sizeof *t1.t_off);
  assert_memory_equal(t1.t_val, t2.t_val, (size_t)t1.tile_nnz * sizeof *t1.t_val);
  assert_memory_equal(t1.far.rowptr, t2.far.rowptr, (size_t)(a.nrows + 1) * sizeof(int64_t));
  assert_memory_equal(t1.far.colidx, t2.far.colidx, (size_t)t1.far.nnz * sizeof(int32_t));
  cgk_tiles_free(&t1);
  cgk_tiles_free(&t2);
  cg_csr_free(&a);
}

/* The slots of a block are dealt so that no warp carries much more than another:
 * longest-first to the least loaded warp keeps the spread within the heaviest row. */
static void test_slot_balance(void **state) {
  (void)state;
  struct cgk_tile_params p = {.min_reuse = 1.0, .skip_degree = 1 << 30, .min_share = 0.0};
  struct cg_csr a;
  make_matrix(&a, 512, 512, 256, 0.3, 0.0, 37, 0.9, TM_RANDOM);
  struct cgk_tiles_host t;
  assert_int_equal(cgk_tiles_build(&a, &p, &t), CG_OK);
  assert_true(t.ntiles > 0);
  for (int64_t rb = 0; rb < t.nrb; rb++) {
    int64_t load[CGK_TILE_WARPS] = {0}, heaviest = 0;
    for (int sl = 0; sl < CGK_TILE_ROWS; sl++) {
      int64_t len = 0;
      for (int64_t tl = t.rb_tile[rb]; tl < t.rb_tile[rb + 1]; tl++)
        len += t.tile_rowptr[tl * (CGK_TILE_ROWS + 1) + sl + 1] - t.tile_rowptr[tl * (CGK_TILE_ROWS + 1) + sl];
      load[sl / CGK_TILE_ROWS_PER_WARP] += len;
      if (len > heaviest) heaviest = len;
    }
    int64_t lo = load[0], hi = load[0];
    for (int w = 1; w < CGK_TILE_WARPS; w++) {
      if (load[w] < lo) lo = load[w];
      if (load[w] > hi) hi = load[w];
    }
    printf("block %lld: warp loads %lld..%lld, heaviest row %lld\n", (long long)rb, (long long)lo,
           (long long)hi, (long long)heaviest);
    assert_true(hi - lo <= heaviest);
  }
  cgk_tiles_free(&t);
  cg_csr_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layouts),
      cmocka_unit_test(test_no_tiles),
      cmocka_unit_test(test_thread_independent),
      cmocka_unit_test(test_slot_balance),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
