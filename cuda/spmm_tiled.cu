/* cuda/spmm_tiled.cu — the tile part of the "tiled" SpMM: Y += (dense tiles of A) X,
 * with the layout of cuda/spmm_tiles_internal.h (the far part was written into Y before, by
 * the warp-per-row kernel).
 *
 * One block of CGK_TILE_WARPS (32) warps per (column slice, row block); slices of
 * SW = 32 * VEC * NV columns (lane l holds the VEC columns c0 + (q*32 + l)*VEC for
 * q < NV: NV = 2 only for scalar widths above 32, e.g. 41, so that they take one
 * slice, not a second one that is mostly padding), slice-major grid so that the
 * blocks in flight share a slice of X in L2. For each dense tile of
 * its row block, in order, the block
 *   1. stages the tile's CGK_TILE_COLS source rows of the slice in shared memory
 *      (scaled by col_scale when factored; rows past ncols and columns past f as 0),
 *   2. each warp walks the segments of its CGK_TILE_ROWS_PER_WARP (8) slots, which
 *      are consecutive in t_off, as one range: the 9 segment bounds in one load
 *      (broadcast by shuffles), column offsets (and values) 32 at a time in
 *      coalesced loads, the next 32 loaded while the current ones are used; the
 *      nonzeros CGK_TILE_GROUP (4) at a time (segments are padded to that), all
 *      four staged rows loaded before the first is added to the slot's accumulators.
 * Finally each slot's row gets Y[row] += acc (times row_scale when factored); slots
 * without a row and lanes past f write nothing, so Y's padding is never touched.
 * Summation order is fixed by the layout: deterministic run to run.
 *
 * Shared memory: (CGK_TILE_COLS + 1) * SW floats (128.5 KiB for VEC = 4: the last
 * row is zeros for the padding), above the 48 KiB default, so the launcher raises
 * the kernel's dynamic shared memory limit; where the device allows less per block
 * (sm_70..sm_89: 64-99 KiB) it narrows the vector (64.25 KiB for VEC = 2 or VEC = 1
 * x NV = 2, 32.1 KiB for VEC = 1; a 64 KiB device therefore runs VEC = 1). 1024
 * threads: 64 registers each, which hold the accumulators (8 slots x VEC x NV); ptxas
 * (CUDA 13.0, sm_90) reports no spills except 4 bytes in the factored VEC = 4
 * variant.
 * Measured on the H100 (synth:reddit's operator, width 256, tile part alone, ncu):
 * 16 warps of 16 slots, one nonzero at a time: 9.1 ms (latency-bound: 25 % of the
 * warps resident, ~21 instructions per nonzero); 32 warps of 8 slots: 8.2 ms; with
 * padded groups of 4: 6.85 ms (50 % resident, stalls mostly on shared-memory and
 * shuffle latency; its shared-memory traffic alone would take ~4 ms). Two blocks of
 * 16 warps with 64-column slices were slower (15.2-18.7 ms for the whole product,
 * twice the staging and offset loads).
 * Not done: staging overlapped with compute (cp.async double buffering needs a
 * second 128 KiB buffer, which does not fit beside the first). */
#include <stdint.h>

#include "cuda/cuda_kernels_internal.h"
#include "cuda/spmm_tiles_internal.h"

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kThreads = CGK_TILE_WARPS * 32;
constexpr int kRows = CGK_TILE_ROWS;
constexpr int kCols = CGK_TILE_COLS;
constexpr int kRpw = CGK_TILE_ROWS_PER_WARP;
static_assert(kRpw * CGK_TILE_WARPS == kRows, "slots must cover the row block");
static_assert(kRpw < 32, "a warp's segment bounds must fit in one load");
constexpr int kG = CGK_TILE_GROUP; /* entries per step of a segment (loads in flight together) */
static_assert(32 % kG == 0, "a step's offsets must lie in one 32-entry chunk");

/* Dynamic shared memory of a launch with w = VEC x NV floats per lane, and its grid
 * (one block per column slice and row block); the emulation test uses them too. */
constexpr size_t tiled_smem_bytes(int w) { return (size_t)(kCols + 1) * 32 * (size_t)w * sizeof(float); }
inline int64_t tiled_blocks(int w, int64_t f, int64_t nrb) { return (f + 32 * w - 1) / (32 * w) * nrb; }
/* Two scalar columns per lane when the width needs more than one 32-column slice
 * and the device has room; else one. */
inline int tiled_nv(int vec, int64_t f, size_t max_smem) {
  return vec == 1 && f > 32 && tiled_smem_bytes(2) <= max_smem ? 2 : 1;
}

template <int VEC>
struct vec_io;
template <>
struct vec_io<4> {
  static __device__ __forceinline__ void load(const float *p, float *v) {
    float4 t = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
  }
  static __device__ __forceinline__ void store(float *p, const float *v) {
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
  }
  static __device__ __forceinline__ void load_rw(const float *p, float *v) {
    float4 t = *reinterpret_cast<const float4 *>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
  }
};
template <>
struct vec_io<2> {
  static __device__ __forceinline__ void load(const float *p, float *v) {
    float2 t = __ldg(reinterpret_cast<const float2 *>(p));
    v[0] = t.x, v[1] = t.y;
  }
  static __device__ __forceinline__ void store(float *p, const float *v) {
    *reinterpret_cast<float2 *>(p) = make_float2(v[0], v[1]);
  }
  static __device__ __forceinline__ void load_rw(const float *p, float *v) {
    float2 t = *reinterpret_cast<const float2 *>(p);
    v[0] = t.x, v[1] = t.y;
  }
};
template <>
struct vec_io<1> {
  static __device__ __forceinline__ void load(const float *p, float *v) { v[0] = __ldg(p); }
  static __device__ __forceinline__ void store(float *p, const float *v) { *p = v[0]; }
  static __device__ __forceinline__ void load_rw(const float *p, float *v) { v[0] = *p; }
};

template <int VEC, int NV, bool FACT>
__global__ void __launch_bounds__(kThreads, 1)
    spmm_tiled_kernel(const cgk_tiles t, const float *__restrict__ x, int64_t ldx,
                      float *__restrict__ y, int64_t ldy, int64_t f) {
  constexpr int SW = 32 * VEC * NV;
  extern __shared__ float4 xs_raw[]; /* (kCols + 1) x SW floats, 16-byte aligned */
  float *xs = reinterpret_cast<float *>(xs_raw);
  const int64_t slice = (int64_t)blockIdx.x / t.nrb, rb = (int64_t)blockIdx.x % t.nrb;
  const int64_t t0 = t.rb_tile[rb], t1 = t.rb_tile[rb + 1];
  if (t0 == t1) return; /* block-uniform: no tile, Y already complete */
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t c0 = slice * SW;

  float acc[kRpw][NV * VEC];
#pragma unroll
  for (int j = 0; j < kRpw; j++)
#pragma unroll
    for (int e = 0; e < NV * VEC; e++) acc[j][e] = 0.0f;
  /* row kCols: zeros for the padding entries (visible after the first barrier) */
  for (int i = threadIdx.x; i < SW; i += kThreads) xs[kCols * SW + i] = 0.0f;

  for (int64_t tile = t0; tile < t1; tile++) {
    const int64_t src0 = (int64_t)t.tile_col[tile] * kCols;
    __syncthreads(); /* every warp is done with the previous tile's rows */
    /* stage: chunk i (VEC floats) is column chunk i % (32 NV) of staged row
     * i / (32 NV): consecutive threads, consecutive chunks, coalesced */
#pragma unroll 4
    for (int i = threadIdx.x; i < kCols * 32 * NV; i += kThreads) {
      const int rr = i / (32 * NV), l = i % (32 * NV);
      const int64_t src = src0 + rr, c = c0 + (int64_t)l * VEC;
      float v[VEC];
#pragma unroll
      for (int e = 0; e < VEC; e++) v[e] = 0.0f;
      if (src < t.ncols && c < f) { /* VEC divides f: the whole vector is inside */
        vec_io<VEC>::load(x + src * ldx + c, v);
        if (FACT) {
          const float s = __ldg(t.col_scale + src);
#pragma unroll
          for (int e = 0; e < VEC; e++) v[e] *= s;
        }
      }
      vec_io<VEC>::store(xs + rr * SW + l * VEC, v);
    }
    __syncthreads();
    const int64_t e0 = t.tile_edge[tile];
    const int32_t *rp = t.tile_rowptr + tile * (kRows + 1) + w * kRpw;
    const int bnd = lane <= kRpw ? __ldg(rp + lane) : 0; /* lane j: start of slot j */
    const int wend = __shfl_sync(kFull, bnd, kRpw);
    /* offsets [cbase, cbase + 32) in off/val, the next 32 in off_next/val_next */
    auto load32 = [&](int base, int &o, float &v) {
      const int kk = base + lane;
      o = 0;
      v = 0.0f;
      if (kk < wend) {
        o = __ldg(t.t_off + e0 + kk);
        if (!FACT) v = __ldg(t.t_val + e0 + kk);
      }
    };
    int k = __shfl_sync(kFull, bnd, 0), cbase = k;
    int off, off_next;
    float val, val_next;
    load32(cbase, off, val);
    load32(cbase + 32, off_next, val_next);
    /* Segments are padded to kG entries (CGK_TILE_GROUP; padding reads the zero row
     * kCols), so the warp walks its range kG at a time and k - cbase is a multiple
     * of kG in [0, 32): a step's offsets all lie in off. Each step loads its kG
     * offsets and staged rows before the first is added, so the warp waits for one
     * shuffle and one shared-memory latency per kG nonzeros, not per nonzero; the
     * sums stay in nonzero order. */
    const float *xl = xs + lane * VEC;
#pragma unroll
    for (int j = 0; j < kRpw; j++) {
      const int ke = __shfl_sync(kFull, bnd, j + 1);
      for (; k < ke; k += kG) {
        if (k - cbase == 32) { /* warp-uniform */
          cbase += 32;
          off = off_next;
          val = val_next;
          load32(cbase + 32, off_next, val_next);
        }
        const int i = k - cbase;
        int o[kG];
        float vj[kG], xv[kG][NV * VEC];
#pragma unroll
        for (int u = 0; u < kG; u++) {
          o[u] = __shfl_sync(kFull, off, i + u);
          vj[u] = FACT ? 1.0f : __shfl_sync(kFull, val, i + u);
        }
#pragma unroll
        for (int u = 0; u < kG; u++)
#pragma unroll
          for (int q = 0; q < NV; q++) vec_io<VEC>::load_rw(xl + o[u] * SW + q * 32 * VEC, xv[u] + q * VEC);
#pragma unroll
        for (int u = 0; u < kG; u++)
#pragma unroll
          for (int e = 0; e < NV * VEC; e++) acc[j][e] += FACT ? xv[u][e] : vj[u] * xv[u][e];
      }
    }
  }

  /* no shuffles below: lanes past f may skip */
#pragma unroll
  for (int j = 0; j < kRpw; j++) {
    const unsigned lr = t.perm[rb * kRows + w * kRpw + j];
    if (lr == CGK_TILE_NO_ROW) continue;
    const int64_t row = rb * kRows + lr;
    const float s = FACT ? __ldg(t.row_scale + row) : 1.0f;
#pragma unroll
    for (int q = 0; q < NV; q++) {
      const int64_t cl = c0 + (int64_t)(q * 32 + lane) * VEC;
      if (cl >= f) continue;
      float *yp = y + row * ldy + cl;
      float cur[VEC];
      vec_io<VEC>::load_rw(yp, cur);
#pragma unroll
      for (int e = 0; e < VEC; e++) cur[e] += FACT ? s * acc[j][q * VEC + e] : acc[j][q * VEC + e];
      vec_io<VEC>::store(yp, cur);
    }
  }
}

#ifndef CGK_CUDA_EMULATE /* cuda/tests/cuda_emu.h runs the kernel on the CPU */
template <int VEC, int NV, bool FACT>
void launch(cudaStream_t s, const cgk_tiles *t, const float *x, int64_t ldx, float *y, int64_t ldy,
            int64_t f) {
  const int64_t blocks = tiled_blocks(VEC * NV, f, t->nrb);
  if (blocks > (int64_t)INT32_MAX)
    cg_cuda_fatal(__FILE__, __LINE__, "cgk_spmm_tiled_add", "too many (slice, row block) pairs");
  const size_t smem = tiled_smem_bytes(VEC * NV);
  /* per-call (cheap, host-side): the attribute belongs to the current device */
  CG_CUDA_FATAL_ON(cudaFuncSetAttribute(spmm_tiled_kernel<VEC, NV, FACT>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  spmm_tiled_kernel<VEC, NV, FACT><<<(unsigned)blocks, kThreads, smem, s>>>(*t, x, ldx, y, ldy, f);
  CG_CUDA_LAUNCH_CHECK("spmm_tiled_kernel");
}
#endif

} // namespace

#ifndef CGK_CUDA_EMULATE
extern "C" void cgk_spmm_tiled_add(cudaStream_t s, const struct cgk_tiles *t, const float *x,
                                   int64_t ldx, float *y, int64_t ldy, int64_t f,
                                   size_t max_smem, int max_vec) {
  if (t->ntiles <= 0 || t->nrb <= 0 || f <= 0) return;
  int vec = cgk_pick_vec(x, ldx, y, ldy, f);
  while (vec > 1 && vec > max_vec) vec /= 2;
  while (vec > 1 && tiled_smem_bytes(vec) > max_smem) vec /= 2; /* a narrower vector is always valid */
  if (tiled_smem_bytes(vec) > max_smem)
    cg_cuda_fatal(__FILE__, __LINE__, "cgk_spmm_tiled_add", "the device has too little shared memory");
  const int nv = tiled_nv(vec, f, max_smem);
  const bool fact = t->t_val == nullptr;
  if (vec == 4) fact ? launch<4, 1, true>(s, t, x, ldx, y, ldy, f) : launch<4, 1, false>(s, t, x, ldx, y, ldy, f);
  else if (vec == 2) fact ? launch<2, 1, true>(s, t, x, ldx, y, ldy, f) : launch<2, 1, false>(s, t, x, ldx, y, ldy, f);
  else if (nv == 2) fact ? launch<1, 2, true>(s, t, x, ldx, y, ldy, f) : launch<1, 2, false>(s, t, x, ldx, y, ldy, f);
  else fact ? launch<1, 1, true>(s, t, x, ldx, y, ldy, f) : launch<1, 1, false>(s, t, x, ldx, y, ldy, f);
}
#endif
