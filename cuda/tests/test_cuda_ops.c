/* cuda/tests/test_cuda_ops.c — every op of the CUDA backend against the CPU
 * backend on the same random inputs (ggml-style backend comparison).
 *
 * Tolerances: |gpu - cpu| <= atol + rtol * scale, where scale is |cpu| for
 * elementwise results and, for sums (GEMM, SpMM), the sum of the absolute values
 * of the terms: the two backends add in different orders, and the rounding
 * difference of a sum is bounded by its absolute sum, not by its (possibly
 * cancelled) value. The worst error of every comparison is printed.
 * Exact (bitwise) comparisons: dropout masks and values, ReLU, gather, counts.
 *
 * Exits 77 (CTest: skipped) when no CUDA device is visible. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/csr.h"
#include "core/ops.h"
#include "core/status.h"
#include "cuda/cuda_backend.h"
#include "tile_matrices.h"

static struct cg_backend *cpu, *gpu;

/* ------------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rng_next(void) { /* splitmix64: same inputs every run */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double unif(double lo, double hi) {
  return lo + (hi - lo) * (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0);
}
static int64_t randint(int64_t n) { return (int64_t)(rng_next() % (uint64_t)n); }

static void *hbuf(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  assert_non_null(p);
  return p;
}
static float *frand(int64_t n, double lo, double hi) {
  float *x = hbuf((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) x[i] = (float)unif(lo, hi);
  return x;
}

/* Backend buffer holding a copy of host[bytes]. */
static void *up(struct cg_backend *be, const void *host, size_t bytes) {
  void *p = NULL;
  assert_int_equal(be->alloc(be, &p, bytes ? bytes : 4, "test buffer"), CG_OK);
  assert_non_null(p);
  if (host) assert_int_equal(be->upload(be, p, host, bytes), CG_OK);
  return p;
}
static void *down(struct cg_backend *be, const void *dev, size_t bytes) {
  void *h = hbuf(bytes);
  be->sync(be);
  assert_int_equal(be->download(be, h, dev, bytes), CG_OK);
  return h;
}

/* The same host data on both backends. */
struct both {
  void *c, *g;
  size_t bytes;
};
static struct both up2(const void *host, size_t bytes) {
  struct both b = {up(cpu, host, bytes), up(gpu, host, bytes), bytes};
  return b;
}
static void free2(struct both *b) {
  cpu->free(cpu, b->c);
  gpu->free(gpu, b->g);
  b->c = b->g = NULL;
}

/* |got-ref| <= atol + rtol*scale (scale = |ref| when NULL); prints the worst. */
static int check(const char *what, const float *got, const float *ref, const double *scale,
                 int64_t n, double atol, double rtol) {
  double worst_ratio = -1.0, worst = 0.0;
  int64_t wi = 0, nbad = 0;
  for (int64_t i = 0; i < n; i++) {
    double s = scale ? scale[i] : fabs((double)ref[i]);
    double err = fabs((double)got[i] - (double)ref[i]);
    double tol = atol + rtol * s;
    double ratio = err == 0.0 ? 0.0 : isnan(err) ? INFINITY : err / tol;
    if (isnan((double)got[i]) && isnan((double)ref[i])) ratio = 0.0; /* NaN kept as NaN */
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = err;
      wi = i;
    }
    if (!(ratio <= 1.0)) nbad++;
  }
  if (n > 0)
    printf("  %-44s worst |err| %.3g at %lld (gpu %.9g, cpu %.9g), %.3g of tol, %lld bad\n", what,
           worst, (long long)wi, (double)got[wi], (double)ref[wi], worst_ratio, (long long)nbad);
  return nbad == 0;
}

/* Compare a float buffer of both backends. */
static void cmp2(const char *what, const struct both *b, int64_t n, const double *scale, double atol,
                 double rtol) {
  float *hc = down(cpu, b->c, (size_t)n * sizeof(float));
  float *hg = down(gpu, b->g, (size_t)n * sizeof(float));
  int ok = check(what, hg, hc, scale, n, atol, rtol);
  free(hc);
  free(hg);
  assert_true(ok);
}

static void cmp2_exact(const char *what, const struct both *b, size_t bytes) {
  unsigned char *hc = down(cpu, b->c, bytes);
  unsigned char *hg = down(gpu, b->g, bytes);
  size_t first = bytes;
  for (size_t i = 0; i < bytes; i++)
    if (hc[i] != hg[i]) {
      first = i;
      break;
    }
  printf("  %-44s %s", what, first == bytes ? "bitwise equal\n" : "DIFFERS");
  if (first != bytes) printf(" at byte %zu of %zu\n", first, bytes);
  free(hc);
  free(hg);
  assert_true(first == bytes);
}

/* ------------------------------------------------------------------ setup */

static int group_setup(void **state) {
  (void)state;
  if (cg_backend_cpu_create(2, &cpu) != CG_OK) return -1;
  if (cg_backend_cuda_create(0, 0, &gpu) != CG_OK) {
    cg_err_report("test_cuda_ops");
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  cg_backend_destroy(&gpu);
  cg_backend_destroy(&cpu);
  return 0;
}

/* ------------------------------------------------------------------ tests */

static void test_device_info(void **state) {
  (void)state;
  assert_true(cg_cuda_device_count() >= 1);
  assert_string_equal(gpu->name, "cuda");
  assert_int_equal(gpu->kind, CG_DEVICE_CUDA);
  char d[512], u[64];
  assert_int_equal(cg_cuda_device_describe(0, d, sizeof d), CG_OK);
  assert_int_equal(cg_cuda_device_uuid(0, u, sizeof u), CG_OK);
  printf("  device 0: %s\n  uuid: %s\n", d, u);
  assert_true(strlen(d) > 0);
  assert_int_equal((int)strlen(u), 40); /* GPU- + 32 hex + 4 dashes */
  assert_string_equal(cg_cuda_describe(gpu), d);
  assert_int_equal(cg_cuda_device_describe(cg_cuda_device_count(), d, sizeof d), CG_ERR_NOT_FOUND);
  cg_err_clear();
  size_t fr = 0, tot = 0;
  assert_int_equal(gpu->mem_info(gpu, &fr, &tot), CG_OK);
  printf("  memory: %.1f of %.1f GiB free\n", fr / 1073741824.0, tot / 1073741824.0);
  assert_true(tot > ((size_t)1 << 30));
  assert_true(fr <= tot && fr > 0);
  assert_non_null(cg_cuda_stream(gpu));
  assert_int_equal(cg_cuda_device(gpu), 0);
}

static void test_memory(void **state) {
  (void)state;
  const size_t n = 1000003; /* odd size: no alignment luck */
  unsigned char *h = hbuf(n);
  for (size_t i = 0; i < n; i++) h[i] = (unsigned char)rng_next();
  void *a = up(gpu, h, n), *b = up(gpu, NULL, n);
  gpu->copy(gpu, b, a, n);
  unsigned char *back = down(gpu, b, n);
  assert_memory_equal(back, h, n);
  free(back);
  /* zero-byte transfers and NULL free are no-ops */
  assert_int_equal(gpu->upload(gpu, a, h, 0), CG_OK);
  assert_int_equal(gpu->download(gpu, h, a, 0), CG_OK);
  gpu->copy(gpu, b, a, 0);
  gpu->free(gpu, NULL);
  gpu->free(gpu, a);
  gpu->free(gpu, b);
  free(h);
  /* an impossible allocation fails with a message naming what */
  void *p = NULL;
  assert_int_equal(gpu->alloc(gpu, &p, (size_t)1 << 50, "a petabyte test buffer"), CG_ERR_NOMEM);
  assert_null(p);
  printf("  expected error: %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "a petabyte test buffer"));
  cg_err_clear();
  gpu->sync(gpu); /* the failed cudaMalloc must not poison later launches */
  float *f = up(gpu, NULL, 64 * sizeof(float));
  gpu->fill(gpu, f, 64, 1.0f);
  gpu->sync(gpu);
  gpu->free(gpu, f);
}

static void test_arena(void **state) {
  (void)state;
  struct cg_backend *g2 = NULL;
  assert_int_equal(cg_backend_cuda_create(0, 0, &g2), CG_OK);
  size_t used = 1, cap = 1;
  cg_cuda_arena_usage(g2, &used, &cap);
  assert_true(used == 0 && cap == 0);
  void *before = NULL;
  assert_int_equal(g2->alloc(g2, &before, 4096, "pre-arena buffer"), CG_OK);
  assert_int_equal(cg_cuda_arena_reserve(g2, (size_t)1 << 20), CG_OK);
  void *pa = NULL, *pb = NULL, *big = NULL;
  assert_int_equal(g2->alloc(g2, &pa, 1000, "arena a"), CG_OK);
  assert_int_equal(g2->alloc(g2, &pb, 10, "arena b"), CG_OK);
  assert_true((uintptr_t)pa % 256 == 0 && (uintptr_t)pb % 256 == 0);
  assert_int_equal((char *)pb - (char *)pa, 1024);
  cg_cuda_arena_usage(g2, &used, &cap);
  printf("  arena: %zu of %zu bytes used\n", used, cap);
  assert_int_equal(cap, (size_t)1 << 20);
  assert_true(used >= 1034 && used <= 2048);
  /* beyond the block: falls back to cudaMalloc (with a warning) */
  assert_int_equal(g2->alloc(g2, &big, (size_t)2 << 20, "arena overflow"), CG_OK);
  assert_non_null(big);
  /* arena memory works like any device memory */
  float h[250], back[250];
  for (int i = 0; i < 250; i++) h[i] = (float)i * 0.5f;
  assert_int_equal(g2->upload(g2, pa, h, sizeof h), CG_OK);
  g2->scale(g2, 250, 2.0f, pa);
  assert_int_equal(g2->download(g2, back, pa, sizeof back), CG_OK);
  for (int i = 0; i < 250; i++) assert_true(back[i] == (float)i);
  /* a second reservation is refused */
  assert_int_equal(cg_cuda_arena_reserve(g2, 4096), CG_ERR_ARG);
  cg_err_clear();
  g2->free(g2, pa); /* no-op inside the arena */
  g2->free(g2, pb);
  g2->free(g2, big);
  g2->free(g2, before);
  cg_backend_destroy(&g2);
  assert_null(g2);
}

static void test_variant_selection(void **state) {
  (void)state;
  enum cg_cuda_spmm_variant v;
  for (int i = 0; i < CG_CUDA_SPMM_NVARIANTS; i++) {
    assert_int_equal(cg_cuda_spmm_variant_parse(cg_cuda_spmm_variant_name(i), &v), CG_OK);
    assert_int_equal((int)v, i);
  }
  assert_int_equal(cg_cuda_spmm_variant_parse("bogus", &v), CG_ERR_ARG);
  cg_err_clear();
  struct cg_backend *g2 = NULL;
  /* each bad setting is refused with a message naming its variable */
  static const char *const bad[][2] = {
      {"CAPGNN_SPMM", "bogus"},
      {"CAPGNN_SPMM_MAX_PASS", "100"}, /* not a power of two */
      {"CAPGNN_SPMM_TILE_REUSE", "0"}, /* below 0.25 */
      {"CAPGNN_SPMM_TILE_REUSE", "4x"},
      {"CAPGNN_SPMM_TILE_HEAVY", "near"},
      {"CAPGNN_SPMM_SLICE", "6"}, /* not a multiple of 4 */
      {"CAPGNN_SPMM_SLICE", "-4"},
      {"CAPGNN_SPMM_TILE_VEC", "3"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv(bad[i][0], bad[i][1], 1);
    assert_int_equal(cg_backend_cuda_create(0, 0, &g2), CG_ERR_ARG);
    unsetenv(bad[i][0]);
    assert_null(g2);
    if (!strstr(cg_err_msg(), bad[i][0]) || !strstr(cg_err_msg(), bad[i][1]))
      fail_msg("message for %s=%s: %s", bad[i][0], bad[i][1], cg_err_msg());
    cg_err_clear();
  }
  setenv("CAPGNN_SPMM", "rowsplit", 1);
  assert_int_equal(cg_backend_cuda_create(0, 0, &g2), CG_OK);
  unsetenv("CAPGNN_SPMM");
  assert_int_equal(cg_cuda_spmm_get_variant(g2), CG_CUDA_SPMM_ROWSPLIT);
  cg_backend_destroy(&g2);
}

/* --- dense */

static void gemm_case(struct cg_backend *g, int ta, int tb, int64_t m, int64_t n, int64_t k,
                      float alpha, float beta, int nan_c, double rtol) {
  int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
  int64_t arows = ta ? k : m, brows = tb ? n : k;
  float *a = frand(arows * lda, -1, 1), *b = frand(brows * ldb, -1, 1);
  float *c = frand(m * ldc, -1, 1);
  if (nan_c)
    for (int64_t i = 0; i < m * ldc; i++) c[i] = NAN; /* beta = 0 must not read C */
  /* scale = |alpha| sum_k |A||B| + |beta||C| (C padding keeps its value) */
  double *scale = hbuf((size_t)(m * ldc) * sizeof(double));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < ldc; j++) {
      double s = 0.0;
      if (j < n) {
        for (int64_t q = 0; q < k; q++) {
          double av = ta ? a[q * lda + i] : a[i * lda + q];
          double bv = tb ? b[j * ldb + q] : b[q * ldb + j];
          s += fabs(av * bv);
        }
        s = fabs(alpha) * s + (nan_c ? 0.0 : fabs(beta * c[i * ldc + j]));
      } else {
        s = fabs((double)c[i * ldc + j]);
      }
      scale[i * ldc + j] = s;
    }
  struct cg_backend *saved = gpu;
  gpu = g;
  struct both A = up2(a, (size_t)(arows * lda) * sizeof(float));
  struct both B = up2(b, (size_t)(brows * ldb) * sizeof(float));
  struct both C = up2(c, (size_t)(m * ldc) * sizeof(float));
  cpu->gemm(cpu, ta, tb, m, n, k, alpha, A.c, lda, B.c, ldb, beta, C.c, ldc);
  gpu->gemm(gpu, ta, tb, m, n, k, alpha, A.g, lda, B.g, ldb, beta, C.g, ldc);
  char what[96];
  snprintf(what, sizeof what, "gemm ta=%d tb=%d %lldx%lldx%lld b=%g%s%s", ta, tb, (long long)m,
           (long long)n, (long long)k, beta, nan_c ? " NaN-C" : "", g != saved ? " tf32" : "");
  /* padding columns included: they must keep their value (NaN stays NaN) */
  cmp2(what, &C, m * ldc, scale, 1e-6, rtol);
  free2(&A);
  free2(&B);
  free2(&C);
  gpu = saved;
  free(a);
  free(b);
  free(c);
  free(scale);
}

static void test_gemm(void **state) {
  (void)state;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) gemm_case(gpu, ta, tb, 37, 29, 53, 1.25f, 0.5f, 0, 1e-5);
  gemm_case(gpu, 0, 0, 300, 41, 256, 1.0f, 0.0f, 1, 1e-5);
  gemm_case(gpu, 1, 0, 256, 64, 1000, 1.0f, 1.0f, 0, 1e-5); /* weight-gradient shape */
  gemm_case(gpu, 0, 0, 5, 7, 0, 1.0f, 0.5f, 0, 1e-6);       /* k = 0: C = beta C */
  gemm_case(gpu, 0, 0, 5, 7, 0, 1.0f, 0.0f, 1, 1e-6);
  struct cg_backend *t32 = NULL;
  assert_int_equal(cg_backend_cuda_create(0, 1, &t32), CG_OK);
  gemm_case(t32, 0, 1, 128, 96, 200, 1.0f, 0.0f, 0, 4e-3); /* TF32: 10-bit mantissa */
  cg_backend_destroy(&t32);
}

static void test_blas1(void **state) {
  (void)state;
  const int64_t n = 100001;
  float *x = frand(n, -2, 2), *y = frand(n, -2, 2);
  struct both X = up2(x, (size_t)n * 4), Y = up2(y, (size_t)n * 4);
  cpu->axpy(cpu, n, -0.75f, X.c, Y.c);
  gpu->axpy(gpu, n, -0.75f, X.g, Y.g);
  cmp2("axpy", &Y, n, NULL, 1e-6, 1e-6);
  cpu->scale(cpu, n, 1.5f, Y.c);
  gpu->scale(gpu, n, 1.5f, Y.g);
  cmp2("scale", &Y, n, NULL, 1e-6, 1e-6);
  const float vals[3] = {0.0f, -0.0f, 3.25f};
  for (int i = 0; i < 3; i++) {
    cpu->fill(cpu, Y.c, n - 1, vals[i]);
    gpu->fill(gpu, Y.g, n - 1, vals[i]);
    cmp2_exact(i == 0 ? "fill 0" : i == 1 ? "fill -0" : "fill 3.25", &Y, (size_t)n * 4);
  }
  free2(&X);
  free2(&Y);
  free(x);
  free(y);
}

/* --- sparse */

/* Random CSR with sorted distinct columns: every 7th row empty, rows 3 and nrows/2
 * far above the heavy threshold (max(1024, 8 x average)). */
static void make_csr(struct cg_csr *a, int64_t nrows, int64_t ncols, int with_vals) {
  int64_t *deg = hbuf((size_t)nrows * sizeof(int64_t));
  int64_t nnz_cap = 0;
  for (int64_t r = 0; r < nrows; r++) {
    deg[r] = r % 7 == 0 ? 0 : 1 + randint(40);
    if (r == 3) deg[r] = ncols - 100;
    if (r == nrows / 2) deg[r] = 1200;
    nnz_cap += deg[r];
  }
  /* Bernoulli selection gives about deg[r] columns; count exactly afterwards */
  int32_t *cols = hbuf((size_t)(nnz_cap * 2 + ncols) * sizeof(int32_t));
  int64_t *rp = hbuf((size_t)(nrows + 1) * sizeof(int64_t));
  int64_t nnz = 0;
  for (int64_t r = 0; r < nrows; r++) {
    rp[r] = nnz;
    double p = (double)deg[r] / (double)ncols;
    for (int64_t c = 0; c < ncols && deg[r] > 0; c++)
      if (unif(0, 1) < p && nnz < nnz_cap * 2 + ncols) cols[nnz++] = (int32_t)c;
  }
  rp[nrows] = nnz;
  assert_int_equal(cg_csr_alloc(a, nrows, ncols, nnz, with_vals), CG_OK);
  memcpy(a->rowptr, rp, (size_t)(nrows + 1) * sizeof(int64_t));
  memcpy(a->colidx, cols, (size_t)nnz * sizeof(int32_t));
  if (with_vals)
    for (int64_t k = 0; k < nnz; k++) a->vals[k] = (float)unif(0.05, 1.0);
  assert_int_equal(cg_csr_check(a, "test matrix"), CG_OK);
  free(deg);
  free(cols);
  free(rp);
}

/* Communities of 300 consecutive rows / columns (density 0.3 inside, 0.01 outside)
 * and every 150th row a hub over 80 % of the columns: most nonzeros fall in dense
 * 256 x 256 tiles, so the tiled layout applies. ncols >= 1450 puts the hubs
 * (~0.8 ncols nonzeros) above the heavy-row threshold of 1024 (spmm_matrix
 * requires heavy rows; the tiled layout keeps them in the far part). */
static void make_clustered(struct cg_csr *a, int64_t nrows, int64_t ncols, enum tm_values vals) {
  assert_true(ncols >= 1450);
  static uint64_t seed = 12345;
  assert_int_equal(tm_clustered(a, nrows, ncols, 300, 0.3, 0.01, 150, 0.8, vals, &seed), CG_OK);
}

static void spmm_matrix(const struct cg_csr *h, const char *label) {
  struct cg_spmat *ac = NULL, *ag = NULL;
  assert_int_equal(cpu->spmat_create(cpu, h, &ac), CG_OK);
  assert_int_equal(gpu->spmat_create(gpu, h, &ag), CG_OK);
  int64_t n_heavy = 0, thr = 0, ntiles = 0, tile_nnz = 0;
  cg_cuda_spmat_heavy_rows(ag, &n_heavy, &thr);
  cg_cuda_spmat_tiles(ag, &ntiles, &tile_nnz);
  printf("  %s: %lld x %lld, nnz %lld, %lld heavy rows (degree > %lld), %lld tiles holding %lld "
         "nonzeros\n", label, (long long)h->nrows, (long long)h->ncols, (long long)h->nnz,
         (long long)n_heavy, (long long)thr, (long long)ntiles, (long long)tile_nnz);
  assert_true(n_heavy >= 2);
  static const int64_t widths[] = {1, 7, 16, 41, 64, 256, 602};
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
    for (int pad = 0; pad < 2; pad++) {
      int64_t f = widths[wi], ld = f + (pad ? 3 : 0);
      float *x = frand(h->ncols * ld, -1, 1);
      float *y0 = hbuf((size_t)(h->nrows * ld) * sizeof(float));
      for (int64_t i = 0; i < h->nrows * ld; i++) y0[i] = 12345.0f; /* padding must survive */
      double *scale = hbuf((size_t)(h->nrows * ld) * sizeof(double));
      for (int64_t r = 0; r < h->nrows; r++)
        for (int64_t c = 0; c < ld; c++) {
          double s = 0.0;
          if (c < f)
            for (int64_t k = h->rowptr[r]; k < h->rowptr[r + 1]; k++)
              s += fabs((h->vals ? h->vals[k] : 1.0) * x[(int64_t)h->colidx[k] * ld + c]);
          else
            s = 12345.0;
          scale[r * ld + c] = s;
        }
      struct both X = up2(x, (size_t)(h->ncols * ld) * 4);
      struct both Y = up2(y0, (size_t)(h->nrows * ld) * 4);
      cpu->spmm(cpu, ac, X.c, ld, Y.c, ld, f);
      float *ref = down(cpu, Y.c, Y.bytes);
      for (int v = 0; v < CG_CUDA_SPMM_NVARIANTS; v++) {
        cg_cuda_spmm_set_variant(gpu, (enum cg_cuda_spmm_variant)v);
        enum cg_cuda_spmm_variant rv = cg_cuda_spmm_resolve(gpu, ag, f);
        assert_int_not_equal(rv, CG_CUDA_SPMM_AUTO);
        /* tiled runs where the matrix has tiles, else falls back to auto's choice */
        if (v == CG_CUDA_SPMM_TILED) assert_true((rv == CG_CUDA_SPMM_TILED) == (ntiles > 0));
        assert_int_equal(gpu->upload(gpu, Y.g, y0, Y.bytes), CG_OK);
        gpu->spmm(gpu, ag, X.g, ld, Y.g, ld, f);
        float *got = down(gpu, Y.g, Y.bytes);
        char what[96];
        snprintf(what, sizeof what, "spmm %s f=%lld ld=%lld %s(ran %s)", label, (long long)f,
                 (long long)ld, cg_cuda_spmm_variant_name((enum cg_cuda_spmm_variant)v),
                 cg_cuda_spmm_variant_name(rv));
        int ok = check(what, got, ref, scale, h->nrows * ld, 1e-6, 2e-5);
        /* hand kernels are deterministic: a second run is bitwise equal */
        if (ok && rv != CG_CUDA_SPMM_CUSPARSE) {
          gpu->spmm(gpu, ag, X.g, ld, Y.g, ld, f);
          float *again = down(gpu, Y.g, Y.bytes);
          ok = memcmp(again, got, Y.bytes) == 0;
          if (!ok) printf("  %s: second run differs\n", what);
          free(again);
        }
        free(got);
        assert_true(ok);
      }
      cg_cuda_spmm_set_variant(gpu, CG_CUDA_SPMM_AUTO);
      free(ref);
      free2(&X);
      free2(&Y);
      free(x);
      free(y0);
      free(scale);
    }
  }
  /* the auto rule and the fallbacks resolve as documented */
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 1), CG_CUDA_SPMM_CUSPARSE);
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 7), CG_CUDA_SPMM_SUBWARP);
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 16),
                   ntiles > 0 ? CG_CUDA_SPMM_SUBWARP : CG_CUDA_SPMM_WARP);
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 64), ntiles > 0 ? CG_CUDA_SPMM_TILED : CG_CUDA_SPMM_WARP);
  cg_cuda_spmm_set_variant(gpu, CG_CUDA_SPMM_SUBWARP);
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 64), CG_CUDA_SPMM_WARP);
  cg_cuda_spmm_set_variant(gpu, CG_CUDA_SPMM_CUSPARSE);
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 64), CG_CUDA_SPMM_CUSPARSE);
  cg_cuda_spmm_set_variant(gpu, CG_CUDA_SPMM_AUTO);
  cpu->spmat_destroy(cpu, ac);
  gpu->spmat_destroy(gpu, ag);
}

static void test_spmm(void **state) {
  (void)state;
  struct cg_csr h;
  make_csr(&h, 700, 1500, 1);
  spmm_matrix(&h, "weighted");
  cg_csr_free(&h);
  make_csr(&h, 300, 1300, 0);
  spmm_matrix(&h, "unweighted");
  cg_csr_free(&h);
  /* whole widths in one launch (no column slices): one pass over up to 1024
   * columns covers the kernels' widest register layouts; the default 128-column
   * pass covers the passes inside a launch */
  static const char *const passes[] = {"1024", NULL};
  for (int i = 0; i < 2; i++) {
    struct cg_backend *other = NULL, *saved = gpu;
    setenv("CAPGNN_SPMM_SLICE", "0", 1);
    if (passes[i]) setenv("CAPGNN_SPMM_MAX_PASS", passes[i], 1);
    int st = cg_backend_cuda_create(0, 0, &other);
    unsetenv("CAPGNN_SPMM_MAX_PASS");
    unsetenv("CAPGNN_SPMM_SLICE");
    assert_int_equal(st, CG_OK);
    gpu = other;
    make_csr(&h, 200, 1300, 1);
    spmm_matrix(&h, passes[i] ? "one launch, 1024-col passes" : "one launch, 128-col passes");
    cg_csr_free(&h);
    gpu = saved;
    cg_backend_destroy(&other);
  }
}

/* The split operator of partition-parallel training (runtime/model_agg.c, issue #14)
 * on this backend: Â (n_in x n_tot) as its inner part in row blocks (products written at
 * a row offset of Y) plus its halo part on the boundary rows, added with
 * scatter_add_rows; Âᵀ as its inner rows by blocks and its halo rows. Against the CPU
 * backend running the same pieces, and the GPU's own second run bitwise. */
struct split_op {
  int nblk;
  int64_t blk[4];
  struct cg_spmat *in[3], *in_t[3], *h, *h_t;
  int32_t *d_rows;
  int64_t n_rows;
};

static void split_upload(struct cg_backend *be, const struct cg_csr *a, int64_t n_in,
                         struct split_op *o) {
  struct cg_csr inner, inner_t, halo, halo_rows, halo_t, b;
  int32_t *rows = NULL;
  const int64_t n_tot = a->ncols;
  memset(o, 0, sizeof *o);
  o->nblk = 3;
  const int64_t bounds[4] = {0, 512, 1024, n_in};
  memcpy(o->blk, bounds, sizeof bounds);
  assert_int_equal(cg_csr_slice(a, 0, n_in, 0, n_in, &inner), CG_OK);
  assert_int_equal(cg_csr_transpose(&inner, &inner_t), CG_OK);
  for (int k = 0; k < o->nblk; k++) {
    assert_int_equal(cg_csr_slice(&inner, o->blk[k], o->blk[k + 1], 0, n_in, &b), CG_OK);
    assert_int_equal(be->spmat_create(be, &b, &o->in[k]), CG_OK);
    cg_csr_free(&b);
    assert_int_equal(cg_csr_slice(&inner_t, o->blk[k], o->blk[k + 1], 0, n_in, &b), CG_OK);
    assert_int_equal(be->spmat_create(be, &b, &o->in_t[k]), CG_OK);
    cg_csr_free(&b);
  }
  assert_int_equal(cg_csr_slice(a, 0, n_in, n_in, n_tot, &halo), CG_OK);
  assert_int_equal(cg_csr_nonempty_rows(&halo, &halo_rows, &rows), CG_OK);
  assert_true(halo_rows.nrows > 0);
  assert_int_equal(be->spmat_create(be, &halo_rows, &o->h), CG_OK);
  o->n_rows = halo_rows.nrows;
  o->d_rows = up(be, rows, (size_t)o->n_rows * sizeof(int32_t));
  assert_int_equal(cg_csr_transpose(&halo, &halo_t), CG_OK);
  assert_int_equal(be->spmat_create(be, &halo_t, &o->h_t), CG_OK);
  cg_free(rows);
  cg_csr_free(&inner);
  cg_csr_free(&inner_t);
  cg_csr_free(&halo);
  cg_csr_free(&halo_rows);
  cg_csr_free(&halo_t);
}

static void split_free(struct cg_backend *be, struct split_op *o) {
  for (int k = 0; k < o->nblk; k++) {
    be->spmat_destroy(be, o->in[k]);
    be->spmat_destroy(be, o->in_t[k]);
  }
  be->spmat_destroy(be, o->h);
  be->spmat_destroy(be, o->h_t);
  be->free(be, o->d_rows);
}

/* Y[0:n_in] = inner part X + halo part X (forward); DX[0:n_tot] = Âᵀ DY by halo rows
 * then inner blocks (backward). hb: n_rows x f scratch. */
static void split_forward(struct cg_backend *be, const struct split_op *o, int64_t n_in, const float *x,
                          int64_t f, float *y, float *hb) {
  for (int k = 0; k < o->nblk; k++) be->spmm(be, o->in[k], x, f, y + o->blk[k] * f, f, f);
  be->spmm(be, o->h, x + n_in * f, f, hb, f, f);
  be->scatter_add_rows(be, hb, f, o->d_rows, o->n_rows, y);
}
static void split_backward(struct cg_backend *be, const struct split_op *o, int64_t n_in, const float *dy,
                           int64_t f, float *dx) {
  be->spmm(be, o->h_t, dy, f, dx + n_in * f, f, f);
  for (int k = 0; k < o->nblk; k++) be->spmm(be, o->in_t[k], dy, f, dx + o->blk[k] * f, f, f);
}

static void test_spmm_split(void **state) {
  (void)state;
  struct cg_csr a;
  const int64_t n_in = 1100;
  make_clustered(&a, n_in, 1450, TM_FACTORED); /* 350 halo columns */
  struct split_op oc, og;
  split_upload(cpu, &a, n_in, &oc);
  split_upload(gpu, &a, n_in, &og);
  static const int64_t widths[] = {16, 41, 256};
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
    const int64_t f = widths[wi], n_tot = a.ncols;
    float *x = frand(n_tot * f, -1, 1), *dy = frand(n_in * f, -1, 1);
    /* forward scale: sum |a x| per output; backward: sum |a dy| per output (column of a) */
    double *sf = hbuf((size_t)(n_in * f) * sizeof(double)), *sb = hbuf((size_t)(n_tot * f) * sizeof(double));
    for (int64_t r = 0; r < n_in; r++)
      for (int64_t k = a.rowptr[r]; k < a.rowptr[r + 1]; k++)
        for (int64_t c = 0; c < f; c++) {
          sf[r * f + c] += fabs(a.vals[k] * x[(int64_t)a.colidx[k] * f + c]);
          sb[(int64_t)a.colidx[k] * f + c] += fabs(a.vals[k] * dy[r * f + c]);
        }
    struct both X = up2(x, (size_t)(n_tot * f) * 4), Y = up2(NULL, (size_t)(n_in * f) * 4);
    struct both DY = up2(dy, (size_t)(n_in * f) * 4), DX = up2(NULL, (size_t)(n_tot * f) * 4);
    struct both HB = up2(NULL, (size_t)(oc.n_rows * f) * 4);
    split_forward(cpu, &oc, n_in, X.c, f, Y.c, HB.c);
    split_forward(gpu, &og, n_in, X.g, f, Y.g, HB.g);
    split_backward(cpu, &oc, n_in, DY.c, f, DX.c);
    split_backward(gpu, &og, n_in, DY.g, f, DX.g);
    char what[96];
    snprintf(what, sizeof what, "split A X, f=%lld", (long long)f);
    cmp2(what, &Y, n_in * f, sf, 1e-6, 2e-5);
    snprintf(what, sizeof what, "split A^T dY, f=%lld", (long long)f);
    cmp2(what, &DX, n_tot * f, sb, 1e-6, 2e-5);
    /* deterministic: the same pieces again give the same bits */
    float *y1 = down(gpu, Y.g, Y.bytes), *dx1 = down(gpu, DX.g, DX.bytes);
    split_forward(gpu, &og, n_in, X.g, f, Y.g, HB.g);
    split_backward(gpu, &og, n_in, DY.g, f, DX.g);
    float *y2 = down(gpu, Y.g, Y.bytes), *dx2 = down(gpu, DX.g, DX.bytes);
    assert_memory_equal(y1, y2, Y.bytes);
    assert_memory_equal(dx1, dx2, DX.bytes);
    free(y1);
    free(y2);
    free(dx1);
    free(dx2);
    free2(&X);
    free2(&Y);
    free2(&DY);
    free2(&DX);
    free2(&HB);
    free(x);
    free(dy);
    free(sf);
    free(sb);
  }
  split_free(cpu, &oc);
  split_free(gpu, &og);
  cg_csr_free(&a);
}

/* The tiled variant on clustered matrices (valued, factored, all ones), against the
 * CPU backend like every other variant; the layout itself is tested on the host in
 * test_spmm_tiles. */
static void test_spmm_tiled(void **state) {
  (void)state;
  struct cg_csr h;
  cg_cuda_spmm_set_tiles(gpu, CG_CUDA_TILES_ON, NULL);
  make_clustered(&h, 1300, 1500, TM_RANDOM);
  spmm_matrix(&h, "clustered, weighted");
  cg_csr_free(&h);
  make_clustered(&h, 1100, 1450, TM_FACTORED);
  spmm_matrix(&h, "clustered, factored");
  cg_csr_free(&h);
  make_clustered(&h, 700, 1450, TM_ONES);
  spmm_matrix(&h, "clustered, unweighted");
  cg_csr_free(&h);
  /* heavy rows' dense part in the tiles, a looser density threshold */
  struct cg_cuda_tile_opts saved, opts = {.min_reuse = 2.0, .heavy_in_tiles = 1};
  cg_cuda_spmm_get_tile_opts(gpu, &saved);
  cg_cuda_spmm_set_tiles(gpu, CG_CUDA_TILES_ON, &opts);
  make_clustered(&h, 900, 1450, TM_FACTORED);
  spmm_matrix(&h, "clustered, heavy rows in tiles");
  cg_csr_free(&h);
  cg_cuda_spmm_set_tiles(gpu, CG_CUDA_TILES_ON, &saved);
  /* tiles off: the same matrix gets no layout and tiled falls back */
  cg_cuda_spmm_set_tiles(gpu, CG_CUDA_TILES_OFF, NULL);
  make_clustered(&h, 700, 1450, TM_RANDOM);
  struct cg_spmat *ag = NULL;
  assert_int_equal(gpu->spmat_create(gpu, &h, &ag), CG_OK);
  int64_t ntiles = -1;
  cg_cuda_spmat_tiles(ag, &ntiles, NULL);
  assert_int_equal(ntiles, 0);
  cg_cuda_spmm_set_variant(gpu, CG_CUDA_SPMM_TILED);
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 64), CG_CUDA_SPMM_WARP);
  cg_cuda_spmm_set_variant(gpu, CG_CUDA_SPMM_AUTO);
  gpu->spmat_destroy(gpu, ag);
  cg_csr_free(&h);
  /* the default (auto): a matrix of >= 2^20 nonzeros gets the layout and auto picks
   * tiled above 16 columns; every variant and width still matches the CPU */
  cg_cuda_spmm_set_tiles(gpu, CG_CUDA_TILES_AUTO, NULL);
  make_clustered(&h, 8000, 8000, TM_FACTORED);
  assert_true(h.nnz >= (int64_t)1 << 20);
  ag = NULL;
  assert_int_equal(gpu->spmat_create(gpu, &h, &ag), CG_OK);
  cg_cuda_spmat_tiles(ag, &ntiles, NULL);
  assert_true(ntiles > 0);
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 17), CG_CUDA_SPMM_TILED);
  assert_int_equal(cg_cuda_spmm_resolve(gpu, ag, 16), CG_CUDA_SPMM_SUBWARP);
  gpu->spmat_destroy(gpu, ag);
  spmm_matrix(&h, "clustered, >= 2^20 nonzeros, tiles under auto");
  cg_csr_free(&h);
}

static void test_spmm_degenerate(void **state) {
  (void)state;
  /* no nonzeros: Y = 0 (padding kept); no rows: nothing happens */
  struct cg_csr h;
  assert_int_equal(cg_csr_alloc(&h, 10, 5, 0, 1), CG_OK);
  struct cg_spmat *ag = NULL;
  assert_int_equal(gpu->spmat_create(gpu, &h, &ag), CG_OK);
  float x[5 * 4], y[10 * 4];
  for (int i = 0; i < 20; i++) x[i] = 1.0f;
  for (int i = 0; i < 40; i++) y[i] = 7.0f;
  float *dx = up(gpu, x, sizeof x), *dy = up(gpu, y, sizeof y);
  for (int v = 0; v < CG_CUDA_SPMM_NVARIANTS; v++) {
    cg_cuda_spmm_set_variant(gpu, (enum cg_cuda_spmm_variant)v);
    gpu->spmm(gpu, ag, dx, 4, dy, 4, 3);
    float *got = down(gpu, dy, sizeof y);
    for (int i = 0; i < 40; i++) assert_true(got[i] == (i % 4 == 3 ? 7.0f : 0.0f));
    free(got);
  }
  cg_cuda_spmm_set_variant(gpu, CG_CUDA_SPMM_AUTO);
  gpu->spmat_destroy(gpu, ag);
  cg_csr_free(&h);
  assert_int_equal(cg_csr_alloc(&h, 0, 5, 0, 0), CG_OK);
  assert_int_equal(gpu->spmat_create(gpu, &h, &ag), CG_OK);
  gpu->spmm(gpu, ag, dx, 4, dy, 4, 3);
  gpu->sync(gpu);
  gpu->spmat_destroy(gpu, ag);
  gpu->spmat_destroy(gpu, NULL);
  cg_csr_free(&h);
  /* a matrix that fails the CSR check is refused */
  assert_int_equal(cg_csr_alloc(&h, 2, 2, 1, 0), CG_OK);
  h.rowptr[1] = 1;
  h.rowptr[2] = 1;
  h.colidx[0] = 5;
  assert_true(gpu->spmat_create(gpu, &h, &ag) < 0);
  assert_null(ag);
  cg_err_clear();
  cg_csr_free(&h);
  gpu->free(gpu, dx);
  gpu->free(gpu, dy);
}

/* --- elementwise and layer ops */

static void test_bias(void **state) {
  (void)state;
  static const int64_t shapes[][2] = {{5000, 300}, {70, 1}, {1, 41}, {333, 64}};
  for (int s = 0; s < 4; s++) {
    int64_t rows = shapes[s][0], cols = shapes[s][1];
    float *y = frand(rows * cols, -1, 1), *b = frand(cols, -1, 1);
    struct both Y = up2(y, (size_t)(rows * cols) * 4), B = up2(b, (size_t)cols * 4);
    cpu->bias_add(cpu, Y.c, B.c, rows, cols);
    gpu->bias_add(gpu, Y.g, B.g, rows, cols);
    char what[64];
    snprintf(what, sizeof what, "bias_add %lldx%lld", (long long)rows, (long long)cols);
    cmp2(what, &Y, rows * cols, NULL, 0, 0); /* one addition: exact */
    cpu->bias_grad(cpu, Y.c, rows, cols, B.c);
    gpu->bias_grad(gpu, Y.g, rows, cols, B.g);
    snprintf(what, sizeof what, "bias_grad %lldx%lld", (long long)rows, (long long)cols);
    cmp2(what, &B, cols, NULL, 1e-5, 1e-6); /* both sum in double */
    free2(&Y);
    free2(&B);
    free(y);
    free(b);
  }
}

static void test_relu(void **state) {
  (void)state;
  const int64_t n = 10001;
  float *x = frand(n, -1, 1), *dy = frand(n, -1, 1);
  for (int64_t i = 0; i < n; i += 17) x[i] = 0.0f;
  struct both X = up2(x, (size_t)n * 4), Y = up2(NULL, (size_t)n * 4), D = up2(dy, (size_t)n * 4);
  cpu->relu_fwd(cpu, X.c, Y.c, n);
  gpu->relu_fwd(gpu, X.g, Y.g, n);
  cmp2_exact("relu_fwd", &Y, (size_t)n * 4);
  cpu->relu_bwd(cpu, Y.c, D.c, n);
  gpu->relu_bwd(gpu, Y.g, D.g, n);
  cmp2_exact("relu_bwd", &D, (size_t)n * 4);
  /* the backward of dropout(relu(x)) read from the dropout's output, hd = Y scaled and
   * zeroed at every third element as a dropout would leave it */
  float *hd = frand(n, -1, 1);
  for (int64_t i = 0; i < n; i++) hd[i] = x[i] > 0.0f && i % 3 ? x[i] * 2.0f : 0.0f;
  struct both H = up2(hd, (size_t)n * 4), E = up2(dy, (size_t)n * 4);
  cpu->dropout_relu_bwd(cpu, H.c, E.c, n, 2.0f);
  gpu->dropout_relu_bwd(gpu, H.g, E.g, n, 2.0f);
  cmp2_exact("dropout_relu_bwd", &E, (size_t)n * 4);
  free2(&H);
  free2(&E);
  free(hd);
  cpu->relu_fwd(cpu, X.c, X.c, n); /* in place */
  gpu->relu_fwd(gpu, X.g, X.g, n);
  cmp2_exact("relu_fwd in place", &X, (size_t)n * 4);
  free2(&X);
  free2(&Y);
  free2(&D);
  free(x);
  free(dy);
}

static void test_dropout(void **state) {
  (void)state;
  static const int64_t colss[] = {37, 64, 1, 602};
  static const float ps[] = {0.5f, 0.1f, 0.0f, 1.0f};
  struct cg_dropout_key key = {0x0123456789ABCDEFull, 3, 1};
  for (int ci = 0; ci < 4; ci++) {
    for (int pi = 0; pi < 4; pi++) {
      int64_t rows = 301, cols = colss[ci];
      float p = ps[pi];
      float *x = frand(rows * cols, -1, 1);
      int32_t *gid = hbuf((size_t)rows * sizeof(int32_t));
      for (int64_t r = 0; r < rows; r++) gid[r] = (int32_t)randint(2000000000);
      struct both X = up2(x, (size_t)(rows * cols) * 4), O = up2(NULL, (size_t)(rows * cols) * 4);
      struct both G = up2(gid, (size_t)rows * 4);
      cpu->dropout(cpu, X.c, O.c, rows, cols, G.c, p, key);
      gpu->dropout(gpu, X.g, O.g, rows, cols, G.g, p, key);
      char what[64];
      snprintf(what, sizeof what, "dropout %lldx%lld p=%g", (long long)rows, (long long)cols, p);
      cmp2_exact(what, &O, (size_t)(rows * cols) * 4);
      cpu->dropout(cpu, X.c, X.c, rows, cols, G.c, p, key); /* in place, as the backward */
      gpu->dropout(gpu, X.g, X.g, rows, cols, G.g, p, key);
      snprintf(what, sizeof what, "dropout in place %lldx%lld p=%g", (long long)rows,
               (long long)cols, p);
      cmp2_exact(what, &X, (size_t)(rows * cols) * 4);
      free2(&X);
      free2(&O);
      free2(&G);
      free(x);
      free(gid);
    }
  }
}

static void test_layernorm(void **state) {
  (void)state;
  static const int64_t shapes[][2] = {{3000, 100}, {300, 7}, {50, 602}};
  for (int s = 0; s < 3; s++) {
    int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
    float *x = frand(n, 2.0, 4.0); /* |mean| > std: the centred pass matters */
    float *g = frand(cols, 0.5, 1.5), *b = frand(cols, -0.5, 0.5), *dy = frand(n, -1, 1);
    struct both X = up2(x, (size_t)n * 4), G = up2(g, (size_t)cols * 4), B = up2(b, (size_t)cols * 4);
    struct both Y = up2(NULL, (size_t)n * 4), M = up2(NULL, (size_t)rows * 4),
                R = up2(NULL, (size_t)rows * 4), DY = up2(dy, (size_t)n * 4),
                DX = up2(NULL, (size_t)n * 4), DG = up2(NULL, (size_t)cols * 4),
                DB = up2(NULL, (size_t)cols * 4);
    cpu->layernorm_fwd(cpu, X.c, rows, cols, G.c, B.c, 1e-5f, Y.c, M.c, R.c);
    gpu->layernorm_fwd(gpu, X.g, rows, cols, G.g, B.g, 1e-5f, Y.g, M.g, R.g);
    char what[64];
    snprintf(what, sizeof what, "layernorm_fwd y %lldx%lld", (long long)rows, (long long)cols);
    cmp2(what, &Y, n, NULL, 1e-5, 1e-5);
    cmp2("layernorm_fwd mean", &M, rows, NULL, 1e-6, 1e-6);
    cmp2("layernorm_fwd rstd", &R, rows, NULL, 1e-6, 1e-5);
    /* backward from the CPU's saved statistics on both, so only the op differs */
    float *hm = down(cpu, M.c, M.bytes), *hr = down(cpu, R.c, R.bytes);
    assert_int_equal(gpu->upload(gpu, M.g, hm, M.bytes), CG_OK);
    assert_int_equal(gpu->upload(gpu, R.g, hr, R.bytes), CG_OK);
    cpu->layernorm_bwd(cpu, DY.c, X.c, M.c, R.c, G.c, rows, cols, DX.c, DG.c, DB.c);
    gpu->layernorm_bwd(gpu, DY.g, X.g, M.g, R.g, G.g, rows, cols, DX.g, DG.g, DB.g);
    snprintf(what, sizeof what, "layernorm_bwd dx %lldx%lld", (long long)rows, (long long)cols);
    cmp2(what, &DX, n, NULL, 1e-5, 1e-4);
    cmp2("layernorm_bwd dgamma", &DG, cols, NULL, 1e-4, 1e-5);
    cmp2("layernorm_bwd dbeta", &DB, cols, NULL, 1e-4, 1e-5);
    free(hm);
    free(hr);
    free2(&X); free2(&G); free2(&B); free2(&Y); free2(&M); free2(&R);
    free2(&DY); free2(&DX); free2(&DG); free2(&DB);
    free(x); free(g); free(b); free(dy);
  }
}

/* n distinct random row ids out of rows */
static int32_t *rand_subset(int64_t rows, int64_t n) {
  int32_t *perm = hbuf((size_t)rows * sizeof(int32_t));
  for (int64_t i = 0; i < rows; i++) perm[i] = (int32_t)i;
  for (int64_t i = 0; i < n; i++) {
    int64_t j = i + randint(rows - i);
    int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  return perm;
}

static void test_losses(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {{400, 41, 200}, {3000, 7, 2500}, {50, 100, 0}, {64, 300, 64}};
  for (int s = 0; s < 4; s++) {
    int64_t rows = shapes[s][0], cols = shapes[s][1], n_idx = shapes[s][2], n = rows * cols;
    float *lg = frand(n, -5, 5);
    int32_t *lab = hbuf((size_t)rows * 4);
    uint8_t *ml = hbuf((size_t)n);
    for (int64_t r = 0; r < rows; r++) lab[r] = (int32_t)randint(cols);
    for (int64_t i = 0; i < n; i++) ml[i] = (uint8_t)(rng_next() & 1);
    int32_t *idx = rand_subset(rows, n_idx);
    float scale = n_idx ? 1.0f / (float)n_idx : 1.0f;
    struct both L = up2(lg, (size_t)n * 4), LB = up2(lab, (size_t)rows * 4), ML = up2(ml, (size_t)n);
    struct both I = up2(idx, (size_t)(n_idx ? n_idx : 1) * 4), D = up2(lg, (size_t)n * 4);
    double lc = -1, lgpu = -2;
    cpu->xent(cpu, L.c, rows, cols, LB.c, I.c, n_idx, scale, D.c, &lc);
    gpu->xent(gpu, L.g, rows, cols, LB.g, I.g, n_idx, scale, D.g, &lgpu);
    char what[64];
    snprintf(what, sizeof what, "xent dlogits %lldx%lld n_idx=%lld", (long long)rows, (long long)cols,
             (long long)n_idx);
    cmp2(what, &D, n, NULL, 1e-8, 1e-5);
    printf("  xent loss: gpu %.12g cpu %.12g\n", lgpu, lc);
    assert_true(fabs(lgpu - lc) <= 1e-9 + 1e-6 * fabs(lc));
    cpu->bce(cpu, L.c, rows, cols, ML.c, I.c, n_idx, scale, D.c, &lc);
    gpu->bce(gpu, L.g, rows, cols, ML.g, I.g, n_idx, scale, D.g, &lgpu);
    snprintf(what, sizeof what, "bce dlogits %lldx%lld n_idx=%lld", (long long)rows, (long long)cols,
             (long long)n_idx);
    cmp2(what, &D, n, NULL, 1e-8, 1e-5);
    printf("  bce loss: gpu %.12g cpu %.12g\n", lgpu, lc);
    assert_true(fabs(lgpu - lc) <= 1e-9 + 1e-6 * fabs(lc));
    free2(&L); free2(&LB); free2(&ML); free2(&I); free2(&D);
    free(lg); free(lab); free(ml); free(idx);
  }
}

static void test_eval_counts(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {{500, 7, 300}, {400, 41, 400}, {200, 100, 150}, {10, 3, 0}};
  for (int s = 0; s < 4; s++) {
    int64_t rows = shapes[s][0], cols = shapes[s][1], n_idx = shapes[s][2], n = rows * cols;
    float *lg = hbuf((size_t)n * 4);
    /* few distinct values: many ties, so "first maximum wins" is exercised */
    for (int64_t i = 0; i < n; i++) lg[i] = (float)randint(3) - 1.0f;
    int32_t *lab = hbuf((size_t)rows * 4);
    uint8_t *ml = hbuf((size_t)n);
    for (int64_t r = 0; r < rows; r++) lab[r] = (int32_t)randint(3); /* often the tied argmax */
    for (int64_t i = 0; i < n; i++) ml[i] = (uint8_t)(rng_next() & 1);
    int32_t *idx = rand_subset(rows, n_idx);
    struct both L = up2(lg, (size_t)n * 4), LB = up2(lab, (size_t)rows * 4), ML = up2(ml, (size_t)n);
    struct both I = up2(idx, (size_t)(n_idx ? n_idx : 1) * 4);
    int64_t oc[3] = {-1, -1, -1}, og[3] = {-2, -2, -2};
    cpu->eval_counts(cpu, L.c, rows, cols, LB.c, NULL, I.c, n_idx, oc);
    gpu->eval_counts(gpu, L.g, rows, cols, LB.g, NULL, I.g, n_idx, og);
    printf("  eval single %lldx%lld: gpu {%lld %lld %lld} cpu {%lld %lld %lld}\n", (long long)rows,
           (long long)cols, (long long)og[0], (long long)og[1], (long long)og[2], (long long)oc[0],
           (long long)oc[1], (long long)oc[2]);
    assert_memory_equal(oc, og, sizeof oc);
    cpu->eval_counts(cpu, L.c, rows, cols, NULL, ML.c, I.c, n_idx, oc);
    gpu->eval_counts(gpu, L.g, rows, cols, NULL, ML.g, I.g, n_idx, og);
    printf("  eval multi  %lldx%lld: gpu {%lld %lld %lld} cpu {%lld %lld %lld}\n", (long long)rows,
           (long long)cols, (long long)og[0], (long long)og[1], (long long)og[2], (long long)oc[0],
           (long long)oc[1], (long long)oc[2]);
    assert_memory_equal(oc, og, sizeof oc);
    free2(&L); free2(&LB); free2(&ML); free2(&I);
    free(lg); free(lab); free(ml); free(idx);
  }
}

static void test_adam(void **state) {
  (void)state;
  const int64_t n = 10007;
  for (int dec = 0; dec < 2; dec++) {
    struct cg_adam_params p = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.05f, dec};
    float *w = frand(n, -1, 1), *zero = hbuf((size_t)n * 4);
    struct both W = up2(w, (size_t)n * 4), M = up2(zero, (size_t)n * 4), V = up2(zero, (size_t)n * 4);
    struct both G = up2(NULL, (size_t)n * 4);
    for (int64_t t = 1; t <= 5; t++) {
      float *g = frand(n, -1, 1);
      assert_int_equal(cpu->upload(cpu, G.c, g, G.bytes), CG_OK);
      assert_int_equal(gpu->upload(gpu, G.g, g, G.bytes), CG_OK);
      cpu->adam(cpu, W.c, G.c, M.c, V.c, n, &p, t);
      gpu->adam(gpu, W.g, G.g, M.g, V.g, n, &p, t);
      free(g);
    }
    cmp2(dec ? "adamw w (5 steps)" : "adam w (5 steps)", &W, n, NULL, 1e-6, 1e-5);
    cmp2(dec ? "adamw m" : "adam m", &M, n, NULL, 1e-7, 1e-5);
    cmp2(dec ? "adamw v" : "adam v", &V, n, NULL, 1e-9, 1e-5);
    free2(&W); free2(&M); free2(&V); free2(&G);
    free(w); free(zero);
  }
}

/* SGD (core/sgd.h) on the GPU against the CPU backend, with and without momentum. */
static void test_sgd(void **state) {
  (void)state;
  const int64_t n = 10007;
  for (int mom = 0; mom < 2; mom++) {
    struct cg_sgd_params p = {5e-2f, mom ? 0.9f : 0.0f, 5e-4f};
    float *w = frand(n, -1, 1), *zero = hbuf((size_t)n * 4);
    struct both W = up2(w, (size_t)n * 4), B = up2(zero, (size_t)n * 4);
    struct both G = up2(NULL, (size_t)n * 4);
    for (int64_t t = 1; t <= 5; t++) {
      float *g = frand(n, -1, 1);
      assert_int_equal(cpu->upload(cpu, G.c, g, G.bytes), CG_OK);
      assert_int_equal(gpu->upload(gpu, G.g, g, G.bytes), CG_OK);
      cpu->sgd(cpu, W.c, G.c, B.c, n, &p);
      gpu->sgd(gpu, W.g, G.g, B.g, n, &p);
      free(g);
    }
    cmp2(mom ? "sgd momentum w (5 steps)" : "sgd w (5 steps)", &W, n, NULL, 1e-6, 1e-5);
    cmp2(mom ? "sgd momentum buf" : "sgd buf (untouched)", &B, n, NULL, 1e-7, 1e-5);
    free2(&W); free2(&B); free2(&G);
    free(w); free(zero);
  }
}

static void test_halo_rows(void **state) {
  (void)state;
  const int64_t rows = 100, cols = 33, n = 250;
  float *src = frand(rows * cols, -1, 1), *dst = frand(rows * cols, -1, 1);
  int32_t *idx = hbuf((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)randint(rows); /* repeats */
  struct both S = up2(src, (size_t)(rows * cols) * 4), I = up2(idx, (size_t)n * 4);
  struct both O = up2(NULL, (size_t)(n * cols) * 4), D = up2(dst, (size_t)(rows * cols) * 4);
  cpu->gather_rows(cpu, S.c, cols, I.c, n, O.c);
  gpu->gather_rows(gpu, S.g, cols, I.g, n, O.g);
  cmp2_exact("gather_rows", &O, (size_t)(n * cols) * 4);
  cpu->scatter_add_rows(cpu, O.c, cols, I.c, n, D.c);
  gpu->scatter_add_rows(gpu, O.g, cols, I.g, n, D.g);
  cmp2("scatter_add_rows (atomics)", &D, rows * cols, NULL, 1e-6, 1e-6);
  free2(&S); free2(&I); free2(&O); free2(&D);
  free(src); free(dst); free(idx);
}

int main(void) {
  int ndev = cg_cuda_device_count();
  if (ndev <= 0) {
    printf("test_cuda_ops: no CUDA device visible (cudaGetDeviceCount failed or returned 0); "
           "skipping\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_info),   cmocka_unit_test(test_memory),
      cmocka_unit_test(test_arena),         cmocka_unit_test(test_variant_selection),
      cmocka_unit_test(test_gemm),          cmocka_unit_test(test_blas1),
      cmocka_unit_test(test_spmm),          cmocka_unit_test(test_spmm_tiled),
      cmocka_unit_test(test_spmm_degenerate), cmocka_unit_test(test_spmm_split),
      cmocka_unit_test(test_bias),          cmocka_unit_test(test_relu),
      cmocka_unit_test(test_dropout),       cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_losses),        cmocka_unit_test(test_eval_counts),
      cmocka_unit_test(test_adam),          cmocka_unit_test(test_sgd),          cmocka_unit_test(test_halo_rows),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
