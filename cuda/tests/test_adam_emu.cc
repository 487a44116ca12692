/* cuda/tests/test_adam_emu.cc — the Adam kernel's own source (cuda/elementwise.cu),
 * run on the CPU through cuda/tests/cuda_emu.h, against the CPU backend and an
 * independent reference. No GPU needed.
 *
 * Both backends update each element with core/adam.h's cg_adam_update and the
 * coefficients of cg_adam_coefs_make. Checked over 6 steps for Adam with weight
 * decay, AdamW and Adam without decay, on sizes that leave grid-stride remainders
 * (and one above the CPU backend's threading threshold):
 * - the emulated kernel equals the CPU backend bit for bit: the same source built
 *   by the same host compiler (when the target has no fast FMA: a compiler that
 *   contracts may contract the two loops differently, then a few ulps are allowed).
 *   This shows the kernel hands every element, with the right coefficients, to the
 *   shared update; nvcc's own contraction on the GPU is left to test_cuda_ops;
 * - both match the update written out in double (torch.optim.Adam / AdamW) within
 *   |x - ref| <= atol + rtol |ref|, worst error printed.
 * The SGD kernel (core/sgd.h's cg_sgd_update) likewise, with and without momentum and
 * weight decay, against torch.optim.SGD written out in double; and the elementwise kernel
 * dropout_relu_bwd against the CPU backend's op. */
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

#include "core/adam.h"
#include "core/sgd.h"
#include "core/ops.h"
#include "cuda/elementwise.cu"

namespace {

emu_rng rng{2024};
double unif(double lo, double hi) { return rng.unif(lo, hi); }

/* torch.optim.Adam / AdamW in double, from the parameters (not from core/adam.h).
 * ma is m with every term taken in absolute value: m is a running sum of gradients
 * of both signs, so its float rounding error scales with ma, not with m. */
struct ref_state {
  std::vector<double> w, m, v, ma;
};
void ref_step(ref_state &r, const std::vector<float> &g, const cg_adam_params &p, int64_t t) {
  const double lr = p.lr, b1 = p.beta1, b2 = p.beta2, eps = p.eps, wd = p.weight_decay;
  const double bc1 = 1.0 - pow(b1, (double)t), bc2 = 1.0 - pow(b2, (double)t);
  for (size_t i = 0; i < r.w.size(); i++) {
    double gi = g[i];
    if (p.decoupled) r.w[i] *= 1.0 - lr * wd;
    else gi += wd * r.w[i];
    r.m[i] = b1 * r.m[i] + (1.0 - b1) * gi;
    r.ma[i] = b1 * r.ma[i] + (1.0 - b1) * fabs(gi);
    r.v[i] = b2 * r.v[i] + (1.0 - b2) * gi * gi;
    const double mhat = r.m[i] / bc1, vhat = r.v[i] / bc2;
    r.w[i] -= lr * mhat / (sqrt(vhat) + eps);
  }
}

/* Largest |got - ref| / (atol + rtol (|ref| + mag)) (mag: the size of the terms
 * summed into ref, NULL for none); 1 or less passes. */
double worst_ratio(const char *what, const std::vector<float> &got, const std::vector<double> &ref,
                   const std::vector<double> *mag, double atol, double rtol) {
  double worst = 0.0;
  size_t wi = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double err = fabs((double)got[i] - ref[i]);
    const double scale = fabs(ref[i]) + (mag ? (*mag)[i] : 0.0);
    const double ratio = isnan(err) ? INFINITY : err / (atol + rtol * scale);
    if (ratio > worst) {
      worst = ratio;
      wi = i;
    }
  }
  if (worst > 1.0)
    printf("    %s: element %zu is %.9g, reference %.12g (%.3g of the tolerance)\n", what, wi,
           (double)got[wi], ref[wi], worst);
  return worst;
}

/* Largest distance in ulps between a and b (bit patterns of finite floats). */
int64_t max_ulps(const std::vector<float> &a, const std::vector<float> &b) {
  int64_t worst = 0;
  for (size_t i = 0; i < a.size(); i++) {
    int32_t x, y;
    memcpy(&x, &a[i], 4);
    memcpy(&y, &b[i], 4);
    if (x < 0) x = INT32_MIN - x; /* monotone integer order */
    if (y < 0) y = INT32_MIN - y;
    const int64_t d = x > y ? (int64_t)x - y : (int64_t)y - x;
    if (d > worst) worst = d;
  }
  return worst;
}

#if defined(__FP_FAST_FMAF)
constexpr int64_t kMaxUlps = 4; /* contraction may differ between the two loops */
#else
constexpr int64_t kMaxUlps = 0; /* no FMA: the same operations, the same bits */
#endif

void run_case(cg_backend *be, const char *label, const cg_adam_params &p, int64_t n,
              unsigned grid, unsigned threads) {
  std::vector<float> w(n), m(n, 0.0f), v(n, 0.0f), g(n);
  for (int64_t i = 0; i < n; i++) w[i] = (float)unif(-1.0, 1.0);
  std::vector<float> wk = w, mk = m, vk = v; /* the emulated kernel's copies */
  ref_state ref{std::vector<double>(w.begin(), w.end()), std::vector<double>(n, 0.0),
                std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  double worst = 0.0;
  int64_t ulps = 0;
  for (int64_t t = 1; t <= 6; t++) {
    for (int64_t i = 0; i < n; i++) {
      /* a spread of magnitudes, and exact zeros (Adam then moves w by decay alone) */
      const int k = (int)(i % 5);
      g[i] = k == 0 ? 0.0f : (float)(unif(-1.0, 1.0) * (k == 1 ? 1e-5 : k == 2 ? 1e2 : 1.0));
    }
    be->adam(be, w.data(), g.data(), m.data(), v.data(), n, &p, t);
    const cg_adam_coefs c = cg_adam_coefs_make(&p, t);
    emu_launch(grid, threads, adam_kernel, wk.data(), (const float *)g.data(), mk.data(), vk.data(),
               n, c);
    ref_step(ref, g, p, t);

    ulps = std::max(ulps, std::max(max_ulps(w, wk), std::max(max_ulps(m, mk), max_ulps(v, vk))));
    for (int side = 0; side < 2; side++) {
      const std::vector<float> &ww = side ? wk : w, &mm = side ? mk : m, &vv = side ? vk : v;
      worst = std::max(worst, worst_ratio("w", ww, ref.w, nullptr, 1e-6, 1e-5));
      worst = std::max(worst, worst_ratio("m", mm, ref.m, &ref.ma, 1e-9, 1e-5));
      worst = std::max(worst, worst_ratio("v", vv, ref.v, nullptr, 1e-12, 1e-4));
    }
  }
  printf("%s, n=%lld, grid %u x %u: kernel vs CPU backend at most %lld ulp (allowed %lld); "
         "worst error %.3f of the tolerance vs the double reference\n",
         label, (long long)n, grid, threads, (long long)ulps, (long long)kMaxUlps, worst);
  assert_true(ulps <= kMaxUlps);
  assert_true(worst <= 1.0);
}

void test_adam_kernel_emulated(void **state) {
  (void)state;
  cg_backend *be = nullptr;
  assert_int_equal(cg_backend_cpu_create(2, &be), 0);
  const cg_adam_params adam = {0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, 0};
  const cg_adam_params adamw = {0.003f, 0.9f, 0.98f, 1e-8f, 0.01f, 1};
  const cg_adam_params plain = {0.01f, 0.8f, 0.99f, 1e-6f, 0.0f, 0};
  /* 3 blocks of 64 threads: every thread strides over several elements */
  run_case(be, "adam (L2 decay)", adam, 1000, 3, 64);
  run_case(be, "adamw", adamw, 1000, 3, 64);
  run_case(be, "adam (no decay)", plain, 1000, 3, 64);
  /* the launcher's own shape (grid_for, kThreads); n = 1: one element */
  run_case(be, "adamw", adamw, 777, grid_for(777), kThreads);
  run_case(be, "adam (L2 decay)", adam, 1, grid_for(1), kThreads);
  /* above the CPU backend's threading threshold: its parallel loop, same bits */
  run_case(be, "adamw", adamw, 20011, 4, 64);
  cg_backend_destroy(&be);
}

/* torch.optim.SGD in double (momentum, no dampening), from the parameters. */
void sgd_ref_step(std::vector<double> &w, std::vector<double> &buf, std::vector<double> &ba,
                  const std::vector<float> &g, const cg_sgd_params &p) {
  for (size_t i = 0; i < w.size(); i++) {
    const double gi = (double)g[i] + (double)p.weight_decay * w[i];
    if (p.momentum != 0.0f) {
      buf[i] = (double)p.momentum * buf[i] + gi;
      ba[i] = (double)p.momentum * ba[i] + fabs(gi);
      w[i] -= (double)p.lr * buf[i];
    } else {
      w[i] -= (double)p.lr * gi;
    }
  }
}

void run_sgd_case(cg_backend *be, const char *label, const cg_sgd_params &p, int64_t n, unsigned grid,
                  unsigned threads) {
  std::vector<float> w(n), b(n, 0.0f), g(n);
  for (int64_t i = 0; i < n; i++) w[i] = (float)unif(-1.0, 1.0);
  std::vector<float> wk = w, bk = b;
  std::vector<double> rw(w.begin(), w.end()), rb(n, 0.0), ra(n, 0.0);
  double worst = 0.0;
  int64_t ulps = 0;
  for (int64_t t = 1; t <= 6; t++) {
    for (int64_t i = 0; i < n; i++) {
      const int k = (int)(i % 5);
      g[i] = k == 0 ? 0.0f : (float)(unif(-1.0, 1.0) * (k == 1 ? 1e-5 : k == 2 ? 1e2 : 1.0));
    }
    be->sgd(be, w.data(), g.data(), b.data(), n, &p);
    emu_launch(grid, threads, sgd_kernel, wk.data(), (const float *)g.data(), bk.data(), n, p);
    sgd_ref_step(rw, rb, ra, g, p);
    ulps = std::max(ulps, std::max(max_ulps(w, wk), max_ulps(b, bk)));
    for (int side = 0; side < 2; side++) {
      const std::vector<float> &ww = side ? wk : w, &bb = side ? bk : b;
      /* w moves by up to lr * |buf| (~1e2 x 0.05): its rounding scales with that */
      worst = std::max(worst, worst_ratio("w", ww, rw, &ra, 1e-6, 1e-5));
      if (p.momentum != 0.0f) worst = std::max(worst, worst_ratio("buf", bb, rb, &ra, 1e-9, 1e-5));
    }
  }
  if (p.momentum == 0.0f) /* the buffer is not touched without momentum */
    for (int64_t i = 0; i < n; i++) assert_true(b[i] == 0.0f && bk[i] == 0.0f);
  printf("%s, n=%lld, grid %u x %u: kernel vs CPU backend at most %lld ulp (allowed %lld); "
         "worst error %.3f of the tolerance vs the double reference\n",
         label, (long long)n, grid, threads, (long long)ulps, (long long)kMaxUlps, worst);
  assert_true(ulps <= kMaxUlps);
  assert_true(worst <= 1.0);
}

void test_sgd_kernel_emulated(void **state) {
  (void)state;
  cg_backend *be = nullptr;
  assert_int_equal(cg_backend_cpu_create(2, &be), 0);
  const cg_sgd_params mom = {0.05f, 0.9f, 5e-4f}, plain = {0.1f, 0.0f, 0.0f}, decay = {0.01f, 0.0f, 1e-2f};
  run_sgd_case(be, "sgd (momentum 0.9, L2)", mom, 1000, 3, 64);
  run_sgd_case(be, "sgd (plain)", plain, 1000, 3, 64);
  run_sgd_case(be, "sgd (L2, no momentum)", decay, 777, grid_for(777), kThreads);
  run_sgd_case(be, "sgd (momentum 0.9, L2)", mom, 20011, 4, 64);
  cg_backend_destroy(&be);
}

/* The backward of dropout(relu(x)) read from the dropout's output (dropout_relu_bwd_kernel,
 * same file): the emulated kernel against the CPU backend's op, bit for bit, on an hd with
 * zeros, subnormal and infinite values and a gradient with NaN and infinities, with grids
 * that leave grid-stride remainders. */
void test_dropout_relu_bwd_emulated(void **state) {
  (void)state;
  cg_backend *be = nullptr;
  assert_int_equal(cg_backend_cpu_create(2, &be), 0);
  const int64_t n = 20011;
  std::vector<float> hd(n), dy(n);
  for (int64_t i = 0; i < n; i++) {
    const int k = (int)(i % 7);
    hd[i] = k < 3 ? 0.0f : k == 3 ? 1e-40f : k == 4 ? INFINITY : (float)unif(0.0, 2.0);
    dy[i] = i % 11 == 0 ? NAN : i % 13 == 0 ? -INFINITY : (float)unif(-1.0, 1.0);
  }
  const unsigned grids[][2] = {{3, 64}, {(unsigned)grid_for(n), kThreads}};
  for (const auto &gt : grids) {
    std::vector<float> want = dy, got = dy;
    be->dropout_relu_bwd(be, hd.data(), want.data(), n, 2.0f);
    emu_launch(gt[0], gt[1], dropout_relu_bwd_kernel, (const float *)hd.data(), got.data(), n, 2.0f);
    assert_memory_equal(want.data(), got.data(), sizeof(float) * (size_t)n);
    printf("dropout_relu_bwd, n=%lld, grid %u x %u: kernel equals the CPU backend bit for bit\n", (long long)n,
           gt[0], gt[1]);
  }
  cg_backend_destroy(&be);
}

} // namespace

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_adam_kernel_emulated),
                                     cmocka_unit_test(test_sgd_kernel_emulated),
                                     cmocka_unit_test(test_dropout_relu_bwd_emulated)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
