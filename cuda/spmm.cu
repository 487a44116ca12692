/* cuda/spmm.cu — hand-written CSR SpMM kernels: Y[nrows x f] = A * X[ncols x f].
 *
 * Variants held here
 * - warp:     one warp per row. The 32 lanes cover a pass of 32*VEC*NV columns
 *             (VEC = 4, 2 or 1 floats per load: float4 when f, ldx, ldy are
 *             multiples of 4 and X, Y are 16-byte aligned, float2 for multiples
 *             of 2 / 8 bytes, else scalar; NV = vectors per lane, the smallest
 *             power of two whose pass covers f, capped so that a pass has at most
 *             max_pass columns (default 128: on the H100, 128-column passes beat
 *             one wide pass by up to 2.2x for randomly ordered neighbours, since
 *             the warps in flight then sweep X one 128-column slab at a time).
 *             Per 32 nonzeros the lanes load 32 (col, val) pairs coalesced and
 *             broadcast them with shuffles; each nonzero then streams its X row
 *             with coalesced vector loads.
 * - subwarp:  for narrow f (<= CGK_SUBWARP_MAX_F = 16): S lanes per row
 *             (S = next power of two of the average degree, clamped to 4..32),
 *             32/S rows per warp. The S lanes split the row's nonzeros, each keeps
 *             all f columns in registers, then a shuffle-xor tree adds the S lanes.
 * - rowsplit: one block of 8 warps per row (block_row): the warps take interleaved
 *             chunks of 32 nonzeros with the per-lane layout of `warp`, then add
 *             their 8 partial rows in shared memory in warp order.
 * Heavy rows (degree > the matrix's threshold, cuda_backend.c: max(1024, 8 x the
 * average degree)): warp and subwarp launches put one block_row block per heavy row
 * at the front of their grid and skip those rows in the per-row part, so a
 * power-law hub runs on a whole block, alongside the rest, in the same launch.
 *
 * Assumptions
 * - rowptr is int64 (device), colidx int32, vals float and never NULL.
 * - Every row of Y (< nrows, < f columns) is written exactly once per call,
 *   including empty rows (zeros); columns >= f of Y are never touched.
 * - Block scheduling in grid order (heavy blocks first) is a performance
 *   assumption only; correctness does not depend on it.
 * - Summation order inside a row is fixed by the kernel and the launch shape, so
 *   results are deterministic run to run (but differ in rounding from the CPU's
 *   sequential order: tests compare with a tolerance).
 * - A single row of ~100k+ nonzeros is still limited by one block (~0.4 us per
 *   nonzero per warp on the H100); splitting it across blocks would need a
 *   scratch buffer and a second reduction pass.
 */
#include <stdint.h>

#include "cuda/cuda_kernels_internal.h"

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxGrid = 1 << 22; /* grid-stride above this */

/* acc[0..VEC) += v * p[0..VEC) with one vector load (read-only path). */
template <int VEC>
__device__ __forceinline__ void fma_row(float *acc, float v, const float *p) {
  if constexpr (VEC == 4) {
    float4 t = __ldg(reinterpret_cast<const float4 *>(p));
    acc[0] += v * t.x;
    acc[1] += v * t.y;
    acc[2] += v * t.z;
    acc[3] += v * t.w;
  } else if constexpr (VEC == 2) {
    float2 t = __ldg(reinterpret_cast<const float2 *>(p));
    acc[0] += v * t.x;
    acc[1] += v * t.y;
  } else {
    acc[0] += v * __ldg(p);
  }
}

template <int VEC>
__device__ __forceinline__ void store_vec(float *p, const float *acc) {
  if constexpr (VEC == 4) {
    *reinterpret_cast<float4 *>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
  } else if constexpr (VEC == 2) {
    *reinterpret_cast<float2 *>(p) = make_float2(acc[0], acc[1]);
  } else {
    *p = acc[0];
  }
}

/* The warp's contribution of nonzeros k0, k0 + stride, ... (chunks of 32) of one
 * row to columns [c0, c0 + 32*VEC*NV): lane holds columns c0 + (q*32 + lane)*VEC + e. */
template <int VEC, int NV>
__device__ __forceinline__ void warp_accumulate(const cgk_csr &a, const float *__restrict__ x,
                                                int64_t ldx, int64_t f, int64_t c0, int64_t kbeg,
                                                int64_t kend, int64_t kstride,
                                                float (&acc)[NV][VEC]) {
  const int lane = threadIdx.x & 31;
  for (int64_t k0 = kbeg; k0 < kend; k0 += kstride) {
    int64_t k = k0 + lane;
    int col = 0;
    float val = 0.0f;
    if (k < kend) {
      col = __ldg(a.colidx + k);
      val = __ldg(a.vals + k);
    }
    int cnt = kend - k0 < 32 ? (int)(kend - k0) : 32;
    /* Enough independent row loads in flight without exhausting registers:
     * unroll over nonzeros only when each lane issues few loads per nonzero. */
    constexpr int kUnroll = NV >= 4 ? 1 : 4 / NV;
#pragma unroll kUnroll
    for (int j = 0; j < cnt; j++) {
      int cj = __shfl_sync(kFull, col, j);
      float vj = __shfl_sync(kFull, val, j);
      const float *xr = x + (int64_t)cj * ldx + c0;
#pragma unroll
      for (int q = 0; q < NV; q++) {
        int64_t c = (int64_t)(q * 32 + lane) * VEC;
        if (c0 + c < f) fma_row<VEC>(acc[q], vj, xr + c);
      }
    }
  }
}

/* One row computed by the whole block: the 8 warps take interleaved chunks of 32
 * nonzeros, then their partial rows are added in warp order through shared
 * memory (deterministic). All threads of the block must call it. */
template <int VEC, int NV>
__device__ __forceinline__ void block_row(const cgk_csr &a, int64_t r, const float *__restrict__ x,
                                          int64_t ldx, float *__restrict__ y, int64_t ldy,
                                          int64_t f, float (*part)[32 * VEC * NV]) {
  constexpr int kPass = 32 * VEC * NV;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t beg = a.rowptr[r], end = a.rowptr[r + 1];
  float *yr = y + r * ldy;
  for (int64_t c0 = 0; c0 < f; c0 += kPass) {
    float acc[NV][VEC];
#pragma unroll
    for (int q = 0; q < NV; q++)
#pragma unroll
      for (int e = 0; e < VEC; e++) acc[q][e] = 0.0f;
    warp_accumulate<VEC, NV>(a, x, ldx, f, c0, beg + 32 * w, end, 32 * kWarps, acc);
#pragma unroll
    for (int q = 0; q < NV; q++)
#pragma unroll
      for (int e = 0; e < VEC; e++) part[w][(q * 32 + lane) * VEC + e] = acc[q][e];
    __syncthreads();
    for (int t = threadIdx.x; t < kPass; t += kThreads) {
      if (c0 + t < f) {
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < kWarps; j++) sum += part[j][t];
        yr[c0 + t] = sum;
      }
    }
    __syncthreads(); /* part is reused by the next pass / row */
  }
}

/* Blocks [0, heavy_blocks) each compute one heavy row (block_row); they come first
 * in the grid so that they are dispatched first and run alongside the warp-per-row
 * blocks instead of after them (a hub of 50k nonzeros takes ~2 ms on one block). */
template <int VEC, int NV>
__global__ void __launch_bounds__(kThreads)
    spmm_warp_kernel(const cgk_csr a, const float *__restrict__ x, int64_t ldx, float *__restrict__ y,
                     int64_t ldy, int64_t f, int64_t skip_above, int64_t heavy_blocks) {
  constexpr int64_t kPass = 32 * VEC * NV;
  __shared__ float part[kWarps][32 * VEC * NV];
  if ((int64_t)blockIdx.x < heavy_blocks) {
    block_row<VEC, NV>(a, a.heavy[blockIdx.x], x, ldx, y, ldy, f, part);
    return;
  }
  const int lane = threadIdx.x & 31;
  const int64_t wid = (((int64_t)blockIdx.x - heavy_blocks) * kThreads + threadIdx.x) >> 5;
  const int64_t wcount = ((int64_t)gridDim.x - heavy_blocks) * kWarps;
  for (int64_t r = wid; r < a.nrows; r += wcount) {
    int64_t beg = __ldg(a.rowptr + r), end = __ldg(a.rowptr + r + 1);
    if (end - beg > skip_above) continue; /* warp-uniform: a heavy row, done by block_row */
    float *yr = y + r * ldy;
    for (int64_t c0 = 0; c0 < f; c0 += kPass) {
      float acc[NV][VEC];
#pragma unroll
      for (int q = 0; q < NV; q++)
#pragma unroll
        for (int e = 0; e < VEC; e++) acc[q][e] = 0.0f;
      warp_accumulate<VEC, NV>(a, x, ldx, f, c0, beg, end, 32, acc);
#pragma unroll
      for (int q = 0; q < NV; q++) {
        int64_t c = c0 + (int64_t)(q * 32 + lane) * VEC;
        if (c < f) store_vec<VEC>(yr + c, acc[q]);
      }
    }
  }
}

template <int VEC, int NV>
__global__ void __launch_bounds__(kThreads)
    spmm_rowsplit_kernel(const cgk_csr a, const int32_t *__restrict__ rows, int64_t n_rows,
                         const float *__restrict__ x, int64_t ldx, float *__restrict__ y, int64_t ldy,
                         int64_t f) {
  __shared__ float part[kWarps][32 * VEC * NV];
  for (int64_t b = blockIdx.x; b < n_rows; b += gridDim.x)
    block_row<VEC, NV>(a, rows ? (int64_t)rows[b] : b, x, ldx, y, ldy, f, part);
}

/* Heavy rows first, as in spmm_warp_kernel (block_row with one 32-column pass,
 * enough for f <= CGK_SUBWARP_MAX_F). */
template <int S>
__global__ void __launch_bounds__(kThreads)
    spmm_subwarp_kernel(const cgk_csr a, const float *__restrict__ x, int64_t ldx,
                        float *__restrict__ y, int64_t ldy, int f, int64_t skip_above,
                        int64_t heavy_blocks) {
  __shared__ float part[kWarps][32];
  if ((int64_t)blockIdx.x < heavy_blocks) {
    block_row<1, 1>(a, a.heavy[blockIdx.x], x, ldx, y, ldy, f, part);
    return;
  }
  constexpr int kRowsPerWarp = 32 / S;
  const int lane = threadIdx.x & 31, sub = lane % S, grp = lane / S;
  const int64_t wid = (((int64_t)blockIdx.x - heavy_blocks) * kThreads + threadIdx.x) >> 5;
  const int64_t wcount = ((int64_t)gridDim.x - heavy_blocks) * kWarps;
  /* The loop bound is warp-uniform so that every lane reaches the shuffles. */
  for (int64_t base = wid * kRowsPerWarp; base < a.nrows; base += wcount * kRowsPerWarp) {
    int64_t r = base + grp;
    int64_t beg = 0, end = 0;
    bool active = r < a.nrows;
    if (active) {
      beg = __ldg(a.rowptr + r);
      end = __ldg(a.rowptr + r + 1);
      if (end - beg > skip_above) active = false;
    }
    if (!active) beg = end = 0;
    float acc[CGK_SUBWARP_MAX_F];
#pragma unroll
    for (int j = 0; j < CGK_SUBWARP_MAX_F; j++) acc[j] = 0.0f;
#pragma unroll 2
    for (int64_t k = beg + sub; k < end; k += S) {
      const float v = __ldg(a.vals + k);
      const float *xr = x + (int64_t)__ldg(a.colidx + k) * ldx;
#pragma unroll
      for (int j = 0; j < CGK_SUBWARP_MAX_F; j++)
        if (j < f) acc[j] += v * __ldg(xr + j);
    }
#pragma unroll
    for (int j = 0; j < CGK_SUBWARP_MAX_F; j++) {
      if (j < f) { /* f is uniform: all lanes shuffle together */
#pragma unroll
        for (int o = S / 2; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(kFull, acc[j], o);
      }
    }
    if (active) {
      float *yr = y + r * ldy;
#pragma unroll
      for (int j = 0; j < CGK_SUBWARP_MAX_F; j++)
        if (j < f && j % S == sub) yr[j] = acc[j];
    }
  }
}

inline unsigned grid_cap(int64_t blocks) {
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxGrid) blocks = kMaxGrid;
  return (unsigned)blocks;
}

/* The heavy-row blocks go in front of the (capped) row blocks. */
inline unsigned heavy_grid(unsigned row_blocks, int64_t heavy_blocks) {
  if ((int64_t)row_blocks + heavy_blocks > (int64_t)INT32_MAX)
    cg_cuda_fatal(__FILE__, __LINE__, "spmm launch", "too many heavy rows for one grid");
  return (unsigned)((int64_t)row_blocks + heavy_blocks);
}

/* Smallest NV in 1, 2, 4, 8 (, 16 when VEC <= 2) whose pass covers f, but a pass
 * never exceeds max_pass columns (wider f loops over passes, re-reading the row's
 * indices, which are cheap next to the X rows, instead of holding more
 * accumulators per lane: fewer registers, more warps in flight). */
inline int pick_nv(int vec, int64_t f, int64_t max_pass) {
  int max_nv = vec == 4 ? 8 : 16;
  while (max_nv > 1 && (int64_t)32 * vec * max_nv > max_pass) max_nv /= 2;
  int nv = 1;
  while (nv < max_nv && (int64_t)32 * vec * nv < f) nv *= 2;
  return nv;
}

#define CGK_NV_CASES(MACRO, VEC) \
  case 1: MACRO(VEC, 1); break;  \
  case 2: MACRO(VEC, 2); break;  \
  case 4: MACRO(VEC, 4); break;  \
  case 8: MACRO(VEC, 8); break

} // namespace

#ifndef CGK_CUDA_EMULATE /* cuda/tests/cuda_emu.h runs the kernels on the CPU (test_spmm_emu) */
extern "C" {

void cgk_spmm_warp(cudaStream_t s, const struct cgk_csr *a, const float *x, int64_t ldx, float *y,
                   int64_t ldy, int64_t f, int split_heavy) {
  if (a->nrows <= 0 || f <= 0) return;
  const bool split = split_heavy && a->n_heavy > 0;
  const int64_t skip_above = split ? a->heavy_threshold : INT64_MAX;
  const int64_t heavy_blocks = split ? a->n_heavy : 0;
  const unsigned grid = heavy_grid(grid_cap((a->nrows + kWarps - 1) / kWarps), heavy_blocks);
  int vec = cgk_pick_vec(x, ldx, y, ldy, f), nv = pick_nv(vec, f, a->max_pass);
#define CGK_LAUNCH_WARP(V, N) \
  spmm_warp_kernel<V, N><<<grid, kThreads, 0, s>>>(*a, x, ldx, y, ldy, f, skip_above, heavy_blocks)
  if (vec == 4) {
    switch (nv) { CGK_NV_CASES(CGK_LAUNCH_WARP, 4); }
  } else if (vec == 2) {
    switch (nv) {
      CGK_NV_CASES(CGK_LAUNCH_WARP, 2);
      case 16: CGK_LAUNCH_WARP(2, 16); break;
    }
  } else {
    switch (nv) {
      CGK_NV_CASES(CGK_LAUNCH_WARP, 1);
      case 16: CGK_LAUNCH_WARP(1, 16); break;
    }
  }
#undef CGK_LAUNCH_WARP
  CG_CUDA_LAUNCH_CHECK("spmm_warp_kernel");
}

void cgk_spmm_rowsplit(cudaStream_t s, const struct cgk_csr *a, const int32_t *rows,
                       int64_t n_rows, const float *x, int64_t ldx, float *y, int64_t ldy,
                       int64_t f) {
  if (n_rows <= 0 || f <= 0) return;
  unsigned grid = grid_cap(n_rows);
  int vec = cgk_pick_vec(x, ldx, y, ldy, f), nv = pick_nv(vec, f, a->max_pass);
#define CGK_LAUNCH_RS(V, N) \
  spmm_rowsplit_kernel<V, N><<<grid, kThreads, 0, s>>>(*a, rows, n_rows, x, ldx, y, ldy, f)
  if (vec == 4) {
    switch (nv) { CGK_NV_CASES(CGK_LAUNCH_RS, 4); }
  } else if (vec == 2) {
    switch (nv) {
      CGK_NV_CASES(CGK_LAUNCH_RS, 2);
      case 16: CGK_LAUNCH_RS(2, 16); break;
    }
  } else {
    switch (nv) {
      CGK_NV_CASES(CGK_LAUNCH_RS, 1);
      case 16: CGK_LAUNCH_RS(1, 16); break;
    }
  }
#undef CGK_LAUNCH_RS
  CG_CUDA_LAUNCH_CHECK("spmm_rowsplit_kernel");
}

void cgk_spmm_subwarp(cudaStream_t s, const struct cgk_csr *a, const float *x, int64_t ldx,
                      float *y, int64_t ldy, int64_t f, int split_heavy) {
  if (a->nrows <= 0 || f <= 0) return;
  if (f > CGK_SUBWARP_MAX_F)
    cg_cuda_fatal(__FILE__, __LINE__, "cgk_spmm_subwarp", "width above CGK_SUBWARP_MAX_F");
  const bool split = split_heavy && a->n_heavy > 0;
  const int64_t skip_above = split ? a->heavy_threshold : INT64_MAX;
  const int64_t heavy_blocks = split ? a->n_heavy : 0;
  int64_t avg = (a->nnz + a->nrows - 1) / a->nrows;
  int sub = 4;
  while (sub < 32 && sub < avg) sub *= 2;
  int64_t rows_per_block = (int64_t)kWarps * (32 / sub);
  const unsigned grid =
      heavy_grid(grid_cap((a->nrows + rows_per_block - 1) / rows_per_block), heavy_blocks);
#define CGK_LAUNCH_SUB(S) \
  spmm_subwarp_kernel<S><<<grid, kThreads, 0, s>>>(*a, x, ldx, y, ldy, (int)f, skip_above, heavy_blocks)
  switch (sub) {
    case 4: CGK_LAUNCH_SUB(4); break;
    case 8: CGK_LAUNCH_SUB(8); break;
    case 16: CGK_LAUNCH_SUB(16); break;
    default: CGK_LAUNCH_SUB(32); break;
  }
#undef CGK_LAUNCH_SUB
  CG_CUDA_LAUNCH_CHECK("spmm_subwarp_kernel");
}

} // extern "C"
#endif
