/* core/tests/test_attn_ops.c — the CPU backend's graph attention ops (core/ops.h,
 * core/attn.h): each forward and backward op against a naive reference in double,
 * finite differences through the whole attention chain (scores -> softmax ->
 * attention dropout -> per-edge SpMM -> ELU), the stable softmax on large scores,
 * the dropout mask keyed by global (source, destination) ids whatever the local
 * numbering, the edge transpose, and thread-count independence (bit for bit). */
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
#include "core/philox.h"
#include "core/status.h"
#include "test_util.h"

static struct cg_backend *be1, *be3; /* 1 and 3 threads */

static float *fbuf(int64_t n) {
  float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
  assert_non_null(p);
  return p;
}
static double *dbuf(int64_t n) {
  double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  assert_non_null(p);
  return p;
}
static void frand(struct tu_rng *r, float *x, int64_t n, double lo, double hi) {
  for (int64_t i = 0; i < n; i++) x[i] = (float)tu_unif(r, lo, hi);
}

static int group_setup(void **state) {
  (void)state;
  return (cg_backend_cpu_create(1, &be1) || cg_backend_cpu_create(3, &be3)) ? -1 : 0;
}
static int group_teardown(void **state) {
  (void)state;
  cg_backend_destroy(&be1);
  cg_backend_destroy(&be3);
  return 0;
}

/* Random in-edge CSR: some rows empty, degrees up to maxdeg, distinct columns per row
 * (a graph's edges), some columns without edges. */
static void make_graph(struct cg_csr *a, int64_t nrows, int64_t ncols, int maxdeg, uint64_t seed) {
  struct tu_rng rng = {seed};
  int64_t *deg = calloc((size_t)nrows + 1, sizeof *deg);
  assert_non_null(deg);
  int64_t nnz = 0;
  for (int64_t r = 0; r < nrows; r++) {
    deg[r] = tu_unif(&rng, 0, 1) < 0.15 ? 0 : 1 + tu_int(&rng, maxdeg < ncols ? maxdeg : ncols);
    nnz += deg[r];
  }
  assert_int_equal(cg_csr_alloc(a, nrows, ncols, nnz, 0), CG_OK);
  for (int64_t r = 0; r < nrows; r++) a->rowptr[r + 1] = a->rowptr[r] + deg[r];
  for (int64_t r = 0; r < nrows; r++)
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
      int32_t c;
      int dup;
      do { /* distinct within the row */
        c = (int32_t)tu_int(&rng, ncols);
        dup = 0;
        for (int64_t j = a->rowptr[r]; j < k; j++) dup |= a->colidx[j] == c;
      } while (dup);
      a->colidx[k] = c;
    }
  free(deg);
}

static int64_t row_of(const struct cg_csr *a, int64_t k) {
  int64_t r = 0;
  while (a->rowptr[r + 1] <= k) r++;
  return r;
}

/* ---------------------------------------------------------------- references */

static double leaky_d(double x, double slope) { return x > 0 ? x : slope * x; }

static void ref_scores(const struct cg_csr *a, const float *el, int64_t lde, const float *er,
                       int64_t ldr, int64_t H, double slope, double *s) {
  for (int64_t r = 0; r < a->nrows; r++)
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++)
      for (int64_t h = 0; h < H; h++)
        s[k * H + h] = leaky_d((double)el[a->colidx[k] * lde + h] + er[r * ldr + h], slope);
}

static void ref_softmax(const struct cg_csr *a, const float *s, int64_t H, double *alpha) {
  for (int64_t r = 0; r < a->nrows; r++)
    for (int64_t h = 0; h < H; h++) {
      double sum = 0;
      for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) sum += exp((double)s[k * H + h]);
      for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++)
        alpha[k * H + h] = exp((double)s[k * H + h]) / sum;
    }
}

static void ref_spmm(const struct cg_csr *a, const float *alpha, int64_t H, int64_t F,
                     const float *x, int64_t ldx, double *y) {
  for (int64_t v = 0; v < a->nrows; v++)
    for (int64_t c = 0; c < H * F; c++) {
      double acc = 0;
      for (int64_t k = a->rowptr[v]; k < a->rowptr[v + 1]; k++)
        acc += (double)alpha[k * H + c / F] * x[a->colidx[k] * ldx + c];
      y[v * H * F + c] = acc;
    }
}

/* ---------------------------------------------------------------- forward ops */

static void test_forward(void **state) {
  (void)state;
  struct tu_rng rng = {11};
  struct cg_csr a = {0};
  const int64_t nr = 37, nc = 45, H = 3, F = 5, lde = H + 2, ldr = H + 1, ldx = H * F + 3;
  make_graph(&a, nr, nc, 9, 5);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &a, &e), CG_OK);
  const int64_t m = a.nnz;
  float *el = fbuf(nc * lde), *er = fbuf(nr * ldr), *x = fbuf(nc * ldx), *s = fbuf(m * H),
        *al = fbuf(m * H), *y = fbuf(nr * H * F);
  double *rs = dbuf(m * H), *ra = dbuf(m * H), *ry = dbuf(nr * H * F);
  frand(&rng, el, nc * lde, -2, 2);
  frand(&rng, er, nr * ldr, -2, 2);
  frand(&rng, x, nc * ldx, -1, 1);

  be1->edge_scores(be1, &e, el, lde, er, ldr, H, 0.2f, s);
  ref_scores(&a, el, lde, er, ldr, H, 0.2, rs);
  assert_true(tu_close("edge_scores", s, rs, m * H, 1e-6, 1e-6));
  { /* bit for bit core/attn.h's values (the CUDA kernel's) */
    float *ws = fbuf(m * H);
    for (int64_t v = 0; v < nr; v++)
      for (int64_t h = 0; h < H; h++) cg_attn_scores_rh(&e, el, lde, er, ldr, H, 0.2f, ws, v, h);
    assert_memory_equal(s, ws, (size_t)(m * H) * sizeof(float));
    free(ws);
  }

  be1->edge_softmax(be1, &e, s, H, al);
  ref_softmax(&a, s, H, ra);
  assert_true(tu_close("edge_softmax", al, ra, m * H, 1e-7, 1e-5));
  /* in place */
  memcpy(y, s, (size_t)(m * H) * sizeof(float));
  be1->edge_softmax(be1, &e, y, H, y);
  assert_memory_equal(y, al, (size_t)(m * H) * sizeof(float));

  be1->spmm_edge(be1, &e, al, H, F, x, ldx, y, H * F);
  ref_spmm(&a, al, H, F, x, ldx, ry);
  assert_true(tu_close("spmm_edge", y, ry, nr * H * F, 1e-6, 1e-5));
  /* and bit for bit the per-element sums of core/attn.h (the CUDA kernel's order) */
  for (int64_t v = 0; v < nr; v++)
    for (int64_t c = 0; c < H * F; c++) {
      const float want = cg_attn_spmm_elem(&e, al, H, F, x, ldx, v, c);
      assert_memory_equal(&y[v * H * F + c], &want, sizeof want);
    }

  float xe[6] = {-3.0f, -1.0f, -1e-4f, 0.0f, 0.5f, 4.0f}, ye[6];
  double re[6];
  for (int i = 0; i < 6; i++) re[i] = xe[i] > 0 ? xe[i] : expm1((double)xe[i]);
  be1->elu_fwd(be1, xe, ye, 6);
  assert_true(tu_close("elu_fwd", ye, re, 6, 1e-7, 1e-6));

  free(el); free(er); free(x); free(s); free(al); free(y); free(rs); free(ra); free(ry);
  cg_edges_free(be1, &e);
  cg_csr_free(&a);
}

/* Softmax of scores in the thousands: the row maximum is subtracted, so nothing
 * overflows; each row sums to 1; an empty row writes nothing. */
static void test_softmax_stable(void **state) {
  (void)state;
  struct cg_csr a = {0};
  assert_int_equal(cg_csr_alloc(&a, 3, 4, 5, 0), CG_OK);
  const int64_t rp[4] = {0, 3, 3, 5};
  const int32_t ci[5] = {0, 1, 2, 3, 0};
  memcpy(a.rowptr, rp, sizeof rp);
  memcpy(a.colidx, ci, sizeof ci);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &a, &e), CG_OK);
  float s[5] = {1000.0f, 999.0f, -1000.0f, 88.0f, 89.0f}, al[5];
  be1->edge_softmax(be1, &e, s, 1, al);
  double ra[5] = {1.0 / (1.0 + exp(-1.0)), exp(-1.0) / (1.0 + exp(-1.0)), 0.0,
                  1.0 / (1.0 + exp(1.0)), 1.0 / (1.0 + exp(-1.0))};
  assert_true(tu_close("stable softmax", al, ra, 5, 1e-7, 1e-6));
  cg_edges_free(be1, &e);
  cg_csr_free(&a);
}

/* The spacing of floats at |v| (v rounded to float first). */
static double ulp_at(double v) {
  const float f = fabsf((float)v);
  return (double)(nextafterf(f, INFINITY) - f);
}

/* ELU and the edge softmax as the CPU backend runs them with vector exponentials (8 lanes
 * a call: glibc's libmvec, core/cpu_backend.c, where it is built in; libm's scalar ones
 * otherwise, where all of this holds too). ELU over 40,003 values of every kind: within 4
 * ulp of the double expm1 (x itself where x > 0, -1 at -inf, NaN for NaN), the same bits
 * on 1 and 3 threads, in place, and wherever a value sits (the array shifted by one puts
 * every value in another lane and the tail elsewhere). The softmax with 8 and 16 heads:
 * the reference's values, the same bits on 1 and 3 threads and in place, and each head
 * the bits the one-head softmax gives that head's scores alone (the exponential works
 * lane by lane, and each head's sum adds up in edge order either way). One head with
 * infinite and NaN scores: where core/attn.h's scalar softmax gives NaN, and otherwise
 * within 8 ulp of it. */
static void test_vector_exp_ops(void **state) {
  (void)state;
  const int64_t nb = 40003;
  const float sx[] = {-100.0f, -88.5f, -20.0f, -3.0f, -1.0f, -0.5f, -1e-3f, -1e-8f, -1.4e-45f, -0.0f, 0.0f,
                      1.4e-45f, 1e-8f, 0.3f, 5.0f, 3e38f, INFINITY, -INFINITY, NAN};
  const int64_t ns = (int64_t)(sizeof sx / sizeof *sx);
  float *x = fbuf(nb), *y1 = fbuf(nb), *y3 = fbuf(nb), *ys = fbuf(nb);
  for (int64_t i = 0; i < nb; i++)
    x[i] = i % 3 == 0 ? sx[(i * 7) % ns] : (float)(-12.0 + 14.0 * (double)(i % 9973) / 9973.0);
  be1->elu_fwd(be1, x, y1, nb);
  be3->elu_fwd(be3, x, y3, nb);
  assert_memory_equal(y1, y3, (size_t)nb * sizeof(float));
  be1->elu_fwd(be1, x + 1, ys, nb - 1);
  assert_memory_equal(ys, y1 + 1, (size_t)(nb - 1) * sizeof(float));
  memcpy(ys, x, (size_t)nb * sizeof(float));
  be3->elu_fwd(be3, ys, ys, nb);
  assert_memory_equal(ys, y1, (size_t)nb * sizeof(float));
  double worst = 0.0;
  for (int64_t i = 0; i < nb; i++) {
    if (isnan(x[i])) {
      assert_true(isnan(y1[i]));
      continue;
    }
    if (x[i] > 0.0f) {
      assert_memory_equal(&y1[i], &x[i], sizeof(float));
      continue;
    }
    const double want = expm1((double)x[i]), err = fabs((double)y1[i] - want) / ulp_at(want);
    if (err > worst) worst = err;
    if (!(err <= 4.0)) fail_msg("elu(%.9g) = %.9g, expected %.9g (%.2f ulp)", (double)x[i], (double)y1[i], want, err);
  }
  printf("  elu_fwd: %lld values, worst %.2f ulp of the double expm1\n", (long long)nb, worst);
  free(x); free(y1); free(y3); free(ys);

  struct cg_csr a = {0};
  make_graph(&a, 97, 80, 40, 11);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &a, &e), CG_OK);
  const int64_t m = a.nnz;
  struct tu_rng rng = {17};
  for (int64_t H = 8; H <= 16; H += 8) {
    float *s = fbuf(m * H), *al = fbuf(m * H), *al3 = fbuf(m * H), *s1 = fbuf(m), *al1 = fbuf(m);
    double *ra = calloc((size_t)(m * H), sizeof(double));
    assert_non_null(ra);
    for (int64_t i = 0; i < m * H; i++) /* one head past float exp's range (the maximum is subtracted) */
      s[i] = (float)tu_unif(&rng, -6, 6) + (i % H == 3 ? 300.0f : 0.0f);
    be1->edge_softmax(be1, &e, s, H, al);
    ref_softmax(&a, s, H, ra);
    assert_true(tu_close("edge_softmax", al, ra, m * H, 1e-7, 1e-5));
    be3->edge_softmax(be3, &e, s, H, al3);
    assert_memory_equal(al3, al, (size_t)(m * H) * sizeof(float));
    memcpy(al3, s, (size_t)(m * H) * sizeof(float));
    be3->edge_softmax(be3, &e, al3, H, al3);
    assert_memory_equal(al3, al, (size_t)(m * H) * sizeof(float));
    for (int64_t h = 0; h < H; h++) {
      for (int64_t k = 0; k < m; k++) s1[k] = s[k * H + h];
      be1->edge_softmax(be1, &e, s1, 1, al1);
      for (int64_t k = 0; k < m; k++) assert_memory_equal(&al1[k], &al[k * H + h], sizeof(float));
    }
    free(s); free(al); free(al3); free(s1); free(al1); free(ra);
  }
  { /* one head: 3 threads and in place give the same bits; a -inf score gets 0 and its row
     * still sums to 1; a row with a NaN or a +inf score is NaN throughout, as in
     * cg_attn_softmax_rh */
    float *s = fbuf(m), *al = fbuf(m), *al3 = fbuf(m), *ref = fbuf(m);
    for (int64_t k = 0; k < m; k++) s[k] = (float)tu_unif(&rng, -6, 6);
    int64_t rinf = -1, rnan = -1, rpinf = -1;
    for (int64_t r = 0; r < a.nrows && (rinf < 0 || rnan < 0 || rpinf < 0); r++) {
      if (a.rowptr[r + 1] - a.rowptr[r] < 3) continue;
      if (rinf < 0) rinf = r, s[a.rowptr[r] + 1] = -INFINITY;
      else if (rnan < 0) rnan = r, s[a.rowptr[r] + 2] = NAN;
      else rpinf = r, s[a.rowptr[r]] = INFINITY;
    }
    assert_true(rinf >= 0 && rnan >= 0 && rpinf >= 0);
    be1->edge_softmax(be1, &e, s, 1, al);
    be3->edge_softmax(be3, &e, s, 1, al3);
    assert_memory_equal(al3, al, (size_t)m * sizeof(float));
    memcpy(al3, s, (size_t)m * sizeof(float));
    be3->edge_softmax(be3, &e, al3, 1, al3);
    assert_memory_equal(al3, al, (size_t)m * sizeof(float));
    for (int64_t r = 0; r < a.nrows; r++) cg_attn_softmax_rh(&e, s, 1, ref, r, 0);
    for (int64_t k = 0; k < m; k++) {
      assert_int_equal(isnan(al[k]) != 0, isnan(ref[k]) != 0);
      if (!isnan(ref[k])) assert_true(fabsf(al[k] - ref[k]) <= 8.0f * (float)ulp_at(ref[k]) + 1e-30f);
    }
    assert_true(al[a.rowptr[rinf] + 1] == 0.0f);
    double sum = 0.0;
    for (int64_t k = a.rowptr[rinf]; k < a.rowptr[rinf + 1]; k++) sum += al[k];
    assert_true(fabs(sum - 1.0) < 1e-6);
    for (int64_t k = a.rowptr[rnan]; k < a.rowptr[rnan + 1]; k++) assert_true(isnan(al[k]));
    for (int64_t k = a.rowptr[rpinf]; k < a.rowptr[rpinf + 1]; k++) assert_true(isnan(al[k]));
    free(s); free(al); free(al3); free(ref);
  }
  cg_edges_free(be1, &e);
  cg_csr_free(&a);
}

/* The transpose lists every edge once, under its source column, in increasing edge
 * number, with its row. */
static void test_transpose(void **state) {
  (void)state;
  struct cg_csr a = {0};
  make_graph(&a, 50, 31, 7, 9);
  int64_t *tp, *te;
  int32_t *tr;
  assert_int_equal(cg_edges_transpose_host(&a, &tp, &tr, &te), CG_OK);
  assert_int_equal(tp[0], 0);
  assert_int_equal(tp[a.ncols], a.nnz);
  char *seen = calloc((size_t)a.nnz + 1, 1);
  for (int64_t u = 0; u < a.ncols; u++)
    for (int64_t j = tp[u]; j < tp[u + 1]; j++) {
      const int64_t k = te[j];
      assert_true(k >= 0 && k < a.nnz && !seen[k]);
      seen[k] = 1;
      assert_int_equal(a.colidx[k], u);
      assert_int_equal(tr[j], row_of(&a, k));
      if (j > tp[u]) assert_true(te[j - 1] < k);
    }
  free(seen);
  cg_free(tp);
  cg_free(tr);
  cg_free(te);
  cg_csr_free(&a);
}

/* ---------------------------------------------------------------- backward ops */

static void test_backward_refs(void **state) {
  (void)state;
  struct tu_rng rng = {23};
  struct cg_csr a = {0};
  const int64_t nr = 29, nc = 33, H = 2, F = 3, lde = H + 1, ldr = H + 3, ldx = H * F + 1, W = H * F;
  make_graph(&a, nr, nc, 8, 17);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &a, &e), CG_OK);
  const int64_t m = a.nnz;
  float *s = fbuf(m * H), *ds = fbuf(m * H), *del = fbuf(nc * lde), *der = fbuf(nr * ldr),
        *al = fbuf(m * H), *dal = fbuf(m * H), *x = fbuf(nc * ldx), *dy = fbuf(nr * W),
        *dx = fbuf(nc * W);
  double *rdel = dbuf(nc * H), *rder = dbuf(nr * H), *rds = dbuf(m * H), *rdx = dbuf(nc * W),
         *rdal = dbuf(m * H);
  float *gdel = fbuf(nc * H), *gder = fbuf(nr * H);
  frand(&rng, s, m * H, -2, 2);
  frand(&rng, ds, m * H, -1, 1);
  frand(&rng, x, nc * ldx, -1, 1);
  frand(&rng, dy, nr * W, -1, 1);
  frand(&rng, dal, m * H, -1, 1);
  be1->edge_softmax(be1, &e, s, H, al);

  /* scores backward: der = row sums, del = column sums of ds * leaky'(s) */
  be1->edge_scores_bwd(be1, &e, s, ds, H, 0.2f, del, lde, der, ldr);
  for (int64_t k = 0; k < m; k++)
    for (int64_t h = 0; h < H; h++) {
      const double g = (s[k * H + h] > 0 ? 1.0 : 0.2) * ds[k * H + h];
      rder[row_of(&a, k) * H + h] += g;
      rdel[a.colidx[k] * H + h] += g;
    }
  for (int64_t u = 0; u < nc; u++)
    for (int64_t h = 0; h < H; h++) gdel[u * H + h] = del[u * lde + h];
  for (int64_t v = 0; v < nr; v++)
    for (int64_t h = 0; h < H; h++) gder[v * H + h] = der[v * ldr + h];
  assert_true(tu_close("edge_scores_bwd del", gdel, rdel, nc * H, 1e-6, 1e-5));
  assert_true(tu_close("edge_scores_bwd der", gder, rder, nr * H, 1e-6, 1e-5));
  { /* bit for bit core/attn.h's per-element sums (the CUDA kernel's order) */
    float *wdel = fbuf(nc * lde), *wder = fbuf(nr * ldr);
    for (int64_t u = 0; u < nc; u++)
      for (int64_t h = 0; h < H; h++) cg_attn_scores_bwd_src(&e, s, ds, H, 0.2f, wdel, lde, u, h);
    for (int64_t v = 0; v < nr; v++)
      for (int64_t h = 0; h < H; h++) cg_attn_scores_bwd_dst(&e, s, ds, H, 0.2f, wder, ldr, v, h);
    for (int64_t u = 0; u < nc; u++) assert_memory_equal(&del[u * lde], &wdel[u * lde], (size_t)H * sizeof(float));
    for (int64_t v = 0; v < nr; v++) assert_memory_equal(&der[v * ldr], &wder[v * ldr], (size_t)H * sizeof(float));
    free(wdel); free(wder);
  }

  /* softmax backward */
  float *ds2 = fbuf(m * H);
  be1->edge_softmax_bwd(be1, &e, al, dal, H, ds2);
  for (int64_t r = 0; r < nr; r++)
    for (int64_t h = 0; h < H; h++) {
      double dot = 0;
      for (int64_t k = a.rowptr[r]; k < a.rowptr[r + 1]; k++) dot += (double)al[k * H + h] * dal[k * H + h];
      for (int64_t k = a.rowptr[r]; k < a.rowptr[r + 1]; k++)
        rds[k * H + h] = al[k * H + h] * (dal[k * H + h] - dot);
    }
  assert_true(tu_close("edge_softmax_bwd", ds2, rds, m * H, 1e-7, 1e-5));
  memcpy(ds, dal, (size_t)(m * H) * sizeof(float)); /* in place */
  be1->edge_softmax_bwd(be1, &e, al, ds, H, ds);
  assert_memory_equal(ds, ds2, (size_t)(m * H) * sizeof(float));

  /* per-edge SpMM backward */
  be1->spmm_edge_bwd_x(be1, &e, al, H, F, dy, W, dx, W);
  be1->spmm_edge_bwd_alpha(be1, &e, H, F, x, ldx, dy, W, dal);
  for (int64_t u = 0; u < nc; u++) /* bit for bit core/attn.h's per-element sums */
    for (int64_t c = 0; c < W; c++) {
      const float want = cg_attn_spmm_bwd_x_elem(&e, al, H, F, dy, W, u, c);
      assert_memory_equal(&dx[u * W + c], &want, sizeof want);
    }
  for (int64_t k = 0; k < m; k++) {
    const int64_t r = row_of(&a, k), u = a.colidx[k];
    for (int64_t c = 0; c < W; c++) rdx[u * W + c] += (double)al[k * H + c / F] * dy[r * W + c];
    for (int64_t h = 0; h < H; h++) {
      double acc = 0;
      for (int64_t f = 0; f < F; f++) acc += (double)dy[r * W + h * F + f] * x[u * ldx + h * F + f];
      rdal[k * H + h] = acc;
    }
  }
  assert_true(tu_close("spmm_edge_bwd_x", dx, rdx, nc * W, 1e-6, 1e-5));
  assert_true(tu_close("spmm_edge_bwd_alpha", dal, rdal, m * H, 1e-6, 1e-5));

  /* ELU backward from the output */
  float ye[5] = {-0.9f, -0.3f, 0.0f, 0.2f, 3.0f}, dye[5] = {1.0f, -2.0f, 0.5f, 0.7f, -1.0f};
  double rdye[5];
  for (int i = 0; i < 5; i++) rdye[i] = ye[i] > 0 ? dye[i] : dye[i] * (ye[i] + 1.0);
  be1->elu_bwd(be1, ye, dye, 5);
  assert_true(tu_close("elu_bwd", dye, rdye, 5, 1e-7, 1e-6));
  { /* the backend's (vectorised) loop against cg_elu_grad bit for bit, on 1 and 3 threads,
     * over 40,003 values (a tail past any vector width) of every kind: both zeros, values
     * at and near -1 and 0, subnormal, huge and infinite outputs, NaNs */
    const int64_t nb = 40003;
    const float sy[] = {-1.0f, -0.9f, -0.5f, -1e-8f, -0.0f, 0.0f, 1e-30f, 1e-8f, 2e-7f, 0.3f, 5.0f,
                        3e38f, INFINITY, -INFINITY, NAN, -0.999999f, 1.4e-45f, -1.4e-45f};
    const float sd[] = {1.0f, -2.5f, 0.0f, -0.0f, 1e-40f, 3e38f, -3e38f, INFINITY, NAN, 7.25f, -1e-3f};
    float *yb = fbuf(nb), *d1 = fbuf(nb), *d3 = fbuf(nb), *want = fbuf(nb);
    for (int64_t i = 0; i < nb; i++) {
      yb[i] = sy[(i * 7) % (int64_t)(sizeof sy / sizeof *sy)];
      d1[i] = d3[i] = sd[(i * 5 + i / 13) % (int64_t)(sizeof sd / sizeof *sd)];
      want[i] = cg_elu_grad(yb[i], d1[i]);
    }
    be1->elu_bwd(be1, yb, d1, nb);
    be3->elu_bwd(be3, yb, d3, nb);
    assert_memory_equal(d1, want, (size_t)nb * sizeof(float));
    assert_memory_equal(d3, want, (size_t)nb * sizeof(float));
    free(yb); free(d1); free(d3); free(want);
  }

  free(s); free(ds); free(del); free(der); free(al); free(dal); free(x); free(dy); free(dx);
  free(rdel); free(rder); free(rds); free(rdx); free(rdal); free(gdel); free(gder); free(ds2);
  cg_edges_free(be1, &e);
  cg_csr_free(&a);
}

/* ---------------------------------------------------------------- finite differences */

/* The attention chain of one GAT layer on fixed inputs:
 *   s = scores(el, er), alpha = softmax(s), ad = dropout(alpha), y = spmm(ad, x),
 *   z = ELU(y), L = sum w * z. */
struct chain {
  const struct cg_csr *a;
  struct cg_edges e;
  int64_t H, F, lde, ldx;
  float p;
  int32_t *gid;
  float *w;
  float *s, *al, *ad, *y; /* saved forward */
};

static double chain_loss(struct chain *c, const float *el, const float *er, const float *x) {
  struct cg_backend *be = be1;
  const struct cg_dropout_key key = {77, 3, 1};
  const int64_t nr = c->a->nrows, W = c->H * c->F;
  be->edge_scores(be, &c->e, el, c->lde, er, c->H, c->H, 0.2f, c->s);
  be->edge_softmax(be, &c->e, c->s, c->H, c->al);
  be->edge_dropout(be, &c->e, c->al, c->ad, c->H, c->gid, c->p, key);
  be->spmm_edge(be, &c->e, c->ad, c->H, c->F, x, c->ldx, c->y, W);
  be->elu_fwd(be, c->y, c->y, nr * W);
  double L = 0;
  for (int64_t i = 0; i < nr * W; i++) L += (double)c->w[i] * c->y[i];
  return L;
}

static void test_gradcheck_chain(void **state) {
  (void)state;
  struct tu_rng rng = {99};
  struct cg_csr a = {0};
  const int64_t nr = 9, nc = 12, H = 3, F = 2, W = H * F;
  make_graph(&a, nr, nc, 5, 41);
  struct chain c = {.a = &a, .H = H, .F = F, .lde = H + 1, .ldx = W + 2, .p = 0.3f};
  assert_int_equal(cg_edges_upload(be1, &a, &c.e), CG_OK);
  const int64_t m = a.nnz;
  c.gid = calloc((size_t)nc, sizeof(int32_t));
  for (int64_t i = 0; i < nc; i++) c.gid[i] = (int32_t)(1000 + 7 * i);
  c.w = fbuf(nr * W);
  c.s = fbuf(m * H);
  c.al = fbuf(m * H);
  c.ad = fbuf(m * H);
  c.y = fbuf(nr * W);
  float *el = fbuf(nc * c.lde), *er = fbuf(nr * H), *x = fbuf(nc * c.ldx);
  frand(&rng, c.w, nr * W, -1, 1);
  frand(&rng, el, nc * c.lde, -1.5, 1.5);
  frand(&rng, er, nr * H, -1.5, 1.5);
  frand(&rng, x, nc * c.ldx, -1, 1);

  /* analytic gradients through the backward ops */
  chain_loss(&c, el, er, x);
  const struct cg_dropout_key key = {77, 3, 1};
  float *dy = fbuf(nr * W), *dad = fbuf(m * H), *dx = fbuf(nc * W), *ds = fbuf(m * H),
        *del = fbuf(nc * c.lde), *der = fbuf(nr * H);
  memcpy(dy, c.w, (size_t)(nr * W) * sizeof(float));
  be1->elu_bwd(be1, c.y, dy, nr * W);
  be1->spmm_edge_bwd_x(be1, &c.e, c.ad, H, F, dy, W, dx, W);
  be1->spmm_edge_bwd_alpha(be1, &c.e, H, F, x, c.ldx, dy, W, dad);
  be1->edge_dropout(be1, &c.e, dad, dad, H, c.gid, c.p, key);
  be1->edge_softmax_bwd(be1, &c.e, c.al, dad, H, ds);
  be1->edge_scores_bwd(be1, &c.e, c.s, ds, H, 0.2f, del, c.lde, der, H);

  /* central differences in float inputs, loss in double */
  const float eps = 1e-2f;
  double worst = 0;
  int checked = 0, skipped = 0;
  struct { float *v, *g; int64_t rows, cols, ld, gld; const char *name; int kink; } in[3] = {
      {x, dx, nc, W, c.ldx, W, "x", 0},
      {el, del, nc, H, c.lde, c.lde, "el", 1},
      {er, der, nr, H, H, H, "er", 2}};
  for (int t = 0; t < 3; t++)
    for (int64_t i = 0; i < in[t].rows; i++)
      for (int64_t j = 0; j < in[t].cols; j++) {
        if (in[t].kink) { /* skip a term whose LeakyReLU input lies within reach of its kink */
          int near = 0;
          for (int64_t k = 0; k < m; k++) {
            const int64_t r = row_of(&a, k);
            if ((in[t].kink == 1 && a.colidx[k] != i) || (in[t].kink == 2 && r != i)) continue;
            const double pre = (double)el[a.colidx[k] * c.lde + j] + er[r * H + j];
            near |= fabs(pre) < 3.0 * eps;
          }
          if (near) {
            skipped++;
            continue;
          }
        }
        float *p = &in[t].v[i * in[t].ld + j];
        const float keep = *p;
        *p = keep + eps;
        const double lp = chain_loss(&c, el, er, x);
        *p = keep - eps;
        const double lm = chain_loss(&c, el, er, x);
        *p = keep;
        const double fd = (lp - lm) / (2.0 * (double)eps);
        const double an = in[t].g[i * in[t].gld + j];
        const double err = fabs(an - fd) / (2e-3 + 2e-3 * fabs(fd));
        if (err > worst) worst = err;
        if (err > 1.0)
          printf("  %s[%lld,%lld]: analytic %.6g, finite differences %.6g\n", in[t].name,
                 (long long)i, (long long)j, an, fd);
        checked++;
      }
  printf("  attention chain: %d gradients checked, %d near a LeakyReLU kink skipped, worst %.3g of "
         "tolerance\n", checked, skipped, worst);
  assert_true(worst <= 1.0);
  assert_true(skipped * 4 < checked);

  free(dy); free(dad); free(dx); free(ds); free(del); free(der); free(el); free(er); free(x);
  free(c.gid); free(c.w); free(c.s); free(c.al); free(c.ad); free(c.y);
  cg_edges_free(be1, &c.e);
  cg_csr_free(&a);
}

/* ---------------------------------------------------------------- attention dropout */

/* The mask is cg_attn_dropout_uniform of (source gid, destination gid, head): the same
 * for an edge whatever the local numbering; ~1-p kept; other epochs and layers differ. */
static void test_edge_dropout(void **state) {
  (void)state;
  struct cg_csr a = {0}, b = {0};
  const int64_t n = 60, H = 6;
  make_graph(&a, n, n, 12, 3);
  const float p = 0.4f;
  const struct cg_dropout_key key = {0x1234567890abcdefull, 5, 2};
  int32_t *gid = calloc((size_t)n, sizeof(int32_t)), *gidb = calloc((size_t)n, sizeof(int32_t));
  int32_t *perm = calloc((size_t)n, sizeof(int32_t)); /* local id in b of a's local id */
  for (int64_t i = 0; i < n; i++) gid[i] = (int32_t)(3 * i + 1);
  for (int64_t i = 0; i < n; i++) perm[i] = (int32_t)((i * 7 + 3) % n); /* 7 coprime with 60 */
  for (int64_t i = 0; i < n; i++) gidb[perm[i]] = gid[i];
  /* b = a with rows and columns renumbered by perm (each row's edges in the same order) */
  assert_int_equal(cg_csr_alloc(&b, n, n, a.nnz, 0), CG_OK);
  for (int64_t i = 0; i < n; i++) b.rowptr[perm[i] + 1] = a.rowptr[i + 1] - a.rowptr[i];
  for (int64_t i = 0; i < n; i++) b.rowptr[i + 1] += b.rowptr[i];
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = a.rowptr[i]; k < a.rowptr[i + 1]; k++)
      b.colidx[b.rowptr[perm[i]] + (k - a.rowptr[i])] = perm[a.colidx[k]];
  struct cg_edges ea, eb;
  assert_int_equal(cg_edges_upload(be1, &a, &ea), CG_OK);
  assert_int_equal(cg_edges_upload(be1, &b, &eb), CG_OK);
  const int64_t m = a.nnz;
  float *ones = fbuf(m * H), *oa = fbuf(m * H), *ob = fbuf(m * H), *o3 = fbuf(m * H);
  for (int64_t i = 0; i < m * H; i++) ones[i] = 1.0f;
  be1->edge_dropout(be1, &ea, ones, oa, H, gid, p, key);
  be1->edge_dropout(be1, &eb, ones, ob, H, gidb, p, key);
  be3->edge_dropout(be3, &ea, ones, o3, H, gid, p, key);
  assert_memory_equal(oa, o3, (size_t)(m * H) * sizeof(float));
  int64_t kept = 0;
  const float scale = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) {
      const int64_t kb = b.rowptr[perm[i]] + (k - a.rowptr[i]);
      for (int64_t h = 0; h < H; h++) {
        const float u = cg_attn_dropout_uniform(key.seed, key.epoch, key.layer,
                                                (uint32_t)gid[a.colidx[k]], (uint32_t)gid[i], h);
        const float want = cg_dropout_keep(u, p) ? scale : 0.0f;
        assert_true(oa[k * H + h] == want);
        assert_true(ob[kb * H + h] == want);
        kept += want != 0.0f;
      }
    }
  const double frac = (double)kept / (double)(m * H);
  printf("  attention dropout: %lld of %lld kept (%.3f, expected %.3f)\n", (long long)kept,
         (long long)(m * H), frac, 1.0 - p);
  assert_true(fabs(frac - (1.0 - p)) < 0.05);
  /* another epoch, another layer: other masks */
  struct cg_dropout_key k2 = key, k3 = key;
  k2.epoch++;
  k3.layer++;
  be1->edge_dropout(be1, &ea, ones, ob, H, gid, p, k2);
  be1->edge_dropout(be1, &ea, ones, o3, H, gid, p, k3);
  assert_true(memcmp(oa, ob, (size_t)(m * H) * sizeof(float)) != 0);
  assert_true(memcmp(oa, o3, (size_t)(m * H) * sizeof(float)) != 0);
  /* p = 0 copies */
  be1->edge_dropout(be1, &ea, oa, ob, H, gid, 0.0f, key);
  assert_memory_equal(oa, ob, (size_t)(m * H) * sizeof(float));
  free(ones); free(oa); free(ob); free(o3); free(gid); free(gidb); free(perm);
  cg_edges_free(be1, &ea);
  cg_edges_free(be1, &eb);
  cg_csr_free(&a);
  cg_csr_free(&b);
}

/* ---------------------------------------------------------------- edge cases of the CPU loops */

/* A CSR of the given degrees, each row's columns distinct ((7 r + 13 j) mod ncols, 13
 * coprime with ncols). */
static void make_deg_graph(struct cg_csr *a, int64_t nrows, int64_t ncols, const int64_t *deg) {
  int64_t nnz = 0;
  for (int64_t r = 0; r < nrows; r++) nnz += deg[r];
  assert_int_equal(cg_csr_alloc(a, nrows, ncols, nnz, 0), CG_OK);
  for (int64_t r = 0; r < nrows; r++) a->rowptr[r + 1] = a->rowptr[r] + deg[r];
  for (int64_t r = 0; r < nrows; r++)
    for (int64_t j = 0; j < deg[r]; j++) a->colidx[a->rowptr[r] + j] = (int32_t)((7 * r + 13 * j) % ncols);
}

/* got and want hold the same bits, a NaN matching any NaN: a sum that meets two NaNs
 * returns one of them by the order the compiler gives the operands (x86 returns the
 * first; GCC may swap the operands of a commutative + or *), so the sign and payload of
 * a NaN are not part of the contract. Returns the number of NaNs of other bits. */
static int64_t assert_same_bits_nan(const char *what, const float *got, const float *want, int64_t n) {
  int64_t nan_diff = 0;
  for (int64_t i = 0; i < n; i++) {
    if (memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
    if (isnan(got[i]) && isnan(want[i])) {
      nan_diff++;
      continue;
    }
    print_message("  %s[%lld]: %.9g, want %.9g\n", what, (long long)i, (double)got[i], (double)want[i]);
    fail();
  }
  if (nan_diff) print_message("  %s: %lld NaNs of another sign or payload\n", what, (long long)nan_diff);
  return nan_diff;
}

/* Values of every kind (both zeros, subnormal, huge, infinite, NaN) among random ones. */
static void odd_values(struct tu_rng *rng, float *x, int64_t n) {
  static const float odd[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN, 1.0f};
  for (int64_t i = 0; i < n; i++)
    x[i] = i % 7 == 3 ? odd[(i / 7) % (int64_t)(sizeof odd / sizeof *odd)] : (float)tu_unif(rng, -2, 2);
}

/* edge_dropout and csr_dropout (AVX2 kernels where the CPU has them) against the scalar
 * rules of core/attn.h bit for bit: H = 1, 3, 4, 5, 8 (heads past a group of 4 masked),
 * 1 and 3 threads (both above the parallel threshold), rows without edges at and next
 * to every thread's block boundary and at both ends, more threads than rows with edges,
 * in place and not, odd input values. */
static void test_dropout_kernels_edges(void **state) {
  (void)state;
  struct tu_rng rng = {2026};
  const struct cg_dropout_key key = {0xfeedface12345678ull, 9, 3};
  const float p = 0.35f, scale = 1.0f / (1.0f - p);
  /* graph 0: 301 rows, empty ones at the ends and around n t / 3; graph 1: 2 rows of
   * 1100 edges (3 threads, 2 rows: a thread without rows); graph 2: 302 rows, none empty;
   * graph 3: 701 rows as graph 0's, ~18,000 edges (csr_dropout in parallel too) */
  const int64_t nrs[4] = {301, 2, 302, 701}, ncs[4] = {311, 1201, 311, 709}; /* gid: ncols >= nrows */
  for (int gi = 0; gi < 4; gi++) {
    const int64_t nr = nrs[gi], nc = ncs[gi];
    int64_t *deg = calloc((size_t)nr, sizeof *deg);
    for (int64_t r = 0; r < nr; r++)
      deg[r] = gi == 1 ? 1100 : gi == 3 ? 1 + tu_int(&rng, 51) : 1 + tu_int(&rng, 2 * r % 29 + 1);
    if (gi == 0 || gi == 3)
      for (int64_t r = 0; r < nr; r++)
        for (int t = 0; t <= 3; t++) {
          const int64_t b = nr * t / 3;
          if (r >= b - 2 && r <= b + 1) deg[r] = 0;
        }
    struct cg_csr a = {0};
    make_deg_graph(&a, nr, nc, deg);
    struct cg_edges e;
    assert_int_equal(cg_edges_upload(be1, &a, &e), CG_OK);
    int32_t *gid = calloc((size_t)nc, sizeof(int32_t));
    for (int64_t i = 0; i < nc; i++) gid[i] = (int32_t)(5 * i + 2);
    const int64_t Hs[5] = {1, 3, 4, 5, 8};
    for (int hi = 0; hi < 5; hi++) {
      const int64_t H = Hs[hi], n = a.nnz * H;
      float *in = fbuf(n), *ref = fbuf(n), *o1 = fbuf(n), *o3 = fbuf(n), *ip = fbuf(n);
      odd_values(&rng, in, n);
      for (int64_t r = 0; r < nr; r++)
        for (int64_t k = a.rowptr[r]; k < a.rowptr[r + 1]; k++)
          cg_attn_dropout_edge(in + k * H, ref + k * H, H, (uint32_t)gid[a.colidx[k]], (uint32_t)gid[r], p, scale,
                               key.seed, key.epoch, key.layer);
      be1->edge_dropout(be1, &e, in, o1, H, gid, p, key);
      be3->edge_dropout(be3, &e, in, o3, H, gid, p, key);
      memcpy(ip, in, (size_t)n * sizeof(float));
      be3->edge_dropout(be3, &e, ip, ip, H, gid, p, key);
      print_message("  edge_dropout graph %d (%lld rows, %lld edges), H = %lld: %lld values%s\n", gi, (long long)nr,
                    (long long)a.nnz, (long long)H, (long long)n, n >= 16384 ? " (parallel)" : "");
      assert_memory_equal(o1, ref, (size_t)n * sizeof(float));
      assert_memory_equal(o3, ref, (size_t)n * sizeof(float));
      assert_memory_equal(ip, ref, (size_t)n * sizeof(float));
      free(in); free(ref); free(o1); free(o3); free(ip);
    }
    /* csr_dropout: the stored values of the same structure (gid of the rows) */
    {
      const int64_t n = a.nnz;
      float *in = fbuf(n), *ref = fbuf(n), *o1 = fbuf(n), *o3 = fbuf(n), *ip = fbuf(n);
      odd_values(&rng, in, n);
      for (int64_t r = 0; r < nr; r++)
        cg_csr_dropout_row(&e, in, ref, r, (uint32_t)gid[r], p, scale, key.seed, key.epoch, key.layer);
      be1->csr_dropout(be1, &e, in, o1, gid, p, key);
      be3->csr_dropout(be3, &e, in, o3, gid, p, key);
      memcpy(ip, in, (size_t)n * sizeof(float));
      be3->csr_dropout(be3, &e, ip, ip, gid, p, key);
      print_message("  csr_dropout graph %d: %lld values%s\n", gi, (long long)n, n >= 16384 ? " (parallel)" : "");
      assert_memory_equal(o1, ref, (size_t)n * sizeof(float));
      assert_memory_equal(o3, ref, (size_t)n * sizeof(float));
      assert_memory_equal(ip, ref, (size_t)n * sizeof(float));
      free(in); free(ref); free(o1); free(o3); free(ip);
    }
    free(gid);
    free(deg);
    cg_edges_free(be1, &e);
    cg_csr_free(&a);
  }
}

/* edge_scores, edge_scores_bwd, spmm_edge and spmm_edge_bwd_x against core/attn.h's
 * per-element functions bit for bit, H = 1, 5, 8, strides wider than the rows (their
 * padding left as it was), 1 and 3 threads, rows and columns without edges, odd values. */
static void test_gat_loops_edges(void **state) {
  (void)state;
  struct tu_rng rng = {77};
  const int64_t nr = 203, nc = 211;
  int64_t deg[203];
  for (int64_t r = 0; r < nr; r++) deg[r] = r % 11 == 4 || r < 2 || r > nr - 3 ? 0 : 1 + tu_int(&rng, 40);
  struct cg_csr a = {0};
  make_deg_graph(&a, nr, nc, deg);
  struct cg_edges e;
  assert_int_equal(cg_edges_upload(be1, &a, &e), CG_OK);
  const int64_t m = a.nnz;
  const float pad = -12345.0f, slope = 0.2f;
  const int64_t Hs[3] = {1, 5, 8}, Fs[3] = {3, 1, 6};
  struct cg_backend *bes[2] = {be1, be3};
  for (int hi = 0; hi < 3; hi++) {
    const int64_t H = Hs[hi], F = Fs[hi], W = H * F, lde = H + 3, ldr = H + 1, ldx = W + 5, ldy = W + 2;
    float *el = fbuf(nc * lde), *er = fbuf(nr * ldr), *ds = fbuf(m * H), *al = fbuf(m * H), *x = fbuf(nc * ldx),
          *dy = fbuf(nr * ldy);
    odd_values(&rng, el, nc * lde);
    odd_values(&rng, er, nr * ldr);
    odd_values(&rng, ds, m * H);
    odd_values(&rng, al, m * H);
    odd_values(&rng, x, nc * ldx);
    odd_values(&rng, dy, nr * ldy);
    float *ws = fbuf(m * H), *wdel = fbuf(nc * lde), *wder = fbuf(nr * ldr), *wy = fbuf(nr * ldy),
          *wdx = fbuf(nc * ldx);
    for (int64_t v = 0; v < nr; v++)
      for (int64_t h = 0; h < H; h++) cg_attn_scores_rh(&e, el, lde, er, ldr, H, slope, ws, v, h);
    for (int64_t i = 0; i < nc * lde; i++) wdel[i] = pad;
    for (int64_t i = 0; i < nr * ldr; i++) wder[i] = pad;
    for (int64_t u = 0; u < nc; u++)
      for (int64_t h = 0; h < H; h++) cg_attn_scores_bwd_src(&e, ws, ds, H, slope, wdel, lde, u, h);
    for (int64_t v = 0; v < nr; v++)
      for (int64_t h = 0; h < H; h++) cg_attn_scores_bwd_dst(&e, ws, ds, H, slope, wder, ldr, v, h);
    for (int b = 0; b < 2; b++) {
      struct cg_backend *be = bes[b];
      float *s = fbuf(m * H), *del = fbuf(nc * lde), *der = fbuf(nr * ldr), *y = fbuf(nr * ldy),
            *dx = fbuf(nc * ldx);
      be->edge_scores(be, &e, el, lde, er, ldr, H, slope, s);
      assert_same_bits_nan("edge_scores", s, ws, m * H);
      for (int64_t i = 0; i < nc * lde; i++) del[i] = pad;
      for (int64_t i = 0; i < nr * ldr; i++) der[i] = pad;
      be->edge_scores_bwd(be, &e, ws, ds, H, slope, del, lde, der, ldr);
      assert_same_bits_nan("edge_scores_bwd del", del, wdel, nc * lde);
      assert_same_bits_nan("edge_scores_bwd der", der, wder, nr * ldr);
      for (int64_t i = 0; i < nr * ldy; i++) y[i] = pad;
      for (int64_t i = 0; i < nc * ldx; i++) dx[i] = pad;
      be->spmm_edge(be, &e, al, H, F, x, ldx, y, ldy);
      be->spmm_edge_bwd_x(be, &e, al, H, F, dy, ldy, dx, ldx);
      for (int64_t v = 0; v < nr; v++)
        for (int64_t c = 0; c < ldy; c++) wy[v * ldy + c] = c < W ? cg_attn_spmm_elem(&e, al, H, F, x, ldx, v, c) : pad;
      for (int64_t u = 0; u < nc; u++)
        for (int64_t c = 0; c < ldx; c++)
          wdx[u * ldx + c] = c < W ? cg_attn_spmm_bwd_x_elem(&e, al, H, F, dy, ldy, u, c) : pad;
      assert_same_bits_nan("spmm_edge", y, wy, nr * ldy);
      assert_same_bits_nan("spmm_edge_bwd_x", dx, wdx, nc * ldx);
      free(s); free(del); free(der); free(y); free(dx);
    }
    print_message("  GAT loops, H = %lld, F = %lld, %lld edges: the same bits as core/attn.h on 1 and 3 threads\n",
                  (long long)H, (long long)F, (long long)m);
    free(el); free(er); free(ds); free(al); free(x); free(dy); free(ws); free(wdel); free(wder); free(wy); free(wdx);
  }
  cg_edges_free(be1, &e);
  cg_csr_free(&a);
}

/* ---------------------------------------------------------------- thread counts */

static void test_thread_independence(void **state) {
  (void)state;
  struct tu_rng rng = {5};
  struct cg_csr a = {0};
  const int64_t nr = 700, nc = 800, H = 4, F = 8, W = H * F;
  make_graph(&a, nr, nc, 20, 8);
  struct cg_edges e1, e3;
  assert_int_equal(cg_edges_upload(be1, &a, &e1), CG_OK);
  assert_int_equal(cg_edges_upload(be3, &a, &e3), CG_OK);
  const int64_t m = a.nnz;
  float *el = fbuf(nc * H), *er = fbuf(nr * H), *x = fbuf(nc * W), *dy = fbuf(nr * W);
  frand(&rng, el, nc * H, -2, 2);
  frand(&rng, er, nr * H, -2, 2);
  frand(&rng, x, nc * W, -1, 1);
  frand(&rng, dy, nr * W, -1, 1);
  struct cg_backend *bes[2] = {be1, be3};
  const struct cg_edges *es[2] = {&e1, &e3};
  float *out[2][7];
  for (int b = 0; b < 2; b++) {
    struct cg_backend *be = bes[b];
    const struct cg_edges *e = es[b];
    float **o = out[b];
    o[0] = fbuf(m * H); /* s */
    o[1] = fbuf(m * H); /* alpha */
    o[2] = fbuf(nr * W); /* y */
    o[3] = fbuf(nc * W); /* dx */
    o[4] = fbuf(m * H); /* dalpha -> ds */
    o[5] = fbuf(nc * H); /* del */
    o[6] = fbuf(nr * H); /* der */
    be->edge_scores(be, e, el, H, er, H, H, 0.2f, o[0]);
    be->edge_softmax(be, e, o[0], H, o[1]);
    be->spmm_edge(be, e, o[1], H, F, x, W, o[2], W);
    be->spmm_edge_bwd_x(be, e, o[1], H, F, dy, W, o[3], W);
    be->spmm_edge_bwd_alpha(be, e, H, F, x, W, dy, W, o[4]);
    be->edge_softmax_bwd(be, e, o[1], o[4], H, o[4]);
    be->edge_scores_bwd(be, e, o[0], o[4], H, 0.2f, o[5], H, o[6], H);
  }
  const int64_t sizes[7] = {m * H, m * H, nr * W, nc * W, m * H, nc * H, nr * H};
  for (int i = 0; i < 7; i++) {
    assert_memory_equal(out[0][i], out[1][i], (size_t)sizes[i] * sizeof(float));
    free(out[0][i]);
    free(out[1][i]);
  }
  free(el); free(er); free(x); free(dy);
  cg_edges_free(be1, &e1);
  cg_edges_free(be3, &e3);
  cg_csr_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_softmax_stable),
      cmocka_unit_test(test_vector_exp_ops),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_backward_refs),
      cmocka_unit_test(test_gradcheck_chain),
      cmocka_unit_test(test_edge_dropout),
      cmocka_unit_test(test_thread_independence),
      cmocka_unit_test(test_dropout_kernels_edges),
      cmocka_unit_test(test_gat_loops_edges),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
