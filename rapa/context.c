/* rapa/context.c — the machine a profile was measured on: hwloc's topology (CPU
 * model, packages, cores, PUs, NUMA nodes, the PUs this process is bound to), memory,
 * the operating system.
 *
 * Design notes (the why): the PUs a rank is bound to matter as much as the machine's
 * cores: under mpirun's default binding a rank asked for 2 threads may own a single
 * core, and its profile must say so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <hwloc.h>

#include "core/log.h"
#include "rapa/plan.h"
#include "rapa/rapa_internal.h"

static char cpu_model_buf[256];

const char *rapa_cpu_model(void) {
  if (cpu_model_buf[0]) return cpu_model_buf;
  snprintf(cpu_model_buf, sizeof cpu_model_buf, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return cpu_model_buf;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *c = strchr(line, ':');
      if (c) {
        c += c[1] == ' ' ? 2 : 1;
        c[strcspn(c, "\n")] = '\0';
        snprintf(cpu_model_buf, sizeof cpu_model_buf, "%s", c);
      }
      break;
    }
  }
  fclose(f);
  return cpu_model_buf;
}

int rapa_plan_host_cores(void) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return 0;
  int n = 0;
  if (hwloc_topology_load(topo) == 0) n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  hwloc_topology_destroy(topo);
  return n > 0 ? n : 0;
}

cJSON *rapa_context_json(void) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "hostname", cg_hostname());
  struct utsname u;
  char buf[512];
  if (uname(&u) == 0) snprintf(buf, sizeof buf, "%s %s %s", u.sysname, u.release, u.machine);
  else snprintf(buf, sizeof buf, "unknown");
  cJSON_AddStringToObject(o, "os", buf);
  cJSON_AddStringToObject(o, "cpu_model", rapa_cpu_model());
  hwloc_topology_t topo;
  int ok = hwloc_topology_init(&topo) == 0;
  if (ok && hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    ok = 0;
  }
  if (ok) {
    hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
    if (model && model[0]) cJSON_ReplaceItemInObject(o, "cpu_model", cJSON_CreateString(model));
    cJSON_AddNumberToObject(o, "packages", hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE));
    cJSON_AddNumberToObject(o, "cores", hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE));
    cJSON_AddNumberToObject(o, "pus", hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
    int numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    cJSON_AddNumberToObject(o, "numa_nodes", numa > 0 ? numa : 1);
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    cJSON_AddNumberToObject(o, "memory_bytes", root ? (double)root->total_memory : 0.0);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int bound = -1;
    char *list = NULL;
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
      bound = hwloc_bitmap_weight(set);
      if (hwloc_bitmap_list_asprintf(&list, set) < 0) list = NULL;
    }
    cJSON_AddNumberToObject(o, "bound_pus", bound);
    cJSON_AddStringToObject(o, "bound_cpuset", list ? list : "unknown");
    free(list);
    if (set) hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
  } else {
    cJSON_AddNumberToObject(o, "packages", 0);
    cJSON_AddNumberToObject(o, "cores", 0);
    cJSON_AddNumberToObject(o, "pus", 0);
    cJSON_AddNumberToObject(o, "numa_nodes", 0);
    cJSON_AddNumberToObject(o, "memory_bytes", 0);
    cJSON_AddNumberToObject(o, "bound_pus", -1);
    cJSON_AddStringToObject(o, "bound_cpuset", "unknown (hwloc could not load the topology)");
  }
  unsigned v = hwloc_get_api_version();
  snprintf(buf, sizeof buf, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
  cJSON_AddStringToObject(o, "hwloc_version", buf);
  return o;
}
