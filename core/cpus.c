/* core/cpus.c — CPU counts and affinity (see cpus.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#include "core/cpus.h"

#include <errno.h>
#include <omp.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"

static int online(void) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 1 ? (int)n : 1;
}

#ifdef __linux__
int cg_cpus_bound(void) {
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof s, &s) != 0) return online();
  const int n = CPU_COUNT(&s);
  return n >= 1 ? n : 1;
}

int cg_cpus_host(void) {
  cpu_set_t saved, all;
  if (sched_getaffinity(0, sizeof saved, &saved) != 0) return online();
  CPU_ZERO(&all);
  for (int i = 0; i < CPU_SETSIZE; i++) CPU_SET(i, &all);
  if (sched_setaffinity(0, sizeof all, &all) != 0) return cg_cpus_bound();
  const int n = cg_cpus_bound();
  sched_setaffinity(0, sizeof saved, &saved);
  return n;
}

int cg_cpus_unbind(void) {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int i = 0; i < CPU_SETSIZE; i++) CPU_SET(i, &all);
  if (sched_setaffinity(0, sizeof all, &all) != 0)
    return cg_err_set(CG_ERR_IO, "cannot widen the CPU affinity: %s", strerror(errno));
  return CG_OK;
}
#else
int cg_cpus_bound(void) { return online(); }
int cg_cpus_host(void) { return online(); }
int cg_cpus_unbind(void) { return CG_OK; }
#endif

void cg_cpus_set_default_threads(int n) {
  if (n >= 1) omp_set_num_threads(n);
}
