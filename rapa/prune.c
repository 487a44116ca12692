/* rapa/prune.c — halo pruning (approximate, opt-in; rapa/balance.h).
 *
 * Design notes (the why):
 * - The paper's public code drops halo vertices from a rank's subgraph but keeps them in
 *   the backward pass, so its gradients belong to no graph at all. Here a pruned halo
 *   vertex u of rank p takes its cut edges with it, both directions: the edges (v, u)
 *   for v inner of p and (u, v) are removed from the graph itself. The result is a
 *   symmetric graph (a valid .cgr), and training on it, with the plain exact machinery
 *   (halos, plans, exchange forward and backward, GCN normalisation), is the exact
 *   training of the pruned graph: P ranks equal one rank trained on it.
 * - The normalisation of a pruned row is the pruned graph's own (its degree counts the
 *   edges that remain): the only choice that a .cgr file can carry, so that the pruned
 *   graph stands on its own; the accuracy it costs is measured (benchmarks/bench_rapa.sh).
 * - Which halo vertex goes first: the influence score of the paper's Eq. 16 over the
 *   edges that would go, with the original (global) degrees, times the vertex's overlap
 *   count R(u) (the parts that hold it as halo): S(u, p) = R(u) x sum over v inner of p
 *   adjacent to u of 2 / sqrt(d_u d_v). Lowest first; ties by vertex id.
 * - Algorithms 2 and 3 of the paper: ranks in order of capability (weakest first); a rank
 *   whose lambda exceeds the mean, or whose memory does not fit, drops halo vertices until
 *   its estimated lambda is at most (lambda + mean) / 2 and it fits; the estimate follows
 *   each removal (one halo row, its nonzeros, one row from its owner); the exact costs are
 *   recomputed after each rank. The rounds stop when std(lambda) < eps x mean or a round
 *   changes nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "rapa/balance.h"

struct cand {
  double score;
  int32_t u;
  int32_t k; /* edges from u into the part's inner rows (still present) */
};

static int cand_cmp(const void *a, const void *b) {
  const struct cand *x = a, *y = b;
  if (x->score != y->score) return x->score < y->score ? -1 : 1;
  return (x->u > y->u) - (x->u < y->u);
}

/* Position of column c in row r (sorted), or -1. */
static int64_t find_entry(const struct graph *g, int64_t r, int32_t c) {
  int64_t lo = g->rowptr[r], hi = g->rowptr[r + 1] - 1;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (g->colidx[mid] == c) return mid;
    if (g->colidx[mid] < c) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* The graph without the removed entries (the rest copied), checksum updated. */
static int build_pruned(const struct graph *g, const uint8_t *gone, struct graph *out) {
  memset(out, 0, sizeof *out);
  memcpy(out->name, g->name, sizeof out->name);
  int64_t m = 0;
  for (int64_t k = 0; k < g->m; k++) m += !gone[k];
  out->n = g->n;
  out->m = m;
  out->rowptr = cg_malloc((size_t)(g->n + 1) * sizeof *out->rowptr, "pruned graph offsets");
  out->colidx = cg_malloc((size_t)(m > 0 ? m : 1) * sizeof *out->colidx, "pruned graph columns");
  if (!out->rowptr || !out->colidx) goto nomem;
  int64_t pos = 0;
  out->rowptr[0] = 0;
  for (int64_t v = 0; v < g->n; v++) {
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++)
      if (!gone[k]) out->colidx[pos++] = g->colidx[k];
    out->rowptr[v + 1] = pos;
  }
  out->feat_dim = g->feat_dim;
  out->sparse_feat = g->sparse_feat;
  out->feat_nnz = g->feat_nnz;
  out->num_classes = g->num_classes;
  out->multilabel = g->multilabel;
#define DUP(field, count)                                                        \
  if (g->field) {                                                                \
    const size_t b_ = (size_t)(count) * sizeof *g->field;                        \
    out->field = cg_malloc(b_ > 0 ? b_ : 1, "pruned graph " #field);             \
    if (!out->field) goto nomem;                                                 \
    memcpy(out->field, g->field, b_);                                            \
  }
  DUP(feat_rowptr, g->n + 1);
  DUP(feat_colidx, g->feat_nnz);
  DUP(feat_values, g->sparse_feat ? g->feat_nnz : g->n * g->feat_dim);
  DUP(labels, g->n);
  DUP(mlabels, g->n * g->num_classes);
  DUP(split, g->n);
#undef DUP
  graph_checksum_update(out);
  return CG_OK;
nomem:
  graph_free(out);
  return CG_ERR_NOMEM;
}

static int grow_log(struct rapa_prune_result *r, int64_t *cap) {
  const int64_t n = *cap * 2;
  int32_t *a = cg_malloc((size_t)n * sizeof *a, "pruning log"), *b = cg_malloc((size_t)n * sizeof *b, "pruning log");
  if (!a || !b) {
    cg_free(a);
    cg_free(b);
    return CG_ERR_NOMEM;
  }
  memcpy(a, r->log_part, (size_t)r->nlog * sizeof *a);
  memcpy(b, r->log_vertex, (size_t)r->nlog * sizeof *b);
  cg_free(r->log_part);
  cg_free(r->log_vertex);
  r->log_part = a;
  r->log_vertex = b;
  *cap = n;
  return CG_OK;
}

void rapa_prune_result_free(struct rapa_prune_result *r) {
  if (!r) return;
  cg_free(r->log_part);
  cg_free(r->log_vertex);
  memset(r, 0, sizeof *r);
}

static int costs_of(const struct graph *g, const int32_t *owner, int P, const struct rapa_shape *s,
                    const struct rapa_rates *rates, const struct rapa_links *links, struct rapa_cost *cost,
                    double *mean, double *sd) {
  struct rapa_load loads[RAPA_MAX_RANKS];
  TRY(rapa_loads_compute(g, owner, P, s->sage ? 0 : 1, loads));
  int st = CG_OK;
  for (int p = 0; p < P && st == CG_OK; p++) st = rapa_cost_rank(s, &loads[p], &rates[p], links, p, P, &cost[p]);
  rapa_loads_free(loads, P);
  TRY(st);
  double m = 0, v = 0;
  for (int p = 0; p < P; p++) m += cost[p].lambda_s / P;
  for (int p = 0; p < P; p++) v += (cost[p].lambda_s - m) * (cost[p].lambda_s - m) / P;
  *mean = m;
  *sd = sqrt(v);
  return CG_OK;
}

int rapa_prune_halo(const struct graph *g, const int32_t *owner, int P, const struct rapa_shape *s,
                    const struct rapa_rates *rates, const struct rapa_links *links, double eps, struct graph *pruned,
                    struct rapa_prune_result *res) {
  if (!g || !owner || !s || !rates || !pruned || !res || P < 1 || P > RAPA_MAX_RANKS)
    return cg_err_set(CG_ERR_ARG, "rapa_prune_halo: missing arguments or %d ranks (1 .. %d)", P, RAPA_MAX_RANKS);
  memset(res, 0, sizeof *res);
  memset(pruned, 0, sizeof *pruned);
  int st = CG_OK;
  const int self = s->sage ? 0 : 1;
  uint8_t *gone = cg_calloc((size_t)(g->m > 0 ? g->m : 1), 1, "pruned edges");
  struct graph cur;
  memset(&cur, 0, sizeof cur);
  int32_t *stamp = cg_malloc((size_t)g->n * sizeof *stamp, "halo marks");
  int32_t *kcount = cg_calloc((size_t)g->n, sizeof *kcount, "edges into a part");
  int32_t *rcount = cg_calloc((size_t)g->n, sizeof *rcount, "overlap counts");
  struct cand *cands = cg_malloc((size_t)g->n * sizeof *cands, "pruning candidates");
  double cap[RAPA_MAX_RANKS];
  int order[RAPA_MAX_RANKS];
  int64_t logcap = 1024;
  res->log_part = cg_malloc((size_t)logcap * sizeof *res->log_part, "pruning log");
  res->log_vertex = cg_malloc((size_t)logcap * sizeof *res->log_vertex, "pruning log");
  if (!gone || !stamp || !kcount || !rcount || !cands || !res->log_part || !res->log_vertex) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int64_t v = 0; v < g->n; v++)
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++)
      if (owner[g->colidx[k]] != owner[v] && g->colidx[k] < v) res->cut_edges++;
  /* ranks weakest first: capability = 1 / the modelled compute of the whole graph */
  {
    int64_t zero[RAPA_MAX_RANKS] = {0};
    struct rapa_load whole = {g->n, 0, g->m + (self ? g->n : 0), zero, zero};
    for (int p = 0; p < P; p++) {
      struct rapa_cost c;
      TRY_GOTO(rapa_cost_rank(s, &whole, &rates[p], NULL, 0, 1, &c), done);
      cap[p] = 1.0 / c.comp_s;
      order[p] = p;
    }
    for (int i = 1; i < P; i++) /* insertion sort: ascending capability, then rank */
      for (int j = i; j > 0 && (cap[order[j]] < cap[order[j - 1]]); j--) {
        const int t = order[j];
        order[j] = order[j - 1];
        order[j - 1] = t;
      }
  }
  if (!(eps > 0)) goto finish; /* off: the graph as it is */
  struct rapa_cost cost[RAPA_MAX_RANKS];
  for (int round = 0; round < 64; round++) {
    double mean = 0, sd = 0;
    graph_free(&cur);
    TRY_GOTO(build_pruned(g, gone, &cur), done);
    TRY_GOTO(costs_of(&cur, owner, P, s, rates, links, cost, &mean, &sd), done);
    if (round == 0) {
      for (int p = 0; p < P; p++) res->before[p] = cost[p];
    }
    if (sd < eps * mean) break;
    int changed = 0;
    for (int oi = 0; oi < P; oi++) {
      const int p = order[oi];
      if (oi > 0) { /* the exact costs after the previous rank's removals */
        graph_free(&cur);
        TRY_GOTO(build_pruned(g, gone, &cur), done);
        TRY_GOTO(costs_of(&cur, owner, P, s, rates, links, cost, &mean, &sd), done);
      }
      if (cost[p].lambda_s <= mean && cost[p].fits) continue;
      /* p's halo on the current graph: edges into p's inner rows, overlap counts */
      for (int64_t v = 0; v < g->n; v++) {
        stamp[v] = -1;
        kcount[v] = 0;
        rcount[v] = 0;
      }
      for (int q = 0; q < P; q++) /* R(u): parts holding u as halo (one pass per part) */
        for (int64_t v = 0; v < cur.n; v++) {
          if (owner[v] != q) continue;
          for (int64_t k = cur.rowptr[v]; k < cur.rowptr[v + 1]; k++) {
            const int32_t u = cur.colidx[k];
            if (owner[u] != q && stamp[u] != q) {
              stamp[u] = q;
              rcount[u]++;
            }
          }
        }
      int64_t nc = 0;
      for (int64_t v = 0; v < g->n; v++) {
        if (owner[v] != p) continue;
        const double dv = (double)(g->rowptr[v + 1] - g->rowptr[v] + self);
        for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
          const int32_t u = g->colidx[k];
          if (owner[u] == p || gone[k]) continue;
          const double du = (double)(g->rowptr[u + 1] - g->rowptr[u] + self);
          if (kcount[u] == 0) {
            cands[nc].u = u;
            cands[nc].score = 0;
            cands[nc].k = 0;
            stamp[u] = (int32_t)nc; /* index of u's candidate (stamp reused) */
            nc++;
          }
          kcount[u]++;
          cands[stamp[u]].score += 2.0 / sqrt(du * dv);
          cands[stamp[u]].k++;
        }
      }
      for (int64_t i = 0; i < nc; i++) cands[i].score *= (double)rcount[cands[i].u];
      qsort(cands, (size_t)nc, sizeof *cands, cand_cmp);
      /* the estimate: one halo row, its nonzeros and one row from its owner fewer */
      struct rapa_load loads[RAPA_MAX_RANKS];
      TRY_GOTO(rapa_loads_compute(&cur, owner, P, self, loads), done);
      struct rapa_load L = loads[p];
      const double target = 0.5 * (cost[p].lambda_s + mean);
      int64_t took = 0;
      for (int64_t i = 0; i < nc; i++) {
        struct rapa_cost est;
        L.n_halo--;
        L.nnz -= cands[i].k;
        L.recv_rows[owner[cands[i].u]]--;
        const int rc = rapa_cost_rank(s, &L, &rates[p], links, p, P, &est);
        if (rc != CG_OK) {
          st = rc;
          break;
        }
        /* remove u's edges with p's inner rows, both directions */
        const int32_t u = cands[i].u;
        for (int64_t k = g->rowptr[u]; k < g->rowptr[u + 1]; k++) {
          const int32_t v = g->colidx[k];
          if (owner[v] != p || gone[k]) continue;
          const int64_t back = find_entry(g, v, u);
          gone[k] = 1;
          if (back >= 0) gone[back] = 1;
          res->removed_edges++;
        }
        if (res->nlog == logcap && grow_log(res, &logcap) != CG_OK) {
          st = CG_ERR_NOMEM;
          break;
        }
        res->log_part[res->nlog] = p;
        res->log_vertex[res->nlog] = u;
        res->nlog++;
        took++;
        if (est.lambda_s <= target && est.fits) break;
      }
      rapa_loads_free(loads, P);
      TRY_GOTO(st, done);
      if (took > 0) changed = 1;
    }
    res->rounds = round + 1;
    if (!changed) break;
  }
finish:
  graph_free(&cur);
  TRY_GOTO(build_pruned(g, gone, pruned), done);
  {
    double mean = 0, sd = 0;
    TRY_GOTO(costs_of(pruned, owner, P, s, rates, links, res->after, &mean, &sd), done);
    if (res->rounds == 0)
      for (int p = 0; p < P; p++) res->before[p] = res->after[p];
  }
  LOG_DEBUG("rapa", "halo pruning: %lld of %lld cut edges removed (%lld halo vertices) in %d rounds",
            (long long)res->removed_edges, (long long)res->cut_edges, (long long)res->nlog, res->rounds);
done:
  graph_free(&cur);
  cg_free(gone);
  cg_free(stamp);
  cg_free(kcount);
  cg_free(rcount);
  cg_free(cands);
  if (st != CG_OK) {
    graph_free(pruned);
    rapa_prune_result_free(res);
  }
  return st;
}
