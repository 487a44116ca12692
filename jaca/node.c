/* jaca/node.c — the node tier's plan (node_internal.h), built at set-up.
 *
 * Design notes (the why):
 * - Every rank of a node gathers the node's halo lists (global id, owner, R, influence)
 *   and derives the same union, priorities, admitted set, node rows and receivers on
 *   its own: no rank decides for the others, so nothing but that one gather has to be
 *   sent, and the result cannot differ between ranks of a node (the inputs and the
 *   arithmetic are the same; sums of influence run in local-rank order everywhere).
 * - Receivers are spread over the ranks needing a row (gid mod k), so that one rank
 *   does not write every remote row of its node; a receiver always needs the row
 *   itself, so no rank receives rows it has no use for.
 * - Requests travel as global ids and the owner maps them to its local ids: the owner
 *   builds its send lists from what consumers ask for, so a mismatch between the two
 *   sides' views is impossible by construction (and part_local_check has already
 *   proved that owners and consumers agree on every halo vertex).
 * - Set-up exchanges use comm_alltoallv_i64 over the world: a one-off cost of a few
 *   integers per halo row. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "jaca/node_internal.h"
#include "jaca/policy_internal.h"
#include "jaca/seqlock_internal.h"

#define ENTRY_WORDS 4 /* gid, owner, R, influence bits */

void jaca_node_plan_free(struct jaca_node_plan *p) {
  if (!p) return;
  cg_free(p->admitted_gid);
  cg_free(p->halo_owner);
  cg_free(p->halo_node_row);
  cg_free(p->halo_r);
  cg_free(p->halo_infl);
  cg_free(p->peer);
  cg_free(p->send_offset);
  cg_free(p->send_count);
  cg_free(p->recv_offset);
  cg_free(p->recv_count);
  cg_free(p->send_idx);
  cg_free(p->recv_dest);
  cg_free(p->write_idx);
  cg_free(p->write_row);
  cg_free(p->read_halo);
  cg_free(p->read_row);
  memset(p, 0, sizeof *p);
}

int64_t jaca_node_rows_for_mb(int64_t mb, const struct jaca_layers *layers) {
  const int64_t per_vertex = (int64_t)jaca_row_stride(layers->cols) * (layers->nlayers - 1);
  if (mb <= 0 || per_vertex <= 0) return 0;
  return (int64_t)((double)mb * 1048576.0 / (double)per_vertex);
}

/* Local id of global id g among the inner rows (gid[0..n) increasing), -1 if absent. */
static int64_t inner_of(const int32_t *gid, int64_t n, int64_t g) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (gid[mid] < g) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && gid[lo] == g ? lo : -1;
}

/* ---- sorting helpers (qsort with a file-level context: set-up only, one thread) ---- */

static const int64_t *g_sort_all; /* node entries, ENTRY_WORDS each */
static const double *g_sort_score;
static const int64_t *g_sort_gid;

static int cmp_entry_gid(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  const int64_t gx = g_sort_all[x * ENTRY_WORDS], gy = g_sort_all[y * ENTRY_WORDS];
  if (gx != gy) return gx < gy ? -1 : 1;
  return x < y ? -1 : x > y; /* entries of lower local ranks first */
}

/* ascending priority: lower score first, and among equal scores the higher gid first
 * (so the lower gid ranks higher) */
static int cmp_priority(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  if (g_sort_score[x] != g_sort_score[y]) return g_sort_score[x] < g_sort_score[y] ? -1 : 1;
  return g_sort_gid[x] > g_sort_gid[y] ? -1 : g_sort_gid[x] < g_sort_gid[y];
}

/* ---- the plan ---- */

/* owner, R and influence of this rank's halo rows */
static int halo_facts(struct comm *c, const struct part_local *pl, const struct cg_csr *agg,
                      struct jaca_node_plan *p) {
  int st = CG_OK;
  const int P = comm_size(c);
  const int64_t nh = pl->n_halo, ni = pl->n_inner;
  const size_t nhs = (size_t)(nh > 0 ? nh : 1);
  int64_t *cnt = NULL, *sbuf = NULL, *rbuf = NULL, *sc = NULL;
  p->halo_owner = cg_malloc(nhs * sizeof(int32_t), "jaca: owner of each halo row");
  p->halo_r = cg_malloc(nhs * sizeof(int32_t), "jaca: overlap ratio of each halo row");
  p->halo_infl = cg_calloc(nhs, sizeof(double), "jaca: influence of each halo row");
  cnt = cg_calloc((size_t)(ni > 0 ? ni : 1), sizeof(int64_t), "jaca: overlap counts");
  sc = cg_calloc((size_t)P * 2, sizeof(int64_t), "jaca: counts");
  int64_t sends = 0;
  for (int k = 0; k < pl->npeers; k++) sends += pl->send_count[k];
  sbuf = cg_malloc((size_t)(sends > 0 ? sends : 1) * sizeof(int64_t), "jaca: overlap ratios sent");
  rbuf = cg_malloc(nhs * sizeof(int64_t), "jaca: overlap ratios received");
  if (!p->halo_owner || !p->halo_r || !p->halo_infl || !cnt || !sc || !sbuf || !rbuf) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  int64_t covered = 0;
  for (int k = 0; k < pl->npeers; k++) {
    for (int64_t i = pl->recv_offset[k]; i < pl->recv_offset[k] + pl->recv_count[k]; i++)
      p->halo_owner[i] = pl->peer[k];
    covered += pl->recv_count[k];
  }
  if (covered != nh) {
    st = cg_err_set(CG_ERR_INTERNAL, "jaca: the receive blocks cover %lld of %lld halo rows",
                    (long long)covered, (long long)nh);
    goto done;
  }
  /* R(v) of the rows this rank owns: how many peers' send lists hold v */
  for (int64_t k = 0; k < sends; k++) cnt[pl->send_idx[k]]++;
  for (int64_t k = 0; k < sends; k++) sbuf[k] = cnt[pl->send_idx[k]];
  for (int k = 0; k < pl->npeers; k++) {
    sc[pl->peer[k]] = pl->send_count[k];
    sc[P + pl->peer[k]] = pl->recv_count[k];
  }
  /* influence: the weights of each halo column of this rank's operator */
  for (int64_t r = 0; r < agg->nrows; r++)
    for (int64_t e = agg->rowptr[r]; e < agg->rowptr[r + 1]; e++) {
      const int64_t col = agg->colidx[e];
      if (col >= ni && col < ni + nh) p->halo_infl[col - ni] += agg->vals ? fabs((double)agg->vals[e]) : 1.0;
    }
done:
  st = comm_agree(c, st, "jaca: the halo rows' owners and influence");
  /* the owners' counts reach the consumers in halo order: receive blocks are packed in
   * peer order, which is the rank order of the all-to-all */
  if (st == CG_OK) st = comm_alltoallv_i64(c, sbuf, sc, rbuf, sc + P);
  if (st == CG_OK)
    for (int64_t i = 0; i < nh; i++) p->halo_r[i] = (int32_t)rbuf[i];
  cg_free(cnt);
  cg_free(sbuf);
  cg_free(rbuf);
  cg_free(sc);
  return st;
}

int jaca_node_plan_build(struct comm *c, const struct part_local *pl, const struct cg_csr *agg,
                         const struct jaca_options *o, const struct jaca_layers *layers,
                         struct jaca_node_plan *p) {
  int st = CG_OK;
  memset(p, 0, sizeof *p);
  const int P = comm_size(c), me = comm_rank(c);
  const int L = comm_local_size(c), lr = comm_local_rank(c), node = comm_node(c);
  const int64_t nh = pl->n_halo, ni = pl->n_inner;
  p->node = node;
  p->nnodes = comm_nnodes(c);
  p->local_rank = lr;
  p->local_size = L;
  p->n_inner = ni;
  p->n_halo = nh;

  int64_t *cnts = NULL, *mine = NULL, *all = NULL, *order = NULL, *ent_u = NULL;
  int64_t *u_first = NULL, *u_gid = NULL, *u_owner = NULL, *u_rank = NULL, *u_row = NULL,
          *u_recv = NULL, *prio_order = NULL, *seq = NULL;
  double *u_score = NULL;
  int64_t *lr_first = NULL;
  int64_t *sc = NULL, *rc = NULL, *sreq = NULL, *rreq = NULL, *req_dest = NULL;
  struct jaca_dir *dir = NULL;

  TRY_GOTO(halo_facts(c, pl, agg, p), fail);

  /* ---- the node's halo lists ---- */
  cnts = cg_malloc(sizeof(int64_t) * (size_t)L, "jaca: node halo counts");
  lr_first = cg_malloc(sizeof(int64_t) * (size_t)(L + 1), "jaca: node halo offsets");
  mine = cg_malloc(sizeof(int64_t) * (size_t)(nh > 0 ? nh : 1) * ENTRY_WORDS, "jaca: halo entries");
  if (!cnts || !lr_first || !mine) st = CG_ERR_NOMEM;
  TRY_GOTO(comm_agree(c, st, "jaca: node halo lists"), fail);
  for (int64_t i = 0; i < nh; i++) {
    int64_t *e = mine + i * ENTRY_WORDS;
    e[0] = pl->gid[ni + i];
    e[1] = p->halo_owner[i];
    e[2] = p->halo_r[i];
    memcpy(&e[3], &p->halo_infl[i], sizeof(double));
  }
  st = comm_node_allgather_i64(c, nh * ENTRY_WORDS, cnts);
  int64_t ntot = 0;
  if (st == CG_OK) {
    lr_first[0] = 0;
    for (int l = 0; l < L; l++) lr_first[l + 1] = lr_first[l] + cnts[l] / ENTRY_WORDS;
    ntot = lr_first[L];
    all = cg_malloc(sizeof(int64_t) * (size_t)(ntot > 0 ? ntot : 1) * ENTRY_WORDS, "jaca: node halo entries");
    if (!all) st = CG_ERR_NOMEM;
  }
  TRY_GOTO(comm_agree(c, st, "jaca: node halo lists"), fail);
  TRY_GOTO(comm_node_allgatherv_i64(c, mine, nh * ENTRY_WORDS, all), fail_agree);

  /* ---- the union, by increasing global id ---- */
  order = cg_malloc(sizeof(int64_t) * (size_t)(ntot > 0 ? ntot : 1), "jaca: node halo order");
  ent_u = cg_malloc(sizeof(int64_t) * (size_t)(ntot > 0 ? ntot : 1), "jaca: node halo union index");
  if (!order || !ent_u) {
    st = CG_ERR_NOMEM;
    goto fail_agree;
  }
  for (int64_t e = 0; e < ntot; e++) order[e] = e;
  g_sort_all = all;
  qsort(order, (size_t)ntot, sizeof(int64_t), cmp_entry_gid);
  int64_t U = 0;
  for (int64_t k = 0; k < ntot; k++) {
    if (k == 0 || all[order[k] * ENTRY_WORDS] != all[order[k - 1] * ENTRY_WORDS]) U++;
    ent_u[order[k]] = U - 1;
  }
  p->n_union = U;
  const size_t us = (size_t)(U > 0 ? U : 1);
  u_first = cg_malloc(sizeof(int64_t) * (us + 1), "jaca: node halo needers");
  u_gid = cg_malloc(sizeof(int64_t) * us, "jaca: node halo ids");
  u_owner = cg_malloc(sizeof(int64_t) * us, "jaca: node halo owners");
  u_score = cg_calloc(us, sizeof(double), "jaca: node halo priorities");
  u_rank = cg_malloc(sizeof(int64_t) * us, "jaca: node halo priority order");
  u_row = cg_malloc(sizeof(int64_t) * us, "jaca: node rows");
  u_recv = cg_malloc(sizeof(int64_t) * us, "jaca: node receivers");
  prio_order = cg_malloc(sizeof(int64_t) * us, "jaca: node halo priority order");
  seq = cg_malloc(sizeof(int64_t) * (size_t)(ntot > 0 ? ntot : 1), "jaca: node read sequence");
  if (!u_first || !u_gid || !u_owner || !u_score || !u_rank || !u_row || !u_recv || !prio_order || !seq) {
    st = CG_ERR_NOMEM;
    goto fail_agree;
  }
  /* per vertex: its entries are order[u_first[u] .. u_first[u+1]), by local rank */
  for (int64_t k = 0, u = -1; k < ntot; k++) {
    const int64_t e = order[k];
    if (ent_u[e] != u) {
      u = ent_u[e];
      u_first[u] = k;
      u_gid[u] = all[e * ENTRY_WORDS];
      u_owner[u] = all[e * ENTRY_WORDS + 1];
    }
    double infl;
    memcpy(&infl, &all[e * ENTRY_WORDS + 3], sizeof infl);
    u_score[u] += infl; /* in local-rank order: the same sum on every rank of the node */
  }
  u_first[U] = ntot;
  for (int64_t u = 0; u < U; u++) {
    const int64_t e = order[u_first[u]];
    u_score[u] *= (double)all[e * ENTRY_WORDS + 2]; /* R(v): the same in every entry */
    prio_order[u] = u;
  }
  g_sort_score = u_score;
  g_sort_gid = u_gid;
  qsort(prio_order, (size_t)U, sizeof(int64_t), cmp_priority);
  for (int64_t k = 0; k < U; k++) u_rank[prio_order[k]] = k;

  /* ---- admission: the policy's directory over one epoch of the node's reads ---- */
  int64_t cap = (int64_t)(o->capacity * (double)U);
  if (cap > U) cap = U;
  if (o->host_mb > 0) {
    const int64_t by_mb = jaca_node_rows_for_mb(o->host_mb, layers);
    if (by_mb < cap) cap = by_mb;
  }
  st = jaca_dir_create(o->policy, U, cap, u_rank, &dir);
  if (st < 0) goto fail_agree;
  for (int64_t e = 0; e < ntot; e++) {
    seq[e] = ent_u[e]; /* entries are in local-rank order, each rank's in halo order */
    if (jaca_dir_lookup(dir, seq[e]) < 0) jaca_dir_admit(dir, seq[e], NULL);
  }
  int64_t A = 0;
  for (int64_t u = 0; u < U; u++) u_row[u] = jaca_dir_peek(dir, u) >= 0 ? A++ : -1;
  p->n_admitted = A;
  p->admitted_gid = cg_malloc(sizeof(int32_t) * (size_t)(A > 0 ? A : 1), "jaca: admitted rows");
  if (!p->admitted_gid) {
    st = CG_ERR_NOMEM;
    goto fail_agree;
  }
  for (int64_t u = 0; u < U; u++) {
    if (u_row[u] >= 0) p->admitted_gid[u_row[u]] = (int32_t)u_gid[u];
    u_recv[u] = -1;
    if (u_row[u] < 0 || comm_node_of(c, (int)u_owner[u]) == node) continue;
    const int64_t k = u_first[u + 1] - u_first[u];
    const int64_t e = order[u_first[u] + u_gid[u] % k];
    int l = 0;
    while (e >= lr_first[l + 1]) l++;
    u_recv[u] = l;
  }

  /* ---- this rank's part: reads, writes, requests ---- */
  const size_t nhs = (size_t)(nh > 0 ? nh : 1);
  p->halo_node_row = cg_malloc(sizeof(int64_t) * nhs, "jaca: node row of each halo row");
  p->read_halo = cg_malloc(sizeof(int64_t) * nhs, "jaca: halo rows read from the node tier");
  p->read_row = cg_malloc(sizeof(int64_t) * nhs, "jaca: node rows read");
  sc = cg_calloc((size_t)P, sizeof(int64_t), "jaca: request counts");
  rc = cg_calloc((size_t)P, sizeof(int64_t), "jaca: request counts");
  if (!p->halo_node_row || !p->read_halo || !p->read_row || !sc || !rc) {
    st = CG_ERR_NOMEM;
    goto fail_agree;
  }
  for (int64_t i = 0; i < nh; i++) {
    const int64_t u = ent_u[lr_first[lr] + i];
    p->halo_node_row[i] = u_row[u];
    if (u_row[u] >= 0) {
      p->read_halo[p->n_read] = i;
      p->read_row[p->n_read++] = u_row[u];
    } else {
      sc[p->halo_owner[i]]++; /* direct */
    }
  }
  int64_t nwrite = 0;
  for (int64_t u = 0; u < U; u++) {
    if (u_row[u] < 0) continue;
    if (u_owner[u] == me) nwrite++;
    if (u_recv[u] == lr) sc[u_owner[u]]++;
  }
  p->write_idx = cg_malloc(sizeof(int32_t) * (size_t)(nwrite > 0 ? nwrite : 1), "jaca: rows written");
  p->write_row = cg_malloc(sizeof(int64_t) * (size_t)(nwrite > 0 ? nwrite : 1), "jaca: node rows written");
  int64_t nreq = 0;
  for (int q = 0; q < P; q++) nreq += sc[q];
  sreq = cg_malloc(sizeof(int64_t) * (size_t)(nreq > 0 ? nreq : 1), "jaca: requests");
  req_dest = cg_malloc(sizeof(int64_t) * (size_t)(nreq > 0 ? nreq : 1), "jaca: request destinations");
  if (!p->write_idx || !p->write_row || !sreq || !req_dest) {
    st = CG_ERR_NOMEM;
    goto fail_agree;
  }
  for (int64_t u = 0; u < U; u++) {
    if (u_row[u] < 0 || u_owner[u] != me) continue;
    const int64_t li = inner_of(pl->gid, ni, u_gid[u]);
    if (li < 0) {
      st = cg_err_set(CG_ERR_INTERNAL, "jaca: vertex %lld is owned by rank %d but not among its inner rows",
                      (long long)u_gid[u], me);
      goto fail_agree;
    }
    p->write_idx[p->n_write] = (int32_t)li;
    p->write_row[p->n_write++] = u_row[u];
  }
  /* requests per owner, packed in rank order: direct rows in halo order, then the rows
   * received for the node by increasing global id */
  {
    int64_t *fill = cg_malloc(sizeof(int64_t) * (size_t)P, "jaca: request offsets");
    if (!fill) {
      st = CG_ERR_NOMEM;
      goto fail_agree;
    }
    for (int q = 0, off = 0; q < P; q++) {
      fill[q] = off;
      off += (int)sc[q];
    }
    for (int64_t i = 0; i < nh; i++)
      if (p->halo_node_row[i] < 0) {
        const int64_t k = fill[p->halo_owner[i]]++;
        sreq[k] = pl->gid[ni + i];
        req_dest[k] = i;
        p->n_direct++;
      }
    for (int64_t u = 0; u < U; u++)
      if (u_row[u] >= 0 && u_recv[u] == lr) {
        const int64_t k = fill[u_owner[u]]++;
        sreq[k] = u_gid[u];
        req_dest[k] = -1 - u_row[u];
        p->n_received++;
      }
    cg_free(fill);
  }
fail_agree:
  st = comm_agree(c, st, "jaca: the node tier's plan");
  if (st < 0) goto fail;
  TRY_GOTO(comm_alltoall_i64(c, sc, rc), fail);
  int64_t nsend = 0;
  for (int q = 0; q < P; q++) nsend += rc[q];
  rreq = cg_malloc(sizeof(int64_t) * (size_t)(nsend > 0 ? nsend : 1), "jaca: requests received");
  st = rreq ? CG_OK : CG_ERR_NOMEM;
  TRY_GOTO(comm_agree(c, st, "jaca: requests"), fail);
  TRY_GOTO(comm_alltoallv_i64(c, sreq, sc, rreq, rc), fail);

  /* ---- the forward exchange's plan ---- */
  int npeers = 0;
  for (int q = 0; q < P; q++)
    if (sc[q] > 0 || rc[q] > 0) npeers++;
  const size_t np = (size_t)(npeers > 0 ? npeers : 1);
  p->peer = cg_malloc(sizeof(int32_t) * np, "jaca: forward peers");
  p->send_offset = cg_malloc(sizeof(int64_t) * np, "jaca: forward plan");
  p->send_count = cg_malloc(sizeof(int64_t) * np, "jaca: forward plan");
  p->recv_offset = cg_malloc(sizeof(int64_t) * np, "jaca: forward plan");
  p->recv_count = cg_malloc(sizeof(int64_t) * np, "jaca: forward plan");
  p->send_idx = cg_malloc(sizeof(int32_t) * (size_t)(nsend > 0 ? nsend : 1), "jaca: forward send list");
  p->recv_dest = req_dest;
  req_dest = NULL;
  if (!p->peer || !p->send_offset || !p->send_count || !p->recv_offset || !p->recv_count || !p->send_idx) {
    st = CG_ERR_NOMEM;
    goto agree_last;
  }
  p->npeers = npeers;
  for (int q = 0, k = 0; q < P; q++) {
    if (sc[q] == 0 && rc[q] == 0) continue;
    p->peer[k] = q;
    p->send_offset[k] = p->send_rows;
    p->send_count[k] = rc[q];
    p->recv_offset[k] = p->recv_rows;
    p->recv_count[k] = sc[q];
    for (int64_t j = 0; j < rc[q]; j++) {
      const int64_t g = rreq[p->send_rows + j];
      const int64_t li = inner_of(pl->gid, ni, g);
      if (li < 0 && st == CG_OK)
        st = cg_err_set(CG_ERR_INTERNAL, "jaca: rank %d asks rank %d for vertex %lld, which it does not own",
                        q, me, (long long)g);
      p->send_idx[p->send_rows + j] = (int32_t)(li < 0 ? 0 : li);
    }
    if (comm_node_of(c, q) == node) p->send_rows_intra += rc[q];
    else p->send_rows_inter += rc[q];
    p->send_rows += rc[q];
    p->recv_rows += sc[q];
    k++;
  }
agree_last:
  st = comm_agree(c, st, "jaca: the forward plan");
  if (st < 0) goto fail;
  st = jaca_node_plan_check(p, pl);
  TRY_GOTO(comm_agree(c, st, "jaca: checking the node tier's plan"), fail);
  goto done;
fail:
  jaca_node_plan_free(p);
done:
  jaca_dir_destroy(&dir);
  cg_free(cnts);
  cg_free(lr_first);
  cg_free(mine);
  cg_free(all);
  cg_free(order);
  cg_free(ent_u);
  cg_free(u_first);
  cg_free(u_gid);
  cg_free(u_owner);
  cg_free(u_score);
  cg_free(u_rank);
  cg_free(u_row);
  cg_free(u_recv);
  cg_free(prio_order);
  cg_free(seq);
  cg_free(sc);
  cg_free(rc);
  cg_free(sreq);
  cg_free(rreq);
  cg_free(req_dest);
  return st;
}

int jaca_node_plan_check(const struct jaca_node_plan *p, const struct part_local *pl) {
  const int64_t ni = pl->n_inner, nh = pl->n_halo;
  if (p->n_inner != ni || p->n_halo != nh)
    return cg_err_set(CG_ERR_INTERNAL, "jaca plan: %lld + %lld rows, the local graph has %lld + %lld",
                      (long long)p->n_inner, (long long)p->n_halo, (long long)ni, (long long)nh);
  for (int64_t r = 1; r < p->n_admitted; r++)
    if (p->admitted_gid[r] <= p->admitted_gid[r - 1])
      return cg_err_set(CG_ERR_INTERNAL, "jaca plan: node rows not by increasing global id at %lld",
                        (long long)r);
  /* each halo row: read from the tier at the row of its gid, or received once */
  unsigned char *seen = cg_calloc((size_t)(nh > 0 ? nh : 1), 1, "jaca plan check");
  if (!seen) return CG_ERR_NOMEM;
  int st = CG_OK;
  int64_t nread = 0;
  for (int64_t k = 0; k < p->n_read && st == CG_OK; k++) {
    const int64_t i = p->read_halo[k], r = p->read_row[k];
    if (i < 0 || i >= nh || r < 0 || r >= p->n_admitted || p->admitted_gid[r] != pl->gid[ni + i] ||
        p->halo_node_row[i] != r || seen[i]++)
      st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: node read %lld (halo row %lld, node row %lld) is wrong",
                      (long long)k, (long long)i, (long long)r);
    nread++;
  }
  int64_t off = 0, ndirect = 0, nrecv = 0;
  for (int k = 0; k < p->npeers && st == CG_OK; k++) {
    if (p->recv_offset[k] != off || (k > 0 && p->peer[k] <= p->peer[k - 1]))
      st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: receive blocks not packed in peer order at peer %d",
                      p->peer[k]);
    for (int64_t j = off; j < off + p->recv_count[k] && st == CG_OK; j++) {
      const int64_t d = p->recv_dest[j];
      if (d >= 0) {
        if (d >= nh || seen[d]++ || p->halo_owner[d] != p->peer[k] || p->halo_node_row[d] >= 0)
          st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: received row %lld goes to halo row %lld wrongly",
                          (long long)j, (long long)d);
        ndirect++;
      } else {
        if (-1 - d >= p->n_admitted)
          st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: received row %lld goes to node row %lld of %lld",
                          (long long)j, (long long)(-1 - d), (long long)p->n_admitted);
        nrecv++;
      }
    }
    off += p->recv_count[k];
  }
  for (int64_t i = 0; i < nh && st == CG_OK; i++)
    if (seen[i] != 1) st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: halo row %lld is filled %d times", (long long)i, seen[i]);
  cg_free(seen);
  TRY(st);
  if (off != p->recv_rows || ndirect != p->n_direct || nrecv != p->n_received || nread != p->n_read ||
      p->n_direct + p->n_read != nh)
    return cg_err_set(CG_ERR_INTERNAL, "jaca plan: counts disagree (%lld received, %lld direct, %lld for the node, %lld read)",
                      (long long)p->recv_rows, (long long)p->n_direct, (long long)p->n_received,
                      (long long)p->n_read);
  for (int64_t k = 0; k < p->send_rows; k++)
    if (p->send_idx[k] < 0 || p->send_idx[k] >= ni)
      return cg_err_set(CG_ERR_INTERNAL, "jaca plan: send_idx[%lld] = %d is not an inner row", (long long)k,
                        p->send_idx[k]);
  for (int64_t k = 0; k < p->n_write; k++)
    if (p->write_idx[k] < 0 || p->write_idx[k] >= ni || p->write_row[k] < 0 || p->write_row[k] >= p->n_admitted ||
        p->admitted_gid[p->write_row[k]] != pl->gid[p->write_idx[k]])
      return cg_err_set(CG_ERR_INTERNAL, "jaca plan: write %lld (inner row %d to node row %lld) is wrong",
                        (long long)k, p->write_idx[k], (long long)p->write_row[k]);
  return CG_OK;
}
