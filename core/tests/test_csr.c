/* core/tests/test_csr.c — cg_csr_transpose against a dense transpose, slices and
 * non-empty rows against the dense matrix, and cg_csr_check against each kind of
 * violation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/csr.h"
#include "core/status.h"
#include "test_util.h"

/* Random CSR with sorted, distinct columns per row (so that the dense form is
 * unambiguous), some empty rows. */
static void make_csr(struct cg_csr *a, int64_t nrows, int64_t ncols, double density,
                     int with_vals, uint64_t seed) {
  struct tu_rng rng = {seed};
  uint8_t *mask = calloc((size_t)(nrows * ncols), 1);
  assert_non_null(mask);
  int64_t nnz = 0;
  for (int64_t r = 0; r < nrows; r++) {
    if (r % 5 == 2) continue; /* empty row */
    for (int64_t c = 0; c < ncols; c++)
      if (tu_unif(&rng, 0, 1) < density) {
        mask[r * ncols + c] = 1;
        nnz++;
      }
  }
  assert_int_equal(cg_csr_alloc(a, nrows, ncols, nnz, with_vals), CG_OK);
  int64_t e = 0;
  for (int64_t r = 0; r < nrows; r++) {
    for (int64_t c = 0; c < ncols; c++)
      if (mask[r * ncols + c]) {
        a->colidx[e] = (int32_t)c;
        if (with_vals) a->vals[e] = (float)tu_unif(&rng, 0.5, 2.0); /* never 0 */
        e++;
      }
    a->rowptr[r + 1] = e;
  }
  free(mask);
}

static float *to_dense(const struct cg_csr *a) {
  float *d = calloc((size_t)(a->nrows * a->ncols) + 1, sizeof *d);
  assert_non_null(d);
  for (int64_t r = 0; r < a->nrows; r++)
    for (int64_t e = a->rowptr[r]; e < a->rowptr[r + 1]; e++)
      d[r * a->ncols + a->colidx[e]] += a->vals ? a->vals[e] : 1.0f;
  return d;
}

static void test_transpose(void **state) {
  (void)state;
  const int64_t shapes[][2] = {{37, 53}, {53, 37}, {1, 20}, {20, 1}};
  for (int s = 0; s < 4; s++)
    for (int vals = 0; vals < 2; vals++) {
      struct cg_csr a, at, att;
      make_csr(&a, shapes[s][0], shapes[s][1], 0.2, vals, 17 + (uint64_t)s);
      assert_int_equal(cg_csr_check(&a, "A"), CG_OK);
      assert_int_equal(cg_csr_transpose(&a, &at), CG_OK);
      assert_int_equal(cg_csr_check(&at, "A^T"), CG_OK);
      assert_int_equal(at.nrows, a.ncols);
      assert_int_equal(at.ncols, a.nrows);
      assert_int_equal(at.nnz, a.nnz);
      assert_int_equal(at.vals != NULL, vals);
      float *d = to_dense(&a), *dt = to_dense(&at);
      for (int64_t r = 0; r < a.nrows; r++)
        for (int64_t c = 0; c < a.ncols; c++)
          assert_true(d[r * a.ncols + c] == dt[c * a.nrows + r]);
      for (int64_t r = 0; r < at.nrows; r++) /* columns sorted in every row */
        for (int64_t e = at.rowptr[r] + 1; e < at.rowptr[r + 1]; e++)
          assert_true(at.colidx[e - 1] < at.colidx[e]);
      /* (A^T)^T == A exactly, since A's rows are sorted */
      assert_int_equal(cg_csr_transpose(&at, &att), CG_OK);
      assert_memory_equal(att.rowptr, a.rowptr, (size_t)(a.nrows + 1) * sizeof(int64_t));
      if (a.nnz) {
        assert_memory_equal(att.colidx, a.colidx, (size_t)a.nnz * sizeof(int32_t));
        if (vals) assert_memory_equal(att.vals, a.vals, (size_t)a.nnz * sizeof(float));
      }
      free(d);
      free(dt);
      cg_csr_free(&a);
      cg_csr_free(&at);
      cg_csr_free(&att);
    }
  /* a zeroed struct can be freed */
  struct cg_csr z;
  memset(&z, 0, sizeof z);
  cg_csr_free(&z);
}

/* Large enough for the parallel transpose (>= 2^20 entries): the same arrays as the
 * sequential counting-sort transpose, bit for bit. */
static void test_transpose_parallel(void **state) {
  (void)state;
  struct cg_csr a, at;
  make_csr(&a, 3001, 1999, 0.25, 1, 21);
  assert_true(a.nnz >= (1 << 20));
  assert_int_equal(cg_csr_transpose(&a, &at), CG_OK);
  int64_t *rp = calloc((size_t)a.ncols + 1, sizeof *rp), *next = calloc((size_t)a.ncols, sizeof *next);
  int32_t *ci = malloc((size_t)a.nnz * sizeof *ci);
  float *v = malloc((size_t)a.nnz * sizeof *v);
  assert_true(rp && next && ci && v);
  for (int64_t k = 0; k < a.nnz; k++) rp[a.colidx[k] + 1]++;
  for (int64_t c = 0; c < a.ncols; c++) rp[c + 1] += rp[c];
  memcpy(next, rp, (size_t)a.ncols * sizeof *next);
  for (int64_t r = 0; r < a.nrows; r++)
    for (int64_t k = a.rowptr[r]; k < a.rowptr[r + 1]; k++) {
      const int64_t d = next[a.colidx[k]]++;
      ci[d] = (int32_t)r;
      v[d] = a.vals[k];
    }
  assert_memory_equal(at.rowptr, rp, (size_t)(a.ncols + 1) * sizeof *rp);
  assert_memory_equal(at.colidx, ci, (size_t)a.nnz * sizeof *ci);
  assert_memory_equal(at.vals, v, (size_t)a.nnz * sizeof *v);
  free(rp);
  free(next);
  free(ci);
  free(v);
  cg_csr_free(&at);
  cg_csr_free(&a);
}

static void expect_violation(struct cg_csr *a, const char *needle) {
  cg_err_clear();
  assert_int_equal(cg_csr_check(a, "broken"), CG_ERR_INTERNAL);
  printf("  caught: %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "broken"));
  assert_non_null(strstr(cg_err_msg(), needle));
  cg_err_clear();
}

static void test_check(void **state) {
  (void)state;
  struct cg_csr a;
  make_csr(&a, 12, 9, 0.4, 1, 3);
  assert_true(a.nnz > 4);
  assert_int_equal(cg_csr_check(&a, "good"), CG_OK);

  a.rowptr[0] = 1;
  expect_violation(&a, "rowptr[0]");
  a.rowptr[0] = 0;

  const int64_t save = a.rowptr[6];
  a.rowptr[6] = a.rowptr[5] - 1; /* row 2 is empty, so row 5 starts after 0 */
  assert_true(a.rowptr[5] > 0);
  expect_violation(&a, "decreases");
  a.rowptr[6] = save;

  a.nnz++;
  expect_violation(&a, "expected nnz");
  a.nnz--;

  a.colidx[3] = -1;
  expect_violation(&a, "out of range");
  a.colidx[3] = 9; /* == ncols */
  expect_violation(&a, "out of range");
  a.colidx[3] = 8;
  assert_int_equal(cg_csr_check(&a, "repaired"), CG_OK);

  /* factors: both or neither, and only with values */
  assert_int_equal(cg_csr_alloc_scales(&a), CG_OK);
  assert_int_equal(cg_csr_check(&a, "factored"), CG_OK);
  float *cs = a.col_scale;
  a.col_scale = NULL;
  expect_violation(&a, "scales");
  a.col_scale = cs;
  float *vals = a.vals;
  a.vals = NULL;
  expect_violation(&a, "scales");
  a.vals = vals;
  cg_csr_free(&a);
}

/* Copy and transpose carry the factors (transposed: swapped). */
static void test_scales(void **state) {
  (void)state;
  struct cg_csr a, b, at;
  make_csr(&a, 12, 9, 0.4, 1, 5);
  assert_int_equal(cg_csr_alloc_scales(&a), CG_OK);
  for (int64_t r = 0; r < a.nrows; r++) a.row_scale[r] = 1.0f + (float)r;
  for (int64_t c = 0; c < a.ncols; c++) a.col_scale[c] = -0.5f * (float)c;
  assert_int_equal(cg_csr_copy(&a, &b), CG_OK);
  assert_int_equal(cg_csr_check(&b, "copy"), CG_OK);
  assert_int_equal(b.nnz, a.nnz);
  assert_memory_equal(b.rowptr, a.rowptr, (size_t)(a.nrows + 1) * sizeof(int64_t));
  assert_memory_equal(b.colidx, a.colidx, (size_t)a.nnz * sizeof(int32_t));
  assert_memory_equal(b.vals, a.vals, (size_t)a.nnz * sizeof(float));
  assert_memory_equal(b.row_scale, a.row_scale, (size_t)a.nrows * sizeof(float));
  assert_memory_equal(b.col_scale, a.col_scale, (size_t)a.ncols * sizeof(float));
  assert_int_equal(cg_csr_transpose(&a, &at), CG_OK);
  assert_int_equal(cg_csr_check(&at, "A^T"), CG_OK);
  assert_memory_equal(at.row_scale, a.col_scale, (size_t)a.ncols * sizeof(float));
  assert_memory_equal(at.col_scale, a.row_scale, (size_t)a.nrows * sizeof(float));
  cg_csr_free(&at);
  cg_csr_free(&b);
  /* without factors, none appear */
  cg_free(a.row_scale);
  cg_free(a.col_scale);
  a.row_scale = a.col_scale = NULL;
  assert_int_equal(cg_csr_copy(&a, &b), CG_OK);
  assert_int_equal(cg_csr_transpose(&a, &at), CG_OK);
  assert_null(b.row_scale);
  assert_null(at.col_scale);
  cg_csr_free(&at);
  cg_csr_free(&b);
  cg_csr_free(&a);
}

/* Slices: every (row range, column range), including empty ones, against the dense
 * block; the column-split blocks of a row range hold, in order, exactly that row range's
 * entries (what the inner/halo split of an operator relies on); factors sliced alike. */
static void test_slice(void **state) {
  (void)state;
  struct cg_csr a;
  make_csr(&a, 17, 13, 0.35, 1, 9);
  assert_int_equal(cg_csr_alloc_scales(&a), CG_OK);
  for (int64_t r = 0; r < a.nrows; r++) a.row_scale[r] = 1.0f + (float)r;
  for (int64_t c = 0; c < a.ncols; c++) a.col_scale[c] = 0.25f * (float)(c + 1);
  float *d = to_dense(&a);
  const int64_t rcuts[][2] = {{0, 17}, {0, 0}, {3, 11}, {16, 17}, {5, 5}};
  const int64_t ccuts[][2] = {{0, 13}, {0, 7}, {7, 13}, {4, 4}, {12, 13}};
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) {
      const int64_t r0 = rcuts[i][0], r1 = rcuts[i][1], c0 = ccuts[j][0], c1 = ccuts[j][1];
      struct cg_csr s;
      assert_int_equal(cg_csr_slice(&a, r0, r1, c0, c1, &s), CG_OK);
      assert_int_equal(cg_csr_check(&s, "slice"), CG_OK);
      assert_int_equal(s.nrows, r1 - r0);
      assert_int_equal(s.ncols, c1 - c0);
      float *ds = to_dense(&s);
      for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++)
          assert_true(ds[(r - r0) * s.ncols + (c - c0)] == d[r * a.ncols + c]);
      if (r1 > r0) assert_memory_equal(s.row_scale, a.row_scale + r0, (size_t)(r1 - r0) * sizeof(float));
      if (c1 > c0) assert_memory_equal(s.col_scale, a.col_scale + c0, (size_t)(c1 - c0) * sizeof(float));
      free(ds);
      cg_csr_free(&s);
    }
  /* rows 3..11 split at column 7: left then right entries of each row are the row's */
  struct cg_csr lft, rgt;
  assert_int_equal(cg_csr_slice(&a, 3, 11, 0, 7, &lft), CG_OK);
  assert_int_equal(cg_csr_slice(&a, 3, 11, 7, 13, &rgt), CG_OK);
  assert_int_equal(lft.nnz + rgt.nnz, a.rowptr[11] - a.rowptr[3]);
  for (int64_t r = 3; r < 11; r++) {
    int64_t k = a.rowptr[r];
    for (int64_t e = lft.rowptr[r - 3]; e < lft.rowptr[r - 2]; e++, k++) {
      assert_int_equal(lft.colidx[e], a.colidx[k]);
      assert_true(lft.vals[e] == a.vals[k]);
    }
    for (int64_t e = rgt.rowptr[r - 3]; e < rgt.rowptr[r - 2]; e++, k++) {
      assert_int_equal(rgt.colidx[e] + 7, a.colidx[k]);
      assert_true(rgt.vals[e] == a.vals[k]);
    }
    assert_int_equal(k, a.rowptr[r + 1]);
  }
  cg_csr_free(&lft);
  cg_csr_free(&rgt);
  /* out of range */
  struct cg_csr s;
  assert_int_equal(cg_csr_slice(&a, 3, 18, 0, 13, &s), CG_ERR_ARG);
  assert_int_equal(cg_csr_slice(&a, 4, 3, 0, 13, &s), CG_ERR_ARG);
  assert_int_equal(cg_csr_slice(&a, 0, 17, 0, 14, &s), CG_ERR_ARG);
  assert_int_equal(cg_csr_slice(&a, 0, 17, -1, 13, &s), CG_ERR_ARG);
  cg_err_clear();
  free(d);
  cg_csr_free(&a);
}

/* Non-empty rows: the rows with entries, in order, with their factors; a matrix
 * without entries gives none; without factors none appear. */
static void test_nonempty_rows(void **state) {
  (void)state;
  struct cg_csr a, b;
  int32_t *rows = NULL;
  make_csr(&a, 23, 6, 0.15, 1, 17); /* every 5th row empty, others sometimes */
  assert_int_equal(cg_csr_alloc_scales(&a), CG_OK);
  for (int64_t r = 0; r < a.nrows; r++) a.row_scale[r] = 2.0f + (float)r;
  for (int64_t c = 0; c < a.ncols; c++) a.col_scale[c] = 1.0f / (float)(c + 1);
  assert_int_equal(cg_csr_nonempty_rows(&a, &b, &rows), CG_OK);
  assert_int_equal(cg_csr_check(&b, "non-empty rows"), CG_OK);
  int64_t n = 0;
  for (int64_t r = 0; r < a.nrows; r++) {
    const int64_t len = a.rowptr[r + 1] - a.rowptr[r];
    if (!len) continue;
    assert_true(n < b.nrows);
    assert_int_equal(rows[n], r);
    assert_int_equal(b.rowptr[n + 1] - b.rowptr[n], len);
    assert_memory_equal(b.colidx + b.rowptr[n], a.colidx + a.rowptr[r], (size_t)len * sizeof(int32_t));
    assert_memory_equal(b.vals + b.rowptr[n], a.vals + a.rowptr[r], (size_t)len * sizeof(float));
    assert_true(b.row_scale[n] == a.row_scale[r]);
    n++;
  }
  assert_int_equal(n, b.nrows);
  assert_true(n < a.nrows && n > 0);
  assert_memory_equal(b.col_scale, a.col_scale, (size_t)a.ncols * sizeof(float));
  cg_free(rows);
  cg_csr_free(&b);
  /* no entries at all; no factors */
  struct cg_csr e;
  assert_int_equal(cg_csr_slice(&a, 0, 23, 3, 3, &e), CG_OK); /* 23 x 0 */
  cg_free(e.row_scale);
  cg_free(e.col_scale);
  e.row_scale = e.col_scale = NULL;
  assert_int_equal(cg_csr_nonempty_rows(&e, &b, &rows), CG_OK);
  assert_int_equal(b.nrows, 0);
  assert_int_equal(b.nnz, 0);
  assert_null(b.row_scale);
  assert_non_null(rows);
  cg_free(rows);
  cg_csr_free(&b);
  cg_csr_free(&e);
  cg_csr_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_transpose_parallel),
      cmocka_unit_test(test_check),
      cmocka_unit_test(test_scales),
      cmocka_unit_test(test_slice),
      cmocka_unit_test(test_nonempty_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
