/* cuda/tests/test_rowwise_emu.cc — the row-wise kernels' own source (cuda/rowwise.cu:
 * layernorm forward and backward (dx), softmax cross-entropy, sigmoid binary
 * cross-entropy, the loss partials' sum, evaluation counts), run on the CPU through
 * cuda/tests/cuda_emu.h (warp shuffles, block barriers, shared arrays), against the
 * CPU backend's ops (core/cpu_backend.c through the op table of core/ops.h). No GPU
 * needed.
 *
 * The launchers are left out under emulation; each kernel is launched as its launcher
 * launches it (the file's own row_grid, kThreads, CGK_LOSS_MAX_BLOCKS; cgk_xent's,
 * cgk_bce's and cgk_eval_counts's bodies are mirrored line for line below, marked
 * "mirrors"), and also with row_grid capped at 2 blocks (16 warps), so that every
 * warp strides over several rows. Rows above one block (8 warps), widths 1, 41, 256
 * and 602 (lanes with one, two and nineteen columns, a partial last pass).
 * - bce's gradients, the evaluation counts: the same operations: the same bits, the
 *   same integers (argmax ties across lanes: the first maximum wins on both; NaN
 *   logits in column 0, in a lane's first column, in whole lanes, in whole rows: the
 *   CPU's argmax on both); which xent rows and gradients are NaN (NaN or infinite
 *   logits anywhere in a row: the rule of core/ops.h, kept by both);
 * - everything the kernels sum in a different order (a warp's lanes, then a shuffle
 *   tree; rows over warps and blocks, then the partials' tree, where the CPU sums in
 *   column and row order) is compared within the bound of two orders of that sum,
 *   stated at each comparison. */
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
#include "cuda/rowwise.cu"

namespace {

emu_rng rng{31337};
double unif(double lo, double hi) { return rng.unif(lo, hi); }
std::vector<float> rand_vec(int64_t n, double lo, double hi) { return rng.vec(n, lo, hi); }

constexpr double kU = 1.0 / 9007199254740992.0; /* 2^-53, a double's unit roundoff */

cg_backend *cpu_backend() {
  cg_backend *be = nullptr;
  assert_int_equal(cg_backend_cpu_create(2, &be), 0);
  return be;
}

/* The launchers' cap for each kernel, and 2 blocks: warps then stride over rows. */
const int64_t kSmallCap = 2;

const int64_t kWidths[] = {1, 41, 256, 602};

/* Rows of random values, a constant row (variance 0: rstd = 1/sqrt(eps)), a row far
 * from zero (|mean| >> std) and a row of zeros but one. */
std::vector<float> ln_input(int64_t rows, int64_t cols) {
  std::vector<float> x = rand_vec(rows * cols, -2.0, 3.0);
  for (int64_t c = 0; c < cols; c++) {
    x[(size_t)(1 * cols + c)] = 0.375f;
    x[(size_t)(2 * cols + c)] = 1000.0f + (float)unif(-0.01, 0.01);
    x[(size_t)(3 * cols + c)] = c == cols / 2 ? -5.0f : 0.0f;
  }
  return x;
}

/* layernorm_fwd, then layernorm_bwd_dx from the CPU's mean and rstd. */
void test_layernorm(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const int64_t rows = 37; /* 5 blocks of 8 warps at the launcher's grid */
  const float eps = 1e-5f;
  for (int64_t cols : kWidths)
    for (int64_t cap : {(int64_t)8192, kSmallCap}) {
      const unsigned g = row_grid(rows, cap);
      printf("rows=%lld cols=%lld, grid %u x %d\n", (long long)rows, (long long)cols, g, kThreads);
      const std::vector<float> x = ln_input(rows, cols), gamma = rand_vec(cols, 0.5, 1.5),
                               beta = rand_vec(cols, -1.0, 1.0);
      std::vector<float> yk(x.size(), 9.0f), yc = yk, mk(rows, 9.0f), mc = mk, rk(rows, 9.0f), rc = rk;
      emu_launch(g, kThreads, layernorm_fwd_kernel, x.data(), rows, cols, gamma.data(), beta.data(), eps, yk.data(),
                 mk.data(), rk.data());
      be->layernorm_fwd(be, x.data(), rows, cols, gamma.data(), beta.data(), eps, yc.data(), mc.data(), rc.data());
      /* mean and rstd: doubles that differ only by the order of the row's sums (lanes
       * then a shuffle tree vs column order): the sum of x by at most 2 cols 2^-53
       * sum|x|, the centred sum of squares (whose derivative in the mean is 0) by
       * at most 2 cols 2^-53 of itself, so rstd by at most cols 2^-52 relative; each
       * then rounded to float, which may differ by one ulp. */
      std::vector<double> tm(rows), tr(rows), ty(x.size());
      for (int64_t r = 0; r < rows; r++) {
        double sa = 0.0;
        for (int64_t c = 0; c < cols; c++) sa += fabs((double)x[(size_t)(r * cols + c)]);
        tm[(size_t)r] = ulp(mc[(size_t)r]) + 2.0 * kU * sa;
        tr[(size_t)r] = ulp(rc[(size_t)r]) + 4.0 * (double)cols * kU * rc[(size_t)r];
        /* y = (x - mu) rs gamma + beta in double, then rounded: the double differs by
         * at most |x - mu| |gamma| drs + |gamma| rs dmu (dmu = 2 cols 2^-53 sum|x| / cols),
         * then one ulp from the rounding */
        for (int64_t c = 0; c < cols; c++) {
          const size_t i = (size_t)(r * cols + c);
          const double xc = fabs((double)x[i] - (double)mc[(size_t)r]);
          ty[i] = ulp(yc[i]) + fabs((double)gamma[(size_t)c]) *
                                   (xc * 4.0 * (double)cols * kU * rc[(size_t)r] +
                                    rc[(size_t)r] * 2.0 * kU * sa);
        }
      }
      within("layernorm_fwd y", yk, yc, ty);
      within("layernorm_fwd mean", mk, mc, tm);
      within("layernorm_fwd rstd", rk, rc, tr);

      const std::vector<float> dy = rand_vec(rows * cols, -1.0, 1.0);
      std::vector<float> dk(x.size(), 9.0f), dc = dk, dg(cols), db(cols);
      emu_launch(g, kThreads, layernorm_bwd_dx_kernel, dy.data(), x.data(), (const float *)mc.data(),
                 (const float *)rc.data(), gamma.data(), rows, cols, dk.data());
      be->layernorm_bwd(be, dy.data(), x.data(), mc.data(), rc.data(), gamma.data(), rows, cols, dc.data(), dg.data(),
                        db.data());
      /* dx = rs (g - a - xh b), g = dy gamma, in float on both from the same float terms;
       * a = mean(g) and b = mean(g xh) are double sums in another order (error far below a
       * float ulp), so after rounding to float each is the CPU's or one ulp (2^-23 of
       * it) away. That moves g - a and xh b by at most an ulp of a, b (and their own
       * roundings by an ulp each): |d dx| <= |rs| 2^-21 (|g| + |a| + |xh b|) + ulp(dx). */
      std::vector<double> td(x.size());
      for (int64_t r = 0; r < rows; r++) {
        const float m = mc[(size_t)r], rs = rc[(size_t)r];
        double sg = 0.0, sgx = 0.0;
        for (int64_t c = 0; c < cols; c++) {
          const size_t i = (size_t)(r * cols + c);
          const float xh = (x[i] - m) * rs, gg = dy[i] * gamma[(size_t)c];
          sg += gg;
          sgx += (double)gg * xh;
        }
        const double a = fabs(sg / (double)cols), b = fabs(sgx / (double)cols);
        for (int64_t c = 0; c < cols; c++) {
          const size_t i = (size_t)(r * cols + c);
          const double xh = fabs((double)((x[i] - m) * rs)), gg = fabs((double)dy[i] * gamma[(size_t)c]);
          td[i] = ulp(dc[i]) + fabs((double)rs) * ldexp(1.0, -21) * (gg + a + xh * b);
        }
      }
      within("layernorm_bwd dx", dk, dc, td);
    }
  cg_backend_destroy(&be);
}

/* Mirrors cgk_xent and cgk_bce (cuda/rowwise.cu), after cu_xent's / cu_bce's zeroing of
 * dlogits: the loss kernel on row_grid(n_idx, cap) blocks (cap: CGK_LOSS_MAX_BLOCKS
 * there), then sum_partials_kernel over its blocks' partial sums. */
template <class K, class L>
double emu_loss(K kernel, const float *logits, int64_t rows, int64_t cols, const L *labels, const int32_t *idx,
                int64_t n_idx, float scale, float *dlogits, unsigned long long *bad, int64_t cap) {
  std::fill(dlogits, dlogits + rows * cols, 0.0f);
  std::vector<double> partials(CGK_LOSS_MAX_BLOCKS + 1, -7.0);
  double loss = -7.0;
  *bad = 0;
  unsigned g = 0;
  if (n_idx > 0 && cols > 0) {
    g = row_grid(n_idx, cap);
    emu_launch(g, kThreads, kernel, logits, rows, cols, labels, idx, n_idx, scale, dlogits, partials.data(), bad);
  }
  emu_launch(1, kThreads, sum_partials_kernel, (const double *)partials.data(), (int64_t)g, &loss);
  return loss;
}
double emu_xent(const float *logits, int64_t rows, int64_t cols, const int32_t *labels, const int32_t *idx,
                int64_t n_idx, float scale, float *dlogits, unsigned long long *bad, int64_t cap) {
  return emu_loss(xent_kernel, logits, rows, cols, labels, idx, n_idx, scale, dlogits, bad, cap);
}
double emu_bce(const float *logits, int64_t rows, int64_t cols, const uint8_t *labels, const int32_t *idx,
               int64_t n_idx, float scale, float *dlogits, unsigned long long *bad, int64_t cap) {
  return emu_loss(bce_kernel, logits, rows, cols, labels, idx, n_idx, scale, dlogits, bad, cap);
}

/* idx: a permutation of part of the rows (some left out, whose dlogits stay 0). */
std::vector<int32_t> make_idx(int64_t rows, int64_t n_idx) {
  std::vector<int32_t> idx((size_t)n_idx);
  for (int64_t i = 0; i < n_idx; i++) idx[(size_t)i] = (int32_t)((i * 17 + 3) % rows);
  return idx;
}

void test_xent(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const int64_t rows = 61, n_idx = 43; /* 6 blocks at the launcher's grid */
  const float scale = 1.0f / (float)n_idx;
  for (int64_t cols : kWidths)
    for (int64_t cap : {(int64_t)CGK_LOSS_MAX_BLOCKS, kSmallCap}) {
      std::vector<float> logits = rand_vec(rows * cols, -6.0, 6.0);
      std::vector<int32_t> labels((size_t)rows);
      for (int64_t r = 0; r < rows; r++) labels[(size_t)r] = (int32_t)((r * 7) % cols);
      /* -inf logits (exp gives 0) and a row of equal logits */
      for (int64_t i = 5; i < rows * cols; i += 13)
        if (i % cols != labels[(size_t)(i / cols)]) logits[(size_t)i] = -INFINITY;
      for (int64_t c = 0; c < cols; c++) logits[(size_t)(3 * cols + c)] = 2.5f;
      const std::vector<int32_t> idx = make_idx(rows, n_idx);
      std::vector<float> dk(rows * cols, 9.0f), dc = dk;
      unsigned long long bad = 7;
      const double lk = emu_xent(logits.data(), rows, cols, labels.data(), idx.data(), n_idx, scale, dk.data(), &bad,
                                 cap);
      double lc = 0.0;
      be->xent(be, logits.data(), rows, cols, labels.data(), idx.data(), n_idx, scale, dc.data(), &lc);
      printf("xent rows=%lld cols=%lld n_idx=%lld, grid %u x %d\n", (long long)rows, (long long)cols,
             (long long)n_idx, row_grid(n_idx, cap), kThreads);
      assert_int_equal(bad, 0);
      /* dlogits = scale (e inv) [- scale]: inv = 1/se rounded to float, where se (a
       * double sum of positive float terms) differs by order only (relative 2 cols
       * 2^-53), so inv is the CPU's or one ulp away; the float products and the
       * subtraction then round within one ulp each: |d| <= 2^-21 (|d| + |scale|). */
      std::vector<double> td(dk.size());
      for (size_t i = 0; i < td.size(); i++) td[i] = ldexp(1.0, -21) * (fabs((double)dc[i]) + scale) + 1e-45;
      within("xent dlogits", dk, dc, td);
      /* The loss: per row log(se) - (x[label] - max), se within 2 cols 2^-53 relative
       * (so log(se) within 2 cols 2^-53 absolute), summed over rows in another order
       * (rows, then 8 warps, then the partials' tree vs blocks of rows): two orders of
       * n_idx terms are within 2 n_idx 2^-53 sum|terms|. */
      double sterm = 0.0;
      for (int64_t i = 0; i < n_idx; i++) {
        const int64_t r = idx[(size_t)i];
        const float *xr = logits.data() + r * cols;
        float mx = xr[0];
        double se = 0.0;
        for (int64_t c = 0; c < cols; c++) mx = std::max(mx, xr[c]);
        for (int64_t c = 0; c < cols; c++) se += exp((double)xr[c] - mx);
        sterm += fabs(log(se) - ((double)xr[labels[(size_t)r]] - mx));
      }
      const double tl = 2.0 * kU * (double)n_idx * ((double)cols + sterm + 1.0);
      printf("  xent loss: kernel %.17g, cpu %.17g, |diff| %.3g (tolerance %.3g)\n", lk, lc, fabs(lk - lc), tl);
      assert_true(fabs(lk - lc) <= tl);
    }
  cg_backend_destroy(&be);
}

/* Named rows of `cols` logits (0.01 c in column c) for the NaN tests, each changed in
 * place by its maker (at: only columns the width has) and flagged (flag: the test's own
 * meaning); flat() lays them out as one logits matrix. */
struct named_rows {
  int64_t cols;
  std::vector<std::vector<float>> rows;
  std::vector<const char *> what;
  std::vector<int> flag;
  std::vector<float> &row(const char *w, int f = 0) {
    std::vector<float> x((size_t)cols);
    for (int64_t c = 0; c < cols; c++) x[(size_t)c] = 0.01f * (float)c;
    rows.push_back(x);
    what.push_back(w);
    flag.push_back(f);
    return rows.back();
  }
  void at(std::vector<float> &x, int64_t c, float v) const {
    if (c < cols) x[(size_t)c] = v;
  }
  int64_t n() const { return (int64_t)rows.size(); }
  std::vector<float> flat() const {
    std::vector<float> all;
    for (auto &x : rows) all.insert(all.end(), x.begin(), x.end());
    return all;
  }
};

/* Softmax cross-entropy with NaN and infinite logits: the rule both backends keep
 * (core/ops.h's xent) is that a row whose logits hold a NaN or +inf, wherever it is (the
 * first column, a lane's first, the label's), has a NaN loss term and NaN in every one of
 * its gradients, and -inf logits are ordinary (exp gives 0) unless the whole row is -inf.
 * Each row alone, then all at once (and with 2 blocks): the kernel's NaNs are the CPU's,
 * element for element, and the other values within test_xent's tolerance. */
void test_xent_nan(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const float nan = NAN;
  for (int64_t cols : kWidths) {
    named_rows t{cols}; /* flag: the rule makes the whole row NaN */
    t.row("no NaN", 0);
    { auto &x = t.row("NaN in column 0", 1); t.at(x, 0, nan); }
    { auto &x = t.row("NaN in column 0, maximum 100 at 33", 1); t.at(x, 0, nan); t.at(x, 33, 100.0f); }
    { auto &x = t.row("NaN in the last column", 1); x.back() = nan; }
    { auto &x = t.row("NaN in columns 1..31 (every lane's first but 0)", cols > 1);
      for (int64_t c = 1; c < 32; c++) t.at(x, c, nan); }
    { auto &x = t.row("all NaN", 1); for (auto &v : x) v = nan; }
    { auto &x = t.row("+inf in column 0", 1); t.at(x, 0, INFINITY); }
    { auto &x = t.row("NaN in column 0, +inf at 5", 1); t.at(x, 0, nan); t.at(x, 5, INFINITY); }
    { auto &x = t.row("-inf in column 0", cols == 1); t.at(x, 0, -INFINITY); }
    { auto &x = t.row("-inf everywhere", 1); for (auto &v : x) v = -INFINITY; }
    { auto &x = t.row("-inf everywhere, NaN in column 0", 1); for (auto &v : x) v = -INFINITY; t.at(x, 0, nan); }
    const int64_t n = t.n();
    const std::vector<float> logits = t.flat();
    std::vector<int32_t> labels((size_t)n);
    for (int64_t r = 0; r < n; r++) labels[(size_t)r] = (int32_t)((r * 7 + 1) % cols);
    auto check = [&](const int32_t *idx, int64_t n_idx, int64_t cap, const char *w) {
      std::vector<float> dk((size_t)(n * cols)), dc((size_t)(n * cols));
      unsigned long long bad = 7;
      const double lk = emu_xent(logits.data(), n, cols, labels.data(), idx, n_idx, 0.5f, dk.data(), &bad, cap);
      double lc = 0.0;
      be->xent(be, logits.data(), n, cols, labels.data(), idx, n_idx, 0.5f, dc.data(), &lc);
      int sel_poisoned = 0;
      for (int64_t i = 0; i < n_idx; i++) sel_poisoned |= t.flag[(size_t)idx[i]];
      size_t nan_k = 0, nan_c = 0, apart = 0;
      for (int64_t i = 0; i < n_idx; i++)
        for (int64_t c = 0; c < cols; c++) {
          const size_t e = (size_t)(idx[i] * cols + c);
          const int want = t.flag[(size_t)idx[i]];
          nan_k += isnan(dk[e]) != 0;
          nan_c += isnan(dc[e]) != 0;
          if ((isnan(dk[e]) != 0) != want || (isnan(dc[e]) != 0) != want ||
              (!want && fabs((double)dk[e] - dc[e]) > ldexp(1.0, -21) * (fabs((double)dc[e]) + 0.5) + 1e-45)) {
            if (apart++ == 0)
              printf("  cols=%lld, %s: row %d (%s) column %lld: kernel %.9g, cpu %.9g (expected %s)\n",
                     (long long)cols, w, idx[i], t.what[(size_t)idx[i]], (long long)c, (double)dk[e], (double)dc[e],
                     want ? "NaN" : "a number");
          }
        }
      printf("xent NaN cols=%lld, %s: loss kernel %.9g, cpu %.9g; NaN gradients kernel %zu, cpu %zu, %zu apart\n",
             (long long)cols, w, lk, lc, nan_k, nan_c, apart);
      assert_int_equal(bad, 0);
      assert_int_equal(apart, 0);
      assert_int_equal(isnan(lk) != 0, sel_poisoned);
      assert_int_equal(isnan(lc) != 0, sel_poisoned);
    };
    for (int64_t r = 0; r < n; r++) {
      const int32_t one[1] = {(int32_t)r};
      check(one, 1, CGK_LOSS_MAX_BLOCKS, t.what[(size_t)r]);
    }
    std::vector<int32_t> idx((size_t)n);
    for (int64_t r = 0; r < n; r++) idx[(size_t)r] = (int32_t)(n - 1 - r);
    for (int64_t cap : {(int64_t)CGK_LOSS_MAX_BLOCKS, kSmallCap}) check(idx.data(), n, cap, "every row at once");
  }
  cg_backend_destroy(&be);
}

/* Out-of-range rows and labels set the flag (the CPU op stops the process there) and
 * are skipped: the other rows are as the CPU computes them without those. */
void test_xent_bad_rows(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const int64_t rows = 20, cols = 41;
  std::vector<float> logits = rand_vec(rows * cols, -3.0, 3.0);
  std::vector<int32_t> labels((size_t)rows);
  for (int64_t r = 0; r < rows; r++) labels[(size_t)r] = (int32_t)((r * 5) % cols);
  labels[4] = (int32_t)cols; /* a label out of range */
  const std::vector<int32_t> all = {0, 3, -1, 4, 7, 20, 11, 19}, good = {0, 3, 7, 11, 19};
  std::vector<float> dk(rows * cols), dc(rows * cols);
  unsigned long long bad = 0;
  const double lk = emu_xent(logits.data(), rows, cols, labels.data(), all.data(), (int64_t)all.size(), 0.5f,
                             dk.data(), &bad, CGK_LOSS_MAX_BLOCKS);
  double lc = 0.0;
  be->xent(be, logits.data(), rows, cols, labels.data(), good.data(), (int64_t)good.size(), 0.5f, dc.data(), &lc);
  printf("xent with rows -1, 20 and a label 41 out of range: flag %llu, loss %.17g (cpu without them %.17g)\n", bad,
         lk, lc);
  assert_int_equal(bad, 1);
  std::vector<double> td(dk.size());
  for (size_t i = 0; i < td.size(); i++) td[i] = ldexp(1.0, -21) * (fabs((double)dc[i]) + 0.5) + 1e-45;
  within("xent dlogits of the good rows", dk, dc, td);
  assert_true(fabs(lk - lc) <= 1e-12 * fabs(lc));
  cg_backend_destroy(&be);
}

void test_bce(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const int64_t rows = 61, n_idx = 43;
  const float scale = 0.25f;
  for (int64_t cols : kWidths)
    for (int64_t cap : {(int64_t)CGK_LOSS_MAX_BLOCKS, kSmallCap}) {
      std::vector<float> logits = rand_vec(rows * cols, -20.0, 20.0);
      std::vector<uint8_t> labels((size_t)(rows * cols));
      for (auto &l : labels) l = unif(0, 1) < 0.3 ? 1 : 0;
      for (int64_t i = 0; i < rows * cols; i += 11) logits[(size_t)i] = i % 2 ? 0.0f : -0.0f;
      for (int64_t i = 7; i < rows * cols; i += 23) logits[(size_t)i] = i % 2 ? 100.0f : -100.0f;
      const std::vector<int32_t> idx = make_idx(rows, n_idx);
      std::vector<float> dk(rows * cols, 9.0f), dc = dk;
      unsigned long long bad = 7;
      const double lk = emu_bce(logits.data(), rows, cols, labels.data(), idx.data(), n_idx, scale, dk.data(), &bad,
                                cap);
      double lc = 0.0;
      be->bce(be, logits.data(), rows, cols, labels.data(), idx.data(), n_idx, scale, dc.data(), &lc);
      printf("bce rows=%lld cols=%lld n_idx=%lld, grid %u x %d\n", (long long)rows, (long long)cols,
             (long long)n_idx, row_grid(n_idx, cap), kThreads);
      assert_int_equal(bad, 0);
      same("bce dlogits", dk, dc); /* the CPU's expression per element */
      /* The loss: n_idx cols non-negative double terms summed in another order (lanes,
       * shuffle tree, warps, partials' tree vs columns, rows, blocks): two orders are
       * within 2 N 2^-53 of the sum. */
      const double tl = 2.0 * kU * (double)(n_idx * cols) * fabs(lc) + 1e-300;
      printf("  bce loss: kernel %.17g, cpu %.17g, |diff| %.3g (tolerance %.3g)\n", lk, lc, fabs(lk - lc), tl);
      assert_true(fabs(lk - lc) <= tl);
    }
  cg_backend_destroy(&be);
}

/* sum_partials_kernel alone, on more partials than its 256 threads (each adds a
 * strided few, then the shared tree): within 2 n 2^-53 sum|p| of the sum in order,
 * and exact on integers. n = 0 gives 0. */
void test_sum_partials(void **state) {
  (void)state;
  for (int64_t n : {(int64_t)0, (int64_t)1, (int64_t)255, (int64_t)257, (int64_t)CGK_LOSS_MAX_BLOCKS}) {
    std::vector<double> p((size_t)n + 1), q((size_t)n + 1);
    double want = 0.0, mag = 0.0, wq = 0.0;
    for (int64_t i = 0; i < n; i++) {
      p[(size_t)i] = unif(-1e3, 1e3);
      q[(size_t)i] = (double)(int64_t)unif(-1e6, 1e6);
      want += p[(size_t)i];
      mag += fabs(p[(size_t)i]);
      wq += q[(size_t)i];
    }
    p[(size_t)n] = q[(size_t)n] = 1e300; /* past the end: never read */
    double got = -7.0, gq = -7.0;
    emu_launch(1, kThreads, sum_partials_kernel, (const double *)p.data(), n, &got);
    emu_launch(1, kThreads, sum_partials_kernel, (const double *)q.data(), n, &gq);
    printf("sum_partials n=%lld: %.17g vs %.17g in order; integers %.17g vs %.17g\n", (long long)n, got, want, gq,
           wq);
    assert_true(fabs(got - want) <= 2.0 * kU * (double)n * mag);
    assert_true(gq == wq);
  }
}

/* Mirrors cgk_eval_counts (cuda/rowwise.cu). */
void emu_eval_counts(const float *logits, int64_t cols, const int32_t *labels, const uint8_t *mlabels,
                     const int32_t *idx, int64_t n_idx, unsigned long long counts[3], int64_t cap) {
  counts[0] = counts[1] = counts[2] = 0;
  if (n_idx <= 0 || cols <= 0) return;
  unsigned g = row_grid(n_idx, cap);
  if (mlabels)
    emu_launch(g, kThreads, eval_multi_kernel, logits, cols, mlabels, idx, n_idx, counts);
  else
    emu_launch(g, kThreads, eval_single_kernel, logits, cols, labels, idx, n_idx, counts);
}

/* Single label: argmax with ties between lanes (the first maximum wins: a tie at
 * columns c < c' where c' has the lower lane), rows of -inf, rows of equal values;
 * each row labelled with its first or its second maximum, or elsewhere, so every
 * branch counts. Multi-label: counts of logit > 0 (with zeros and -0) against labels. */
void test_eval_counts(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const int64_t rows = 97, n_idx = 71;
  for (int64_t cols : kWidths)
    for (int64_t cap : {(int64_t)4096, kSmallCap}) {
      std::vector<float> logits = rand_vec(rows * cols, -3.0, 3.0);
      std::vector<int32_t> labels((size_t)rows);
      for (int64_t r = 0; r < rows; r++) {
        float *xr = logits.data() + r * cols;
        const int k = (int)(r % 6);
        int64_t c1 = (r * 13) % cols, c2 = c1 + 33 < cols ? c1 + 33 : c1; /* c2's lane is c1's + 1 */
        if (cols > 40 && r % 2) { /* the first maximum in a higher lane than the second */
          c1 = 30 + (r % 2);
          c2 = 33;
        }
        if (k == 4)
          for (int64_t c = 0; c < cols; c++) xr[c] = -INFINITY;
        else if (k == 5)
          for (int64_t c = 0; c < cols; c++) xr[c] = 1.5f;
        else
          xr[c1] = xr[c2] = 9.0f;
        labels[(size_t)r] = (int32_t)(k == 1 ? c2 : k == 2 ? (c1 + 1) % cols : c1);
        if (k == 4 || k == 5) labels[(size_t)r] = (int32_t)(r % 3 == 0 ? 0 : (r % 3 == 1 ? cols - 1 : cols / 2));
      }
      const std::vector<int32_t> idx = make_idx(rows, n_idx);
      unsigned long long ck[3];
      int64_t cc[3] = {-1, -1, -1};
      emu_eval_counts(logits.data(), cols, labels.data(), nullptr, idx.data(), n_idx, ck, cap);
      be->eval_counts(be, logits.data(), rows, cols, labels.data(), nullptr, idx.data(), n_idx, cc);
      printf("eval single rows=%lld cols=%lld n_idx=%lld, grid %u x %d: kernel %llu correct, cpu %lld\n",
             (long long)rows, (long long)cols, (long long)n_idx, row_grid(n_idx, cap), kThreads, ck[0],
             (long long)cc[0]);
      assert_true((int64_t)ck[0] == cc[0] && ck[1] == 0 && ck[2] == 0 && cc[1] == 0 && cc[2] == 0);

      std::vector<uint8_t> ml((size_t)(rows * cols));
      for (auto &l : ml) l = unif(0, 1) < 0.4 ? 1 : 0;
      for (int64_t i = 0; i < rows * cols; i += 7) logits[(size_t)i] = i % 2 ? 0.0f : -0.0f;
      emu_eval_counts(logits.data(), cols, nullptr, ml.data(), idx.data(), n_idx, ck, cap);
      be->eval_counts(be, logits.data(), rows, cols, nullptr, ml.data(), idx.data(), n_idx, cc);
      printf("eval multi: kernel tp %llu fp %llu fn %llu, cpu %lld %lld %lld\n", ck[0], ck[1], ck[2],
             (long long)cc[0], (long long)cc[1], (long long)cc[2]);
      for (int j = 0; j < 3; j++) assert_true((int64_t)ck[j] == cc[j]);
    }
  cg_backend_destroy(&be);
}

/* Single label with NaN logits: the kernel's argmax is the CPU backend's for every
 * placement. The CPU scans the columns in order keeping the first strict maximum, so a
 * NaN in column 0 is the argmax (nothing compares greater than it), a NaN elsewhere is
 * never taken, and a row of NaN gives 0. Each row is evaluated alone, labelled with the
 * CPU's argmax (found by asking the CPU backend with every label), then all rows at once
 * (and with 2 blocks: warps striding over rows): the kernel must count each correct. */
void test_eval_counts_nan(void **state) {
  (void)state;
  cg_backend *be = cpu_backend();
  const float nan = NAN;
  for (int64_t cols : kWidths) {
    named_rows t{cols};
    { auto &x = t.row("NaN in column 1 (a lane's first), maximum 100 at 33"); t.at(x, 1, nan); t.at(x, 33, 100.0f); }
    { auto &x = t.row("NaN in column 0, maximum 100 at 33"); t.at(x, 0, nan); t.at(x, 33, 100.0f); }
    { auto &x = t.row("NaN in column 0, +inf at 5"); t.at(x, 0, nan); t.at(x, 5, INFINITY); }
    { auto &x = t.row("all NaN"); for (auto &v : x) v = nan; }
    { auto &x = t.row("NaN but column 0"); for (auto &v : x) v = nan; t.at(x, 0, -5.0f); }
    { auto &x = t.row("NaN but columns 0 and 37"); for (auto &v : x) v = nan; t.at(x, 0, -5.0f); t.at(x, 37, 2.0f); }
    { auto &x = t.row("NaN but the last column"); for (auto &v : x) v = nan; x.back() = 1.0f; }
    { auto &x = t.row("NaN in columns 1..31 (every lane's first but 0), maximum at 40");
      for (int64_t c = 1; c < 32; c++) t.at(x, c, nan);
      t.at(x, 40, 7.0f); }
    { auto &x = t.row("lane 3's columns (3, 35, 67, ...) all NaN, maximum 9 at 36 and 68");
      for (int64_t c = 3; c < cols; c += 32) t.at(x, c, nan);
      t.at(x, 36, 9.0f); t.at(x, 68, 9.0f); }
    { auto &x = t.row("NaN after the maximum in its lane"); t.at(x, 33, 50.0f); t.at(x, 65, nan); t.at(x, 2, nan); }
    { auto &x = t.row("-inf in column 0, NaN elsewhere"); for (auto &v : x) v = nan; x[0] = -INFINITY; }
    { auto &x = t.row("-inf everywhere, NaN in column 1"); for (auto &v : x) v = -INFINITY; t.at(x, 1, nan); }
    { auto &x = t.row("-inf everywhere, NaN in columns 0 mod 32 but 0"); for (auto &v : x) v = -INFINITY;
      for (int64_t c = 32; c < cols; c += 32) t.at(x, c, nan); }
    { auto &x = t.row("equal maxima in two lanes, the lower lane's first column NaN"); t.at(x, 0, 3.0f);
      t.at(x, 1, nan); t.at(x, 33, 8.0f); t.at(x, 34, 8.0f); }
    const int64_t n = t.n();
    std::vector<float> logits = t.flat();
    std::vector<int32_t> labels((size_t)n);
    for (int64_t r = 0; r < n; r++) {
      const int32_t one[1] = {(int32_t)r};
      int found = 0;
      for (int32_t c = 0; c < cols; c++) {
        labels[(size_t)r] = c;
        int64_t cc[3] = {-1, -1, -1};
        be->eval_counts(be, logits.data(), n, cols, labels.data(), nullptr, one, 1, cc);
        if (cc[0] == 1) {
          found++;
          break;
        }
      }
      assert_int_equal(found, 1);
      unsigned long long ck[3];
      emu_eval_counts(logits.data(), cols, labels.data(), nullptr, one, 1, ck, 4096);
      printf("eval single cols=%lld, %s: cpu argmax %d, kernel %s\n", (long long)cols, t.what[(size_t)r],
             labels[(size_t)r], ck[0] == 1 ? "the same" : "another column");
      assert_true(ck[0] == 1 && ck[1] == 0 && ck[2] == 0);
    }
    std::vector<int32_t> idx((size_t)n);
    for (int64_t r = 0; r < n; r++) idx[(size_t)r] = (int32_t)(n - 1 - r);
    for (int64_t cap : {(int64_t)4096, kSmallCap}) {
      unsigned long long ck[3];
      emu_eval_counts(logits.data(), cols, labels.data(), nullptr, idx.data(), n, ck, cap);
      printf("eval single cols=%lld, %lld NaN rows at once, grid %u x %d: kernel %llu correct\n", (long long)cols,
             (long long)n, row_grid(n, cap), kThreads, ck[0]);
      assert_true((int64_t)ck[0] == n);
    }
  }
  cg_backend_destroy(&be);
}

} // namespace

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_layernorm), cmocka_unit_test(test_xent),
                                     cmocka_unit_test(test_xent_nan), cmocka_unit_test(test_xent_bad_rows), cmocka_unit_test(test_bce),
                                     cmocka_unit_test(test_sum_partials), cmocka_unit_test(test_eval_counts),
                                     cmocka_unit_test(test_eval_counts_nan)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
