/* jaca/ngrad.c — halo gradients through the node tier (ngrad_internal.h).
 *
 * Design notes (the why):
 * - The layout of the segment is derived on every rank of the node from one node
 *   all-gather of how many halo rows each rank holds from each other rank of the node:
 *   nothing else has to be agreed, and both sides of a pair compute the same block.
 * - The owner checks every row it reads against the vertex it expects and the
 *   generation it waits for: a misplaced or old gradient is an error, never a value.
 * - The rows of a block stay in the plain plan's order and the owner adds the blocks in
 *   ascending peer order, whichever path they came by, so that the floating point sums
 *   are those of the plain exchange. */
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "jaca/ngrad_internal.h"
#include "jaca/seqlock_internal.h"

struct jaca_ngrad {
  struct comm *c;
  struct cg_backend *be;
  int nlayers;
  double timeout_s;
  int64_t n_inner, n_halo;
  /* the plain plan (part_local), copied */
  int npeers;
  int32_t *peer;
  int64_t *send_off, *send_cnt, *recv_off, *recv_cnt;
  int *intra;          /* per peer: on this node */
  int *plr;            /* per peer: its local rank on this node, -1 on another */
  int64_t *wr_base;    /* per intra peer: node row of this rank's block for that owner */
  int64_t *rd_base;    /* per intra peer: node row of that consumer's block for this rank */
  int64_t *in_off;     /* per peer: its block's row in d_in ([inter | intra], packed) */
  int64_t n_in_inter, n_in_intra, rows_out;
  int32_t *wr_gid;     /* per halo row: its vertex */
  int32_t *rd_gid;     /* per plain send row: its vertex */
  int32_t *d_sidx;     /* backend: the plain send rows (where each gradient adds) */
  float *d_in;         /* backend: received gradients, (n_in_inter + n_in_intra) x cols */
  float *h_out, *h_in; /* host staging (device backends) */
  struct comm_halo *gx; /* the gradients for other nodes (reversed plan) */
  struct comm_shm *shm;
  char *seg;
  size_t stride, layer_bytes;
  size_t read_off; /* segment: per layer and local rank, a read word (after the rows) */
  uint32_t *gen;   /* per layer: backward generations */
};

static int on_host(const struct jaca_ngrad *g) { return g->be->kind == CG_DEVICE_CPU; }
static size_t nz(int64_t n) { return (size_t)(n > 0 ? n : 1); }

static char *grow(const struct jaca_ngrad *g, int layer, int64_t r) {
  return g->seg + (size_t)(layer - 1) * g->layer_bytes + (size_t)r * g->stride;
}

/* Local rank lr's read word of layer l: the last generation whose gradients it has
 * finished reading from the segment. A consumer that writes generation g for an owner
 * checks that the owner is at g - 1 (jaca.h: the collective between two exchanges of a
 * layer), as the forward tier's writers do. One line each. */
static char *read_word(const struct jaca_ngrad *g, int layer, int lr) {
  return g->seg + g->read_off +
         ((size_t)(layer - 1) * (size_t)comm_local_size(g->c) + (size_t)lr) * JACA_ROW_ALIGN;
}

static void ngrad_free(struct jaca_ngrad *g) {
  struct cg_backend *be = g->be;
  if (be) {
    be->free(be, g->d_sidx);
    be->free(be, g->d_in);
  }
  cg_free(g->peer);
  cg_free(g->send_off);
  cg_free(g->send_cnt);
  cg_free(g->recv_off);
  cg_free(g->recv_cnt);
  cg_free(g->intra);
  cg_free(g->plr);
  cg_free(g->wr_base);
  cg_free(g->rd_base);
  cg_free(g->in_off);
  cg_free(g->wr_gid);
  cg_free(g->rd_gid);
  cg_free(g->h_out);
  cg_free(g->h_in);
  cg_free(g->gen);
  cg_free(g);
}

void jaca_ngrad_destroy(struct jaca_ngrad **gp) {
  if (!gp || !*gp) return;
  struct jaca_ngrad *g = *gp;
  comm_halo_destroy(&g->gx);
  comm_shm_destroy(&g->shm);
  ngrad_free(g);
  *gp = NULL;
}

/* Copies of the plain plan and which peers share the node (local). */
static int copy_plan(struct jaca_ngrad *g, const struct part_local *pl) {
  const int np = pl->npeers;
  const int64_t ni = pl->n_inner, nh = pl->n_halo;
  int64_t nsend = 0;
  for (int k = 0; k < np; k++) nsend += pl->send_count[k];
  g->npeers = np;
  g->n_inner = ni;
  g->n_halo = nh;
  g->peer = cg_malloc(sizeof(int32_t) * nz(np), "jaca: gradient peers");
  g->send_off = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
  g->send_cnt = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
  g->recv_off = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
  g->recv_cnt = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
  g->intra = cg_calloc(nz(np), sizeof(int), "jaca: gradient plan");
  g->wr_base = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
  g->rd_base = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
  g->in_off = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
  g->wr_gid = cg_malloc(sizeof(int32_t) * nz(nh), "jaca: gradient rows' vertices");
  g->rd_gid = cg_malloc(sizeof(int32_t) * nz(nsend), "jaca: gradient rows' vertices");
  if (!g->peer || !g->send_off || !g->send_cnt || !g->recv_off || !g->recv_cnt || !g->intra || !g->wr_base ||
      !g->rd_base || !g->in_off || !g->wr_gid || !g->rd_gid)
    return CG_ERR_NOMEM;
  const int me = comm_rank(g->c), node = comm_node(g->c);
  for (int k = 0; k < np; k++) {
    g->peer[k] = pl->peer[k];
    g->send_off[k] = pl->send_offset[k];
    g->send_cnt[k] = pl->send_count[k];
    g->recv_off[k] = pl->recv_offset[k];
    g->recv_cnt[k] = pl->recv_count[k];
    g->intra[k] = pl->peer[k] != me && comm_node_of(g->c, pl->peer[k]) == node;
    g->wr_base[k] = g->rd_base[k] = -1;
  }
  for (int64_t i = 0; i < nh; i++) g->wr_gid[i] = pl->gid[ni + i];
  for (int64_t q = 0; q < nsend; q++) g->rd_gid[q] = pl->gid[pl->send_idx[q]];
  return CG_OK;
}

/* The segment's blocks: counts per (consumer, owner) pair of the node, then offsets.
 * Collective over the node (called by every rank, errors agreed by the caller). */
static int layout(struct jaca_ngrad *g, int64_t *node_rows) {
  struct comm *c = g->c;
  const int L = comm_local_size(c), lr = comm_local_rank(c);
  int64_t *mine = cg_calloc((size_t)L, sizeof(int64_t), "jaca: gradient blocks");
  int64_t *all = cg_malloc(sizeof(int64_t) * (size_t)L * (size_t)L, "jaca: gradient blocks of the node");
  int st = mine && all ? CG_OK : CG_ERR_NOMEM;
  /* local rank of each intra peer */
  int *plr = g->plr = cg_malloc(sizeof(int) * nz(g->npeers), "jaca: local ranks of the peers");
  if (!plr) st = CG_ERR_NOMEM;
  for (int k = 0; st == CG_OK && k < g->npeers; k++) {
    plr[k] = -1;
    if (!g->intra[k]) continue;
    for (int r = 0; r < L; r++)
      if (comm_node_world_rank(c, r) == g->peer[k]) plr[k] = r;
    if (plr[k] < 0) st = cg_err_set(CG_ERR_INTERNAL, "jaca: rank %d is on this node but has no local rank", g->peer[k]);
    else mine[plr[k]] = g->recv_cnt[k];
  }
  st = comm_agree(c, st, "jaca: the gradient blocks");
  if (st == CG_OK) st = comm_node_allgatherv_i64(c, mine, L, all);
  if (st == CG_OK) {
    /* offsets in (consumer, owner) order; both sides of a pair agree on the count */
    int64_t off = 0;
    for (int q = 0; q < L; q++)
      for (int o = 0; o < L; o++) {
        const int64_t n = all[(int64_t)q * L + o];
        for (int k = 0; k < g->npeers; k++) {
          if (!g->intra[k]) continue;
          if (q == lr && o == plr[k]) g->wr_base[k] = off;
          if (o == lr && q == plr[k]) {
            g->rd_base[k] = off;
            if (n != g->send_cnt[k])
              st = cg_err_set(CG_ERR_INTERNAL, "jaca: rank %d holds %lld of this rank's rows, which sends it %lld",
                              g->peer[k], (long long)n, (long long)g->send_cnt[k]);
          }
        }
        off += n;
      }
    *node_rows = off;
  }
  cg_free(mine);
  cg_free(all);
  return st;
}

int jaca_ngrad_create(struct comm *c, struct cg_backend *be, const struct part_local *pl,
                      const struct jaca_layers *layers, double timeout_s, struct jaca_ngrad **out) {
  *out = NULL;
  struct jaca_ngrad *g = cg_calloc(1, sizeof *g, "jaca: node-tier gradients");
  int st = g ? CG_OK : CG_ERR_NOMEM;
  if (g) {
    g->c = c;
    g->be = be;
    g->nlayers = layers->nlayers;
    g->timeout_s = timeout_s;
    g->gen = cg_calloc((size_t)layers->nlayers, sizeof(uint32_t), "jaca: gradient generations");
    if (!g->gen) st = CG_ERR_NOMEM;
    if (st == CG_OK) st = copy_plan(g, pl);
  }
  int64_t node_rows = 0;
  if ((st = comm_agree(c, st, "jaca: the node-tier gradients")) < 0) goto fail;
  st = layout(g, &node_rows);
  if ((st = comm_agree(c, st, "jaca: the node-tier gradients' blocks")) < 0) goto fail;
  {
    /* the reversed plan of the peers on other nodes: consumers send from their halo
     * block, owners receive packed in ascending peer order */
    const int np = g->npeers;
    int32_t *peer = cg_malloc(sizeof(int32_t) * nz(np), "jaca: gradient plan");
    int64_t *soff = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
    int64_t *scnt = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
    int64_t *roff = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
    int64_t *rcnt = cg_malloc(sizeof(int64_t) * nz(np), "jaca: gradient plan");
    int32_t *sidx = cg_malloc(sizeof(int32_t) * nz(g->n_halo), "jaca: gradient plan");
    if (!peer || !soff || !scnt || !roff || !rcnt || !sidx) st = CG_ERR_NOMEM;
    int n = 0;
    int64_t ns = 0, nr = 0;
    for (int k = 0; st == CG_OK && k < np; k++) {
      if (g->intra[k] || (g->send_cnt[k] == 0 && g->recv_cnt[k] == 0)) continue;
      for (int64_t i = 0; i < g->recv_cnt[k]; i++) sidx[ns + i] = (int32_t)(g->recv_off[k] + i);
      peer[n] = g->peer[k];
      soff[n] = ns;
      scnt[n] = g->recv_cnt[k];
      roff[n] = nr;
      rcnt[n] = g->send_cnt[k];
      g->in_off[k] = nr;
      ns += g->recv_cnt[k];
      nr += g->send_cnt[k];
      n++;
    }
    g->n_in_inter = nr;
    for (int k = 0; st == CG_OK && k < np; k++) {
      if (!g->intra[k]) continue;
      g->in_off[k] = g->n_in_inter + g->n_in_intra;
      g->n_in_intra += g->send_cnt[k];
      g->rows_out += g->recv_cnt[k];
    }
    st = comm_agree(c, st, "jaca: the gradient plan between nodes");
    if (st == CG_OK) {
      struct comm_halo_plan fp;
      memset(&fp, 0, sizeof fp);
      fp.npeers = n;
      fp.peer = peer;
      fp.send_offset = soff;
      fp.send_count = scnt;
      fp.send_idx = sidx;
      fp.recv_offset = roff;
      fp.recv_count = rcnt;
      fp.n_inner = g->n_halo;
      fp.n_halo = nr;
      st = comm_halo_create(c, be, &fp, layers->cols, &g->gx); /* collective, agreed */
      if (st == CG_OK) comm_halo_count_as(g->gx, CG_HALO_BACKWARD); /* gradients, by "forward" calls */
    }
    cg_free(peer);
    cg_free(soff);
    cg_free(scnt);
    cg_free(roff);
    cg_free(rcnt);
    cg_free(sidx);
    if (st < 0) goto fail;
  }
  g->stride = jaca_row_stride(layers->cols);
  g->layer_bytes = g->stride * (size_t)node_rows;
  {
    /* the rows, then a read word per layer and local rank */
    g->read_off = g->layer_bytes * (size_t)(layers->nlayers - 1);
    const size_t words = (size_t)(layers->nlayers - 1) * (size_t)comm_local_size(c) * JACA_ROW_ALIGN;
    const size_t bytes = g->read_off + words + JACA_ROW_ALIGN;
    int fits = 0;
    if ((st = comm_shm_fits(c, comm_local_rank(c) == 0 ? bytes : 0, &fits)) < 0) goto fail;
    if (!fits) { /* the gradients go back as without the cache: exact, more bytes */
      if (comm_rank(c) == 0)
        LOG_WARN("jaca", "halo gradients go back through the plain exchange, not the node tier: its segment (%zu "
                 "bytes on a node) does not fit the free space of %s (a container's default /dev/shm is 64 MB: "
                 "docker run --shm-size=...)", bytes, comm_shm_dir());
      comm_halo_destroy(&g->gx);
      ngrad_free(g);
      *out = NULL;
      return CG_OK;
    }
    if ((st = comm_shm_create(c, comm_local_rank(c) == 0 ? bytes : 0, &g->shm)) < 0) {
      char why[1024];
      snprintf(why, sizeof why, "%s", cg_err_msg());
      cg_err_set(st, "the halo cache's node segment for halo gradients (--grad-staleness 1 or more keeps none): %s",
                 why);
      goto fail;
    }
    const uintptr_t base = (uintptr_t)comm_shm_node(g->shm, NULL);
    g->seg = (char *)((base + JACA_ROW_ALIGN - 1) / JACA_ROW_ALIGN * JACA_ROW_ALIGN);
  }
  {
    const int64_t cols = layers->cols;
    int64_t nsend = 0;
    for (int k = 0; k < g->npeers; k++) nsend += g->send_cnt[k];
    st = be->alloc(be, (void **)&g->d_in, nz((g->n_in_inter + g->n_in_intra) * cols) * sizeof(float),
                   "jaca: gradients received");
    if (st == CG_OK) st = be->alloc(be, (void **)&g->d_sidx, nz(nsend) * sizeof(int32_t), "jaca: gradient rows");
    if (st == CG_OK && nsend > 0) st = be->upload(be, g->d_sidx, pl->send_idx, (size_t)nsend * sizeof(int32_t));
    if (st == CG_OK && !on_host(g)) {
      g->h_out = cg_malloc(nz(g->n_halo * cols) * sizeof(float), "jaca: host gradients to write");
      g->h_in = cg_malloc(nz(g->n_in_intra * cols) * sizeof(float), "jaca: host gradients read");
      if (!g->h_out || !g->h_in) st = CG_ERR_NOMEM;
    }
  }
  if ((st = comm_agree(c, st, "jaca: the node-tier gradients' buffers")) < 0) goto fail;
  *out = g;
  return CG_OK;
fail:
  if (g) {
    comm_halo_destroy(&g->gx);
    comm_shm_destroy(&g->shm);
    ngrad_free(g);
  }
  cg_err_trail(__FILE__, __LINE__, "jaca_ngrad_create");
  return st;
}

int jaca_ngrad_begin(struct jaca_ngrad *g, int layer, uint32_t epoch, float *dx, int64_t cols, int64_t *bytes_mpi,
                     int64_t *bytes_shm) {
  struct cg_backend *be = g->be;
  const uint32_t gen = g->gen[layer] + 1;
  /* generation gen overwrites the blocks of gen - 1: an owner still reading them would
   * take a row of the wrong generation (end refuses it) or wait past its own (a check,
   * not a wait: the caller's collective orders them; jaca.h) */
  for (int k = 0; k < g->npeers && gen > 1; k++) {
    if (!g->intra[k] || g->recv_cnt[k] == 0) continue;
    const uint32_t seen = jaca_word_read(read_word(g, layer, g->plr[k]));
    if (seen < gen - 1)
      return cg_err_set(CG_ERR_ARG,
                        "jaca: backward exchange %u of layer %d (epoch %u) began while local rank %d of this node "
                        "(rank %d) had not finished reading the gradients of exchange %u (it is at %u): two "
                        "training backward exchanges of a layer need a collective of every rank between them "
                        "(jaca/jaca.h)",
                        gen, layer, epoch, g->plr[k], g->peer[k], gen - 1, seen);
  }
  g->gen[layer] = gen;
  const int64_t before = comm_halo_bytes_sent(g->gx);
  /* rounding key of coded gradients (--halo-bits): epoch, layer and this path (kind 3) */
  comm_halo_set_quant_key(g->gx, ((uint64_t)epoch << 32) ^ ((uint64_t)(uint32_t)layer << 16) ^ (3ull << 12));
  TRY(comm_halo_begin_into(g->gx, CG_HALO_FORWARD, dx + g->n_inner * cols, g->d_in, cols));
  *bytes_mpi += comm_halo_bytes_sent(g->gx) - before;
  if (g->rows_out == 0) return CG_OK;
  const float *src = dx + g->n_inner * cols;
  if (!on_host(g)) {
    TRY(be->download(be, g->h_out, src, (size_t)(g->n_halo * cols) * sizeof(float)));
    src = g->h_out;
  }
  for (int k = 0; k < g->npeers; k++) {
    if (!g->intra[k]) continue;
    for (int64_t i = 0; i < g->recv_cnt[k]; i++) {
      const int64_t h = g->recv_off[k] + i;
      const struct jaca_row_meta m = {gen, epoch, (uint32_t)g->wr_gid[h]};
      jaca_row_publish(grow(g, layer, g->wr_base[k] + i), src + h * cols, cols, &m);
    }
  }
  *bytes_shm += g->rows_out * cols * (int64_t)sizeof(float);
  return CG_OK;
}

int jaca_ngrad_end(struct jaca_ngrad *g, int layer, uint32_t epoch, float *dx, int64_t cols, int64_t *torn) {
  struct cg_backend *be = g->be;
  const uint32_t gen = g->gen[layer];
  TRY(comm_halo_end_into(g->gx, CG_HALO_FORWARD, dx + g->n_inner * cols, g->d_in, cols));
  float *in = on_host(g) ? g->d_in + g->n_in_inter * cols : g->h_in;
  for (int k = 0; k < g->npeers; k++) {
    if (!g->intra[k]) continue;
    float *dst = in + (g->in_off[k] - g->n_in_inter) * cols;
    for (int64_t j = 0; j < g->send_cnt[k]; j++) {
      struct jaca_row_meta m;
      const int32_t want = g->rd_gid[g->send_off[k] + j];
      const int64_t t = jaca_row_read_wait(grow(g, layer, g->rd_base[k] + j), dst + j * cols, cols, gen, g->timeout_s, &m);
      if (t < 0)
        return cg_err_set(CG_ERR_INTERNAL,
                          "jaca: the gradient of vertex %d from rank %d (layer %d, epoch %u) did not reach generation "
                          "%u within %g s (it holds %u): that rank is gone, stuck or slower than that (see its log; "
                          "CAPGNN_JACA_TIMEOUT=SECONDS waits longer)",
                          want, g->peer[k], layer, epoch, gen, g->timeout_s, m.gen);
      if (m.gen != gen || m.gid != (uint32_t)want || m.epoch != epoch)
        return cg_err_set(CG_ERR_INTERNAL,
                          "jaca: a gradient row from rank %d (layer %d) holds vertex %u, generation %u, epoch %u; "
                          "expected vertex %d, generation %u, epoch %u",
                          g->peer[k], layer, m.gid, m.gen, m.epoch, want, gen, epoch);
      *torn += t;
    }
  }
  jaca_word_publish(read_word(g, layer, comm_local_rank(g->c)), gen); /* this rank's blocks of gen are read */
  if (!on_host(g) && g->n_in_intra > 0)
    TRY(be->upload(be, g->d_in + g->n_in_inter * cols, g->h_in, (size_t)(g->n_in_intra * cols) * sizeof(float)));
  /* ascending peer order, each block in send order: the plain exchange's sums */
  for (int k = 0; k < g->npeers; k++)
    if (g->send_cnt[k] > 0)
      be->scatter_add_rows(be, g->d_in + g->in_off[k] * cols, cols, g->d_sidx + g->send_off[k], g->send_cnt[k], dx);
  return CG_OK;
}

int jaca_ngrad_progress(struct jaca_ngrad *g) { return comm_halo_progress(g->gx); }

int64_t jaca_ngrad_bytes_sent(const struct jaca_ngrad *g) { return g ? comm_halo_bytes_sent(g->gx) : 0; }
int64_t jaca_ngrad_inter_bytes_sent(const struct jaca_ngrad *g) { return g ? comm_halo_inter_bytes_sent(g->gx) : 0; }
int jaca_ngrad_set_quant(struct jaca_ngrad *g, int bits) { return comm_halo_set_quant(g->gx, bits); }
int64_t jaca_ngrad_rows_out(const struct jaca_ngrad *g) { return g ? g->rows_out : 0; }
int64_t jaca_ngrad_rows_in(const struct jaca_ngrad *g) { return g ? g->n_in_intra : 0; }
