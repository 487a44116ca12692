/* cuda/tests/test_attn_emu.cc — the graph attention kernels' own source
 * (cuda/attn.cu), run on the CPU through cuda/tests/cuda_emu.h, against the CPU
 * backend (core/cpu_attn.c). No GPU needed.
 *
 * Both run core/attn.h's element functions, so on the same host compiler the
 * emulated kernels must give the CPU backend's bits (ELU within a few ulp: the CPU
 * backend exponentiates 8 lanes at a time with libmvec where it can, the kernel calls
 * the scalar function): that shows each kernel hands
 * every output element (and nothing else) to the right function with the right
 * arguments, strides and grid-stride bounds (small grids of few threads make every
 * thread loop). nvcc's own expf and contractions are left to test_cuda_attn (GPU).
 * Checked for every op: scores, their backward (row and column sums), softmax and
 * its backward, attention dropout (mask and values), per-edge SpMM and both of its
 * backward products, ELU forward and backward, and the sparse-feature ops (csr_mm,
 * csr_mm_t through the one-head SpMM kernels, csr_dropout); outputs outside the written ranges
 * (row strides wider than the data) stay untouched. */
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
#include "emu_rand.h"

extern "C" {
#include <cmocka.h>
}

#include "core/attn.h"
#include "core/csr.h"
#include "core/ops.h"
#include "core/status.h"
#include "cuda/attn.cu"
#include "emu_compare.h"

namespace {

/* ELU's CPU version exponentiates with glibc's vector expm1f where it can (libmvec: within
 * a few ulp of the scalar expm1f the kernel calls here; core/cpu_backend.c), and so does
 * the softmax with 1 or a multiple of 8 heads: a tolerance of k ulp of each CPU value. An
 * element handed to the wrong function or index is off by far more; without libmvec the
 * values are the same bits. */
std::vector<double> vector_exp_tol(const std::vector<float> &cpu, double k) {
  std::vector<double> tol(cpu.size());
  for (size_t i = 0; i < cpu.size(); i++) tol[i] = k * (double)ulp(cpu[i]);
  return tol;
}

emu_rng rng{4242};
double unif(double lo, double hi) { return rng.unif(lo, hi); }
std::vector<float> rand_vec(int64_t n, double lo, double hi) { return rng.vec(n, lo, hi); }

/* Random in-edge CSR with empty rows and columns without edges. */
void make_graph(cg_csr *a, int64_t nrows, int64_t ncols, int maxdeg) {
  std::vector<int64_t> deg((size_t)nrows);
  int64_t nnz = 0;
  for (auto &d : deg) {
    d = unif(0, 1) < 0.2 ? 0 : 1 + (int64_t)(unif(0, 1) * maxdeg);
    nnz += d;
  }
  assert_int_equal(cg_csr_alloc(a, nrows, ncols, nnz, 0), CG_OK);
  for (int64_t r = 0; r < nrows; r++) a->rowptr[r + 1] = a->rowptr[r] + deg[(size_t)r];
  for (int64_t k = 0; k < nnz; k++) a->colidx[k] = (int32_t)(unif(0, 1) * (double)(ncols - 3));
}

const unsigned kGrid = 3, kBlock = 32; /* few threads: every grid-stride loop runs several times */

void test_all(void **state) {
  (void)state;
  cg_backend *cpu = nullptr;
  assert_int_equal(cg_backend_cpu_create(2, &cpu), CG_OK);
  cg_csr a = {};
  const int64_t nr = 53, nc = 61, H = 5, F = 3, W = H * F, lde = H + 2, ldr = H + 1, ldx = W + 3;
  make_graph(&a, nr, nc, 9);
  cg_edges e; /* host memory: the CPU backend's buffers, read by both */
  assert_int_equal(cg_edges_upload(cpu, &a, &e), CG_OK);
  const int64_t m = a.nnz;
  std::vector<float> el = rand_vec(nc * lde, -2, 2), er = rand_vec(nr * ldr, -2, 2),
                     x = rand_vec(nc * ldx, -1, 1), dy = rand_vec(nr * W, -1, 1),
                     dal = rand_vec(m * H, -1, 1);
  std::vector<int32_t> gid((size_t)nc);
  for (int64_t i = 0; i < nc; i++) gid[(size_t)i] = (int32_t)(5 * i + 2);

  /* scores */
  std::vector<float> s_k((size_t)(m * H)), s_c((size_t)(m * H));
  emu_launch(kGrid, kBlock, edge_scores_kernel, e, el.data(), lde, er.data(), ldr, H, 0.2f, s_k.data());
  cpu->edge_scores(cpu, &e, el.data(), lde, er.data(), ldr, H, 0.2f, s_c.data());
  same("edge_scores", s_k, s_c);

  /* softmax */
  std::vector<float> al_k((size_t)(m * H)), al_c((size_t)(m * H));
  emu_launch(kGrid, kBlock, edge_softmax_kernel, e, (const float *)s_c.data(), H, al_k.data());
  cpu->edge_softmax(cpu, &e, s_c.data(), H, al_c.data());
  same("edge_softmax", al_k, al_c); /* (5 heads: the CPU's scalar softmax, libm's expf) */

  /* attention dropout */
  std::vector<float> ad_k((size_t)(m * H)), ad_c((size_t)(m * H));
  const cg_dropout_key key = {0xfeedbeefcafe1234ull, 4, 1};
  emu_launch(kGrid, kBlock, edge_dropout_kernel, e, (const float *)al_c.data(), ad_k.data(), H,
             (const int32_t *)gid.data(), 0.6f, 1.0f / (1.0f - 0.6f), key.seed, key.epoch, key.layer);
  cpu->edge_dropout(cpu, &e, al_c.data(), ad_c.data(), H, gid.data(), 0.6f, key);
  same("edge_dropout", ad_k, ad_c);

  /* per-edge SpMM (output stride wider than the data: the gap stays untouched) */
  const int64_t ldy = W + 2;
  std::vector<float> y_k((size_t)(nr * ldy), -7.0f), y_c((size_t)(nr * ldy), -7.0f);
  emu_launch(kGrid, kBlock, spmm_edge_kernel, e, (const float *)ad_c.data(), H, F, (const float *)x.data(),
             ldx, y_k.data(), ldy);
  cpu->spmm_edge(cpu, &e, ad_c.data(), H, F, x.data(), ldx, y_c.data(), ldy);
  same("spmm_edge", y_k, y_c);
  for (int64_t v = 0; v < nr; v++) assert_true(y_k[(size_t)(v * ldy + W)] == -7.0f);

  /* its backward */
  std::vector<float> dx_k((size_t)(nc * W)), dx_c((size_t)(nc * W)), da_k((size_t)(m * H)),
      da_c((size_t)(m * H));
  emu_launch(kGrid, kBlock, spmm_edge_bwd_x_kernel, e, (const float *)ad_c.data(), H, F,
             (const float *)dy.data(), W, dx_k.data(), W);
  cpu->spmm_edge_bwd_x(cpu, &e, ad_c.data(), H, F, dy.data(), W, dx_c.data(), W);
  same("spmm_edge_bwd_x", dx_k, dx_c);
  emu_launch(kGrid, kBlock, spmm_edge_bwd_alpha_kernel, e, H, F, (const float *)x.data(), ldx,
             (const float *)dy.data(), W, da_k.data());
  cpu->spmm_edge_bwd_alpha(cpu, &e, H, F, x.data(), ldx, dy.data(), W, da_c.data());
  same("spmm_edge_bwd_alpha", da_k, da_c);

  /* softmax backward, scores backward */
  std::vector<float> ds_k((size_t)(m * H)), ds_c((size_t)(m * H));
  emu_launch(kGrid, kBlock, edge_softmax_bwd_kernel, e, (const float *)al_c.data(),
             (const float *)dal.data(), H, ds_k.data());
  cpu->edge_softmax_bwd(cpu, &e, al_c.data(), dal.data(), H, ds_c.data());
  same("edge_softmax_bwd", ds_k, ds_c);
  std::vector<float> del_k((size_t)(nc * lde), 3.0f), del_c((size_t)(nc * lde), 3.0f),
      der_k((size_t)(nr * ldr), 3.0f), der_c((size_t)(nr * ldr), 3.0f);
  emu_launch(kGrid, kBlock, edge_scores_bwd_kernel, e, (const float *)s_c.data(), (const float *)ds_c.data(),
             H, 0.2f, del_k.data(), lde, der_k.data(), ldr);
  cpu->edge_scores_bwd(cpu, &e, s_c.data(), ds_c.data(), H, 0.2f, del_c.data(), lde, der_c.data(), ldr);
  same("edge_scores_bwd del", del_k, del_c);
  same("edge_scores_bwd der", der_k, der_c);

  /* ELU */
  std::vector<float> z = rand_vec(1000, -3, 3), z_k(1000), z_c(1000);
  emu_launch(kGrid, kBlock, elu_fwd_kernel, (const float *)z.data(), z_k.data(), (int64_t)1000);
  cpu->elu_fwd(cpu, z.data(), z_c.data(), 1000);
  within("elu_fwd", z_k, z_c, vector_exp_tol(z_c, 4.0));
  std::vector<float> g_k = rand_vec(1000, -1, 1), g_c = g_k;
  emu_launch(kGrid, kBlock, elu_bwd_kernel, (const float *)z_c.data(), g_k.data(), (int64_t)1000);
  cpu->elu_bwd(cpu, z_c.data(), g_c.data(), 1000);
  same("elu_bwd", g_k, g_c);

  /* sparse input features (issue #14): X = the same structure with values vx; csr_mm and
   * csr_mm_t are the one-head per-edge SpMM kernels, csr_dropout its own kernel */
  {
    const int64_t f = 7, ldw = f + 1;
    std::vector<float> vx = rand_vec(m, -1, 1), w = rand_vec(nc * ldw, -1, 1), g = rand_vec(nr * f, -1, 1);
    std::vector<float> xy_k((size_t)(nr * ldw), -7.0f), xy_c((size_t)(nr * ldw), -7.0f);
    emu_launch(kGrid, kBlock, spmm_edge_kernel, e, (const float *)vx.data(), (int64_t)1, f,
               (const float *)w.data(), ldw, xy_k.data(), ldw);
    cpu->csr_mm(cpu, &e, vx.data(), f, w.data(), ldw, xy_c.data(), ldw);
    same("csr_mm (one-head spmm_edge_kernel)", xy_k, xy_c);
    std::vector<float> xg_k((size_t)(nc * f)), xg_c((size_t)(nc * f));
    emu_launch(kGrid, kBlock, spmm_edge_bwd_x_kernel, e, (const float *)vx.data(), (int64_t)1, f,
               (const float *)g.data(), f, xg_k.data(), f);
    cpu->csr_mm_t(cpu, &e, vx.data(), f, g.data(), f, xg_c.data(), f);
    same("csr_mm_t (one-head spmm_edge_bwd_x_kernel)", xg_k, xg_c);
    std::vector<float> xd_k((size_t)m), xd_c((size_t)m);
    const cg_dropout_key fkey = {0x0123456789abcdefull, 9, 0};
    emu_launch(kGrid, kBlock, csr_dropout_kernel, e, (const float *)vx.data(), xd_k.data(),
               (const int32_t *)gid.data(), 0.4f, 1.0f / (1.0f - 0.4f), fkey.seed, fkey.epoch, fkey.layer);
    cpu->csr_dropout(cpu, &e, vx.data(), xd_c.data(), gid.data(), 0.4f, fkey);
    same("csr_dropout", xd_k, xd_c);
  }

  cg_edges_free(cpu, &e);
  cg_csr_free(&a);
  cg_backend_destroy(&cpu);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_all)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
