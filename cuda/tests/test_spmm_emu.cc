/* cuda/tests/test_spmm_emu.cc — the hand-written CSR SpMM kernels' own source
 * (cuda/spmm.cu: warp per row, several rows per warp for narrow widths, a block per
 * row, hub rows on blocks of their own), run on the CPU through cuda/tests/cuda_emu.h:
 * one OS thread per CUDA thread, real barriers and shuffles, shared memory per block.
 * No GPU needed; says nothing about speed or races between blocks (test_cuda_ops,
 * label gpu, runs them on the device).
 *
 * Each launch is dispatched as its launcher in spmm.cu dispatches it (cgk_pick_vec,
 * pick_nv, the grid and the heavy-row blocks in front: the launchers are left out of
 * the emulated build, so emu_warp / emu_subwarp / emu_rowsplit mirror them line for
 * line). The result must match A X in double (tm_compare_spmm: |y - ref| <= 1e-6 +
 * 2e-5 sum |terms|, the kernels' summation order being their own), with every row
 * written, empty rows as zeros, and the padding columns past f untouched. Widths cover
 * the vector paths (float4: 256, float2: 130 and 602 over five passes, scalar: 41 with a
 * padded stride), larger pass caps (NV 2, 4, 16) and the narrow kernel
 * (f = 1, 7, 16); matrices with and without hub rows above the heavy threshold. Small
 * matrices: each emulated shuffle costs two 32-thread barriers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "cuda_emu.h"

extern "C" {
#include <cmocka.h>
}

#include "core/csr.h"
#include "core/status.h"
#include "cuda/spmm.cu"
#include "tile_matrices.h"

namespace {

/* cgk_spmm_warp (spmm.cu), on the emulator */
template <int V, int N>
void warp_launch(unsigned grid, const cgk_csr &a, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t f,
                 int64_t skip_above, int64_t heavy_blocks) {
  emu_launch(grid, (unsigned)kThreads, spmm_warp_kernel<V, N>, a, x, ldx, y, ldy, f, skip_above, heavy_blocks);
}

void emu_warp(const cgk_csr &a, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t f, int split_heavy) {
  if (a.nrows <= 0 || f <= 0) return;
  const bool split = split_heavy && a.n_heavy > 0;
  const int64_t skip_above = split ? a.heavy_threshold : INT64_MAX;
  const int64_t heavy_blocks = split ? a.n_heavy : 0;
  const unsigned grid = heavy_grid(grid_cap((a.nrows + kWarps - 1) / kWarps), heavy_blocks);
  const int vec = cgk_pick_vec(x, ldx, y, ldy, f), nv = pick_nv(vec, f, a.max_pass);
#define EMU_WARP(V, N) warp_launch<V, N>(grid, a, x, ldx, y, ldy, f, skip_above, heavy_blocks)
  if (vec == 4) {
    switch (nv) { CGK_NV_CASES(EMU_WARP, 4); }
  } else if (vec == 2) {
    switch (nv) {
      CGK_NV_CASES(EMU_WARP, 2);
      case 16: EMU_WARP(2, 16); break;
    }
  } else {
    switch (nv) {
      CGK_NV_CASES(EMU_WARP, 1);
      case 16: EMU_WARP(1, 16); break;
    }
  }
#undef EMU_WARP
}

/* cgk_spmm_rowsplit, on the emulator */
template <int V, int N>
void rowsplit_launch(unsigned grid, const cgk_csr &a, const int32_t *rows, int64_t n_rows, const float *x,
                     int64_t ldx, float *y, int64_t ldy, int64_t f) {
  emu_launch(grid, (unsigned)kThreads, spmm_rowsplit_kernel<V, N>, a, rows, n_rows, x, ldx, y, ldy, f);
}

void emu_rowsplit(const cgk_csr &a, const int32_t *rows, int64_t n_rows, const float *x, int64_t ldx, float *y,
                  int64_t ldy, int64_t f) {
  if (n_rows <= 0 || f <= 0) return;
  const unsigned grid = grid_cap(n_rows);
  const int vec = cgk_pick_vec(x, ldx, y, ldy, f), nv = pick_nv(vec, f, a.max_pass);
#define EMU_RS(V, N) rowsplit_launch<V, N>(grid, a, rows, n_rows, x, ldx, y, ldy, f)
  if (vec == 4) {
    switch (nv) { CGK_NV_CASES(EMU_RS, 4); }
  } else if (vec == 2) {
    switch (nv) {
      CGK_NV_CASES(EMU_RS, 2);
      case 16: EMU_RS(2, 16); break;
    }
  } else {
    switch (nv) {
      CGK_NV_CASES(EMU_RS, 1);
      case 16: EMU_RS(1, 16); break;
    }
  }
#undef EMU_RS
}

/* cgk_spmm_subwarp, on the emulator */
void emu_subwarp(const cgk_csr &a, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t f, int split_heavy) {
  if (a.nrows <= 0 || f <= 0) return;
  assert_true(f <= CGK_SUBWARP_MAX_F);
  const bool split = split_heavy && a.n_heavy > 0;
  const int64_t skip_above = split ? a.heavy_threshold : INT64_MAX;
  const int64_t heavy_blocks = split ? a.n_heavy : 0;
  const int64_t avg = (a.nnz + a.nrows - 1) / a.nrows;
  int sub = 4;
  while (sub < 32 && sub < avg) sub *= 2;
  const int64_t rows_per_block = (int64_t)kWarps * (32 / sub);
  const unsigned grid = heavy_grid(grid_cap((a.nrows + rows_per_block - 1) / rows_per_block), heavy_blocks);
  switch (sub) {
    case 4: emu_launch(grid, (unsigned)kThreads, spmm_subwarp_kernel<4>, a, x, ldx, y, ldy, (int)f, skip_above, heavy_blocks); break;
    case 8: emu_launch(grid, (unsigned)kThreads, spmm_subwarp_kernel<8>, a, x, ldx, y, ldy, (int)f, skip_above, heavy_blocks); break;
    case 16: emu_launch(grid, (unsigned)kThreads, spmm_subwarp_kernel<16>, a, x, ldx, y, ldy, (int)f, skip_above, heavy_blocks); break;
    default: emu_launch(grid, (unsigned)kThreads, spmm_subwarp_kernel<32>, a, x, ldx, y, ldy, (int)f, skip_above, heavy_blocks); break;
  }
}

uint64_t seed = 91;
constexpr float kPad = 12345.0f;

/* A host matrix as the kernels see it, with the rows above `threshold` listed as heavy
 * (cuda_backend.c's rule is max(1024, 8 x the average degree); a small threshold here
 * gives small matrices hub rows). */
struct kmat {
  cgk_csr k;
  std::vector<int32_t> heavy;
};

kmat kernel_matrix(const struct cg_csr *a, int64_t threshold, int64_t max_pass) {
  kmat m;
  for (int64_t r = 0; r < a->nrows; r++)
    if (a->rowptr[r + 1] - a->rowptr[r] > threshold) m.heavy.push_back((int32_t)r);
  m.k = cgk_csr{a->nrows, a->ncols, a->nnz, a->rowptr, a->colidx, a->vals, m.heavy.data(),
                (int64_t)m.heavy.size(), threshold, max_pass};
  return m;
}

enum kernel_kind { K_WARP, K_WARP_SPLIT, K_SUBWARP, K_SUBWARP_SPLIT, K_ROWSPLIT, K_ROWSPLIT_LIST };

const char *kind_name(kernel_kind k) {
  static const char *names[] = {"warp", "warp + heavy blocks", "subwarp", "subwarp + heavy blocks",
                                "rowsplit (every row)", "rowsplit (listed rows)"};
  return names[k];
}

/* One launch of `kind` at width f, stride ld; checked against A X in double. The line
 * printed names the vector width and NV the launch took. */
void check(const struct cg_csr *a, const char *label, kernel_kind kind, int64_t f, int64_t ld, int64_t threshold,
           int64_t max_pass) {
  kmat m = kernel_matrix(a, threshold, max_pass);
  float *x = tm_alloc_floats(a->ncols * ld), *y = tm_alloc_floats(a->nrows * ld);
  assert_non_null(x);
  assert_non_null(y);
  for (int64_t i = 0; i < a->ncols * ld; i++) x[i] = (float)(2.0 * tm_unif(&seed) - 1.0);
  for (int64_t i = 0; i < a->nrows * ld; i++) y[i] = kPad;
  std::vector<int32_t> order; /* listed rows: every row once, in reverse */
  for (int64_t r = a->nrows - 1; r >= 0; r--) order.push_back((int32_t)r);
  switch (kind) {
    case K_WARP: emu_warp(m.k, x, ld, y, ld, f, 0); break;
    case K_WARP_SPLIT: emu_warp(m.k, x, ld, y, ld, f, 1); break;
    case K_SUBWARP: emu_subwarp(m.k, x, ld, y, ld, f, 0); break;
    case K_SUBWARP_SPLIT: emu_subwarp(m.k, x, ld, y, ld, f, 1); break;
    case K_ROWSPLIT: emu_rowsplit(m.k, nullptr, a->nrows, x, ld, y, ld, f); break;
    case K_ROWSPLIT_LIST: emu_rowsplit(m.k, order.data(), (int64_t)order.size(), x, ld, y, ld, f); break;
  }
  char what[160];
  const int vec = cgk_pick_vec(x, ld, y, ld, f);
  snprintf(what, sizeof what, "%s, %s, f=%lld ld=%lld (vector %d, NV %d, max_pass %lld, %zu heavy rows)", label,
           kind_name(kind), (long long)f, (long long)ld, vec, pick_nv(vec, f, max_pass), (long long)max_pass,
           m.heavy.size());
  double worst = 0.0;
  const int64_t bad = tm_compare_spmm(what, a, x, ld, y, ld, f, kPad, &worst);
  printf("  %s: worst error %.3f of the tolerance\n", what, worst);
  free(x);
  free(y);
  assert_int_equal(bad, 0);
}

/* 70 rows, 300 columns: communities of 30, hub rows every 25th (from row 12) with ~270
 * of 300 columns, above a threshold of 40 and enough for every warp of a block_row
 * block (8 x 32 nonzeros); row 5 emptied (its output must be zeros). */
void hub_matrix(struct cg_csr *a, enum tm_values vals) {
  assert_int_equal(tm_clustered(a, 70, 300, 30, 0.25, 0.01, 25, 0.9, vals, &seed), CG_OK);
  const int64_t gone = a->rowptr[6] - a->rowptr[5];
  for (int64_t k = a->rowptr[6]; k < a->nnz; k++) {
    a->colidx[k - gone] = a->colidx[k];
    a->vals[k - gone] = a->vals[k];
  }
  for (int64_t r = 6; r <= a->nrows; r++) a->rowptr[r] -= gone;
  a->nnz -= gone;
}

void test_wide(void **state) {
  (void)state;
  struct cg_csr a;
  hub_matrix(&a, TM_RANDOM);
  /* {f, ld}: float4 (256: two 128-column passes), float2 (130: a partial second pass;
   * 602: five passes), scalar (41 in a padded stride) */
  static const int64_t widths[][2] = {{256, 256}, {130, 130}, {41, 44}, {602, 602}};
  for (const auto &wd : widths)
    for (kernel_kind k : {K_WARP, K_WARP_SPLIT}) check(&a, "random values", k, wd[0], wd[1], 40, 128);
  /* (a block per row: 70 blocks a launch, the slowest to emulate) */
  check(&a, "random values", K_ROWSPLIT, 256, 256, 40, 128);
  check(&a, "random values", K_ROWSPLIT_LIST, 41, 44, 40, 128);
  /* a larger pass cap (pick_nv): 602 in one pass (float2, NV 16), 256 and 512 with more
   * vectors a lane (float4, NV 2 and 4) */
  check(&a, "random values", K_WARP_SPLIT, 602, 602, 40, 1024);
  check(&a, "random values", K_WARP_SPLIT, 256, 256, 40, 1024);
  check(&a, "random values", K_WARP_SPLIT, 512, 512, 40, 512);
  cg_csr_free(&a);
}

void test_narrow(void **state) {
  (void)state;
  struct cg_csr a;
  hub_matrix(&a, TM_FACTORED);
  for (int64_t f : {1, 7, 16})
    for (kernel_kind k : {K_SUBWARP, K_SUBWARP_SPLIT}) check(&a, "factored values", k, f, f == 7 ? 9 : f, 40, 128);
  check(&a, "factored values", K_WARP, 7, 9, 40, 128);
  cg_csr_free(&a);
  /* a low average degree: four lanes a row, eight rows a warp */
  assert_int_equal(tm_clustered(&a, 90, 90, 30, 0.08, 0.0, 0, 0.0, TM_RANDOM, &seed), CG_OK);
  check(&a, "sparse rows", K_SUBWARP, 5, 5, 1000, 128);
  check(&a, "sparse rows", K_SUBWARP, 16, 16, 1000, 128);
  cg_csr_free(&a);
}

} // namespace

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_wide), cmocka_unit_test(test_narrow)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
