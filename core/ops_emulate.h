/* core/ops_emulate.h — a backend that emulates a slower device (tests, benchmarks).
 *
 * cg_backend_emulate_wrap() returns a backend whose every op forwards to `inner`,
 * measures the op's wall time dt (the inner backend synchronised before and after,
 * so that dt belongs to that op alone) and owes a wait of (1/speed - 1) x dt; on the
 * CPU backend with one thread (cg_backend_cpu_threads), whose ops run on the calling
 * thread, it owes max(0, c / speed - dt), c
 * the thread's CPU time in the op: the op then lasts c / speed in all, the time it
 * queued for a core shared with other ranks included rather than multiplied (the two
 * agree when the op had its core to itself). The
 * debt is paid (slept, not spun, so that other ranks sharing the cores can run) at the
 * next point where the host waits for the device anyway: be->sync, and the ops that
 * return values to the host (download, losses, evaluation counts). So every timer of
 * the runtime, which synchronises before it reads the clock, sees each op 1/speed times
 * as long, and the results are bit for bit those of `inner`. An oversleep is carried
 * over as credit (up to 200 us), so the total wait follows the debt however coarse the
 * sleeps are; a sleeper woken later than that (a busy machine) makes the rank slower
 * than its speed, never faster. A debt under 100 us waits for a later synchronisation
 * (at most that much of a step's wait moves into the next step).
 *
 * CAPGNN_EMULATE_SPEED=f0,f1,... names one speed per rank (rank r takes f_r, each in
 * (0, 1]); a single value applies to every rank. Never on by default: the runtime logs
 * it as emulation wherever it is used.
 *
 * The wrapper owns `inner`: destroying it destroys `inner`. */
#ifndef CAPGNN_CORE_OPS_EMULATE_H
#define CAPGNN_CORE_OPS_EMULATE_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* speed in (0, 1]; CG_ERR_ARG otherwise. On success *out owns inner. */
int cg_backend_emulate_wrap(struct cg_backend *inner, double speed, struct cg_backend **out);
/* The backend under be's wrappers (cg_backend_base): what an emulating wrapper forwards to,
 * through a profiling wrapper around it too; `be` itself for a backend that is no wrapper. */
struct cg_backend *cg_backend_emulate_inner(struct cg_backend *be);
const struct cg_backend *cg_backend_emulate_inner_const(const struct cg_backend *be);
/* be without its emulation: be itself when no emulating wrapper is in its chain (a
 * profiling wrapper alone stays, so that what runs on the result is still profiled), else
 * the backend under all of its wrappers (cg_backend_base). For what must not run at the
 * emulated speed, e.g. the halo exchange's row moves (runtime/dist.c). */
struct cg_backend *cg_backend_emulate_strip(struct cg_backend *be);
/* The speed of an emulating wrapper (be, or under be's profiling wrapper), 1 for any other
 * backend. */
double cg_backend_emulate_speed(const struct cg_backend *be);
/* 1 when an emulating wrapper follows the CPU-time rule (the CPU backend with one thread),
 * 0 when it follows the wall-time rule or `be` does not emulate. */
int cg_backend_emulate_cpu_clock(const struct cg_backend *be);

struct cg_emulate_counters {
  double measured_s; /* sum of the ops' own (wall) times */
  double cpu_s;      /* CPU backend, one thread: the calling thread's CPU time in them; 0 otherwise */
  double owed_s;     /* the waits owed: (1/speed - 1) x measured_s; CPU: sum of max(0, cpu/speed - wall) */
  double slept_s;    /* time spent in the waits so far (>= owed_s - the open debt) */
  int64_t ops, waits;
};
void cg_emulate_get(const struct cg_backend *be, struct cg_emulate_counters *c);

/* The speed of rank `rank` of `nranks` from the text of CAPGNN_EMULATE_SPEED (`spec`;
 * NULL or empty: 1, no emulation). A list must have 1 or nranks values, each a number
 * in (0, 1]; CG_ERR_ARG naming the variable and the bad value otherwise. */
int cg_emulate_speed_parse(const char *spec, int rank, int nranks, double *speed);
/* The syntax of CAPGNN_EMULATE_SPEED alone (`spec`; NULL or empty: CG_OK, *nvalues 0):
 * each comma-separated value a number in (0, 1], with the message cg_emulate_speed_parse
 * fails with otherwise; *nvalues, the number of values. For a command to refuse a bad
 * list at start, before it loads anything or knows its ranks (the count is checked by
 * cg_emulate_speed_parse, where the number of ranks is known). */
int cg_emulate_speed_check(const char *spec, int *nvalues);

#ifdef __cplusplus
}
#endif
#endif
