/* cuda/tests/test_elementwise_emu.cc — the elementwise, dropout, halo-row and
 * column-sum kernels' own source (cuda/elementwise.cu), run on the CPU through
 * cuda/tests/cuda_emu.h, against the CPU backend's ops (core/cpu_backend.c through
 * the op table of core/ops.h). No GPU needed.
 *
 * The launchers are left out under emulation; each kernel is launched here as its
 * launcher launches it (the file's own grid_for and kThreads; cgk_dropout's and
 * cgk_colsum's branches and chunk arithmetic are mirrored line for line below, marked
 * "mirrors"), and also on a small grid (3 blocks of 64 threads) on which every
 * thread strides over several elements. Sizes leave remainders: 1, 257 and 5003
 * elements, widths 1, 41, 256 and 602.
 * - fill, axpy, scale, scale_strided (the CPU gemm with k = 0: C = beta C), bias_add,
 *   relu_fwd (also in place), relu_bwd, dropout (the float4 and the scalar path, and
 *   p = 0 through copy_kernel, p = 1 through fill_kernel), gather_rows: the same
 *   float operations as the CPU, so the same bits, on data with NaN, infinities,
 *   signed zeros and subnormals (on a target with FMA, where either build may fuse
 *   axpy's y + a x, axpy is allowed the roundings that fusing changes);
 * - scatter_add_rows: atomicAdd in the scheduler's order into repeated rows. On values
 *   that are small multiples of 1/8 every order gives the exact sum: same bits. On
 *   random values: within the bound of two orders of k float additions;
 * - colsum (bias_grad; layernorm's dgamma / dbeta): the same float terms, summed in
 *   double in another order (chunks of the launcher vs the CPU's blocks), then
 *   rounded to float: within 1 ulp plus the bound of two orders of double sums; no
 *   rows, even with NULL for them: zeros in every output, as the CPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "cuda_emu.h"
#include "emu_rand.h"

extern "C" {
#include <cmocka.h>
}

#include "core/ops.h"
#include "emu_compare.h"
#include "cuda/elementwise.cu"

namespace {

emu_rng rng{777};
double unif(double lo, double hi) { return rng.unif(lo, hi); }
std::vector<float> rand_vec(int64_t n, double lo, double hi) { return rng.vec(n, lo, hi); }
/* Random values with NaN, infinities, signed zeros and subnormals among them. */
std::vector<float> special_vec(int64_t n) {
  std::vector<float> v = rand_vec(n, -2.0, 2.0);
  for (int64_t i = 0; i < n; i++) {
    const int k = (int)(i % 17);
    if (k == 3) v[(size_t)i] = NAN;
    else if (k == 5) v[(size_t)i] = INFINITY;
    else if (k == 7) v[(size_t)i] = -INFINITY;
    else if (k == 9) v[(size_t)i] = -0.0f;
    else if (k == 11) v[(size_t)i] = 0.0f;
    else if (k == 13) v[(size_t)i] = i % 2 ? 1e-40f : -3e-42f;
  }
  return v;
}

struct shape {
  unsigned grid, threads;
};
/* The launchers' shape for n elements, and a small grid on which threads stride. */
std::vector<shape> shapes_for(int64_t n) { return {{grid_for(n), (unsigned)kThreads}, {3, 64}}; }

cg_backend *cpu_backend() {
  cg_backend *be = nullptr;
  assert_int_equal(cg_backend_cpu_create(2, &be), 0);
  return be;
}

const int64_t kSizes[] = {1, 257, 5003};

void test_fill_axpy_scale(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  for (int64_t n : kSizes)
    for (const shape &s : shapes_for(n)) {
      printf("n=%lld, grid %u x %u\n", (long long)n, s.grid, s.threads);
      for (float v : {3.25f, -0.0f, (float)NAN}) {
        std::vector<float> k = special_vec(n), c = k;
        emu_launch(s.grid, s.threads, fill_kernel, k.data(), n, v);
        be->fill(be, c.data(), n, v);
        same("fill", k, c);
      }
      /* x and y NaN at different places: one NaN operand, whose payload both keep */
      std::vector<float> x = special_vec(n), y = rand_vec(n, -4.0, 4.0);
      for (int64_t i = 0; i < n; i += 19) y[(size_t)i] = i % 2 ? -INFINITY : 1e-39f;
      for (float a : {-0.75f, 0.0f}) { /* 0 * inf: NaN on both */
        std::vector<float> k = y, c = y;
        emu_launch(s.grid, s.threads, axpy_kernel, n, a, (const float *)x.data(), k.data());
        be->axpy(be, n, a, x.data(), c.data());
#if defined(__FP_FAST_FMAF)
        /* a target with FMA: either build may fuse y + a x or not; the two differ by
         * the product's rounding (half an ulp of a x) and the sum's (an ulp of y) */
        for (int64_t i = 0; i < n; i++) {
          const float ki = k[(size_t)i], ci = c[(size_t)i];
          if (memcmp(&ki, &ci, sizeof ki) != 0)
            assert_true(isfinite(ki) && isfinite(ci) &&
                        fabs((double)ki - (double)ci) <= (double)ulp(ci) + (double)ulp(a * x[(size_t)i]));
        }
        printf("  axpy: %lld values, within an ulp of the sum and of the product (FMA target)\n", (long long)n);
#else
        same("axpy", k, c);
#endif
        k = x;
        c = x;
        emu_launch(s.grid, s.threads, scale_kernel, n, a, k.data());
        be->scale(be, n, a, c.data());
        same("scale", k, c);
      }
    }
  cg_backend_destroy(&be);
}

/* scale_strided_kernel is the CUDA gemm's k = 0 case (cu_gemm: C = beta C, beta = 0
 * writing zeros over NaN), the CPU gemm's k = 0 branch; the padding past cols stays. */
void test_scale_strided(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const int64_t dims[][3] = {{1, 1, 1}, {37, 41, 45}, {9, 602, 602}, {300, 1, 3}};
  for (const auto &d : dims) {
    const int64_t rows = d[0], cols = d[1], ld = d[2];
    for (const shape &s : shapes_for(rows * cols))
      for (float beta : {0.0f, 0.5f, -2.0f}) {
        std::vector<float> k = special_vec(rows * ld), c = k;
        emu_launch(s.grid, s.threads, scale_strided_kernel, k.data(), rows, cols, ld, beta);
        be->gemm(be, 0, 0, rows, cols, 0, 1.0f, nullptr, 1, nullptr, cols, beta, c.data(), ld);
        printf("rows=%lld cols=%lld ld=%lld beta=%g, grid %u x %u\n", (long long)rows, (long long)cols,
               (long long)ld, (double)beta, s.grid, s.threads);
        same("scale_strided (padding included)", k, c);
      }
  }
  cg_backend_destroy(&be);
}

void test_bias_relu(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const int64_t dims[][2] = {{1, 1}, {37, 41}, {9, 602}, {300, 1}, {3, 256}};
  for (const auto &d : dims) {
    const int64_t rows = d[0], cols = d[1], n = rows * cols;
    for (const shape &s : shapes_for(n)) {
      printf("rows=%lld cols=%lld, grid %u x %u\n", (long long)rows, (long long)cols, s.grid, s.threads);
      const std::vector<float> bias = special_vec(cols), y = rand_vec(n, -3.0, 3.0);
      std::vector<float> k = y, c = y;
      emu_launch(s.grid, s.threads, bias_add_kernel, k.data(), (const float *)bias.data(), rows, cols);
      be->bias_add(be, c.data(), bias.data(), rows, cols);
      same("bias_add", k, c);
      const std::vector<float> x = special_vec(n);
      std::vector<float> ky(x.size(), 5.0f), cy(x.size(), 5.0f);
      emu_launch(s.grid, s.threads, relu_fwd_kernel, (const float *)x.data(), ky.data(), n);
      be->relu_fwd(be, x.data(), cy.data(), n);
      same("relu_fwd", ky, cy);
      k = x; /* in place, y == x */
      c = x;
      emu_launch(s.grid, s.threads, relu_fwd_kernel, (const float *)k.data(), k.data(), n);
      be->relu_fwd(be, c.data(), c.data(), n);
      same("relu_fwd in place", k, c);
      /* relu_bwd reads the ReLU output: zeros, positives, subnormals, +inf, NaN */
      std::vector<float> dk = special_vec(n), dc = dk;
      emu_launch(s.grid, s.threads, relu_bwd_kernel, (const float *)cy.data(), dk.data(), n);
      be->relu_bwd(be, cy.data(), dc.data(), n);
      same("relu_bwd", dk, dc);
    }
  }
  cg_backend_destroy(&be);
}

/* Mirrors cgk_dropout (cuda/elementwise.cu) on the emulator. */
void emu_dropout(const float *in, float *out, int64_t rows, int64_t cols, const int32_t *gid, float p,
                 uint64_t seed, uint32_t epoch, uint32_t layer, unsigned grid_override = 0,
                 unsigned threads_override = 0) {
  if (rows <= 0 || cols <= 0) return;
  const unsigned th = threads_override ? threads_override : (unsigned)kThreads;
  if (p <= 0.0f) {
    if (in != out)
      emu_launch(grid_override ? grid_override : grid_for(rows * cols), th, copy_kernel, in, out, rows * cols);
    return;
  }
  if (p >= 1.0f) {
    emu_launch(grid_override ? grid_override : grid_for(rows * cols), th, fill_kernel, out, rows * cols, 0.0f);
    return;
  }
  float inv_keep = 1.0f / (1.0f - p);
  int64_t work = rows * ((cols + 3) / 4);
  const bool vec4 = cols % 4 == 0 && ((uintptr_t)in | (uintptr_t)out) % 16 == 0;
  const unsigned g = grid_override ? grid_override : grid_for(work);
  if (vec4)
    emu_launch(g, th, dropout_kernel<true>, in, out, rows, cols, gid, p, inv_keep, seed, epoch, layer);
  else
    emu_launch(g, th, dropout_kernel<false>, in, out, rows, cols, gid, p, inv_keep, seed, epoch, layer);
}

/* The mask is core/philox.h's on both backends: the same bits, on the float4 path
 * (cols % 4 == 0, 16-byte aligned), the scalar path (cols 41; cols 256 from a
 * misaligned pointer), in place, and p = 0 (copy_kernel) and p = 1 (fill_kernel). */
void test_dropout(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const cg_dropout_key key = {0x123456789abcdefull, 7, 2};
  const int64_t dims[][2] = {{37, 41}, {9, 256}, {300, 1}, {5, 602}};
  for (const auto &d : dims) {
    const int64_t rows = d[0], cols = d[1], n = rows * cols;
    std::vector<int32_t> gid((size_t)rows);
    for (int64_t r = 0; r < rows; r++) gid[(size_t)r] = (int32_t)(1000 + 3 * r);
    for (int misalign = 0; misalign < (cols % 4 == 0 ? 2 : 1); misalign++)
      for (float p : {0.5f, 0.1f, 0.0f, 1.0f})
        for (int small = 0; small < (p > 0.0f && p < 1.0f ? 2 : 1); small++) {
          const std::vector<float> in = special_vec(n + 1);
          std::vector<float> k(in.size(), 9.0f), c = k;
          const float *src = in.data() + misalign;
          emu_dropout(src, k.data() + misalign, rows, cols, gid.data(), p, key.seed, key.epoch, key.layer,
                      small ? 3 : 0, small ? 64 : 0);
          be->dropout(be, src, c.data() + misalign, rows, cols, gid.data(), p, key);
          const bool vec4 = cols % 4 == 0 && !misalign;
          printf("rows=%lld cols=%lld p=%g %s%s\n", (long long)rows, (long long)cols, (double)p,
                 p <= 0.0f ? "copy_kernel" : p >= 1.0f ? "fill_kernel" : vec4 ? "float4 path" : "scalar path",
                 small ? ", grid 3 x 64" : "");
          same("dropout", k, c);
          std::vector<float> ki(in.begin(), in.end()), ci = ki; /* in place */
          emu_dropout(ki.data() + misalign, ki.data() + misalign, rows, cols, gid.data(), p, key.seed, key.epoch,
                      key.layer, small ? 3 : 0, small ? 64 : 0);
          be->dropout(be, ci.data() + misalign, ci.data() + misalign, rows, cols, gid.data(), p, key);
          same("dropout in place", ki, ci);
        }
  }
  cg_backend_destroy(&be);
}

void test_gather_scatter_rows(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const int64_t widths[] = {1, 41, 256, 602};
  const int64_t src_rows = 13, n = 23; /* n > src_rows: indices repeat */
  for (int64_t cols : widths) {
    std::vector<int32_t> idx((size_t)n);
    for (int64_t i = 0; i < n; i++) idx[(size_t)i] = (int32_t)((i * 7 + (i % 3 == 0 ? 5 : 0)) % src_rows);
    idx[0] = idx[1] = idx[2] = 4; /* a row written three times by neighbouring threads */
    for (const shape &s : shapes_for(n * cols)) {
      printf("cols=%lld, %lld rows from %lld, grid %u x %u\n", (long long)cols, (long long)n, (long long)src_rows,
             s.grid, s.threads);
      const std::vector<float> src = special_vec(src_rows * cols);
      std::vector<float> k((size_t)(n * cols), 9.0f), c = k;
      emu_launch(s.grid, s.threads, gather_rows_kernel, (const float *)src.data(), cols, (const int32_t *)idx.data(),
                 n, k.data());
      be->gather_rows(be, src.data(), cols, idx.data(), n, c.data());
      same("gather_rows", k, c);

      /* Multiples of 1/8 below 2^10: every partial sum is exact, whatever the order. */
      std::vector<float> add((size_t)(n * cols)), base((size_t)(src_rows * cols));
      for (auto &v : add) v = (float)floor(unif(-64.0, 64.0) * 8.0) / 8.0f;
      for (auto &v : base) v = (float)floor(unif(-64.0, 64.0) * 8.0) / 8.0f;
      k = base;
      c = base;
      emu_launch(s.grid, s.threads, scatter_add_rows_kernel, (const float *)add.data(), cols,
                 (const int32_t *)idx.data(), n, k.data());
      be->scatter_add_rows(be, add.data(), cols, idx.data(), n, c.data());
      same("scatter_add_rows (exact sums)", k, c);

      /* Random values: an element receiving m additions (plus its start value) is, in
       * any order, within m * 2^-24 * sum|terms| of the exact sum (each float addition
       * rounds by at most 2^-24 times a partial sum's magnitude <= sum|terms|), so two
       * orders are within twice that. */
      const std::vector<float> radd = rand_vec(n * cols, -1.0, 1.0), rbase = rand_vec(src_rows * cols, -1.0, 1.0);
      std::vector<double> mag(rbase.size()), tol(rbase.size());
      std::vector<int> hits(rbase.size(), 0);
      for (size_t i = 0; i < rbase.size(); i++) mag[i] = fabs((double)rbase[i]);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < cols; j++) {
          const size_t e = (size_t)(idx[(size_t)i] * cols + j);
          mag[e] += fabs((double)radd[(size_t)(i * cols + j)]);
          hits[e]++;
        }
      for (size_t i = 0; i < tol.size(); i++) tol[i] = 2.0 * hits[i] * ldexp(1.0, -24) * mag[i] + 1e-30;
      k = rbase;
      c = rbase;
      emu_launch(s.grid, s.threads, scatter_add_rows_kernel, (const float *)radd.data(), cols,
                 (const int32_t *)idx.data(), n, k.data());
      be->scatter_add_rows(be, radd.data(), cols, idx.data(), n, c.data());
      within("scatter_add_rows (random values)", k, c, tol);
    }
  }
  cg_backend_destroy(&be);
}

/* Mirrors cgk_colsum (cuda/elementwise.cu) on the emulator, line for line. */
void emu_colsum(int layernorm, const float *dy, const float *x, const float *mean, const float *rstd, int64_t rows,
                int64_t cols, float *out1, float *out2, double *scratch, size_t scratch_doubles, int64_t *nch_used) {
  *nch_used = 0;
  if (cols <= 0) return;
  const bool ln = layernorm != 0;
  if (rows <= 0) {
    emu_launch(grid_for(cols), kThreads, fill_kernel, out1, cols, 0.0f);
    if (ln) emu_launch(grid_for(cols), kThreads, fill_kernel, out2, cols, 0.0f);
    return;
  }
  int64_t nch = (rows + 63) / 64;
  if (nch > 1024) nch = 1024;
  int64_t fit = (int64_t)(scratch_doubles / (size_t)(2 * cols));
  if (nch > fit) nch = fit;
  if (nch < 1) nch = 1;
  int64_t chunk = (rows + nch - 1) / nch;
  nch = (rows + chunk - 1) / chunk;
  *nch_used = nch;
  dim3 grid((unsigned)((cols + 31) / 32), (unsigned)nch);
  dim3 block(32, 8);
  if (nch == 1) {
    if (ln)
      emu_launch(grid, block, colsum_partial_kernel<true, float>, dy, x, mean, rstd, rows, cols, chunk, out1, out2);
    else
      emu_launch(grid, block, colsum_partial_kernel<false, float>, dy, x, mean, rstd, rows, cols, chunk, out1, out2);
    return;
  }
  double *p1 = scratch, *p2 = scratch + nch * cols;
  if (ln)
    emu_launch(grid, block, colsum_partial_kernel<true, double>, dy, x, mean, rstd, rows, cols, chunk, p1, p2);
  else
    emu_launch(grid, block, colsum_partial_kernel<false, double>, dy, x, mean, rstd, rows, cols, chunk, p1, p2);
  emu_launch(grid_for(cols), kThreads, colsum_final_kernel, (const double *)p1, nch, cols, out1);
  if (ln) emu_launch(grid_for(cols), kThreads, colsum_final_kernel, (const double *)p2, nch, cols, out2);
}

/* Both sum the same float terms in double, in different orders: each double sum is
 * within (rows - 1) 2^-53 sum|terms| of the exact one, so the two within twice that;
 * rounding to float then adds at most one ulp of the result. */
std::vector<double> colsum_tol(const std::vector<double> &mag, int64_t rows, const std::vector<float> &cpu) {
  std::vector<double> tol(mag.size());
  for (size_t j = 0; j < mag.size(); j++)
    tol[j] = (double)ulp(cpu[j]) + 2.0 * (double)rows * ldexp(1.0, -53) * mag[j];
  return tol;
}

/* bias_grad (colsum of dy) and layernorm_bwd's dgamma / dbeta (colsum of
 * dy * xhat and of dy), with one chunk (the partial kernel writes the result), several
 * chunks (partials in the scratch, then colsum_final_kernel), chunks limited by a
 * small scratch, and rows = 0 (zeros). */
void test_colsum(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  struct cs {
    int64_t rows, cols;
    size_t scratch;
  };
  const cs cases[] = {{1, 41, 1 << 20},   {64, 256, 1 << 20}, {400, 41, 1 << 20},
                      {130, 602, 1 << 20}, {300, 1, 6},        {0, 41, 1 << 20}};
  for (const cs &t : cases) {
    const int64_t rows = t.rows, cols = t.cols;
    /* at least one element (rows = 0 with NULL pointers: below) */
    const int64_t n = std::max<int64_t>(rows * cols, 1), nr = std::max<int64_t>(rows, 1);
    std::vector<float> dy = rand_vec(n, -1.0, 1.0), x = rand_vec(n, -3.0, 5.0);
    std::vector<float> mean = rand_vec(nr, 0.0, 2.0), rstd = rand_vec(nr, 0.5, 2.0), gamma(cols, 1.0f);
    for (int64_t i = 0; i < rows * cols; i += 29) dy[(size_t)i] = 0.0f;
    std::vector<double> scratch(t.scratch, -1.0);
    int64_t nch = 0;

    std::vector<float> k1(cols, 7.0f), c1(cols, 7.0f), k2(cols, 7.0f), c2(cols, 7.0f);
    emu_colsum(0, dy.data(), nullptr, nullptr, nullptr, rows, cols, k1.data(), nullptr, scratch.data(), t.scratch,
               &nch);
    be->bias_grad(be, dy.data(), rows, cols, c1.data());
    std::vector<double> mag1((size_t)cols, 0.0), mag2((size_t)cols, 0.0);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) {
        const float d = dy[(size_t)(r * cols + c)];
        mag2[(size_t)c] += fabs((double)d);
        mag1[(size_t)c] += fabs((double)(d * ((x[(size_t)(r * cols + c)] - mean[(size_t)r]) * rstd[(size_t)r])));
      }
    printf("rows=%lld cols=%lld scratch %zu doubles: %lld chunk(s), grid (%lld, %lld) x (32, 8)\n", (long long)rows,
           (long long)cols, t.scratch, (long long)nch, (long long)((cols + 31) / 32), (long long)nch);
    within("bias_grad (colsum of dy)", k1, c1, colsum_tol(mag2, rows, c1));

    std::vector<float> dxc((size_t)n);
    emu_colsum(1, dy.data(), x.data(), mean.data(), rstd.data(), rows, cols, k1.data(), k2.data(), scratch.data(),
               t.scratch, &nch);
    be->layernorm_bwd(be, dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(), rows, cols, dxc.data(),
                      c1.data(), c2.data());
    within("layernorm dgamma (colsum of dy * xhat)", k1, c1, colsum_tol(mag1, rows, c1));
    within("layernorm dbeta (colsum of dy)", k2, c2, colsum_tol(mag2, rows, c2));
  }
  /* no rows, and no pointers to them (a caller of the op table may pass NULL for empty
   * rows; the CPU backend reads nothing): zeros in dgamma and dbeta, and in the bias
   * gradient */
  for (int64_t cols : {(int64_t)1, (int64_t)41, (int64_t)602}) {
    std::vector<double> scratch(1 << 10, -1.0);
    int64_t nch = -1;
    std::vector<float> k1(cols, 7.0f), c1(cols, 7.0f), k2(cols, 7.0f), c2(cols, 7.0f);
    emu_colsum(1, nullptr, nullptr, nullptr, nullptr, 0, cols, k1.data(), k2.data(), scratch.data(), scratch.size(),
               &nch);
    be->layernorm_bwd(be, nullptr, nullptr, nullptr, nullptr, nullptr, 0, cols, nullptr, c1.data(), c2.data());
    printf("rows=0 cols=%lld, NULL rows:\n", (long long)cols);
    same("layernorm dgamma", k1, c1);
    same("layernorm dbeta", k2, c2);
    std::fill(k1.begin(), k1.end(), 7.0f);
    std::fill(c1.begin(), c1.end(), 7.0f);
    emu_colsum(0, nullptr, nullptr, nullptr, nullptr, 0, cols, k1.data(), nullptr, scratch.data(), scratch.size(),
               &nch);
    be->bias_grad(be, nullptr, 0, cols, c1.data());
    same("bias_grad", k1, c1);
  }
  cg_backend_destroy(&be);
}

} // namespace

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_fill_axpy_scale), cmocka_unit_test(test_scale_strided),
                                     cmocka_unit_test(test_bias_relu),       cmocka_unit_test(test_dropout),
                                     cmocka_unit_test(test_gather_scatter_rows), cmocka_unit_test(test_colsum)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
