/* mpi/gpu.c — rank -> GPU binding with hwloc locality, and the choice of the path
 * that device memory takes between ranks (NCCL, CUDA-aware MPI, pinned staging).
 *
 * Design notes (the why):
 * - The path of one object is decided by the same rule on every rank from inputs
 *   reduced over the world (backend kinds, GPUs shared on a host, CUDA-awareness, the
 *   requested path): NCCL calls, MPI point-to-point and MPI neighbourhood collectives
 *   do not match each other, so a rank that took another road would hang its peers.
 * - Shared GPUs are detected by UUID, gathered per host, not by ordinal: ordinals
 *   depend on each rank's CUDA_VISIBLE_DEVICES. NCCL refuses two ranks on one GPU
 *   (ncclCommInitRank: "Duplicate GPU detected"), so AUTO does not try it then and a
 *   forced NCCL fails with a message that says why and what to use instead.
 * - One NCCL communicator per struct comm, over the world, started by the first object
 *   that needs it (setup, never inside a step) and kept until comm_finalize.
 * - Without CUDA in the build everything here still compiles: the CPU backend and
 *   wrapped device backends need none of it, and the device helpers report
 *   CG_ERR_UNSUPPORTED (comm_path_select never picks a path that calls them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "mpi/comm_internal.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support, when Open MPI has its CUDA extension */
#endif

#ifdef CAPGNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <hwloc.h>
#include <hwloc/cudart.h>

#include "cuda/cuda_backend.h"
#endif
#ifdef CAPGNN_HAVE_NCCL
#include <nccl.h>
#endif

#define COMM_UUID_LEN 48   /* "GPU-" + 36 characters + NUL, rounded up */
#define COMM_BIND_LINE 512 /* one rank's binding description */

/* ---- names ---------------------------------------------------------------------- */

const char *comm_path_name(enum comm_path p) {
  switch (p) {
    case COMM_PATH_AUTO:
      return "auto";
    case COMM_PATH_HOST:
      return "host";
    case COMM_PATH_NCCL:
      return "nccl";
    case COMM_PATH_MPI_CUDA:
      return "mpi-cuda";
    case COMM_PATH_MPI_STAGED:
      return "mpi-staged";
  }
  return "?";
}

int comm_path_parse(const char *s, enum comm_path *out) {
  static const enum comm_path choices[] = {COMM_PATH_AUTO, COMM_PATH_NCCL, COMM_PATH_MPI_CUDA,
                                           COMM_PATH_MPI_STAGED};
  for (size_t i = 0; s && i < sizeof choices / sizeof choices[0]; i++)
    if (strcmp(s, comm_path_name(choices[i])) == 0) {
      *out = choices[i];
      return CG_OK;
    }
  return cg_err_set(CG_ERR_ARG, "--comm %s: expected auto, nccl, mpi-cuda or mpi-staged",
                    s ? s : "(none)");
}

int comm_set_path(struct comm *c, enum comm_path p) {
  if (p != COMM_PATH_AUTO && p != COMM_PATH_NCCL && p != COMM_PATH_MPI_CUDA &&
      p != COMM_PATH_MPI_STAGED)
    return cg_err_set(CG_ERR_ARG,
                      "comm_set_path: path %s (%d) cannot be requested: use auto, nccl, mpi-cuda "
                      "or mpi-staged (the CPU backend always uses host)",
                      comm_path_name(p), (int)p);
  c->path_req = p;
  return CG_OK;
}

enum comm_path comm_get_path(const struct comm *c) { return c->path_req; }
int comm_gpu_share(const struct comm *c) { return c->gpu_share; }

/* ---- small helpers ------------------------------------------------------------------ */

enum be_class { BE_HOST = 0, BE_CUDA = 1, BE_OTHER = 2 };

/* BE_OTHER: a device backend that is not the CUDA backend itself (the profiling
 * wrapper, a test double): its stream is out of reach, its pointers may not be CUDA
 * pointers, so it can only be staged through its own download/upload. */
static enum be_class be_classify(const struct cg_backend *be) {
  if (be->kind == CG_DEVICE_CPU) return BE_HOST;
#ifdef CAPGNN_HAVE_CUDA
  if (cg_cuda_is_backend(be)) return BE_CUDA;
#endif
  return BE_OTHER;
}

static int have_nccl(void) {
#ifdef CAPGNN_HAVE_NCCL
  return 1;
#else
  return 0;
#endif
}

/* Whether MPI accepts device pointers; asked once. CAPGNN_MPI_CUDA_AWARE=1|0 overrides
 * the library's answer (for MPIs without Open MPI's query, or to test the fallback). */
static int mpi_cuda_aware(struct comm *c) {
  if (c->cuda_aware >= 0) return c->cuda_aware;
  int aware = 0;
  c->cuda_aware_how =
      "this MPI has no MPIX_Query_cuda_support() (not Open MPI with its CUDA "
      "extension)";
  const char *env = getenv("CAPGNN_MPI_CUDA_AWARE");
  if (env && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0)) {
    aware = env[0] == '1';
    c->cuda_aware_how = aware ? "CAPGNN_MPI_CUDA_AWARE=1" : "CAPGNN_MPI_CUDA_AWARE=0";
  } else {
    if (env && env[0])
      LOG_WARN("mpi", "CAPGNN_MPI_CUDA_AWARE='%s' ignored: set it to 1 or 0, or unset it", env);
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    aware = MPIX_Query_cuda_support() == 1;
    c->cuda_aware_how = aware ? "MPIX_Query_cuda_support() = 1"
                              : "MPIX_Query_cuda_support() = 0: Open MPI was built or runs "
                                "without CUDA support";
#endif
  }
  LOG_DEBUG("mpi", "MPI CUDA-aware: %s (%s)", aware ? "yes" : "no", c->cuda_aware_how);
  c->cuda_aware = aware;
  return aware;
}

/* *count = ranks of this host whose string equals `mine` (0 when mine is ""), *maxc
 * = the largest such count over the world. Collective over the world. */
static int count_same_on_host(struct comm *c, const char *mine, int *count, int *maxc) {
  int st = CG_OK;
  char me[COMM_UUID_LEN];
  memset(me, 0, sizeof me);
  snprintf(me, sizeof me, "%s", mine);
  *count = 0;
  char *all = cg_malloc((size_t)c->host_local_size * COMM_UUID_LEN, "GPU UUIDs of the host");
  if (!all) return CG_ERR_NOMEM; /* a few bytes per rank: not worth a collective-safe path */
  COMM_MPI_TRY_GOTO(
      MPI_Allgather(me, COMM_UUID_LEN, MPI_CHAR, all, COMM_UUID_LEN, MPI_CHAR, c->host), done);
  if (me[0])
    for (int r = 0; r < c->host_local_size; r++)
      if (strncmp(all + (size_t)r * COMM_UUID_LEN, me, COMM_UUID_LEN) == 0) (*count)++;
  *maxc = *count;
  COMM_MPI_TRY_GOTO(MPI_Allreduce(MPI_IN_PLACE, maxc, 1, MPI_INT, MPI_MAX, c->world), done);
done:
  cg_free(all);
  return st;
}

/* ---- CUDA-only parts -------------------------------------------------------------- */

#ifdef CAPGNN_HAVE_CUDA

static int cuda_fail(cudaError_t e, const char *call, const char *what) {
  (void)cudaGetLastError(); /* a handled error must not resurface at the next check */
  return cg_err_set(CG_ERR_CUDA, "%s: %s failed: %s", what, call, cudaGetErrorString(e));
}

#define COMM_CUDA_TRY(call, what)                                 \
  do {                                                            \
    cudaError_t ce_ = (call);                                     \
    if (ce_ != cudaSuccess) return cuda_fail(ce_, #call, (what)); \
  } while (0)

static int device_uuid(struct comm *c, int dev, const char **out) {
  *out = "";
  if (c->uuid_dev != dev) {
    c->uuid_dev = -1;
    TRY(cg_cuda_device_uuid(dev, c->uuid, sizeof c->uuid));
    c->uuid_dev = dev;
  }
  *out = c->uuid;
  return CG_OK;
}

/* "NUMA node(s) L, CPUs L (how)" for the GPU, or "locality unknown (why)". The PCI
 * device's first non-I/O ancestor in the hwloc tree gives the CPUs and NUMA nodes
 * close to it; sysfs local_cpus (hwloc_cudart_get_device_cpuset) is the fallback. */
static void gpu_locality(const struct cudaDeviceProp *p, int ord, char *buf, size_t len) {
  hwloc_topology_t topo;
  hwloc_bitmap_t cpus = NULL, nodes = NULL;
  char *cs = NULL, *ns = NULL;
  const char *how = NULL;
  snprintf(buf, len, "locality unknown (hwloc could not load the topology)");
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
    if (anc->nodeset)
      hwloc_bitmap_copy(nodes, anc->nodeset);
    else
      hwloc_cpuset_to_nodeset(topo, cpus, nodes);
    how = "hwloc PCI tree";
  } else if (hwloc_cudart_get_device_cpuset(topo, ord, cpus) == 0 && !hwloc_bitmap_iszero(cpus)) {
    hwloc_cpuset_to_nodeset(topo, cpus, nodes);
    how = "sysfs local_cpus";
  } else {
    snprintf(buf, len, "locality unknown (hwloc does not see PCI %04x:%02x:%02x)", p->pciDomainID,
             p->pciBusID, p->pciDeviceID);
    goto done;
  }
  if (hwloc_bitmap_list_asprintf(&cs, cpus) < 0) cs = NULL;
  if (hwloc_bitmap_list_asprintf(&ns, nodes) < 0) ns = NULL;
  snprintf(buf, len, "NUMA node%s %s, CPUs %s%s (%s)", hwloc_bitmap_weight(nodes) == 1 ? "" : "s",
           ns && ns[0] ? ns : "?", cs ? cs : "?",
           hwloc_bitmap_isequal(cpus, hwloc_topology_get_topology_cpuset(topo)) ? " (all)" : "",
           how);
done:
  free(cs);
  free(ns);
  if (cpus) hwloc_bitmap_free(cpus);
  if (nodes) hwloc_bitmap_free(nodes);
  hwloc_topology_destroy(topo);
}

/* Select device `ord` and describe it into line; its UUID into uuid. */
static int gpu_select_describe(int ord, int ndev, char *uuid, size_t ulen, char *line, size_t len) {
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  COMM_CUDA_TRY(cudaSetDevice(ord), "binding the rank to its GPU");
  struct cudaDeviceProp p;
  COMM_CUDA_TRY(cudaGetDeviceProperties(&p, ord), "querying the GPU");
  TRY(cg_cuda_device_uuid(ord, uuid, ulen));
  char pci[32];
  if (cudaDeviceGetPCIBusId(pci, (int)sizeof pci, ord) != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  }
  char loc[256];
  gpu_locality(&p, ord, loc, sizeof loc);
  int k = snprintf(line, len, "GPU %d of %d (CUDA_VISIBLE_DEVICES=%s): %s, %s, PCI %s, %s", ord,
                   ndev, vis ? vis : "unset", p.name, uuid, pci, loc);
  if (k < 0 || (size_t)k >= len) /* a log line: cut, with a mark */
    snprintf(line + (len > 4 ? len - 4 : 0), len > 4 ? 4 : len, "...");
  return CG_OK;
}

int comm_pinned_alloc(void **p, size_t bytes, const char *what) {
  *p = NULL;
  /* Portable: pinned for every CUDA context, whatever device is current here. */
  cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *p = NULL;
    return cg_err_set(CG_ERR_NOMEM,
                      "cudaHostAlloc of %zu bytes (%.1f MiB) of pinned host memory for %s failed: "
                      "%s (pinned memory is bounded by RAM and `ulimit -l`; use --comm nccl or "
                      "mpi-cuda, or narrower layers)",
                      bytes, (double)bytes / 1048576.0, what ? what : "?", cudaGetErrorString(e));
  }
  return CG_OK;
}

void comm_pinned_free(void *p) {
  if (!p) return;
  cudaError_t e = cudaFreeHost(p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    LOG_WARN("mpi", "cudaFreeHost failed: %s", cudaGetErrorString(e));
  }
}

int comm_dev_d2h(struct cg_backend *be, void *h_dst, const void *d_src, size_t bytes) {
  if (!bytes) return CG_OK;
  COMM_CUDA_TRY(cudaMemcpyAsync(h_dst, d_src, bytes, cudaMemcpyDeviceToHost, cg_cuda_stream(be)),
                "staging device rows to pinned host memory");
  return CG_OK;
}

int comm_dev_h2d(struct cg_backend *be, void *d_dst, const void *h_src, size_t bytes) {
  if (!bytes) return CG_OK;
  COMM_CUDA_TRY(cudaMemcpyAsync(d_dst, h_src, bytes, cudaMemcpyHostToDevice, cg_cuda_stream(be)),
                "copying received rows from pinned host memory to the device");
  return CG_OK;
}

int comm_dev_sync(struct cg_backend *be) {
  COMM_CUDA_TRY(cudaStreamSynchronize(cg_cuda_stream(be)),
                "waiting for the backend stream before MPI");
  return CG_OK;
}

#else /* !CAPGNN_HAVE_CUDA */

static int no_cuda(const char *fn) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "%s: this build has no CUDA support", fn);
}
int comm_pinned_alloc(void **p, size_t bytes, const char *what) {
  *p = NULL;
  return no_cuda("comm_pinned_alloc");
}
void comm_pinned_free(void *p) { (void)p; }
int comm_dev_d2h(struct cg_backend *be, void *h_dst, const void *d_src, size_t bytes) {
  return no_cuda("comm_dev_d2h");
}
int comm_dev_h2d(struct cg_backend *be, void *d_dst, const void *h_src, size_t bytes) {
  return no_cuda("comm_dev_h2d");
}
int comm_dev_sync(struct cg_backend *be) { return no_cuda("comm_dev_sync"); }

#endif /* CAPGNN_HAVE_CUDA */

/* ---- GPU binding ---------------------------------------------------------------------- */

int comm_gpu_bind(struct comm *c, int *device_ordinal_out) {
  *device_ordinal_out = -1;
#ifndef CAPGNN_HAVE_CUDA
  (void)c;
  return cg_err_set(CG_ERR_UNSUPPORTED,
                    "comm_gpu_bind: this build has no CUDA support (configure with "
                    "-DCAPGNN_WITH_CUDA=ON where the CUDA toolkit is installed), or run on the "
                    "CPU backend (--device cpu)");
#else
  int st = CG_OK, ndev = 0, ord = -1, same = 0, maxsame = 0;
  char uuid[COMM_UUID_LEN] = "";
  char line[COMM_BIND_LINE] = "";
  char *lines = NULL;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev <= 0) {
    (void)cudaGetLastError();
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    st = cg_err_set(CG_ERR_NOT_FOUND,
                    "no CUDA device visible to rank %d on host %s (%s; CUDA_VISIBLE_DEVICES=%s): "
                    "check the driver and CUDA_VISIBLE_DEVICES, or run on the CPU backend",
                    c->rank, cg_hostname(), e != cudaSuccess ? cudaGetErrorString(e) : "0 devices",
                    vis ? vis : "unset");
  } else {
    ord = c->host_local_rank % ndev;
    st = gpu_select_describe(ord, ndev, uuid, sizeof uuid, line, sizeof line);
    if (st < 0) uuid[0] = '\0';
  }
  /* every rank takes part in the collectives below, failed or not */
  int st2 = count_same_on_host(c, uuid, &same, &maxsame);
  if (st >= 0) st = st2;
  TRY(comm_agree(c, st, "GPU binding"));
  c->gpu_ordinal = ord;
  c->gpu_share = same;
  snprintf(c->uuid, sizeof c->uuid, "%s", uuid);
  c->uuid_dev = ord;

  /* Rank 0 logs every rank's binding: one place to read the whole placement. */
  char mine[COMM_BIND_LINE];
  snprintf(mine, sizeof mine,
           "rank %d (host %s, host-local rank %d): %s; %d rank%s of the host on it", c->rank,
           cg_hostname(), c->host_local_rank, line, same, same == 1 ? "" : "s");
  if (c->rank == 0) {
    lines = cg_malloc((size_t)c->size * COMM_BIND_LINE, "GPU binding report");
    if (!lines) st = CG_ERR_NOMEM;
  }
  /* the root's buffer failing must not leave the others waiting: agree first */
  TRY(comm_agree(c, st, "GPU binding report"));
  COMM_MPI_TRY_GOTO(
      MPI_Gather(mine, COMM_BIND_LINE, MPI_CHAR, lines, COMM_BIND_LINE, MPI_CHAR, 0, c->world),
      done);
  if (c->rank == 0) {
    for (int r = 0; r < c->size; r++) {
      char *l = lines + (size_t)r * COMM_BIND_LINE;
      l[COMM_BIND_LINE - 1] = '\0';
      LOG_INFO("mpi", "%s", l);
    }
    if (maxsame > 1)
      LOG_INFO("mpi",
               "up to %d ranks share one GPU: NCCL cannot be used (it refuses two ranks on one "
               "GPU); device data goes through MPI",
               maxsame);
  }
  *device_ordinal_out = ord;
done:
  cg_free(lines);
  return st;
#endif
}

/* ---- NCCL ---------------------------------------------------------------------------- */

#ifdef CAPGNN_HAVE_NCCL

static int nccl_fail(struct comm *c, ncclResult_t r, const char *call) {
  const char *last = ncclGetLastError(c ? (ncclComm_t)c->nccl : NULL);
  return cg_err_set(CG_ERR_MPI, "%s failed: %s%s%s", call, ncclGetErrorString(r),
                    last && last[0] ? ": " : "", last ? last : "");
}

#define COMM_NCCL_TRY(call)                                  \
  do {                                                       \
    ncclResult_t nr_ = (call);                               \
    if (nr_ != ncclSuccess) return nccl_fail(c, nr_, #call); \
  } while (0)

/* Start the world's NCCL communicator on device dev. Collective; on failure every
 * rank returns an error and nothing is left started. */
static int nccl_start(struct comm *c, int dev) {
  int st = CG_OK;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  int ok = 1;
  if (c->rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      st = nccl_fail(NULL, r, "ncclGetUniqueId");
      ok = 0;
    }
  }
  COMM_MPI_TRY(MPI_Bcast(&ok, 1, MPI_INT, 0, c->world));
  if (!ok)
    return c->rank == 0 ? st
                        : cg_err_set(CG_ERR_MPI,
                                     "rank 0 could not create the NCCL unique id "
                                     "(ncclGetUniqueId; see its log)");
  COMM_MPI_TRY(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->world));
  ncclComm_t nc = NULL;
  cudaError_t e = cudaSetDevice(dev);
  if (e != cudaSuccess) {
    st = cuda_fail(e, "cudaSetDevice", "starting NCCL");
  } else {
    ncclResult_t r = ncclCommInitRank(&nc, c->size, id, c->rank);
    if (r != ncclSuccess) {
      st = nccl_fail(NULL, r, "ncclCommInitRank");
      nc = NULL;
    }
  }
  st = comm_agree(c, st, "starting NCCL (ncclCommInitRank)");
  if (st < 0) {
    if (nc) ncclCommAbort(nc); /* peers failed: this one would never be usable */
    return st;
  }
  c->nccl = nc;
  c->nccl_dev = dev;
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) version = 0;
  if (c->rank == 0)
    LOG_DEBUG("mpi", "NCCL %d started over %d rank%s", version, c->size, c->size == 1 ? "" : "s");
  return CG_OK;
}

int comm_nccl_exchange(struct comm *c, struct cg_backend *be, int n, const int *peer,
                       const float *sbuf, const int *scnt, const int *sdsp, float *rbuf,
                       const int *rcnt, const int *rdsp, int64_t cols) {
  ncclComm_t nc = (ncclComm_t)c->nccl;
  cudaStream_t s = cg_cuda_stream(be);
  if (n == 0) return CG_OK;
  COMM_NCCL_TRY(ncclGroupStart());
  for (int k = 0; k < n; k++) {
    ncclResult_t r = ncclSuccess;
    const char *call = NULL;
    if (scnt[k] > 0) {
      r = ncclSend(sbuf + (size_t)sdsp[k] * (size_t)cols, (size_t)scnt[k] * (size_t)cols, ncclFloat,
                   peer[k], nc, s);
      call = "ncclSend (halo rows)";
    }
    if (r == ncclSuccess && rcnt[k] > 0) {
      r = ncclRecv(rbuf + (size_t)rdsp[k] * (size_t)cols, (size_t)rcnt[k] * (size_t)cols, ncclFloat,
                   peer[k], nc, s);
      call = "ncclRecv (halo rows)";
    }
    if (r != ncclSuccess) {
      int st = nccl_fail(c, r, call);
      (void)ncclGroupEnd(); /* close the group; its result adds nothing to the message */
      return st;
    }
  }
  COMM_NCCL_TRY(ncclGroupEnd());
  return CG_OK;
}

int comm_nccl_allreduce(struct comm *c, struct cg_backend *be, float *buf, int64_t n) {
  if (n <= 0) return CG_OK;
  COMM_NCCL_TRY(ncclAllReduce(buf, buf, (size_t)n, ncclFloat, ncclSum, (ncclComm_t)c->nccl,
                              cg_cuda_stream(be)));
  return CG_OK;
}

void comm_gpu_release(struct comm *c) {
  if (!c || !c->nccl) return;
  ncclResult_t r = ncclCommDestroy((ncclComm_t)c->nccl);
  if (r != ncclSuccess) LOG_WARN("mpi", "ncclCommDestroy failed: %s", ncclGetErrorString(r));
  c->nccl = NULL;
  c->nccl_dev = -1;
}

#else /* !CAPGNN_HAVE_NCCL */

static int nccl_start(struct comm *c, int dev) {
  (void)c;
  (void)dev;
  return cg_err_set(CG_ERR_UNSUPPORTED, "this build has no NCCL");
}
int comm_nccl_exchange(struct comm *c, struct cg_backend *be, int n, const int *peer,
                       const float *sbuf, const int *scnt, const int *sdsp, float *rbuf,
                       const int *rcnt, const int *rdsp, int64_t cols) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "comm_nccl_exchange: this build has no NCCL");
}
int comm_nccl_allreduce(struct comm *c, struct cg_backend *be, float *buf, int64_t n) {
  return cg_err_set(CG_ERR_UNSUPPORTED, "comm_nccl_allreduce: this build has no NCCL");
}
void comm_gpu_release(struct comm *c) { (void)c; }

#endif /* CAPGNN_HAVE_NCCL */

/* ---- path selection ------------------------------------------------------------------- */

/* Flags reduced over the world (MAX) so that every rank applies the rule to the same
 * inputs. */
enum {
  F_NOT_CUDA, /* some rank is not on the CUDA backend itself */
  F_CUDA,     /* some rank is on the CUDA backend */
  F_DEVICE,   /* some rank is on a device backend (CUDA or wrapped) */
  F_UNAWARE,  /* some CUDA-backend rank's MPI is not CUDA-aware */
  F_REQ_MAX,  /* requested path, max and (negated) min: they must agree */
  F_REQ_NEGMIN,
  F_FAILED, /* some rank failed to gather its inputs */
  F_P2P,    /* CAPGNN_HALO_P2P=1 somewhere: halo by point-to-point calls on every path */
  F_N
};

/* Why AUTO did not pick NCCL (for the log). */
static const char *why_not_nccl(const struct comm *c, const int *f, int maxsame) {
  if (!have_nccl()) return "this build has no NCCL";
  if (f[F_NOT_CUDA]) return "not every rank is on the CUDA backend";
  if (maxsame > 1) return "ranks share a GPU";
  if (c->nccl_failed) return "NCCL did not start";
  return "?";
}

static void announce(struct comm *c, const struct comm_sel *sel, int auto_req, const int *f,
                     int maxsame) {
  int key = (int)sel->path * 16 + (int)c->path_req; /* a new path, or a new request */
  if (key == c->path_logged) return;
  c->path_logged = key;
  char why[256] = "requested";
  if (auto_req) {
    switch (sel->path) {
      case COMM_PATH_NCCL:
        snprintf(why, sizeof why, "auto: every rank has a GPU of its own");
        break;
      case COMM_PATH_MPI_CUDA:
        snprintf(why, sizeof why, "auto: no NCCL (%s); MPI is CUDA-aware (%s)",
                 why_not_nccl(c, f, maxsame), c->cuda_aware_how ? c->cuda_aware_how : "?");
        break;
      case COMM_PATH_MPI_STAGED:
        if (!sel->pinned)
          snprintf(why, sizeof why,
                   "auto: the backend wraps a device: it stages through its "
                   "own copies");
        else
          snprintf(why, sizeof why,
                   "auto: no NCCL (%s); MPI is not CUDA-aware on every rank "
                   "(this rank: %s)",
                   why_not_nccl(c, f, maxsame), c->cuda_aware_how ? c->cuda_aware_how : "?");
        break;
      default:
        break;
    }
  }
  switch (sel->path) {
    case COMM_PATH_HOST:
      LOG_INFO("mpi", "communication path: host (CPU backend: MPI on host memory)%s",
               auto_req ? "" : "; the requested --comm applies to GPU ranks only");
      break;
    case COMM_PATH_NCCL:
      LOG_INFO("mpi", "communication path: nccl (%s)", why);
      break;
    case COMM_PATH_MPI_CUDA:
      LOG_INFO("mpi", "communication path: mpi-cuda, device pointers to MPI (%s)", why);
      break;
    default:
      LOG_INFO("mpi", "communication path: mpi-staged, %s host buffers (%s)",
               sel->pinned ? "pinned" : "pageable", why);
      break;
  }
}

int comm_path_select(struct comm *c, struct cg_backend *be, struct comm_sel *sel) {
  int st = CG_OK;
  memset(sel, 0, sizeof *sel);
  enum be_class cls = be_classify(be);
  const char *uuid = "";
  int dev = -1;
#ifdef CAPGNN_HAVE_CUDA
  if (cls == BE_CUDA) {
    dev = cg_cuda_device(be);
    st = device_uuid(c, dev, &uuid);
  }
#endif
  int same = 0, maxsame = 0;
  int st2 = count_same_on_host(c, uuid, &same, &maxsame);
  if (st >= 0) st = st2;
  int f[F_N] = {0};
  f[F_NOT_CUDA] = cls != BE_CUDA;
  f[F_CUDA] = cls == BE_CUDA;
  f[F_DEVICE] = cls != BE_HOST;
  f[F_UNAWARE] = cls == BE_CUDA && !mpi_cuda_aware(c);
  f[F_REQ_MAX] = (int)c->path_req;
  f[F_REQ_NEGMIN] = -(int)c->path_req;
  f[F_FAILED] = st < 0;
  const char *p2p_env = getenv("CAPGNN_HALO_P2P");
  f[F_P2P] = p2p_env && strcmp(p2p_env, "1") == 0;
  int rc = MPI_Allreduce(MPI_IN_PLACE, f, F_N, MPI_INT, MPI_MAX, c->world);
  if (rc != MPI_SUCCESS && st >= 0)
    st = comm_mpi_error(rc, "MPI_Allreduce (path flags)", __FILE__, __LINE__);
  /* A peer failed to gather its inputs: the flags are incomplete; agree below names it. */
  int peer_failed = st >= 0 && f[F_FAILED];
  enum comm_path req = c->path_req, g = COMM_PATH_MPI_STAGED;
  if (st >= 0 && !peer_failed && f[F_REQ_MAX] != -f[F_REQ_NEGMIN])
    st = cg_err_set(CG_ERR_ARG,
                    "ranks request different communication paths (this rank: %s; from %s to %s): "
                    "pass the same --comm to every rank",
                    comm_path_name(req), comm_path_name((enum comm_path)(-f[F_REQ_NEGMIN])),
                    comm_path_name((enum comm_path)f[F_REQ_MAX]));
  /* All ranks on the CPU: no device path is involved, whatever was requested. */
  if (st >= 0 && !peer_failed && f[F_DEVICE]) {
    switch (req) {
      case COMM_PATH_NCCL:
        g = COMM_PATH_NCCL;
        if (!have_nccl())
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm nccl: this build has no NCCL (configure where nccl.h and "
                          "libnccl are found), use --comm mpi-staged or mpi-cuda");
        else if (f[F_NOT_CUDA])
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm nccl needs every rank on the CUDA backend itself (this rank: "
                          "backend %s%s); use --comm mpi-staged",
                          be->name, cls == BE_OTHER ? ", a wrapped device backend" : "");
        else if (maxsame > 1)
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm nccl: %d ranks of one host share a GPU (this rank: %d on %s) "
                          "and NCCL refuses two ranks on one GPU (\"Duplicate GPU detected\"); "
                          "run one rank per GPU, or use --comm mpi-staged or mpi-cuda",
                          maxsame, same, uuid[0] ? uuid : "its GPU");
        break;
      case COMM_PATH_MPI_CUDA:
        g = COMM_PATH_MPI_CUDA;
        if (cls == BE_OTHER)
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm mpi-cuda needs the CUDA backend itself: backend %s wraps or "
                          "emulates a device, so its pointers cannot go to MPI; use --comm "
                          "mpi-staged",
                          be->name);
        else if (f[F_UNAWARE])
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm mpi-cuda: the MPI library is not CUDA-aware on every rank "
                          "(this rank: %s); use --comm mpi-staged or nccl, or an MPI built "
                          "with CUDA support",
                          cls == BE_CUDA ? c->cuda_aware_how : "not on the CUDA backend");
        break;
      case COMM_PATH_MPI_STAGED:
        g = COMM_PATH_MPI_STAGED;
        break;
      default: /* AUTO */
        if (have_nccl() && !f[F_NOT_CUDA] && maxsame <= 1 && !c->nccl_failed)
          g = COMM_PATH_NCCL;
        else if (f[F_CUDA] && !f[F_UNAWARE])
          g = COMM_PATH_MPI_CUDA;
        else
          g = COMM_PATH_MPI_STAGED;
        break;
    }
  }
  /* Everything above is decided from reduced inputs, so g and the errors are the same
   * on every rank (but for messages); agree anyway: the gathering may have failed. */
  TRY(comm_agree(c, st, "choosing the communication path"));
  if (peer_failed) return cg_err_set(CG_ERR_INTERNAL, "path flags disagree with comm_agree");

  if (g == COMM_PATH_NCCL) {
    if (c->nccl && c->nccl_dev != dev)
      st = cg_err_set(CG_ERR_ARG,
                      "NCCL already runs on CUDA device %d but this backend is on device %d: "
                      "use one device per rank",
                      c->nccl_dev, dev);
    TRY(comm_agree(c, st, "choosing the communication path (NCCL device)"));
    if (!c->nccl) {
      st = nccl_start(c, dev);
      if (st < 0 && req != COMM_PATH_AUTO) return st;
      if (st < 0) { /* AUTO: fall back to MPI; every rank saw the failure (agreed) */
        if (c->rank == 0)
          LOG_WARN("mpi", "NCCL did not start (%s); falling back to MPI", cg_err_msg());
        cg_err_clear();
        c->nccl_failed = 1;
        st = CG_OK;
        g = f[F_CUDA] && !f[F_UNAWARE] ? COMM_PATH_MPI_CUDA : COMM_PATH_MPI_STAGED;
      }
    }
  }

  if (cls == BE_HOST) {
    sel->path = COMM_PATH_HOST;
    if (req != COMM_PATH_AUTO && !c->warned_host_forced) {
      LOG_WARN("mpi", "--comm %s applies to device backends; the CPU backend uses host memory",
               comm_path_name(req));
      c->warned_host_forced = 1;
    }
  } else if (cls == BE_OTHER) {
    sel->path = COMM_PATH_MPI_STAGED; /* NCCL and mpi-cuda were refused above */
  } else {
    sel->path = g;
  }
  sel->pinned = cls == BE_CUDA && sel->path == COMM_PATH_MPI_STAGED;
  sel->p2p = (g == COMM_PATH_MPI_CUDA && f[F_CUDA]) || f[F_P2P];
  announce(c, sel, req == COMM_PATH_AUTO, f, maxsame);
  return CG_OK;
}

int comm_path_resolve(struct comm *c, struct cg_backend *be, enum comm_path *out) {
  struct comm_sel sel;
  *out = COMM_PATH_AUTO;
  TRY(comm_path_select(c, be, &sel));
  *out = sel.path;
  return CG_OK;
}
