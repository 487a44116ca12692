/* cuda/tests/cuda_emu.h — run a CUDA kernel's own source on the CPU, one OS thread
 * per CUDA thread, for machines without a GPU (tests only).
 *
 * Include this, define CGK_CUDA_EMULATE, then include the .cu file whose kernels
 * are to run: its launchers (guarded by #ifndef CGK_CUDA_EMULATE) are left out and
 * the kernel templates are called through emu_launch(). Provided:
 * - threadIdx / blockIdx / blockDim / gridDim (thread-local);
 * - __syncthreads(): a barrier of the block's threads (std::barrier);
 * - __shfl_sync(mask, v, src) for 32-bit values: every lane of the warp must call
 *   it the same number of times (as the hardware requires for a full mask); a
 *   divergent shuffle deadlocks here, which the test's timeout then reports;
 * - atomicAdd on floats (std::atomic_ref; the order of additions is the OS
 *   scheduler's, as on the GPU it is the hardware's);
 * - __ldg, the __global__ / __device__ / __forceinline__ / __launch_bounds__ /
 *   __shared__ qualifiers as no-ops; `extern __shared__ T name[]` must be defined
 *   by the test at namespace scope with room for the dynamic shared memory (blocks
 *   run one after another, so one buffer serves all). A `__shared__` array declared
 *   inside a kernel becomes one array per thread: such a kernel compiles here (so
 *   its file can be included) but must not be run.
 * A thread that returns early leaves its barriers (arrive_and_drop), as an exited
 * GPU thread no longer counts at __syncthreads.
 * What it cannot show: timing, memory-model races between blocks (blocks run one
 * at a time), bank conflicts, register or shared-memory limits. */
#ifndef CAPGNN_CUDA_EMU_H
#define CAPGNN_CUDA_EMU_H

#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <vector_functions.h>
#include <vector_types.h>

#define CGK_CUDA_EMULATE 1
/* the CUDA headers define these for host compilers; here they mean nothing */
#undef __global__
#undef __device__
#undef __shared__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __shared__
#define __forceinline__ inline
#define __launch_bounds__(...)

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

struct emu_block {
  explicit emu_block(int nthreads)
      : bar(nthreads), warp_bars((size_t)(nthreads + 31) / 32), slots((size_t)nthreads) {
    for (size_t w = 0; w < warp_bars.size(); w++) {
      int n = nthreads - 32 * (int)w;
      warp_bars[w] = new std::barrier<>(n < 32 ? n : 32);
    }
  }
  ~emu_block() {
    for (auto *b : warp_bars) delete b;
  }
  std::barrier<> bar;
  std::vector<std::barrier<> *> warp_bars;
  std::vector<uint32_t> slots; /* one shuffle slot per thread */
};
inline thread_local emu_block *emu_cur_block;

inline void __syncthreads() { emu_cur_block->bar.arrive_and_wait(); }

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src) {
  static_assert(sizeof(T) == 4, "emulated shuffles move 32-bit values");
  (void)mask;
  emu_block *b = emu_cur_block;
  const unsigned t = threadIdx.x, w = t / 32;
  std::memcpy(&b->slots[t], &v, 4);
  b->warp_bars[w]->arrive_and_wait();
  T r;
  std::memcpy(&r, &b->slots[w * 32 + ((unsigned)src & 31u)], 4);
  b->warp_bars[w]->arrive_and_wait(); /* nobody overwrites a slot still being read */
  return r;
}

template <class T>
inline T __ldg(const T *p) {
  return *p;
}

inline float atomicAdd(float *p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }

/* Run kernel(args...) over `grid` blocks of `threads` threads (1-D), one block at a
 * time. */
template <class K, class... A>
void emu_launch(unsigned grid, unsigned threads, K kernel, A... args) {
  for (unsigned bx = 0; bx < grid; bx++) {
    emu_block blk((int)threads);
    std::vector<std::thread> th;
    th.reserve(threads);
    for (unsigned tx = 0; tx < threads; tx++) {
      th.emplace_back([&, tx]() {
        threadIdx = make_uint3(tx, 0, 0);
        blockIdx = make_uint3(bx, 0, 0);
        blockDim = dim3(threads, 1, 1);
        gridDim = dim3(grid, 1, 1);
        emu_cur_block = &blk;
        kernel(args...);
        blk.warp_bars[tx / 32]->arrive_and_drop();
        blk.bar.arrive_and_drop();
      });
    }
    for (auto &t : th) t.join();
  }
}

#endif
