/* core/tests/test_spfeat_ops.c — the CPU backend's sparse-feature ops (core/ops.h,
 * "sparse input features"; issue #14 item 3): csr_mm and csr_mm_t against a double
 * reference on the dense matrix and against the dense GEMM, csr_mm_t as the gradient of
 * csr_mm (finite differences of <R, X·W> in W, and the adjoint identity
 * <Xᵀ dY, W> = <dY, X W>), csr_dropout against the dense dropout of the same matrix
 * (the same entries dropped, the same values, with any local numbering of the rows: the
 * mask follows the global id), p = 0 and p = 1, empty rows and columns, wide strides
 * left untouched, and thread-count independence (bit for bit). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/attn.h"
#include "core/csr.h"
#include "core/ops.h"
#include "core/status.h"

static struct cg_backend *be1, *be3; /* 1 and 3 threads */

static uint64_t rng = 77;
static double unif(void) {
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static float *fbuf(int64_t n) {
  float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
  assert_non_null(p);
  return p;
}

/* A sparse matrix (rows x cols, density d; every 7th row empty, the last 3 columns
 * never used) with values, and its dense copy. */
static void make_x(int64_t rows, int64_t cols, double d, struct cg_csr *x, float **dense) {
  int64_t nnz = 0;
  float *m = fbuf(rows * cols);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols - 3; c++)
      if (r % 7 != 3 && unif() < d) {
        m[r * cols + c] = (float)(unif() * 2.0 - 1.0);
        if (m[r * cols + c] == 0.0f) m[r * cols + c] = 0.5f;
        nnz++;
      }
  assert_int_equal(cg_csr_alloc(x, rows, cols, nnz, 1), CG_OK);
  int64_t k = 0;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < cols; c++)
      if (m[r * cols + c] != 0.0f) {
        x->colidx[k] = (int32_t)c;
        x->vals[k++] = m[r * cols + c];
      }
    x->rowptr[r + 1] = k;
  }
  *dense = m;
}

static void worst(const char *what, const float *got, const double *ref, int64_t n, double atol, double rtol) {
  double w = 0.0;
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    const double e = fabs((double)got[i] - ref[i]) / (atol + rtol * fabs(ref[i]));
    if (!(e <= w)) {
      w = e;
      at = i;
    }
  }
  print_message("  %s: worst error %.3g of the tolerance (at %lld: %.9g vs %.9g)\n", what, w, (long long)at,
                (double)got[at], ref[at]);
  assert_true(w <= 1.0);
}

static void test_mm_and_transpose(void **state) {
  (void)state;
  const int64_t R = 97, C = 211, F = 13, LD = 16; /* strides wider than the data */
  struct cg_csr x;
  float *xd = NULL;
  make_x(R, C, 0.05, &x, &xd);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &x, &e), CG_OK);
  float *w = fbuf(C * LD), *dy = fbuf(R * LD), *y = fbuf(R * LD), *g = fbuf(C * LD);
  for (int64_t i = 0; i < C * LD; i++) w[i] = (float)(unif() - 0.5);
  for (int64_t i = 0; i < R * LD; i++) dy[i] = (float)(unif() - 0.5);
  for (int64_t i = 0; i < R * LD; i++) y[i] = -7.0f;
  for (int64_t i = 0; i < C * LD; i++) g[i] = -7.0f;
  be1->csr_mm(be1, &e, x.vals, F, w, LD, y, LD);
  be1->csr_mm_t(be1, &e, x.vals, F, dy, LD, g, LD);
  double *ry = calloc((size_t)(R * F), sizeof(double)), *rg = calloc((size_t)(C * F), sizeof(double));
  float *yc = fbuf(R * F), *gc = fbuf(C * F);
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t f = 0; f < F; f++) {
        ry[r * F + f] += (double)xd[r * C + c] * (double)w[c * LD + f];
        rg[c * F + f] += (double)xd[r * C + c] * (double)dy[r * LD + f];
      }
  for (int64_t r = 0; r < R; r++) {
    memcpy(yc + r * F, y + r * LD, (size_t)F * sizeof(float));
    for (int64_t f = F; f < LD; f++) assert_true(y[r * LD + f] == -7.0f); /* beyond f: untouched */
  }
  for (int64_t c = 0; c < C; c++) {
    memcpy(gc + c * F, g + c * LD, (size_t)F * sizeof(float));
    for (int64_t f = F; f < LD; f++) assert_true(g[c * LD + f] == -7.0f);
  }
  /* the CPU rows are the per-element sums of core/attn.h (the CUDA kernels' formula), in
   * the same order: the same bits */
  for (int64_t r = 0; r < R; r++)
    for (int64_t f = 0; f < F; f++) {
      const float want = cg_attn_spmm_elem(&e, x.vals, 1, F, w, LD, r, f);
      assert_memory_equal(&y[r * LD + f], &want, sizeof(float));
    }
  for (int64_t c = 0; c < C; c++)
    for (int64_t f = 0; f < F; f++) {
      const float want = cg_attn_spmm_bwd_x_elem(&e, x.vals, 1, F, dy, LD, c, f);
      assert_memory_equal(&g[c * LD + f], &want, sizeof(float));
    }
  for (int64_t c = C - 3; c < C; c++) /* columns without entries: zero gradient */
    for (int64_t f = 0; f < F; f++) assert_true(g[c * LD + f] == 0.0f);
  worst("csr_mm = X W (double reference)", yc, ry, R * F, 1e-6, 1e-5);
  worst("csr_mm_t = Xt dY (double reference)", gc, rg, C * F, 1e-6, 1e-5);

  /* the dense GEMM of the same products: equal to rounding */
  float *yg = fbuf(R * F), *gg = fbuf(C * F);
  double *yd = calloc((size_t)(R * F), sizeof(double)), *gd = calloc((size_t)(C * F), sizeof(double));
  float *wc = fbuf(C * F), *dyc = fbuf(R * F);
  for (int64_t c = 0; c < C; c++) memcpy(wc + c * F, w + c * LD, (size_t)F * sizeof(float));
  for (int64_t r = 0; r < R; r++) memcpy(dyc + r * F, dy + r * LD, (size_t)F * sizeof(float));
  be1->gemm(be1, 0, 0, R, F, C, 1.0f, xd, C, wc, F, 0.0f, yg, F);
  be1->gemm(be1, 1, 0, C, F, R, 1.0f, xd, C, dyc, F, 0.0f, gg, F);
  for (int64_t i = 0; i < R * F; i++) yd[i] = yg[i];
  for (int64_t i = 0; i < C * F; i++) gd[i] = gg[i];
  worst("csr_mm vs dense GEMM", yc, yd, R * F, 1e-6, 1e-5);
  worst("csr_mm_t vs dense GEMM (transposed)", gc, gd, C * F, 1e-6, 1e-5);

  /* adjoint: <Xt dY, W> = <dY, X W> */
  double a = 0.0, b = 0.0;
  for (int64_t c = 0; c < C; c++)
    for (int64_t f = 0; f < F; f++) a += (double)gc[c * F + f] * (double)w[c * LD + f];
  for (int64_t r = 0; r < R; r++)
    for (int64_t f = 0; f < F; f++) b += (double)dy[r * LD + f] * (double)yc[r * F + f];
  print_message("  adjoint: <Xt dY, W> = %.9g, <dY, X W> = %.9g\n", a, b);
  assert_true(fabs(a - b) <= 1e-5 * (fabs(a) + 1.0));

  /* thread-count independence */
  float *y3 = fbuf(R * LD), *g3 = fbuf(C * LD);
  memcpy(y3, y, (size_t)(R * LD) * sizeof(float));
  memcpy(g3, g, (size_t)(C * LD) * sizeof(float));
  be3->csr_mm(be3, &e, x.vals, F, w, LD, y3, LD);
  be3->csr_mm_t(be3, &e, x.vals, F, dy, LD, g3, LD);
  assert_memory_equal(y, y3, (size_t)(R * LD) * sizeof(float));
  assert_memory_equal(g, g3, (size_t)(C * LD) * sizeof(float));

  cg_edges_free(be1, &e);
  cg_csr_free(&x);
  free(xd); free(w); free(dy); free(y); free(g); free(ry); free(rg); free(yc); free(gc);
  free(yg); free(gg); free(yd); free(gd); free(wc); free(dyc); free(y3); free(g3);
}

/* At the widths the CPU's AVX kernels take (16, 32, 64; 13 above takes the portable
 * loop): csr_mm and csr_mm_t bit for bit equal to the portable loop's sums (0, then + v w
 * per stored value in order, one rounding each), with strides wider than the data (the
 * padding left alone), empty rows and columns, on 1 and 3 threads. */
static void test_mm_widths_bits(void **state) {
  (void)state;
  const int64_t R = 301, C = 157;
  struct cg_csr x;
  float *xd = NULL;
  make_x(R, C, 0.08, &x, &xd);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &x, &e), CG_OK);
  const int64_t widths[3] = {16, 32, 64};
  for (int t = 0; t < 3; t++) {
    const int64_t F = widths[t], LD = F + 5;
    float *w = fbuf(C * LD), *dy = fbuf(R * LD), *y1 = fbuf(R * LD), *y3 = fbuf(R * LD), *g1 = fbuf(C * LD),
          *g3 = fbuf(C * LD), *ry = fbuf(R * LD), *rg = fbuf(C * LD);
    for (int64_t i = 0; i < C * LD; i++) w[i] = (float)(unif() - 0.5) * (i % 7 ? 1.0f : 1e-30f);
    for (int64_t i = 0; i < R * LD; i++) dy[i] = (float)(unif() - 0.5);
    for (int64_t i = 0; i < R * LD; i++) y1[i] = y3[i] = ry[i] = -7.0f;
    for (int64_t i = 0; i < C * LD; i++) g1[i] = g3[i] = rg[i] = -7.0f;
    for (int64_t r = 0; r < R; r++) { /* the portable loops' sums */
      for (int64_t c = 0; c < F; c++) ry[r * LD + c] = 0.0f;
      for (int64_t k = x.rowptr[r]; k < x.rowptr[r + 1]; k++)
        for (int64_t c = 0; c < F; c++) ry[r * LD + c] += x.vals[k] * w[(int64_t)x.colidx[k] * LD + c];
    }
    for (int64_t u = 0; u < C; u++) {
      for (int64_t c = 0; c < F; c++) rg[u * LD + c] = 0.0f;
      for (int64_t j = e.t_ptr[u]; j < e.t_ptr[u + 1]; j++)
        for (int64_t c = 0; c < F; c++) rg[u * LD + c] += x.vals[e.t_eid[j]] * dy[(int64_t)e.t_row[j] * LD + c];
    }
    be1->csr_mm(be1, &e, x.vals, F, w, LD, y1, LD);
    be3->csr_mm(be3, &e, x.vals, F, w, LD, y3, LD);
    be1->csr_mm_t(be1, &e, x.vals, F, dy, LD, g1, LD);
    be3->csr_mm_t(be3, &e, x.vals, F, dy, LD, g3, LD);
    assert_memory_equal(y1, ry, (size_t)(R * LD) * sizeof(float));
    assert_memory_equal(y3, ry, (size_t)(R * LD) * sizeof(float));
    assert_memory_equal(g1, rg, (size_t)(C * LD) * sizeof(float));
    assert_memory_equal(g3, rg, (size_t)(C * LD) * sizeof(float));
    free(w); free(dy); free(y1); free(y3); free(g1); free(g3); free(ry); free(rg);
  }
  cg_edges_free(be1, &e);
  cg_csr_free(&x);
  free(xd);
}

/* csr_mm_t is the gradient of csr_mm: d<R, X W>/dW = Xt R, by central differences. */
static void test_gradient_fd(void **state) {
  (void)state;
  const int64_t R = 23, C = 31, F = 5;
  struct cg_csr x;
  float *xd = NULL;
  make_x(R, C, 0.2, &x, &xd);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &x, &e), CG_OK);
  float *w = fbuf(C * F), *rr = fbuf(R * F), *y = fbuf(R * F), *g = fbuf(C * F);
  for (int64_t i = 0; i < C * F; i++) w[i] = (float)(unif() - 0.5);
  for (int64_t i = 0; i < R * F; i++) rr[i] = (float)(unif() - 0.5);
  be1->csr_mm_t(be1, &e, x.vals, F, rr, F, g, F);
  double worst_err = 0.0;
  for (int64_t i = 0; i < C * F; i++) {
    const float w0 = w[i], h = 1e-2f;
    double lp = 0.0, lm = 0.0;
    w[i] = w0 + h;
    be1->csr_mm(be1, &e, x.vals, F, w, F, y, F);
    for (int64_t j = 0; j < R * F; j++) lp += (double)rr[j] * (double)y[j];
    w[i] = w0 - h;
    be1->csr_mm(be1, &e, x.vals, F, w, F, y, F);
    for (int64_t j = 0; j < R * F; j++) lm += (double)rr[j] * (double)y[j];
    w[i] = w0;
    const double fd = (lp - lm) / (2.0 * (double)h), err = fabs(fd - (double)g[i]) / (1e-3 + 1e-3 * fabs(fd));
    if (err > worst_err) worst_err = err;
  }
  print_message("  finite differences of <R, X W>: worst error %.3g of the tolerance\n", worst_err);
  assert_true(worst_err <= 1.0);
  cg_edges_free(be1, &e);
  cg_csr_free(&x);
  free(xd); free(w); free(rr); free(y); free(g);
}

/* The sparse dropout drops what the dense dropout drops, with the same values, keyed by
 * the global id of each row (rows here numbered in reverse: gid[r] = 1000 - 3 r). */
static void test_dropout_matches_dense(void **state) {
  (void)state;
  const int64_t R = 61, C = 77;
  struct cg_csr x;
  float *xd = NULL;
  make_x(R, C, 0.3, &x, &xd);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &x, &e), CG_OK);
  int32_t gid[61];
  for (int64_t r = 0; r < R; r++) gid[r] = (int32_t)(1000 - 3 * r);
  const struct cg_dropout_key key = {0x1234567890ull, 5u, 0u};
  const float ps[4] = {0.5f, 0.1f, 0.0f, 1.0f};
  for (int t = 0; t < 4; t++) {
    float *dd = fbuf(R * C), *sv = fbuf(x.nnz), *s3 = fbuf(x.nnz);
    be1->dropout(be1, xd, dd, R, C, gid, ps[t], key);
    be1->csr_dropout(be1, &e, x.vals, sv, gid, ps[t], key);
    be3->csr_dropout(be3, &e, x.vals, s3, gid, ps[t], key);
    assert_memory_equal(sv, s3, (size_t)x.nnz * sizeof(float));
    int64_t kept = 0;
    for (int64_t r = 0; r < R; r++)
      for (int64_t k = x.rowptr[r]; k < x.rowptr[r + 1]; k++) {
        const float want = dd[r * C + x.colidx[k]];
        assert_memory_equal(&sv[k], &want, sizeof(float)); /* same bits */
        kept += sv[k] != 0.0f;
      }
    print_message("  p = %.1f: %lld of %lld stored values kept, each equal to the dense dropout's\n",
                  (double)ps[t], (long long)kept, (long long)x.nnz);
    if (ps[t] > 0.0f && ps[t] < 1.0f) { /* the backend's (vectorised) op against the scalar rule, bit for bit */
      float *ref = fbuf(x.nnz);
      const struct cg_edges *ep = &e;
      for (int64_t r = 0; r < R; r++)
        cg_csr_dropout_row(ep, x.vals, ref, r, (uint32_t)gid[r], ps[t], 1.0f / (1.0f - ps[t]), key.seed, key.epoch,
                           key.layer);
      assert_memory_equal(sv, ref, (size_t)x.nnz * sizeof(float));
      free(ref);
    }
    if (ps[t] == 0.0f) assert_int_equal(kept, x.nnz);
    if (ps[t] == 1.0f) assert_int_equal(kept, 0);
    if (ps[t] == 0.5f) assert_true(kept > x.nnz / 4 && kept < 3 * x.nnz / 4);
    /* in place */
    memcpy(s3, x.vals, (size_t)x.nnz * sizeof(float));
    be1->csr_dropout(be1, &e, s3, s3, gid, ps[t], key);
    assert_memory_equal(sv, s3, (size_t)x.nnz * sizeof(float));
    free(dd); free(sv); free(s3);
  }
  cg_edges_free(be1, &e);
  cg_csr_free(&x);
  free(xd);
}

static int setup(void **state) {
  (void)state;
  if (cg_backend_cpu_create(1, &be1) != CG_OK || cg_backend_cpu_create(3, &be3) != CG_OK) return -1;
  return 0;
}
static int teardown(void **state) {
  (void)state;
  cg_backend_destroy(&be1);
  cg_backend_destroy(&be3);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mm_and_transpose),
      cmocka_unit_test(test_gradient_fd),
      cmocka_unit_test(test_dropout_matches_dense),
      cmocka_unit_test(test_mm_widths_bits),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
