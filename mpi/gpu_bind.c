/* mpi/gpu_bind.c — rank -> GPU binding, the GPU's locality from hwloc, and which
 * ranks of a host share a GPU.
 *
 * Design notes (the why):
 * - The ordinal follows the host-local rank, not the node-local one: emulated nodes
 *   (CAPGNN_EMULATE_NODES) still share the host's devices.
 * - Shared GPUs are detected by UUID, gathered per host, not by ordinal: ordinals
 *   depend on each rank's CUDA_VISIBLE_DEVICES. The path choice (path.c) needs the
 *   same count, since NCCL refuses two ranks on one GPU.
 * - Rank 0 logs every rank's binding, so the whole placement reads in one place.
 * - Without CUDA in the build this still compiles: comm_gpu_bind says how to get a
 *   build with CUDA, and the CPU backend needs none of it. */
#include "mpi/gpu_bind_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"

#ifdef CAPGNN_HAVE_CUDA
#include <hwloc.h>
#include <hwloc/cudart.h>

#include "cuda/cuda_backend.h"
#include "mpi/cuda_internal.h"
#endif

#define COMM_BIND_LINE 512 /* one rank's binding description */

int comm_gpu_share(const struct comm *c) { return c->gpu_share; }

int comm_gpu_count_same(struct comm *c, const char *mine, int *count, int *maxc) {
  int st = CG_OK;
  char me[COMM_UUID_LEN];
  memset(me, 0, sizeof me);
  snprintf(me, sizeof me, "%s", mine);
  *count = 0;
  char *all = cg_malloc((size_t)c->host_local_size * COMM_UUID_LEN, "GPU UUIDs of the host");
  /* every rank enters the collectives below or none (a rank leaving alone would leave
   * the others waiting inside them) */
  st = comm_agree(c, all ? CG_OK : CG_ERR_NOMEM, "gathering the host's GPU UUIDs");
  if (st < 0) {
    cg_free(all);
    return st;
  }
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

#ifdef CAPGNN_HAVE_CUDA

int comm_gpu_uuid(struct comm *c, int dev, const char **out) {
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

#else /* !CAPGNN_HAVE_CUDA */

int comm_gpu_uuid(struct comm *c, int dev, const char **out) {
  *out = "";
  return cg_err_set(CG_ERR_UNSUPPORTED, "comm_gpu_uuid: this build has no CUDA support");
}

#endif /* CAPGNN_HAVE_CUDA */

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
  int st2 = comm_gpu_count_same(c, uuid, &same, &maxsame);
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
