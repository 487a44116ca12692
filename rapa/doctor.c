/* rapa/doctor.c — `capgnn doctor`: where each rank runs (host, node, CPUs, GPU, NICs
 * and their NUMA nodes), what MPI and its transport are, how fast rank 0's links to
 * its node and to another node are, and what is wrong with the mapping (mapping.c).
 *
 * Design notes (the why): a multi-node run that silently falls back to TCP, or maps
 * two ranks onto one GPU, is slow without any error. The doctor runs in seconds under
 * the same mpirun line as training (it binds GPUs as training does, comm_gpu_bind),
 * so that what it reports is what training will get. Facts travel as JSON strings
 * (comm_gather_text) so the report and --json show exactly what each rank saw. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "core/log.h"
#include "core/status.h"
#include "rapa/rapa_internal.h"
#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

/* NUMA node of a cpuset (-1 when it spans several nodes or none). */
static int cpuset_numa(hwloc_topology_t topo, hwloc_const_cpuset_t cpus) {
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
  if (!nodes) return -1;
  hwloc_cpuset_to_nodeset(topo, cpus, nodes);
  const int k = hwloc_bitmap_weight(nodes) == 1 ? hwloc_bitmap_first(nodes) : -1;
  hwloc_bitmap_free(nodes);
  return k;
}

/* NUMA node of an I/O object: that of its first non-I/O ancestor. */
static int io_numa(hwloc_topology_t topo, hwloc_obj_t o) {
  hwloc_obj_t anc = o ? hwloc_get_non_io_ancestor_obj(topo, o) : NULL;
  if (!anc || !anc->cpuset) return -1;
  if (anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1) return hwloc_bitmap_first(anc->nodeset);
  return cpuset_numa(topo, anc->cpuset);
}

/* CPUs, binding, NICs (and the GPU's NUMA node, from its bus id) from hwloc. */
static void host_facts(struct rapa_rank_facts *f) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return;
  (void)hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return;
  }
  f->host_cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  f->host_pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
    f->bound_pus = hwloc_bitmap_weight(set);
    if (hwloc_bitmap_list_snprintf(f->bound_cpus, sizeof f->bound_cpus, set) >= (int)sizeof f->bound_cpus)
      snprintf(f->bound_cpus + sizeof f->bound_cpus - 4, 4, "...");
    for (int pu = hwloc_bitmap_first(set); pu >= 0 && pu < 64 * RAPA_PU_WORDS; pu = hwloc_bitmap_next(set, pu))
      f->cpu_mask[pu / 64] |= 1ull << (pu % 64);
    f->cpu_numa = cpuset_numa(topo, set);
  }
  if (set) hwloc_bitmap_free(set);
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, NULL); o; o = hwloc_get_next_osdev(topo, o)) {
    const hwloc_obj_osdev_type_t t = o->attr->osdev.type;
    if (t != HWLOC_OBJ_OSDEV_NETWORK && t != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    f->nics++;
    if (t == HWLOC_OBJ_OSDEV_OPENFABRICS) f->ib_nics++;
    const size_t u = strlen(f->nic_names);
    if (u + 4 < sizeof f->nic_names)
      snprintf(f->nic_names + u, sizeof f->nic_names - u, "%s%s", u ? ", " : "", o->name ? o->name : "?");
    const int k = io_numa(topo, o);
    if (k >= 0 && k < 32) f->nic_numa_mask |= 1u << k;
  }
  if (f->gpu_bus[0]) {
    hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(topo, f->gpu_bus);
    f->gpu_numa = pci ? io_numa(topo, pci) : -1;
  }
  hwloc_topology_destroy(topo);
}

/* This rank's GPU, bound as training binds it (collective: every rank calls it when
 * every rank uses a GPU). */
static int gpu_facts(struct comm *c, int use_gpu, struct rapa_rank_facts *f) {
  if (!use_gpu) return CG_OK;
#ifdef CAPGNN_HAVE_CUDA
  f->host_gpus = cg_cuda_device_count();
  int ord = -1;
  TRY(comm_gpu_bind(c, &ord));
  cJSON *d = cJSON_CreateObject();
  if (!d) return CG_ERR_NOMEM;
  int st = rapa_cuda_device_info(ord, d);
  if (st == CG_OK) {
    const cJSON *v;
    if ((v = cJSON_GetObjectItem(d, "name")) && cJSON_IsString(v))
      snprintf(f->gpu_name, sizeof f->gpu_name, "%s", v->valuestring);
    if ((v = cJSON_GetObjectItem(d, "uuid")) && cJSON_IsString(v))
      snprintf(f->gpu_uuid, sizeof f->gpu_uuid, "%s", v->valuestring);
    if ((v = cJSON_GetObjectItem(d, "pcie_bus")) && cJSON_IsString(v))
      snprintf(f->gpu_bus, sizeof f->gpu_bus, "%s", v->valuestring);
  }
  cJSON_Delete(d);
  return st;
#else
  (void)c;
  (void)f;
  return cg_err_set(CG_ERR_UNSUPPORTED, "this build has no CUDA support: run capgnn doctor --device cpu");
#endif
}

static cJSON *facts_json(const struct rapa_rank_facts *f) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "rank", f->rank);
  cJSON_AddNumberToObject(o, "node", f->node);
  cJSON_AddStringToObject(o, "host", f->host);
  cJSON_AddNumberToObject(o, "host_cores", f->host_cores);
  cJSON_AddNumberToObject(o, "host_pus", f->host_pus);
  cJSON_AddNumberToObject(o, "bound_pus", f->bound_pus);
  cJSON_AddStringToObject(o, "bound_cpus", f->bound_cpus);
  cJSON_AddNumberToObject(o, "cpu_numa", f->cpu_numa);
  cJSON_AddNumberToObject(o, "host_gpus", f->host_gpus);
  cJSON_AddStringToObject(o, "gpu_name", f->gpu_name);
  cJSON_AddStringToObject(o, "gpu_uuid", f->gpu_uuid);
  cJSON_AddStringToObject(o, "gpu_bus", f->gpu_bus);
  cJSON_AddNumberToObject(o, "gpu_numa", f->gpu_numa);
  cJSON_AddNumberToObject(o, "nics", f->nics);
  cJSON_AddNumberToObject(o, "ib_nics", f->ib_nics);
  cJSON_AddStringToObject(o, "nic_names", f->nic_names);
  cJSON_AddNumberToObject(o, "nic_numa_mask", f->nic_numa_mask);
  cJSON *m = cJSON_AddArrayToObject(o, "cpu_mask");
  for (int w = 0; m && w < RAPA_PU_WORDS; w++) { /* two 32-bit halves: exact in a double */
    cJSON_AddItemToArray(m, cJSON_CreateNumber((double)(f->cpu_mask[w] & 0xffffffffu)));
    cJSON_AddItemToArray(m, cJSON_CreateNumber((double)(f->cpu_mask[w] >> 32)));
  }
  return o;
}

static int num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsNumber(v) ? (int)v->valuedouble : -1;
}

static void str(const cJSON *o, const char *k, char *dst, size_t len) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  snprintf(dst, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static void facts_parse(const cJSON *o, struct rapa_rank_facts *f) {
  memset(f, 0, sizeof *f);
  f->rank = num(o, "rank");
  f->node = num(o, "node");
  str(o, "host", f->host, sizeof f->host);
  f->host_cores = num(o, "host_cores");
  f->host_pus = num(o, "host_pus");
  f->bound_pus = num(o, "bound_pus");
  str(o, "bound_cpus", f->bound_cpus, sizeof f->bound_cpus);
  f->cpu_numa = num(o, "cpu_numa");
  f->host_gpus = num(o, "host_gpus");
  str(o, "gpu_name", f->gpu_name, sizeof f->gpu_name);
  str(o, "gpu_uuid", f->gpu_uuid, sizeof f->gpu_uuid);
  str(o, "gpu_bus", f->gpu_bus, sizeof f->gpu_bus);
  f->gpu_numa = num(o, "gpu_numa");
  f->nics = num(o, "nics");
  f->ib_nics = num(o, "ib_nics");
  str(o, "nic_names", f->nic_names, sizeof f->nic_names);
  const cJSON *v = cJSON_GetObjectItem(o, "nic_numa_mask");
  f->nic_numa_mask = cJSON_IsNumber(v) ? (unsigned)v->valuedouble : 0;
  const cJSON *m = cJSON_GetObjectItem(o, "cpu_mask");
  for (int w = 0; w < RAPA_PU_WORDS && cJSON_GetArraySize(m) == 2 * RAPA_PU_WORDS; w++)
    f->cpu_mask[w] = (uint64_t)cJSON_GetArrayItem(m, 2 * w)->valuedouble |
                     (uint64_t)cJSON_GetArrayItem(m, 2 * w + 1)->valuedouble << 32;
}

/* ---- links ---- */

struct link_result {
  int peer;        /* -1: no such peer */
  double lat_us;   /* half the median round trip of 8 bytes */
  double gbs;      /* 2 x 4 MiB / median round trip */
};

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Rank 0 and `peer` (both call it; others do not). */
static int pingpong(struct comm *c, int peer, struct link_result *r) {
  enum { SMALL_REPS = 200, LARGE_REPS = 20, LARGE = 4 << 20 };
  static double t[SMALL_REPS];
  char small[8] = "capgnn!", echo[8];
  TRY(comm_pingpong(c, NULL, COMM_PATH_HOST, peer, small, echo, sizeof small, SMALL_REPS, t));
  if (memcmp(small, echo, sizeof small) != 0)
    return cg_err_set(CG_ERR_MPI, "ping-pong with rank %d: the payload came back changed", peer);
  qsort(t, SMALL_REPS, sizeof *t, cmp_double);
  r->lat_us = t[SMALL_REPS / 2] / 2 * 1e6;
  unsigned char *s = malloc(LARGE), *e = malloc(LARGE);
  int st = s && e ? CG_OK : cg_err_set(CG_ERR_NOMEM, "ping-pong buffers (2 x 4 MiB)");
  if (st == CG_OK) {
    for (int i = 0; i < LARGE; i++) s[i] = (unsigned char)(i * 131 + 7);
    st = comm_pingpong(c, NULL, COMM_PATH_HOST, peer, s, e, LARGE, LARGE_REPS, t);
    if (st == CG_OK && memcmp(s, e, LARGE) != 0)
      st = cg_err_set(CG_ERR_MPI, "ping-pong with rank %d: 4 MiB came back changed", peer);
    if (st == CG_OK) {
      qsort(t, LARGE_REPS, sizeof *t, cmp_double);
      r->gbs = 2.0 * LARGE / t[LARGE_REPS / 2] / 1e9;
    }
  }
  free(s);
  free(e);
  return st;
}

/* Rank 0 with the first rank of its node and the first rank of another node. */
static int measure_links(struct comm *c, struct link_result res[2]) {
  const int me = comm_rank(c), P = comm_size(c);
  res[0].peer = res[1].peer = -1;
  for (int r = 1; r < P; r++) {
    const int k = comm_node_of(c, r) == comm_node_of(c, 0) ? 0 : 1;
    if (res[k].peer < 0) res[k].peer = r;
  }
  int st = CG_OK;
  for (int k = 0; k < 2; k++) {
    if (res[k].peer < 0) continue;
    if (me == 0 || me == res[k].peer) {
      const int s = pingpong(c, me == 0 ? res[k].peer : 0, &res[k]);
      if (st == CG_OK) st = s;
    }
  }
  return comm_agree(c, st, "measuring rank 0's links (ping-pong)");
}

/* ---- the report ---- */

/* Whether Open MPI's btl list (OMPI_MCA_btl, as `--mca btl LIST` sets it for the ranks)
 * keeps a shared-memory transport: unset keeps the default (vader); "^a,b" excludes. */
static int btl_keeps_shm(const char *btl) {
  if (!btl || !btl[0]) return 1;
  const int exclude = btl[0] == '^';
  int named = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", btl + exclude);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
    if (!strcmp(t, "vader") || !strcmp(t, "sm") || !strcmp(t, "smcuda")) named = 1;
  return exclude ? !named : named;
}

/* What the link to an emulated node (another node on rank 0's host) goes over, as far as
 * the environment tells: never the network between machines; shared memory by default,
 * but `--mca btl tcp,self` (with the ob1 pml) makes it TCP inside the host. */
static void emulated_link_note(char *out, size_t len) {
  const char *pml = getenv("OMPI_MCA_pml"), *btl = getenv("OMPI_MCA_btl");
  const int ob1 = !pml || !pml[0] || !strcmp(pml, "ob1");
  if (ob1 && !btl_keeps_shm(btl))
    snprintf(out, len, " (an emulated node on the same host: btl=%s leaves out shared memory, so most likely "
             "TCP inside the host; not the network between machines)", btl);
  else
    snprintf(out, len, " (an emulated node on the same host: MPI's path inside one host, shared memory unless "
             "the transport settings exclude it; not the network between machines)");
}

static void print_report(FILE *out, const struct comm_lib_info *lib, const struct rapa_rank_facts *f, int n,
                         const struct link_result *links, int measured, char (*warn)[RAPA_WARN_LEN], int nw) {
  int nodes = 0, hosts = 0;
  rapa_facts_counts(f, n, &nodes, &hosts);
  const char *emu = getenv("CAPGNN_EMULATE_NODES");
  fprintf(out, "capgnn doctor: %d rank%s on %d node%s", n, n == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
  if (nodes > hosts) fprintf(out, " (emulated: CAPGNN_EMULATE_NODES=%s on %d host%s)", emu ? emu : "?", hosts,
                             hosts == 1 ? "" : "s");
  fprintf(out, "\n");
  fprintf(out, "MPI          %s (MPI %d.%d)\n", lib->mpi_library, lib->mpi_version, lib->mpi_subversion);
  fprintf(out, "CUDA-aware   %s (%s)\n", lib->cuda_aware ? "yes" : "no", lib->cuda_aware_how);
  if (lib->nccl_version)
    fprintf(out, "NCCL         %d.%d.%d\n", lib->nccl_version / 10000, lib->nccl_version / 100 % 100,
            lib->nccl_version % 100);
  else fprintf(out, "NCCL         not in this build\n");
  fprintf(out, "transport    %s\n", lib->transport);
  fprintf(out, "\n%-5s %-5s %-16s %-9s %-10s %-5s %-28s %-8s %s\n", "rank", "node", "host", "cores/PUs", "bound to",
          "NUMA", "GPU", "GPU NUMA", "NICs (InfiniBand)");
  for (int i = 0; i < n; i++) {
    char cp[24], numa[12], gnuma[12], gpu[80];
    snprintf(cp, sizeof cp, "%d/%d", f[i].host_cores, f[i].host_pus);
    if (f[i].cpu_numa >= 0) snprintf(numa, sizeof numa, "%d", f[i].cpu_numa);
    else snprintf(numa, sizeof numa, "-");
    if (f[i].gpu_numa >= 0) snprintf(gnuma, sizeof gnuma, "%d", f[i].gpu_numa);
    else snprintf(gnuma, sizeof gnuma, "-");
    snprintf(gpu, sizeof gpu, "%s", f[i].gpu_name[0] ? f[i].gpu_name : "none (CPU backend)");
    fprintf(out, "%-5d %-5d %-16.16s %-9s %-10.10s %-5s %-28.28s %-8s %d (%d)%s%s\n", i, f[i].node, f[i].host, cp,
            f[i].bound_pus >= f[i].host_pus ? "all" : f[i].bound_cpus, numa, gpu, gnuma, f[i].nics, f[i].ib_nics,
            f[i].nic_names[0] ? ": " : "", f[i].nic_names);
  }
  if (measured) {
    fprintf(out, "\nlinks from rank 0 (MPI ping-pong on host memory; medians)\n");
    static const char *const kind[2] = {"same node", "other node"};
    for (int k = 0; k < 2; k++) {
      if (links[k].peer < 0) {
        fprintf(out, "  %-10s  no such rank\n", kind[k]);
        continue;
      }
      const int other_host = strcmp(f[0].host, f[links[k].peer].host) != 0;
      char emulated[400];
      emulated_link_note(emulated, sizeof emulated);
      fprintf(out, "  %-10s  rank %d: latency %.2f us, bandwidth %.2f GB/s%s\n", kind[k], links[k].peer,
              links[k].lat_us, links[k].gbs,
              k == 1 && !other_host ? emulated
              : k == 1 && links[k].lat_us > 10.0 ? " (TCP-class: expect slow halo exchanges)"
              : k == 1 ? " (RDMA-class)" : "");
    }
  }
  fprintf(out, "\n");
  if (nw == 0) fprintf(out, "mapping: no problem found\n");
  else fprintf(out, "mapping: %d warning%s\n", nw, nw == 1 ? "" : "s");
  for (int i = 0; i < nw && i < 64; i++) fprintf(out, "  - %s\n", warn[i]);
}

static int write_report_json(const char *path, const struct comm_lib_info *lib, char **texts, int n,
                             const struct link_result *links, int measured, char (*warn)[RAPA_WARN_LEN], int nw) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return cg_err_set(CG_ERR_NOMEM, "out of memory building the doctor's JSON");
  cJSON_AddStringToObject(root, "schema", "capgnn-doctor/1");
  cJSON *l = cJSON_AddObjectToObject(root, "mpi");
  cJSON_AddStringToObject(l, "library", lib->mpi_library);
  cJSON_AddNumberToObject(l, "version", lib->mpi_version);
  cJSON_AddNumberToObject(l, "subversion", lib->mpi_subversion);
  cJSON_AddBoolToObject(l, "cuda_aware", lib->cuda_aware);
  cJSON_AddStringToObject(l, "cuda_aware_how", lib->cuda_aware_how);
  cJSON_AddNumberToObject(l, "nccl_version", lib->nccl_version);
  cJSON_AddStringToObject(l, "transport", lib->transport);
  cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(ranks, cJSON_Parse(texts[i]));
  cJSON *lk = cJSON_AddArrayToObject(root, "links");
  for (int k = 0; measured && k < 2; k++) {
    if (links[k].peer < 0) continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", k == 0 ? "same_node" : "other_node");
    cJSON_AddNumberToObject(o, "peer", links[k].peer);
    cJSON_AddNumberToObject(o, "latency_us", links[k].lat_us);
    cJSON_AddNumberToObject(o, "bandwidth_gbs", links[k].gbs);
    cJSON_AddItemToArray(lk, o);
  }
  cJSON *w = cJSON_AddArrayToObject(root, "warnings");
  for (int i = 0; i < nw && i < 64; i++) cJSON_AddItemToArray(w, cJSON_CreateString(warn[i]));
  const int st = rapa_write_json(path, root, "doctor's report");
  cJSON_Delete(root);
  return st;
}

int rapa_doctor_run(struct comm *c, const struct rapa_doctor_opts *o, FILE *out, int *nwarn) {
  const int me = comm_rank(c), P = comm_size(c);
  *nwarn = 0;
  struct rapa_rank_facts mine;
  memset(&mine, 0, sizeof mine);
  mine.rank = me;
  mine.node = comm_node(c);
  mine.cpu_numa = mine.gpu_numa = -1;
  snprintf(mine.host, sizeof mine.host, "%s", cg_hostname());
  /* GPUs: when every rank sees one (auto) or asked for (cuda) */
  int64_t gpus = 0;
#ifdef CAPGNN_HAVE_CUDA
  if (strcmp(o->device, "cpu") != 0) gpus = cg_cuda_device_count() > 0;
#endif
  TRY(comm_allreduce_i64(c, &gpus, 1, COMM_MIN));
  int st = CG_OK;
  if (!gpus && strcmp(o->device, "cuda") == 0)
    st = cg_err_set(CG_ERR_UNSUPPORTED, "--device cuda: %s", 
#ifdef CAPGNN_HAVE_CUDA
                    "a rank sees no GPU (check CUDA_VISIBLE_DEVICES and nvidia-smi on every node)"
#else
                    "this build has no CUDA support"
#endif
    );
  TRY(comm_agree(c, st, "looking for GPUs"));
  TRY(comm_agree(c, gpu_facts(c, (int)gpus, &mine), "binding the ranks to their GPUs"));
  host_facts(&mine);
  cJSON *js = facts_json(&mine);
  char *text = js ? cJSON_PrintUnformatted(js) : NULL;
  cJSON_Delete(js);
  st = text ? CG_OK : cg_err_set(CG_ERR_NOMEM, "out of memory describing the rank");
  TRY(comm_agree(c, st, "describing the ranks"));
  char **texts = NULL;
  st = comm_gather_text(c, text, 0, &texts);
  cJSON_free(text);
  TRY(st);
  struct link_result links[2];
  memset(links, 0, sizeof links);
  links[0].peer = links[1].peer = -1;
  if (o->links && P > 1) {
    st = measure_links(c, links);
    if (st != CG_OK) {
      comm_texts_free(texts, P);
      return st;
    }
  }
  if (me == 0) {
    struct comm_lib_info lib;
    st = comm_lib_info(c, &lib);
    struct rapa_rank_facts *f = calloc((size_t)P, sizeof *f);
    char(*warn)[RAPA_WARN_LEN] = calloc(64, sizeof *warn);
    if (st == CG_OK && (!f || !warn)) st = cg_err_set(CG_ERR_NOMEM, "out of memory for %d ranks' facts", P);
    for (int i = 0; st == CG_OK && i < P; i++) {
      cJSON *r = cJSON_Parse(texts[i]);
      if (!r) st = cg_err_set(CG_ERR_INTERNAL, "rank %d's facts are not JSON", i);
      else facts_parse(r, &f[i]);
      cJSON_Delete(r);
    }
    if (st == CG_OK) {
      *nwarn = rapa_mapping_check(f, P, warn, 64);
      print_report(out, &lib, f, P, links, o->links && P > 1, warn, *nwarn);
      fflush(out);
      if (o->json) {
        st = write_report_json(o->json, &lib, texts, P, links, o->links && P > 1, warn, *nwarn);
        if (st == CG_OK) LOG_INFO("doctor", "wrote the report to %s", o->json);
      }
    }
    free(f);
    free(warn);
  }
  comm_texts_free(texts, P);
  return comm_agree(c, st, "writing the doctor's report");
}
