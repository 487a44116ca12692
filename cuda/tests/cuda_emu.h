/* cuda/tests/cuda_emu.h — run a CUDA kernel's own source on the CPU, one OS thread
 * per CUDA thread, for machines without a GPU (tests only).
 *
 * Include this, define CGK_CUDA_EMULATE, then include the .cu file whose kernels
 * are to run: its launchers (guarded by #ifndef CGK_CUDA_EMULATE) are left out and
 * the kernel templates are called through emu_launch() (a 1-D grid and block, or
 * dim3 grid and block). Provided:
 * - threadIdx / blockIdx / blockDim / gridDim (thread-local); warps are 32
 *   consecutive threads in x-fastest order, as on the GPU;
 * - __syncthreads(): a barrier of the block's threads (std::barrier);
 * - __shfl_sync(mask, v, src) and __shfl_xor_sync(mask, v, lane_mask) for 32- and
 *   64-bit values: every lane of the warp must call it the same number of times (as
 *   the hardware requires for a full mask); a divergent shuffle deadlocks here,
 *   which the test's timeout then reports;
 * - atomicAdd on float, double, int, unsigned and unsigned long long
 *   (std::atomic_ref; the order of additions is the OS scheduler's, as on the GPU it
 *   is the hardware's);
 * - __ldg, the __global__ / __device__ / __forceinline__ / __launch_bounds__
 *   qualifiers as no-ops;
 * - `__shared__ T name[N]` declared inside a kernel (or a __device__ function)
 *   becomes a function-local `static` array: one array per kernel instantiation,
 *   shared by all threads of the block (std::barrier orders their accesses). Blocks
 *   run one at a time, so this one array serves every block in turn, as a block's
 *   shared memory does; its contents are not cleared between blocks (on the GPU
 *   they are undefined at a block's start).
 * - `extern __shared__ T name[]` (dynamic shared memory) cannot take `static` (C++
 *   forbids `extern static`): a test of such a kernel defines CUDA_EMU_EXTERN_SHARED
 *   before including this header, which makes __shared__ a no-op, and defines the
 *   array at namespace scope with room for the dynamic shared memory (blocks run one
 *   after another, so one buffer serves all). In that mode a fixed-size `__shared__`
 *   array inside a kernel becomes one array per thread: such a kernel compiles (so
 *   its file can be included) but must not be run.
 * A thread that returns early leaves its barriers (arrive_and_drop), as an exited
 * GPU thread no longer counts at __syncthreads.
 * What it cannot show: timing, memory-model races between blocks (blocks run one
 * at a time), bank conflicts, register or shared-memory limits. */
#ifndef CAPGNN_CUDA_EMU_H
#define CAPGNN_CUDA_EMU_H

#include <atomic>
#include <barrier>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
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
#ifdef CUDA_EMU_EXTERN_SHARED
#define __shared__
#else
#define __shared__ static
#endif
#define __forceinline__ inline
#define __launch_bounds__(...)

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;
inline thread_local unsigned emu_tid; /* the thread's linear index in its block */

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
  std::vector<uint64_t> slots; /* one shuffle slot per thread */
};
inline thread_local emu_block *emu_cur_block;

/* The launch-wide barrier between blocks. It sleeps at once (a condition variable):
 * std::barrier spins and yields first, and threads done with a block early would
 * then take the cores from those still running it. */
struct emu_step {
  explicit emu_step(unsigned n) : n(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lk(mu);
    const uint64_t gen = generation;
    if (++count == n) {
      count = 0;
      generation++;
      cv.notify_all();
    } else {
      cv.wait(lk, [&] { return generation != gen; });
    }
  }
  const unsigned n;
  unsigned count = 0;
  uint64_t generation = 0;
  std::mutex mu;
  std::condition_variable cv;
};

inline void __syncthreads() { emu_cur_block->bar.arrive_and_wait(); }

/* The value of lane `src` of the calling thread's warp. */
template <class T>
inline T emu_shfl(T v, unsigned src) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "emulated shuffles move 32- or 64-bit values");
  emu_block *b = emu_cur_block;
  const unsigned t = emu_tid, w = t / 32;
  std::memcpy(&b->slots[t], &v, sizeof(T));
  b->warp_bars[w]->arrive_and_wait();
  T r;
  std::memcpy(&r, &b->slots[w * 32 + (src & 31u)], sizeof(T));
  b->warp_bars[w]->arrive_and_wait(); /* nobody overwrites a slot still being read */
  return r;
}

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src) {
  (void)mask;
  return emu_shfl(v, (unsigned)src);
}

template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask) {
  (void)mask;
  return emu_shfl(v, (emu_tid & 31u) ^ (unsigned)lane_mask);
}

template <class T>
inline T __ldg(const T *p) {
  return *p;
}

inline float atomicAdd(float *p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }
inline double atomicAdd(double *p, double v) { return std::atomic_ref<double>(*p).fetch_add(v); }
inline int atomicAdd(int *p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline unsigned atomicAdd(unsigned *p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}

/* Run kernel(args...) over `grid` blocks of `block` threads, one block at a time
 * (blocks in x-fastest order). The same OS threads serve every block of a launch
 * (creating them per block cost most of a test's time): a launch-wide barrier lets
 * thread 0 set up the next block's barriers only after all threads left the last. */
template <class K, class... A>
void emu_launch(dim3 grid, dim3 block, K kernel, A... args) {
  const unsigned threads = block.x * block.y * block.z;
  const uint64_t nblocks = (uint64_t)grid.x * grid.y * grid.z;
  emu_step step(threads);
  std::unique_ptr<emu_block> blk;
  std::vector<std::thread> th;
  th.reserve(threads);
  for (unsigned t = 0; t < threads; t++) {
    th.emplace_back([&, t]() {
      threadIdx = make_uint3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
      blockDim = block;
      gridDim = grid;
      emu_tid = t;
      for (uint64_t b = 0; b < nblocks; b++) {
        if (t == 0) blk = std::make_unique<emu_block>((int)threads);
        step.arrive_and_wait(); /* the block's barriers are ready */
        blockIdx = make_uint3((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                              (unsigned)(b / ((uint64_t)grid.x * grid.y)));
        emu_cur_block = blk.get();
        kernel(args...);
        blk->warp_bars[t / 32]->arrive_and_drop();
        blk->bar.arrive_and_drop();
        step.arrive_and_wait(); /* every thread is done with this block */
      }
    });
  }
  for (auto &x : th) x.join();
}

/* A 1-D grid of `grid` blocks of `threads` threads. */
template <class K, class... A>
void emu_launch(unsigned grid, unsigned threads, K kernel, A... args) {
  emu_launch(dim3(grid, 1, 1), dim3(threads, 1, 1), kernel, args...);
}

#endif
