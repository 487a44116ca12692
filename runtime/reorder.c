/* runtime/reorder.c — locality reordering of a local problem (runtime.h, "locality
 * reordering").
 *
 * Design notes (the why):
 * - The permutation is applied to the local problem, after it is built, and only to
 *   its inner rows. Partitioning, the halo sets, the global degrees (so the operator's
 *   values), the exchange's halo blocks and the rows read per rank (per-rank loading
 *   reads a rank's own rows of the file, whichever order they are in) are those of the
 *   original order, so the exactness contract and every cached partition hold as they
 *   are; the send lists, which name inner local ids, are renumbered by the caller
 *   (runtime/dist.c). A partitioned run therefore reorders each rank's inner set
 *   locally, which is where the SpMM's locality lives (the inner x inner block holds
 *   most nonzeros; the halo columns follow in owner order).
 * - gid moves with its row, so dropout masks, the loss, metrics and the predictions
 *   file (written by gid, runtime/predict.c) do not see the order; only each row's
 *   summation order changes.
 * - auto measures first (O(m)) and computes an order only when the input order is not
 *   already local; it keeps that order only when the measure improves. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "runtime/runtime.h"
#ifdef CAPGNN_HAVE_DIST
#include "partition/partition.h"
#endif

#ifdef CAPGNN_HAVE_DIST
static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* METIS k-way into blocks of about one tile: the structure as a graph (columns in
 * [0, n) without the diagonal: sorted, symmetric when the input is), parts laid out in
 * order, each part's vertices in their input order. */
static int order_metis(int64_t n, const int64_t *rowptr, const int32_t *colidx, int32_t *order) {
  int st = CG_ERR_NOMEM;
  struct graph s;
  memset(&s, 0, sizeof s);
  int32_t *owner = NULL, *chain = NULL, *lpart = NULL;
  int64_t *start = NULL, *lstart = NULL, *lcount = NULL, *rank_of = NULL;
  uint8_t *placed = NULL;
  snprintf(s.name, sizeof s.name, "reorder");
  s.n = n;
  s.rowptr = cg_malloc((size_t)(n + 1) * sizeof *s.rowptr, "metis order: rows");
  int64_t m = 0;
  for (int64_t v = 0; v < n; v++)
    for (int64_t k = rowptr[v]; k < rowptr[v + 1]; k++) m += colidx[k] >= 0 && colidx[k] < n && colidx[k] != v;
  s.colidx = cg_malloc((size_t)(m > 0 ? m : 1) * sizeof *s.colidx, "metis order: columns");
  owner = cg_malloc((size_t)n * sizeof *owner, "metis order: parts");
  if (!s.rowptr || !s.colidx || !owner) goto done;
  s.rowptr[0] = 0;
  for (int64_t v = 0, e = 0; v < n; v++) {
    for (int64_t k = rowptr[v]; k < rowptr[v + 1]; k++)
      if (colidx[k] >= 0 && colidx[k] < n && colidx[k] != v) s.colidx[e++] = colidx[k];
    s.rowptr[v + 1] = e;
  }
  s.m = m;
  int64_t parts = (n + GRAPH_LOCALITY_TILE - 1) / GRAPH_LOCALITY_TILE;
  if (parts < 1) parts = 1;
  struct part_options po;
  memset(&po, 0, sizeof po);
  po.method = PART_METIS;
  po.nparts = (int)parts;
  po.seed = 1;
  st = part_assign(&s, &po, owner);
  if (st != CG_OK) goto done;
  /* The parts in a chain that follows the heaviest links: a community larger than a
   * part is split over several, and its parts placed side by side keep its nonzeros in
   * neighbouring tiles (METIS numbers parts in no such order). Greedy, from part 0: next
   * the unplaced part with the most edges to the last placed one (ties: lowest id; none
   * linked: the lowest unplaced id). The links are a sparse part graph (each part's
   * neighbour parts, sorted, with their edge counts), O(edges) memory: a parts x parts
   * table would take 8 (n / 1024)^2 bytes, ~94 GB for a rank of 111 M rows. */
  start = cg_calloc((size_t)parts + 1, sizeof *start, "metis order: part offsets");
  lstart = cg_calloc((size_t)parts + 1, sizeof *lstart, "metis order: part links' offsets");
  lpart = cg_malloc((size_t)(m > 0 ? m : 1) * sizeof *lpart, "metis order: linked parts");
  lcount = cg_malloc((size_t)(m > 0 ? m : 1) * sizeof *lcount, "metis order: edges between parts");
  rank_of = cg_malloc((size_t)parts * sizeof *rank_of, "metis order: part positions");
  chain = cg_malloc((size_t)parts * sizeof *chain, "metis order: part chain");
  placed = cg_calloc((size_t)parts, 1, "metis order: placed parts");
  if (!start || !lstart || !lpart || !lcount || !rank_of || !chain || !placed) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  /* every edge's far part, grouped by the near one; then each group sorted and counted */
  for (int64_t v = 0; v < n; v++) lstart[owner[v] + 1] += s.rowptr[v + 1] - s.rowptr[v];
  for (int64_t p = 0; p < parts; p++) lstart[p + 1] += lstart[p];
  for (int64_t p = 0; p <= parts; p++) start[p] = lstart[p]; /* (fill cursors) */
  for (int64_t v = 0; v < n; v++)
    for (int64_t k = s.rowptr[v]; k < s.rowptr[v + 1]; k++) lpart[start[owner[v]]++] = owner[s.colidx[k]];
  int64_t w = 0;
  for (int64_t p = 0; p < parts; p++) {
    const int64_t a = lstart[p], b = lstart[p + 1];
    qsort(lpart + a, (size_t)(b - a), sizeof *lpart, cmp_i32);
    lstart[p] = w;
    for (int64_t k = a; k < b; k++) {
      if (k > a && lpart[k] == lpart[k - 1]) {
        lcount[w - 1]++;
        continue;
      }
      lpart[w] = lpart[k];
      lcount[w++] = 1;
    }
  }
  lstart[parts] = w;
  chain[0] = 0;
  placed[0] = 1;
  int64_t lowest = 1; /* every part below it is placed */
  for (int64_t i = 1; i < parts; i++) {
    const int64_t last = chain[i - 1];
    int64_t best = -1, most = 0;
    for (int64_t k = lstart[last]; k < lstart[last + 1]; k++) /* ascending ids: strict > keeps the lowest */
      if (!placed[lpart[k]] && lcount[k] > most) best = lpart[k], most = lcount[k];
    if (best < 0) {
      while (placed[lowest]) lowest++;
      best = lowest;
    }
    chain[i] = (int32_t)best;
    placed[best] = 1;
  }
  for (int64_t i = 0; i < parts; i++) rank_of[chain[i]] = i;
  memset(start, 0, (size_t)(parts + 1) * sizeof *start);
  for (int64_t v = 0; v < n; v++) start[rank_of[owner[v]] + 1]++;
  for (int64_t p = 0; p < parts; p++) start[p + 1] += start[p];
  for (int64_t v = 0; v < n; v++) order[start[rank_of[owner[v]]]++] = (int32_t)v;
  st = CG_OK;
done:
  graph_free(&s);
  cg_free(owner);
  cg_free(start);
  cg_free(lstart);
  cg_free(lpart);
  cg_free(lcount);
  cg_free(rank_of);
  cg_free(chain);
  cg_free(placed);
  return st;
}
#endif

static int order_by(enum graph_reorder method, int64_t n, const int64_t *rowptr, const int32_t *colidx,
                    int32_t *order) {
  switch (method) {
    case GRAPH_REORDER_RCM: return graph_order_rcm(n, rowptr, colidx, order);
    case GRAPH_REORDER_CLUSTER: return graph_order_cluster(n, rowptr, colidx, order);
    case GRAPH_REORDER_METIS:
#ifdef CAPGNN_HAVE_DIST
      return order_metis(n, rowptr, colidx, order);
#else
      return cg_err_set(CG_ERR_UNSUPPORTED, "--reorder metis: this build has no partition/ module (METIS)");
#endif
    default: return cg_err_set(CG_ERR_ARG, "reorder: method %d has no order of its own", (int)method);
  }
}

int rt_reorder_order(enum graph_reorder method, int64_t n, const int64_t *rowptr, const int32_t *colidx,
                     const char *what, int32_t *order, enum graph_reorder *chosen) {
  *chosen = GRAPH_REORDER_NONE;
  for (int64_t i = 0; i < n; i++) order[i] = (int32_t)i;
  if (method == GRAPH_REORDER_NONE || n < 2) return CG_OK;
  const double t0 = cg_time_now();
  struct graph_locality before, after;
  graph_locality_measure(n, rowptr, colidx, NULL, &before);
  if (method == GRAPH_REORDER_AUTO && before.nnz >= 0 && before.concentration >= GRAPH_REORDER_AUTO_BELOW) {
    LOG_INFO("reorder", "%s: --reorder auto keeps the input order: tile reuse %.1f, %.1fx a random order's (>= %.1f); "
             "mean |i-j|/n %.4f", what, before.reuse, before.concentration, GRAPH_REORDER_AUTO_BELOW, before.mean_dist);
    return CG_OK;
  }
  const enum graph_reorder m = method == GRAPH_REORDER_AUTO ? GRAPH_REORDER_CLUSTER : method;
  TRY(order_by(m, n, rowptr, colidx, order));
  TRY(graph_order_check(order, n, "reorder"));
  graph_locality_measure(n, rowptr, colidx, order, &after);
  const double dt = cg_time_now() - t0;
  if (method == GRAPH_REORDER_AUTO && !(after.reuse >= GRAPH_REORDER_AUTO_GAIN * before.reuse)) {
    LOG_INFO("reorder", "%s: --reorder auto keeps the input order: the %s order's tile reuse would be %.1f against "
             "%.1f (< %.1fx; mean |i-j|/n %.4f -> %.4f) (%.2f s)", what, graph_reorder_name(m), after.reuse,
             before.reuse, GRAPH_REORDER_AUTO_GAIN, before.mean_dist, after.mean_dist, dt);
    for (int64_t i = 0; i < n; i++) order[i] = (int32_t)i;
    return CG_OK;
  }
  *chosen = m;
  LOG_INFO("reorder", "%s: %s order%s: tile reuse %.1f -> %.1f (%.1fx -> %.1fx a random order's), %lldx%lld tiles over "
           "the CPU SpMM's threshold hold %.1f %% -> %.1f %% of %lld nonzeros, mean |i-j|/n %.4f -> %.4f (%.2f s)", what,
           graph_reorder_name(m), method == GRAPH_REORDER_AUTO ? " (auto)" : "", before.reuse, after.reuse,
           before.concentration, after.concentration, (long long)before.tile, (long long)before.tile,
           100 * before.dense_frac, 100 * after.dense_frac, (long long)before.nnz, before.mean_dist, after.mean_dist, dt);
  return CG_OK;
}

/* Each row's (column, value) pairs sorted by column after renumbering. */
struct entry {
  int32_t col;
  float val;
};
static int cmp_entry(const void *a, const void *b) {
  const int32_t x = ((const struct entry *)a)->col, y = ((const struct entry *)b)->col;
  return x < y ? -1 : x > y;
}

static int permute_rows_u8(uint8_t **a, const int32_t *order, int64_t ni, size_t width, int64_t nrows,
                           const char *what) {
  if (!*a) return CG_OK;
  uint8_t *b = cg_malloc((size_t)(nrows > 0 ? nrows : 1) * width, what);
  if (!b) return CG_ERR_NOMEM;
  for (int64_t i = 0; i < ni; i++) memcpy(b + (size_t)i * width, *a + (size_t)order[i] * width, width);
  if (nrows > ni) memcpy(b + (size_t)ni * width, *a + (size_t)ni * width, (size_t)(nrows - ni) * width);
  cg_free(*a);
  *a = b;
  return CG_OK;
}

/* The same for a CSR's rows (sparse features): rows [0, ni) in the new order, the rest
 * (halo rows) in place; the entries of a row unchanged. */
static int permute_csr_rows(struct cg_csr *c, const int32_t *order, int64_t ni, const char *what) {
  if (!c->rowptr) return CG_OK;
  struct cg_csr b;
  memset(&b, 0, sizeof b);
  TRY(cg_csr_alloc(&b, c->nrows, c->ncols, c->nnz, c->vals != NULL));
  b.rowptr[0] = 0;
  for (int64_t i = 0; i < c->nrows; i++) {
    const int64_t r = i < ni ? order[i] : i, k0 = c->rowptr[r], d = c->rowptr[r + 1] - k0;
    b.rowptr[i + 1] = b.rowptr[i] + d;
    memcpy(b.colidx + b.rowptr[i], c->colidx + k0, (size_t)d * sizeof *b.colidx);
    if (c->vals) memcpy(b.vals + b.rowptr[i], c->vals + k0, (size_t)d * sizeof *b.vals);
  }
  const int st = cg_csr_check(&b, what);
  if (st != CG_OK) {
    cg_csr_free(&b);
    return st;
  }
  cg_csr_free(c);
  *c = b;
  return CG_OK;
}

int rt_local_reorder(struct rt_local *l, enum graph_reorder method, int32_t **pos_out) {
  int st = CG_OK;
  if (pos_out) *pos_out = NULL;
  const int64_t ni = l->n_inner;
  if (method == GRAPH_REORDER_NONE || ni < 2) return CG_OK;
  int32_t *order = cg_malloc((size_t)ni * sizeof *order, "reorder: order");
  int32_t *pos = cg_malloc((size_t)ni * sizeof *pos, "reorder: positions");
  struct cg_csr a;
  memset(&a, 0, sizeof a);
  if (!order || !pos) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  char what[160];
  if (l->nranks > 1) snprintf(what, sizeof what, "%s, rank %d's %lld inner rows", l->name, l->rank, (long long)ni);
  else snprintf(what, sizeof what, "%s", l->name);
  enum graph_reorder chosen = GRAPH_REORDER_NONE;
  TRY_GOTO(rt_reorder_order(method, ni, l->agg.rowptr, l->agg.colidx, what, order, &chosen), done);
  if (chosen == GRAPH_REORDER_NONE) goto done;
  for (int64_t i = 0; i < ni; i++) pos[order[i]] = (int32_t)i;

  /* the operator: rows in the new order, inner columns renumbered, each row sorted */
  const struct cg_csr *o = &l->agg;
  TRY_GOTO(cg_csr_alloc(&a, o->nrows, o->ncols, o->nnz, o->vals != NULL), done);
  if (o->row_scale) TRY_GOTO(cg_csr_alloc_scales(&a), done);
  a.rowptr[0] = 0;
  for (int64_t i = 0; i < ni; i++) a.rowptr[i + 1] = a.rowptr[i] + (o->rowptr[order[i] + 1] - o->rowptr[order[i]]);
  int64_t maxd = 0;
  for (int64_t i = 0; i < ni; i++)
    if (a.rowptr[i + 1] - a.rowptr[i] > maxd) maxd = a.rowptr[i + 1] - a.rowptr[i];
  st = CG_OK;
#pragma omp parallel
  {
    struct entry *e = cg_malloc((size_t)(maxd > 0 ? maxd : 1) * sizeof *e, "reorder: a row's entries");
    if (!e) {
#pragma omp atomic write
      st = CG_ERR_NOMEM;
    }
#pragma omp for schedule(dynamic, 256)
    for (int64_t i = 0; i < ni; i++) {
      if (!e) continue;
      const int64_t r = order[i], k0 = o->rowptr[r], d = o->rowptr[r + 1] - k0;
      for (int64_t k = 0; k < d; k++) {
        const int32_t c = o->colidx[k0 + k];
        e[k].col = c < ni ? pos[c] : c;
        e[k].val = o->vals ? o->vals[k0 + k] : 0.0f;
      }
      qsort(e, (size_t)d, sizeof *e, cmp_entry);
      for (int64_t k = 0; k < d; k++) {
        a.colidx[a.rowptr[i] + k] = e[k].col;
        if (a.vals) a.vals[a.rowptr[i] + k] = e[k].val;
      }
    }
    cg_free(e);
  }
  if (st != CG_OK) goto done;
  if (o->row_scale) {
    for (int64_t i = 0; i < ni; i++) a.row_scale[i] = o->row_scale[order[i]];
    for (int64_t c = 0; c < o->ncols; c++) a.col_scale[c < ni ? pos[c] : c] = o->col_scale[c];
  }
  TRY_GOTO(cg_csr_check(&a, what), done);

  /* the rows' data; the halo rows (ids >= n_inner) keep their place */
  const int64_t nt = ni + l->n_halo;
  TRY_GOTO(permute_rows_u8((uint8_t **)&l->gid, order, ni, sizeof(int32_t), nt, "reordered global ids"), done);
  TRY_GOTO(permute_rows_u8((uint8_t **)&l->feat, order, ni, (size_t)l->feat_dim * sizeof(float), l->feat_rows,
                           "reordered features"), done);
  TRY_GOTO(permute_csr_rows(&l->feat_csr, order, ni, "reordered sparse features"), done);
  TRY_GOTO(permute_rows_u8((uint8_t **)&l->labels, order, ni, sizeof(int32_t), ni, "reordered labels"), done);
  TRY_GOTO(permute_rows_u8(&l->mlabels, order, ni, (size_t)l->num_classes, ni, "reordered multi-labels"), done);
  TRY_GOTO(permute_rows_u8(&l->split, order, ni, 1, ni, "reordered split"), done);
  cg_csr_free(&l->agg);
  l->agg = a;
  memset(&a, 0, sizeof a);
  TRY_GOTO(rt_local_check(l, what), done);
  l->reorder_applied = chosen;
  l->reorder_ranks = 1;
  if (pos_out) {
    *pos_out = pos;
    pos = NULL;
  }
done:
  cg_csr_free(&a);
  cg_free(order);
  cg_free(pos);
  return st;
}
