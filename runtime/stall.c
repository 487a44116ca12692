/* runtime/stall.c — what the stall watchdog (core/watchdog.h) sees of a training run:
 * an exchange that marks where the rank is around every call to the other ranks.
 *
 * Design notes (the why):
 * - A wrapper of the seam rather than marks inside mpi/: whatever exchange the run
 *   uses (plain, fault-injecting, cached), its waits are marked the same way, and the
 *   model code does not change.
 * - Each call is marked twice: on entry (waiting for the other ranks, or not for a
 *   begin, which only posts) and on return ("computing after ..."), so that a rank
 *   stuck in its own work is told apart from one waiting for a peer. */
#include <stdio.h>

#include "core/status.h"
#include "core/watchdog.h"
#include "runtime/runtime_internal.h"

struct watch_exchange {
  struct cg_exchange ex; /* first: the seam's table */
  struct cg_exchange *inner;
  int epoch; /* the last tag's, for the all-reduces (which carry none) */
};

static struct watch_exchange *impl(struct cg_exchange *ex) { return (struct watch_exchange *)ex; }

static int after(struct watch_exchange *w, const char *call, int layer, int st) {
  char where[48];
  snprintf(where, sizeof where, "computing after %s", call);
  cg_watch_mark(where, w->epoch, layer, 0);
  return st;
}

static int w_halo_begin(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                        int64_t cols) {
  struct watch_exchange *w = impl(ex);
  if (tag.epoch) w->epoch = (int)tag.epoch; /* evaluation's tags say 0: keep the loop's epoch */
  const char *call = dir == CG_HALO_FORWARD ? "halo begin (forward)" : "halo begin (backward)";
  cg_watch_mark(call, w->epoch, tag.layer, 0);
  return after(w, call, tag.layer, w->inner->halo_begin(w->inner, dir, tag, x, cols));
}

static int w_halo_end(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                      int64_t cols) {
  struct watch_exchange *w = impl(ex);
  if (tag.epoch) w->epoch = (int)tag.epoch;
  const char *call = dir == CG_HALO_FORWARD ? "halo exchange (forward)" : "halo exchange (backward)";
  cg_watch_mark(call, w->epoch, tag.layer, 1);
  return after(w, call, tag.layer, w->inner->halo_end(w->inner, dir, tag, x, cols));
}

/* Polling between compute blocks is the computation itself (no mark: the begin's
 * "computing after" stands, and the watchdog sees end's wait when the peer stalls). */
static int w_halo_progress(struct cg_exchange *ex) { return cg_exchange_halo_progress(impl(ex)->inner); }

static int w_allreduce_grads(struct cg_exchange *ex, float *buf, int64_t n) {
  struct watch_exchange *w = impl(ex);
  cg_watch_mark("gradient all-reduce", w->epoch, -1, 1);
  return after(w, "gradient all-reduce", -1, w->inner->allreduce_grads(w->inner, buf, n));
}

static int w_allreduce_host(struct cg_exchange *ex, double *v, int n, enum cg_reduce op) {
  struct watch_exchange *w = impl(ex);
  cg_watch_mark("all-reduce of host values", w->epoch, -1, 1);
  return after(w, "all-reduce of host values", -1, w->inner->allreduce_host(w->inner, v, n, op));
}

static void w_counters(const struct cg_exchange *ex, struct cg_exchange_counters *out) {
  const struct watch_exchange *w = (const struct watch_exchange *)ex;
  w->inner->counters(w->inner, out);
}

static void w_destroy(struct cg_exchange *ex) { cg_free(ex); } /* the inner one stays the caller's */

int rt_watch_exchange_wrap(struct cg_exchange *inner, struct cg_exchange **out) {
  *out = NULL;
  struct watch_exchange *w = cg_calloc(1, sizeof *w, "watched exchange");
  if (!w) return CG_ERR_NOMEM;
  w->inner = inner;
  w->ex.halo_begin = w_halo_begin;
  w->ex.halo_end = w_halo_end;
  w->ex.halo_progress = w_halo_progress;
  w->ex.allreduce_grads = w_allreduce_grads;
  w->ex.allreduce_host = w_allreduce_host;
  w->ex.counters = w_counters;
  w->ex.destroy = w_destroy;
  *out = &w->ex;
  return CG_OK;
}
