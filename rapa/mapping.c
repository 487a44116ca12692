/* rapa/mapping.c — is the job's rank mapping sane? Pure checks over every rank's facts
 * (rapa.h, "capgnn doctor"), so that each can be tested on made-up machines: emulated
 * nodes, GPUs and NICs that this machine does not have.
 *
 * Design notes (the why): every check here is a mistake that costs a multi-node run
 * real time and prints nothing on its own: two ranks driving one GPU while the job has
 * GPUs to spare, a GPU whose traffic to the network crosses the socket link, CPU
 * bindings that put two ranks on the same cores, uneven ranks per node (the partition
 * then balances the wrong thing), more ranks than cores, and a multi-host job that
 * has no InfiniBand device (its traffic then goes over TCP, 10-100x slower). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rapa/rapa.h"

struct sink {
  char (*w)[RAPA_WARN_LEN];
  int max, n;
};

static void warn(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct sink *s, const char *fmt, ...) {
  if (s->n < s->max) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->w[s->n], RAPA_WARN_LEN, fmt, ap);
    va_end(ap);
  }
  s->n++;
}

static int same_host(const struct rapa_rank_facts *a, const struct rapa_rank_facts *b) {
  return strcmp(a->host, b->host) == 0;
}

/* Ranks that drive one GPU: the same UUID on the same host. */
static void check_shared_gpus(const struct rapa_rank_facts *f, int n, struct sink *s) {
  int shared = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i && f[i].gpu_uuid[0]; j++)
      if (same_host(&f[i], &f[j]) && !strcmp(f[i].gpu_uuid, f[j].gpu_uuid)) shared = 1;
  if (!shared) return;
  int idle = 0; /* a host whose ranks use fewer of its GPUs than it has */
  for (int i = 0; i < n; i++) {
    int used = 0, lowest = 1;
    for (int j = 0; j < n; j++) {
      if (!same_host(&f[i], &f[j])) continue;
      if (j < i) lowest = 0;
      int first = f[j].gpu_uuid[0] != '\0';
      for (int k = 0; k < j && first; k++)
        if (same_host(&f[j], &f[k]) && !strcmp(f[j].gpu_uuid, f[k].gpu_uuid)) first = 0;
      used += first;
    }
    if (lowest && f[i].host_gpus > used) idle = 1;
  }
  for (int i = 0; i < n; i++) {
    if (!f[i].gpu_uuid[0]) continue;
    char ranks[160];
    int k = 0, cnt = 0, lowest = 1;
    for (int j = 0; j < n; j++) {
      if (!f[j].gpu_uuid[0] || !same_host(&f[i], &f[j]) || strcmp(f[i].gpu_uuid, f[j].gpu_uuid)) continue;
      if (j < i) lowest = 0;
      if (k < (int)sizeof ranks - 12) k += snprintf(ranks + k, sizeof ranks - (size_t)k, "%s%d", cnt ? ", " : "", j);
      cnt++;
    }
    if (cnt < 2 || !lowest) continue;
    warn(s, "ranks %s share GPU %s (%s) on host %s (node %d)%s", ranks, f[i].gpu_name, f[i].gpu_uuid,
         f[i].host, f[i].node,
         idle ? ": other GPUs of the job's hosts drive no rank; map one rank per GPU "
                          "(mpirun --map-by ppr:G:node, G = GPUs per node)"
         : ": each rank gets a share of one GPU (more ranks than GPUs per node)");
  }
}

/* A GPU whose host has NICs, none of them on the GPU's NUMA node. */
static void check_gpu_nic(const struct rapa_rank_facts *f, int n, struct sink *s) {
  for (int i = 0; i < n; i++) {
    if (!f[i].gpu_uuid[0] || f[i].gpu_numa < 0 || f[i].nic_numa_mask == 0) continue;
    if (f[i].nic_numa_mask & (1u << (f[i].gpu_numa & 31))) continue;
    int k = 0;
    while (k < 31 && !(f[i].nic_numa_mask & (1u << k))) k++;
    warn(s, "rank %d: its GPU (%s) is on NUMA node %d, the NICs of host %s on node %d%s: its network "
         "traffic crosses the link between sockets (bind ranks to the GPUs next to the NIC, or use the NIC "
         "next to each GPU: UCX_NET_DEVICES)", i, f[i].gpu_name, f[i].gpu_numa, f[i].host, k,
         (f[i].nic_numa_mask & ~(1u << k)) ? " and others" : "");
  }
}

/* A rank bound to CPUs of another NUMA node than its GPU's. */
static void check_cpu_gpu(const struct rapa_rank_facts *f, int n, struct sink *s) {
  for (int i = 0; i < n; i++)
    if (f[i].gpu_uuid[0] && f[i].gpu_numa >= 0 && f[i].cpu_numa >= 0 && f[i].cpu_numa != f[i].gpu_numa)
      warn(s, "rank %d runs on CPUs of NUMA node %d, its GPU is on node %d: host-device copies cross "
           "sockets (the GPU is the host-local rank mod GPUs: number the ranks by NUMA node, mpirun "
           "--map-by ppr:K:numa --bind-to numa with K = GPUs per NUMA node, or a rankfile)",
           i, f[i].cpu_numa, f[i].gpu_numa);
}

/* Ranks of one host bound to overlapping, unequal CPU sets (ranks left unbound, each
 * on all of the host's CPUs, are not this mistake). */
static void check_bindings(const struct rapa_rank_facts *f, int n, struct sink *s) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      if (!same_host(&f[i], &f[j])) continue;
      uint64_t both = 0;
      for (int w = 0; w < RAPA_PU_WORDS; w++) both |= f[i].cpu_mask[w] & f[j].cpu_mask[w];
      if (!both) continue;
      const int unbound_i = f[i].bound_pus >= f[i].host_pus, unbound_j = f[j].bound_pus >= f[j].host_pus;
      if (unbound_i && unbound_j) continue;
      warn(s, "ranks %d and %d are bound to overlapping CPUs (%s and %s) on host %s: they compete for "
           "those cores (mpirun --bind-to core --map-by slot:PE=N, N = threads per rank)", i, j,
           f[i].bound_cpus, f[j].bound_cpus, f[i].host);
      return; /* one example is enough */
    }
}

void rapa_facts_counts(const struct rapa_rank_facts *f, int n, int *nodes, int *hosts) {
  *nodes = *hosts = 0;
  for (int i = 0; i < n; i++) {
    if (f[i].node + 1 > *nodes) *nodes = f[i].node + 1;
    int first = 1;
    for (int j = 0; j < i; j++) first &= !same_host(&f[i], &f[j]);
    *hosts += first;
  }
}

int rapa_mapping_check(const struct rapa_rank_facts *f, int n, char (*warnings)[RAPA_WARN_LEN], int max) {
  struct sink s = {warnings, max, 0};
  int nodes = 0, hosts = 0;
  rapa_facts_counts(f, n, &nodes, &hosts);
  check_shared_gpus(f, n, &s);
  check_gpu_nic(f, n, &s);
  check_cpu_gpu(f, n, &s);
  /* ranks per node */
  if (nodes > 1) {
    int lo = n, hi = 0;
    for (int node = 0; node < nodes; node++) {
      int cnt = 0;
      for (int i = 0; i < n; i++) cnt += f[i].node == node;
      if (cnt < lo) lo = cnt;
      if (cnt > hi) hi = cnt;
    }
    if (lo != hi)
      warn(&s, "nodes run %d to %d ranks: give every node the same number (mpirun --map-by ppr:G:node); "
           "the partition assumes equal nodes", lo, hi);
  }
  /* more ranks than cores on a host */
  for (int i = 0; i < n; i++) {
    int on_host = 0, lowest = 1;
    for (int j = 0; j < n; j++)
      if (same_host(&f[i], &f[j])) {
        on_host++;
        if (j < i) lowest = 0;
      }
    if (lowest && f[i].host_cores > 0 && on_host > f[i].host_cores)
      warn(&s, "host %s runs %d ranks on %d cores: ranks wait for each other's cores (fewer ranks, or "
           "--threads 1 and expect slow epochs)", f[i].host, on_host, f[i].host_cores);
  }
  check_bindings(f, n, &s);
  /* a multi-host job without InfiniBand */
  if (hosts > 1) {
    for (int i = 0; i < n; i++) {
      int lowest = 1;
      for (int j = 0; j < i; j++) lowest &= !same_host(&f[i], &f[j]);
      if (lowest && f[i].ib_nics == 0)
        warn(&s, "host %s has no InfiniBand device: traffic between nodes goes over TCP (Ethernet), "
             "typically 10-100x slower than RDMA; check the fabric's driver (ibv_devices) and that MPI "
             "uses UCX (OMPI_MCA_pml=ucx)", f[i].host);
    }
  }
  return s.n;
}
