/* runtime/cache_metrics.c — what the halo cache did per epoch and in all, for the
 * metrics file (runtime_internal.h, struct rt_cache_track). Built with dist.c: only a
 * partition-parallel run can have a cache.
 *
 * Design notes (the why):
 * - The cache keeps cumulative counters per rank (jaca_exchange_stats); an epoch's
 *   record is the difference since the last one, summed over the ranks through the
 *   exchange's host all-reduce (maxima through its MAX), like the other per-epoch sums.
 * - Whether there is a cache is agreed at creation: a rank whose exchange is wrapped
 *   (the test fault injection) must not skip the collective the others enter. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "jaca/jaca.h"
#include "runtime/runtime_internal.h"

#define ROW_VALUES 27

struct rt_cache_track {
  int nlayers;
  struct jaca_options opt; /* the cache's options (rt_cache_track_resumed) */
  struct jaca_stats prev[RT_CACHE_MAX_LAYERS];
  struct rt_cache_record totals;
};

static void row_from_stats(const struct jaca_stats *a, const struct jaca_stats *b, double *v) {
  /* b - a, in struct rt_cache_row's order; the maxima are b's (the epoch's: the track
   * restarts them after each record, jaca_exchange_restart_max) */
  v[0] = (double)(b->lookups - a->lookups);
  v[1] = (double)(b->rank_hits - a->rank_hits);
  v[2] = (double)(b->node_hits - a->node_hits);
  v[3] = (double)(b->misses - a->misses);
  v[4] = (double)(b->refreshed - a->refreshed);
  v[5] = (double)(b->bytes_intra - a->bytes_intra);
  v[6] = (double)(b->bytes_inter - a->bytes_inter);
  v[7] = (double)(b->bytes_shm - a->bytes_shm);
  v[8] = (double)(b->bytes_h2d - a->bytes_h2d);
  v[9] = (double)(b->bytes_d2h - a->bytes_d2h);
  v[10] = (double)(b->bytes_exact - a->bytes_exact);
  v[11] = (double)(b->age_sum - a->age_sum);
  v[12] = (double)b->age_max;
  v[13] = (double)(b->bytes_exact_inter - a->bytes_exact_inter);
  v[14] = (double)(b->grad_bytes - a->grad_bytes);
  v[15] = (double)(b->grad_bytes_exact - a->grad_bytes_exact);
  v[16] = (double)(b->grad_refreshed - a->grad_refreshed);
  v[17] = (double)(b->grad_used - a->grad_used);
  v[18] = (double)b->grad_age_max;
  v[19] = (double)(b->grad_bytes_shm - a->grad_bytes_shm);
  v[22] = (double)(b->prefetched - a->prefetched);
  v[23] = (double)(b->end_copied - a->end_copied);
  v[24] = 1e-9 * (double)(b->end_wait_ns - a->end_wait_ns);
  v[20] = (double)(b->adapt_sent - a->adapt_sent);
  v[21] = (double)(b->adapt_skipped - a->adapt_skipped);
  v[25] = (double)(b->grad_sent - a->grad_sent);
  v[26] = (double)(b->grad_skipped - a->grad_skipped);
}

static void row_set(struct rt_cache_row *r, const double *v) {
  r->lookups = v[0];
  r->rank_hits = v[1];
  r->node_hits = v[2];
  r->misses = v[3];
  r->refreshed = v[4];
  r->bytes_intra = v[5];
  r->bytes_inter = v[6];
  r->bytes_shm = v[7];
  r->bytes_h2d = v[8];
  r->bytes_d2h = v[9];
  r->bytes_exact = v[10];
  r->age_sum = v[11];
  r->age_max = v[12];
  r->bytes_exact_inter = v[13];
  r->grad_bytes = v[14];
  r->grad_bytes_exact = v[15];
  r->grad_refreshed = v[16];
  r->grad_used = v[17];
  r->grad_age_max = v[18];
  r->grad_bytes_shm = v[19];
  r->prefetched = v[22];
  r->end_copied = v[23];
  r->end_wait_s = v[24];
  r->adapt_sent = v[20];
  r->adapt_skipped = v[21];
  r->grad_sent = v[25];
  r->grad_skipped = v[26];
}

static void row_add(struct rt_cache_row *t, const struct rt_cache_row *r) {
  t->lookups += r->lookups;
  t->rank_hits += r->rank_hits;
  t->node_hits += r->node_hits;
  t->misses += r->misses;
  t->refreshed += r->refreshed;
  t->bytes_intra += r->bytes_intra;
  t->bytes_inter += r->bytes_inter;
  t->bytes_shm += r->bytes_shm;
  t->bytes_h2d += r->bytes_h2d;
  t->bytes_d2h += r->bytes_d2h;
  t->bytes_exact += r->bytes_exact;
  t->bytes_exact_inter += r->bytes_exact_inter;
  t->grad_bytes += r->grad_bytes;
  t->grad_bytes_exact += r->grad_bytes_exact;
  t->grad_bytes_shm += r->grad_bytes_shm;
  t->grad_refreshed += r->grad_refreshed;
  t->grad_used += r->grad_used;
  t->adapt_sent += r->adapt_sent;
  t->adapt_skipped += r->adapt_skipped;
  t->grad_sent += r->grad_sent;
  t->grad_skipped += r->grad_skipped;
  if (r->grad_age_max > t->grad_age_max) t->grad_age_max = r->grad_age_max;
  t->prefetched += r->prefetched;
  t->end_copied += r->end_copied;
  t->end_wait_s += r->end_wait_s;
  t->age_sum += r->age_sum;
  if (r->age_max > t->age_max) t->age_max = r->age_max;
}

int rt_cache_track_create(struct cg_exchange *ex, int nlayers, struct rt_cache_track **out) {
  *out = NULL;
  if (!ex) return CG_OK;
  struct jaca_stats s;
  double has = jaca_exchange_stats(ex, 0, &s) == CG_OK && nlayers <= RT_CACHE_MAX_LAYERS ? 1.0 : 0.0;
  cg_err_clear();
  double v[2] = {has, -has}; /* the same answer on every rank: all have one, or none */
  TRY(ex->allreduce_host(ex, v, 2, CG_REDUCE_MAX));
  if (v[0] == 0.0 || -v[1] == 0.0) return CG_OK;
  struct rt_cache_track *t = cg_calloc(1, sizeof *t, "halo cache metrics");
  if (!t) return CG_ERR_NOMEM;
  t->nlayers = nlayers;
  t->totals.nlayers = nlayers;
  struct jaca_options o;
  TRY(jaca_exchange_options(ex, &o));
  t->opt = o;
  snprintf(t->totals.policy, sizeof t->totals.policy, "%s", jaca_policy_name(o.policy));
  t->totals.capacity = o.capacity;
  t->totals.host_mb = (double)o.host_mb;
  t->totals.staleness = o.staleness;
  t->totals.grad_staleness = o.grad_staleness;
  t->totals.prefetch = o.prefetch;
  t->totals.adaptive = o.adaptive;
  t->totals.adapt_eps = o.adapt_eps;
  t->totals.grad_adaptive = o.grad_adaptive;
  t->totals.grad_adapt_eps = o.grad_adapt_eps;
  for (int l = 1; l < nlayers; l++) TRY(jaca_exchange_stats(ex, l, &t->prev[l]));
  struct jaca_window w;
  TRY(jaca_exchange_window(ex, &w));
  double wv[4] = {(double)w.reads, (double)w.policy_hits, w.oracle_hits < 0 ? 0.0 : (double)w.oracle_hits,
                  w.oracle_hits < 0 ? 1.0 : 0.0};
  TRY(ex->allreduce_host(ex, wv, 4, CG_REDUCE_SUM));
  t->totals.policy_hit_rate = wv[0] > 0 ? wv[1] / wv[0] : NAN;
  t->totals.oracle_hit_rate = wv[0] > 0 && wv[3] == 0.0 ? wv[2] / wv[0] : NAN;
  *out = t;
  return CG_OK;
}

int rt_cache_track_epoch(struct rt_cache_track *t, struct cg_exchange *ex, struct rt_cache_record *out) {
  const int L = t->nlayers;
  double v[RT_CACHE_MAX_LAYERS * ROW_VALUES], mx[2 * RT_CACHE_MAX_LAYERS];
  *out = t->totals; /* the settings */
  memset(&out->total, 0, sizeof out->total);
  memset(out->layer, 0, sizeof out->layer);
  for (int l = 1; l < L; l++) {
    struct jaca_stats now;
    TRY(jaca_exchange_stats(ex, l, &now));
    row_from_stats(&t->prev[l], &now, v + (l - 1) * ROW_VALUES);
    mx[2 * (l - 1)] = v[(l - 1) * ROW_VALUES + 12];
    mx[2 * (l - 1) + 1] = v[(l - 1) * ROW_VALUES + 18];
    t->prev[l] = now;
  }
  if (L > 1) {
    TRY(ex->allreduce_host(ex, v, (L - 1) * ROW_VALUES, CG_REDUCE_SUM));
    TRY(ex->allreduce_host(ex, mx, 2 * (L - 1), CG_REDUCE_MAX));
  }
  for (int l = 1; l < L; l++) {
    v[(l - 1) * ROW_VALUES + 12] = mx[2 * (l - 1)];
    v[(l - 1) * ROW_VALUES + 18] = mx[2 * (l - 1) + 1];
    row_set(&out->layer[l], v + (l - 1) * ROW_VALUES);
    row_add(&out->total, &out->layer[l]);
    row_add(&t->totals.layer[l], &out->layer[l]);
  }
  row_add(&t->totals.total, &out->total);
  return jaca_exchange_restart_max(ex);
}

void rt_cache_track_resumed(const struct rt_cache_track *t, const char *path, int epoch) {
  if (!t || epoch <= t->opt.warmup) return; /* the checkpoint's run never used the tiers */
  const struct jaca_options *o = &t->opt;
  const int rows = o->adaptive ? o->adapt_eps > 0.0 : o->staleness > 0;
  const int grads = o->grad_adaptive ? o->grad_adapt_eps > 0.0 : o->grad_staleness > 0;
  if (!rows && !grads) return; /* exact: every row and gradient is sent every step anyway */
  LOG_WARN_COMMON("train", "--resume %s: the halo cache's kept %s (%s) are not in the checkpoint: this run sends "
                  "every one afresh at its first step, so it continues like an uninterrupted run, not bit for bit "
                  "(--staleness 0 --grad-staleness 0 resume exactly)",
                  path, rows && grads ? "rows and gradients" : rows ? "rows" : "gradients",
                  rows && grads ? "--staleness, --grad-staleness" : rows ? "--staleness" : "--grad-staleness");
}

const struct rt_cache_record *rt_cache_track_totals(const struct rt_cache_track *t) {
  return t ? &t->totals : NULL;
}

void rt_cache_track_destroy(struct rt_cache_track **t) {
  if (!t || !*t) return;
  cg_free(*t);
  *t = NULL;
}
