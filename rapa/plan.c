/* rapa/plan.c — the scale model of `capgnn plan` (rapa/plan.h).
 *
 * Design notes (the why):
 * - Compute and memory are rapa_cost_rank's, so the partitioner and the plan can never
 *   disagree about a rank's work; the plan adds what the partitioner does not need to
 *   compare splits: where the ranks sit (nodes, hosts, shared cores), the halo cache's
 *   routes and the all-reduce's algorithm. Without the cache, on one node, with a flat
 *   all-reduce, the plan's communication equals rapa_cost_rank's (tested).
 * - The cache's routes are derived the way jaca/node.c derives them (a remote row once
 *   per node, to the (gid mod k)-th of the k ranks of the node that need it, in rank
 *   order), so that the bytes it predicts are the bytes training counts, exactly.
 * - The all-reduce's inter-node bytes use mpi/allreduce.c's segment bounds (n k / s),
 *   again so that the counted figure can be compared exactly, not approximately.
 * - Shared cores stretch compute only: ranks bound to one core take turns computing,
 *   while a rank waiting in MPI yields its core (Open MPI does when it runs more ranks
 *   than slots) - but only to a rank queued on the same core, which is why the model
 *   needs the placement (bound round-robin) rather than a machine-wide average: unbound
 *   under SCHED_RR, 3 of 4 ranks were measured sharing one core of two. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "rapa/plan.h"
#include "rapa/rapa.h"
#include "rapa/rapa_internal.h"

const char *rapa_allreduce_name(enum rapa_allreduce a) {
  switch (a) {
    case RAPA_ALLREDUCE_MPI: return "mpi";
    case RAPA_ALLREDUCE_FLAT: return "flat";
    case RAPA_ALLREDUCE_HIER: return "hier";
  }
  return "?";
}

void rapa_plan_free(struct rapa_plan *p) {
  if (!p) return;
  if (p->loads) rapa_loads_free(p->loads, p->P);
  cg_free(p->loads);
  cg_free(p->fwd_rows);
  cg_free(p->width);
  cg_free(p->rank);
  cg_free(p->node_tier_rows);
  memset(p, 0, sizeof *p);
}

static int node_of(int r, int P, int N) { return (int)((int64_t)r * N / P); }
int rapa_plan_device_rank(const struct rapa_rates *r) { return r->h2d_bps > 0 && r->d2h_bps > 0; }
static int64_t seg(int64_t n, int s, int k) { return n * k / s; }

/* The cache's routes: fwd[i * P + j] = rows i sends j per hidden layer (j the node's
 * receiver), recv_direct[j] = rows j receives (and writes into the tier), owner_writes[i]
 * = rows i writes into its node's tier, tier_rows[n] = the node's distinct halo rows. */
static int cache_routes(const struct graph *g, const int32_t *owner, int P, int N, int64_t *fwd,
                        int64_t *recv_direct, int64_t *owner_writes, int64_t *tier_rows) {
  const int64_t n = g->n;
  int st = CG_OK;
  int32_t *seen = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *seen, "plan: halo marks");
  int32_t *mark = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *mark, "plan: node marks");
  int32_t *needers = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *needers, "plan: needers per row");
  int32_t *turn = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *turn, "plan: needer turns");
  int64_t *first = cg_calloc((size_t)P + 1, sizeof *first, "plan: rows per part");
  int32_t *byp = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *byp, "plan: rows by part");
  if (!seen || !mark || !needers || !turn || !first || !byp) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int64_t v = 0; v < n; v++) {
    seen[v] = mark[v] = -1;
    first[owner[v] + 1]++;
  }
  for (int p = 0; p < P; p++) first[p + 1] += first[p];
  {
    int64_t *at = cg_malloc((size_t)P * sizeof *at, "plan: part cursors");
    if (!at) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    for (int p = 0; p < P; p++) at[p] = first[p];
    for (int64_t v = 0; v < n; v++) byp[at[owner[v]]++] = (int32_t)v;
    cg_free(at);
  }
  for (int node = 0; node < N; node++) {
    int lo = 0;
    while (lo < P && node_of(lo, P, N) != node) lo++;
    int hi = lo;
    while (hi < P && node_of(hi, P, N) == node) hi++;
    /* pass 1: how many ranks of the node need each row; owners on the node write theirs once.
     * seen[u] = 2p: counted for rank p in pass 1; 2p + 1: in pass 2 */
    for (int pass = 0; pass < 2; pass++)
      for (int p = lo; p < hi; p++)
        for (int64_t i = first[p]; i < first[p + 1]; i++) {
          const int32_t v = byp[i];
          for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
            const int32_t u = g->colidx[k];
            const int q = owner[u];
            if (q == p || seen[u] == 2 * p + pass) continue;
            seen[u] = 2 * p + pass;
            const int remote = node_of(q, P, N) != node;
            if (pass == 0) {
              if (mark[u] != node) {
                mark[u] = node;
                needers[u] = turn[u] = 0;
                tier_rows[node]++;
                if (!remote) owner_writes[q]++;
              }
              needers[u]++;
            } else if (remote && turn[u]++ == (int32_t)((int64_t)u % needers[u])) {
              fwd[(size_t)q * P + p]++;
              recv_direct[p]++;
            }
          }
        }
  }
done:
  cg_free(seen);
  cg_free(mark);
  cg_free(needers);
  cg_free(turn);
  cg_free(first);
  cg_free(byp);
  return st;
}

/* The all-reduce's wire bytes rank r sends to other nodes (mpi/allreduce.c's segments). */
static double allreduce_inter_bytes(enum rapa_allreduce a, int64_t params, int r, int P, int N) {
  if (N < 2 || P < 2) return 0.0;
  const int me = node_of(r, P, N);
  int64_t floats = 0;
  if (a == RAPA_ALLREDUCE_FLAT) {
    for (int k = 0; k < P; k++)
      if (node_of(k, P, N) != me) floats += (seg(params, P, k + 1) - seg(params, P, k)) + (seg(params, P, r + 1) - seg(params, P, r));
  } else if (a == RAPA_ALLREDUCE_HIER) {
    const int L = P / N, j = r - me * L;
    const int64_t len = seg(params, L, j + 1) - seg(params, L, j);
    const int64_t mine = seg(len, N, me + 1) - seg(len, N, me);
    floats = (len - mine) + mine * (N - 1);
  }
  return 4.0 * (double)floats;
}

int rapa_plan_compute(const struct graph *g, const int32_t *owner, const struct rapa_shape *s,
                      const struct rapa_rates *rates, const struct rapa_plan_opts *o, struct rapa_plan *out) {
  memset(out, 0, sizeof *out);
  if (!g || !owner || !s || !rates || !o) return cg_err_set(CG_ERR_ARG, "rapa_plan_compute: missing input");
  const int P = o->P, N = o->nodes, H = o->hosts > 0 ? o->hosts : o->nodes;
  if (P < 1 || P > RAPA_PLAN_MAX_RANKS) return cg_err_set(CG_ERR_ARG, "plan: %d ranks: expected 1 .. %d", P, RAPA_PLAN_MAX_RANKS);
  if (N < 1 || N > P) return cg_err_set(CG_ERR_ARG, "plan: %d nodes for %d ranks: expected 1 .. %d", N, P, P);
  if (H < 1 || H > N) return cg_err_set(CG_ERR_ARG, "plan: %d hosts for %d nodes: expected 1 .. %d", H, N, N);
  if (o->threads < 1) return cg_err_set(CG_ERR_ARG, "plan: %d threads per rank", o->threads);
  if (o->allreduce == RAPA_ALLREDUCE_HIER && P % N != 0)
    return cg_err_set(CG_ERR_ARG, "plan: the hierarchical all-reduce needs as many ranks on every node (%d ranks, %d nodes)", P, N);
  if (P > 1 && (!(o->bw_intra > 0) || (N > 1 && !(o->bw_inter > 0)) || o->lat_intra < 0 || o->lat_inter < 0))
    return cg_err_set(CG_ERR_ARG, "plan: no link bandwidth (intra %g, inter %g B/s)", o->bw_intra, o->bw_inter);
  out->P = P;
  out->nodes = N;
  out->layers = s->layers;
  int st = CG_OK;
  out->loads = cg_calloc((size_t)P, sizeof *out->loads, "plan: loads");
  out->fwd_rows = cg_calloc((size_t)P * (size_t)P, sizeof *out->fwd_rows, "plan: forward rows per pair");
  out->width = cg_calloc((size_t)s->layers, sizeof *out->width, "plan: widths");
  out->rank = cg_calloc((size_t)P, sizeof *out->rank, "plan: ranks");
  out->node_tier_rows = cg_calloc((size_t)N, sizeof *out->node_tier_rows, "plan: node tiers");
  int64_t *recv_direct = cg_calloc((size_t)P, sizeof *recv_direct, "plan: rows received for the node");
  int64_t *owner_writes = cg_calloc((size_t)P, sizeof *owner_writes, "plan: rows written by owners");
  int *per_host = cg_calloc((size_t)H, sizeof *per_host, "plan: ranks per host");
  double *core_s = NULL;
  int64_t *core_of = NULL;
  int *host_seen = NULL;
  if (!out->loads || !out->fwd_rows || !out->width || !out->rank || !out->node_tier_rows || !recv_direct ||
      !owner_writes || !per_host) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  TRY_GOTO(rapa_loads_compute(g, owner, P, !s->sage, out->loads), fail);
  if (o->cache && P > 1) TRY_GOTO(cache_routes(g, owner, P, N, out->fwd_rows, recv_direct, owner_writes, out->node_tier_rows), fail);
  else
    for (int i = 0; i < P; i++)
      for (int j = 0; j < P; j++) out->fwd_rows[(size_t)i * P + j] = out->loads[i].send_rows[j];
  double wsum = 0;
  for (int l = 1; l < s->layers; l++) {
    const int64_t fin = s->hidden, fout = l == s->layers - 1 ? s->classes : s->hidden;
    out->width[l] = fout < fin ? fout : fin;
    wsum += (double)out->width[l]; /* (the tier holds hidden layers' rows only) */
  }
  /* an exchanged layer 0 (rapa_shape.layer0_exchange) moves its transformed rows; the
   * cache passes it to the plain exchange (jaca/jaca.h: layer 0 is never cached) */
  if (s->layer0_exchange) out->width[0] = s->layers > 1 ? s->hidden : s->classes;
  for (int r = 0; r < P; r++) /* (the ranks that compute on the host's cores) */
    if (!rapa_plan_device_rank(&rates[r])) per_host[node_of(r, P, N) * H / N]++;
  /* ranks of one thread sharing cores: rank i runs on core (its index among its host's
   * ranks) mod cores, as `mpirun --map-by core --bind-to core` places them; core_s sums
   * the compute of each core's ranks (host h's cores at [h * C ...]) */
  const int C = o->host_cores >= 1 ? (int)o->host_cores : 0;
  const int core_share = C > 0 && o->threads == 1;
  if (core_share) {
    core_s = cg_calloc((size_t)H * (size_t)C, sizeof *core_s, "plan: compute per core");
    core_of = cg_calloc((size_t)P, sizeof *core_of, "plan: core per rank");
    host_seen = cg_calloc((size_t)H, sizeof *host_seen, "plan: ranks placed per host");
    if (!core_s || !core_of || !host_seen) {
      st = CG_ERR_NOMEM;
      goto fail;
    }
    for (int r = 0; r < P; r++) {
      const int h = node_of(r, P, N) * H / N;
      core_of[r] = (int64_t)h * C + host_seen[h]++ % C;
    }
  }
  for (int node = 0; node < N; node++) {
    const double b = 4.0 * wsum * (double)out->node_tier_rows[node];
    if (b > out->node_tier_bytes_max) out->node_tier_bytes_max = b;
  }
  const int64_t params = rapa_shape_params(s);
  const double B = 4.0 * (double)params;
  const double bw_min = N > 1 ? fmin(o->bw_intra, o->bw_inter) : o->bw_intra;
  const double lat_max = N > 1 ? fmax(o->lat_intra, o->lat_inter) : o->lat_intra;
  for (int i = 0; i < P; i++) {
    TRY_GOTO(rapa_cost_rank(s, &out->loads[i], &rates[i], NULL, i, P, &out->rank[i].cost), fail);
    if (core_share && !rapa_plan_device_rank(&rates[i])) core_s[core_of[i]] += out->rank[i].cost.comp_s;
  }
  for (int i = 0; i < P; i++) {
    struct rapa_plan_rank *R = &out->rank[i];
    const struct rapa_load *L = &out->loads[i];
    R->node = node_of(i, P, N);
    const int host = R->node * H / N;
    R->oversub = 1.0;
    const int shares_cores = !rapa_plan_device_rank(&rates[i]); /* (a device rank computes on its device) */
    if (shares_cores && core_share) /* its core's ranks take turns: its ops stretch over their summed compute */
      R->oversub = core_s[core_of[i]] > R->cost.comp_s && R->cost.comp_s > 0 ? core_s[core_of[i]] / R->cost.comp_s : 1.0;
    else if (shares_cores && o->host_cores > 0)
      R->oversub = fmax(1.0, (double)per_host[host] * o->threads / o->host_cores);
    if (shares_cores && core_share && o->quantum_s > 0 && R->oversub > 1.0 && P > 1) {
      /* phases shorter than the quantum run whole: the core-mates' compute falls into this
       * rank's waits, not into its compute (plan.h) */
      const int xl = s->layers - 1 + (s->layer0_exchange ? 1 : 0);
      const double phases = 2.0 * xl + 2.0, own = R->cost.comp_s, t = own / phases;
      /* longer phases: the core-mates, in the same phase of the step, take turns with it
       * a quantum at a time; the one that starts first finishes after 2t - Q, the other
       * after 2t: on average (2t - Q) / 2t of the mates' compute lands inside */
      const double frac = t > o->quantum_s ? (2.0 * t - o->quantum_s) / (2.0 * t) : 0.0;
      const double core = own * R->oversub;
      R->oversub = (own + (core - own) * frac) / own;
      R->core_wait_s = core - own * R->oversub;
    }
    R->comp_s = R->cost.comp_s * R->oversub;
    if (P == 1) {
      R->lambda_s = R->comp_s;
      continue;
    }
    double sent = 0, recvd = 0, shm = 0;
    for (int l = s->layer0_exchange ? 0 : 1; l < s->layers; l++) {
      const double w = 4.0 * (double)out->width[l];
      const int tier = o->cache && l > 0; /* layer 0: the plain exchange, both ways */
      for (int q = 0; q < P; q++) {
        if (q == i) continue;
        const int same = node_of(q, P, N) == R->node;
        const double bw = same ? o->bw_intra : o->bw_inter, lat = same ? o->lat_intra : o->lat_inter;
        /* forward rows, then the gradients of this rank's halo rows back to their owners
         * (with the cache, only to owners on other nodes: the others go through the tier) */
        const double fs = tier ? (double)out->fwd_rows[(size_t)i * P + q] : (double)L->send_rows[q];
        const double fr = tier ? (double)out->fwd_rows[(size_t)q * P + i] : (double)L->recv_rows[q];
        const int mpi_bwd = !tier || !same;
        const double bs = mpi_bwd ? (double)L->recv_rows[q] : 0.0, br = mpi_bwd ? (double)L->send_rows[q] : 0.0;
        if (fs + fr > 0) R->halo_s += lat + w * (fs + fr) / bw;
        if (bs + br > 0) R->halo_s += lat + w * (bs + br) / bw;
        if (l == 1 && fs + fr + bs + br > 0) R->peers++;
        else if (l == 0 && s->layers == 1 && fs + fr + bs + br > 0) R->peers++;
        sent += w * (fs + bs);
        recvd += w * (fr + br);
        if (same) R->halo_bytes_intra += w * (fs + bs);
        else R->halo_bytes_inter += w * (fs + bs);
        if (tier && same) shm += w * (double)(L->recv_rows[q] + L->send_rows[q]); /* gradients via the tier */
      }
      if (tier) /* forward: own rows and rows received for the node written, the rest read */
        shm += w * (double)(owner_writes[i] + L->n_halo);
    }
    R->shm_bytes = shm;
    R->shm_s = shm / rates[i].mem_bps;
    if (rates[i].h2d_bps > 0 && rates[i].d2h_bps > 0)
      R->staging_s = ((o->gpu_direct ? 0 : sent) + shm / 2) / rates[i].d2h_bps +
                     ((o->gpu_direct ? 0 : recvd) + shm / 2) / rates[i].h2d_bps;
    if (o->ar_points > 0 && P > 1) {
      R->allreduce_s = rapa_plan_allreduce_curve(o, B);
    } else if (o->allreduce == RAPA_ALLREDUCE_HIER && N > 1) {
      const int k = P / N;
      R->allreduce_s = 2.0 * (k - 1) / k * B / o->bw_intra + 2.0 * (k - 1) * o->lat_intra +
                       2.0 * (N - 1) / N * B / k / o->bw_inter + 2.0 * (N - 1) * o->lat_inter;
    } else
      R->allreduce_s = 2.0 * (P - 1) / P * B / bw_min + 2.0 * (P - 1) * lat_max;
    R->loss_s = 2.0 * (P - 1) * lat_max;
    R->allreduce_inter = allreduce_inter_bytes(o->allreduce, params, i, P, N);
    R->comm_s = R->halo_s + R->shm_s + R->staging_s + R->allreduce_s + R->loss_s;
    R->lambda_s = R->comp_s + R->comm_s + R->core_wait_s;
    out->halo_bytes += sent;
    out->inter_node_bytes += R->halo_bytes_inter + R->allreduce_inter;
    out->allreduce_bytes += B;
  }
  for (int i = 0; i < P; i++)
    if (out->rank[i].lambda_s > out->epoch_s) {
      out->epoch_s = out->rank[i].lambda_s;
      out->slowest = i;
    }
  for (int i = 0; i < P; i++) out->rank[i].wait_s = out->epoch_s - out->rank[i].lambda_s;
  cg_free(recv_direct);
  cg_free(owner_writes);
  cg_free(per_host);
  cg_free(core_s);
  cg_free(core_of);
  cg_free(host_seen);
  return CG_OK;
fail:
  cg_free(recv_direct);
  cg_free(owner_writes);
  cg_free(per_host);
  cg_free(core_s);
  cg_free(core_of);
  cg_free(host_seen);
  rapa_plan_free(out);
  return st;
}

/* ---- from a profile ---------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  if (n == 0) return 0.0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int rapa_plan_allreduce_from_profile(const struct rapa_profile *p, struct rapa_plan_opts *o, char *why, size_t n) {
  const cJSON *links = cJSON_GetObjectItem(p->root, "links");
  const cJSON *ar = cJSON_GetObjectItem(links, "allreduce"), *curve = cJSON_GetObjectItem(ar, "curve");
  const cJSON *alg = cJSON_GetObjectItem(ar, "algorithm");
  const double pnd = rapa_json_num(links, "nranks"), nodesd = rapa_json_num(ar, "nodes");
  const int pn = pnd >= 1 && pnd <= 1e9 ? (int)pnd : 0, pnodes = nodesd >= 1 && nodesd <= 1e9 ? (int)nodesd : 0;
  double bytes[RAPA_PLAN_AR_POINTS], t[RAPA_PLAN_AR_POINTS];
  int np = 0, sorted = 1;
  /* the machines the profile's ranks ran on (emulated nodes share one), their threads */
  const cJSON *ranks = cJSON_GetObjectItem(p->root, "ranks"), *rk, *earlier;
  int phosts = 0, pthreads = 0, pthreads_min = 0;
  cJSON_ArrayForEach(rk, ranks) {
    const char *h = cJSON_GetStringValue(cJSON_GetObjectItem(rk, "host"));
    int seen = 0;
    for (earlier = ranks->child; earlier != rk && h && !seen; earlier = earlier->next) {
      const char *e = cJSON_GetStringValue(cJSON_GetObjectItem(earlier, "host"));
      seen = e && !strcmp(e, h);
    }
    phosts += h && !seen;
    const double th = rapa_json_num(rk, "device.threads");
    if (th >= 1 && th <= 1e6 && (int)th > pthreads) pthreads = (int)th;
    if (th >= 1 && th <= 1e6 && (pthreads_min == 0 || (int)th < pthreads_min)) pthreads_min = (int)th;
  }
  const cJSON *pt;
  cJSON_ArrayForEach(pt, curve) {
    const double b = 4.0 * rapa_json_num(pt, "floats"), s = rapa_json_num(pt, "median_s"); /* (floats: validated) */
    if (np == RAPA_PLAN_AR_POINTS || !(b > 0) || !(s > 0)) continue;
    if (np > 0 && !(b > bytes[np - 1])) sorted = 0;
    bytes[np] = b;
    t[np++] = s;
  }
  if (!cJSON_IsArray(curve) || !cJSON_IsString(alg) || !(pnodes >= 1))
    snprintf(why, n, "the profile has the all-reduce at one size only (made before 2026-11-29)");
  else if (pn != o->P || pnodes != o->nodes)
    snprintf(why, n, "the profile's all-reduce ran on %d ranks on %d node%s, this job has %d on %d", pn, pnodes,
             pnodes == 1 ? "" : "s", o->P, o->nodes);
  else if (phosts != (o->hosts > 0 ? o->hosts : o->nodes))
    snprintf(why, n, "the profile's ranks ran on %d machine%s, this job's on %d (emulated nodes share one)", phosts,
             phosts == 1 ? "" : "s", o->hosts > 0 ? o->hosts : o->nodes);
  else if (pthreads_min != pthreads)
    snprintf(why, n, "the profile's ranks had %d to %d threads, this job's %d each", pthreads_min, pthreads,
             o->threads);
  else if (pthreads != o->threads)
    snprintf(why, n, "the profile's ranks had %d thread%s each, this job's %d", pthreads, pthreads == 1 ? "" : "s",
             o->threads);
  else if (strcmp(alg->valuestring, rapa_allreduce_name(o->allreduce)) != 0)
    snprintf(why, n, "the profile's all-reduce was %s, this job's is %s", alg->valuestring,
             rapa_allreduce_name(o->allreduce));
  else if (np < 2 || !sorted)
    snprintf(why, n, "the profile's all-reduce curve has fewer than two sizes in increasing order");
  else {
    o->ar_points = np;
    memcpy(o->ar_bytes, bytes, sizeof(double) * (size_t)np);
    memcpy(o->ar_s, t, sizeof(double) * (size_t)np);
    snprintf(why, n, "measured by the profile on this layout (%s, %d ranks on %d node%s, %d sizes %.0f-%.0f KB: "
             "%.1f-%.1f us)", alg->valuestring, pn, pnodes, pnodes == 1 ? "" : "s", np, bytes[0] / 1e3,
             bytes[np - 1] / 1e3, t[0] * 1e6, t[np - 1] * 1e6);
  }
  return CG_OK;
}

double rapa_plan_allreduce_curve(const struct rapa_plan_opts *o, double bytes) {
  const int np = o->ar_points;
  const double *b = o->ar_bytes, *t = o->ar_s;
  if (np <= 0) return 0.0;
  if (np == 1 || bytes <= b[0]) return t[0];
  if (bytes >= b[np - 1]) { /* past the largest: the last line, never below the largest's time */
    const double slope = (t[np - 1] - t[np - 2]) / (b[np - 1] - b[np - 2]);
    return slope > 0 ? t[np - 1] + slope * (bytes - b[np - 1]) : t[np - 1];
  }
  int k = 1; /* the segment [k-1, k] that holds bytes */
  while (bytes > b[k]) k++;
  const double v = t[k - 1] + (t[k] - t[k - 1]) * (bytes - b[k - 1]) / (b[k] - b[k - 1]);
  return v > 0 ? v : 0.0;
}

int rapa_plan_links_from_profile(const struct rapa_profile *p, double *bw_intra, double *lat_intra, double *bw_inter,
                                 double *lat_inter) {
  *bw_intra = *lat_intra = *bw_inter = *lat_inter = 0.0;
  const cJSON *pairs = cJSON_GetObjectItem(cJSON_GetObjectItem(p->root, "links"), "pairs");
  const int n = cJSON_GetArraySize(pairs);
  if (n <= 0) return CG_OK;
  double *v = cg_malloc(sizeof(double) * 4 * (size_t)n, "plan: profile links");
  if (!v) return CG_ERR_NOMEM;
  double *bi = v, *li = v + n, *bx = v + 2 * n, *lx = v + 3 * n;
  int ni = 0, nx = 0;
  const cJSON *pair;
  cJSON_ArrayForEach(pair, pairs) {
    /* the fastest round trip of each size (as rapa/calibrate.c: on a shared machine other
     * work only adds time): latency = half the smallest message's, bandwidth = the best
     * of bytes / half a round trip */
    const cJSON *curve = cJSON_GetObjectItem(cJSON_GetObjectItem(pair, "host"), "curve"), *pt;
    double bw = 0, lat = -1, small = INFINITY;
    cJSON_ArrayForEach(pt, curve) {
      const double bytes = rapa_json_num(pt, "bytes"), t = rapa_json_num(pt, "min_s");
      if (!(bytes > 0) || !(t > 0)) continue;
      if (bytes < small) {
        small = bytes;
        lat = t / 2;
      }
      if (bytes / (t / 2) > bw) bw = bytes / (t / 2);
    }
    if (!(bw > 0) || !(lat >= 0)) continue;
    if (cJSON_IsTrue(cJSON_GetObjectItem(pair, "same_node"))) {
      bi[ni] = bw;
      li[ni++] = lat;
    } else {
      bx[nx] = bw;
      lx[nx++] = lat;
    }
  }
  *bw_intra = median_of(bi, ni);
  *lat_intra = median_of(li, ni);
  *bw_inter = median_of(bx, nx);
  *lat_inter = median_of(lx, nx);
  cg_free(v);
  return CG_OK;
}

int rapa_plan_host_from_profile(const struct rapa_profile *p, int r, const char **kind, int *threads, int *cores) {
  const cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItem(p->root, "ranks"), r);
  if (!dev) return cg_err_set(CG_ERR_ARG, "the profile has no rank %d", r);
  const cJSON *k = cJSON_GetObjectItem(cJSON_GetObjectItem(dev, "device"), "kind");
  *kind = cJSON_IsString(k) ? k->valuestring : "?";
  const double t = rapa_json_num(dev, "device.threads"), c = rapa_json_num(dev, "context.cores");
  *threads = t >= 1 ? (int)t : 1;
  *cores = c >= 1 ? (int)c : 0;
  return CG_OK;
}
