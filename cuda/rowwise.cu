/* cuda/rowwise.cu — one-warp-per-row kernels: layernorm forward / backward (dx),
 * softmax cross-entropy, sigmoid binary cross-entropy, evaluation counts.
 *
 * Variants held here (one each): layernorm_fwd, layernorm_bwd_dx, xent (+ final
 * loss reduction), bce, eval_counts (single-label argmax, multi-label TP/FP/FN).
 *
 * Assumptions
 * - Rows are dense and contiguous (row stride = cols), as ops.h specifies.
 * - Warps stride over rows (grid-stride at warp granularity), lanes over columns,
 *   so any number of columns works; statistics are reduced with warp shuffles.
 * - Layernorm uses two passes over the row (mean, then centred variance), the
 *   biased variance (divide by cols) and rstd = 1/sqrt(var + eps).
 * - Loss sums are deterministic: the grid is a function of n_idx only, each block
 *   writes one double partial (its 8 warps added in order) and one block adds the
 *   partials in a fixed tree order.
 * - The arithmetic mirrors core/cpu_backend.c (float per element where the CPU uses
 *   float, double sums and layernorm statistics in double) so the two backends
 *   differ only by summation order, not by formula.
 * - Cross-entropy's row maximum is fmaxf's (a NaN skipped; the CPU keeps one in column
 *   0): the shift only, a NaN or +inf in the row makes its loss and every gradient NaN on
 *   both backends (core/ops.h, test_rowwise_emu's test_xent_nan).
 * - Argmax: the first maximum wins (lowest column among equal maxima), as on the CPU;
 *   NaN as the CPU's scan treats it too (a NaN in column 0 wins, any other never).
 * - Under CGK_CUDA_EMULATE (cuda/tests/cuda_emu.h) the launchers are left out and
 *   the kernels run on the CPU (test_rowwise_emu).
 */
#include <math.h>
#include <stdint.h>

#include "cuda/cuda_kernels_internal.h"

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = 32 * kWarpsPerBlock;
constexpr unsigned kFull = 0xffffffffu;

inline unsigned row_grid(int64_t rows, int64_t cap) {
  int64_t b = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (b < 1) b = 1;
  if (b > cap) b = cap;
  return (unsigned)b;
}

__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}

__device__ __forceinline__ int64_t warp_id() {
  return ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
}
__device__ __forceinline__ int64_t warp_count() { return ((int64_t)gridDim.x * blockDim.x) >> 5; }

__global__ void layernorm_fwd_kernel(const float *__restrict__ x, int64_t rows, int64_t cols,
                                     const float *__restrict__ gamma, const float *__restrict__ beta,
                                     float eps, float *__restrict__ y, float *__restrict__ mean,
                                     float *__restrict__ rstd) {
  int lane = threadIdx.x & 31;
  for (int64_t r = warp_id(); r < rows; r += warp_count()) {
    const float *xr = x + r * cols;
    double s = 0.0;
    for (int64_t c = lane; c < cols; c += 32) s += xr[c];
    const double mu = warp_sum_d(s) / (double)cols;
    double q = 0.0;
    for (int64_t c = lane; c < cols; c += 32) {
      double d = (double)xr[c] - mu;
      q += d * d;
    }
    const double rs = 1.0 / sqrt(warp_sum_d(q) / (double)cols + (double)eps);
    float *yr = y + r * cols;
    for (int64_t c = lane; c < cols; c += 32)
      yr[c] = (float)(((double)xr[c] - mu) * rs * gamma[c] + beta[c]);
    if (lane == 0) {
      mean[r] = (float)mu;
      rstd[r] = (float)rs;
    }
  }
}

/* dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)), g = dy * gamma. */
__global__ void layernorm_bwd_dx_kernel(const float *__restrict__ dy, const float *__restrict__ x,
                                        const float *__restrict__ mean, const float *__restrict__ rstd,
                                        const float *__restrict__ gamma, int64_t rows, int64_t cols,
                                        float *__restrict__ dx) {
  int lane = threadIdx.x & 31;
  for (int64_t r = warp_id(); r < rows; r += warp_count()) {
    const float *xr = x + r * cols, *dyr = dy + r * cols;
    const float mu = mean[r], rs = rstd[r];
    double sg = 0.0, sgx = 0.0;
    for (int64_t c = lane; c < cols; c += 32) {
      const float xh = (xr[c] - mu) * rs, g = dyr[c] * gamma[c];
      sg += g;
      sgx += (double)g * xh;
    }
    const float a = (float)(warp_sum_d(sg) / (double)cols);
    const float b = (float)(warp_sum_d(sgx) / (double)cols);
    float *dxr = dx + r * cols;
    for (int64_t c = lane; c < cols; c += 32) {
      const float xh = (xr[c] - mu) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - a - xh * b);
    }
  }
}

/* Adds the per-warp double values of a block in warp order into partials[blockIdx.x]. */
__device__ void block_partial(double warp_value, double *partials) {
  __shared__ double s[kWarpsPerBlock];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) s[w] = warp_value;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int j = 0; j < kWarpsPerBlock; j++) t += s[j];
    partials[blockIdx.x] = t;
  }
}

/* Rows or labels out of range set *bad (checked on the host after the sync, like
 * the CPU backend's check) and are skipped instead of read out of bounds. */
__global__ void xent_kernel(const float *__restrict__ logits, int64_t rows, int64_t cols,
                            const int32_t *__restrict__ labels, const int32_t *__restrict__ idx,
                            int64_t n_idx, float scale, float *__restrict__ dlogits,
                            double *__restrict__ partials, unsigned long long *__restrict__ bad) {
  int lane = threadIdx.x & 31;
  double acc = 0.0; /* meaningful in lane 0 */
  for (int64_t i = warp_id(); i < n_idx; i += warp_count()) {
    const int64_t r = idx[i];
    if (r < 0 || r >= rows || labels[r] < 0 || labels[r] >= cols) { /* warp-uniform */
      if (lane == 0) *bad = 1;
      continue;
    }
    const int32_t lab = labels[r];
    const float *xr = logits + r * cols;
    float mx = -INFINITY;
    for (int64_t c = lane; c < cols; c += 32) mx = fmaxf(mx, xr[c]);
    mx = warp_max(mx);
    double se = 0.0; /* same arithmetic as the CPU: float exp terms, double sum */
    for (int64_t c = lane; c < cols; c += 32) se += (double)expf(xr[c] - mx);
    se = warp_sum_d(se);
    if (lane == 0) acc += log(se) - ((double)xr[lab] - (double)mx);
    const float inv = (float)(1.0 / se);
    float *dr = dlogits + r * cols;
    for (int64_t c = lane; c < cols; c += 32) {
      const float d = scale * (expf(xr[c] - mx) * inv);
      dr[c] = c == lab ? d - scale : d;
    }
  }
  block_partial(acc, partials);
}

/* loss = max(z,0) - z t + log1p(exp(-|z|)); dloss/dz = sigmoid(z) - t (as the CPU). */
__global__ void bce_kernel(const float *__restrict__ logits, int64_t rows, int64_t cols,
                           const uint8_t *__restrict__ labels, const int32_t *__restrict__ idx,
                           int64_t n_idx, float scale, float *__restrict__ dlogits,
                           double *__restrict__ partials, unsigned long long *__restrict__ bad) {
  int lane = threadIdx.x & 31;
  double acc = 0.0;
  for (int64_t i = warp_id(); i < n_idx; i += warp_count()) {
    const int64_t r = idx[i];
    if (r < 0 || r >= rows) {
      if (lane == 0) *bad = 1;
      continue;
    }
    const float *xr = logits + r * cols;
    const uint8_t *yr = labels + r * cols;
    float *dr = dlogits + r * cols;
    double row = 0.0;
    for (int64_t c = lane; c < cols; c += 32) {
      const float z = xr[c], t = yr[c] ? 1.0f : 0.0f;
      const float e = expf(-fabsf(z));
      row += (double)(z > 0.0f ? z : 0.0f) - (double)z * t + log1p((double)e);
      const float sig = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
      dr[c] = scale * (sig - t);
    }
    row = warp_sum_d(row);
    if (lane == 0) acc += row;
  }
  block_partial(acc, partials);
}

/* One block adds the n partials in a fixed order: thread t sums t, t+256, ...,
 * then a fixed shared-memory tree. */
__global__ void sum_partials_kernel(const double *__restrict__ partials, int64_t n,
                                    double *__restrict__ out) {
  __shared__ double s[kThreads];
  double t = 0.0;
  for (int64_t j = threadIdx.x; j < n; j += kThreads) t += partials[j];
  s[threadIdx.x] = t;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = s[0];
}

__global__ void eval_single_kernel(const float *__restrict__ logits, int64_t cols,
                                   const int32_t *__restrict__ labels, const int32_t *__restrict__ idx,
                                   int64_t n_idx, unsigned long long *__restrict__ counts) {
  int lane = threadIdx.x & 31;
  unsigned long long correct = 0;
  for (int64_t i = warp_id(); i < n_idx; i += warp_count()) {
    int64_t r = idx[i];
    const float *xr = logits + r * cols;
    float bv = -INFINITY;
    int64_t bi = cols; /* sentinel larger than any column: the lane has no candidate */
    for (int64_t c = lane; c < cols; c += 32) {
      float v = xr[c];
      /* NaN as the CPU's scan (first strict maximum from column 0) treats it: in column 0
       * it is the argmax (nothing compares greater), elsewhere never taken. As +inf in
       * column 0 (ties go to the lowest column), skipped elsewhere, so no lane and no
       * merge below ever compares a NaN. */
      if (isnan(v)) {
        if (c != 0) continue;
        v = INFINITY;
      }
      if (bi == cols || v > bv) { /* a lane's columns ascend: strict > keeps the first */
        bv = v;
        bi = c;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      float ov = __shfl_xor_sync(kFull, bv, o);
      int64_t oi = __shfl_xor_sync(kFull, bi, o);
      if (oi != cols && (bi == cols || ov > bv || (ov == bv && oi < bi))) {
        bv = ov;
        bi = oi;
      }
    }
    if (lane == 0 && bi == (int64_t)labels[r]) correct++;
  }
  if (lane == 0 && correct) atomicAdd(&counts[0], correct);
}

__global__ void eval_multi_kernel(const float *__restrict__ logits, int64_t cols,
                                  const uint8_t *__restrict__ labels, const int32_t *__restrict__ idx,
                                  int64_t n_idx, unsigned long long *__restrict__ counts) {
  int lane = threadIdx.x & 31;
  unsigned long long tp = 0, fp = 0, fn = 0;
  for (int64_t i = warp_id(); i < n_idx; i += warp_count()) {
    int64_t r = idx[i];
    const float *xr = logits + r * cols;
    const uint8_t *yr = labels + r * cols;
    for (int64_t c = lane; c < cols; c += 32) {
      bool pred = xr[c] > 0.0f, y = yr[c] != 0;
      tp += pred && y;
      fp += pred && !y;
      fn += !pred && y;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    tp += __shfl_xor_sync(kFull, tp, o);
    fp += __shfl_xor_sync(kFull, fp, o);
    fn += __shfl_xor_sync(kFull, fn, o);
  }
  if (lane == 0) { /* integer sums: atomics are exact whatever their order */
    if (tp) atomicAdd(&counts[0], tp);
    if (fp) atomicAdd(&counts[1], fp);
    if (fn) atomicAdd(&counts[2], fn);
  }
}

} // namespace

#ifndef CGK_CUDA_EMULATE /* cuda/tests/cuda_emu.h runs the kernels on the CPU */
extern "C" {

void cgk_layernorm_fwd(cudaStream_t s, const float *x, int64_t rows, int64_t cols,
                       const float *gamma, const float *beta, float eps, float *y, float *mean,
                       float *rstd) {
  if (rows <= 0 || cols <= 0) return;
  layernorm_fwd_kernel<<<row_grid(rows, 8192), kThreads, 0, s>>>(x, rows, cols, gamma, beta, eps, y,
                                                                  mean, rstd);
  CG_CUDA_LAUNCH_CHECK("layernorm_fwd_kernel");
}

void cgk_layernorm_bwd_dx(cudaStream_t s, const float *dy, const float *x, const float *mean,
                          const float *rstd, const float *gamma, int64_t rows, int64_t cols,
                          float *dx) {
  if (rows <= 0 || cols <= 0) return;
  layernorm_bwd_dx_kernel<<<row_grid(rows, 8192), kThreads, 0, s>>>(dy, x, mean, rstd, gamma, rows,
                                                                     cols, dx);
  CG_CUDA_LAUNCH_CHECK("layernorm_bwd_dx_kernel");
}

void cgk_xent(cudaStream_t s, const float *logits, int64_t rows, int64_t cols,
              const int32_t *labels, const int32_t *idx, int64_t n_idx, float scale, float *dlogits,
              double *partials, double *d_loss, unsigned long long *d_bad) {
  CG_CUDA_FATAL_ON(cudaMemsetAsync(d_bad, 0, sizeof *d_bad, s));
  unsigned g = 0;
  if (n_idx > 0 && cols > 0) {
    g = row_grid(n_idx, CGK_LOSS_MAX_BLOCKS);
    xent_kernel<<<g, kThreads, 0, s>>>(logits, rows, cols, labels, idx, n_idx, scale, dlogits,
                                       partials, d_bad);
    CG_CUDA_LAUNCH_CHECK("xent_kernel");
  }
  sum_partials_kernel<<<1, kThreads, 0, s>>>(partials, (int64_t)g, d_loss);
  CG_CUDA_LAUNCH_CHECK("sum_partials_kernel");
}

void cgk_bce(cudaStream_t s, const float *logits, int64_t rows, int64_t cols,
             const uint8_t *labels, const int32_t *idx, int64_t n_idx, float scale, float *dlogits,
             double *partials, double *d_loss, unsigned long long *d_bad) {
  CG_CUDA_FATAL_ON(cudaMemsetAsync(d_bad, 0, sizeof *d_bad, s));
  unsigned g = 0;
  if (n_idx > 0 && cols > 0) {
    g = row_grid(n_idx, CGK_LOSS_MAX_BLOCKS);
    bce_kernel<<<g, kThreads, 0, s>>>(logits, rows, cols, labels, idx, n_idx, scale, dlogits,
                                      partials, d_bad);
    CG_CUDA_LAUNCH_CHECK("bce_kernel");
  }
  sum_partials_kernel<<<1, kThreads, 0, s>>>(partials, (int64_t)g, d_loss);
  CG_CUDA_LAUNCH_CHECK("sum_partials_kernel");
}

void cgk_eval_counts(cudaStream_t s, const float *logits, int64_t cols, const int32_t *labels,
                     const uint8_t *mlabels, const int32_t *idx, int64_t n_idx,
                     unsigned long long *d_counts) {
  CG_CUDA_FATAL_ON(cudaMemsetAsync(d_counts, 0, 3 * sizeof(unsigned long long), s));
  if (n_idx <= 0 || cols <= 0) return;
  unsigned g = row_grid(n_idx, 4096);
  if (mlabels)
    eval_multi_kernel<<<g, kThreads, 0, s>>>(logits, cols, mlabels, idx, n_idx, d_counts);
  else
    eval_single_kernel<<<g, kThreads, 0, s>>>(logits, cols, labels, idx, n_idx, d_counts);
  CG_CUDA_LAUNCH_CHECK("eval_counts_kernel");
}

} // extern "C"
#endif
