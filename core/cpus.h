/* core/cpus.h — the CPUs a process may run on, for the thread count of a rank.
 *
 * A launcher may bind a rank to a few CPUs before it starts (Open MPI's mpirun binds
 * each rank to one core when it starts at most 2 ranks): the process's affinity
 * mask then holds fewer CPUs than the host lets it use. cg_cpus_bound counts the
 * mask, cg_cpus_host counts what the host allows (its cgroup's cpuset, not the
 * launcher's binding), and cg_cpus_unbind widens the mask to all of those.
 *
 * Affinity is per thread and inherited by the threads a thread creates: call these
 * from the main thread before any OpenMP region or BLAS call starts its pool, so that
 * the worker threads get the widened mask. Linux; elsewhere the counts come from
 * sysconf and unbind does nothing. */
#ifndef CAPGNN_CORE_CPUS_H
#define CAPGNN_CORE_CPUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* CPUs in the calling thread's affinity mask (>= 1). */
int cg_cpus_bound(void);
/* CPUs the system lets this process use whatever its mask says (>= 1): the mask is
 * set to every CPU (the kernel keeps those the cpuset allows), read back and put back
 * as it was. */
int cg_cpus_host(void);
/* Widen the calling thread's mask to every CPU the system lets it use. CG_OK, or
 * CG_ERR_IO with the reason (the mask is then unchanged). */
int cg_cpus_unbind(void);
/* The thread count of OpenMP regions that do not name one (graph loading, partition
 * checks): omp_set_num_threads(n) for n >= 1. */
void cg_cpus_set_default_threads(int n);

#ifdef __cplusplus
}
#endif
#endif
