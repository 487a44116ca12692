/* graph/reorder.c — vertex orders that put neighbours near each other, a measure of
 * how local an order is, and the permutation of a whole graph (graph.h, "locality
 * reordering").
 *
 * Design notes (the why):
 * - The CPU SpMM (core/cpu_spmm.c) is fast when most nonzeros fall in few dense
 *   1024 x 1024 (row block, column block) tiles, whose source rows stay in L2 while the
 *   tile is processed; the rest is streamed panel by panel from DRAM. The GPU's tiled
 *   SpMM works the same way with shared memory. So the measure that decides is the
 *   share of nonzeros in dense tiles (graph_locality, the CPU's tile size and
 *   threshold), not the bandwidth of the matrix. A random order of a graph with
 *   communities has almost no dense tile; the same graph with each community
 *   contiguous has most of its nonzeros in them.
 * - RCM (reverse Cuthill-McKee) minimises bandwidth: right for meshes and road-like
 *   graphs, weak for graphs of average degree in the hundreds, where a BFS level is a
 *   large share of the graph and mixes communities. Label propagation (cluster) finds
 *   the communities themselves in a few O(m) sweeps and lays each out contiguously.
 * - The measure is the tiles' reuse: for each nonzero, the nonzeros per row of the tile
 *   it falls in, averaged. A count threshold alone (the SpMM's "dense tile") does not
 *   tell a local order from a random one on a dense graph: synth:reddit:scale=0.25 in a
 *   random order has 80 % of its nonzeros in tiles over the threshold (57 x 57 tiles of
 *   ~8,800 each), at a reuse of 8.7 against 74 in its generated order.
 * - Everything here is deterministic (no thread-dependent order, ties broken by a hash
 *   of the ids): the same graph gives the same order on every rank and every run. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph_internal.h"

static const char *const reorder_names[] = {"none", "rcm", "cluster", "metis", "auto"};

const char *graph_reorder_name(enum graph_reorder r) {
  return (unsigned)r < sizeof reorder_names / sizeof reorder_names[0] ? reorder_names[r] : "?";
}

int graph_reorder_parse(const char *s, enum graph_reorder *out) {
  for (int r = GRAPH_REORDER_NONE; r <= GRAPH_REORDER_AUTO; r++)
    if (s && strcmp(s, reorder_names[r]) == 0) {
      *out = (enum graph_reorder)r;
      return CG_OK;
    }
  return cg_err_set(CG_ERR_ARG, "--reorder '%s': expected none, rcm, cluster, metis or auto", s ? s : "");
}

int graph_order_check(const int32_t *order, int64_t n, const char *what) {
  uint8_t *seen = cg_calloc((size_t)(n > 0 ? n : 1), 1, "order check");
  if (!seen) return CG_ERR_NOMEM;
  int st = CG_OK;
  for (int64_t i = 0; i < n && st == CG_OK; i++) {
    if (order[i] < 0 || order[i] >= n || seen[order[i]])
      st = cg_err_set(CG_ERR_INTERNAL, "%s: position %lld holds vertex %d, %s", what, (long long)i, order[i],
                      order[i] < 0 || order[i] >= n ? "outside the graph" : "already placed");
    else
      seen[order[i]] = 1;
  }
  cg_free(seen);
  return st;
}

/* Valid neighbours of v: columns in [0, n), not v itself. */
#define FOR_NEIGHBOURS(v, c)                                                   \
  for (int64_t k_ = rowptr[v]; k_ < rowptr[(v) + 1]; k_++)                     \
    if ((c = colidx[k_]) >= 0 && c < n && c != (v))

static int64_t *degrees(int64_t n, const int64_t *rowptr, const int32_t *colidx) {
  int64_t *deg = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *deg, "reorder: degrees");
  if (!deg) return NULL;
  for (int64_t v = 0; v < n; v++) {
    int64_t d = 0;
    int32_t c;
    FOR_NEIGHBOURS(v, c) d++;
    deg[v] = d;
  }
  return deg;
}

/* ---- locality ------------------------------------------------------------------------ */

void graph_locality_measure(int64_t n, const int64_t *rowptr, const int32_t *colidx, const int32_t *order,
                            struct graph_locality *out) {
  memset(out, 0, sizeof *out);
  out->tile = GRAPH_LOCALITY_TILE;
  if (n < 1) return;
  const int64_t tb = GRAPH_LOCALITY_TILE, nb = (n + tb - 1) / tb;
  int32_t *pos = order ? cg_malloc((size_t)n * sizeof *pos, "locality: positions") : NULL;
  int64_t *cnt = cg_calloc((size_t)nb, sizeof *cnt, "locality: tile counts");
  int64_t *touched = cg_malloc((size_t)nb * sizeof *touched, "locality: touched tiles");
  if ((order && !pos) || !cnt || !touched) {
    cg_free(pos);
    cg_free(cnt);
    cg_free(touched);
    out->nnz = -1; /* no memory: unknown */
    return;
  }
  if (order)
    for (int64_t i = 0; i < n; i++) pos[order[i]] = (int32_t)i;
  int64_t nnz = 0, dense = 0;
  double dist = 0, sq = 0;
  for (int64_t rb = 0; rb < nb; rb++) {
    int64_t nt = 0;
    const int64_t i1 = (rb + 1) * tb < n ? (rb + 1) * tb : n;
    for (int64_t i = rb * tb; i < i1; i++) {
      const int64_t v = order ? order[i] : i;
      int32_t c;
      FOR_NEIGHBOURS(v, c) {
        const int64_t j = order ? pos[c] : c, cb = j / tb;
        if (cnt[cb]++ == 0) touched[nt++] = cb;
        dist += (double)(j > i ? j - i : i - j);
        nnz++;
      }
    }
    for (int64_t t = 0; t < nt; t++) {
      sq += (double)cnt[touched[t]] * (double)cnt[touched[t]];
      if (cnt[touched[t]] >= GRAPH_LOCALITY_REUSE * tb) {
        dense += cnt[touched[t]];
        out->dense_tiles++;
      }
      cnt[touched[t]] = 0;
    }
  }
  out->nnz = nnz;
  out->dense_frac = nnz ? (double)dense / (double)nnz : 0.0;
  out->mean_dist = nnz ? dist / (double)nnz / (double)n : 0.0;
  /* a tile's nonzeros per row of the tile, averaged over the nonzeros; spread evenly
   * over the nb x nb tiles (a random order) it would be nnz / (nb^2 tb), its minimum */
  out->reuse = nnz ? sq / (double)nnz / (double)tb : 0.0;
  out->concentration = nnz ? out->reuse / ((double)nnz / ((double)nb * (double)nb * (double)tb)) : 1.0;
  cg_free(pos);
  cg_free(cnt);
  cg_free(touched);
}

/* ---- reverse Cuthill-McKee ------------------------------------------------------------- */

static const int64_t *g_sort_deg; /* qsort context: set-up only, one thread */
static int cmp_by_degree(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  if (g_sort_deg[x] != g_sort_deg[y]) return g_sort_deg[x] < g_sort_deg[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* BFS from `start` over unvisited vertices (vis 0) into q[head..): every vertex
 * reached is marked `mark`; with sort, each vertex's new neighbours are appended by
 * increasing degree (Cuthill-McKee). Returns the end of the queue; *last_level the
 * start of the last level. */
static int64_t bfs(int64_t n, const int64_t *rowptr, const int32_t *colidx, const int64_t *deg, int32_t start,
                   uint8_t *vis, uint8_t mark, int sort, int32_t *q, int64_t head, int64_t *last_level) {
  int64_t tail = head;
  q[tail++] = start;
  vis[start] = mark;
  int64_t level_start = head, level_end = tail;
  *last_level = head;
  while (head < tail) {
    if (head == level_end) {
      level_start = level_end;
      level_end = tail;
    }
    const int32_t u = q[head++];
    const int64_t first = tail;
    int32_t c;
    FOR_NEIGHBOURS(u, c) {
      if (vis[c] != 0) continue;
      vis[c] = mark;
      q[tail++] = c;
    }
    if (sort && tail - first > 1) {
      g_sort_deg = deg;
      qsort(q + first, (size_t)(tail - first), sizeof *q, cmp_by_degree);
    }
  }
  *last_level = level_start;
  return tail;
}

int graph_order_rcm(int64_t n, const int64_t *rowptr, const int32_t *colidx, int32_t *order) {
  if (n < 1) return CG_OK;
  int st = CG_ERR_NOMEM;
  int64_t *deg = degrees(n, rowptr, colidx);
  int32_t *byd = cg_malloc((size_t)n * sizeof *byd, "rcm: vertices by degree");
  int32_t *tmp = cg_malloc((size_t)n * sizeof *tmp, "rcm: probe queue");
  uint8_t *vis = cg_calloc((size_t)n, 1, "rcm: visited");
  if (!deg || !byd || !tmp || !vis) goto done;
  for (int64_t v = 0; v < n; v++) byd[v] = (int32_t)v;
  g_sort_deg = deg;
  qsort(byd, (size_t)n, sizeof *byd, cmp_by_degree);
  /* vis: 0 unvisited, 1 placed; the probe BFS marks 2 and is undone after */
  int64_t placed = 0;
  for (int64_t s = 0; s < n; s++) {
    int32_t start = byd[s];
    if (vis[start] == 1) continue;
    /* pseudo-peripheral start (George-Liu, one sweep): the lowest-degree vertex of the
     * last BFS level from the component's lowest-degree vertex */
    int64_t last = 0;
    const int64_t end = bfs(n, rowptr, colidx, deg, start, vis, 2, 0, tmp, 0, &last);
    for (int64_t i = last; i < end; i++)
      if (deg[tmp[i]] < deg[start] || (deg[tmp[i]] == deg[start] && tmp[i] < start)) start = tmp[i];
    for (int64_t i = 0; i < end; i++) vis[tmp[i]] = 0;
    placed = bfs(n, rowptr, colidx, deg, start, vis, 1, 1, order, placed, &last);
  }
  for (int64_t i = 0, j = n - 1; i < j; i++, j--) { /* reversed */
    const int32_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  st = placed == n ? CG_OK : cg_err_set(CG_ERR_INTERNAL, "rcm: placed %lld of %lld vertices", (long long)placed,
                                        (long long)n);
done:
  cg_free(deg);
  cg_free(byd);
  cg_free(tmp);
  cg_free(vis);
  return st;
}

/* ---- clusters by label propagation --------------------------------------------------------- */

#define LP_ROUNDS 12
#define LP_STOP 0.001 /* stop when fewer than 0.1 % of the vertices change label */

static inline uint64_t mix64(uint64_t z) { /* splitmix64's finaliser */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static const int32_t *g_sort_label;
static const int64_t *g_sort_first;
static int cmp_by_cluster(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  const int64_t fx = g_sort_first[g_sort_label[x]], fy = g_sort_first[g_sort_label[y]];
  if (fx != fy) return fx < fy ? -1 : 1;
  return x < y ? -1 : x > y;
}

int graph_order_cluster(int64_t n, const int64_t *rowptr, const int32_t *colidx, int32_t *order) {
  if (n < 1) return CG_OK;
  int st = CG_ERR_NOMEM;
  int32_t *label = cg_malloc((size_t)n * sizeof *label, "cluster: labels");
  int64_t *cnt = cg_calloc((size_t)n, sizeof *cnt, "cluster: label counts");
  int32_t *touched = cg_malloc((size_t)n * sizeof *touched, "cluster: touched labels");
  int64_t *first = cg_malloc((size_t)n * sizeof *first, "cluster: first vertex of each label");
  int64_t *deg = degrees(n, rowptr, colidx);
  double *tot = cg_calloc((size_t)n, sizeof *tot, "cluster: degree sum of each label");
  if (!label || !cnt || !touched || !first || !deg || !tot) goto done;
  /* Seeded start: a vertex not yet labelled becomes a seed and labels its unlabelled
   * neighbours. Starting from singletons instead, the first in-place sweep lets a label
   * that happens to win a few early ties spread along the inter-community edges and
   * merge communities for good (measured on synth:reddit:scale=0.25,shuffle=1: 24
   * clusters for its 41 communities); a seed's neighbourhood lies mostly in its own
   * community, so no label starts out in two. */
  for (int64_t v = 0; v < n; v++) label[v] = -1;
  for (int64_t v = 0; v < n; v++) {
    if (label[v] >= 0) continue;
    label[v] = (int32_t)v;
    int32_t c;
    FOR_NEIGHBOURS(v, c) {
      if (label[c] < 0) label[c] = (int32_t)v;
    }
  }
  double m2 = 0;
  for (int64_t v = 0; v < n; v++) {
    m2 += (double)deg[v];
    tot[label[v]] += (double)deg[v];
  }
  if (m2 <= 0) m2 = 1;
  int rounds = 0;
  for (int r = 0; r < LP_ROUNDS; r++) {
    int64_t changed = 0;
    rounds++;
    /* In place (asynchronous: a vertex sees the labels its predecessors took this
     * round), which converges in fewer rounds than the synchronous form and does not
     * oscillate. Ties go to the current label, else to the smallest hash of (label,
     * vertex, round), so that no label wins ties everywhere. */
    for (int64_t v = 0; v < n; v++) {
      int64_t nt = 0;
      int32_t c;
      FOR_NEIGHBOURS(v, c) {
        if (cnt[label[c]]++ == 0) touched[nt++] = label[c];
      }
      if (nt == 0) continue;
      /* Louvain's local move: the label with the most neighbours less the expected
       * number, deg(v) x (degree sum of the label) / 2m (the modularity gain), so that
       * a label does not win only by being large */
      tot[label[v]] -= (double)deg[v];
      const double pen = (double)deg[v] / m2;
      int32_t best = label[v];
      double bc = (double)cnt[best] - pen * tot[best];
      uint64_t bh = UINT64_MAX;
      for (int64_t t = 0; t < nt; t++) {
        const int32_t l = touched[t];
        const double cl = (double)cnt[l] - pen * tot[l];
        if (cl > bc) {
          best = l;
          bc = cl;
          bh = mix64(((uint64_t)(uint32_t)l << 32) ^ (uint64_t)v ^ ((uint64_t)r << 58));
        } else if (cl == bc && best != label[v]) {
          const uint64_t h = mix64(((uint64_t)(uint32_t)l << 32) ^ (uint64_t)v ^ ((uint64_t)r << 58));
          if (h < bh) {
            best = l;
            bh = h;
          }
        }
      }
      for (int64_t t = 0; t < nt; t++) cnt[touched[t]] = 0;
      tot[best] += (double)deg[v];
      if (best != label[v]) {
        label[v] = best;
        changed++;
      }
    }
    if ((double)changed < LP_STOP * (double)n) break;
  }
  /* clusters in the order of their first vertex (the input order between clusters),
   * each cluster's vertices in the input order */
  for (int64_t v = 0; v < n; v++) first[v] = INT64_MAX;
  int64_t nclusters = 0;
  for (int64_t v = 0; v < n; v++)
    if (first[label[v]] == INT64_MAX) {
      first[label[v]] = v;
      nclusters++;
    }
  for (int64_t v = 0; v < n; v++) order[v] = (int32_t)v;
  g_sort_label = label;
  g_sort_first = first;
  qsort(order, (size_t)n, sizeof *order, cmp_by_cluster);
  LOG_DEBUG("graph", "cluster order: %lld clusters of %lld vertices after %d label-propagation rounds",
            (long long)nclusters, (long long)n, rounds);
  st = CG_OK;
done:
  cg_free(label);
  cg_free(cnt);
  cg_free(touched);
  cg_free(first);
  cg_free(deg);
  cg_free(tot);
  return st;
}

/* ---- the permuted graph ----------------------------------------------------------------- */

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

int graph_permute(const struct graph *g, const int32_t *order, struct graph *out) {
  memset(out, 0, sizeof *out);
  TRY(graph_order_check(order, g->n, "graph_permute"));
  const int64_t n = g->n;
  const size_t nz = (size_t)(n > 0 ? n : 1);
  int st = CG_ERR_NOMEM;
  int32_t *pos = cg_malloc(nz * sizeof *pos, "permute: positions");
  if (!pos) return CG_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) pos[order[i]] = (int32_t)i;
  memcpy(out->name, g->name, sizeof out->name);
  out->n = n;
  out->m = g->m;
  out->feat_dim = g->feat_dim;
  out->sparse_feat = g->sparse_feat;
  out->feat_nnz = g->feat_nnz;
  out->num_classes = g->num_classes;
  out->multilabel = g->multilabel;
  out->rowptr = cg_malloc((size_t)(n + 1) * sizeof *out->rowptr, "permuted row pointers");
  out->colidx = cg_malloc((size_t)(g->m > 0 ? g->m : 1) * sizeof *out->colidx, "permuted columns");
  out->split = cg_malloc(nz, "permuted split");
  if (!out->rowptr || !out->colidx || !out->split) goto fail;
  out->rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t v = order[i];
    out->rowptr[i + 1] = out->rowptr[i] + (g->rowptr[v + 1] - g->rowptr[v]);
  }
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < n; i++) {
    const int64_t v = order[i], d = g->rowptr[v + 1] - g->rowptr[v];
    int32_t *dst = out->colidx + out->rowptr[i];
    for (int64_t k = 0; k < d; k++) dst[k] = pos[g->colidx[g->rowptr[v] + k]];
    qsort(dst, (size_t)d, sizeof *dst, cmp_i32);
  }
  if (g->feat_dim > 0 && g->feat_values) {
    if (g->sparse_feat) {
      out->feat_rowptr = cg_malloc((size_t)(n + 1) * sizeof *out->feat_rowptr, "permuted feature rows");
      out->feat_colidx = cg_malloc((size_t)(g->feat_nnz > 0 ? g->feat_nnz : 1) * sizeof *out->feat_colidx,
                                   "permuted feature columns");
      out->feat_values = cg_malloc((size_t)(g->feat_nnz > 0 ? g->feat_nnz : 1) * sizeof *out->feat_values,
                                   "permuted feature values");
      if (!out->feat_rowptr || !out->feat_colidx || !out->feat_values) goto fail;
      out->feat_rowptr[0] = 0;
      for (int64_t i = 0; i < n; i++) {
        const int64_t v = order[i], a = g->feat_rowptr[v], d = g->feat_rowptr[v + 1] - a;
        out->feat_rowptr[i + 1] = out->feat_rowptr[i] + d;
        memcpy(out->feat_colidx + out->feat_rowptr[i], g->feat_colidx + a, (size_t)d * sizeof(int32_t));
        memcpy(out->feat_values + out->feat_rowptr[i], g->feat_values + a, (size_t)d * sizeof(float));
      }
    } else {
      const size_t f = (size_t)g->feat_dim;
      out->feat_values = cg_malloc(nz * f * sizeof(float), "permuted features");
      if (!out->feat_values) goto fail;
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; i++)
        memcpy(out->feat_values + (size_t)i * f, g->feat_values + (size_t)order[i] * f, f * sizeof(float));
    }
  }
  if (g->multilabel && g->mlabels) {
    const size_t c = (size_t)g->num_classes;
    out->mlabels = cg_malloc(nz * (c ? c : 1), "permuted multi-labels");
    if (!out->mlabels) goto fail;
    for (int64_t i = 0; i < n; i++) memcpy(out->mlabels + (size_t)i * c, g->mlabels + (size_t)order[i] * c, c);
  } else if (g->labels) {
    out->labels = cg_malloc(nz * sizeof(int32_t), "permuted labels");
    if (!out->labels) goto fail;
    for (int64_t i = 0; i < n; i++) out->labels[i] = g->labels[order[i]];
  }
  for (int64_t i = 0; i < n; i++) out->split[i] = g->split ? g->split[order[i]] : GRAPH_SPLIT_NONE;
  graph_checksum_update(out);
  cg_free(pos);
  return CG_OK;
fail:
  cg_free(pos);
  graph_free(out);
  return st;
}
