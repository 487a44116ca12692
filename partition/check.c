/* partition/check.c — invariant checkers of local graphs and exchange plans.
 *
 * The checker recomputes each property from the global graph and the owner array
 * and compares; it never trusts a field of the part_local it checks (offsets and
 * counts are validated before anything is indexed with them), so a corrupted plan
 * gives a message, not a crash. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "partition/part_internal.h"
#include "partition/partition.h"

#define BAD(...) cg_err_set(CG_ERR_INTERNAL, __VA_ARGS__)

static int check_shape(const struct graph *g, const struct part_local *pl) {
  if (pl->nparts < 1 || pl->rank < 0 || pl->rank >= pl->nparts)
    return BAD("part_local: rank %d is outside [0, %d)", pl->rank, pl->nparts);
  if (pl->n_global != g->n)
    return BAD("part_local rank %d: built for a graph of %lld vertices, checked against %lld",
               pl->rank, (long long)pl->n_global, (long long)g->n);
  if (pl->n_inner < 0 || pl->n_halo < 0 || pl->n_inner + pl->n_halo > g->n)
    return BAD("part_local rank %d: n_inner %lld / n_halo %lld out of range", pl->rank,
               (long long)pl->n_inner, (long long)pl->n_halo);
  if (pl->n_inner + pl->n_halo > 0 && !pl->gid) return BAD("part_local rank %d: gid is NULL", pl->rank);
  for (int64_t l = 0; l < pl->n_inner + pl->n_halo; l++)
    if (pl->gid[l] < 0 || pl->gid[l] >= g->n)
      return BAD("part_local rank %d: gid[%lld] = %d is not a vertex", pl->rank, (long long)l,
                 pl->gid[l]);
  return CG_OK;
}

static int check_inner(const struct graph *g, const int32_t *owner, const struct part_local *pl) {
  int64_t owned = 0;
  for (int64_t v = 0; v < g->n; v++) owned += owner[v] == pl->rank;
  for (int64_t l = 0; l < pl->n_inner; l++) {
    int32_t v = pl->gid[l];
    if (owner[v] != pl->rank)
      return BAD("part_local rank %d: inner vertex %d (local %lld) is owned by rank %d", pl->rank, v,
                 (long long)l, owner[v]);
    if (l > 0 && v <= pl->gid[l - 1])
      return BAD("part_local rank %d: inner gids not strictly increasing at local %lld (%d after %d)",
                 pl->rank, (long long)l, v, pl->gid[l - 1]);
  }
  if (owned != pl->n_inner)
    return BAD("part_local rank %d: rank owns %lld vertices but has %lld inner vertices", pl->rank,
               (long long)owned, (long long)pl->n_inner);
  return CG_OK;
}

/* mark: scratch of n bytes. */
static int check_halo(const struct graph *g, const int32_t *owner, const struct part_local *pl,
                      uint8_t *mark) {
  memset(mark, 0, (size_t)g->n);
  int64_t expect = 0;
  for (int64_t l = 0; l < pl->n_inner; l++) {
    int32_t v = pl->gid[l];
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
      int32_t u = g->colidx[k];
      if (owner[u] != pl->rank && !mark[u]) {
        mark[u] = 1;
        expect++;
      }
    }
  }
  for (int64_t h = 0; h < pl->n_halo; h++) {
    int64_t l = pl->n_inner + h;
    int32_t u = pl->gid[l];
    if (owner[u] == pl->rank)
      return BAD("part_local rank %d: halo vertex %d (local %lld) is owned by the rank itself",
                 pl->rank, u, (long long)l);
    if (!mark[u])
      return BAD("part_local rank %d: halo vertex %d (local %lld) is not an in-neighbour of any "
                 "inner vertex",
                 pl->rank, u, (long long)l);
    if (h > 0) {
      int32_t p = pl->gid[l - 1];
      if (owner[u] < owner[p] || (owner[u] == owner[p] && u <= p))
        return BAD("part_local rank %d: halo not grouped by owner / increasing gid at local %lld "
                   "(vertex %d of rank %d after vertex %d of rank %d)",
                   pl->rank, (long long)l, u, owner[u], p, owner[p]);
    }
  }
  /* Strictly ordered (so distinct), all expected: equal counts make it the same set. */
  if (expect != pl->n_halo)
    return BAD("part_local rank %d: halo has %lld vertices, the inner rows read %lld non-owned "
               "vertices",
               pl->rank, (long long)pl->n_halo, (long long)expect);
  return CG_OK;
}

static int check_peers_recv(const int32_t *owner, const struct part_local *pl) {
  if (pl->npeers < 0 || pl->npeers >= pl->nparts)
    return BAD("part_local rank %d: %d peers with %d ranks", pl->rank, pl->npeers, pl->nparts);
  if (pl->npeers > 0 && (!pl->peer || !pl->recv_offset || !pl->recv_count || !pl->send_offset ||
                         !pl->send_count))
    return BAD("part_local rank %d: peer arrays are NULL", pl->rank);
  int64_t roff = 0;
  for (int i = 0; i < pl->npeers; i++) {
    int q = pl->peer[i];
    if (q < 0 || q >= pl->nparts || q == pl->rank)
      return BAD("part_local rank %d: peer %d is rank %d (invalid)", pl->rank, i, q);
    if (i > 0 && q <= pl->peer[i - 1])
      return BAD("part_local rank %d: peers not strictly ascending at %d (%d after %d)", pl->rank, i,
                 q, pl->peer[i - 1]);
    if (pl->recv_offset[i] != roff || pl->recv_count[i] < 0)
      return BAD("part_local rank %d: receive block of peer %d is [%lld, +%lld), expected to start "
                 "at %lld (blocks contiguous in peer order)",
                 pl->rank, q, (long long)pl->recv_offset[i], (long long)pl->recv_count[i],
                 (long long)roff);
    if (roff + pl->recv_count[i] > pl->n_halo)
      return BAD("part_local rank %d: receive block of peer %d ends past the halo (%lld > %lld)",
                 pl->rank, q, (long long)(roff + pl->recv_count[i]), (long long)pl->n_halo);
    for (int64_t k = 0; k < pl->recv_count[i]; k++) {
      int32_t u = pl->gid[pl->n_inner + roff + k];
      if (owner[u] != q)
        return BAD("part_local rank %d: receive block of peer %d holds vertex %d owned by rank %d",
                   pl->rank, q, u, owner[u]);
    }
    if (pl->recv_count[i] == 0 && pl->send_count[i] == 0)
      return BAD("part_local rank %d: peer %d has nothing to send or receive", pl->rank, q);
    roff += pl->recv_count[i];
  }
  if (roff != pl->n_halo)
    return BAD("part_local rank %d: receive blocks cover %lld of %lld halo vertices", pl->rank,
               (long long)roff, (long long)pl->n_halo);
  return CG_OK;
}

static int check_send(const struct graph *g, const int32_t *owner, const struct part_local *pl) {
  int st = CG_OK;
  int64_t *start = NULL;
  int32_t *order = NULL, *stamp = NULL, *lid = NULL;
  int64_t soff = 0;
  for (int i = 0; i < pl->npeers; i++) {
    if (pl->send_offset[i] != soff || pl->send_count[i] < 0 || pl->send_count[i] > pl->n_inner)
      return BAD("part_local rank %d: send list of peer %d is [%lld, +%lld), expected to start at "
                 "%lld (lists contiguous in peer order)",
                 pl->rank, pl->peer[i], (long long)pl->send_offset[i], (long long)pl->send_count[i],
                 (long long)soff);
    soff += pl->send_count[i];
  }
  if (soff > 0 && !pl->send_idx) return BAD("part_local rank %d: send_idx is NULL", pl->rank);
  for (int64_t k = 0; k < soff; k++)
    if (pl->send_idx[k] < 0 || pl->send_idx[k] >= pl->n_inner)
      return BAD("part_local rank %d: send_idx[%lld] = %d is not an inner local id", pl->rank,
                 (long long)k, pl->send_idx[k]);

  TRY(part_group_by_owner(g, owner, pl->nparts, &start, &order));
  stamp = cg_malloc((size_t)(pl->n_inner > 0 ? pl->n_inner : 1) * sizeof *stamp, "send check marks");
  lid = cg_malloc((size_t)(g->n > 0 ? g->n : 1) * sizeof *lid, "send check map");
  if (!stamp || !lid) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int64_t l = 0; l < pl->n_inner; l++) stamp[l] = -1;
  for (int64_t l = 0; l < pl->n_inner; l++) lid[pl->gid[l]] = (int32_t)l;
  int ip = 0; /* index into peers, advanced in step with q */
  for (int q = 0; q < pl->nparts; q++) {
    if (q == pl->rank) continue;
    while (ip < pl->npeers && pl->peer[ip] < q) ip++;
    int is_peer = ip < pl->npeers && pl->peer[ip] == q;
    const int32_t *list = is_peer ? pl->send_idx + pl->send_offset[ip] : NULL;
    int64_t cnt = is_peer ? pl->send_count[ip] : 0;
    /* Mark what the list holds (stamp = q), checking increasing order. */
    for (int64_t k = 0; k < cnt; k++) {
      if (k > 0 && list[k] <= list[k - 1]) {
        st = BAD("part_local rank %d: send list to peer %d not strictly increasing at %lld", pl->rank,
                 q, (long long)k);
        goto done;
      }
      stamp[list[k]] = q;
    }
    /* Everything q's rows read from this rank must be in the list; count distinct. */
    int64_t need = 0;
    for (int64_t i = start[q]; i < start[q + 1]; i++) {
      int32_t w = order[i];
      for (int64_t k = g->rowptr[w]; k < g->rowptr[w + 1]; k++) {
        int32_t v = g->colidx[k];
        if (owner[v] != pl->rank) continue;
        int32_t l = lid[v];
        if (stamp[l] == q) {
          stamp[l] = -2 - q; /* counted */
          need++;
        } else if (stamp[l] != -2 - q) {
          st = BAD("part_local rank %d: rank %d reads vertex %d (row of %d) but it is not in the send "
                   "list to %d%s",
                   pl->rank, q, v, w, q, is_peer ? "" : " (not even a peer)");
          goto done;
        }
      }
    }
    if (need != cnt) {
      st = BAD("part_local rank %d: send list to peer %d has %lld vertices, rank %d reads %lld of them",
               pl->rank, q, (long long)cnt, q, (long long)need);
      goto done;
    }
  }
done:
  cg_free(start);
  cg_free(order);
  cg_free(stamp);
  cg_free(lid);
  return st;
}

/* pos: scratch of n int64, -1 everywhere on entry and on return. */
static int check_agg(const struct graph *g, const struct part_local *pl, int64_t *pos) {
  const struct cg_csr *a = &pl->agg;
  if (a->nrows != pl->n_inner || a->ncols != pl->n_inner + pl->n_halo)
    return BAD("part_local rank %d: agg is %lld x %lld, expected %lld x %lld", pl->rank,
               (long long)a->nrows, (long long)a->ncols, (long long)pl->n_inner,
               (long long)(pl->n_inner + pl->n_halo));
  if (!a->vals) return BAD("part_local rank %d: agg has no values", pl->rank);
  TRY(cg_csr_check(a, "part_local agg"));
  int self = pl->norm == GRAPH_NORM_GCN && pl->self_loops;
  for (int64_t r = 0; r < a->nrows; r++) {
    int32_t v = pl->gid[r];
    int64_t deg = g->rowptr[v + 1] - g->rowptr[v];
    if (a->rowptr[r + 1] - a->rowptr[r] != deg + self)
      return BAD("part_local rank %d: agg row %lld (vertex %d) has %lld entries, the global row has "
                 "%lld",
                 pl->rank, (long long)r, v, (long long)(a->rowptr[r + 1] - a->rowptr[r]),
                 (long long)(deg + self));
    for (int64_t k = a->rowptr[r] + 1; k < a->rowptr[r + 1]; k++)
      if (a->colidx[k] <= a->colidx[k - 1])
        return BAD("part_local rank %d: agg row %lld columns not strictly increasing", pl->rank,
                   (long long)r);
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) pos[g->colidx[k]] = k;
    int64_t dv = graph_norm_degree(g, pl->norm, pl->self_loops, v);
    int st = CG_OK;
    if (a->row_scale && a->row_scale[r] != graph_norm_row_scale(pl->norm, dv))
      st = BAD("part_local rank %d: agg row %lld (vertex %d) has row factor %.9g, expected %.9g",
               pl->rank, (long long)r, v, (double)a->row_scale[r],
               (double)graph_norm_row_scale(pl->norm, dv));
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1] && st == CG_OK; k++) {
      int32_t c = a->colidx[k];
      int32_t u = pl->gid[c];
      if (u == v) {
        if (!self)
          st = BAD("part_local rank %d: agg row %lld has a self-loop the operator does not have",
                   pl->rank, (long long)r);
      } else if (pos[u] < 0) {
        st = BAD("part_local rank %d: agg row %lld (vertex %d) has column %d (vertex %d), not an "
                 "edge of the graph",
                 pl->rank, (long long)r, v, c, u);
      }
      if (st != CG_OK) break;
      float want = graph_norm_weight(pl->norm, dv, graph_norm_degree(g, pl->norm, pl->self_loops, u));
      if (a->vals[k] != want)
        st = BAD("part_local rank %d: agg entry (%d <- %d) is %.9g, the global operator has %.9g",
                 pl->rank, v, u, (double)a->vals[k], (double)want);
      const float cwant =
          graph_norm_col_scale(pl->norm, graph_norm_degree(g, pl->norm, pl->self_loops, u));
      if (st == CG_OK && a->col_scale && a->col_scale[c] != cwant)
        st = BAD("part_local rank %d: agg column %d (vertex %d) has factor %.9g, expected %.9g",
                 pl->rank, c, u, (double)a->col_scale[c], (double)cwant);
    }
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) pos[g->colidx[k]] = -1;
    if (st != CG_OK) return st;
  }
  return CG_OK;
}

int part_local_check(const struct graph *g, const int32_t *owner, const struct part_local *pl) {
  if (!g || !pl) return cg_err_set(CG_ERR_ARG, "part_local_check: NULL argument");
  TRY(check_shape(g, pl));
  TRY(part_owner_check(g, owner, pl->nparts, "part_local_check"));
  TRY(check_inner(g, owner, pl));
  uint8_t *mark = cg_malloc((size_t)(g->n > 0 ? g->n : 1), "halo check marks");
  if (!mark) return CG_ERR_NOMEM;
  int st = check_halo(g, owner, pl, mark);
  cg_free(mark);
  TRY(st);
  TRY(check_peers_recv(owner, pl));
  TRY(check_send(g, owner, pl));
  int64_t *pos = cg_malloc((size_t)(g->n > 0 ? g->n : 1) * sizeof *pos, "agg check map");
  if (!pos) return CG_ERR_NOMEM;
  for (int64_t v = 0; v < g->n; v++) pos[v] = -1;
  st = check_agg(g, pl, pos);
  cg_free(pos);
  TRY(st);
  return CG_OK;
}

static int peer_index(const struct part_local *pl, int q) {
  int lo = 0, hi = pl->npeers - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (pl->peer[mid] == q) return mid;
    if (pl->peer[mid] < q) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

int part_plans_check_global(const struct part_local *pls, int nparts) {
  if (!pls || nparts < 1) return cg_err_set(CG_ERR_ARG, "part_plans_check_global: no ranks given");
  for (int p = 0; p < nparts; p++)
    if (pls[p].rank != p || pls[p].nparts != nparts || pls[p].n_global != pls[0].n_global)
      return BAD("plans: entry %d is rank %d of %d (graph of %lld vertices), expected rank %d of %d "
                 "(%lld vertices)",
                 p, pls[p].rank, pls[p].nparts, (long long)pls[p].n_global, p, nparts,
                 (long long)pls[0].n_global);
  for (int p = 0; p < nparts; p++) {
    const struct part_local *rp = &pls[p];
    for (int i = 0; i < rp->npeers; i++) {
      int q = rp->peer[i];
      if (q < 0 || q >= nparts || q == p) return BAD("plans: rank %d lists invalid peer %d", p, q);
      const struct part_local *sq = &pls[q];
      int j = peer_index(sq, p);
      if (j < 0) return BAD("plans: rank %d lists rank %d as a peer, but not the other way round", p, q);
      /* q -> p: q's send list must be p's receive block from q, gid by gid. */
      if (sq->send_count[j] != rp->recv_count[i])
        return BAD("plans: rank %d sends %lld rows to rank %d, which expects %lld", q,
                   (long long)sq->send_count[j], p, (long long)rp->recv_count[i]);
      if (rp->recv_offset[i] < 0 || rp->recv_offset[i] + rp->recv_count[i] > rp->n_halo)
        return BAD("plans: rank %d's receive block from rank %d is outside its halo", p, q);
      int64_t qtotal = 0;
      for (int k = 0; k < sq->npeers; k++) qtotal += sq->send_count[k];
      if (sq->send_offset[j] < 0 || sq->send_offset[j] + sq->send_count[j] > qtotal)
        return BAD("plans: rank %d's send list to rank %d is outside its send buffer", q, p);
      for (int64_t k = 0; k < rp->recv_count[i]; k++) {
        int32_t l = sq->send_idx[sq->send_offset[j] + k];
        if (l < 0 || l >= sq->n_inner)
          return BAD("plans: rank %d's send list to rank %d holds %d, not an inner local id", q, p, l);
        int32_t sent = sq->gid[l];
        int32_t want = rp->gid[rp->n_inner + rp->recv_offset[i] + k];
        if (sent != want)
          return BAD("plans: row %lld from rank %d to rank %d is vertex %d, rank %d expects vertex %d",
                     (long long)k, q, p, sent, p, want);
      }
    }
  }
  return CG_OK;
}
