/* runtime/backend.c — picking the compute backend (--device auto|cpu|cuda). */
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "runtime/runtime.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

int rt_backend_open(const char *device, int threads, int tf32, struct cg_backend **out) {
  return rt_backend_open_ordinal(device, threads, tf32, 0, out);
}

int rt_backend_open_ordinal(const char *device, int threads, int tf32, int ordinal,
                            struct cg_backend **out) {
  *out = NULL;
  (void)ordinal; /* unused without CUDA */
  if (!device) device = "auto";
  if (strcmp(device, "cpu") == 0) {
    TRY(cg_backend_cpu_create(threads, out));
    if (tf32) LOG_INFO("train", "--tf32 has no effect on the CPU backend (its products are fp32)");
    return CG_OK;
  }
  if (strcmp(device, "cuda") == 0) {
#ifdef CAPGNN_HAVE_CUDA
    TRY(cg_backend_cuda_create(ordinal, tf32, out));
    return CG_OK;
#else
    return cg_err_set(CG_ERR_UNSUPPORTED,
                      "--device cuda: this build has no CUDA backend (rebuild with "
                      "-DCAPGNN_WITH_CUDA=ON on a machine with the CUDA toolkit, or use --device cpu)");
#endif
  }
  if (strcmp(device, "auto") == 0) {
#ifdef CAPGNN_HAVE_CUDA
    if (cg_cuda_device_count() > 0) {
      if (cg_backend_cuda_create(ordinal, tf32, out) == CG_OK) return CG_OK;
      /* A GPU answered but the backend could not start on it: say so loudly, since
       * the run will be much slower than the user expects. */
      LOG_WARN("train", "device auto: the CUDA backend failed (%s); falling back to the CPU backend",
               cg_err_msg());
      cg_err_clear();
      *out = NULL;
    } else {
      LOG_INFO("train", "device auto: no GPU found; using the CPU backend");
    }
#endif
    TRY(cg_backend_cpu_create(threads, out));
    if (tf32) LOG_INFO("train", "--tf32 has no effect on the CPU backend (its products are fp32)");
    return CG_OK;
  }
  return cg_err_set(CG_ERR_ARG, "--device %s: expected auto, cpu or cuda", device);
}

const char *rt_backend_describe(const struct cg_backend *be) {
#ifdef CAPGNN_HAVE_CUDA
  if (be->kind == CG_DEVICE_CUDA) return cg_cuda_describe(be);
#endif
  return be->name;
}
