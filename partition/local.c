/* partition/local.c — one rank's local graph: numbering, halo, plans, operator.
 *
 * Everything is derived from the in-edge definition (the halo is what the rows of
 * the inner vertices read), never from "the graph is symmetric", so the send list
 * of a rank is exactly the receive block of its peer even for a directed CSR. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "partition/part_internal.h"
#include "partition/partition.h"

void part_local_free(struct part_local *pl) {
  if (!pl) return;
  cg_free(pl->gid);
  cg_free(pl->peer);
  cg_free(pl->recv_offset);
  cg_free(pl->recv_count);
  cg_free(pl->send_offset);
  cg_free(pl->send_count);
  cg_free(pl->send_idx);
  cg_csr_free(&pl->agg);
  memset(pl, 0, sizeof *pl);
}

struct agg_entry {
  int32_t col;
  float val;
};

static int agg_entry_cmp(const void *a, const void *b) {
  int32_t x = ((const struct agg_entry *)a)->col, y = ((const struct agg_entry *)b)->col;
  return (x > y) - (x < y);
}

/* The CSR rows of the inner vertices: those of the whole graph (rp indexed by global
 * id), or the rank's own rows alone (rp indexed by inner id, per-rank loading). */
struct row_src {
  const int64_t *rp;
  const int32_t *ci;
  int by_inner;
};
static inline int64_t row_begin(const struct row_src *s, int64_t v, int64_t r) {
  return s->by_inner ? s->rp[r] : s->rp[v];
}
static inline int64_t row_end(const struct row_src *s, int64_t v, int64_t r) {
  return s->by_inner ? s->rp[r + 1] : s->rp[v + 1];
}

/* Rows of the aggregation operator: the global row of each inner vertex, columns
 * mapped through lid[], sorted by local column. g gives the global degrees only
 * (g->rowptr); the rows come from src. */
static int agg_build(const struct graph *g, const struct row_src *src, const int32_t *lid,
                     struct part_local *pl) {
  int self = pl->norm == GRAPH_NORM_GCN && pl->self_loops;
  int64_t nnz = 0, maxrow = 0;
  for (int64_t r = 0; r < pl->n_inner; r++) {
    int32_t v = pl->gid[r];
    int64_t d = g->rowptr[v + 1] - g->rowptr[v] + self;
    nnz += d;
    if (d > maxrow) maxrow = d;
  }
  TRY(cg_csr_alloc(&pl->agg, pl->n_inner, pl->n_inner + pl->n_halo, nnz, 1));
  struct agg_entry *row = cg_malloc((size_t)(maxrow > 0 ? maxrow : 1) * sizeof *row, "aggregation row");
  if (!row || cg_csr_alloc_scales(&pl->agg) != CG_OK) {
    cg_free(row);
    cg_csr_free(&pl->agg);
    return CG_ERR_NOMEM;
  }
  /* the factors of the weights, from global degrees like the weights themselves */
  for (int64_t c = 0; c < pl->agg.ncols; c++)
    pl->agg.col_scale[c] =
        graph_norm_col_scale(pl->norm, graph_norm_degree(g, pl->norm, pl->self_loops, pl->gid[c]));
  int64_t pos = 0;
  for (int64_t r = 0; r < pl->n_inner; r++) {
    int32_t v = pl->gid[r];
    int64_t dv = graph_norm_degree(g, pl->norm, pl->self_loops, v), len = 0;
    pl->agg.row_scale[r] = graph_norm_row_scale(pl->norm, dv);
    /* the buffers are sized by g's rows; src's (a rank's own read, a pruned graph) may
     * only be shorter: a longer one is an inconsistency, not a write past them */
    const int64_t have = row_end(src, v, r) - row_begin(src, v, r);
    if (have < 0 || have > g->rowptr[v + 1] - g->rowptr[v]) { /* (within its degree: within the buffers) */
      cg_free(row);
      cg_csr_free(&pl->agg);
      return cg_err_set(CG_ERR_FORMAT, "partition: row of vertex %d has %lld entries, more than its degree in the "
                        "graph (%lld): the rows and the structure disagree", v, (long long)have,
                        (long long)(g->rowptr[v + 1] - g->rowptr[v]));
    }
    for (int64_t k = row_begin(src, v, r); k < row_end(src, v, r); k++) {
      int32_t u = src->ci[k];
      row[len].col = lid[u];
      row[len].val = graph_norm_weight(pl->norm, dv, graph_norm_degree(g, pl->norm, pl->self_loops, u));
      len++;
    }
    if (self) {
      row[len].col = (int32_t)r;
      row[len].val = graph_norm_weight(pl->norm, dv, dv);
      len++;
    }
    /* Inner columns come in gid order but halo columns are grouped by owner, so a
     * sort is needed; rows are short. */
    qsort(row, (size_t)len, sizeof *row, agg_entry_cmp);
    for (int64_t k = 0; k < len; k++) {
      pl->agg.colidx[pos + k] = row[k].col;
      pl->agg.vals[pos + k] = row[k].val;
    }
    pos += len;
    pl->agg.rowptr[r + 1] = pos;
  }
  cg_free(row);
  return CG_OK;
}

/* Send lists: for every other rank q, the inner vertices read by a row of q's inner
 * vertices, in increasing gid (= increasing local id). Pass 0 counts, pass 1 fills. */
static int send_build(const struct graph *g, const int32_t *owner, const int32_t *lid,
                      struct part_local *pl, int64_t *scnt /* nparts */, int32_t **send_idx_out) {
  int st = CG_OK;
  int64_t *start = NULL;
  int32_t *order = NULL, *stamp = NULL, *send_idx = NULL;
  TRY(part_group_by_owner(g, owner, pl->nparts, &start, &order));
  stamp = cg_malloc((size_t)(pl->n_inner > 0 ? pl->n_inner : 1) * sizeof *stamp, "send list marks");
  if (!stamp) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  int64_t total = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t l = 0; l < pl->n_inner; l++) stamp[l] = -1;
    int64_t pos = 0;
    for (int q = 0; q < pl->nparts; q++) {
      if (q == pl->rank) continue;
      for (int64_t i = start[q]; i < start[q + 1]; i++) {
        int32_t w = order[i];
        for (int64_t k = g->rowptr[w]; k < g->rowptr[w + 1]; k++) {
          int32_t v = g->colidx[k];
          if (owner[v] == pl->rank) stamp[lid[v]] = q;
        }
      }
      int64_t c = 0;
      for (int64_t l = 0; l < pl->n_inner; l++) {
        if (stamp[l] != q) continue;
        if (pass == 1) send_idx[pos + c] = (int32_t)l;
        c++;
      }
      if (pass == 0) {
        scnt[q] = c;
        total += c;
      }
      pos += c;
    }
    if (pass == 0) {
      send_idx = cg_malloc((size_t)(total > 0 ? total : 1) * sizeof *send_idx, "send lists");
      if (!send_idx) {
        st = CG_ERR_NOMEM;
        goto done;
      }
    }
  }
  *send_idx_out = send_idx;
  send_idx = NULL;
done:
  cg_free(start);
  cg_free(order);
  cg_free(stamp);
  cg_free(send_idx);
  return st;
}

/* Send lists from the rank's own rows (per-rank loading; the graph is symmetric): v is
 * sent to q when a neighbour of v is owned by q, since that neighbour's row then reads v.
 * Increasing inner id within each q, like send_build. */
static int send_build_own(const struct row_src *src, const int32_t *owner, struct part_local *pl,
                          int64_t *scnt, int32_t **send_idx_out) {
  int64_t *last = cg_malloc((size_t)pl->nparts * sizeof *last, "send list marks");
  int64_t *pos = cg_malloc((size_t)pl->nparts * sizeof *pos, "send list cursors");
  int32_t *send_idx = NULL;
  if (!last || !pos) {
    cg_free(last);
    cg_free(pos);
    return CG_ERR_NOMEM;
  }
  int64_t total = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int q = 0; q < pl->nparts; q++) last[q] = -1;
    for (int64_t l = 0; l < pl->n_inner; l++)
      for (int64_t k = src->rp[l]; k < src->rp[l + 1]; k++) {
        int q = owner[src->ci[k]];
        if (q == pl->rank || last[q] == l) continue;
        last[q] = l;
        if (pass == 0) scnt[q]++;
        else send_idx[pos[q]++] = (int32_t)l;
      }
    if (pass == 0) {
      for (int q = 0; q < pl->nparts; q++) {
        pos[q] = total;
        total += scnt[q];
      }
      send_idx = cg_malloc((size_t)(total > 0 ? total : 1) * sizeof *send_idx, "send lists");
      if (!send_idx) {
        cg_free(last);
        cg_free(pos);
        return CG_ERR_NOMEM;
      }
    }
  }
  cg_free(last);
  cg_free(pos);
  *send_idx_out = send_idx;
  return CG_OK;
}

static int local_build(const struct graph *g, const struct row_src *src, const int32_t *owner,
                       int nparts, int rank, enum graph_norm kind, int self_loops,
                       struct part_local *out);

int part_local_build(const struct graph *g, const int32_t *owner, int nparts, int rank,
                     enum graph_norm kind, int self_loops, struct part_local *out) {
  if (!g || !out || !g->rowptr)
    return cg_err_set(CG_ERR_ARG, "part_local_build: graph and output must not be NULL");
  const struct row_src src = {g->rowptr, g->colidx, 0};
  return local_build(g, &src, owner, nparts, rank, kind, self_loops, out);
}

int part_local_build_rows(int64_t n, const int64_t *rowptr, const struct graph_rows *rows,
                          const int32_t *owner, int nparts, int rank, enum graph_norm kind,
                          int self_loops, struct part_local *out) {
  if (!rowptr || !rows || !out || !owner || !rows->rowptr)
    return cg_err_set(CG_ERR_ARG, "part_local_build_rows: row pointers, rows (with their CSR rows), "
                      "owners and output must not be NULL");
  struct graph dg; /* the degrees: n and the global row pointers */
  memset(&dg, 0, sizeof dg);
  dg.n = n;
  dg.m = rowptr[n];
  dg.rowptr = (int64_t *)rowptr;
  int64_t mine = 0;
  for (int64_t v = 0; v < n && nparts > 0; v++) mine += owner[v] == rank;
  if (mine != rows->nrows)
    return cg_err_set(CG_ERR_ARG, "part_local_build_rows: rank %d owns %lld vertices but was given %lld "
                      "rows", rank, (long long)mine, (long long)rows->nrows);
  const struct row_src src = {rows->rowptr, rows->colidx, 1};
  return local_build(&dg, &src, owner, nparts, rank, kind, self_loops, out);
}

static int local_build(const struct graph *g, const struct row_src *src, const int32_t *owner,
                       int nparts, int rank, enum graph_norm kind, int self_loops,
                       struct part_local *out) {
  memset(out, 0, sizeof *out);
  if (nparts < 1 || rank < 0 || rank >= nparts)
    return cg_err_set(CG_ERR_ARG, "part_local_build: rank %d is outside [0, %d)", rank, nparts);
  if (kind != GRAPH_NORM_GCN && kind != GRAPH_NORM_MEAN)
    return cg_err_set(CG_ERR_ARG, "part_local_build: unknown normalisation %d", (int)kind);
  TRY(part_owner_check(g, owner, nparts, "part_local_build"));

  int st = CG_OK;
  int64_t n = g->n;
  int32_t *lid = NULL, *send_idx = NULL;
  int64_t *hcnt = NULL, *scnt = NULL, *hcur = NULL;
  struct part_local *pl = out;
  pl->rank = rank;
  pl->nparts = nparts;
  pl->n_global = n;
  pl->norm = kind;
  pl->self_loops = self_loops ? 1 : 0;

  lid = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *lid, "global-to-local map");
  hcnt = cg_calloc((size_t)nparts, sizeof *hcnt, "halo counts per owner");
  scnt = cg_calloc((size_t)nparts, sizeof *scnt, "send counts per peer");
  hcur = cg_calloc((size_t)nparts, sizeof *hcur, "halo cursors");
  if (!lid || !hcnt || !scnt || !hcur) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  /* lid[v]: local id once known; -1 unrelated; -2 halo not yet numbered. */
  for (int64_t v = 0; v < n; v++) lid[v] = -1;
  int64_t n_inner = 0;
  for (int64_t v = 0; v < n; v++)
    if (owner[v] == rank) lid[v] = (int32_t)n_inner++;
  pl->n_inner = n_inner;
  for (int64_t v = 0; v < n; v++) {
    if (owner[v] != rank) continue;
    const int64_t r = lid[v];
    for (int64_t k = row_begin(src, v, r); k < row_end(src, v, r); k++) {
      int32_t u = src->ci[k];
      if (owner[u] != rank && lid[u] == -1) {
        lid[u] = -2;
        hcnt[owner[u]]++;
      }
    }
  }
  int64_t n_halo = 0;
  for (int q = 0; q < nparts; q++) {
    hcur[q] = n_halo;
    n_halo += hcnt[q];
  }
  pl->n_halo = n_halo;
  pl->gid = cg_malloc((size_t)(n_inner + n_halo > 0 ? n_inner + n_halo : 1) * sizeof *pl->gid,
                      "local-to-global ids");
  if (!pl->gid) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  /* Visiting vertices in increasing id fills each owner's block in increasing gid. */
  for (int64_t v = 0; v < n; v++) {
    if (lid[v] >= 0 && owner[v] == rank) pl->gid[lid[v]] = (int32_t)v;
    else if (lid[v] == -2) {
      int64_t l = n_inner + hcur[owner[v]]++;
      pl->gid[l] = (int32_t)v;
      lid[v] = (int32_t)l;
    }
  }

  if (src->by_inner)
    TRY_GOTO(send_build_own(src, owner, pl, scnt, &send_idx), fail);
  else
    TRY_GOTO(send_build(g, owner, lid, pl, scnt, &send_idx), fail);
  pl->send_idx = send_idx;
  int npeers = 0;
  for (int q = 0; q < nparts; q++)
    if (q != rank && (hcnt[q] > 0 || scnt[q] > 0)) npeers++;
  pl->npeers = npeers;
  size_t np = (size_t)(npeers > 0 ? npeers : 1);
  pl->peer = cg_malloc(np * sizeof *pl->peer, "peer ranks");
  pl->recv_offset = cg_malloc(np * sizeof(int64_t), "receive offsets");
  pl->recv_count = cg_malloc(np * sizeof(int64_t), "receive counts");
  pl->send_offset = cg_malloc(np * sizeof(int64_t), "send offsets");
  pl->send_count = cg_malloc(np * sizeof(int64_t), "send counts");
  if (!pl->peer || !pl->recv_offset || !pl->recv_count || !pl->send_offset || !pl->send_count) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  int64_t roff = 0, soff = 0;
  int i = 0;
  for (int q = 0; q < nparts; q++) {
    if (q == rank) continue;
    /* Send lists of non-peers are empty, so offsets stay contiguous either way. */
    if (hcnt[q] == 0 && scnt[q] == 0) continue;
    pl->peer[i] = q;
    pl->recv_offset[i] = roff;
    pl->recv_count[i] = hcnt[q];
    pl->send_offset[i] = soff;
    pl->send_count[i] = scnt[q];
    roff += hcnt[q];
    soff += scnt[q];
    i++;
  }
  TRY_GOTO(agg_build(g, src, lid, pl), fail);
  cg_free(lid);
  cg_free(hcnt);
  cg_free(scnt);
  cg_free(hcur);
  return CG_OK;
fail:
  cg_free(lid);
  cg_free(hcnt);
  cg_free(scnt);
  cg_free(hcur);
  part_local_free(pl);
  return st;
}
