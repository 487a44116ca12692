/* rapa/bench_cuda.c — the CUDA parts of the profile: event timers on the backend's
 * stream, pinned host memory, GPU-to-GPU peer copies, device facts (name, UUID,
 * memory, SMs, clocks, versions, PCIe locality from hwloc) and the MPS share.
 *
 * Design notes (the why):
 * - Events are recorded on the backend's own stream, so a timed op is measured from
 *   when the device starts it to when it ends, not including host launch overhead
 *   beyond what the stream serialises.
 * - Without CUDA in the build every function here still exists: the timer and the
 *   pinned memory report CG_ERR_UNSUPPORTED (the benchmarks never ask for them on
 *   the CPU backend), and the MPS check still runs, so its error can be tested on a
 *   machine without a GPU. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/status.h"
#include "rapa/rapa_internal.h"

int rapa_mps_share_set(int pct) {
  if (pct < 1 || pct > 100)
    return cg_err_set(CG_ERR_ARG, "--gpu-share %d: expected a percentage in [1, 100]", pct);
  const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
  char path[512];
  snprintf(path, sizeof path, "%s/control", dir && dir[0] ? dir : "/tmp/nvidia-mps");
  struct stat sb;
  if (stat(path, &sb) != 0)
    return cg_err_set(CG_ERR_UNSUPPORTED,
                      "--gpu-share %d%% needs the CUDA MPS control daemon, which is not running "
                      "(no pipe %s: %s). Start it with `nvidia-cuda-mps-control -d` (as the GPU's "
                      "owner; set CUDA_MPS_PIPE_DIRECTORY if it uses another folder), or leave "
                      "--gpu-share out: without MPS, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is ignored",
                      pct, path, strerror(errno));
  char v[16];
  snprintf(v, sizeof v, "%d", pct);
  if (setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v, 1) != 0)
    return cg_err_set(CG_ERR_INTERNAL, "setenv CUDA_MPS_ACTIVE_THREAD_PERCENTAGE failed: %s",
                      strerror(errno));
  LOG_DEBUG("profile", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d (MPS pipe %s)", pct, path);
  return CG_OK;
}

#ifdef CAPGNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <hwloc.h>
#include <hwloc/cudart.h>

#include "core/timer.h"
#include "cuda/cuda_backend.h"

static int cuda_fail(cudaError_t e, const char *call) {
  (void)cudaGetLastError();
  return cg_err_set(CG_ERR_CUDA, "%s failed: %s", call, cudaGetErrorString(e));
}
#define RAPA_CUDA_TRY(call)                            \
  do {                                                 \
    cudaError_t e_ = (call);                           \
    if (e_ != cudaSuccess) return cuda_fail(e_, #call); \
  } while (0)

struct rapa_cuda_timer {
  cudaStream_t stream;
  cudaEvent_t ev0, ev1;
};

int rapa_cuda_timer_create(struct cg_backend *be, struct rapa_cuda_timer **out) {
  *out = NULL;
  if (!cg_cuda_is_backend(be))
    return cg_err_set(CG_ERR_UNSUPPORTED, "CUDA event timing needs the CUDA backend itself (got %s)", be->name);
  struct rapa_cuda_timer *t = cg_calloc(1, sizeof *t, "CUDA event timer");
  if (!t) return CG_ERR_NOMEM;
  t->stream = cg_cuda_stream(be);
  RAPA_CUDA_TRY(cudaSetDevice(cg_cuda_device(be)));
  cudaError_t e = cudaEventCreate(&t->ev0);
  if (e == cudaSuccess) e = cudaEventCreate(&t->ev1);
  if (e != cudaSuccess) {
    cg_free(t);
    return cuda_fail(e, "cudaEventCreate");
  }
  *out = t;
  return CG_OK;
}

int rapa_cuda_timer_start(struct rapa_cuda_timer *t) {
  RAPA_CUDA_TRY(cudaEventRecord(t->ev0, t->stream));
  return CG_OK;
}

int rapa_cuda_timer_stop(struct rapa_cuda_timer *t, double *seconds) {
  float ms = 0.0f;
  RAPA_CUDA_TRY(cudaEventRecord(t->ev1, t->stream));
  RAPA_CUDA_TRY(cudaEventSynchronize(t->ev1));
  RAPA_CUDA_TRY(cudaEventElapsedTime(&ms, t->ev0, t->ev1));
  *seconds = (double)ms * 1e-3;
  return CG_OK;
}

void rapa_cuda_timer_destroy(struct rapa_cuda_timer **tp) {
  if (!tp || !*tp) return;
  cudaEventDestroy((*tp)->ev0);
  cudaEventDestroy((*tp)->ev1);
  cg_free(*tp);
  *tp = NULL;
}

int rapa_pinned_alloc(void **p, size_t bytes) {
  *p = NULL;
  cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    *p = NULL;
    (void)cudaGetLastError();
    return cg_err_set(CG_ERR_NOMEM, "cudaHostAlloc of %zu bytes of pinned memory failed: %s (pinned "
                      "memory is bounded by RAM and `ulimit -l`)", bytes, cudaGetErrorString(e));
  }
  return CG_OK;
}

void rapa_pinned_free(void *p) {
  if (p) cudaFreeHost(p);
}

int rapa_cuda_has_tf32(int ordinal) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return major >= 8;
}

/* "NUMA node(s) L, CPUs L" near the GPU (hwloc's PCI tree, else sysfs local_cpus). */
static void pcie_locality(const struct cudaDeviceProp *p, int ord, char *buf, size_t len) {
  hwloc_topology_t topo;
  hwloc_bitmap_t cpus = NULL, nodes = NULL;
  char *cs = NULL, *ns = NULL;
  snprintf(buf, len, "unknown (hwloc could not load the topology)");
  if (hwloc_topology_init(&topo) != 0) return;
  (void)hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo) != 0) goto done;
  cpus = hwloc_bitmap_alloc();
  nodes = hwloc_bitmap_alloc();
  if (!cpus || !nodes) goto done;
  hwloc_obj_t pci = hwloc_get_pcidev_by_busid(topo, (unsigned)p->pciDomainID, (unsigned)p->pciBusID,
                                              (unsigned)p->pciDeviceID, 0);
  hwloc_obj_t anc = pci ? hwloc_get_non_io_ancestor_obj(topo, pci) : NULL;
  if (anc && anc->cpuset && !hwloc_bitmap_iszero(anc->cpuset)) {
    hwloc_bitmap_copy(cpus, anc->cpuset);
    hwloc_cpuset_to_nodeset(topo, cpus, nodes);
  } else if (hwloc_cudart_get_device_cpuset(topo, ord, cpus) != 0 || hwloc_bitmap_iszero(cpus)) {
    snprintf(buf, len, "unknown (hwloc does not see PCI %04x:%02x:%02x)", p->pciDomainID, p->pciBusID,
             p->pciDeviceID);
    goto done;
  } else {
    hwloc_cpuset_to_nodeset(topo, cpus, nodes);
  }
  if (hwloc_bitmap_list_asprintf(&cs, cpus) < 0) cs = NULL;
  if (hwloc_bitmap_list_asprintf(&ns, nodes) < 0) ns = NULL;
  snprintf(buf, len, "NUMA node%s %s, CPUs %s", hwloc_bitmap_weight(nodes) == 1 ? "" : "s",
           ns && ns[0] ? ns : "?", cs ? cs : "?");
done:
  free(cs);
  free(ns);
  if (cpus) hwloc_bitmap_free(cpus);
  if (nodes) hwloc_bitmap_free(nodes);
  hwloc_topology_destroy(topo);
}

int rapa_cuda_device_info(int ordinal, cJSON *o) {
  struct cudaDeviceProp p;
  RAPA_CUDA_TRY(cudaGetDeviceProperties(&p, ordinal));
  char uuid[64];
  TRY(cg_cuda_device_uuid(ordinal, uuid, sizeof uuid));
  int clock_khz = 0, mem_khz = 0, drv = 0, rt = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal) != cudaSuccess) clock_khz = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, ordinal) != cudaSuccess) mem_khz = 0;
  if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
  (void)cudaGetLastError();
  char cublas[32];
  TRY(cg_cuda_blas_version(cublas, sizeof cublas));
  char buf[256];
  cJSON_AddStringToObject(o, "name", p.name);
  cJSON_AddStringToObject(o, "uuid", uuid);
  cJSON_AddNumberToObject(o, "memory_bytes", (double)p.totalGlobalMem);
  cJSON_AddNumberToObject(o, "sms", p.multiProcessorCount);
  cJSON_AddNumberToObject(o, "clock_mhz", clock_khz / 1000.0);
  cJSON_AddNumberToObject(o, "mem_clock_mhz", mem_khz / 1000.0);
  snprintf(buf, sizeof buf, "%d.%d", p.major, p.minor);
  cJSON_AddStringToObject(o, "compute_capability", buf);
  cJSON_AddBoolToObject(o, "tf32", p.major >= 8);
  snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  cJSON_AddStringToObject(o, "pcie_bus", buf);
  pcie_locality(&p, ordinal, buf, sizeof buf);
  cJSON_AddStringToObject(o, "pcie_locality", buf);
  snprintf(buf, sizeof buf, "%d.%d", drv / 1000, (drv % 1000) / 10);
  cJSON_AddStringToObject(o, "driver_cuda_version", buf);
  snprintf(buf, sizeof buf, "%d.%d", rt / 1000, (rt % 1000) / 10);
  cJSON_AddStringToObject(o, "runtime_version", buf);
  cJSON_AddStringToObject(o, "cublas_version", cublas);
  return CG_OK;
}

/* One peer copy direction: `bytes` from this device's buffer to peer's, checked. */
static int peer_one(struct cg_backend *be, int peer, size_t bytes, const struct rapa_bench_opts *o,
                    cJSON *results) {
  int st = CG_OK;
  const int dev = cg_cuda_device(be);
  void *src = NULL, *dst = NULL;
  unsigned char *h = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  cudaStream_t s = cg_cuda_stream(be);
  double *times = cg_malloc(sizeof(double) * (size_t)o->max_reps, "peer copy times");
  h = cg_malloc(bytes, "peer copy check buffer");
  if (!times || !h) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  cudaError_t e = cudaSetDevice(peer);
  if (e == cudaSuccess) e = cudaMalloc(&dst, bytes);
  if (e == cudaSuccess) e = cudaSetDevice(dev);
  if (e == cudaSuccess) e = cudaMalloc(&src, bytes);
  if (e == cudaSuccess) e = cudaEventCreate(&e0);
  if (e == cudaSuccess) e = cudaEventCreate(&e1);
  if (e != cudaSuccess) {
    st = cuda_fail(e, "allocating the peer copy buffers");
    goto done;
  }
  for (size_t i = 0; i < bytes; i++) h[i] = (unsigned char)(i * 31u + 7u);
  e = cudaMemcpy(src, h, bytes, cudaMemcpyHostToDevice);
  int n = 0;
  double spent = 0.0;
  for (int w = 0; w < o->warmup && e == cudaSuccess; w++)
    e = cudaMemcpyPeerAsync(dst, peer, src, dev, bytes, s);
  while (e == cudaSuccess && n < o->max_reps && (n < o->min_reps || spent < o->budget_s)) {
    float ms = 0.0f;
    e = cudaEventRecord(e0, s);
    if (e == cudaSuccess) e = cudaMemcpyPeerAsync(dst, peer, src, dev, bytes, s);
    if (e == cudaSuccess) e = cudaEventRecord(e1, s);
    if (e == cudaSuccess) e = cudaEventSynchronize(e1);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, e0, e1);
    times[n] = ms * 1e-3;
    spent += times[n++];
  }
  if (e == cudaSuccess) {
    memset(h, 0, bytes);
    e = cudaMemcpy(h, dst, bytes, cudaMemcpyDeviceToHost);
  }
  if (e != cudaSuccess) {
    st = cuda_fail(e, "peer copy");
    goto done;
  }
  for (size_t i = 0; i < bytes; i++)
    if (h[i] != (unsigned char)(i * 31u + 7u)) {
      st = cg_err_set(CG_ERR_INTERNAL, "peer copy check failed (device %d -> %d, %zu bytes): byte %zu",
                      dev, peer, bytes, i);
      goto done;
    }
  double med = rapa_median(times, n);
  cJSON *r = cJSON_CreateObject();
  cJSON_AddNumberToObject(r, "peer", peer);
  cJSON_AddNumberToObject(r, "bytes", (double)bytes);
  cJSON_AddNumberToObject(r, "median_s", med);
  cJSON_AddNumberToObject(r, "min_s", times[0]);
  cJSON_AddNumberToObject(r, "reps", n);
  cJSON_AddNumberToObject(r, "gbs", (double)bytes / med / 1e9);
  cJSON_AddItemToArray(results, r);
done:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (src) cudaFree(src);
  if (dst) {
    cudaSetDevice(peer);
    cudaFree(dst);
  }
  cudaSetDevice(dev);
  cg_free(times);
  cg_free(h);
  return st;
}

int rapa_cuda_peer(struct cg_backend *be, size_t bytes, const struct rapa_bench_opts *o, cJSON *obj) {
  int ndev = 0;
  const int dev = cg_cuda_device(be);
  if (cudaGetDeviceCount(&ndev) != cudaSuccess) {
    (void)cudaGetLastError();
    ndev = 0;
  }
  cJSON *results = cJSON_AddArrayToObject(obj, "results");
  char note[256] = "";
  int any = 0;
  for (int p = 0; p < ndev; p++) {
    if (p == dev) continue;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, dev, p) != cudaSuccess) {
      (void)cudaGetLastError();
      can = 0;
    }
    if (!can) continue;
    cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
      continue;
    }
    (void)cudaGetLastError();
    TRY(peer_one(be, p, bytes, o, results));
    any = 1;
  }
  if (!any)
    snprintf(note, sizeof note, ndev <= 1 ? "no peer GPU: %d CUDA device visible to this rank"
                                          : "no peer access from device %d to the other %d visible devices",
             ndev <= 1 ? ndev : dev, ndev - 1);
  else
    snprintf(note, sizeof note, "cudaMemcpyPeerAsync of %zu bytes to each device with peer access", bytes);
  cJSON_AddBoolToObject(obj, "available", any);
  cJSON_AddStringToObject(obj, "note", note);
  return CG_OK;
}

#else /* !CAPGNN_HAVE_CUDA */

struct rapa_cuda_timer {
  int unused;
};
static int no_cuda(const char *what) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "%s: this build has no CUDA backend", what);
}
int rapa_cuda_timer_create(struct cg_backend *be, struct rapa_cuda_timer **out) {
  *out = NULL;
  return no_cuda("CUDA event timing");
}
int rapa_cuda_timer_start(struct rapa_cuda_timer *t) { return no_cuda("CUDA event timing"); }
int rapa_cuda_timer_stop(struct rapa_cuda_timer *t, double *seconds) { return no_cuda("CUDA event timing"); }
void rapa_cuda_timer_destroy(struct rapa_cuda_timer **t) {
  if (t) *t = NULL;
}
int rapa_pinned_alloc(void **p, size_t bytes) {
  *p = NULL;
  return no_cuda("pinned host memory");
}
void rapa_pinned_free(void *p) { (void)p; }
int rapa_cuda_has_tf32(int ordinal) { return 0; }
int rapa_cuda_device_info(int ordinal, cJSON *obj) { return no_cuda("GPU facts"); }
int rapa_cuda_peer(struct cg_backend *be, size_t bytes, const struct rapa_bench_opts *o, cJSON *obj) {
  return no_cuda("peer copies");
}

#endif /* CAPGNN_HAVE_CUDA */
