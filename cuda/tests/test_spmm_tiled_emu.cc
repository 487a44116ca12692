/* cuda/tests/test_spmm_tiled_emu.cc — the tiled SpMM kernel's own source
 * (cuda/spmm_tiled.cu), run on the CPU through cuda/tests/cuda_emu.h: one OS thread
 * per CUDA thread, real barriers and shuffles. Catches indexing, slicing, masking,
 * staging and shuffle-convergence mistakes without a GPU; says nothing about
 * speed or inter-block races (test_cuda_ops, label gpu, checks the real thing).
 *
 * Y starts as the far part (computed here on the host, as the warp kernel would),
 * the emulated kernel adds the tiles, and the result must match A X in double
 * (|y - ref| <= 1e-6 + 2e-5 * sum |terms|) with the padding columns untouched.
 * Widths cover every launch shape (float4: 256 columns, float2: 130, scalar with two
 * columns per lane: 41 with a padded stride, scalar: 7) and both kinds of tiles
 * (factored, valued). Small matrices: each emulated
 * shuffle costs two 32-thread barriers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_EMU_EXTERN_SHARED 1 /* the kernel's shared memory is `extern __shared__` */
#include "cuda_emu.h"

extern "C" {
#include <cmocka.h>
}

#include "core/status.h"
#include "cuda/spmm_tiled.cu"
#include "cuda/spmm_tiles_internal.h"
#include "tile_matrices.h"

namespace {
/* The kernel's dynamic shared memory (blocks run one at a time), with room past the
 * largest launch. Before each launch every word is set to a NaN pattern: a read
 * past the launch's own size (tiled_smem_bytes) turns results into NaN, a write
 * there is seen afterwards. */
constexpr size_t kSmemWords = 2 * tiled_smem_bytes(4) / sizeof(float);
float4 xs_raw[kSmemWords / 4];
constexpr uint32_t kPoison = 0x7fc0dead;

template <int VEC, int NV, bool FACT>
void emu_add(const cgk_tiles &t, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t f) {
  uint32_t *words = reinterpret_cast<uint32_t *>(xs_raw);
  for (size_t i = 0; i < kSmemWords; i++) words[i] = kPoison;
  emu_launch((unsigned)tiled_blocks(VEC * NV, f, t.nrb), (unsigned)kThreads, spmm_tiled_kernel<VEC, NV, FACT>,
             t, x, ldx, y, ldy, f);
  for (size_t i = tiled_smem_bytes(VEC * NV) / sizeof(float); i < kSmemWords; i++)
    if (words[i] != kPoison) fail_msg("shared memory word %zu written past the launch's size", i);
}

/* cgk_spmm_tiled_add's dispatch (an H100's shared memory), on the emulator */
void emu_tiled_add(const cgk_tiles &t, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t f) {
  const int vec = cgk_pick_vec(x, ldx, y, ldy, f);
  const int nv = tiled_nv(vec, f, 227 * 1024);
  const bool fact = t.t_val == nullptr;
  if (vec == 4) fact ? emu_add<4, 1, true>(t, x, ldx, y, ldy, f) : emu_add<4, 1, false>(t, x, ldx, y, ldy, f);
  else if (vec == 2) fact ? emu_add<2, 1, true>(t, x, ldx, y, ldy, f) : emu_add<2, 1, false>(t, x, ldx, y, ldy, f);
  else if (nv == 2) fact ? emu_add<1, 2, true>(t, x, ldx, y, ldy, f) : emu_add<1, 2, false>(t, x, ldx, y, ldy, f);
  else fact ? emu_add<1, 1, true>(t, x, ldx, y, ldy, f) : emu_add<1, 1, false>(t, x, ldx, y, ldy, f);
}

uint64_t seed = 77;

void run_case(const struct cg_csr *a, const char *label, int64_t skip_degree, int want_factored) {
  struct cgk_tile_params p = {2.0, skip_degree, 0.3};
  struct cgk_tiles_host h;
  assert_int_equal(cgk_tiles_build(a, &p, &h), CG_OK);
  assert_true(h.ntiles > 0);
  assert_int_equal(h.t_val == nullptr, want_factored);
  printf("%s: %lld x %lld, nnz %lld, %lld tiles hold %lld nonzeros\n", label, (long long)a->nrows,
         (long long)a->ncols, (long long)a->nnz, (long long)h.ntiles, (long long)h.tile_nnz);
  const cgk_tiles t = {h.nrows,     h.ncols,  h.nrb,   h.ntiles,    h.rb_tile,   h.tile_col,
                       h.tile_edge, h.tile_rowptr, h.perm, h.t_off, h.t_val, h.row_scale,
                       h.col_scale};
  /* 41 (scalar, one 64-column slice of two columns per lane), 67 (scalar, two such
   * slices, the second nearly empty), 7 (scalar, one 32-column slice), 130 (float2),
   * 256 (float4) */
  static const int64_t widths[][2] = {{41, 44}, {67, 68}, {7, 7}, {130, 130}, {256, 256}};
  for (const auto &wd : widths) {
    const int64_t f = wd[0], ld = wd[1];
    float *x = tm_alloc_floats(a->ncols * ld), *y = tm_alloc_floats(a->nrows * ld);
    assert_non_null(x);
    assert_non_null(y);
    for (int64_t i = 0; i < a->ncols * ld; i++) x[i] = (float)(2.0 * tm_unif(&seed) - 1.0);
    for (int64_t i = 0; i < a->nrows * ld; i++) y[i] = 12345.0f;
    /* far part, as the warp kernel writes it: every row, columns < f */
    for (int64_t r = 0; r < a->nrows; r++) {
      for (int64_t c = 0; c < f; c++) {
        float s = 0.0f;
        for (int64_t k = h.far.rowptr[r]; k < h.far.rowptr[r + 1]; k++)
          s += (h.far.vals ? h.far.vals[k] : 1.0f) * x[(int64_t)h.far.colidx[k] * ld + c];
        y[r * ld + c] = s;
      }
    }
    emu_tiled_add(t, x, ld, y, ld, f);
    char what[128];
    snprintf(what, sizeof what, "%s f=%lld ld=%lld (vector %d)", label, (long long)f, (long long)ld,
             cgk_pick_vec(x, ld, y, ld, f));
    double worst = 0.0;
    int64_t bad = tm_compare_spmm(what, a, x, ld, y, ld, f, 12345.0f, &worst);
    printf("  %s: worst error %.3f of the tolerance\n", what, worst);
    assert_int_equal(bad, 0);
    free(x);
    free(y);
  }
  cgk_tiles_free(&h);
}

void test_emulated_kernel(void **state) {
  (void)state;
  struct cg_csr a;
  /* partial last row block and column block; hub rows (> 150 nonzeros) kept far */
  assert_int_equal(tm_clustered(&a, 300, 400, 200, 0.12, 0.01, 100, 0.9, TM_RANDOM, &seed), CG_OK);
  run_case(&a, "valued", 150, 0);
  cg_csr_free(&a);
  /* hub rows (~270 nonzeros) below skip_degree: their dense part is in the tiles */
  assert_int_equal(tm_clustered(&a, 270, 300, 260, 0.1, 0.02, 90, 0.9, TM_FACTORED, &seed), CG_OK);
  run_case(&a, "factored, hubs in tiles", 1000, 1);
  cg_csr_free(&a);
  assert_int_equal(tm_clustered(&a, 200, 300, 300, 0.1, 0.0, 0, 0.0, TM_ONES, &seed), CG_OK);
  run_case(&a, "all ones", 1000, 1);
  cg_csr_free(&a);
}
} // namespace

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_emulated_kernel)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
