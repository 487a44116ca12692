/* jaca/exchange.c — the caching exchange (jaca/jaca.h) behind the seam of
 * core/exchange.h: the node tier for forward rows of hidden layers in training, the
 * plain exchange for everything else.
 *
 * One forward exchange of layer l at generation g (the l-th layer's g-th cached
 * exchange; every rank counts the same, the calls being collective):
 *  begin  start the forward plan's MPI transfer (comm_halo_begin_into: the rows for
 *         other nodes' receivers and the direct rows, received into d_src), then write
 *         this rank's own admitted rows into the node segment (seqlock, generation g);
 *  end    complete the transfer, write the rows received for the node into the segment,
 *         then copy this rank's admitted halo rows out of the segment (waiting until
 *         each holds generation g), and place every halo row with one gather from d_src
 *         ([received rows | rows read from the node tier]) into x's halo block.
 *
 * Design notes (the why):
 * - No rank waits on the segment before its own MPI transfer has completed: a rank
 *   spinning on a row while a peer's send to it needs its progress would deadlock. So
 *   MPI first, then the reads, and every row a reader waits for is written by a rank
 *   that is past its own transfer (or did not need one).
 * - A reader takes exactly generation g: no rank can write generation g+1 of a layer
 *   before every rank has read generation g, because the step's gradient all-reduce
 *   lies between (every rank finishes its forward pass first). A newer row would mean
 *   a broken schedule, and is reported as such rather than used.
 * - Every row read is checked against its global id, generation and epoch (the seqlock
 *   payload carries them), so a misplaced or stale row is an error, never a value.
 * - Evaluation (epoch 0), the set-up exchange of the features (layer 0) and every
 *   backward exchange go through the plain exchange: they are exact and uncached, and
 *   evaluation's rows (no dropout) never reach the tier that training reads.
 * - The CPU backend reads and writes backend memory in place; a device backend goes
 *   through host staging buffers (download, upload), allocated here once. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "jaca/exchange_internal.h"
#include "jaca/jaca.h"
#include "jaca/node_internal.h"
#include "jaca/seqlock_internal.h"

#define JACA_READ_TIMEOUT_S 300.0

struct jaca_exchange {
  struct cg_exchange ex; /* first: the seam's table */
  struct comm *c;
  struct cg_backend *be;
  struct cg_exchange *plain;
  struct jaca_options opt;
  struct jaca_layers layers;
  struct jaca_node_plan plan;
  struct comm_halo **fwd; /* per refresh class */
  struct comm_shm *shm;
  char *seg;          /* the node tier: layer l's rows at seg + (l-1) * layer_bytes */
  size_t stride, layer_bytes;
  uint32_t *gen;      /* per layer: generations written so far */
  float **d_src;      /* per layer, backend: (recv_rows + n_read) x cols: the rank tier
                         ([received rows by class | rows read from the node tier]) */
  uint32_t **src_epoch; /* per layer: the epoch each received row was produced in */
  int32_t *d_map;     /* backend: n_halo indices into d_src */
  int32_t *d_widx;    /* backend: write_idx (device backends) */
  float *d_pub;       /* backend: n_write x cols (device backends) */
  float *h_pub, *h_recv, *h_read; /* host staging (device backends) */
  struct jaca_stats *stats;       /* per layer, [0] unused */
  int64_t plain_send_rows;        /* what the plain exchange sends forward per exchange */
  int64_t plain_send_rows_inter;  /* ... to ranks of other nodes */
  /* the exchange in flight */
  int in_flight, delegated, layer;
  uint32_t flight_gen, flight_epoch;
};

static struct jaca_exchange *impl(struct cg_exchange *ex) { return (struct jaca_exchange *)ex; }
static int on_host(const struct jaca_exchange *j) { return j->be->kind == CG_DEVICE_CPU; }

static char *node_row(const struct jaca_exchange *j, int layer, int64_t r) {
  return j->seg + (size_t)(layer - 1) * j->layer_bytes + (size_t)r * j->stride;
}

/* Training forward rows of hidden layers after the warm-up go through the tiers. */
static int cached(const struct jaca_exchange *j, enum cg_halo_dir dir, struct cg_halo_tag tag) {
  return dir == CG_HALO_FORWARD && tag.epoch > 0 && tag.epoch > (uint32_t)j->opt.warmup && tag.layer >= 1 &&
         tag.layer < j->layers.nlayers;
}

static int refreshed(const struct jaca_exchange *j, uint32_t g, int cls) {
  return jaca_last_refresh(g, cls, j->plan.staleness) == g;
}

static int jx_halo_begin(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                         int64_t cols) {
  struct jaca_exchange *j = impl(ex);
  if (j->in_flight)
    return cg_err_set(CG_ERR_ARG, "jaca: halo_begin while an exchange is in flight (call halo_end first)");
  if (!cached(j, dir, tag)) {
    TRY(j->plain->halo_begin(j->plain, dir, tag, x, cols));
    j->in_flight = j->delegated = 1;
    return CG_OK;
  }
  if (cols < 1 || cols > j->layers.cols)
    return cg_err_set(CG_ERR_ARG, "jaca: layer %d exchanges %lld columns, the cache holds rows of at most %lld",
                      tag.layer, (long long)cols, (long long)j->layers.cols);
  const struct jaca_node_plan *p = &j->plan;
  struct cg_backend *be = j->be;
  const int l = tag.layer;
  const uint32_t g = ++j->gen[l];
  struct jaca_stats *s = &j->stats[l];
  for (int c = 0; c < p->nclasses; c++) {
    if (!refreshed(j, g, c)) continue;
    const struct jaca_fwd_plan *f = &p->cls[c];
    TRY(comm_halo_begin_into(j->fwd[c], CG_HALO_FORWARD, x, j->d_src[l] + f->recv_base * cols, cols));
    s->bytes_intra += f->send_rows_intra * cols * (int64_t)sizeof(float);
    s->bytes_inter += f->send_rows_inter * cols * (int64_t)sizeof(float);
  }
  /* this rank's own rows that its node's tier holds, those due now */
  int64_t nw = 0;
  for (int64_t k = 0; k < p->n_write; k++) nw += refreshed(j, g, p->write_phase[k]);
  if (nw > 0) {
    if (!on_host(j)) { /* all of them: one gather, one copy */
      be->gather_rows(be, x, cols, j->d_widx, p->n_write, j->d_pub);
      TRY(be->download(be, j->h_pub, j->d_pub, (size_t)(p->n_write * cols) * sizeof(float)));
      s->bytes_d2h += p->n_write * cols * (int64_t)sizeof(float);
    }
    for (int64_t k = 0; k < p->n_write; k++) {
      if (!refreshed(j, g, p->write_phase[k])) continue;
      const float *row = on_host(j) ? x + (int64_t)p->write_idx[k] * cols : j->h_pub + k * cols;
      const struct jaca_row_meta m = {g, tag.epoch, (uint32_t)p->admitted_gid[p->write_row[k]]};
      jaca_row_publish(node_row(j, l, p->write_row[k]), row, cols, &m);
    }
  }
  s->node_writes += nw;
  s->bytes_shm += nw * cols * (int64_t)sizeof(float);
  s->bytes_exact += j->plain_send_rows * cols * (int64_t)sizeof(float);
  s->bytes_exact_inter += j->plain_send_rows_inter * cols * (int64_t)sizeof(float);
  j->in_flight = 1;
  j->delegated = 0;
  j->layer = l;
  j->flight_gen = g;
  j->flight_epoch = tag.epoch;
  return CG_OK;
}

static int jx_halo_end(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                       int64_t cols) {
  struct jaca_exchange *j = impl(ex);
  if (!j->in_flight) return cg_err_set(CG_ERR_ARG, "jaca: halo_end without halo_begin");
  if (j->delegated) {
    j->in_flight = j->delegated = 0;
    return j->plain->halo_end(j->plain, dir, tag, x, cols);
  }
  if (!cached(j, dir, tag) || tag.layer != j->layer || tag.epoch != j->flight_epoch)
    return cg_err_set(CG_ERR_ARG, "jaca: halo_end (layer %d, epoch %u) does not match its begin (layer %d, epoch %u)",
                      tag.layer, tag.epoch, j->layer, j->flight_epoch);
  j->in_flight = 0;
  const struct jaca_node_plan *p = &j->plan;
  struct cg_backend *be = j->be;
  const uint32_t g = j->flight_gen;
  const int l = tag.layer, S = p->staleness;
  float *src = j->d_src[l];
  uint32_t *src_epoch = j->src_epoch[l];
  struct jaca_stats *s = &j->stats[l];
  int64_t direct_now = 0, mine_now = 0; /* direct rows and rows for the node received now */
  for (int c = 0; c < p->nclasses; c++) {
    if (!refreshed(j, g, c)) continue;
    const struct jaca_fwd_plan *f = &p->cls[c];
    float *blk = src + f->recv_base * cols;
    TRY(comm_halo_end_into(j->fwd[c], CG_HALO_FORWARD, x, blk, cols));
    for (int64_t k = 0; k < f->recv_rows; k++) src_epoch[f->recv_base + k] = tag.epoch;
    direct_now += f->recv_rows - f->n_received;
    mine_now += f->n_received;
    if (f->n_received == 0) continue;
    /* rows received for the node: into the tier */
    const float *recv = blk;
    if (!on_host(j)) {
      TRY(be->download(be, j->h_recv, blk, (size_t)(f->recv_rows * cols) * sizeof(float)));
      s->bytes_d2h += f->recv_rows * cols * (int64_t)sizeof(float);
      recv = j->h_recv;
    }
    for (int64_t k = 0; k < f->recv_rows; k++) {
      if (f->recv_dest[k] >= 0) continue;
      const int64_t r = -1 - f->recv_dest[k];
      const struct jaca_row_meta m = {g, tag.epoch, (uint32_t)p->admitted_gid[r]};
      jaca_row_publish(node_row(j, l, r), recv + k * cols, cols, &m);
    }
  }
  s->node_writes += mine_now;
  s->bytes_shm += mine_now * cols * (int64_t)sizeof(float);
  /* the direct rows kept from earlier generations: never older than S (by the schedule;
   * checked, so that a broken schedule is an error, not a stale value) */
  for (int c = 0; c < p->nclasses; c++) {
    const struct jaca_fwd_plan *f = &p->cls[c];
    for (int64_t k = 0; k < f->recv_rows; k++) {
      if (f->recv_dest[k] < 0) continue;
      const int64_t age = (int64_t)tag.epoch - (int64_t)src_epoch[f->recv_base + k];
      if (age < 0 || age > S)
        return cg_err_set(CG_ERR_INTERNAL, "jaca: halo row %lld of layer %d is %lld epochs old (staleness %d)",
                          (long long)f->recv_dest[k], l, (long long)age, S);
      s->age_sum += age;
      if (age > s->age_max) s->age_max = age;
    }
  }
  /* this rank's rows from the node tier, each of the generation that last refreshed it */
  float *dst = on_host(j) ? src + p->recv_rows * cols : j->h_read;
  int64_t read_fresh = 0;
  for (int64_t k = 0; k < p->n_read; k++) {
    struct jaca_row_meta m;
    const int64_t r = p->read_row[k];
    const uint32_t want = jaca_last_refresh(g, p->read_phase[k], S);
    read_fresh += want == g;
    const int64_t torn = jaca_row_read_wait(node_row(j, l, r), dst + k * cols, cols, want, JACA_READ_TIMEOUT_S, &m);
    if (torn < 0)
      return cg_err_set(CG_ERR_INTERNAL,
                        "jaca: node row %lld (vertex %d, layer %d) did not reach generation %u within %.0f s "
                        "(it holds generation %u): the rank that writes it is gone or stuck",
                        (long long)r, p->admitted_gid[r], l, want, JACA_READ_TIMEOUT_S, m.gen);
    const int64_t age = (int64_t)tag.epoch - (int64_t)m.epoch;
    if (m.gen != want || m.gid != (uint32_t)p->admitted_gid[r] || age < 0 || age > S)
      return cg_err_set(CG_ERR_INTERNAL,
                        "jaca: node row %lld of layer %d holds vertex %u, generation %u, epoch %u; expected "
                        "vertex %d, generation %u, at most %d epochs before epoch %u",
                        (long long)r, l, m.gid, m.gen, m.epoch, p->admitted_gid[r], want, S, tag.epoch);
    s->torn_reads += torn;
    s->age_sum += age;
    if (age > s->age_max) s->age_max = age;
  }
  if (!on_host(j) && p->n_read > 0) {
    TRY(be->upload(be, src + p->recv_rows * cols, j->h_read, (size_t)(p->n_read * cols) * sizeof(float)));
    s->bytes_h2d += p->n_read * cols * (int64_t)sizeof(float);
  }
  if (p->n_halo > 0) be->gather_rows(be, src, cols, j->d_map, p->n_halo, x + p->n_inner * cols);
  s->lookups += p->n_halo;
  s->rank_hits += p->n_direct - direct_now;
  s->node_hits += p->n_read - mine_now;
  s->misses += direct_now + mine_now;
  s->refreshed += direct_now + read_fresh;
  return CG_OK;
}

static int jx_allreduce_grads(struct cg_exchange *ex, float *buf, int64_t n) {
  struct jaca_exchange *j = impl(ex);
  return j->plain->allreduce_grads(j->plain, buf, n);
}

static int jx_allreduce_host(struct cg_exchange *ex, double *v, int n, enum cg_reduce op) {
  struct jaca_exchange *j = impl(ex);
  return j->plain->allreduce_host(j->plain, v, n, op);
}

static void stats_sum(const struct jaca_exchange *j, struct jaca_stats *t) {
  memset(t, 0, sizeof *t);
  for (int l = 1; l < j->layers.nlayers; l++) {
    const struct jaca_stats *s = &j->stats[l];
    t->lookups += s->lookups;
    t->rank_hits += s->rank_hits;
    t->node_hits += s->node_hits;
    t->misses += s->misses;
    t->node_writes += s->node_writes;
    t->torn_reads += s->torn_reads;
    t->refreshed += s->refreshed;
    t->bytes_intra += s->bytes_intra;
    t->bytes_inter += s->bytes_inter;
    t->bytes_shm += s->bytes_shm;
    t->bytes_h2d += s->bytes_h2d;
    t->bytes_d2h += s->bytes_d2h;
    t->bytes_exact += s->bytes_exact;
    t->bytes_exact_inter += s->bytes_exact_inter;
    t->age_sum += s->age_sum;
    if (s->age_max > t->age_max) t->age_max = s->age_max;
  }
}

static void jx_counters(const struct cg_exchange *ex, struct cg_exchange_counters *out) {
  const struct jaca_exchange *j = (const struct jaca_exchange *)ex;
  j->plain->counters(j->plain, out);
  struct jaca_stats t;
  stats_sum(j, &t);
  for (int c = 0; c < j->plan.nclasses; c++) out->halo_bytes += comm_halo_bytes_sent(j->fwd[c]);
  out->cache_hits += t.rank_hits + t.node_hits;
  out->cache_lookups += t.lookups;
}

static void jx_free(struct jaca_exchange *j) {
  struct cg_backend *be = j->be;
  for (int l = 1; j->d_src && l < j->layers.nlayers; l++) {
    if (be) be->free(be, j->d_src[l]);
    cg_free(j->src_epoch[l]);
  }
  cg_free(j->d_src);
  cg_free(j->src_epoch);
  cg_free(j->fwd);
  if (be) {
    be->free(be, j->d_map);
    be->free(be, j->d_widx);
    be->free(be, j->d_pub);
  }
  cg_free(j->h_pub);
  cg_free(j->h_recv);
  cg_free(j->h_read);
  cg_free(j->gen);
  cg_free(j->stats);
  jaca_node_plan_free(&j->plan);
  cg_free(j);
}

static void jx_destroy(struct cg_exchange *ex) {
  struct jaca_exchange *j = impl(ex);
  /* collective, in the same order on every rank */
  for (int c = 0; j->fwd && c < j->plan.nclasses; c++) comm_halo_destroy(&j->fwd[c]);
  comm_shm_destroy(&j->shm);
  cg_exchange_destroy(&j->plain);
  jx_free(j);
}

int jaca_exchange_stats(const struct cg_exchange *ex, int layer, struct jaca_stats *out) {
  memset(out, 0, sizeof *out);
  if (!ex || ex->destroy != jx_destroy)
    return cg_err_set(CG_ERR_ARG, "jaca_exchange_stats: not a caching exchange");
  const struct jaca_exchange *j = (const struct jaca_exchange *)ex;
  if (layer < 0 || layer >= j->layers.nlayers)
    return cg_err_set(CG_ERR_ARG, "jaca_exchange_stats: layer %d outside [0, %d)", layer, j->layers.nlayers);
  if (layer == 0) stats_sum(j, out);
  else *out = j->stats[layer];
  return CG_OK;
}

int jaca_exchange_options(const struct cg_exchange *ex, struct jaca_options *out) {
  if (!ex || ex->destroy != jx_destroy)
    return cg_err_set(CG_ERR_ARG, "jaca_exchange_options: not a caching exchange");
  *out = ((const struct jaca_exchange *)ex)->opt;
  return CG_OK;
}

const struct jaca_node_plan *jaca_exchange_plan(const struct cg_exchange *ex) {
  if (!ex || ex->destroy != jx_destroy) return NULL;
  return &((const struct jaca_exchange *)ex)->plan;
}

/* Backend and host buffers of one rank (local; the caller agrees on the status). */
static int jx_alloc(struct jaca_exchange *j) {
  struct cg_backend *be = j->be;
  const struct jaca_node_plan *p = &j->plan;
  const int64_t cols = j->layers.cols, nsrc = p->recv_rows + p->n_read;
  const size_t fl = sizeof(float);
  const int L = j->layers.nlayers;
  j->d_src = cg_calloc((size_t)L, sizeof *j->d_src, "jaca: rank tier per layer");
  j->src_epoch = cg_calloc((size_t)L, sizeof *j->src_epoch, "jaca: rank tier epochs per layer");
  if (!j->d_src || !j->src_epoch) return CG_ERR_NOMEM;
  for (int l = 1; l < L; l++) {
    TRY(be->alloc(be, (void **)&j->d_src[l], (size_t)((nsrc > 0 ? nsrc : 1) * cols) * fl, "jaca: rank tier rows"));
    j->src_epoch[l] = cg_calloc((size_t)(p->recv_rows > 0 ? p->recv_rows : 1), sizeof(uint32_t),
                                "jaca: rank tier epochs");
    if (!j->src_epoch[l]) return CG_ERR_NOMEM;
  }
  TRY(be->alloc(be, (void **)&j->d_map, (size_t)(p->n_halo > 0 ? p->n_halo : 1) * sizeof(int32_t),
                "jaca: where each halo row comes from"));
  int32_t *map = cg_malloc((size_t)(p->n_halo > 0 ? p->n_halo : 1) * sizeof(int32_t), "jaca: halo map");
  if (!map) return CG_ERR_NOMEM;
  for (int c = 0; c < p->nclasses; c++) {
    const struct jaca_fwd_plan *f = &p->cls[c];
    for (int64_t k = 0; k < f->recv_rows; k++)
      if (f->recv_dest[k] >= 0) map[f->recv_dest[k]] = (int32_t)(f->recv_base + k);
  }
  for (int64_t k = 0; k < p->n_read; k++) map[p->read_halo[k]] = (int32_t)(p->recv_rows + k);
  int st = p->n_halo > 0 ? be->upload(be, j->d_map, map, (size_t)p->n_halo * sizeof(int32_t)) : CG_OK;
  cg_free(map);
  TRY(st);
  if (!on_host(j)) {
    TRY(be->alloc(be, (void **)&j->d_widx, (size_t)(p->n_write > 0 ? p->n_write : 1) * sizeof(int32_t),
                  "jaca: rows written to the node tier"));
    TRY(be->alloc(be, (void **)&j->d_pub, (size_t)((p->n_write > 0 ? p->n_write : 1) * cols) * fl,
                  "jaca: rows written to the node tier"));
    if (p->n_write > 0) TRY(be->upload(be, j->d_widx, p->write_idx, (size_t)p->n_write * sizeof(int32_t)));
    j->h_pub = cg_malloc((size_t)((p->n_write > 0 ? p->n_write : 1) * cols) * fl, "jaca: host rows to write");
    j->h_recv = cg_malloc((size_t)((p->recv_rows > 0 ? p->recv_rows : 1) * cols) * fl, "jaca: host rows received");
    j->h_read = cg_malloc((size_t)((p->n_read > 0 ? p->n_read : 1) * cols) * fl, "jaca: host rows read");
    if (!j->h_pub || !j->h_recv || !j->h_read) return CG_ERR_NOMEM;
  }
  return CG_OK;
}

static void jx_log(struct comm *c, const struct jaca_exchange *j) {
  /* node totals from each node's local rank 0 */
  int64_t v[4] = {0, 0, 0, 0};
  if (comm_local_rank(c) == 0) {
    v[0] = j->plan.n_union;
    v[1] = j->plan.n_admitted;
    v[2] = (int64_t)(j->layer_bytes * (size_t)(j->layers.nlayers - 1));
  }
  v[3] = j->plan.n_halo;
  if (comm_allreduce_i64(c, v, 4, COMM_SUM) != CG_OK) {
    cg_err_clear();
    return;
  }
  char desc[256];
  LOG_INFO("jaca", "%s", jaca_options_describe(&j->opt, desc, sizeof desc));
  LOG_INFO("jaca",
           "node tier: %lld of %lld node halo rows held on %d node%s (%lld halo rows over the ranks), "
           "%.1f MiB of shared memory in all",
           (long long)v[1], (long long)v[0], comm_nnodes(c), comm_nnodes(c) == 1 ? "" : "s",
           (long long)v[3], (double)v[2] / 1048576.0);
}

int jaca_exchange_create(struct comm *c, struct cg_backend *be, const struct part_local *pl,
                         const struct cg_csr *agg, int64_t max_cols, const struct jaca_layers *layers,
                         const struct jaca_options *o, struct cg_exchange **out) {
  int st = CG_OK;
  *out = NULL;
  struct comm_halo_plan plain_plan;
  memset(&plain_plan, 0, sizeof plain_plan);
  plain_plan.npeers = pl->npeers;
  plain_plan.peer = pl->peer;
  plain_plan.send_offset = pl->send_offset;
  plain_plan.send_count = pl->send_count;
  plain_plan.send_idx = pl->send_idx;
  plain_plan.recv_offset = pl->recv_offset;
  plain_plan.recv_count = pl->recv_count;
  plain_plan.n_inner = pl->n_inner;
  plain_plan.n_halo = pl->n_halo;
  st = jaca_options_check(o);
  if (st == CG_OK && (!layers || layers->nlayers < 1 || layers->cols < 1 || layers->cols > max_cols))
    st = cg_err_set(CG_ERR_ARG, "jaca_exchange_create: %d layers of %lld columns (at most max_cols %lld)",
                    layers ? layers->nlayers : 0, layers ? (long long)layers->cols : 0LL, (long long)max_cols);
  if (st == CG_OK && agg->nrows != pl->n_inner)
    st = cg_err_set(CG_ERR_ARG, "jaca_exchange_create: the operator has %lld rows, the rank %lld inner rows",
                    (long long)agg->nrows, (long long)pl->n_inner);
  TRY(comm_agree(c, st, "checking the halo cache's options"));
  if (o->policy == JACA_POLICY_NONE) return comm_exchange_create(c, be, &plain_plan, max_cols, out);

  struct jaca_exchange *j = cg_calloc(1, sizeof *j, "halo cache");
  if (j) {
    j->c = c;
    j->be = be;
    j->opt = *o;
    j->layers = *layers;
    j->gen = cg_calloc((size_t)layers->nlayers, sizeof(uint32_t), "jaca: generations");
    j->stats = cg_calloc((size_t)layers->nlayers, sizeof(struct jaca_stats), "jaca: statistics");
  }
  if (!j || !j->gen || !j->stats) st = CG_ERR_NOMEM;
  if (j)
    for (int k = 0; k < pl->npeers; k++) {
      j->plain_send_rows += pl->send_count[k];
      if (comm_node_of(c, pl->peer[k]) != comm_node(c)) j->plain_send_rows_inter += pl->send_count[k];
    }
  TRY_GOTO(comm_agree(c, st, "allocating the halo cache"), fail);
  TRY_GOTO(jaca_node_plan_build(c, pl, agg, o, layers, &j->plan), fail); /* agreed inside */
  TRY_GOTO(comm_exchange_create(c, be, &plain_plan, max_cols, &j->plain), fail);
  j->fwd = cg_calloc((size_t)j->plan.nclasses, sizeof *j->fwd, "jaca: forward exchanges");
  st = j->fwd ? CG_OK : CG_ERR_NOMEM;
  TRY_GOTO(comm_agree(c, st, "allocating the halo cache"), fail);
  for (int k = 0; k < j->plan.nclasses; k++) { /* one per refresh class, collective */
    const struct jaca_fwd_plan *f = &j->plan.cls[k];
    struct comm_halo_plan fp;
    memset(&fp, 0, sizeof fp);
    fp.npeers = f->npeers;
    fp.peer = f->peer;
    fp.send_offset = f->send_offset;
    fp.send_count = f->send_count;
    fp.send_idx = f->send_idx;
    fp.recv_offset = f->recv_offset;
    fp.recv_count = f->recv_count;
    fp.n_inner = j->plan.n_inner;
    fp.n_halo = f->recv_rows;
    TRY_GOTO(comm_halo_create(c, be, &fp, layers->cols, &j->fwd[k]), fail);
  }
  j->stride = jaca_row_stride(layers->cols);
  j->layer_bytes = j->stride * (size_t)j->plan.n_admitted;
  {
    /* one node-wide segment, given by local rank 0; aligned here (MPI gives 8 bytes) */
    const size_t bytes = j->layer_bytes * (size_t)(layers->nlayers - 1) + JACA_ROW_ALIGN;
    TRY_GOTO(comm_shm_create(c, comm_local_rank(c) == 0 ? bytes : 0, &j->shm), fail);
    uintptr_t base = (uintptr_t)comm_shm_node(j->shm, NULL);
    j->seg = (char *)((base + JACA_ROW_ALIGN - 1) / JACA_ROW_ALIGN * JACA_ROW_ALIGN);
  }
  st = jx_alloc(j);
  TRY_GOTO(comm_agree(c, st, "allocating the halo cache's buffers"), fail);
  j->ex.halo_begin = jx_halo_begin;
  j->ex.halo_end = jx_halo_end;
  j->ex.allreduce_grads = jx_allreduce_grads;
  j->ex.allreduce_host = jx_allreduce_host;
  j->ex.counters = jx_counters;
  j->ex.destroy = jx_destroy;
  jx_log(c, j);
  *out = &j->ex;
  return CG_OK;
fail:
  cg_err_trail(__FILE__, __LINE__, "jaca_exchange_create");
  if (j) {
    /* every rank got as far as the others (each step is agreed): collective frees */
    for (int k = 0; j->fwd && k < j->plan.nclasses; k++) comm_halo_destroy(&j->fwd[k]);
    comm_shm_destroy(&j->shm);
    cg_exchange_destroy(&j->plain);
    jx_free(j);
  }
  return st;
}
