/* runtime/ranks.c — every rank's compute and communication time per epoch, gathered
 * on every rank (the metrics record holds them, the summary their medians) and, when
 * the resource-aware partitioner predicted them (struct rt_prediction), set side by
 * side with the prediction in the log.
 *
 * Why per rank: with devices of different speeds the epoch is the slowest rank's, and
 * the other ranks' comm_s holds their wait for it; only the per-rank compute times
 * show where the time goes, and only they can be compared with a per-rank prediction. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

struct rt_ranks {
  int epochs, nranks;
  double *compute, *comm; /* [epoch - 1][rank] */
};

int rt_ranks_create(int epochs, int nranks, struct rt_ranks **out) {
  *out = NULL;
  if (nranks < 2) return CG_OK;
  struct rt_ranks *t = cg_calloc(1, sizeof *t, "per-rank times");
  if (!t) return CG_ERR_NOMEM;
  t->epochs = epochs;
  t->nranks = nranks;
  t->compute = cg_calloc((size_t)epochs * (size_t)nranks, sizeof(double), "per-rank compute times");
  t->comm = cg_calloc((size_t)epochs * (size_t)nranks, sizeof(double), "per-rank communication times");
  if (!t->compute || !t->comm) {
    rt_ranks_destroy(&t);
    return CG_ERR_NOMEM;
  }
  *out = t;
  return CG_OK;
}

void rt_ranks_destroy(struct rt_ranks **t) {
  if (!t || !*t) return;
  cg_free((*t)->compute);
  cg_free((*t)->comm);
  cg_free(*t);
  *t = NULL;
}

int rt_ranks_epoch(struct rt_ranks *t, struct cg_exchange *ex, int rank, int e, double compute_s, double comm_s,
                   const double **compute, const double **comm) {
  *compute = *comm = NULL;
  if (!t) return CG_OK;
  double *c = t->compute + (size_t)(e - 1) * t->nranks, *m = t->comm + (size_t)(e - 1) * t->nranks;
  double *v = cg_calloc(2 * (size_t)t->nranks, sizeof *v, "per-rank times of an epoch");
  if (!v) return CG_ERR_NOMEM;
  v[rank] = compute_s;
  v[t->nranks + rank] = comm_s;
  const int st = ex->allreduce_host(ex, v, 2 * t->nranks, CG_REDUCE_SUM);
  if (st == CG_OK) {
    memcpy(c, v, (size_t)t->nranks * sizeof *c);
    memcpy(m, v + t->nranks, (size_t)t->nranks * sizeof *m);
    *compute = c;
    *comm = m;
  }
  cg_free(v);
  return st;
}

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double med(const double *base, int stride, int from, int to, double *tmp) {
  int n = 0;
  for (int e = from; e < to; e++) tmp[n++] = base[(size_t)e * stride];
  if (n == 0) return NAN;
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_d);
  return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

int rt_ranks_medians(const struct rt_ranks *t, int first, int last, const struct rt_prediction *pred,
                     struct rt_rank_times *out) {
  memset(out, 0, sizeof *out);
  if (!t) return CG_OK;
  out->nranks = t->nranks < RT_PRED_MAX_RANKS ? t->nranks : RT_PRED_MAX_RANKS;
  double *tmp = cg_malloc((size_t)(t->epochs > 0 ? t->epochs : 1) * sizeof *tmp, "median scratch");
  if (!tmp) return CG_ERR_NOMEM;
  for (int r = 0; r < out->nranks; r++) {
    out->compute_s[r] = med(t->compute + r, t->nranks, first, last, tmp);
    out->comm_s[r] = med(t->comm + r, t->nranks, first, last, tmp);
  }
  cg_free(tmp);
  out->pred = pred && pred->nranks == t->nranks ? pred : NULL;
  if (out->pred)
    for (int r = 0; r < out->nranks; r++)
      LOG_INFO("train", "rank %d: predicted compute %.2f ms + communication %.2f ms = %.2f ms; measured (median) "
               "compute %.2f ms (the prediction %+.1f %% off it), communication %.2f ms (waiting for slower ranks "
               "included)", r,
               pred->compute_s[r] * 1e3, pred->comm_s[r] * 1e3, (pred->compute_s[r] + pred->comm_s[r]) * 1e3,
               out->compute_s[r] * 1e3, 100.0 * (pred->compute_s[r] - out->compute_s[r]) / out->compute_s[r],
               out->comm_s[r] * 1e3);
  return CG_OK;
}
