/* rapa/weighted.c — capability-weighted METIS and its correction pass
 * (rapa/balance.h).
 *
 * Design notes (the why):
 * - Equal METIS parts make every epoch as slow as the slowest device. Target part
 *   weights proportional to each rank's capability put the work where the speed is;
 *   this changes only the owners, so training stays exact (the paper's public code never
 *   sizes the parts by speed at all, and balances by dropping halo vertices instead).
 * - METIS balances vertex weight, not time: a vertex weighs what its row costs in the
 *   cost model (its share of the GEMMs and elementwise ops, plus its in-edges' share of
 *   the SpMMs), so that parts of equal weight take equal modelled compute.
 * - The capability of rank i is 1 / its modelled time for the whole graph alone: the
 *   same cost model that judges the split, on the same rates.
 * - One correction pass from the cost model (halo rows and communication are not in
 *   the vertex weights): when a rank's lambda misses the mean by more than the tolerance,
 *   its target is scaled by mean / lambda_i and METIS runs once more; the split with the
 *   lower maximum lambda is kept, so the pass never makes things worse. */
#include <math.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "partition/partition.h"
#include "rapa/balance.h"

/* Per-vertex weights: K x (a + b (deg + self)) / (a + b mean(deg + self)), at least 1,
 * where a is a row's modelled compute (seconds) and b a nonzero's, on the mean rates. */
static int vertex_weights(const struct graph *g, const struct rapa_shape *s, const struct rapa_rates *rates, int P,
                          int64_t **out) {
  struct rapa_rates mean;
  memset(&mean, 0, sizeof mean);
  for (int p = 0; p < P; p++) { /* harmonic means: the time of a unit of work, averaged */
    mean.gemm_flops += 1.0 / rates[p].gemm_flops / P;
    mean.spmm_rate += 1.0 / rates[p].spmm_rate / P;
    mean.mem_bps += 1.0 / rates[p].mem_bps / P;
    mean.rng_eps += 1.0 / rates[p].rng_eps / P;
  }
  mean.gemm_flops = 1.0 / mean.gemm_flops;
  mean.spmm_rate = 1.0 / mean.spmm_rate;
  mean.mem_bps = 1.0 / mean.mem_bps;
  mean.rng_eps = 1.0 / mean.rng_eps;
  /* a and b from the cost model itself: one row without edges, then 1000 nonzeros more */
  struct rapa_load l0, l1;
  int64_t zero[RAPA_MAX_RANKS] = {0};
  l0 = (struct rapa_load){1000, 0, 0, zero, zero};
  l1 = (struct rapa_load){1000, 0, 1000000, zero, zero};
  struct rapa_cost c0, c1;
  TRY(rapa_cost_rank(s, &l0, &mean, NULL, 0, 1, &c0));
  TRY(rapa_cost_rank(s, &l1, &mean, NULL, 0, 1, &c1));
  const double a = c0.comp_s / 1000.0, b = (c1.comp_s - c0.comp_s) / 1000000.0;
  const int self = s->sage ? 0 : 1;
  const double mdeg = (double)g->m / (double)g->n + self;
  double K = 16.0;
  if ((double)g->n * K * 4.0 > 1e9) K = 1e9 / (4.0 * (double)g->n); /* METIS' 32-bit sums */
  if (K < 1.0) K = 1.0;
  int64_t *w = cg_malloc((size_t)g->n * sizeof *w, "vertex weights");
  if (!w) return CG_ERR_NOMEM;
  for (int64_t v = 0; v < g->n; v++) {
    const double d = (double)(g->rowptr[v + 1] - g->rowptr[v] + self);
    const double x = K * (a + b * d) / (a + b * mdeg);
    w[v] = x < 1.0 ? 1 : (int64_t)llround(x > 1e6 ? 1e6 : x);
  }
  *out = w;
  return CG_OK;
}

static double max_lambda(const struct rapa_split *sp) {
  double m = 0;
  for (int p = 0; p < sp->P; p++)
    if (sp->cost[p].lambda_s > m) m = sp->cost[p].lambda_s;
  return m;
}

/* Costs and weight shares of a split. */
static int split_costs(const struct graph *g, const struct rapa_shape *s, const struct rapa_rates *rates,
                       const struct rapa_links *links, int P, const int32_t *owner, const int64_t *vw,
                       struct rapa_split *sp) {
  struct rapa_load loads[RAPA_MAX_RANKS];
  TRY(rapa_loads_compute(g, owner, P, s->sage ? 0 : 1, loads));
  int st = CG_OK;
  for (int p = 0; p < P && st == CG_OK; p++) st = rapa_cost_rank(s, &loads[p], &rates[p], links, p, P, &sp->cost[p]);
  rapa_loads_free(loads, P);
  TRY(st);
  double tot = 0, part[RAPA_MAX_RANKS] = {0};
  for (int64_t v = 0; v < g->n; v++) {
    const double x = vw ? (double)vw[v] : 1.0;
    part[owner[v]] += x;
    tot += x;
  }
  for (int p = 0; p < P; p++) sp->share[p] = part[p] / tot;
  return CG_OK;
}

/* Capabilities: 1 / the modelled compute of the whole graph on each rank alone. */
static int capabilities(const struct graph *g, const struct rapa_shape *s, const struct rapa_rates *rates, int P,
                        double *cap) {
  int64_t zero[RAPA_MAX_RANKS] = {0};
  int64_t nnz = g->m + (s->sage ? 0 : g->n);
  struct rapa_load whole = {g->n, 0, nnz, zero, zero};
  double sum = 0;
  for (int p = 0; p < P; p++) {
    struct rapa_cost c;
    TRY(rapa_cost_rank(s, &whole, &rates[p], NULL, 0, 1, &c));
    cap[p] = 1.0 / c.comp_s;
    sum += cap[p];
  }
  for (int p = 0; p < P; p++) cap[p] /= sum;
  return CG_OK;
}

static int check_args(const struct graph *g, const struct rapa_shape *s, const struct rapa_rates *rates, int P,
                      const void *owner) {
  if (!g || !s || !rates || !owner || !g->rowptr)
    return cg_err_set(CG_ERR_ARG, "rapa: missing graph, shape, rates or owner array");
  if (P < 1 || P > RAPA_MAX_RANKS)
    return cg_err_set(CG_ERR_ARG, "resource-aware partitioning supports 1 to %d ranks, not %d", RAPA_MAX_RANKS, P);
  return CG_OK;
}

int rapa_split_evaluate(const struct graph *g, const struct rapa_shape *s, const struct rapa_rates *rates,
                        const struct rapa_links *links, int P, const int32_t *owner, struct rapa_split *out) {
  TRY(check_args(g, s, rates, P, owner));
  memset(out, 0, sizeof *out);
  out->P = P;
  TRY(capabilities(g, s, rates, P, out->capability));
  memcpy(out->target, out->capability, sizeof out->target);
  int64_t *vw = NULL;
  TRY(vertex_weights(g, s, rates, P, &vw));
  const int st = split_costs(g, s, rates, links, P, owner, vw, out);
  cg_free(vw);
  return st;
}

/* Shares too small to give a part any vertex: a rank rated ~100x slower than another (seen
 * for a 2-thread rank measured on oversubscribed cores, 0.2 % of cora's 2,708 vertices)
 * made METIS leave its part empty and the job stop. Each share is raised to at least
 * RAPA_MIN_PART_VERTICES vertices' worth (1/P at most), the others scaled down to keep the
 * sum; logged, and the target reported is the raised one. */
#define RAPA_MIN_PART_VERTICES 32
static void floor_targets(double *t, int P, int64_t n) {
  const double lo = fmin(1.0 / P, (double)RAPA_MIN_PART_VERTICES / (double)(n > 0 ? n : 1));
  int fixed[RAPA_MAX_RANKS] = {0};
  /* scaling the others down may take one of them below the floor too: again until none is
   * (at most P rounds; with lo <= 1/P the raised shares never exceed the sum) */
  for (int round = 0; round < P; round++) {
    double raised = 0, rest = 0;
    int any = 0;
    for (int p = 0; p < P; p++) {
      if (!fixed[p] && t[p] < lo) {
        LOG_INFO("rapa", "part %d's target share %.4g is below %d vertices of %lld: raised to %.4g", p, t[p],
                 RAPA_MIN_PART_VERTICES, (long long)n, lo);
        fixed[p] = any = 1;
      }
      if (fixed[p]) raised += lo;
      else rest += t[p];
    }
    if (!any) return;
    for (int p = 0; p < P; p++) t[p] = fixed[p] ? lo : rest > 0 ? t[p] * (1.0 - raised) / rest : t[p];
  }
}

int rapa_partition_weighted(const struct graph *g, const struct rapa_shape *s, const struct rapa_rates *rates,
                            const struct rapa_links *links, int P, uint64_t seed, double tolerance,
                            int parts_are_ranks, int32_t *owner, struct rapa_split *out) {
  TRY(check_args(g, s, rates, P, owner));
  memset(out, 0, sizeof *out);
  out->P = P;
  TRY(capabilities(g, s, rates, P, out->capability));
  int st = CG_OK;
  int64_t *vw = NULL;
  int32_t *second = NULL;
  float tp[RAPA_MAX_RANKS];
  TRY(vertex_weights(g, s, rates, P, &vw));
  for (int p = 0; p < P; p++) out->target[p] = out->capability[p];
  floor_targets(out->target, P, g->n);
  for (int p = 0; p < P; p++) tp[p] = (float)out->target[p];
  struct part_options po;
  memset(&po, 0, sizeof po);
  po.method = PART_METIS;
  po.nparts = P;
  po.seed = seed;
  po.vwgt = vw;
  po.tpwgts = P > 1 ? tp : NULL;
  po.parts_are_ranks = parts_are_ranks;
  TRY_GOTO(part_assign(g, &po, owner), done);
  out->passes = 1;
  TRY_GOTO(split_costs(g, s, rates, links, P, owner, vw, out), done);
  double mean = 0, worst = 0;
  for (int p = 0; p < P; p++) mean += out->cost[p].lambda_s / P;
  for (int p = 0; p < P; p++) {
    const double dev = fabs(out->cost[p].lambda_s - mean) / mean;
    if (dev > worst) worst = dev;
  }
  if (P > 1 && tolerance >= 0 && worst > tolerance) {
    struct rapa_split again = *out;
    double sum = 0, t2[RAPA_MAX_RANKS];
    for (int p = 0; p < P; p++) {
      t2[p] = out->target[p] * mean / out->cost[p].lambda_s;
      sum += t2[p];
    }
    for (int p = 0; p < P; p++) again.target[p] = t2[p] / sum;
    floor_targets(again.target, P, g->n);
    for (int p = 0; p < P; p++) tp[p] = (float)again.target[p];
    second = cg_malloc((size_t)g->n * sizeof *second, "second split");
    if (!second) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    TRY_GOTO(part_assign(g, &po, second), done);
    TRY_GOTO(split_costs(g, s, rates, links, P, second, vw, &again), done);
    again.passes = 2;
    LOG_DEBUG("rapa", "correction pass: max lambda %.4g s -> %.4g s", max_lambda(out), max_lambda(&again));
    if (max_lambda(&again) < max_lambda(out)) {
      again.corrected = 1;
      *out = again;
      memcpy(owner, second, (size_t)g->n * sizeof *owner);
    } else {
      out->passes = 2;
    }
  }
done:
  cg_free(vw);
  cg_free(second);
  return st;
}
