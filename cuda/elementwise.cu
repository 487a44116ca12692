/* cuda/elementwise.cu — elementwise kernels, dropout, Adam, halo row gather/scatter
 * and the deterministic column sum (bias / layernorm parameter gradients).
 *
 * Variants held here (one each): fill, axpy, scale, strided scale, bias add,
 * ReLU forward/backward, dropout, Adam/AdamW, SGD, gather rows, scatter-add rows
 * (atomicAdd), column sum (two passes).
 *
 * Assumptions
 * - All sizes are int64 and kernels are grid-stride loops over a capped grid, so
 *   any size works and the launch configuration never fails for size reasons.
 * - Dropout uses core/philox.h (host+device under nvcc): one Philox call per group
 *   of 4 columns, lane j of the output is column 4g+j, i.e. exactly
 *   cg_dropout_uniform(seed, epoch, layer, gid, col); the mask is bit-identical to
 *   the CPU backend's.
 * - Adam is core/adam.h's cg_adam_update, the CPU backend's own source, with the
 *   coefficients of the step computed on the host (cg_adam_coefs_make). nvcc fuses
 *   its multiply-adds, so the result may differ from the CPU's in the last bits.
 * - Under CGK_CUDA_EMULATE (cuda/tests/cuda_emu.h) the launchers are left out and
 *   the kernels run on the CPU (test_adam_emu).
 * - SGD (momentum, L2 in the gradient) is core/sgd.h's cg_sgd_update, likewise.
 * - Column sums accumulate in double (as the CPU backend) and are deterministic:
 *   rows are cut into R fixed chunks (R depends only
 *   on rows, cols and the scratch size), each chunk sums in a fixed order, then the
 *   R partials are added in order. No atomics. scatter_add_rows uses atomics (the
 *   order of additions into a repeated destination row may vary run to run).
 */
#include <math.h>
#include <stdint.h>

#include "core/adam.h"
#include "core/philox.h"
#include "core/sgd.h"
#include "cuda/cuda_kernels_internal.h"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192; /* grid cap for grid-stride loops (>= 60 blocks/SM on H100) */

inline unsigned grid_for(int64_t work, int64_t per_block = kThreads) {
  int64_t b = (work + per_block - 1) / per_block;
  if (b < 1) b = 1;
  if (b > kMaxBlocks) b = kMaxBlocks;
  return (unsigned)b;
}

__device__ __forceinline__ int64_t gtid() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t gstride() { return (int64_t)gridDim.x * blockDim.x; }

__global__ void fill_kernel(float *__restrict__ x, int64_t n, float v) {
  for (int64_t i = gtid(); i < n; i += gstride()) x[i] = v;
}

__global__ void axpy_kernel(int64_t n, float a, const float *__restrict__ x, float *__restrict__ y) {
  for (int64_t i = gtid(); i < n; i += gstride()) y[i] += a * x[i];
}

__global__ void scale_kernel(int64_t n, float a, float *__restrict__ x) {
  for (int64_t i = gtid(); i < n; i += gstride()) x[i] *= a;
}

__global__ void scale_strided_kernel(float *__restrict__ y, int64_t rows, int64_t cols, int64_t ld,
                                     float beta) {
  int64_t n = rows * cols;
  for (int64_t i = gtid(); i < n; i += gstride()) {
    int64_t r = i / cols, c = i - r * cols;
    float *p = y + r * ld + c;
    *p = beta == 0.0f ? 0.0f : beta * *p; /* beta == 0 must not propagate NaN from y */
  }
}

__global__ void bias_add_kernel(float *__restrict__ y, const float *__restrict__ bias, int64_t rows,
                                int64_t cols) {
  int64_t n = rows * cols;
  for (int64_t i = gtid(); i < n; i += gstride()) y[i] += bias[i % cols];
}

__global__ void relu_fwd_kernel(const float *x, float *y, int64_t n) { /* y may alias x */
  for (int64_t i = gtid(); i < n; i += gstride()) {
    float v = x[i];
    y[i] = !(v <= 0.0f) ? v : 0.0f; /* a NaN passes, as on the CPU backend (cpu_relu_fwd) */
  }
}

__global__ void relu_bwd_kernel(const float *__restrict__ y, float *__restrict__ dy, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride())
    if (!(y[i] > 0.0f)) dy[i] = 0.0f;
}

/* The backward of hd = dropout(relu(x)) from the dropout's output (core/ops.h). */
__global__ void dropout_relu_bwd_kernel(const float *__restrict__ hd, float *__restrict__ dy, int64_t n,
                                        float scale) {
  for (int64_t i = gtid(); i < n; i += gstride()) dy[i] = hd[i] > 0.0f ? dy[i] * scale : 0.0f;
}

/* One thread per (row, group of 4 columns): one Philox call gives the 4 uniforms. */
/* One thread per group of 4 columns of a row (one Philox call). VEC4: cols % 4 == 0
 * and both pointers 16-byte aligned, so the group is one float4 load and store.
 * The row of group t comes from a 32-bit division when all indices fit (the
 * common case; a 64-bit division is a long software sequence on the GPU). */
template <bool VEC4>
__global__ void dropout_kernel(const float *in, float *out, int64_t rows, int64_t cols,
                               const int32_t *__restrict__ gid, float p, float inv_keep,
                               uint64_t seed, uint32_t epoch, uint32_t layer) {
  const int64_t groups = (cols + 3) / 4;
  const int64_t n = rows * groups;
  const bool narrow = n <= (int64_t)UINT32_MAX;
  for (int64_t t = gtid(); t < n; t += gstride()) {
    int64_t r;
    if (narrow)
      r = (uint32_t)t / (uint32_t)groups;
    else
      r = t / groups;
    const int64_t g = t - r * groups;
    cg_philox_out o = cg_philox4x32_10((uint32_t)g, (uint32_t)gid[r], layer, epoch,
                                       (uint32_t)seed, (uint32_t)(seed >> 32));
    const int64_t base = r * cols + 4 * g;
    if (VEC4) {
      float4 v = *reinterpret_cast<const float4 *>(in + base);
      v.x = cg_dropout_keep(cg_u32_to_unit(o.v[0]), p) ? v.x * inv_keep : 0.0f;
      v.y = cg_dropout_keep(cg_u32_to_unit(o.v[1]), p) ? v.y * inv_keep : 0.0f;
      v.z = cg_dropout_keep(cg_u32_to_unit(o.v[2]), p) ? v.z * inv_keep : 0.0f;
      v.w = cg_dropout_keep(cg_u32_to_unit(o.v[3]), p) ? v.w * inv_keep : 0.0f;
      *reinterpret_cast<float4 *>(out + base) = v;
    } else {
#pragma unroll
      for (int j = 0; j < 4; j++) {
        if (4 * g + j < cols) {
          float u = cg_u32_to_unit(o.v[j]);
          out[base + j] = cg_dropout_keep(u, p) ? in[base + j] * inv_keep : 0.0f;
        }
      }
    }
  }
}

__global__ void copy_kernel(const float *__restrict__ in, float *__restrict__ out, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) out[i] = in[i];
}

/* torch.optim.Adam / AdamW: core/adam.h's update, the CPU backend's source. */
__global__ void adam_kernel(float *__restrict__ w, const float *__restrict__ g, float *__restrict__ m,
                            float *__restrict__ v, int64_t n, cg_adam_coefs c) {
  for (int64_t i = gtid(); i < n; i += gstride()) cg_adam_update(c, w + i, g[i], m + i, v + i);
}

/* torch.optim.SGD (momentum, no dampening): core/sgd.h's update, the CPU backend's
 * source. Compiled and run on the CPU under emulation (test_adam_emu); not yet run
 * on a GPU. */
__global__ void sgd_kernel(float *__restrict__ w, const float *__restrict__ g, float *__restrict__ buf,
                           int64_t n, cg_sgd_params p) {
  for (int64_t i = gtid(); i < n; i += gstride()) cg_sgd_update(p, w + i, g[i], buf + i);
}

__global__ void gather_rows_kernel(const float *__restrict__ src, int64_t cols,
                                   const int32_t *__restrict__ idx, int64_t n, float *__restrict__ dst) {
  int64_t total = n * cols;
  for (int64_t t = gtid(); t < total; t += gstride()) {
    int64_t i = t / cols, c = t - i * cols;
    dst[t] = src[(int64_t)idx[i] * cols + c];
  }
}

__global__ void scatter_add_rows_kernel(const float *__restrict__ src, int64_t cols,
                                        const int32_t *__restrict__ idx, int64_t n,
                                        float *__restrict__ dst) {
  int64_t total = n * cols;
  for (int64_t t = gtid(); t < total; t += gstride()) {
    int64_t i = t / cols, c = t - i * cols;
    atomicAdd(dst + (int64_t)idx[i] * cols + c, src[t]);
  }
}

/* Pass 1 of the column sum. Block (32, 8) covers 32 columns of one row chunk; the
 * 8 row lanes stride through the chunk in double, then are added in lane order.
 * TOut is double (partials in the scratch) or float (single chunk: the result). */
template <bool kLN, typename TOut>
__global__ void colsum_partial_kernel(const float *__restrict__ dy, const float *__restrict__ x,
                                      const float *__restrict__ mean, const float *__restrict__ rstd,
                                      int64_t rows, int64_t cols, int64_t chunk,
                                      TOut *__restrict__ p1, TOut *__restrict__ p2) {
  __shared__ double s1[8][33];
  __shared__ double s2[8][33];
  int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
  int64_t r0 = (int64_t)blockIdx.y * chunk;
  int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
  double a1 = 0.0, a2 = 0.0;
  if (c < cols) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      const float d = dy[r * cols + c];
      if (kLN) {
        a1 += (double)(d * ((x[r * cols + c] - mean[r]) * rstd[r])); /* as the CPU */
        a2 += d;
      } else {
        a1 += d;
      }
    }
  }
  s1[threadIdx.y][threadIdx.x] = a1;
  s2[threadIdx.y][threadIdx.x] = a2;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double t1 = 0.0, t2 = 0.0;
    for (int j = 0; j < 8; j++) {
      t1 += s1[j][threadIdx.x];
      t2 += s2[j][threadIdx.x];
    }
    p1[(int64_t)blockIdx.y * cols + c] = (TOut)t1;
    if (kLN) p2[(int64_t)blockIdx.y * cols + c] = (TOut)t2;
  }
}

/* Pass 2: out[c] = sum over the chunk partials, in chunk order. */
__global__ void colsum_final_kernel(const double *__restrict__ p, int64_t nchunks, int64_t cols,
                                    float *__restrict__ out) {
  for (int64_t c = gtid(); c < cols; c += gstride()) {
    double t = 0.0;
    for (int64_t j = 0; j < nchunks; j++) t += p[j * cols + c];
    out[c] = (float)t;
  }
}

} // namespace

#ifndef CGK_CUDA_EMULATE /* cuda/tests/cuda_emu.h runs the kernels on the CPU */
extern "C" {

void cgk_fill(cudaStream_t s, float *x, int64_t n, float value) {
  if (n <= 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, s>>>(x, n, value);
  CG_CUDA_LAUNCH_CHECK("fill_kernel");
}

void cgk_axpy(cudaStream_t s, int64_t n, float alpha, const float *x, float *y) {
  if (n <= 0) return;
  axpy_kernel<<<grid_for(n), kThreads, 0, s>>>(n, alpha, x, y);
  CG_CUDA_LAUNCH_CHECK("axpy_kernel");
}

void cgk_scale(cudaStream_t s, int64_t n, float alpha, float *x) {
  if (n <= 0) return;
  scale_kernel<<<grid_for(n), kThreads, 0, s>>>(n, alpha, x);
  CG_CUDA_LAUNCH_CHECK("scale_kernel");
}

void cgk_scale_strided(cudaStream_t s, float *y, int64_t rows, int64_t cols, int64_t ld, float beta) {
  if (rows <= 0 || cols <= 0) return;
  scale_strided_kernel<<<grid_for(rows * cols), kThreads, 0, s>>>(y, rows, cols, ld, beta);
  CG_CUDA_LAUNCH_CHECK("scale_strided_kernel");
}

void cgk_bias_add(cudaStream_t s, float *y, const float *bias, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  bias_add_kernel<<<grid_for(rows * cols), kThreads, 0, s>>>(y, bias, rows, cols);
  CG_CUDA_LAUNCH_CHECK("bias_add_kernel");
}

void cgk_relu_fwd(cudaStream_t s, const float *x, float *y, int64_t n) {
  if (n <= 0) return;
  relu_fwd_kernel<<<grid_for(n), kThreads, 0, s>>>(x, y, n);
  CG_CUDA_LAUNCH_CHECK("relu_fwd_kernel");
}

void cgk_relu_bwd(cudaStream_t s, const float *y, float *dy, int64_t n) {
  if (n <= 0) return;
  relu_bwd_kernel<<<grid_for(n), kThreads, 0, s>>>(y, dy, n);
  CG_CUDA_LAUNCH_CHECK("relu_bwd_kernel");
}

void cgk_dropout_relu_bwd(cudaStream_t s, const float *hd, float *dy, int64_t n, float scale) {
  if (n <= 0) return;
  dropout_relu_bwd_kernel<<<grid_for(n), kThreads, 0, s>>>(hd, dy, n, scale);
  CG_CUDA_LAUNCH_CHECK("dropout_relu_bwd_kernel");
}

void cgk_dropout(cudaStream_t s, const float *in, float *out, int64_t rows, int64_t cols,
                 const int32_t *gid, float p, uint64_t seed, uint32_t epoch, uint32_t layer) {
  if (rows <= 0 || cols <= 0) return;
  if (p <= 0.0f) { /* keeps everything and draws no random numbers (core/philox.h) */
    if (in != out) {
      copy_kernel<<<grid_for(rows * cols), kThreads, 0, s>>>(in, out, rows * cols);
      CG_CUDA_LAUNCH_CHECK("copy_kernel");
    }
    return;
  }
  if (p >= 1.0f) { /* u < 1 always: nothing is kept (and 1/(1-p) is not finite) */
    cgk_fill(s, out, rows * cols, 0.0f);
    return;
  }
  /* Same expression as the CPU backend: kept values times 1/(1-p) in float. */
  float inv_keep = 1.0f / (1.0f - p);
  int64_t work = rows * ((cols + 3) / 4);
  const bool vec4 = cols % 4 == 0 && ((uintptr_t)in | (uintptr_t)out) % 16 == 0;
  if (vec4)
    dropout_kernel<true><<<grid_for(work), kThreads, 0, s>>>(in, out, rows, cols, gid, p, inv_keep,
                                                             seed, epoch, layer);
  else
    dropout_kernel<false><<<grid_for(work), kThreads, 0, s>>>(in, out, rows, cols, gid, p, inv_keep,
                                                              seed, epoch, layer);
  CG_CUDA_LAUNCH_CHECK("dropout_kernel");
}

void cgk_adam(cudaStream_t s, float *w, const float *g, float *m, float *v, int64_t n,
              const struct cg_adam_coefs *c) {
  if (n <= 0) return;
  adam_kernel<<<grid_for(n), kThreads, 0, s>>>(w, g, m, v, n, *c);
  CG_CUDA_LAUNCH_CHECK("adam_kernel");
}

void cgk_sgd(cudaStream_t s, float *w, const float *g, float *buf, int64_t n, const struct cg_sgd_params *p) {
  if (n <= 0) return;
  sgd_kernel<<<grid_for(n), kThreads, 0, s>>>(w, g, buf, n, *p);
  CG_CUDA_LAUNCH_CHECK("sgd_kernel");
}

void cgk_gather_rows(cudaStream_t s, const float *src, int64_t cols, const int32_t *idx, int64_t n,
                     float *dst) {
  if (n <= 0 || cols <= 0) return;
  gather_rows_kernel<<<grid_for(n * cols), kThreads, 0, s>>>(src, cols, idx, n, dst);
  CG_CUDA_LAUNCH_CHECK("gather_rows_kernel");
}

void cgk_scatter_add_rows(cudaStream_t s, const float *src, int64_t cols, const int32_t *idx,
                          int64_t n, float *dst) {
  if (n <= 0 || cols <= 0) return;
  scatter_add_rows_kernel<<<grid_for(n * cols), kThreads, 0, s>>>(src, cols, idx, n, dst);
  CG_CUDA_LAUNCH_CHECK("scatter_add_rows_kernel");
}

void cgk_colsum(cudaStream_t s, int layernorm, const float *dy, const float *x, const float *mean,
                const float *rstd, int64_t rows, int64_t cols, float *out1, float *out2,
                double *scratch, size_t scratch_doubles) {
  if (cols <= 0) return;
  const bool ln = layernorm != 0; /* not x != NULL: with rows = 0, x may be NULL */
  if (rows <= 0) {
    cgk_fill(s, out1, cols, 0.0f);
    if (ln) cgk_fill(s, out2, cols, 0.0f);
    return;
  }
  /* R chunks of >= 64 rows, at most 1024 (enough blocks to fill the GPU for the
   * usual 16..1024 columns), limited by the scratch: 2 * R * cols doubles. */
  int64_t nch = (rows + 63) / 64;
  if (nch > 1024) nch = 1024;
  int64_t fit = (int64_t)(scratch_doubles / (size_t)(2 * cols));
  if (nch > fit) nch = fit;
  if (nch < 1) nch = 1;
  int64_t chunk = (rows + nch - 1) / nch;
  nch = (rows + chunk - 1) / chunk; /* no empty trailing chunk */
  dim3 grid((unsigned)((cols + 31) / 32), (unsigned)nch);
  dim3 block(32, 8);
  if (nch == 1) { /* one chunk: its sum is the result */
    if (ln)
      colsum_partial_kernel<true, float><<<grid, block, 0, s>>>(dy, x, mean, rstd, rows, cols,
                                                                chunk, out1, out2);
    else
      colsum_partial_kernel<false, float><<<grid, block, 0, s>>>(dy, x, mean, rstd, rows, cols,
                                                                 chunk, out1, out2);
    CG_CUDA_LAUNCH_CHECK("colsum_partial_kernel");
    return;
  }
  double *p1 = scratch, *p2 = scratch + nch * cols;
  if (ln)
    colsum_partial_kernel<true, double><<<grid, block, 0, s>>>(dy, x, mean, rstd, rows, cols, chunk,
                                                               p1, p2);
  else
    colsum_partial_kernel<false, double><<<grid, block, 0, s>>>(dy, x, mean, rstd, rows, cols,
                                                                chunk, p1, p2);
  CG_CUDA_LAUNCH_CHECK("colsum_partial_kernel");
  colsum_final_kernel<<<grid_for(cols), kThreads, 0, s>>>(p1, nch, cols, out1);
  CG_CUDA_LAUNCH_CHECK("colsum_final_kernel");
  if (ln) {
    colsum_final_kernel<<<grid_for(cols), kThreads, 0, s>>>(p2, nch, cols, out2);
    CG_CUDA_LAUNCH_CHECK("colsum_final_kernel");
  }
}

} // extern "C"
#endif
