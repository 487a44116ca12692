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

static void fwd_plan_free(struct jaca_fwd_plan *f) {
  cg_free(f->peer);
  cg_free(f->send_offset);
  cg_free(f->send_count);
  cg_free(f->recv_offset);
  cg_free(f->recv_count);
  cg_free(f->send_idx);
  cg_free(f->recv_dest);
  memset(f, 0, sizeof *f);
}

void jaca_node_plan_free(struct jaca_node_plan *p) {
  if (!p) return;
  if (p->cls)
    for (int k = 0; k < p->nclasses; k++) fwd_plan_free(&p->cls[k]);
  cg_free(p->cls);
  cg_free(p->admitted_gid);
  cg_free(p->halo_owner);
  cg_free(p->halo_node_row);
  cg_free(p->halo_class);
  cg_free(p->halo_r);
  cg_free(p->halo_infl);
  cg_free(p->write_idx);
  cg_free(p->write_row);
  cg_free(p->write_phase);
  cg_free(p->read_halo);
  cg_free(p->read_row);
  cg_free(p->read_phase);
  memset(p, 0, sizeof *p);
}

int jaca_phase(int64_t gid, int staleness) {
  if (staleness <= 0) return 0;
  uint64_t z = (uint64_t)gid + 0x9E3779B97F4A7C15ull; /* splitmix64: neighbours land apart */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (int)(z % (uint64_t)(staleness + 1));
}

uint32_t jaca_last_refresh(uint32_t g, int cls, int staleness) {
  if (g <= 1 || cls > staleness) return g; /* the first generation, and "always" rows */
  const uint32_t period = (uint32_t)staleness + 1u;
  if (g - 1u < (uint32_t)cls) return 1u; /* its phase has not come round yet */
  return g - (g - 1u - (uint32_t)cls) % period;
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

/* The per-class forward plans from the requests: sc[q * NC + k] rows this rank asked
 * owner q for in class k (its requests and their destinations packed by owner, then
 * class: req_dest), gets[q] requests from consumer q (packed by consumer in rreq, each
 * gid * NC + class, in the order q wants the rows). */
static int build_classes(struct comm *c, const struct part_local *pl, struct jaca_node_plan *p,
                         const int64_t *sc, const int64_t *gets, const int64_t *rreq, const int64_t *req_dest) {
  const int P = comm_size(c), NC = p->nclasses, me = comm_rank(c), node = comm_node(c);
  int64_t base = 0;
  for (int k = 0; k < NC; k++) {
    struct jaca_fwd_plan *f = &p->cls[k];
    int np = 0;
    int64_t nsend = 0, nrecv = 0;
    int64_t off = 0; /* in rreq: an int64_t, as the offsets below */
    for (int q = 0; q < P; q++) {
      int64_t sq = 0;
      for (int64_t j = off; j < off + gets[q]; j++) sq += rreq[j] % NC == k;
      off += gets[q];
      if (sq > 0 || sc[(int64_t)q * NC + k] > 0) np++;
      nsend += sq;
      nrecv += sc[(int64_t)q * NC + k];
    }
    const size_t nps = (size_t)(np > 0 ? np : 1);
    f->peer = cg_malloc(sizeof(int32_t) * nps, "jaca: forward peers");
    f->send_offset = cg_malloc(sizeof(int64_t) * nps, "jaca: forward plan");
    f->send_count = cg_malloc(sizeof(int64_t) * nps, "jaca: forward plan");
    f->recv_offset = cg_malloc(sizeof(int64_t) * nps, "jaca: forward plan");
    f->recv_count = cg_malloc(sizeof(int64_t) * nps, "jaca: forward plan");
    f->send_idx = cg_malloc(sizeof(int32_t) * (size_t)(nsend > 0 ? nsend : 1), "jaca: forward send list");
    f->recv_dest = cg_malloc(sizeof(int64_t) * (size_t)(nrecv > 0 ? nrecv : 1), "jaca: forward receive list");
    if (!f->peer || !f->send_offset || !f->send_count || !f->recv_offset || !f->recv_count || !f->send_idx ||
        !f->recv_dest)
      return CG_ERR_NOMEM;
    f->npeers = np;
    f->recv_base = base;
    int64_t roff = 0, qoff = 0; /* offsets in rreq (by consumer) and req_dest (by owner, class) */
    for (int q = 0, i = 0; q < P; q++) {
      int64_t sq = 0, rq = sc[(int64_t)q * NC + k];
      for (int64_t j = roff; j < roff + gets[q]; j++) {
        if (rreq[j] % NC != k) continue;
        const int64_t li = inner_of(pl->gid, pl->n_inner, rreq[j] / NC);
        if (li < 0)
          return cg_err_set(CG_ERR_INTERNAL, "jaca: rank %d asks rank %d for vertex %lld, which it does not own", q,
                            me, (long long)(rreq[j] / NC));
        f->send_idx[f->send_rows + sq++] = (int32_t)li;
      }
      roff += gets[q];
      /* my requests to q in class k: after those of classes < k to q */
      int64_t at = qoff;
      for (int kk = 0; kk < k; kk++) at += sc[(int64_t)q * NC + kk];
      for (int64_t j = 0; j < rq; j++) {
        f->recv_dest[f->recv_rows + j] = req_dest[at + j];
        f->n_received += req_dest[at + j] < 0;
      }
      for (int kk = 0; kk < NC; kk++) qoff += sc[(int64_t)q * NC + kk];
      if (sq == 0 && rq == 0) continue;
      f->peer[i] = q;
      f->send_offset[i] = f->send_rows;
      f->send_count[i] = sq;
      f->recv_offset[i] = f->recv_rows;
      f->recv_count[i] = rq;
      if (comm_node_of(c, q) == node) f->send_rows_intra += sq;
      else f->send_rows_inter += sq;
      f->send_rows += sq;
      f->recv_rows += rq;
      i++;
    }
    base += f->recv_rows;
    p->send_rows += f->send_rows;
  }
  p->recv_rows = base;
  return CG_OK;
}

/* ---- hit rates over one refresh window (node_internal.h: win_*) ---- */

struct window_in {
  int64_t U, ntot;
  int S, node;
  const int64_t *u_first, *u_owner, *u_row; /* per union vertex */
  const int64_t *seq;                       /* the node's reads of one step: union index */
  int64_t node_slots, rank_slots, kept;     /* capacities in rows; rows the rank tiers keep */
};

/* The trace: every vertex owned on the node once (its owner writes it into the tier:
 * a fill that no rank has to be sent), then S + 1 steps of the node's reads. A value
 * lives S + 1 steps, so windows are independent and one is the steady state. */
static int window_rates(struct comm *c, const struct window_in *w, struct jaca_node_plan *p) {
  const int64_t S1 = (int64_t)w->S + 1;
  int64_t nown = 0, hits = 0;
  for (int64_t u = 0; u < w->U; u++) {
    const int64_t reads = w->u_first[u + 1] - w->u_first[u];
    const int local = comm_node_of(c, (int)w->u_owner[u]) == w->node;
    nown += local;
    if (w->u_row[u] >= 0) hits += S1 * reads - (local ? 0 : 1);
  }
  p->win_reads = S1 * w->ntot;
  p->win_policy_hits = hits + (int64_t)w->S * w->kept;
  p->win_oracle_hits = -1;
  const int64_t n = nown + S1 * w->ntot;
  if (n > JACA_ORACLE_MAX_TRACE) {
    LOG_INFO("jaca", "node %d: the access trace of one refresh window has %lld entries (more than %d): no "
             "Belady MIN hit rate", w->node, (long long)n, JACA_ORACLE_MAX_TRACE);
    return CG_OK;
  }
  int64_t *tr = cg_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1), "jaca: access trace of the node");
  if (!tr) return CG_ERR_NOMEM;
  int64_t k = 0;
  for (int64_t u = 0; u < w->U; u++)
    if (comm_node_of(c, (int)w->u_owner[u]) == w->node) tr[k++] = u;
  for (int64_t s = 0; s < S1; s++)
    for (int64_t e = 0; e < w->ntot; e++) tr[k++] = w->seq[e];
  /* the writes come first and each vertex once: never a hit, so every hit is a read's */
  int st = jaca_oracle_hits(tr, n, w->U, w->node_slots + w->rank_slots, &p->win_oracle_hits);
  cg_free(tr);
  return st;
}

int jaca_node_plan_build(struct comm *c, const struct part_local *pl, const struct cg_csr *agg,
                         const struct jaca_options *o, const struct jaca_layers *layers,
                         const struct jaca_budget *b, struct jaca_node_plan *p) {
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
  /* adaptive staleness: no phases (every kept row is a candidate every step, its sender
   * decides), but the rank tier keeps direct rows as with S > 0 */
  const int S = o->adaptive ? 0 : o->staleness, NC = S + 2, ALWAYS = S + 1;
  const int keep = S > 0 || o->adaptive;
  int64_t ntot = 0, U = 0;
  int64_t rank_slots = 0; /* the rank tier's capacity in rows (0 at staleness 0) */

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
  const int64_t node_vertex_bytes = (int64_t)jaca_row_stride(layers->cols) * (layers->nlayers - 1);
  int64_t cap = (int64_t)(o->capacity * (double)U);
  if (cap > U) cap = U;
  if (b->node_avail >= 0) {
    const int64_t by_mem = jaca_capacity_rows(b->node_avail, b->node_reserve, node_vertex_bytes, U);
    if (by_mem < cap && lr == 0 && b->node_by_shm)
      LOG_WARN("jaca", "node %d: its tier holds %lld of the %lld rows asked for: %.1f MiB, three quarters of the free "
               "space in %s, which holds the node's shared memory (a container's default /dev/shm is 64 MB: "
               "docker run --shm-size=...)", node, (long long)by_mem, (long long)cap,
               (double)b->node_avail / 1048576.0, comm_shm_dir());
    else if (by_mem < cap && lr == 0)
      LOG_WARN("jaca", "node %d: its tier holds %lld of the %lld rows asked for: %.0f MiB of memory less %.0f MiB "
               "reserved (--cache-host-mb, --cache-reserve-mb)", node, (long long)by_mem, (long long)cap,
               (double)b->node_avail / 1048576.0, (double)b->node_reserve / 1048576.0);
    if (by_mem < cap) cap = by_mem;
  }
  p->node_rows_budget = cap;
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

  /* ---- this rank's part: reads, writes, and which direct rows the rank tier keeps ---- */
  p->staleness = S;
  p->adaptive = o->adaptive;
  p->nclasses = NC;
  const size_t nhs = (size_t)(nh > 0 ? nh : 1);
  p->halo_node_row = cg_malloc(sizeof(int64_t) * nhs, "jaca: node row of each halo row");
  p->halo_class = cg_malloc(sizeof(int32_t) * nhs, "jaca: refresh class of each halo row");
  p->read_halo = cg_malloc(sizeof(int64_t) * nhs, "jaca: halo rows read from the node tier");
  p->read_row = cg_malloc(sizeof(int64_t) * nhs, "jaca: node rows read");
  p->read_phase = cg_malloc(sizeof(int32_t) * nhs, "jaca: phases of the node rows read");
  p->cls = cg_calloc((size_t)NC, sizeof *p->cls, "jaca: forward plans");
  sc = cg_calloc((size_t)P * (size_t)NC, sizeof(int64_t), "jaca: request counts");
  rc = cg_calloc((size_t)P, sizeof(int64_t), "jaca: request counts");
  if (!p->halo_node_row || !p->halo_class || !p->read_halo || !p->read_row || !p->read_phase || !p->cls || !sc ||
      !rc) {
    st = CG_ERR_NOMEM;
    goto fail_agree;
  }
  {
    /* the rank tier: this rank's direct rows, through the policy's directory over its
     * reads in halo order, with this rank's priorities */
    int64_t ndc = 0;
    for (int64_t i = 0; i < nh; i++) ndc += u_row[ent_u[lr_first[lr] + i]] < 0;
    int64_t rcap = (int64_t)(o->capacity * (double)ndc);
    if (b->rank_avail >= 0) {
      /* on the host, after the node tier's share of the same memory */
      const int64_t avail = b->rank_avail - (b->rank_after_node ? cap * node_vertex_bytes : 0);
      const int64_t share = b->rank_share > 1 ? b->rank_share : 1;
      const int64_t by_mem = jaca_capacity_rows(avail / share, b->rank_reserve / share,
                                                layers->cols * (int64_t)sizeof(float) * (layers->nlayers - 1), ndc);
      if (by_mem < rcap && keep)
        LOG_WARN("jaca", "its rank tier keeps %lld of the %lld rows asked for: %.0f MiB of memory for %lld rank%s "
                 "less %.0f MiB reserved (--cache-device-mb, --cache-reserve-mb)", (long long)by_mem, (long long)rcap,
                 (double)avail / 1048576.0, (long long)share, share == 1 ? "" : "s",
                 (double)b->rank_reserve / 1048576.0);
      if (by_mem < rcap) rcap = by_mem;
    }
    int64_t *dkey = cg_malloc(sizeof(int64_t) * nhs, "jaca: rank tier candidates");
    int64_t *drank = cg_malloc(sizeof(int64_t) * nhs, "jaca: rank tier priorities");
    double *dscore = cg_malloc(sizeof(double) * nhs, "jaca: rank tier priorities");
    int64_t *dgid = cg_malloc(sizeof(int64_t) * nhs, "jaca: rank tier ids");
    int64_t *dord = cg_malloc(sizeof(int64_t) * nhs, "jaca: rank tier order");
    struct jaca_dir *rdir = NULL;
    if (!dkey || !drank || !dscore || !dgid || !dord) st = CG_ERR_NOMEM;
    int64_t nd = 0;
    for (int64_t i = 0; st == CG_OK && i < nh; i++) {
      if (u_row[ent_u[lr_first[lr] + i]] >= 0) continue;
      dkey[i] = nd;
      dscore[nd] = (double)p->halo_r[i] * p->halo_infl[i];
      dgid[nd] = pl->gid[ni + i];
      dord[nd] = nd;
      nd++;
    }
    if (st == CG_OK) {
      g_sort_score = dscore;
      g_sort_gid = dgid;
      qsort(dord, (size_t)nd, sizeof(int64_t), cmp_priority);
      for (int64_t k = 0; k < nd; k++) drank[dord[k]] = k;
      st = jaca_dir_create(keep ? o->policy : JACA_POLICY_NONE, nd, rcap, drank, &rdir);
    }
    if (st == CG_OK) rank_slots = jaca_dir_capacity(rdir);
    for (int64_t i = 0; st == CG_OK && i < nh; i++) {
      const int64_t u = ent_u[lr_first[lr] + i];
      p->halo_node_row[i] = u_row[u];
      if (u_row[u] >= 0) {
        p->halo_class[i] = jaca_phase(u_gid[u], S);
        p->read_halo[p->n_read] = i;
        p->read_row[p->n_read] = u_row[u];
        p->read_phase[p->n_read++] = p->halo_class[i];
      } else if (jaca_dir_lookup(rdir, dkey[i]) >= 0 || jaca_dir_admit(rdir, dkey[i], NULL) >= 0) {
        p->halo_class[i] = -1; /* decided once the epoch's reads are done, below */
      } else {
        p->halo_class[i] = -2;
      }
    }
    /* kept: the residents at the end of the epoch (a row admitted and evicted again is
     * not kept) */
    for (int64_t i = 0; st == CG_OK && i < nh; i++) {
      if (p->halo_node_row[i] >= 0) continue;
      const int kept = jaca_dir_peek(rdir, dkey[i]) >= 0;
      p->halo_class[i] = kept ? jaca_phase(pl->gid[ni + i], S) : ALWAYS;
      p->n_rank_cached += kept;
      sc[(int64_t)p->halo_owner[i] * NC + p->halo_class[i]]++;
    }
    jaca_dir_destroy(&rdir);
    cg_free(dkey);
    cg_free(drank);
    cg_free(dscore);
    cg_free(dgid);
    cg_free(dord);
    if (st < 0) goto fail_agree;
  }
  int64_t nwrite = 0;
  for (int64_t u = 0; u < U; u++) {
    if (u_row[u] < 0) continue;
    if (u_owner[u] == me) nwrite++;
    if (u_recv[u] == lr) sc[u_owner[u] * NC + jaca_phase(u_gid[u], S)]++;
  }
  const size_t nws = (size_t)(nwrite > 0 ? nwrite : 1);
  p->write_idx = cg_malloc(sizeof(int32_t) * nws, "jaca: rows written");
  p->write_row = cg_malloc(sizeof(int64_t) * nws, "jaca: node rows written");
  p->write_phase = cg_malloc(sizeof(int32_t) * nws, "jaca: phases of the rows written");
  int64_t nreq = 0;
  for (int64_t k = 0; k < (int64_t)P * NC; k++) nreq += sc[k];
  sreq = cg_malloc(sizeof(int64_t) * (size_t)(nreq > 0 ? nreq : 1), "jaca: requests");
  req_dest = cg_malloc(sizeof(int64_t) * (size_t)(nreq > 0 ? nreq : 1), "jaca: request destinations");
  if (!p->write_idx || !p->write_row || !p->write_phase || !sreq || !req_dest) {
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
    p->write_row[p->n_write] = u_row[u];
    p->write_phase[p->n_write++] = jaca_phase(u_gid[u], S);
  }
  /* requests, packed by owner, then class: in a class, the direct rows in halo order,
   * then the rows received for the node by increasing global id; each travels as
   * gid * NC + class */
  {
    int64_t *fill = cg_malloc(sizeof(int64_t) * (size_t)P * (size_t)NC, "jaca: request offsets");
    if (!fill) {
      st = CG_ERR_NOMEM;
      goto fail_agree;
    }
    int64_t off = 0;
    for (int64_t k = 0; k < (int64_t)P * NC; k++) {
      fill[k] = off;
      off += sc[k];
    }
    for (int64_t i = 0; i < nh; i++)
      if (p->halo_node_row[i] < 0) {
        const int64_t k = fill[(int64_t)p->halo_owner[i] * NC + p->halo_class[i]]++;
        sreq[k] = (int64_t)pl->gid[ni + i] * NC + p->halo_class[i];
        req_dest[k] = i;
        p->n_direct++;
      }
    for (int64_t u = 0; u < U; u++)
      if (u_row[u] >= 0 && u_recv[u] == lr) {
        const int cl = jaca_phase(u_gid[u], S);
        const int64_t k = fill[u_owner[u] * NC + cl]++;
        sreq[k] = u_gid[u] * NC + cl;
        req_dest[k] = -1 - u_row[u];
        p->n_received++;
      }
    cg_free(fill);
    for (int q = 0; q < P; q++)
      for (int k = 0; k < NC; k++) rc[q] += sc[(int64_t)q * NC + k]; /* per owner, for the all-to-all */
  }
fail_agree:
  st = comm_agree(c, st, "jaca: the node tier's plan");
  if (st < 0) goto fail;
  {
    /* counts per rank: what this rank asks each owner for (rc, reused), and what each
     * consumer asks of this rank (gets) */
    int64_t *gets = cg_calloc((size_t)P, sizeof(int64_t), "jaca: requests per consumer");
    st = comm_agree(c, gets ? CG_OK : CG_ERR_NOMEM, "jaca: requests");
    if (st < 0) { /* (another rank's failure: this rank's array is freed too) */
      cg_free(gets);
      goto fail;
    }
    st = comm_alltoall_i64(c, rc, gets);
    int64_t nsend = 0;
    for (int q = 0; st == CG_OK && q < P; q++) nsend += gets[q];
    if (st == CG_OK) {
      rreq = cg_malloc(sizeof(int64_t) * (size_t)(nsend > 0 ? nsend : 1), "jaca: requests received");
      if (!rreq) st = CG_ERR_NOMEM;
    }
    st = comm_agree(c, st, "jaca: requests");
    if (st == CG_OK) st = comm_alltoallv_i64(c, sreq, rc, rreq, gets);
    if (st == CG_OK) st = build_classes(c, pl, p, sc, gets, rreq, req_dest);
    cg_free(gets);
    st = comm_agree(c, st, "jaca: the forward plans");
    if (st < 0) goto fail;
  }
  st = jaca_node_plan_check(p, pl);
  TRY_GOTO(comm_agree(c, st, "jaca: checking the node tier's plan"), fail);
  {
    /* the node's hit rates over one refresh window (local rank 0 of each node) */
    int64_t *slots = cg_malloc(sizeof(int64_t) * 2 * (size_t)L, "jaca: rank tiers of the node");
    st = comm_agree(c, slots ? CG_OK : CG_ERR_NOMEM, "jaca: the node's hit rates");
    if (st < 0) { /* (another rank's failure: this rank's array is freed too) */
      cg_free(slots);
      goto fail;
    }
    st = comm_node_allgather_i64(c, rank_slots, slots);
    if (st == CG_OK) st = comm_node_allgather_i64(c, p->n_rank_cached, slots + L);
    if (st == CG_OK && lr == 0) {
      struct window_in w = {U, ntot, S, node, u_first, u_owner, u_row, seq, jaca_dir_capacity(dir), 0, 0};
      for (int r = 0; r < L; r++) {
        w.rank_slots += slots[r];
        w.kept += slots[L + r];
      }
      st = window_rates(c, &w, p);
    }
    cg_free(slots);
    TRY_GOTO(comm_agree(c, st, "jaca: the node's hit rates"), fail);
  }
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
  const int S = p->staleness;
  if (p->n_inner != ni || p->n_halo != nh)
    return cg_err_set(CG_ERR_INTERNAL, "jaca plan: %lld + %lld rows, the local graph has %lld + %lld",
                      (long long)p->n_inner, (long long)p->n_halo, (long long)ni, (long long)nh);
  if (p->nclasses != S + 2 || !p->cls)
    return cg_err_set(CG_ERR_INTERNAL, "jaca plan: %d refresh classes for staleness %d", p->nclasses, S);
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
        p->halo_node_row[i] != r || p->read_phase[k] != jaca_phase(pl->gid[ni + i], S) ||
        p->halo_class[i] != p->read_phase[k] || seen[i]++)
      st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: node read %lld (halo row %lld, node row %lld) is wrong",
                      (long long)k, (long long)i, (long long)r);
    nread++;
  }
  int64_t base = 0, ndirect = 0, nrecv = 0, ncached = 0, nsend = 0;
  for (int c = 0; c < p->nclasses && st == CG_OK; c++) {
    const struct jaca_fwd_plan *f = &p->cls[c];
    if (f->recv_base != base)
      st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: class %d's rows start at %lld, not %lld", c,
                      (long long)f->recv_base, (long long)base);
    int64_t off = 0, soff = 0;
    for (int k = 0; k < f->npeers && st == CG_OK; k++) {
      if (f->recv_offset[k] != off || f->send_offset[k] != soff || (k > 0 && f->peer[k] <= f->peer[k - 1]))
        st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: class %d's blocks not packed in peer order at peer %d", c,
                        f->peer[k]);
      for (int64_t j = off; j < off + f->recv_count[k] && st == CG_OK; j++) {
        const int64_t d = f->recv_dest[j];
        if (d >= 0) {
          if (d >= nh || seen[d]++ || p->halo_owner[d] != f->peer[k] || p->halo_node_row[d] >= 0 ||
              p->halo_class[d] != c ||
              (c <= S && c != jaca_phase(pl->gid[ni + d], S)))
            st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: class %d's received row %lld goes to halo row %lld wrongly",
                            c, (long long)j, (long long)d);
          ndirect++;
          ncached += c <= S;
        } else {
          if (-1 - d >= p->n_admitted || c > S || jaca_phase(p->admitted_gid[-1 - d], S) != c)
            st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: class %d's received row %lld goes to node row %lld of %lld",
                            c, (long long)j, (long long)(-1 - d), (long long)p->n_admitted);
          nrecv++;
        }
      }
      for (int64_t j = soff; j < soff + f->send_count[k] && st == CG_OK; j++)
        if (f->send_idx[j] < 0 || f->send_idx[j] >= ni)
          st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: class %d's send_idx[%lld] = %d is not an inner row", c,
                          (long long)j, f->send_idx[j]);
      off += f->recv_count[k];
      soff += f->send_count[k];
    }
    if (st == CG_OK && (off != f->recv_rows || soff != f->send_rows ||
                        f->send_rows_intra + f->send_rows_inter != f->send_rows))
      st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: class %d's counts disagree", c);
    base += f->recv_rows;
    nsend += f->send_rows;
  }
  for (int64_t i = 0; i < nh && st == CG_OK; i++)
    if (seen[i] != 1) st = cg_err_set(CG_ERR_INTERNAL, "jaca plan: halo row %lld is filled %d times", (long long)i, seen[i]);
  cg_free(seen);
  TRY(st);
  if (base != p->recv_rows || nsend != p->send_rows || ndirect != p->n_direct || nrecv != p->n_received ||
      nread != p->n_read || p->n_direct + p->n_read != nh || ncached != p->n_rank_cached ||
      (S == 0 && !p->adaptive && ncached != 0))
    return cg_err_set(CG_ERR_INTERNAL,
                      "jaca plan: counts disagree (%lld received, %lld direct, %lld kept, %lld for the node, %lld read)",
                      (long long)p->recv_rows, (long long)p->n_direct, (long long)p->n_rank_cached,
                      (long long)p->n_received, (long long)p->n_read);
  for (int64_t k = 0; k < p->n_write; k++)
    if (p->write_idx[k] < 0 || p->write_idx[k] >= ni || p->write_row[k] < 0 || p->write_row[k] >= p->n_admitted ||
        p->admitted_gid[p->write_row[k]] != pl->gid[p->write_idx[k]] ||
        p->write_phase[k] != jaca_phase(pl->gid[p->write_idx[k]], S))
      return cg_err_set(CG_ERR_INTERNAL, "jaca plan: write %lld (inner row %d to node row %lld) is wrong",
                        (long long)k, p->write_idx[k], (long long)p->write_row[k]);
  return CG_OK;
}
