/* mpi/tests/halo_fixture.c — see halo_fixture.h. */
#include "halo_fixture.h"

#include <string.h>

#include "core/status.h"
#include "mpi_test.h"

int fx_graph_make(struct fx_graph *g, int nranks, const struct fx_opts *o) {
  memset(g, 0, sizeof *g);
  struct mt_rng rng = {o->seed};
  g->nranks = nranks;
  g->n = o->n;
  g->m = o->n * o->avg_deg;
  g->src = cg_calloc((size_t)(g->m + 1), sizeof(int64_t), "fixture edges");
  g->dst = cg_calloc((size_t)(g->m + 1), sizeof(int64_t), "fixture edges");
  g->owner = cg_calloc((size_t)(g->n + 1), sizeof(int32_t), "fixture owners");
  if (!g->src || !g->dst || !g->owner) return CG_ERR_NOMEM;
  int owners = (o->last_rank_empty && nranks > 1) ? nranks - 1 : nranks;
  for (int64_t v = 0; v < g->n; v++) g->owner[v] = (int32_t)mt_int(&rng, owners);
  for (int64_t e = 0; e < g->m; e++) { /* duplicates are fine; self loops are skipped */
    g->src[e] = mt_int(&rng, g->n);
    g->dst[e] = mt_int(&rng, g->n);
  }
  return CG_OK;
}

void fx_graph_free(struct fx_graph *g) {
  cg_free(g->src);
  cg_free(g->dst);
  cg_free(g->owner);
  memset(g, 0, sizeof *g);
}

void fx_halo_marks(const struct fx_graph *g, int r, unsigned char *in_halo) {
  memset(in_halo, 0, (size_t)g->n);
  for (int64_t e = 0; e < g->m; e++) {
    int64_t s = g->src[e], d = g->dst[e];
    if (s != d && g->owner[d] == r && g->owner[s] != r) in_halo[s] = 1;
  }
}

int fx_local_make(const struct fx_graph *g, int rank, int all_peers, struct fx_local *l) {
  int st = CG_OK;
  int P = g->nranks;
  memset(l, 0, sizeof *l);
  l->rank = rank;
  unsigned char *mine = cg_calloc((size_t)g->n + 1, 1, "fixture halo marks");
  unsigned char *theirs = cg_calloc((size_t)g->n + 1, 1, "fixture halo marks");
  l->gid = cg_calloc((size_t)g->n + 1, sizeof(int64_t), "fixture gid");
  l->local_of = cg_calloc((size_t)g->n + 1, sizeof(int64_t), "fixture local ids");
  l->peer = cg_calloc((size_t)P, sizeof(int32_t), "fixture peers");
  l->send_offset = cg_calloc((size_t)P, sizeof(int64_t), "fixture plan");
  l->send_count = cg_calloc((size_t)P, sizeof(int64_t), "fixture plan");
  l->recv_offset = cg_calloc((size_t)P, sizeof(int64_t), "fixture plan");
  l->recv_count = cg_calloc((size_t)P, sizeof(int64_t), "fixture plan");
  l->send_idx = cg_calloc((size_t)g->n * (size_t)P + 1, sizeof(int32_t), "fixture send list");
  if (!mine || !theirs || !l->gid || !l->local_of || !l->peer || !l->send_offset ||
      !l->send_count || !l->recv_offset || !l->recv_count || !l->send_idx) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int64_t v = 0; v < g->n; v++) l->local_of[v] = -1;
  for (int64_t v = 0; v < g->n; v++)
    if (g->owner[v] == rank) {
      l->local_of[v] = l->n_inner;
      l->gid[l->n_inner++] = v;
    }
  fx_halo_marks(g, rank, mine);
  int64_t k = l->n_inner;
  for (int q = 0; q < P; q++) /* halo grouped by owner, ascending gid within */
    for (int64_t v = 0; v < g->n; v++)
      if (mine[v] && g->owner[v] == q) {
        l->local_of[v] = k;
        l->gid[k++] = v;
      }
  l->n_halo = k - l->n_inner;

  int64_t soff = 0, roff = 0;
  for (int q = 0; q < P; q++) {
    if (q == rank) continue;
    int64_t scount = 0, rcount = 0;
    fx_halo_marks(g, q, theirs);
    for (int64_t v = 0; v < g->n; v++) {
      if (theirs[v] && g->owner[v] == rank) l->send_idx[soff + scount++] = (int32_t)l->local_of[v];
      if (mine[v] && g->owner[v] == q) rcount++;
    }
    if (!all_peers && scount == 0 && rcount == 0) continue;
    int i = l->npeers++;
    l->peer[i] = q;
    l->send_offset[i] = soff;
    l->send_count[i] = scount;
    l->recv_offset[i] = roff;
    l->recv_count[i] = rcount;
    soff += scount;
    roff += rcount;
  }
  l->plan = (struct comm_halo_plan){.npeers = l->npeers,
                                    .peer = l->peer,
                                    .send_offset = l->send_offset,
                                    .send_count = l->send_count,
                                    .send_idx = l->send_idx,
                                    .recv_offset = l->recv_offset,
                                    .recv_count = l->recv_count,
                                    .n_inner = l->n_inner,
                                    .n_halo = l->n_halo};
done:
  cg_free(mine);
  cg_free(theirs);
  if (st != CG_OK) fx_local_free(l);
  return st;
}

void fx_local_free(struct fx_local *l) {
  cg_free(l->gid);
  cg_free(l->local_of);
  cg_free(l->peer);
  cg_free(l->send_offset);
  cg_free(l->send_count);
  cg_free(l->recv_offset);
  cg_free(l->recv_count);
  cg_free(l->send_idx);
  memset(l, 0, sizeof *l);
}
