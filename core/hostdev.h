/* core/hostdev.h — CG_HD, the qualifier of a function shared by the CPU backend and
 * CUDA kernels (core/philox.h, core/adam.h): __host__ __device__ and always inlined
 * under nvcc, a plain static inline function for the C compiler (and for a C++
 * compiler running a kernel's source on the CPU, cuda/tests/cuda_emu.h). One
 * source for both sides is what keeps their arithmetic identical. */
#ifndef CAPGNN_CORE_HOSTDEV_H
#define CAPGNN_CORE_HOSTDEV_H

#if defined(__CUDACC__)
#define CG_HD __host__ __device__ __forceinline__
#else
#define CG_HD static inline
#endif

#endif
