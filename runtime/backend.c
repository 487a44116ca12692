/* runtime/backend.c — picking the compute backend (--device auto|cpu|cuda). */
#include <stdlib.h>
#include <string.h>

#include "core/cpus.h"
#include "core/log.h"
#include "core/ops_emulate.h"
#include "core/status.h"
#include "runtime/runtime.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

int rt_backend_open(const char *device, int threads, int tf32, struct cg_backend **out) {
  return rt_backend_open_ordinal("train", device, threads, tf32, 0, out);
}

int rt_backend_open_ordinal(const char *subsys, const char *device, int threads, int tf32, int ordinal,
                            struct cg_backend **out) {
  *out = NULL;
  (void)ordinal; /* unused without CUDA */
  if (!device) device = "auto";
  if (strcmp(device, "cpu") == 0) {
    TRY(cg_backend_cpu_create(threads, out));
    if (tf32) LOG_INFO(subsys, "--tf32 has no effect on the CPU backend (its products are fp32)");
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
      LOG_WARN(subsys, "device auto: the CUDA backend failed (%s); falling back to the CPU backend",
               cg_err_msg());
      cg_err_clear();
      *out = NULL;
    } else {
      LOG_INFO(subsys, "device auto: no GPU found; using the CPU backend");
    }
#endif
    TRY(cg_backend_cpu_create(threads, out));
    if (tf32) LOG_INFO(subsys, "--tf32 has no effect on the CPU backend (its products are fp32)");
    return CG_OK;
  }
  return cg_err_set(CG_ERR_ARG, "--device %s: expected auto, cpu or cuda", device);
}

const char *rt_backend_describe(const struct cg_backend *be) {
  be = cg_backend_emulate_inner_const(be); /* an emulated device is described by its own */
#ifdef CAPGNN_HAVE_CUDA
  if (be->kind == CG_DEVICE_CUDA) return cg_cuda_describe(be);
#endif
  return be->name;
}

int rt_backend_emulate(struct cg_backend **be, int rank, int nranks) {
  double speed = 1.0;
  TRY(cg_emulate_speed_parse(getenv("CAPGNN_EMULATE_SPEED"), rank, nranks, &speed));
  if (!getenv("CAPGNN_EMULATE_SPEED") || !getenv("CAPGNN_EMULATE_SPEED")[0]) return CG_OK;
  struct cg_backend *w = NULL;
  TRY(cg_backend_emulate_wrap(*be, speed, &w));
  *be = w;
  if (cg_backend_emulate_cpu_clock(w))
    LOG_WARN("train", "EMULATION (CAPGNN_EMULATE_SPEED=%s): rank %d of %d runs at speed %g: each op of its "
             "backend lasts %g x the CPU time it took, or its wall time when longer (a wait for a "
             "shared core is not multiplied), the wait paid at the next synchronisation",
             getenv("CAPGNN_EMULATE_SPEED"), rank, nranks, speed, 1.0 / speed);
  else
    LOG_WARN("train", "EMULATION (CAPGNN_EMULATE_SPEED=%s): rank %d of %d runs at speed %g: each op of its "
             "backend is followed by a wait of %g x its own time, paid at the next synchronisation",
             getenv("CAPGNN_EMULATE_SPEED"), rank, nranks, speed, 1.0 / speed - 1.0);
  return CG_OK;
}

/* ---- threads ------------------------------------------------------------------------ */

void rt_threads_plan(int requested, int host_cpus, int bound_cpus, int ranks_on_host, struct rt_threads *out) {
  memset(out, 0, sizeof *out);
  if (host_cpus < 1) host_cpus = 1;
  if (bound_cpus < 1) bound_cpus = 1;
  if (ranks_on_host < 1) ranks_on_host = 1;
  if (requested > 0) {
    out->threads = requested;
    out->squeezed = requested > bound_cpus;
  } else {
    out->threads = host_cpus / ranks_on_host > 1 ? host_cpus / ranks_on_host : 1;
    if (out->threads > bound_cpus) {
      if (bound_cpus == 1) out->widen = 1;     /* a launcher's one-core default binding */
      else out->threads = bound_cpus;          /* a binding of several CPUs: the user's choice */
    }
  }
  out->oversubscribed = (int64_t)ranks_on_host * out->threads > host_cpus;
}

void rt_threads_warn_host(const char *subsys, int64_t host_threads, int ranks_on_host, int threads, int requested,
                          int host_rank, const char *device) {
  const int host = cg_cpus_host();
  if ((device && strcmp(device, "cuda") == 0) || host_threads <= host || host_rank != 0) return;
  const int fit = host / ranks_on_host > 1 ? host / ranks_on_host : 1;
  if (host_threads == ranks_on_host) /* one thread each: the ranks alone are too many */
    LOG_WARN(subsys, "%d ranks on host %s, which has %d CPU%s: the ranks share CPUs and each epoch waits "
             "for the slowest (fewer ranks per host run faster)", ranks_on_host, cg_hostname(), host,
             host == 1 ? "" : "s");
  else if (host_threads == (int64_t)ranks_on_host * threads)
    LOG_WARN(subsys, "%d rank%s x %d threads on host %s, which has %d CPU%s: oversubscribed, the threads "
             "share CPUs (pass --threads %d or leave --threads out)", ranks_on_host, ranks_on_host == 1 ? "" : "s",
             threads, cg_hostname(), host, host == 1 ? "" : "s", fit);
  else /* a per-rank list (--threads 2,1): name the total */
    LOG_WARN(subsys, "the %d ranks on host %s run %lld threads in all (%s), and the host has %d CPU%s: "
             "oversubscribed, the threads share CPUs (give its ranks at most %d threads in all, or leave "
             "--threads out)", ranks_on_host, cg_hostname(), (long long)host_threads,
             requested > 0 ? "--threads per rank" : "some ranks by --threads", host, host == 1 ? "" : "s", host);
}

int rt_threads_expected(int requested, int ranks_on_host) {
  struct rt_threads t;
  rt_threads_plan(requested, cg_cpus_host(), cg_cpus_bound(), ranks_on_host, &t);
  return t.threads;
}

int rt_threads_setup(const char *subsys, int requested, int ranks_on_host, int host_rank, const char *device) {
  const int host = cg_cpus_host(), bound = cg_cpus_bound();
  struct rt_threads t;
  rt_threads_plan(requested, host, bound, ranks_on_host, &t);
  if (t.widen && cg_cpus_unbind() != CG_OK) { /* keep the binding: threads share its CPU */
    LOG_DEBUG(subsys, "%s", cg_err_msg());
    cg_err_clear();
    t.threads = 1;
  }
  cg_cpus_set_default_threads(t.threads);
  const int gpu = device && strcmp(device, "cuda") == 0;
  LOG_INFO(subsys, "CPU threads: %d %s (%s; %d CPU%s and %d rank%s on host %s%s)", t.threads,
           ranks_on_host > 1 && requested > 0 ? "on this rank" : "per rank",
           requested > 0 ? "--threads" : "the host's CPUs divided by its ranks", host, host == 1 ? "" : "s",
           ranks_on_host, ranks_on_host == 1 ? "" : "s", cg_hostname(),
           t.widen ? "; the launcher's binding to one CPU widened to all" : "");
  if (!gpu && t.squeezed)
    LOG_WARN(subsys, "--threads %d, but the launcher bound this rank to %d CPU%s: the threads share %s "
             "(give them room: mpirun --bind-to none, or --map-by slot:PE=%d)", t.threads, bound,
             bound == 1 ? "" : "s", bound == 1 ? "it" : "them", t.threads);
  if (ranks_on_host == 1) rt_threads_warn_host(subsys, t.threads, 1, t.threads, requested, host_rank, device);
  return t.threads;
}
