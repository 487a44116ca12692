/* cuda/attn.cu — graph attention (GAT) kernels: edge scores and their backward, edge
 * softmax forward/backward, attention dropout, per-edge SpMM forward and its two
 * backward products, ELU forward/backward; the dropout of sparse input features'
 * stored values (csr_dropout; their products X·W and Xᵀ·dY are the per-edge SpMM and
 * its backward at one head).
 *
 * Variants held here (one each). Every kernel is a grid-stride loop whose thread owns
 * the outputs of one core/attn.h element function — the CPU backend's own source
 * (core/cpu_attn.c loops over the same functions) — so the two backends sum in the
 * same order; the GPU's expf/expm1f and nvcc's fused multiply-adds may move the last
 * bits (compared with a tolerance in test_cuda_attn).
 * - One thread per (row, head) for scores, softmax, the row sums of the scores'
 *   backward and dalpha; per (column, head) for the column sums, through the edge
 *   transpose (struct cg_edges): no atomics, deterministic run to run.
 * - One thread per output element (row, column) of the per-edge SpMM and of its
 *   backward with respect to x (through the transpose); consecutive threads read
 *   consecutive columns of a gathered row.
 * - Attention dropout: one thread per row (its edges), Philox keyed as core/attn.h
 *   says, bit-identical masks to the CPU's. Sparse-feature dropout likewise, one
 *   thread per row, keyed as the dense dropout of the same element.
 * - Under CGK_CUDA_EMULATE (cuda/tests/cuda_emu.h) the launchers are left out and
 *   the kernels run on the CPU (test_attn_emu).
 * Assumptions: a graph's rows and columns fit int32 (cg_edges_upload checks); sizes
 * are int64 and grids capped, so any size launches. */
#include <math.h>
#include <stdint.h>

#include "core/attn.h"
#include "cuda/cuda_kernels_internal.h"

namespace {

constexpr int kAttnThreads = 256;
constexpr int64_t kAttnMaxBlocks = 8192;

inline unsigned attn_grid(int64_t work) {
  int64_t b = (work + kAttnThreads - 1) / kAttnThreads;
  if (b < 1) b = 1;
  if (b > kAttnMaxBlocks) b = kAttnMaxBlocks;
  return (unsigned)b;
}

__device__ __forceinline__ int64_t attn_tid() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t attn_stride() { return (int64_t)gridDim.x * blockDim.x; }

__global__ void edge_scores_kernel(cg_edges e, const float *el, int64_t lde, const float *er,
                                   int64_t ldr, int64_t H, float slope, float *s) {
  const int64_t n = e.nrows * H;
  for (int64_t i = attn_tid(); i < n; i += attn_stride())
    cg_attn_scores_rh(&e, el, lde, er, ldr, H, slope, s, i / H, i % H);
}

__global__ void edge_scores_bwd_kernel(cg_edges e, const float *s, const float *ds, int64_t H,
                                       float slope, float *del, int64_t lde, float *der, int64_t ldr) {
  const int64_t nd = e.nrows * H, n = nd + e.ncols * H;
  for (int64_t i = attn_tid(); i < n; i += attn_stride()) {
    if (i < nd)
      cg_attn_scores_bwd_dst(&e, s, ds, H, slope, der, ldr, i / H, i % H);
    else
      cg_attn_scores_bwd_src(&e, s, ds, H, slope, del, lde, (i - nd) / H, (i - nd) % H);
  }
}

__global__ void edge_softmax_kernel(cg_edges e, const float *s, int64_t H, float *alpha) {
  const int64_t n = e.nrows * H;
  for (int64_t i = attn_tid(); i < n; i += attn_stride()) cg_attn_softmax_rh(&e, s, H, alpha, i / H, i % H);
}

__global__ void edge_softmax_bwd_kernel(cg_edges e, const float *alpha, const float *dalpha,
                                        int64_t H, float *ds) {
  const int64_t n = e.nrows * H;
  for (int64_t i = attn_tid(); i < n; i += attn_stride())
    cg_attn_softmax_bwd_rh(&e, alpha, dalpha, H, ds, i / H, i % H);
}

__global__ void edge_dropout_kernel(cg_edges e, const float *in, float *out, int64_t H,
                                    const int32_t *gid, float p, float scale, uint64_t seed,
                                    uint32_t epoch, uint32_t layer) {
  for (int64_t r = attn_tid(); r < e.nrows; r += attn_stride()) {
    const uint32_t dst = (uint32_t)gid[r];
    for (int64_t k = e.rowptr[r]; k < e.rowptr[r + 1]; k++)
      cg_attn_dropout_edge(in + k * H, out + k * H, H, (uint32_t)gid[e.colidx[k]], dst, p, scale,
                           seed, epoch, layer);
  }
}

__global__ void csr_dropout_kernel(cg_edges x, const float *in, float *out, const int32_t *gid, float p,
                                   float scale, uint64_t seed, uint32_t epoch, uint32_t layer) {
  for (int64_t r = attn_tid(); r < x.nrows; r += attn_stride())
    cg_csr_dropout_row(&x, in, out, r, (uint32_t)gid[r], p, scale, seed, epoch, layer);
}

__global__ void spmm_edge_kernel(cg_edges e, const float *alpha, int64_t H, int64_t F,
                                 const float *x, int64_t ldx, float *y, int64_t ldy) {
  const int64_t w = H * F, n = e.nrows * w;
  for (int64_t i = attn_tid(); i < n; i += attn_stride()) {
    const int64_t v = i / w, c = i - v * w;
    y[v * ldy + c] = cg_attn_spmm_elem(&e, alpha, H, F, x, ldx, v, c);
  }
}

__global__ void spmm_edge_bwd_x_kernel(cg_edges e, const float *alpha, int64_t H, int64_t F,
                                       const float *dy, int64_t lddy, float *dx, int64_t lddx) {
  const int64_t w = H * F, n = e.ncols * w;
  for (int64_t i = attn_tid(); i < n; i += attn_stride()) {
    const int64_t u = i / w, c = i - u * w;
    dx[u * lddx + c] = cg_attn_spmm_bwd_x_elem(&e, alpha, H, F, dy, lddy, u, c);
  }
}

__global__ void spmm_edge_bwd_alpha_kernel(cg_edges e, int64_t H, int64_t F, const float *x,
                                           int64_t ldx, const float *dy, int64_t lddy, float *dalpha) {
  const int64_t n = e.nrows * H;
  for (int64_t i = attn_tid(); i < n; i += attn_stride())
    cg_attn_spmm_bwd_alpha_rh(&e, H, F, x, ldx, dy, lddy, dalpha, i / H, i % H);
}

__global__ void elu_fwd_kernel(const float *x, float *y, int64_t n) { /* y may alias x */
  for (int64_t i = attn_tid(); i < n; i += attn_stride()) y[i] = cg_elu(x[i]);
}

__global__ void elu_bwd_kernel(const float *y, float *dy, int64_t n) {
  for (int64_t i = attn_tid(); i < n; i += attn_stride()) dy[i] = cg_elu_grad(y[i], dy[i]);
}

}  // namespace

#ifndef CGK_CUDA_EMULATE /* cuda/tests/cuda_emu.h runs the kernels on the CPU */
extern "C" {

void cgk_edge_scores(cudaStream_t s, const struct cg_edges *e, const float *el, int64_t lde,
                     const float *er, int64_t ldr, int64_t heads, float slope, float *out) {
  if (e->nrows * heads <= 0) return;
  edge_scores_kernel<<<attn_grid(e->nrows * heads), kAttnThreads, 0, s>>>(*e, el, lde, er, ldr, heads,
                                                                          slope, out);
  CG_CUDA_LAUNCH_CHECK("edge_scores_kernel");
}

void cgk_edge_scores_bwd(cudaStream_t s, const struct cg_edges *e, const float *sc, const float *ds,
                         int64_t heads, float slope, float *del, int64_t lde, float *der, int64_t ldr) {
  const int64_t n = (e->nrows + e->ncols) * heads;
  if (n <= 0) return;
  edge_scores_bwd_kernel<<<attn_grid(n), kAttnThreads, 0, s>>>(*e, sc, ds, heads, slope, del, lde, der,
                                                               ldr);
  CG_CUDA_LAUNCH_CHECK("edge_scores_bwd_kernel");
}

void cgk_edge_softmax(cudaStream_t s, const struct cg_edges *e, const float *sc, int64_t heads,
                      float *alpha) {
  if (e->nrows * heads <= 0) return;
  edge_softmax_kernel<<<attn_grid(e->nrows * heads), kAttnThreads, 0, s>>>(*e, sc, heads, alpha);
  CG_CUDA_LAUNCH_CHECK("edge_softmax_kernel");
}

void cgk_edge_softmax_bwd(cudaStream_t s, const struct cg_edges *e, const float *alpha,
                          const float *dalpha, int64_t heads, float *ds) {
  if (e->nrows * heads <= 0) return;
  edge_softmax_bwd_kernel<<<attn_grid(e->nrows * heads), kAttnThreads, 0, s>>>(*e, alpha, dalpha, heads,
                                                                               ds);
  CG_CUDA_LAUNCH_CHECK("edge_softmax_bwd_kernel");
}

void cgk_edge_dropout(cudaStream_t s, const struct cg_edges *e, const float *in, float *out,
                      int64_t heads, const int32_t *gid, float p, uint64_t seed, uint32_t epoch,
                      uint32_t layer) {
  const int64_t n = e->nnz * heads;
  if (n <= 0) return;
  if (p <= 0.0f) { /* keeps everything, draws nothing */
    if (out != in)
      CG_CUDA_FATAL_ON(cudaMemcpyAsync(out, in, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (p >= 1.0f) {
    cgk_fill(s, out, n, 0.0f);
    return;
  }
  edge_dropout_kernel<<<attn_grid(e->nrows), kAttnThreads, 0, s>>>(*e, in, out, heads, gid, p,
                                                                   1.0f / (1.0f - p), seed, epoch, layer);
  CG_CUDA_LAUNCH_CHECK("edge_dropout_kernel");
}

void cgk_csr_dropout(cudaStream_t s, const struct cg_edges *x, const float *in, float *out,
                     const int32_t *gid, float p, uint64_t seed, uint32_t epoch, uint32_t layer) {
  const int64_t n = x->nnz;
  if (n <= 0) return;
  if (p <= 0.0f) { /* keeps everything, draws nothing */
    if (out != in)
      CG_CUDA_FATAL_ON(cudaMemcpyAsync(out, in, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (p >= 1.0f) {
    cgk_fill(s, out, n, 0.0f);
    return;
  }
  csr_dropout_kernel<<<attn_grid(x->nrows), kAttnThreads, 0, s>>>(*x, in, out, gid, p, 1.0f / (1.0f - p),
                                                                  seed, epoch, layer);
  CG_CUDA_LAUNCH_CHECK("csr_dropout_kernel");
}

void cgk_spmm_edge(cudaStream_t s, const struct cg_edges *e, const float *alpha, int64_t heads,
                   int64_t f, const float *x, int64_t ldx, float *y, int64_t ldy) {
  const int64_t n = e->nrows * heads * f;
  if (n <= 0) return;
  spmm_edge_kernel<<<attn_grid(n), kAttnThreads, 0, s>>>(*e, alpha, heads, f, x, ldx, y, ldy);
  CG_CUDA_LAUNCH_CHECK("spmm_edge_kernel");
}

void cgk_spmm_edge_bwd_x(cudaStream_t s, const struct cg_edges *e, const float *alpha, int64_t heads,
                         int64_t f, const float *dy, int64_t lddy, float *dx, int64_t lddx) {
  const int64_t n = e->ncols * heads * f;
  if (n <= 0) return;
  spmm_edge_bwd_x_kernel<<<attn_grid(n), kAttnThreads, 0, s>>>(*e, alpha, heads, f, dy, lddy, dx, lddx);
  CG_CUDA_LAUNCH_CHECK("spmm_edge_bwd_x_kernel");
}

void cgk_spmm_edge_bwd_alpha(cudaStream_t s, const struct cg_edges *e, int64_t heads, int64_t f,
                             const float *x, int64_t ldx, const float *dy, int64_t lddy, float *dalpha) {
  if (e->nrows * heads <= 0) return;
  spmm_edge_bwd_alpha_kernel<<<attn_grid(e->nrows * heads), kAttnThreads, 0, s>>>(*e, heads, f, x, ldx,
                                                                                  dy, lddy, dalpha);
  CG_CUDA_LAUNCH_CHECK("spmm_edge_bwd_alpha_kernel");
}

void cgk_elu_fwd(cudaStream_t s, const float *x, float *y, int64_t n) {
  if (n <= 0) return;
  elu_fwd_kernel<<<attn_grid(n), kAttnThreads, 0, s>>>(x, y, n);
  CG_CUDA_LAUNCH_CHECK("elu_fwd_kernel");
}

void cgk_elu_bwd(cudaStream_t s, const float *y, float *dy, int64_t n) {
  if (n <= 0) return;
  elu_bwd_kernel<<<attn_grid(n), kAttnThreads, 0, s>>>(y, dy, n);
  CG_CUDA_LAUNCH_CHECK("elu_bwd_kernel");
}

}  // extern "C"
#endif
