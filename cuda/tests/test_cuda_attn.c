/* cuda/tests/test_cuda_attn.c — the CUDA backend's graph attention ops against the
 * CPU backend on the same random graphs and inputs (ggml-style backend comparison):
 * edge scores and their backward, edge softmax and its backward (also on scores in
 * the thousands: the stable form), attention dropout (exact: the same Philox masks),
 * per-edge SpMM and both backward products, ELU forward and backward, and the
 * sparse-feature ops csr_mm, csr_mm_t and csr_dropout (exact: the same masks).
 *
 * Both backends run core/attn.h's element functions in the same order; the GPU's
 * expf/expm1f and nvcc's fused multiply-adds move the last bits, hence
 * |gpu - cpu| <= atol + rtol |cpu| (worst error printed). Two graphs: a small one
 * with empty rows and strided buffers, and one large enough that the capped grids
 * loop (and with a row of degree 3000).
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

#include "core/attn.h"
#include "core/csr.h"
#include "core/ops.h"
#include "core/status.h"
#include "cuda/cuda_backend.h"

static struct cg_backend *cpu, *gpu;

static uint64_t rng_state = 0x13198A2E03707344ull;
static double unif(double lo, double hi) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return lo + (hi - lo) * (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
static float *frand(int64_t n, double lo, double hi) {
  float *x = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
  assert_non_null(x);
  for (int64_t i = 0; i < n; i++) x[i] = (float)unif(lo, hi);
  return x;
}

/* A buffer of n floats on both backends, from host data (or zeros). */
struct both {
  float *c, *g;
  int64_t n;
};
static struct both up2(const float *host, int64_t n) {
  struct both b = {NULL, NULL, n};
  void *p = NULL;
  const size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
  float *zeros = host ? NULL : calloc((size_t)(n > 0 ? n : 1), sizeof(float));
  const float *src = host ? host : zeros;
  assert_int_equal(cpu->alloc(cpu, &p, bytes, "test"), CG_OK);
  b.c = p;
  assert_int_equal(gpu->alloc(gpu, &p, bytes, "test"), CG_OK);
  b.g = p;
  assert_int_equal(cpu->upload(cpu, b.c, src, bytes), CG_OK);
  assert_int_equal(gpu->upload(gpu, b.g, src, bytes), CG_OK);
  free(zeros);
  return b;
}
static void free2(struct both *b) {
  cpu->free(cpu, b->c);
  gpu->free(gpu, b->g);
}

static void cmp2(const char *what, const struct both *b, double atol, double rtol, int exact) {
  float *hc = malloc((size_t)(b->n > 0 ? b->n : 1) * sizeof(float));
  float *hg = malloc((size_t)(b->n > 0 ? b->n : 1) * sizeof(float));
  gpu->sync(gpu);
  assert_int_equal(cpu->download(cpu, hc, b->c, (size_t)b->n * sizeof(float)), CG_OK);
  assert_int_equal(gpu->download(gpu, hg, b->g, (size_t)b->n * sizeof(float)), CG_OK);
  double worst = 0.0;
  int64_t wi = 0, bad = 0;
  for (int64_t i = 0; i < b->n; i++) {
    const double err = fabs((double)hg[i] - (double)hc[i]);
    const double r = exact ? (err == 0.0 ? 0.0 : INFINITY) : err / (atol + rtol * fabs((double)hc[i]));
    if (!(r <= worst)) {
      worst = r;
      wi = i;
    }
    if (!(r <= 1.0)) bad++;
  }
  if (b->n > 0)
    printf("  %-26s %lld values, worst %.3g of tolerance at %lld (gpu %.9g, cpu %.9g)%s\n", what,
           (long long)b->n, worst, (long long)wi, (double)hg[wi], (double)hc[wi], exact ? ", exact" : "");
  free(hc);
  free(hg);
  assert_int_equal(bad, 0);
}

static void make_graph(struct cg_csr *a, int64_t nrows, int64_t ncols, int maxdeg, int64_t heavy) {
  int64_t *deg = calloc((size_t)nrows, sizeof *deg);
  int64_t nnz = 0;
  for (int64_t r = 0; r < nrows; r++) {
    deg[r] = unif(0, 1) < 0.1 ? 0 : 1 + (int64_t)(unif(0, 1) * maxdeg);
    if (r == nrows / 2 && heavy > 0) deg[r] = heavy;
    nnz += deg[r];
  }
  assert_int_equal(cg_csr_alloc(a, nrows, ncols, nnz, 0), CG_OK);
  for (int64_t r = 0; r < nrows; r++) a->rowptr[r + 1] = a->rowptr[r] + deg[r];
  for (int64_t k = 0; k < nnz; k++) a->colidx[k] = (int32_t)(unif(0, 1) * (double)ncols);
  free(deg);
}

static void run_case(int64_t nr, int64_t nc, int maxdeg, int64_t heavy, int64_t H, int64_t F,
                     int64_t pad, double score_range) {
  struct cg_csr a = {0};
  make_graph(&a, nr, nc, maxdeg, heavy);
  printf(" graph %lld x %lld, %lld edges, %lld heads x %lld\n", (long long)nr, (long long)nc,
         (long long)a.nnz, (long long)H, (long long)F);
  struct cg_edges ec, eg;
  assert_int_equal(cg_edges_upload(cpu, &a, &ec), CG_OK);
  assert_int_equal(cg_edges_upload(gpu, &a, &eg), CG_OK);
  const int64_t m = a.nnz, W = H * F, lde = H + pad, ldr = H + pad, ldx = W + pad;
  float *h_el = frand(nc * lde, -score_range, score_range), *h_er = frand(nr * ldr, -score_range, score_range);
  float *h_x = frand(nc * ldx, -1, 1), *h_dy = frand(nr * W, -1, 1), *h_dal = frand(m * H, -1, 1);
  float *h_z = frand(nr * W, -4, 4);
  int32_t *h_gid = malloc((size_t)nc * sizeof(int32_t));
  for (int64_t i = 0; i < nc; i++) h_gid[i] = (int32_t)(nc - 1 - i) * 3;
  void *p;
  assert_int_equal(cpu->alloc(cpu, &p, (size_t)nc * sizeof(int32_t), "gid"), CG_OK);
  int32_t *gid_c = p;
  assert_int_equal(gpu->alloc(gpu, &p, (size_t)nc * sizeof(int32_t), "gid"), CG_OK);
  int32_t *gid_g = p;
  assert_int_equal(cpu->upload(cpu, gid_c, h_gid, (size_t)nc * sizeof(int32_t)), CG_OK);
  assert_int_equal(gpu->upload(gpu, gid_g, h_gid, (size_t)nc * sizeof(int32_t)), CG_OK);

  struct both el = up2(h_el, nc * lde), er = up2(h_er, nr * ldr), x = up2(h_x, nc * ldx),
              dy = up2(h_dy, nr * W), dal = up2(h_dal, m * H), s = up2(NULL, m * H),
              al = up2(NULL, m * H), ad = up2(NULL, m * H), y = up2(NULL, nr * W),
              dx = up2(NULL, nc * W), da = up2(NULL, m * H), ds = up2(NULL, m * H),
              del = up2(NULL, nc * lde), der = up2(NULL, nr * ldr), z = up2(h_z, nr * W),
              zy = up2(NULL, nr * W);
  const struct cg_dropout_key key = {12345, 7, 1};
  cpu->edge_scores(cpu, &ec, el.c, lde, er.c, ldr, H, 0.2f, s.c);
  gpu->edge_scores(gpu, &eg, el.g, lde, er.g, ldr, H, 0.2f, s.g);
  cmp2("edge_scores", &s, 1e-6, 1e-6, 0);
  /* the rest reads the CPU's scores on both sides, so each op is compared alone */
  assert_int_equal(gpu->upload(gpu, s.g, s.c, (size_t)(m * H) * sizeof(float)), CG_OK);
  cpu->edge_softmax(cpu, &ec, s.c, H, al.c);
  gpu->edge_softmax(gpu, &eg, s.g, H, al.g);
  cmp2("edge_softmax", &al, 1e-7, 1e-5, 0);
  assert_int_equal(gpu->upload(gpu, al.g, al.c, (size_t)(m * H) * sizeof(float)), CG_OK);
  cpu->edge_dropout(cpu, &ec, al.c, ad.c, H, gid_c, 0.6f, key);
  gpu->edge_dropout(gpu, &eg, al.g, ad.g, H, gid_g, 0.6f, key);
  cmp2("edge_dropout", &ad, 0, 0, 1);
  cpu->spmm_edge(cpu, &ec, ad.c, H, F, x.c, ldx, y.c, W);
  gpu->spmm_edge(gpu, &eg, ad.g, H, F, x.g, ldx, y.g, W);
  cmp2("spmm_edge", &y, 1e-5, 1e-4, 0);
  cpu->spmm_edge_bwd_x(cpu, &ec, ad.c, H, F, dy.c, W, dx.c, W);
  gpu->spmm_edge_bwd_x(gpu, &eg, ad.g, H, F, dy.g, W, dx.g, W);
  cmp2("spmm_edge_bwd_x", &dx, 1e-5, 1e-4, 0);
  cpu->spmm_edge_bwd_alpha(cpu, &ec, H, F, x.c, ldx, dy.c, W, da.c);
  gpu->spmm_edge_bwd_alpha(gpu, &eg, H, F, x.g, ldx, dy.g, W, da.g);
  cmp2("spmm_edge_bwd_alpha", &da, 1e-5, 1e-4, 0);
  /* sparse input features (issue #14): X = the graph's structure with the values vx */
  struct both vx = up2(h_dal, m), xy = up2(NULL, nr * W), xg = up2(NULL, nc * W), xd = up2(NULL, m);
  cpu->csr_mm(cpu, &ec, vx.c, W, x.c, ldx, xy.c, W);
  gpu->csr_mm(gpu, &eg, vx.g, W, x.g, ldx, xy.g, W);
  cmp2("csr_mm", &xy, 1e-5, 1e-4, 0);
  cpu->csr_mm_t(cpu, &ec, vx.c, W, dy.c, W, xg.c, W);
  gpu->csr_mm_t(gpu, &eg, vx.g, W, dy.g, W, xg.g, W);
  cmp2("csr_mm_t", &xg, 1e-5, 1e-4, 0);
  cpu->csr_dropout(cpu, &ec, vx.c, xd.c, gid_c, 0.3f, key);
  gpu->csr_dropout(gpu, &eg, vx.g, xd.g, gid_g, 0.3f, key);
  cmp2("csr_dropout", &xd, 0, 0, 1);
  free2(&vx);
  free2(&xy);
  free2(&xg);
  free2(&xd);
  cpu->edge_softmax_bwd(cpu, &ec, al.c, dal.c, H, ds.c);
  gpu->edge_softmax_bwd(gpu, &eg, al.g, dal.g, H, ds.g);
  cmp2("edge_softmax_bwd", &ds, 1e-6, 1e-4, 0);
  assert_int_equal(gpu->upload(gpu, ds.g, ds.c, (size_t)(m * H) * sizeof(float)), CG_OK);
  cpu->edge_scores_bwd(cpu, &ec, s.c, ds.c, H, 0.2f, del.c, lde, der.c, ldr);
  gpu->edge_scores_bwd(gpu, &eg, s.g, ds.g, H, 0.2f, del.g, lde, der.g, ldr);
  cmp2("edge_scores_bwd del", &del, 1e-6, 1e-4, 0);
  cmp2("edge_scores_bwd der", &der, 1e-6, 1e-4, 0);
  cpu->elu_fwd(cpu, z.c, zy.c, nr * W);
  gpu->elu_fwd(gpu, z.g, zy.g, nr * W);
  cmp2("elu_fwd", &zy, 1e-7, 1e-6, 0);
  assert_int_equal(gpu->upload(gpu, zy.g, zy.c, (size_t)(nr * W) * sizeof(float)), CG_OK);
  cpu->elu_bwd(cpu, zy.c, dy.c, nr * W);
  gpu->elu_bwd(gpu, zy.g, dy.g, nr * W);
  cmp2("elu_bwd", &dy, 1e-7, 1e-6, 0);

  struct both *all[] = {&el, &er, &x, &dy, &dal, &s, &al, &ad, &y, &dx, &da, &ds, &del, &der, &z, &zy};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free2(all[i]);
  cpu->free(cpu, gid_c);
  gpu->free(gpu, gid_g);
  free(h_el); free(h_er); free(h_x); free(h_dy); free(h_dal); free(h_z); free(h_gid);
  cg_edges_free(cpu, &ec);
  cg_edges_free(gpu, &eg);
  cg_csr_free(&a);
}

static void test_small(void **state) {
  (void)state;
  run_case(97, 131, 12, 0, 3, 5, 2, 2.0);
}
static void test_large(void **state) {
  (void)state;
  run_case(60000, 70000, 40, 3000, 8, 8, 0, 2.0);
}
static void test_large_scores(void **state) { /* scores in the thousands: stable softmax */
  (void)state;
  run_case(500, 600, 30, 0, 2, 4, 1, 3000.0);
}

static int group_setup(void **state) {
  (void)state;
  if (cg_backend_cpu_create(2, &cpu) != CG_OK) return -1;
  if (cg_backend_cuda_create(0, 0, &gpu) != CG_OK) {
    cg_err_report("test_cuda_attn");
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

int main(void) {
  if (cg_cuda_device_count() <= 0) {
    printf("test_cuda_attn: no CUDA device visible; skipping\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_small), cmocka_unit_test(test_large),
                                     cmocka_unit_test(test_large_scores)};
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
