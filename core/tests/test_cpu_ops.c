/* core/tests/test_cpu_ops.c — every op of the CPU backend against a naive
 * reference (double precision where it matters), finite differences for the
 * backward ops, hand-computed Adam steps, and thread-count independence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/adam.h"
#include "core/cpu_spmm_internal.h"
#include "core/csr.h"
#include "core/ops.h"
#include "core/philox.h"
#include "core/status.h"
#include "test_util.h"

static struct cg_backend *be1, *be2, *be3; /* 1, 2, 3 threads, best kernels */
static struct cg_backend *beg;             /* 2 threads, portable kernels forced */

static float *fbuf(int64_t n) {
  float *p = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof(float), "test buffer");
  assert_non_null(p);
  return p;
}
static double *dbuf(int64_t n) {
  double *p = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof(double), "test reference");
  assert_non_null(p);
  return p;
}
static void frand(struct tu_rng *r, float *x, int64_t n, double lo, double hi) {
  for (int64_t i = 0; i < n; i++) x[i] = (float)tu_unif(r, lo, hi);
}

static int group_setup(void **state) {
  (void)state;
  if (cg_backend_cpu_create(1, &be1) || cg_backend_cpu_create(2, &be2) ||
      cg_backend_cpu_create(3, &be3))
    return -1;
  setenv("CAPGNN_CPU_KERNELS", "generic", 1);
  int st = cg_backend_cpu_create(2, &beg);
  unsetenv("CAPGNN_CPU_KERNELS");
  return st ? -1 : 0;
}

static int group_teardown(void **state) {
  (void)state;
  cg_backend_destroy(&be1);
  cg_backend_destroy(&be2);
  cg_backend_destroy(&be3);
  cg_backend_destroy(&beg);
  return 0;
}

/* ---------------------------------------------------------------- basics */

static void test_backend_basics(void **state) {
  (void)state;
  assert_string_equal(be2->name, "cpu");
  assert_int_equal(be2->kind, CG_DEVICE_CPU);
  size_t fr = 0, tot = 0;
  assert_int_equal(be2->mem_info(be2, &fr, &tot), CG_OK);
  assert_true(tot > 0);
  assert_true(fr > 0 && fr <= tot);

  void *p = NULL;
  assert_int_equal(be2->alloc(be2, &p, 1000, "test"), CG_OK);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 64, 0);
  be2->free(be2, p);
  be2->free(be2, NULL);

  /* fill / axpy / scale / copy / upload / download, on sizes below and above the
   * parallel threshold */
  const int64_t sizes[] = {0, 13, 100003};
  for (int s = 0; s < 3; s++) {
    const int64_t n = sizes[s];
    float *x = fbuf(n), *y = fbuf(n), *z = fbuf(n);
    be2->fill(be2, x, n, 2.5f);
    for (int64_t i = 0; i < n; i++) assert_true(x[i] == 2.5f);
    for (int64_t i = 0; i < n; i++) y[i] = (float)i;
    be2->axpy(be2, n, -2.0f, x, y);
    for (int64_t i = 0; i < n; i++) assert_true(y[i] == (float)i - 5.0f);
    be2->scale(be2, n, 0.5f, y);
    for (int64_t i = 0; i < n; i++) assert_true(y[i] == ((float)i - 5.0f) * 0.5f);
    be2->copy(be2, z, y, (size_t)n * sizeof(float));
    if (n) assert_memory_equal(z, y, (size_t)n * sizeof(float));
    be2->fill(be2, z, n, 0.0f);
    assert_int_equal(be2->upload(be2, z, y, (size_t)n * sizeof(float)), CG_OK);
    for (int64_t i = 0; i < n; i++) assert_true(z[i] == y[i]);
    be2->fill(be2, x, n, 0.0f);
    assert_int_equal(be2->download(be2, x, z, (size_t)n * sizeof(float)), CG_OK);
    for (int64_t i = 0; i < n; i++) assert_true(x[i] == y[i]);
    be2->sync(be2);
    cg_free(x);
    cg_free(y);
    cg_free(z);
  }
  /* a large copy takes the multi-threaded path */
  const size_t big = (size_t)6 << 20;
  char *a = cg_malloc(big, "test"), *b = cg_malloc(big, "test");
  assert_non_null(a);
  assert_non_null(b);
  for (size_t i = 0; i < big; i++) a[i] = (char)(i * 131u + 7u);
  memset(b, 0, big);
  be2->copy(be2, b, a, big - 3);
  assert_memory_equal(a, b, big - 3);
  assert_int_equal(b[big - 1], 0);
  cg_free(a);
  cg_free(b);
}

/* ---------------------------------------------------------------- GEMM */

static void gemm_naive(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, double beta,
                       const float *c0, int64_t ldc, double *ref) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0.0;
      for (int64_t p = 0; p < k; p++) {
        const double av = ta ? a[p * lda + i] : a[i * lda + p];
        const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += av * bv;
      }
      ref[i * n + j] = alpha * s + (beta == 0.0 ? 0.0 : beta * c0[i * ldc + j]);
    }
}

/* One backend's GEMM against the naive product: every transpose, alpha, beta (0 with NaN
 * in C), padded strides. */
static int gemm_check(struct cg_backend *be, const char *tag) {
  struct tu_rng rng = {11};
  const int64_t m = 37, n = 29, k = 53;
  const float alphas[] = {1.0f, 0.7f}, betas[] = {0.0f, -1.3f, 1.0f};
  int ok = 1;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int ai = 0; ai < 2; ai++)
        for (int bi = 0; bi < 3; bi++) {
          const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
          const int64_t arows = ta ? k : m, brows = tb ? n : k;
          float *a = fbuf(arows * lda), *b = fbuf(brows * ldb), *c = fbuf(m * ldc);
          float *c0 = fbuf(m * ldc);
          double *ref = dbuf(m * n);
          frand(&rng, a, arows * lda, -1, 1);
          frand(&rng, b, brows * ldb, -1, 1);
          frand(&rng, c, m * ldc, -1, 1);
          /* beta == 0 must ignore C entirely (BLAS semantics), even NaN */
          if (betas[bi] == 0.0f)
            for (int64_t i = 0; i < m; i++)
              for (int64_t j = 0; j < n; j++) c[i * ldc + j] = NAN;
          memcpy(c0, c, (size_t)(m * ldc) * sizeof(float));
          gemm_naive(ta, tb, m, n, k, alphas[ai], a, lda, b, ldb, betas[bi], c0, ldc, ref);
          be->gemm(be, ta, tb, m, n, k, alphas[ai], a, lda, b, ldb, betas[bi], c, ldc);
          float *got = fbuf(m * n);
          for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) got[i * n + j] = c[i * ldc + j];
          char what[128];
          snprintf(what, sizeof what, "gemm %s ta=%d tb=%d alpha=%g beta=%g", tag, ta, tb,
                   (double)alphas[ai], (double)betas[bi]);
          ok &= tu_close(what, got, ref, m * n, 1e-5, 1e-5);
          /* the padding columns of C are untouched */
          for (int64_t i = 0; i < m; i++)
            for (int64_t j = n; j < ldc; j++)
              if (memcmp(&c[i * ldc + j], &c0[i * ldc + j], sizeof(float))) ok = 0;
          cg_free(a);
          cg_free(b);
          cg_free(c);
          cg_free(c0);
          cg_free(ref);
          cg_free(got);
        }
  return ok;
}

/* CAPGNN_CPU_GEMM: OpenBLAS, and oneDNN where Debian's libdnnl2 loads (else the forced
 * choice is refused with a message), each against the naive product; the default
 * backends (oneDNN when it loads) too; unknown names refused. */
/* An unknown CAPGNN_CPU_KERNELS is refused (it was read as auto), and
 * cg_cpu_settings_check says so as the backend's creation does. */
static void test_kernels_setting(void **state) {
  (void)state;
  struct cg_backend *b = NULL;
  setenv("CAPGNN_CPU_KERNELS", "avx9", 1);
  assert_int_equal(cg_backend_cpu_create(1, &b), CG_ERR_ARG);
  assert_null(b);
  assert_non_null(strstr(cg_err_msg(), "CAPGNN_CPU_KERNELS=avx9"));
  assert_int_equal(cg_cpu_settings_check(), CG_ERR_ARG);
  setenv("CAPGNN_CPU_KERNELS", "auto", 1);
  assert_int_equal(cg_cpu_settings_check(), CG_OK);
  assert_int_equal(cg_backend_cpu_create(1, &b), CG_OK);
  cg_backend_destroy(&b);
  unsetenv("CAPGNN_CPU_KERNELS");
}

static void test_gemm(void **state) {
  (void)state;
  int ok = gemm_check(be2, "default/2t") & gemm_check(be1, "default/1t");
  struct cg_backend *b = NULL;
  setenv("CAPGNN_CPU_GEMM", "bogus", 1);
  assert_int_equal(cg_backend_cpu_create(2, &b), CG_ERR_ARG);
  assert_null(b);
  assert_non_null(strstr(cg_err_msg(), "CAPGNN_CPU_GEMM=bogus: expected auto, openblas or onednn"));
  cg_err_clear();
  setenv("CAPGNN_CPU_GEMM", "openblas", 1);
  assert_int_equal(cg_backend_cpu_create(2, &b), CG_OK);
  ok &= gemm_check(b, "openblas/2t");
  assert_null(strstr(cg_backend_cpu_blas_info(b), "oneDNN"));
  cg_backend_destroy(&b);
  setenv("CAPGNN_CPU_GEMM", "onednn", 1);
  const int st = cg_backend_cpu_create(1, &b);
  unsetenv("CAPGNN_CPU_GEMM");
  if (st == CG_OK) {
    ok &= gemm_check(b, "onednn/1t");
    assert_non_null(strstr(cg_backend_cpu_blas_info(b), "oneDNN 2."));
    cg_backend_destroy(&b);
    assert_non_null(strstr(cg_backend_cpu_blas_info(be2), "oneDNN 2.")); /* auto */
    assert_non_null(strstr(cg_backend_cpu_blas_info(be1), "oneDNN 2."));
  } else {
    assert_int_equal(st, CG_ERR_UNSUPPORTED);
    assert_non_null(strstr(cg_err_msg(), "CAPGNN_CPU_GEMM=onednn: oneDNN cannot be used"));
    printf("  %s: oneDNN not compared\n", cg_err_msg());
    cg_err_clear();
    assert_null(strstr(cg_backend_cpu_blas_info(be2), "oneDNN"));
  }
  assert_true(ok);

  /* k == 0: C = beta C */
  float c[6] = {1, 2, 3, 4, 5, 6};
  be2->gemm(be2, 0, 0, 2, 3, 0, 1.0f, NULL, 1, NULL, 3, 2.0f, c, 3);
  for (int i = 0; i < 6; i++) assert_true(c[i] == 2.0f * (float)(i + 1));
  /* beta == 0 ignores C here too, even NaN (a rank with no inner rows computes a weight
   * gradient with k = 0 into a buffer that may hold anything) */
  for (int i = 0; i < 6; i++) c[i] = i % 2 ? NAN : INFINITY;
  be2->gemm(be2, 0, 0, 2, 3, 0, 1.0f, NULL, 1, NULL, 3, 0.0f, c, 3);
  for (int i = 0; i < 6; i++) assert_true(c[i] == 0.0f);
}

/* ---------------------------------------------------------------- SpMM */

/* Random CSR: a fraction of rows empty, degrees up to maxdeg, columns random
 * (repeats allowed), values in [-1, 1] or none. */
static void make_csr(struct cg_csr *a, int64_t nrows, int64_t ncols, int maxdeg,
                     double empty_frac, int with_vals, uint64_t seed) {
  struct tu_rng rng = {seed};
  int64_t *deg = calloc((size_t)nrows + 1, sizeof *deg);
  assert_non_null(deg);
  int64_t nnz = 0;
  for (int64_t r = 0; r < nrows; r++) {
    deg[r] = (ncols == 0 || tu_unif(&rng, 0, 1) < empty_frac) ? 0 : 1 + tu_int(&rng, maxdeg);
    nnz += deg[r];
  }
  assert_int_equal(cg_csr_alloc(a, nrows, ncols, nnz, with_vals), CG_OK);
  for (int64_t r = 0; r < nrows; r++) a->rowptr[r + 1] = a->rowptr[r] + deg[r];
  for (int64_t e = 0; e < nnz; e++) {
    a->colidx[e] = (int32_t)tu_int(&rng, ncols);
    if (with_vals) a->vals[e] = (float)tu_unif(&rng, -1, 1);
  }
  free(deg);
}

static void spmm_naive(const struct cg_csr *a, const float *x, int64_t ldx, int64_t f,
                       double *ref) {
  for (int64_t r = 0; r < a->nrows; r++)
    for (int64_t c = 0; c < f; c++) {
      double s = 0.0;
      for (int64_t e = a->rowptr[r]; e < a->rowptr[r + 1]; e++)
        s += (a->vals ? (double)a->vals[e] : 1.0) * x[(int64_t)a->colidx[e] * ldx + c];
      ref[r * f + c] = s;
    }
}

/* Runs Y = A X on one backend and compares with the naive product; checks that
 * the padding of Y (ldy > f) is not written. */
static int spmm_check(struct cg_backend *be, const struct cg_csr *h, int64_t f, int64_t ldx,
                      int64_t ldy, const char *tag) {
  struct tu_rng rng = {(uint64_t)(f * 1000 + ldx)};
  struct cg_spmat *a = NULL;
  assert_int_equal(be->spmat_create(be, h, &a), CG_OK);
  float *x = fbuf(h->ncols * ldx), *y = fbuf(h->nrows * ldy), *got = fbuf(h->nrows * f);
  double *ref = dbuf(h->nrows * f);
  frand(&rng, x, h->ncols * ldx, -1, 1);
  for (int64_t i = 0; i < h->nrows * ldy; i++) y[i] = 12345.0f; /* overwritten, not added */
  spmm_naive(h, x, ldx, f, ref);
  be->spmm(be, a, x, ldx, y, ldy, f);
  int ok = 1;
  for (int64_t r = 0; r < h->nrows; r++) {
    for (int64_t c = 0; c < f; c++) got[r * f + c] = y[r * ldy + c];
    for (int64_t c = f; c < ldy; c++) ok &= y[r * ldy + c] == 12345.0f;
  }
  char what[128];
  snprintf(what, sizeof what, "spmm %s %lldx%lld f=%lld ldx=%lld ldy=%lld vals=%d", tag,
           (long long)h->nrows, (long long)h->ncols, (long long)f, (long long)ldx,
           (long long)ldy, h->vals != NULL);
  if (!ok) printf("  %s: padding of Y was written\n", what);
  ok &= tu_close(what, got, ref, h->nrows * f, 1e-5, 1e-5);
  be->spmat_destroy(be, a);
  cg_free(x);
  cg_free(y);
  cg_free(got);
  cg_free(ref);
  return ok;
}

/* Y = A X on one backend into a new buffer (caller frees). */
static float *spmm_fresh(struct cg_backend *be, const struct cg_csr *h, const float *x, int64_t f) {
  struct cg_spmat *a = NULL;
  float *y = fbuf(h->nrows * f);
  assert_int_equal(be->spmat_create(be, h, &a), CG_OK);
  be->spmm(be, a, x, f, y, f, f);
  be->spmat_destroy(be, a);
  return y;
}

/* Every backend at every width, with tight and padded row strides. */
static int spmm_check_widths(struct cg_backend *const *bes, const char *const *tags, int nbe,
                             const struct cg_csr *h, const int64_t *widths, size_t nw) {
  int ok = 1;
  for (int b = 0; b < nbe; b++)
    for (size_t w = 0; w < nw; w++) {
      const int64_t f = widths[w];
      ok &= spmm_check(bes[b], h, f, f, f, tags[b]);
      ok &= spmm_check(bes[b], h, f, f + 5, f + 3, tags[b]);
    }
  return ok;
}

static void test_spmm(void **state) {
  (void)state;
  const int64_t widths[] = {1, 7, 8, 41, 63, 64, 65, 130, 256};
  const int64_t shapes[][2] = {{157, 211}, {211, 97}};
  struct cg_backend *bes[] = {be2, beg, be3};
  const char *tags[] = {"best/2t", "generic/2t", "best/3t"};
  int ok = 1;
  for (int s = 0; s < 2; s++)
    for (int vals = 0; vals < 2; vals++) {
      struct cg_csr h;
      make_csr(&h, shapes[s][0], shapes[s][1], 30, 0.2, vals, 100 + (uint64_t)(s * 2 + vals));
      assert_int_equal(cg_csr_check(&h, "test matrix"), CG_OK);
      ok &= spmm_check_widths(bes, tags, 3, &h, widths, sizeof widths / sizeof widths[0]);
      cg_csr_free(&h);
    }
  assert_true(ok);
}

static void test_spmm_edge_cases(void **state) {
  (void)state;
  int ok = 1;
  /* no nonzeros at all: Y is all zeros */
  struct cg_csr h;
  assert_int_equal(cg_csr_alloc(&h, 9, 4, 0, 1), CG_OK);
  ok &= spmm_check(be2, &h, 41, 41, 41, "empty");
  ok &= spmm_check(beg, &h, 41, 41, 41, "empty");
  cg_csr_free(&h);
  /* fewer rows than threads, one heavy row */
  make_csr(&h, 2, 300, 300, 0.0, 1, 7);
  ok &= spmm_check(be3, &h, 256, 256, 256, "tiny");
  cg_csr_free(&h);
  /* zero rows */
  assert_int_equal(cg_csr_alloc(&h, 0, 5, 0, 0), CG_OK);
  struct cg_spmat *a = NULL;
  assert_int_equal(be2->spmat_create(be2, &h, &a), CG_OK);
  be2->spmm(be2, a, NULL, 1, NULL, 1, 1);
  be2->spmat_destroy(be2, a);
  be2->spmat_destroy(be2, NULL);
  cg_csr_free(&h);
  /* an invalid CSR is refused with a message */
  make_csr(&h, 10, 10, 5, 0.0, 0, 8);
  h.colidx[h.nnz - 1] = 10;
  a = NULL;
  assert_int_equal(be2->spmat_create(be2, &h, &a), CG_ERR_INTERNAL);
  assert_null(a);
  assert_non_null(strstr(cg_err_msg(), "out of range"));
  cg_err_clear();
  cg_csr_free(&h);
  assert_true(ok);
}

/* Clustered CSR for the tiled layout: each row has 8..23 nonzeros inside its own
 * `tb`-wide column block (so most tiles are dense) plus 0..4 anywhere, columns
 * unsorted and repeats allowed; a fifth of the rows are empty. with_vals: 0 none,
 * 1 random values, 2 factored values (row_scale[r] * col_scale[c], factors given). */
static void make_clustered_csr(struct cg_csr *a, int64_t nrows, int64_t ncols, int64_t tb,
                               int with_vals, uint64_t seed) {
  struct tu_rng rng = {seed};
  const int64_t ncb = (ncols + tb - 1) / tb;
  int64_t *deg = calloc((size_t)nrows + 1, sizeof *deg);
  assert_non_null(deg);
  int64_t nnz = 0;
  for (int64_t r = 0; r < nrows; r++) {
    deg[r] = tu_unif(&rng, 0, 1) < 0.2 ? 0 : 8 + tu_int(&rng, 16) + tu_int(&rng, 5);
    nnz += deg[r];
  }
  assert_int_equal(cg_csr_alloc(a, nrows, ncols, nnz, with_vals != 0), CG_OK);
  if (with_vals == 2) {
    assert_int_equal(cg_csr_alloc_scales(a), CG_OK);
    for (int64_t r = 0; r < nrows; r++) a->row_scale[r] = (float)tu_unif(&rng, 0.1, 1);
    for (int64_t c = 0; c < ncols; c++) a->col_scale[c] = (float)tu_unif(&rng, -1, 1);
  }
  for (int64_t r = 0; r < nrows; r++) {
    a->rowptr[r + 1] = a->rowptr[r] + deg[r];
    const int64_t base = ((r / tb) % ncb) * tb, width = ncols - base < tb ? ncols - base : tb;
    for (int64_t e = a->rowptr[r]; e < a->rowptr[r + 1]; e++) {
      const int far = e - a->rowptr[r] < 4 && tu_int(&rng, 2);
      a->colidx[e] = (int32_t)(far ? tu_int(&rng, ncols) : base + tu_int(&rng, width));
      if (with_vals == 1) a->vals[e] = (float)tu_unif(&rng, -1, 1);
      if (with_vals == 2) a->vals[e] = a->row_scale[r] * a->col_scale[a->colidx[e]];
    }
  }
  free(deg);
}

static void set_layout(const char *layout, const char *tile) {
  setenv("CAPGNN_CPU_SPMM", layout, 1);
  if (tile) setenv("CAPGNN_CPU_SPMM_TILE", tile, 1);
  else unsetenv("CAPGNN_CPU_SPMM_TILE");
}

/* The tiled layout against the naive product: every width class, padded strides,
 * without values, with values and with factored values, partial last row and
 * column blocks, both kernels. */
static void test_spmm_tiled(void **state) {
  (void)state;
  const int64_t widths[] = {1, 7, 8, 41, 64, 65, 130, 256};
  const int64_t shapes[][2] = {{157, 211}, {211, 97}, {400, 400}};
  struct cg_backend *bes[] = {be2, beg, be3};
  const char *tags[] = {"tiled best/2t", "tiled generic/2t", "tiled best/3t"};
  int ok = 1;
  set_layout("tiled", "16");
  for (int s = 0; s < 3; s++)
    for (int vals = 0; vals < 3; vals++) {
      struct cg_csr h;
      make_clustered_csr(&h, shapes[s][0], shapes[s][1], 16, vals, 300 + (uint64_t)(s * 3 + vals));
      assert_int_equal(cg_csr_check(&h, "test matrix"), CG_OK);
      /* the layout is really tiled, and its tiles hold most nonzeros but not all */
      struct cg_spmat *a = NULL;
      int64_t tile_nnz = 0;
      assert_int_equal(be2->spmat_create(be2, &h, &a), CG_OK);
      assert_true(cpu_spmat_tiles(a, &tile_nnz) > 0);
      assert_true(tile_nnz > h.nnz / 2 && tile_nnz < h.nnz);
      be2->spmat_destroy(be2, a);
      ok &= spmm_check_widths(bes, tags, 3, &h, widths, sizeof widths / sizeof widths[0]);
      cg_csr_free(&h);
    }
  /* Factored values: the tiled layout computes with the factors when they reproduce
   * the values, and falls back to the values (with a warning) when they do not (here
   * one value is doubled): either way the product is the values' product. */
  for (int broken = 0; broken < 2; broken++) {
    struct cg_csr h;
    make_clustered_csr(&h, 211, 157, 16, 2, 55);
    if (broken) h.vals[h.nnz / 2] *= 2.0f;
    struct cg_spmat *a = NULL;
    assert_int_equal(be2->spmat_create(be2, &h, &a), CG_OK);
    assert_int_equal(cpu_spmat_factored(a), !broken);
    be2->spmat_destroy(be2, a);
    double *ref = dbuf(h.nrows * 41);
    struct tu_rng rng = {56};
    float *x = fbuf(h.ncols * 41);
    frand(&rng, x, h.ncols * 41, -1, 1);
    spmm_naive(&h, x, 41, 41, ref);
    for (int b = 0; b < 3; b++) {
      float *y = spmm_fresh(bes[b], &h, x, 41);
      ok &= tu_close(broken ? "tiled, factors not matching" : "tiled factored values", y, ref,
                     h.nrows * 41, 1e-5, 1e-5);
      cg_free(y);
    }
    cg_free(x);
    cg_free(ref);
    cg_csr_free(&h);
  }
  /* More threads than row blocks (3 blocks, 8 threads): the empty parts must not
   * compute the partial last block again while its owner writes it. That race gave
   * wrong values in only a few of 2000 runs, so this exercises the case rather than
   * reliably catching a regression. */
  struct cg_backend *be8 = NULL;
  assert_int_equal(cg_backend_cpu_create(8, &be8), CG_OK);
  struct cg_csr h;
  make_clustered_csr(&h, 40, 40, 16, 1, 77);
  for (int rep = 0; rep < 50; rep++) ok &= spmm_check(be8, &h, 64, 64, 64, "tiled 8t");
  cg_csr_free(&h);
  cg_backend_destroy(&be8);
  /* The largest tiles: far-part groups must stay within 65536 rows (uint16 offsets). */
  set_layout("tiled", "16384");
  make_clustered_csr(&h, 70000, 70000, 16384, 1, 78);
  ok &= spmm_check(be2, &h, 8, 8, 8, "tiled tb=16384");
  cg_csr_free(&h);
  set_layout("auto", NULL);
  assert_true(ok);
}

/* The far part's passes (core/cpu_spmm.c, build_push): 32 columns (default) and 16
 * (CAPGNN_CPU_SPMM_PANEL=16), and groups of any height (CAPGNN_CPU_SPMM_GROUP), give
 * the same bits at every width class (a wide pass, a
 * narrow last pass of <= 16 columns, partial passes), without values, with values and
 * with factored values, both kernels; both agree with the naive product. A matrix of each
 * kind on one backend (shared scratch, built narrow then wide), products interleaved.
 * A bad setting is refused with a message. */
static void test_spmm_panels(void **state) {
  (void)state;
  const int64_t widths[] = {1, 9, 16, 17, 32, 33, 41, 48, 64, 100, 256};
  struct cg_backend *bes[] = {be2, beg};
  int ok = 1;
  for (int vals = 0; vals < 3; vals++) {
    struct cg_csr h;
    make_clustered_csr(&h, 300, 260, 16, vals, 900 + (uint64_t)vals);
    for (int b = 0; b < 2; b++) {
      struct cg_spmat *a[4] = {NULL, NULL, NULL, NULL};
      set_layout("tiled", "16");
      setenv("CAPGNN_CPU_SPMM_PANEL", "16", 1);
      assert_int_equal(bes[b]->spmat_create(bes[b], &h, &a[0]), CG_OK);
      setenv("CAPGNN_CPU_SPMM_PANEL", "32", 1);
      assert_int_equal(bes[b]->spmat_create(bes[b], &h, &a[1]), CG_OK);
      unsetenv("CAPGNN_CPU_SPMM_PANEL");
      /* far groups of 16 rows (19 groups) and of every row (1 group) */
      setenv("CAPGNN_CPU_SPMM_GROUP", "16", 1);
      assert_int_equal(bes[b]->spmat_create(bes[b], &h, &a[2]), CG_OK);
      setenv("CAPGNN_CPU_SPMM_GROUP", "300", 1);
      assert_int_equal(bes[b]->spmat_create(bes[b], &h, &a[3]), CG_OK);
      unsetenv("CAPGNN_CPU_SPMM_GROUP");
      assert_true(cpu_spmat_tiles(a[0], NULL) > 0);
      for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
        const int64_t f = widths[wi];
        struct tu_rng rng = {(uint64_t)(f + 31 * vals)};
        float *x = fbuf(h.ncols * f), *y16 = fbuf(h.nrows * f), *y32 = fbuf(h.nrows * f);
        float *yg = fbuf(h.nrows * f);
        double *ref = dbuf(h.nrows * f);
        frand(&rng, x, h.ncols * f, -1, 1);
        bes[b]->spmm(bes[b], a[0], x, f, y16, f, f);
        bes[b]->spmm(bes[b], a[1], x, f, y32, f, f);
        for (int gi = 2; gi < 4; gi++) {
          bes[b]->spmm(bes[b], a[gi], x, f, yg, f, f);
          if (memcmp(yg, y32, (size_t)(h.nrows * f) * sizeof(float)) != 0) {
            printf("  f=%lld vals=%d: far groups of %s rows differ from the default\n", (long long)f, vals,
                   gi == 2 ? "16" : "300");
            ok = 0;
          }
        }
        cg_free(yg);
        spmm_naive(&h, x, f, f, ref);
        char what[96];
        snprintf(what, sizeof what, "spmm 32-column passes, %s, f=%lld vals=%d",
                 b ? "generic" : "best", (long long)f, vals);
        ok &= tu_close(what, y32, ref, h.nrows * f, 1e-5, 1e-5);
        if (memcmp(y16, y32, (size_t)(h.nrows * f) * sizeof(float)) != 0) {
          printf("  %s: 16- and 32-column passes differ\n", what);
          ok = 0;
        }
        cg_free(x);
        cg_free(y16);
        cg_free(y32);
        cg_free(ref);
      }
      for (int i = 0; i < 4; i++) bes[b]->spmat_destroy(bes[b], a[i]);
    }
    if (vals == 2) {
      struct cg_spmat *a = NULL;
      setenv("CAPGNN_CPU_SPMM_PANEL", "64", 1);
      assert_int_equal(be2->spmat_create(be2, &h, &a), CG_ERR_ARG);
      assert_null(a);
      assert_non_null(strstr(cg_err_msg(), "CAPGNN_CPU_SPMM_PANEL=64"));
      cg_err_clear();
      unsetenv("CAPGNN_CPU_SPMM_PANEL");
      setenv("CAPGNN_CPU_SPMM_GROUP", "65537", 1);
      assert_int_equal(be2->spmat_create(be2, &h, &a), CG_ERR_ARG);
      assert_null(a);
      assert_non_null(strstr(cg_err_msg(), "CAPGNN_CPU_SPMM_GROUP=65537"));
      cg_err_clear();
      unsetenv("CAPGNN_CPU_SPMM_GROUP");
    }
    cg_csr_free(&h);
  }
  set_layout("auto", NULL);
  assert_true(ok);
}

/* Layout choice: csr never tiles, auto tiles only large clustered matrices, a bad
 * setting is refused with a message; tiled results do not depend on the thread
 * count and agree with the CSR layout to rounding. */
static void test_spmm_layouts(void **state) {
  (void)state;
  struct cg_csr h;
  struct cg_spmat *a = NULL;
  make_clustered_csr(&h, 600, 600, 16, 1, 41);
  set_layout("csr", "16");
  assert_int_equal(be2->spmat_create(be2, &h, &a), CG_OK);
  assert_int_equal(cpu_spmat_tiles(a, NULL), 0);
  be2->spmat_destroy(be2, a);
  set_layout("auto", "16"); /* 38 blocks per side: large enough */
  assert_int_equal(be2->spmat_create(be2, &h, &a), CG_OK);
  assert_true(cpu_spmat_tiles(a, NULL) > 0);
  be2->spmat_destroy(be2, a);
  set_layout("auto", "64"); /* 10 blocks per side: stays CSR */
  assert_int_equal(be2->spmat_create(be2, &h, &a), CG_OK);
  assert_int_equal(cpu_spmat_tiles(a, NULL), 0);
  be2->spmat_destroy(be2, a);
  a = NULL;
  set_layout("blocked", NULL);
  assert_int_equal(be2->spmat_create(be2, &h, &a), CG_ERR_ARG);
  assert_null(a);
  assert_non_null(strstr(cg_err_msg(), "CAPGNN_CPU_SPMM=blocked"));
  cg_err_clear();
  set_layout("tiled", "8");
  assert_int_equal(be2->spmat_create(be2, &h, &a), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "16..65536"));
  cg_err_clear();

  /* with values, then with factored values */
  for (int kind = 1; kind <= 2; kind++) {
    if (kind == 2) {
      cg_csr_free(&h);
      make_clustered_csr(&h, 600, 600, 16, 2, 42);
    }
    set_layout("tiled", "16");
    struct tu_rng rng = {8};
    const int64_t f = 100;
    float *x = fbuf(h.ncols * f), *y[4];
    frand(&rng, x, h.ncols * f, -1, 1);
    struct cg_backend *bes[] = {be1, be2, be3, be2};
    for (int b = 0; b < 4; b++) {
      if (b == 3) set_layout("csr", NULL);
      y[b] = spmm_fresh(bes[b], &h, x, f);
    }
    assert_memory_equal(y[0], y[1], (size_t)(h.nrows * f) * sizeof(float));
    assert_memory_equal(y[0], y[2], (size_t)(h.nrows * f) * sizeof(float));
    double *ref = dbuf(h.nrows * f);
    for (int64_t i = 0; i < h.nrows * f; i++) ref[i] = y[3][i];
    assert_true(tu_close("tiled vs csr layout", y[0], ref, h.nrows * f, 1e-5, 1e-5));
    set_layout("auto", NULL);
    for (int b = 0; b < 4; b++) cg_free(y[b]);
    cg_free(x);
    cg_free(ref);
  }
  cg_csr_free(&h);
}

/* The tiled products' scratch is the backend's, shared by its matrices (cpu_spmm_internal.h,
 * struct cpu_spmm_ws): matrices of different column counts built on one backend in a
 * growing and a shrinking order, their products interleaved, give the same bits as each
 * matrix alone on a backend of its own. */
static void test_spmm_shared_scratch(void **state) {
  (void)state;
  set_layout("tiled", "16");
  const int64_t shapes[][2] = {{300, 200}, {180, 700}, {520, 90}};
  struct cg_csr h[3];
  struct cg_spmat *a[3] = {NULL, NULL, NULL};
  float *x[3], *alone[3];
  const int64_t f = 70; /* two slices of 64 columns: the second one reuses the packed scratch */
  struct cg_backend *be = NULL;
  assert_int_equal(cg_backend_cpu_create(2, &be), CG_OK);
  for (int i = 0; i < 3; i++) {
    make_clustered_csr(&h[i], shapes[i][0], shapes[i][1], 16, i == 2 ? 2 : 1, 300 + (uint64_t)i);
    struct tu_rng rng = {400 + (uint64_t)i};
    x[i] = fbuf(h[i].ncols * f);
    frand(&rng, x[i], h[i].ncols * f, -1, 1);
    struct cg_backend *own = NULL;
    assert_int_equal(cg_backend_cpu_create(2, &own), CG_OK);
    alone[i] = spmm_fresh(own, &h[i], x[i], f);
    cg_backend_destroy(&own);
    assert_int_equal(be->spmat_create(be, &h[i], &a[i]), CG_OK);
    assert_true(cpu_spmat_tiles(a[i], NULL) > 0);
  }
  static const int order[] = {1, 0, 2, 1, 2, 0, 0, 1};
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
    const int i = order[k];
    float *y = fbuf(h[i].nrows * f);
    be->spmm(be, a[i], x[i], f, y, f, f);
    assert_memory_equal(y, alone[i], (size_t)(h[i].nrows * f) * sizeof(float));
    cg_free(y);
  }
  for (int i = 0; i < 3; i++) {
    be->spmat_destroy(be, a[i]);
    cg_csr_free(&h[i]);
    cg_free(x[i]);
    cg_free(alone[i]);
  }
  cg_backend_destroy(&be);
  set_layout("auto", NULL);
}

/* ---------------------------------------------------------------- determinism */

static void test_thread_count_independence(void **state) {
  (void)state;
  struct tu_rng rng = {5};
  struct cg_csr h;
  make_csr(&h, 5000, 4000, 60, 0.05, 1, 99);
  const int64_t widths[] = {41, 256};
  struct cg_backend *bes[] = {be1, be2, be3};
  for (int w = 0; w < 2; w++) {
    const int64_t f = widths[w];
    float *x = fbuf(h.ncols * f), *y[3];
    frand(&rng, x, h.ncols * f, -1, 1);
    for (int b = 0; b < 3; b++) y[b] = spmm_fresh(bes[b], &h, x, f);
    assert_memory_equal(y[0], y[1], (size_t)(h.nrows * f) * sizeof(float));
    assert_memory_equal(y[0], y[2], (size_t)(h.nrows * f) * sizeof(float));
    for (int b = 0; b < 3; b++) cg_free(y[b]);
    cg_free(x);
  }
  cg_csr_free(&h);

  /* the reductions: bias_grad, layernorm dgamma/dbeta, loss sums */
  const int64_t rows = 5003, cols = 70;
  float *dy = fbuf(rows * cols), *x = fbuf(rows * cols), *gamma = fbuf(cols), *beta = fbuf(cols);
  float *mean = fbuf(rows), *rstd = fbuf(rows), *yy = fbuf(rows * cols), *dx = fbuf(rows * cols);
  float *db[3], *dg[3], *dbt[3], *dl = fbuf(rows * cols);
  double lx[3], lb[3];
  int32_t *labels = malloc((size_t)rows * sizeof *labels), *idx = malloc((size_t)rows * sizeof *idx);
  uint8_t *ml = malloc((size_t)(rows * cols));
  frand(&rng, dy, rows * cols, -1, 1);
  frand(&rng, x, rows * cols, -3, 3);
  frand(&rng, gamma, cols, 0.5, 1.5);
  frand(&rng, beta, cols, -0.5, 0.5);
  for (int64_t r = 0; r < rows; r++) {
    labels[r] = (int32_t)tu_int(&rng, cols);
    idx[r] = (int32_t)r;
  }
  for (int64_t i = 0; i < rows * cols; i++) ml[i] = (uint8_t)tu_int(&rng, 2);
  for (int b = 0; b < 3; b++) {
    db[b] = fbuf(cols);
    dg[b] = fbuf(cols);
    dbt[b] = fbuf(cols);
    bes[b]->bias_grad(bes[b], dy, rows, cols, db[b]);
    bes[b]->layernorm_fwd(bes[b], x, rows, cols, gamma, beta, 1e-5f, yy, mean, rstd);
    bes[b]->layernorm_bwd(bes[b], dy, x, mean, rstd, gamma, rows, cols, dx, dg[b], dbt[b]);
    bes[b]->xent(bes[b], x, rows, cols, labels, idx, rows, 1.0f / (float)rows, dl, &lx[b]);
    bes[b]->bce(bes[b], x, rows, cols, ml, idx, rows, 1.0f / (float)rows, dl, &lb[b]);
  }
  for (int b = 1; b < 3; b++) {
    assert_memory_equal(db[0], db[b], (size_t)cols * sizeof(float));
    assert_memory_equal(dg[0], dg[b], (size_t)cols * sizeof(float));
    assert_memory_equal(dbt[0], dbt[b], (size_t)cols * sizeof(float));
    assert_memory_equal(&lx[0], &lx[b], sizeof(double));
    assert_memory_equal(&lb[0], &lb[b], sizeof(double));
  }
  /* Sums whose double rounding depends on how the rows are grouped: +2^40 in the first
   * row and -2^40 in the last cancel, so each small value is rounded to 2^-12 while a
   * partial sum holds 2^40 and exactly otherwise. Random inputs round alike under any
   * grouping (their float results agree whatever the blocks); these do not, so the row
   * blocks must depend on the row count only, never on the thread count. */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      dy[r * cols + c] = r == 0 ? 0x1p40f : r == rows - 1 ? -0x1p40f : (float)tu_unif(&rng, 0, 1);
  for (int b = 0; b < 3; b++) bes[b]->bias_grad(bes[b], dy, rows, cols, db[b]);
  for (int b = 1; b < 3; b++) assert_memory_equal(db[0], db[b], (size_t)cols * sizeof(float));
  for (int b = 0; b < 3; b++) {
    cg_free(db[b]);
    cg_free(dg[b]);
    cg_free(dbt[b]);
  }
  cg_free(dy);
  cg_free(x);
  cg_free(gamma);
  cg_free(beta);
  cg_free(mean);
  cg_free(rstd);
  cg_free(yy);
  cg_free(dx);
  cg_free(dl);
  free(labels);
  free(idx);
  free(ml);
}

/* ---------------------------------------------------------------- bias, relu */

static void test_bias_relu(void **state) {
  (void)state;
  struct tu_rng rng = {21};
  const int64_t shapes[][2] = {{3, 5}, {3000, 70}, {1, 1}};
  int ok = 1;
  for (int s = 0; s < 3; s++) {
    const int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
    float *y = fbuf(n), *y0 = fbuf(n), *bias = fbuf(cols), *db = fbuf(cols);
    double *ref = dbuf(n > cols ? n : cols);
    frand(&rng, y, n, -1, 1);
    frand(&rng, bias, cols, -1, 1);
    memcpy(y0, y, (size_t)n * sizeof(float));
    be2->bias_add(be2, y, bias, rows, cols);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++)
        ok &= y[r * cols + c] == y0[r * cols + c] + bias[c];
    for (int64_t c = 0; c < cols; c++) {
      double sum = 0;
      for (int64_t r = 0; r < rows; r++) sum += y0[r * cols + c];
      ref[c] = sum;
    }
    frand(&rng, db, cols, 5, 6); /* overwritten */
    be2->bias_grad(be2, y0, rows, cols, db);
    ok &= tu_close("bias_grad", db, ref, cols, 1e-5, 1e-6);

    /* ReLU forward out of place and in place, backward in place */
    float *z = fbuf(n), *dz = fbuf(n);
    if (n > 3) {
      y0[0] = 0.0f;
      y0[1] = -0.0f;
      y0[2] = NAN; /* passed on, as torch.relu does: a NaN must reach the loss, not become 0 */
    }
    be2->relu_fwd(be2, y0, z, n);
    for (int64_t i = 0; i < n; i++) ok &= isnan(y0[i]) ? isnan(z[i]) : z[i] == (y0[i] > 0 ? y0[i] : 0.0f);
    if (n > 3 && !isnan(z[2])) {
      fprintf(stderr, "relu_fwd(NaN) = %g, expected NaN\n", (double)z[2]);
      ok = 0;
    }
    memcpy(y, y0, (size_t)n * sizeof(float));
    be2->relu_fwd(be2, y, y, n);
    ok &= memcmp(y, z, (size_t)n * sizeof(float)) == 0;
    if (n > 3) z[2] = y0[2] = 1.0f; /* (the backward below is checked on numbers) */
    frand(&rng, dz, n, -1, 1);
    memcpy(y, dz, (size_t)n * sizeof(float));
    be2->relu_bwd(be2, z, dz, n);
    for (int64_t i = 0; i < n; i++) ok &= dz[i] == (z[i] > 0 ? y[i] : 0.0f);
    cg_free(y);
    cg_free(y0);
    cg_free(bias);
    cg_free(db);
    cg_free(ref);
    cg_free(z);
    cg_free(dz);
  }
  assert_true(ok);
}

/* ---------------------------------------------------------------- dropout */

static void dropout_check(struct cg_backend *be, int64_t rows, int64_t cols, uint64_t seed) {
  struct tu_rng rng = {seed};
  const int64_t n = rows * cols;
  const float p = 0.3f, scale = 1.0f / (1.0f - p);
  float *in = fbuf(n), *out = fbuf(n), *out2 = fbuf(n);
  int32_t *gid = malloc((size_t)rows * sizeof *gid);
  assert_non_null(gid);
  for (int64_t i = 0; i < n; i++) in[i] = (float)tu_unif(&rng, 0.5, 1.5); /* never 0 */
  for (int64_t r = 0; r < rows; r++) gid[r] = (int32_t)(7 * r + 1000003);
  const struct cg_dropout_key key = {0x1234567890abcdefull, 3, 1};

  be->dropout(be, in, out, rows, cols, gid, p, key);
  /* each element follows the shared rule exactly; the drop rate is about p */
  int64_t dropped = 0, mismatch = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const float u = cg_dropout_uniform(key.seed, key.epoch, key.layer, (uint32_t)gid[r],
                                         (uint32_t)c);
      const float want = cg_dropout_keep(u, p) ? in[r * cols + c] * scale : 0.0f;
      mismatch += out[r * cols + c] != want;
      dropped += out[r * cols + c] == 0.0f;
    }
  const double rate = (double)dropped / (double)n;
  printf("  dropout: rate %.4f for p = %.2f over %lld elements\n", rate, (double)p, (long long)n);
  assert_int_equal(mismatch, 0);
  assert_true(fabs(rate - p) < 5.0 * sqrt(p * (1.0 - p) / (double)n)); /* 5 sigma */

  /* same key -> same mask; in place equals out of place; 1 thread with the best
   * kernels agrees bit for bit */
  memcpy(out2, in, (size_t)n * sizeof(float));
  be->dropout(be, out2, out2, rows, cols, gid, p, key);
  assert_memory_equal(out, out2, (size_t)n * sizeof(float));
  be1->dropout(be1, in, out2, rows, cols, gid, p, key);
  assert_memory_equal(out, out2, (size_t)n * sizeof(float));

  /* the mask follows the global id, not the row position: permuting rows together
   * with their gids permutes the output identically */
  float *pin = fbuf(n), *pout = fbuf(n);
  int32_t *pgid = malloc((size_t)rows * sizeof *pgid);
  int64_t *perm = malloc((size_t)rows * sizeof *perm);
  assert_non_null(pgid);
  assert_non_null(perm);
  for (int64_t r = 0; r < rows; r++) perm[r] = r;
  for (int64_t r = rows - 1; r > 0; r--) {
    int64_t j = tu_int(&rng, r + 1), t = perm[r];
    perm[r] = perm[j];
    perm[j] = t;
  }
  for (int64_t r = 0; r < rows; r++) {
    pgid[r] = gid[perm[r]];
    memcpy(pin + r * cols, in + perm[r] * cols, (size_t)cols * sizeof(float));
  }
  be->dropout(be, pin, pout, rows, cols, pgid, p, key);
  for (int64_t r = 0; r < rows; r++)
    assert_memory_equal(pout + r * cols, out + perm[r] * cols, (size_t)cols * sizeof(float));

  /* a different epoch, layer or seed gives a different mask (about 2p(1-p) = 42%
   * of the decisions differ) */
  struct cg_dropout_key other[3] = {key, key, key};
  other[0].epoch++;
  other[1].layer++;
  other[2].seed ^= 1ull << 40; /* the high key word matters too */
  for (int k = 0; k < 3; k++) {
    be->dropout(be, in, out2, rows, cols, gid, p, other[k]);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++) differ += (out[i] == 0.0f) != (out2[i] == 0.0f);
    printf("  dropout: key change %d flips %.3f of the decisions\n", k, (double)differ / n);
    assert_true(differ > n / 3 && differ < n / 2);
  }

  /* p == 0 copies, p == 1 drops all */
  be->dropout(be, in, out2, rows, cols, gid, 0.0f, key);
  assert_memory_equal(in, out2, (size_t)n * sizeof(float));
  be->dropout(be, in, out2, rows, cols, gid, 1.0f, key);
  for (int64_t i = 0; i < n; i++) assert_true(out2[i] == 0.0f);

  cg_free(in);
  cg_free(out);
  cg_free(out2);
  cg_free(pin);
  cg_free(pout);
  free(gid);
  free(pgid);
  free(perm);
}

static void test_dropout(void **state) {
  (void)state;
  /* widths: below one vector batch, 32-column batches plus a tail, exact batches */
  struct cg_backend *bes[] = {be2, beg};
  const int64_t shapes[][2] = {{500, 103}, {2000, 7}, {400, 128}, {1300, 41},
                               {2707, 16}, {301, 12}, {1001, 16}, {999, 3}}; /* two rows a draw up to 16, an odd last row */
  for (int b = 0; b < 2; b++)
    for (int s = 0; s < 8; s++) {
      printf("  %s kernels, %lld x %lld\n", b ? "generic" : "best", (long long)shapes[s][0],
             (long long)shapes[s][1]);
      dropout_check(bes[b], shapes[s][0], shapes[s][1], 31 + (uint64_t)s);
    }
}

/* The backward of hd = dropout(relu(x)) read from hd equals the mask drawn again plus
 * relu_bwd bit for bit: ReLU inputs of both signs, zeros of both signs, subnormal and huge
 * positives (hd overflows to inf), gradients with NaN and inf, several p. */
static void test_dropout_relu_bwd(void **state) {
  (void)state;
  struct cg_backend *bes[] = {be2, beg, be1};
  const int64_t rows = 700, cols = 103, n = rows * cols;
  const float ps[] = {0.5f, 0.3f, 0.1f};
  struct tu_rng rng = {77};
  float *x = fbuf(n), *y = fbuf(n), *hd = fbuf(n), *dy = fbuf(n), *want = fbuf(n), *got = fbuf(n);
  int32_t *gid = malloc((size_t)rows * sizeof *gid);
  assert_non_null(gid);
  for (int64_t r = 0; r < rows; r++) gid[r] = (int32_t)(13 * r + 5);
  frand(&rng, x, n, -1, 1);
  frand(&rng, dy, n, -2, 2);
  for (int64_t i = 0; i < n; i += 7) x[i] = 0.0f;
  for (int64_t i = 3; i < n; i += 11) x[i] = -0.0f;
  for (int64_t i = 5; i < n; i += 13) x[i] = 1e-40f; /* subnormal: x * scale stays > 0 */
  for (int64_t i = 9; i < n; i += 17) x[i] = 3e38f;  /* x * scale overflows to inf */
  for (int64_t i = 2; i < n; i += 19) dy[i] = NAN;
  for (int64_t i = 4; i < n; i += 23) dy[i] = -INFINITY;
  int ok = 1;
  for (int b = 0; b < 3; b++)
    for (int k = 0; k < 3; k++) {
      const struct cg_dropout_key key = {0xfeedfacecafebeefull + (uint64_t)k, 2, 1};
      bes[b]->relu_fwd(bes[b], x, y, n);
      bes[b]->dropout(bes[b], y, hd, rows, cols, gid, ps[k], key);
      memcpy(want, dy, (size_t)n * sizeof(float));
      bes[b]->dropout(bes[b], want, want, rows, cols, gid, ps[k], key);
      bes[b]->relu_bwd(bes[b], y, want, n);
      memcpy(got, dy, (size_t)n * sizeof(float));
      bes[b]->dropout_relu_bwd(bes[b], hd, got, n, 1.0f / (1.0f - ps[k]));
      const int same = memcmp(want, got, (size_t)n * sizeof(float)) == 0;
      if (!same) printf("  dropout_relu_bwd differs: backend %d, p %.2f\n", b, (double)ps[k]);
      ok &= same;
    }
  assert_true(ok);
  cg_free(x);
  cg_free(y);
  cg_free(hd);
  cg_free(dy);
  cg_free(want);
  cg_free(got);
  free(gid);
}

/* ---------------------------------------------------------------- LayerNorm */

static void ln_fwd_d(const double *x, const double *gamma, const double *beta, int64_t rows,
                     int64_t cols, double eps, double *y, double *mean, double *rstd) {
  for (int64_t r = 0; r < rows; r++) {
    double mu = 0, var = 0;
    for (int64_t c = 0; c < cols; c++) mu += x[r * cols + c];
    mu /= (double)cols;
    for (int64_t c = 0; c < cols; c++) var += (x[r * cols + c] - mu) * (x[r * cols + c] - mu);
    var /= (double)cols;
    const double rs = 1.0 / sqrt(var + eps);
    for (int64_t c = 0; c < cols; c++)
      y[r * cols + c] = (x[r * cols + c] - mu) * rs * gamma[c] + beta[c];
    if (mean) mean[r] = mu;
    if (rstd) rstd[r] = rs;
  }
}

/* L = sum(y * w) for the finite differences. */
static double ln_loss_d(const double *x, const double *gamma, const double *beta, const double *w,
                        int64_t rows, int64_t cols, double eps, double *tmp) {
  ln_fwd_d(x, gamma, beta, rows, cols, eps, tmp, NULL, NULL);
  double s = 0;
  for (int64_t i = 0; i < rows * cols; i++) s += tmp[i] * w[i];
  return s;
}

static void test_layernorm(void **state) {
  (void)state;
  struct tu_rng rng = {41};
  int ok = 1;
  const float eps = 1e-5f;
  /* forward against the double reference, including a row whose mean is far
   * larger than its spread and a constant row */
  {
    const int64_t rows = 50, cols = 77, n = rows * cols;
    float *x = fbuf(n), *g = fbuf(cols), *b = fbuf(cols), *y = fbuf(n), *mu = fbuf(rows),
          *rs = fbuf(rows);
    double *xd = dbuf(n), *gd = dbuf(cols), *bd = dbuf(cols), *yd = dbuf(n), *mud = dbuf(rows),
           *rsd = dbuf(rows);
    frand(&rng, x, n, -2, 2);
    for (int64_t c = 0; c < cols; c++) x[cols + c] = 1000.0f + (float)tu_unif(&rng, -0.1, 0.1);
    for (int64_t c = 0; c < cols; c++) x[2 * cols + c] = 3.0f;
    frand(&rng, g, cols, 0.5, 1.5);
    frand(&rng, b, cols, -0.5, 0.5);
    for (int64_t i = 0; i < n; i++) xd[i] = x[i];
    for (int64_t c = 0; c < cols; c++) {
      gd[c] = g[c];
      bd[c] = b[c];
    }
    ln_fwd_d(xd, gd, bd, rows, cols, eps, yd, mud, rsd);
    be2->layernorm_fwd(be2, x, rows, cols, g, b, eps, y, mu, rs);
    ok &= tu_close("layernorm y", y, yd, n, 1e-4, 1e-4);
    ok &= tu_close("layernorm mean", mu, mud, rows, 1e-6, 1e-6);
    ok &= tu_close("layernorm rstd", rs, rsd, rows, 1e-6, 1e-5);
    cg_free(x); cg_free(g); cg_free(b); cg_free(y); cg_free(mu); cg_free(rs);
    cg_free(xd); cg_free(gd); cg_free(bd); cg_free(yd); cg_free(mud); cg_free(rsd);
  }
  /* backward against central differences of the double forward */
  {
    const int64_t rows = 6, cols = 13, n = rows * cols;
    float *x = fbuf(n), *g = fbuf(cols), *b = fbuf(cols), *y = fbuf(n), *mu = fbuf(rows),
          *rs = fbuf(rows), *dy = fbuf(n), *dx = fbuf(n), *dg = fbuf(cols), *db = fbuf(cols);
    double *xd = dbuf(n), *gd = dbuf(cols), *bd = dbuf(cols), *wd = dbuf(n), *tmp = dbuf(n);
    double *fdx = dbuf(n), *fdg = dbuf(cols), *fdb = dbuf(cols);
    frand(&rng, x, n, -2, 2);
    frand(&rng, g, cols, 0.5, 1.5);
    frand(&rng, b, cols, -0.5, 0.5);
    frand(&rng, dy, n, -1, 1);
    for (int64_t i = 0; i < n; i++) {
      xd[i] = x[i];
      wd[i] = dy[i];
    }
    for (int64_t c = 0; c < cols; c++) {
      gd[c] = g[c];
      bd[c] = b[c];
    }
    const double h = 1e-5;
    for (int64_t i = 0; i < n; i++) {
      const double s = xd[i];
      xd[i] = s + h;
      const double lp = ln_loss_d(xd, gd, bd, wd, rows, cols, eps, tmp);
      xd[i] = s - h;
      const double lm = ln_loss_d(xd, gd, bd, wd, rows, cols, eps, tmp);
      xd[i] = s;
      fdx[i] = (lp - lm) / (2 * h);
    }
    for (int64_t c = 0; c < cols; c++) {
      double s = gd[c];
      gd[c] = s + h;
      double lp = ln_loss_d(xd, gd, bd, wd, rows, cols, eps, tmp);
      gd[c] = s - h;
      double lm = ln_loss_d(xd, gd, bd, wd, rows, cols, eps, tmp);
      gd[c] = s;
      fdg[c] = (lp - lm) / (2 * h);
      s = bd[c];
      bd[c] = s + h;
      lp = ln_loss_d(xd, gd, bd, wd, rows, cols, eps, tmp);
      bd[c] = s - h;
      lm = ln_loss_d(xd, gd, bd, wd, rows, cols, eps, tmp);
      bd[c] = s;
      fdb[c] = (lp - lm) / (2 * h);
    }
    be2->layernorm_fwd(be2, x, rows, cols, g, b, eps, y, mu, rs);
    frand(&rng, dx, n, 7, 8); /* all overwritten */
    frand(&rng, dg, cols, 7, 8);
    frand(&rng, db, cols, 7, 8);
    be2->layernorm_bwd(be2, dy, x, mu, rs, g, rows, cols, dx, dg, db);
    ok &= tu_close("layernorm dx vs finite differences", dx, fdx, n, 1e-4, 1e-3);
    ok &= tu_close("layernorm dgamma vs finite differences", dg, fdg, cols, 1e-4, 1e-3);
    ok &= tu_close("layernorm dbeta vs finite differences", db, fdb, cols, 1e-4, 1e-3);
    cg_free(x); cg_free(g); cg_free(b); cg_free(y); cg_free(mu); cg_free(rs); cg_free(dy);
    cg_free(dx); cg_free(dg); cg_free(db);
    cg_free(xd); cg_free(gd); cg_free(bd); cg_free(wd); cg_free(tmp); cg_free(fdx);
    cg_free(fdg); cg_free(fdb);
  }
  /* dgamma/dbeta over many row blocks and several column blocks, against the
   * analytic sums in double */
  {
    const int64_t rows = 3001, cols = 130, n = rows * cols;
    float *x = fbuf(n), *g = fbuf(cols), *b = fbuf(cols), *y = fbuf(n), *mu = fbuf(rows),
          *rs = fbuf(rows), *dy = fbuf(n), *dx = fbuf(n), *dg = fbuf(cols), *db = fbuf(cols);
    double *rg = dbuf(cols), *rb = dbuf(cols);
    frand(&rng, x, n, -2, 2);
    frand(&rng, g, cols, 0.5, 1.5);
    frand(&rng, b, cols, -0.5, 0.5);
    frand(&rng, dy, n, -1, 1);
    be2->layernorm_fwd(be2, x, rows, cols, g, b, eps, y, mu, rs);
    be2->layernorm_bwd(be2, dy, x, mu, rs, g, rows, cols, dx, dg, db);
    for (int64_t c = 0; c < cols; c++) {
      double sg = 0, sb = 0;
      for (int64_t r = 0; r < rows; r++) {
        sg += (double)dy[r * cols + c] * (((double)x[r * cols + c] - mu[r]) * rs[r]);
        sb += dy[r * cols + c];
      }
      rg[c] = sg;
      rb[c] = sb;
    }
    ok &= tu_close("layernorm dgamma (3001 rows)", dg, rg, cols, 1e-4, 1e-5);
    ok &= tu_close("layernorm dbeta (3001 rows)", db, rb, cols, 1e-4, 1e-5);
    cg_free(x); cg_free(g); cg_free(b); cg_free(y); cg_free(mu); cg_free(rs); cg_free(dy);
    cg_free(dx); cg_free(dg); cg_free(db); cg_free(rg); cg_free(rb);
  }
  assert_true(ok);
}

/* ---------------------------------------------------------------- losses */

static double xent_loss_d(const double *z, int64_t cols, const int32_t *labels,
                          const int32_t *idx, int64_t n_idx) {
  double total = 0;
  for (int64_t i = 0; i < n_idx; i++) {
    const double *zr = z + (int64_t)idx[i] * cols;
    double mx = zr[0], s = 0;
    for (int64_t c = 1; c < cols; c++) mx = zr[c] > mx ? zr[c] : mx;
    for (int64_t c = 0; c < cols; c++) s += exp(zr[c] - mx);
    total += mx + log(s) - zr[labels[idx[i]]];
  }
  return total;
}

static double bce_loss_d(const double *z, int64_t cols, const uint8_t *y, const int32_t *idx,
                         int64_t n_idx) {
  double total = 0;
  for (int64_t i = 0; i < n_idx; i++)
    for (int64_t c = 0; c < cols; c++) {
      const int64_t e = (int64_t)idx[i] * cols + c;
      /* the textbook form, -t log s - (1-t) log(1-s), evaluated stably */
      const double s = 1.0 / (1.0 + exp(-z[e]));
      total += y[e] ? -log(s) : -log1p(-s); /* fine for the |z| <= 4 used here */
    }
  return total;
}

static void test_xent(void **state) {
  (void)state;
  struct tu_rng rng = {51};
  const int64_t rows = 40, cols = 7, n = rows * cols, n_idx = 20;
  float *z = fbuf(n), *d = fbuf(n);
  double *zd = dbuf(n), *fd = dbuf(n);
  int32_t labels[40], idx[20];
  frand(&rng, z, n, -3, 3);
  for (int64_t r = 0; r < rows; r++) labels[r] = (int32_t)tu_int(&rng, cols);
  for (int64_t i = 0; i < n_idx; i++) idx[i] = (int32_t)(2 * i + 1);
  /* one row with huge logits: a naive exp would overflow */
  z[3 * cols + 0] = 1000.0f;
  z[3 * cols + 1] = -1000.0f;
  z[3 * cols + 2] = 999.0f;
  labels[3] = 2;
  const float scale = 1.0f / 37.0f;
  for (int64_t i = 0; i < n; i++) {
    zd[i] = z[i];
    d[i] = 99.0f; /* dlogits is zeroed entirely */
  }
  double loss = 0;
  be2->xent(be2, z, rows, cols, labels, idx, n_idx, scale, d, &loss);
  const double ref = xent_loss_d(zd, cols, labels, idx, n_idx);
  printf("  xent: loss %.12g, reference %.12g\n", loss, ref);
  assert_true(isfinite(loss));
  assert_true(fabs(loss - ref) <= 1e-6 * fabs(ref) + 1e-9);
  /* gradient of scale * loss by central differences of the double loss */
  const double h = 1e-4;
  for (int64_t i = 0; i < n; i++) {
    const double s = zd[i];
    zd[i] = s + h;
    const double lp = xent_loss_d(zd, cols, labels, idx, n_idx);
    zd[i] = s - h;
    const double lm = xent_loss_d(zd, cols, labels, idx, n_idx);
    zd[i] = s;
    fd[i] = scale * (lp - lm) / (2 * h);
  }
  assert_true(tu_close("xent dlogits vs finite differences", d, fd, n, 1e-6, 1e-4));
  for (int64_t r = 0; r < rows; r += 2) /* rows not in idx stay zero */
    for (int64_t c = 0; c < cols; c++) assert_true(d[r * cols + c] == 0.0f);
  cg_free(z);
  cg_free(d);
  cg_free(zd);
  cg_free(fd);
}

static void test_bce(void **state) {
  (void)state;
  struct tu_rng rng = {61};
  const int64_t rows = 30, cols = 9, n = rows * cols, n_idx = 12;
  float *z = fbuf(n), *d = fbuf(n);
  double *zd = dbuf(n), *fd = dbuf(n);
  uint8_t *y = malloc((size_t)n);
  int32_t idx[12];
  assert_non_null(y);
  frand(&rng, z, n, -4, 4);
  for (int64_t i = 0; i < n; i++) y[i] = (uint8_t)tu_int(&rng, 2);
  for (int64_t i = 0; i < n_idx; i++) idx[i] = (int32_t)(rows - 1 - 2 * i);
  const float scale = 0.25f;
  for (int64_t i = 0; i < n; i++) {
    zd[i] = z[i];
    d[i] = -5.0f;
  }
  double loss = 0;
  be2->bce(be2, z, rows, cols, y, idx, n_idx, scale, d, &loss);
  const double ref = bce_loss_d(zd, cols, y, idx, n_idx);
  printf("  bce: loss %.12g, reference %.12g\n", loss, ref);
  assert_true(fabs(loss - ref) <= 1e-6 * fabs(ref) + 1e-9);
  const double h = 1e-4;
  for (int64_t i = 0; i < n; i++) {
    const double s = zd[i];
    zd[i] = s + h;
    const double lp = bce_loss_d(zd, cols, y, idx, n_idx);
    zd[i] = s - h;
    const double lm = bce_loss_d(zd, cols, y, idx, n_idx);
    zd[i] = s;
    fd[i] = scale * (lp - lm) / (2 * h);
  }
  assert_true(tu_close("bce dlogits vs finite differences", d, fd, n, 1e-6, 1e-4));

  /* extreme logits: loss max(z,0) - z t + log(1 + e^-|z|) stays exact and finite */
  const float zx[4] = {100.0f, -100.0f, 100.0f, -100.0f};
  const uint8_t yx[4] = {0, 1, 1, 0};
  const int32_t one = 0;
  float dx[4];
  be2->bce(be2, zx, 1, 4, yx, &one, 1, 1.0f, dx, &loss);
  /* 100 + e^-100 terms: log1p(e^-100) ~ 3.7e-44 is below double resolution of 200 */
  printf("  bce extreme: loss %.12g (expect 200)\n", loss);
  assert_true(fabs(loss - 200.0) < 1e-9);
  assert_true(fabs(dx[0] - 1.0f) < 1e-6 && fabs(dx[1] + 1.0f) < 1e-6);
  assert_true(fabs(dx[2]) < 1e-6 && fabs(dx[3]) < 1e-6);
  cg_free(z);
  cg_free(d);
  cg_free(zd);
  cg_free(fd);
  free(y);
}

static void test_eval_counts(void **state) {
  (void)state;
  /* single label: the first maximum wins ties */
  const float z[6 * 4] = {0.1f, 0.9f, 0.3f, 0.2f,   /* argmax 1, label 1: right */
                          0.5f, 0.5f, 0.1f, 0.0f,   /* tie -> 0, label 1: wrong */
                          0.5f, 0.5f, 0.1f, 0.0f,   /* tie -> 0, label 0: right */
                          -1.f, -2.f, -0.5f, -3.f,  /* argmax 2, label 2: right */
                          1.f, 2.f, 3.f, 4.f,       /* argmax 3, label 0: wrong */
                          4.f, 3.f, 2.f, 1.f};      /* right, but not in idx */
  const int32_t labels[6] = {1, 1, 0, 2, 0, 0};
  const int32_t idx[5] = {0, 1, 2, 3, 4};
  int64_t out[3] = {-1, -1, -1};
  be2->eval_counts(be2, z, 6, 4, labels, NULL, idx, 5, out);
  assert_int_equal(out[0], 3);
  assert_int_equal(out[1], 0);
  assert_int_equal(out[2], 0);

  /* multi-label against naive counts (logit 0 is a negative prediction), on a
   * size that takes the parallel path */
  struct tu_rng rng = {71};
  const int64_t rows = 1000, cols = 9;
  float *zz = fbuf(rows * cols);
  uint8_t *y = malloc((size_t)(rows * cols));
  int32_t *ix = malloc((size_t)rows * sizeof *ix);
  assert_non_null(y);
  assert_non_null(ix);
  for (int64_t i = 0; i < rows * cols; i++) {
    zz[i] = tu_int(&rng, 5) == 0 ? 0.0f : (float)tu_unif(&rng, -1, 1);
    y[i] = (uint8_t)tu_int(&rng, 2);
  }
  int64_t nidx = 0, tp = 0, fp = 0, fn = 0;
  for (int64_t r = 0; r < rows; r += 3) {
    ix[nidx++] = (int32_t)r;
    for (int64_t c = 0; c < cols; c++) {
      const int pr = zz[r * cols + c] > 0, t = y[r * cols + c];
      tp += pr && t;
      fp += pr && !t;
      fn += !pr && t;
    }
  }
  be2->eval_counts(be2, zz, rows, cols, NULL, y, ix, nidx, out);
  assert_int_equal(out[0], tp);
  assert_int_equal(out[1], fp);
  assert_int_equal(out[2], fn);
  cg_free(zz);
  free(y);
  free(ix);
}

/* ---------------------------------------------------------------- gather/scatter */

static void test_gather_scatter(void **state) {
  (void)state;
  struct tu_rng rng = {81};
  const int64_t colss[] = {5, 41, 100};
  const int64_t ns[] = {50, 2000};
  for (int ci = 0; ci < 3; ci++)
    for (int ni = 0; ni < 2; ni++) {
      const int64_t cols = colss[ci], n = ns[ni], nsrc = 7;
      float *src = fbuf(nsrc * cols), *g = fbuf(n * cols), *d = fbuf(nsrc * cols),
            *ref = fbuf(nsrc * cols), *upd = fbuf(n * cols);
      int32_t *idx = malloc((size_t)n * sizeof *idx);
      assert_non_null(idx);
      frand(&rng, src, nsrc * cols, -1, 1);
      frand(&rng, upd, n * cols, -1, 1);
      for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)(i % 3 == 0 ? 3 : tu_int(&rng, nsrc));
      be2->gather_rows(be2, src, cols, idx, n, g);
      for (int64_t i = 0; i < n; i++)
        assert_memory_equal(g + i * cols, src + (int64_t)idx[i] * cols, (size_t)cols * sizeof(float));
      /* scatter-add: float sums in order of i, so equal bit for bit */
      memcpy(d, src, (size_t)(nsrc * cols) * sizeof(float));
      memcpy(ref, src, (size_t)(nsrc * cols) * sizeof(float));
      for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < cols; c++) ref[(int64_t)idx[i] * cols + c] += upd[i * cols + c];
      be2->scatter_add_rows(be2, upd, cols, idx, n, d);
      assert_memory_equal(d, ref, (size_t)(nsrc * cols) * sizeof(float));
      cg_free(src);
      cg_free(g);
      cg_free(d);
      cg_free(ref);
      cg_free(upd);
      free(idx);
    }
}

/* ---------------------------------------------------------------- SGD */

static void test_sgd(void **state) {
  (void)state;
  /* torch.optim.SGD, lr 0.1, weight decay 0.1; w = (1, -2, 0.5), gradients (0.1, -0.2, 0)
   * then (-0.3, 0.05, 0). By hand:
   * Step 1: g' = g + 0.1 w = (0.2, -0.4, 0.05); momentum 0.9: buf = g' (buf starts at 0);
   *   w = w - 0.1 buf = (0.98, -1.96, 0.495) (the same without momentum).
   * Step 2: g' = (-0.3 + 0.098, 0.05 - 0.196, 0.0495) = (-0.202, -0.146, 0.0495);
   *   momentum: buf = 0.9 (0.2, -0.4, 0.05) + g' = (-0.022, -0.506, 0.0945),
   *   w = (0.9822, -1.9094, 0.48555); without: w = w - 0.1 g' = (1.0002, -1.9454, 0.49005). */
  const float g1[3] = {0.1f, -0.2f, 0.0f}, g2[3] = {-0.3f, 0.05f, 0.0f};
  const double w1[3] = {0.98, -1.96, 0.495}, b1[3] = {0.2, -0.4, 0.05};
  const double w2m[3] = {0.9822, -1.9094, 0.48555}, b2m[3] = {-0.022, -0.506, 0.0945};
  const double w2p[3] = {1.0002, -1.9454, 0.49005}, zero[3] = {0.0, 0.0, 0.0};
  for (int mom = 0; mom < 2; mom++) {
    const struct cg_sgd_params p = {0.1f, mom ? 0.9f : 0.0f, 0.1f};
    float w[3] = {1.0f, -2.0f, 0.5f}, b[3] = {0};
    be2->sgd(be2, w, g1, b, 3, &p);
    assert_true(tu_close("sgd w step 1", w, w1, 3, 1e-6, 1e-6));
    assert_true(tu_close("sgd buf step 1", b, mom ? b1 : zero, 3, 1e-7, 1e-6));
    be2->sgd(be2, w, g2, b, 3, &p);
    assert_true(tu_close("sgd w step 2", w, mom ? w2m : w2p, 3, 1e-6, 1e-6));
    assert_true(tu_close("sgd buf step 2", b, mom ? b2m : zero, 3, 1e-7, 1e-5));
  }
  /* a long vector takes the parallel path and matches the 1-thread result bit for bit */
  const int64_t n = 100000;
  float *wa = fbuf(n), *wb = fbuf(n), *g = fbuf(n), *ba = fbuf(n), *bb = fbuf(n);
  for (int64_t i = 0; i < n; i++) {
    wa[i] = wb[i] = (float)(i % 97) * 0.01f - 0.5f;
    g[i] = (float)(i % 13) * 0.1f - 0.6f;
    ba[i] = bb[i] = 0.0f;
  }
  const struct cg_sgd_params p = {0.05f, 0.9f, 5e-4f};
  for (int t = 0; t < 3; t++) {
    be1->sgd(be1, wa, g, ba, n, &p);
    be2->sgd(be2, wb, g, bb, n, &p);
  }
  assert_memory_equal(wa, wb, (size_t)n * sizeof(float));
  assert_memory_equal(ba, bb, (size_t)n * sizeof(float));
  cg_free(wa);
  cg_free(wb);
  cg_free(g);
  cg_free(ba);
  cg_free(bb);
}

/* ---------------------------------------------------------------- Adam */

/* The backend's (vectorised) Adam against core/adam.h's update bit for bit: Adam and
 * AdamW, three steps, 40,003 parameters (a tail past any vector width) of every size, on
 * 1 and 3 threads and with the portable kernels. */
static void test_adam_bits(void **state) {
  (void)state;
  const int64_t n = 40003;
  struct cg_backend *bes[3] = {be1, be3, beg};
  for (int dec = 0; dec < 2; dec++) {
    const struct cg_adam_params p = {0.01f, 0.9f, 0.999f, 1e-8f, 0.05f, dec};
    float *w0 = malloc((size_t)n * sizeof(float)), *g = malloc((size_t)n * sizeof(float));
    float *w[4], *m[4], *v[4];
    assert_non_null(w0);
    assert_non_null(g);
    for (int64_t i = 0; i < n; i++) w0[i] = (float)((i % 997) - 498) * (i % 3 ? 1e-3f : 7.5f);
    for (int k = 0; k < 4; k++) {
      w[k] = malloc((size_t)n * sizeof(float));
      m[k] = calloc((size_t)n, sizeof(float));
      v[k] = calloc((size_t)n, sizeof(float));
      assert_non_null(w[k]);
      assert_non_null(m[k]);
      assert_non_null(v[k]);
      memcpy(w[k], w0, (size_t)n * sizeof(float));
    }
    for (int64_t t = 1; t <= 3; t++) {
      for (int64_t i = 0; i < n; i++) g[i] = (float)(((i * 31 + t * 7) % 211) - 105) * (i % 5 ? 1e-4f : 3.0f);
      const struct cg_adam_coefs c = cg_adam_coefs_make(&p, t);
      for (int64_t i = 0; i < n; i++) cg_adam_update(c, w[3] + i, g[i], m[3] + i, v[3] + i);
      for (int k = 0; k < 3; k++) bes[k]->adam(bes[k], w[k], g, m[k], v[k], n, &p, t);
    }
    for (int k = 0; k < 3; k++) {
      assert_memory_equal(w[k], w[3], (size_t)n * sizeof(float));
      assert_memory_equal(m[k], m[3], (size_t)n * sizeof(float));
      assert_memory_equal(v[k], v[3], (size_t)n * sizeof(float));
    }
    for (int k = 0; k < 4; k++) {
      free(w[k]);
      free(m[k]);
      free(v[k]);
    }
    free(w0);
    free(g);
  }
}

static void test_adam(void **state) {
  (void)state;
  /* lr 0.01, betas (0.9, 0.999), eps 1e-8, weight decay 0.1; two steps on three
   * parameters w = (1, -2, 0.5) with gradients (0.1, -0.2, 0) then (-0.3, 0.05, 0). */
  struct cg_adam_params p = {0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 0};
  /* The parameters are floats: 1 - 0.999f = 0.00099998713, so v carries a 1.3e-5
   * relative offset from the decimal hand values; its tolerance allows that. */
  const float g1[3] = {0.1f, -0.2f, 0.0f}, g2[3] = {-0.3f, 0.05f, 0.0f};

  /* Adam (L2): g' = g + 0.1 w.
   * Step 1, w0 = 1: g' = 0.1 + 0.1 = 0.2; m = 0.1*0.2 = 0.02; v = 0.001*0.04 = 4e-5;
   *   mhat = 0.02/0.1 = 0.2, vhat = 4e-5/0.001 = 0.04, sqrt = 0.2;
   *   w = 1 - 0.01 * 0.2/(0.2 + 1e-8) = 0.9900000005.
   * w1 = -2: g' = -0.2 - 0.2 = -0.4; m = -0.04, v = 1.6e-4; w = -2 + 0.01*(0.4/0.40000001)
   *   = -1.99000000025.
   * w2 = 0.5: g' = 0.05; m = 0.005, v = 2.5e-6; w = 0.5 - 0.01*0.05/0.05000001 = 0.490000002.
   * Step 2 (bias corrections 1-0.81 = 0.19 and 1-0.998001 = 0.001999), w0 = 0.9900000005:
   *   g' = -0.3 + 0.09900000005 = -0.20099999995; m = 0.018 - 0.020099999995 = -0.002099999995;
   *   v = 0.999*4e-5 + 0.001*0.0404009999799 = 8.03609999799e-5;
   *   mhat = -0.0110526315526, sqrt(vhat) = sqrt(0.0402006002901) = 0.200500873539;
   *   w = 0.9900000005 + 0.01*0.0110526315526/(0.200500873539 + 1e-8) = 0.990551251515.
   * The other two the same way: -1.9811225968 and 0.480005779684. */
  const double adam_w1[3] = {0.9900000005, -1.99000000025, 0.490000002};
  const double adam_m1[3] = {0.02, -0.04, 0.005}, adam_v1[3] = {4e-5, 1.6e-4, 2.5e-6};
  const double adam_w2[3] = {0.990551251515, -1.9811225968, 0.480005779684};
  const double adam_m2[3] = {-0.002099999995, -0.0509000000025, 0.00940000002};
  const double adam_v2[3] = {8.03609999799e-05, 0.000182041000007, 4.8985000196e-06};

  /* AdamW: w *= 1 - 0.01*0.1 = 0.999 first, then Adam on the raw gradient.
   * Step 1, w0 = 1: w = 0.999; m = 0.01, v = 1e-5; mhat = 0.1, sqrt(vhat) = 0.1;
   *   w = 0.999 - 0.01*0.1/(0.1 + 1e-8) = 0.989000001. w1: -1.998 + 0.01 = -1.9880000005.
   *   w2 (g = 0): 0.4995, m = v = 0, update 0/(0 + eps) = 0.
   * Step 2, w0: 0.989000001*0.999 = 0.988011000999; m = 0.009 - 0.03 = -0.021;
   *   v = 0.999e-5 + 9e-5 = 9.999e-5; mhat = -0.110526315789; sqrt(vhat) = 0.223651537006;
   *   w = 0.988011000999 + 0.01*0.110526315789/(0.223651537006 + 1e-8) = 0.992952899111.
   *   w1: -1.98131731911; w2: 0.4995*0.999 = 0.4990005. */
  const double adamw_w1[3] = {0.989000001, -1.9880000005, 0.4995};
  const double adamw_w2[3] = {0.992952899111, -1.98131731911, 0.4990005};
  const double adamw_m2[3] = {-0.021, -0.013, 0.0}, adamw_v2[3] = {9.999e-5, 4.246e-5, 0.0};

  for (int decoupled = 0; decoupled < 2; decoupled++) {
    p.decoupled = decoupled;
    float w[3] = {1.0f, -2.0f, 0.5f}, m[3] = {0}, v[3] = {0};
    be2->adam(be2, w, g1, m, v, 3, &p, 1);
    if (!decoupled) {
      assert_true(tu_close("adam w step 1", w, adam_w1, 3, 1e-6, 1e-6));
      assert_true(tu_close("adam m step 1", m, adam_m1, 3, 1e-9, 1e-6));
      assert_true(tu_close("adam v step 1", v, adam_v1, 3, 1e-12, 1e-4));
    } else {
      assert_true(tu_close("adamw w step 1", w, adamw_w1, 3, 1e-6, 1e-6));
    }
    be2->adam(be2, w, g2, m, v, 3, &p, 2);
    if (!decoupled) {
      assert_true(tu_close("adam w step 2", w, adam_w2, 3, 1e-6, 1e-6));
      assert_true(tu_close("adam m step 2", m, adam_m2, 3, 1e-9, 1e-5));
      assert_true(tu_close("adam v step 2", v, adam_v2, 3, 1e-12, 1e-4));
    } else {
      assert_true(tu_close("adamw w step 2", w, adamw_w2, 3, 1e-6, 1e-6));
      assert_true(tu_close("adamw m step 2", m, adamw_m2, 3, 1e-9, 1e-5));
      assert_true(tu_close("adamw v step 2", v, adamw_v2, 3, 1e-12, 1e-4));
    }
  }

  /* a long vector takes the parallel path and matches the 1-thread result */
  const int64_t n = 100000;
  float *w1 = fbuf(n), *w2 = fbuf(n), *g = fbuf(n), *m1 = fbuf(n), *m2 = fbuf(n), *v1 = fbuf(n),
        *v2 = fbuf(n);
  struct tu_rng rng = {91};
  frand(&rng, w1, n, -1, 1);
  frand(&rng, g, n, -1, 1);
  memcpy(w2, w1, (size_t)n * sizeof(float));
  memset(m1, 0, (size_t)n * sizeof(float));
  memset(v1, 0, (size_t)n * sizeof(float));
  memset(m2, 0, (size_t)n * sizeof(float));
  memset(v2, 0, (size_t)n * sizeof(float));
  for (int64_t t = 1; t <= 3; t++) {
    be1->adam(be1, w1, g, m1, v1, n, &p, t);
    be2->adam(be2, w2, g, m2, v2, n, &p, t);
  }
  assert_memory_equal(w1, w2, (size_t)n * sizeof(float));
  cg_free(w1); cg_free(w2); cg_free(g); cg_free(m1); cg_free(m2); cg_free(v1); cg_free(v2);
}

/* Non-finite logits (core/ops.h's rule, which the CUDA kernel keeps too: cuda/tests/
 * test_rowwise_emu): a row with a NaN or +inf anywhere, or all -inf, has a NaN loss and
 * NaN in every gradient; a -inf among finite logits is ordinary (exp gives 0); the other
 * rows of the call are as without that row. */
static void test_xent_nonfinite(void **state) {
  (void)state;
  enum { COLS = 5, ROWS = 7 };
  const float nan = NAN, inf = INFINITY;
  const float z[ROWS][COLS] = {{0.5f, -1, 2, 0, 1}, /* finite */
                               {nan, -1, 2, 0, 1},  /* NaN in column 0 (the CPU's scan starts there) */
                               {0.5f, -1, 2, 0, nan},
                               {inf, -1, 2, 0, 1},
                               {-inf, -inf, -inf, -inf, -inf},
                               {-inf, -1, 2, 0, 1}, /* finite: exp(-inf) = 0 */
                               {nan, -inf, inf, 0, 1}};
  const int poisoned[ROWS] = {0, 1, 1, 1, 1, 0, 1};
  const int32_t labels[ROWS] = {2, 3, 4, 1, 0, 2, 2}, all[ROWS] = {0, 1, 2, 3, 4, 5, 6}, good[2] = {0, 5};
  float d[ROWS * COLS], dg[ROWS * COLS];
  double loss = 0, lg = 0;
  for (int r = 0; r < ROWS; r++) {
    const int32_t one[1] = {r};
    be2->xent(be2, &z[0][0], ROWS, COLS, labels, one, 1, 1.0f, d, &loss);
    int nans = 0;
    for (int c = 0; c < COLS; c++) nans += isnan(d[r * COLS + c]) != 0;
    printf("  xent row %d alone: loss %g, %d of %d gradients NaN\n", r, loss, nans, COLS);
    assert_int_equal(isnan(loss) != 0, poisoned[r]);
    assert_int_equal(nans, poisoned[r] ? COLS : 0);
  }
  be2->xent(be2, &z[0][0], ROWS, COLS, labels, all, ROWS, 0.25f, d, &loss);
  be2->xent(be2, &z[0][0], ROWS, COLS, labels, good, 2, 0.25f, dg, &lg);
  assert_true(isnan(loss));
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) {
      const int i = r * COLS + c;
      if (poisoned[r]) assert_true(isnan(d[i]));
      else assert_true(d[i] == dg[i]);
    }
  assert_true(isfinite(lg));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backend_basics),
      cmocka_unit_test(test_kernels_setting),
      cmocka_unit_test(test_gemm),
      cmocka_unit_test(test_spmm),
      cmocka_unit_test(test_spmm_edge_cases),
      cmocka_unit_test(test_spmm_tiled),
      cmocka_unit_test(test_spmm_shared_scratch),
      cmocka_unit_test(test_spmm_panels),
      cmocka_unit_test(test_spmm_layouts),
      cmocka_unit_test(test_thread_count_independence),
      cmocka_unit_test(test_bias_relu),
      cmocka_unit_test(test_dropout),
      cmocka_unit_test(test_dropout_relu_bwd),
      cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_xent),
      cmocka_unit_test(test_xent_nonfinite),
      cmocka_unit_test(test_bce),
      cmocka_unit_test(test_eval_counts),
      cmocka_unit_test(test_gather_scatter),
      cmocka_unit_test(test_sgd),
      cmocka_unit_test(test_adam),
      cmocka_unit_test(test_adam_bits),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
