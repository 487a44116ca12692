/* rapa/tests/test_gpu_bench.c — the microbenchmarks on the CUDA backend at tiny sizes
 * (CUDA event timing, pageable and pinned copies, GEMM with and without TF32, SpMM),
 * the device facts and the peer-copy probe. Exit 77 (skipped) without a GPU or
 * without CUDA in the build. */
#include <stdio.h>
#include <string.h>

#include "core/csr.h"
#include "core/status.h"
#include "rapa/rapa.h"
#include "rapa/rapa_internal.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#define CHECK(x)                                                                            \
  do {                                                                                      \
    int st_ = (x);                                                                          \
    if (st_ < 0) {                                                                          \
      fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cg_err_msg());        \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

int main(void) {
#ifndef CAPGNN_HAVE_CUDA
  printf("skipped: no CUDA in this build\n");
  return 77;
#else
  if (cg_cuda_device_count() <= 0) {
    printf("skipped: no GPU answers\n");
    return 77;
  }
  struct cg_backend *be = NULL, *tf = NULL;
  CHECK(cg_backend_cuda_create(0, 0, &be));
  struct rapa_bench_opts o;
  rapa_bench_opts_default(&o, 1);
  struct rapa_timing t;
  CHECK(rapa_bench_gemm(be, 64, 48, 32, 2e-4, &o, &t));
  if (rapa_cuda_has_tf32(0)) {
    CHECK(cg_backend_cuda_create(0, 1, &tf));
    CHECK(rapa_bench_gemm(tf, 256, 256, 256, 1e-2, &o, &t));
    cg_backend_destroy(&tf);
  }
  struct cg_csr a;
  memset(&a, 0, sizeof a);
  CHECK(cg_csr_alloc(&a, 100, 100, 300, 1));
  for (int r = 0; r < 100; r++) {
    a.rowptr[r] = 3 * r;
    for (int k = 0; k < 3; k++) {
      a.colidx[3 * r + k] = (r + 33 * k) % 100;
      a.vals[3 * r + k] = 0.5f;
    }
    /* sorted columns */
    for (int i = 0; i < 3; i++)
      for (int j = i + 1; j < 3; j++)
        if (a.colidx[3 * r + j] < a.colidx[3 * r + i]) {
          int x = a.colidx[3 * r + i];
          a.colidx[3 * r + i] = a.colidx[3 * r + j];
          a.colidx[3 * r + j] = x;
        }
  }
  a.rowptr[100] = 300;
  const int64_t widths[] = {1, 16, 256, 602}; /* cuSPARSE, sub-warp, warp: each kernel the rule picks */
  for (int i = 0; i < 4; i++) CHECK(rapa_bench_spmm(be, &a, widths[i], &o, &t));
  cg_csr_free(&a);
  for (int k = 0; k < 3; k++)
    for (int pinned = 0; pinned < 2; pinned++) CHECK(rapa_bench_copy(be, (enum rapa_copy_kind)k, pinned, 1 << 20, &o, &t));
  cJSON *info = cJSON_CreateObject(), *peer = cJSON_CreateObject();
  CHECK(rapa_cuda_device_info(0, info));
  CHECK(rapa_cuda_peer(be, 1 << 20, &o, peer));
  char *s1 = cJSON_PrintUnformatted(info), *s2 = cJSON_PrintUnformatted(peer);
  printf("device: %s\npeer: %s\n", s1, s2);
  cJSON_free(s1);
  cJSON_free(s2);
  cJSON_Delete(info);
  cJSON_Delete(peer);
  cg_backend_destroy(&be);
  printf("test_rapa_gpu_bench: ok\n");
  return 0;
#endif
}
