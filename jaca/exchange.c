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
 *   before every rank has read generation g, because the step's all-reduces lie between
 *   (every rank finishes its forward pass first; jaca.h makes it the caller's rule). A
 *   newer row would mean a broken schedule, and is reported as such rather than used.
 *   The rule is checked where it can be without a wait: each rank marks in the segment
 *   the last generation of each layer it has read (a read word), and begin refuses to
 *   write g+1 while a rank of its node is below g, before it writes or posts anything
 *   (else a rank that broke the rule would be caught only when its early write happens
 *   to race a reader, with a message about the row instead of the rule).
 * - Every row read is checked against its global id, generation and epoch (the seqlock
 *   payload carries them), so a misplaced or stale row is an error, never a value.
 * - Evaluation (epoch 0) and the set-up exchange of the features (layer 0) go through
 *   the plain exchange: they are exact and uncached, and evaluation's rows (no dropout)
 *   never reach the tier that training reads. Training's backward exchanges go through
 *   the node tier's gradient path (jaca/ngrad.c, exact) or, with --grad-staleness, the
 *   stale-gradient path below.
 * - The CPU backend reads and writes backend memory in place; a device backend goes
 *   through host staging buffers (download, upload), allocated here once.
 * - Prefetch (jaca/prefetch.c): begin hands the rows end will read to the exchange's
 *   thread once this rank's own rows are published (the only hook besides end's
 *   finish); the thread copies what peers publish while the layer computes. end still
 *   completes its MPI transfer first, then takes over the rows the thread has not
 *   copied, with the same waits, timeout and checks as without prefetch: the same rows
 *   with the same values land in the same places (only who copies them differs).
 * - Prefetch on a device backend with side uploads (core/ops.h; CUDA): h_read is pinned
 *   and the rank tier's read rows travel on the exchange's upload channel: the thread
 *   enqueues the rows it copied while the layer computes, end only those it had not,
 *   then the backend's stream waits for the channel (an event) before end's gather
 *   reads d_src. Why no row is read early, uploaded twice or overwritten in flight:
 *   jaca/prefetch_internal.h. A backend without side uploads uploads all n_read rows
 *   in end, as with prefetch off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "jaca/exchange_internal.h"
#include "jaca/jaca.h"
#include "jaca/ngrad_internal.h"
#include "jaca/node_internal.h"
#include "jaca/prefetch_internal.h"
#include "jaca/seqlock_internal.h"

struct jaca_exchange {
  struct cg_exchange ex; /* first: the seam's table */
  struct comm *c;
  struct cg_backend *be;
  struct cg_exchange *plain;
  int bits; /* --halo-bits of its MPI exchanges (comm_halo_bits; 32: floats) */
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
  /* stale gradients (--grad-staleness G > 0): per class (phases 0..G) a reversed plan
   * (consumers send the gradients of their halo rows of that phase, owners receive them
   * into gstore); owners add all of gstore, fresh and kept, every time */
  int gnc;                        /* G + 1 classes, 0 without stale gradients */
  struct comm_halo **bwd;         /* per class */
  int64_t *gbase;                 /* per class: its rows' start in gstore */
  float **gstore;                 /* per layer, backend: plain send rows x cols */
  uint32_t **gepoch;              /* per layer: epoch each stored gradient was produced in */
  int32_t *d_gidx;                /* backend: the inner row each stored gradient adds into */
  int64_t nblk, *blk_off, *blk_cnt; /* the (class, peer) blocks of gstore, in order */
  uint32_t *bgen;                 /* per layer: backward generations */
  int gphase;                     /* the phases' G: opt.grad_staleness, 0 when adaptive */
  /* adaptive gradients (opt.grad_adaptive): one class, through mpi/'s variable-length
   * exchange; the consumer keeps per halo row the gradient it last sent and its epoch */
  struct comm_vhalo *gvh;
  int64_t g_send;                 /* the consumer's send rows: its halo rows, plan order */
  int32_t *g_sidx;                /* g_send: the halo row of each (host) */
  float **g_held;                 /* per layer, host: g_send x cols */
  uint32_t **g_held_epoch;        /* per layer: g_send (0: never sent) */
  unsigned char *g_sel, *g_got;   /* g_send flags out, gstore's rows flags in */
  float *h_ghalo;                 /* host: the halo block's gradients (device backends) */
  float **h_gstore;               /* per layer, host: gstore's copy (device backends) */
  struct jaca_ngrad *ng;          /* exact gradients through the node tier (G = 0) */
  int64_t plain_send_rows;        /* what the plain exchange sends forward per exchange */
  int64_t plain_send_rows_inter;  /* ... to ranks of other nodes */
  double timeout_s;               /* CAPGNN_JACA_TIMEOUT, opt.read_timeout_s or JACA_READ_TIMEOUT_S */
  /* prefetch (--cache-prefetch on): the thread, and the job of the exchange in flight */
  struct jaca_prefetch *pf;
  uint32_t *read_want;            /* n_read: the generation each node row must hold */
  struct jaca_row_meta *read_meta; /* n_read: what each row read said about itself */
  struct cg_upchan *upch;         /* device backends with side uploads: h_read's rows go to
                                     the rank tier on it (NULL: be->upload in end) */
  int h_read_pinned;              /* h_read from be->host_alloc */
  /* adaptive staleness (opt.adaptive): class 0 (every kept row) goes through mpi/'s
   * variable-length exchange; the sender keeps per destination row the copy it last
   * published (host) and the epoch of it */
  struct comm_vhalo *vh;
  int64_t a_send;                 /* class 0's send rows (per destination rank) */
  float **a_held;                 /* per layer, host: a_send x cols */
  uint32_t **a_held_epoch;        /* per layer: a_send (0: never sent) */
  float **w_held;                 /* per layer, host: n_write x cols (the node tier's copy) */
  uint32_t **w_held_epoch;        /* per layer: n_write */
  unsigned char *a_sel, *a_got;   /* a_send flags out, class 0's recv_rows flags in */
  float *h_arows;                 /* host: class 0's send rows now (device backends) */
  float **h_amirror;              /* per layer, host: class 0's received rows (device backends) */
  int32_t *d_aidx;                /* backend: class 0's send list (device backends) */
  float *d_arows;                 /* backend: a_send x cols (device backends) */
  size_t done_off;                /* segment: per layer and local rank, a done word */
  size_t read_off;                /* segment: per layer and local rank, a read word */
  /* the exchange in flight */
  int in_flight, delegated, layer;
  enum cg_halo_dir flight_dir;
  uint32_t flight_gen, flight_epoch;
};

static struct jaca_exchange *impl(struct cg_exchange *ex) { return (struct jaca_exchange *)ex; }
static int on_host_be(const struct cg_backend *be) { return be->kind == CG_DEVICE_CPU; }
static int on_host(const struct jaca_exchange *j) { return on_host_be(j->be); }

static char *node_row(const struct jaca_exchange *j, int layer, int64_t r) {
  return j->seg + (size_t)(layer - 1) * j->layer_bytes + (size_t)r * j->stride;
}

/* Training forward rows of hidden layers after the warm-up go through the tiers; their
 * gradients through the stale-gradient path when --grad-staleness > 0. */
static int cached(const struct jaca_exchange *j, enum cg_halo_dir dir, struct cg_halo_tag tag) {
  if (tag.epoch == 0 || tag.epoch <= (uint32_t)j->opt.warmup || tag.layer < 1 || tag.layer >= j->layers.nlayers)
    return 0;
  return dir == CG_HALO_FORWARD || (dir == CG_HALO_BACKWARD && (j->gnc > 0 || j->ng));
}

static int refreshed(const struct jaca_exchange *j, uint32_t g, int cls) {
  return jaca_last_refresh(g, cls, j->plan.staleness) == g;
}

/* Local rank lr's read word of layer l: the last generation it has finished reading from
 * the node tier. A writer of generation g checks that every rank of the node is at g - 1
 * (jaca.h: the collective between two forward exchanges of a layer). One line each. */
static char *read_word(const struct jaca_exchange *j, int layer, int lr) {
  return j->seg + j->read_off + ((size_t)(layer - 1) * (size_t)j->plan.local_size + (size_t)lr) * JACA_ROW_ALIGN;
}

/* ---- adaptive staleness ---- */

/* Local rank lr's done word of layer l: the last generation whose writes (its own rows
 * and the rows it received for the node) it has finished. One 64-byte line each. */
static char *done_word(const struct jaca_exchange *j, int layer, int lr) {
  return j->seg + j->done_off + ((size_t)(layer - 1) * (size_t)j->plan.local_size + (size_t)lr) * JACA_ROW_ALIGN;
}

/* Whether a kept row must go to a destination that holds `held` from epoch held_epoch
 * (0: nothing yet): when it drifted by more than eps (relative to the held copy's norm;
 * a NaN drift counts as more) or when the held copy would be older than `bound` at
 * `epoch`. eps = 0 sends every row every step (exact, bit for bit). */
static int adapt_due(const float *now, const float *held, uint32_t held_epoch, int64_t cols, double eps,
                     uint32_t epoch, int bound) {
  if (held_epoch == 0 || eps <= 0.0 || (int64_t)epoch - (int64_t)held_epoch > bound) return 1;
  double d2 = 0.0, h2 = 0.0;
  for (int64_t k = 0; k < cols; k++) {
    const double d = (double)now[k] - (double)held[k];
    d2 += d * d;
    h2 += (double)held[k] * (double)held[k];
  }
  const double den = h2 > 1e-60 ? h2 : 1e-60; /* max(||held||, 1e-30), squared */
  return !(d2 <= eps * eps * den);
}

/* The rounding key of a coded exchange (comm_halo_set_quant_key): what it carries, so
 * that runs (a resumed one included) round alike and the cache's exchanges of one step
 * round independently of each other. kind: 1 forward class, 2 stale-gradient class. */
static uint64_t quant_key(struct cg_halo_tag tag, int kind, int cls) {
  return ((uint64_t)tag.epoch << 32) ^ ((uint64_t)(uint32_t)tag.layer << 16) ^ ((uint64_t)kind << 12) ^
         (uint64_t)(uint32_t)cls;
}

/* ---- stale gradients ---- */

/* Backward of layer l at backward generation g: consumers send the gradients of the
 * halo rows whose phase is due (all at g = 1); owners keep every gradient they received
 * and add all of them, the fresh and the kept, into dx's inner rows, one (class, peer)
 * block at a time in a fixed order (so the sum does not depend on arrival order). */
static int gadapt_send(struct jaca_exchange *j, struct cg_halo_tag tag, const float *dx, int64_t cols);

static int bwd_begin(struct jaca_exchange *j, struct cg_halo_tag tag, float *dx, int64_t cols) {
  const int l = tag.layer, G = j->gphase;
  const uint32_t g = ++j->bgen[l];
  const int64_t ni = j->plan.n_inner;
  struct jaca_stats *s = &j->stats[l];
  if (j->gvh) TRY(gadapt_send(j, tag, dx, cols));
  for (int c = 0; !j->gvh && c < j->gnc; c++) {
    if (jaca_last_refresh(g, c, G) != g) continue;
    const int64_t before = comm_halo_bytes_sent(j->bwd[c]);
    comm_halo_set_quant_key(j->bwd[c], quant_key(tag, 2, c));
    TRY(comm_halo_begin_into(j->bwd[c], CG_HALO_FORWARD, dx + ni * cols, j->gstore[l] + j->gbase[c] * cols, cols));
    s->grad_bytes += comm_halo_bytes_sent(j->bwd[c]) - before;
  }
  s->grad_bytes_exact += j->plan.n_halo * comm_halo_row_bytes(cols, j->bits);
  j->in_flight = 1;
  j->delegated = 0;
  j->layer = l;
  j->flight_dir = CG_HALO_BACKWARD;
  j->flight_gen = g;
  j->flight_epoch = tag.epoch;
  return CG_OK;
}

static int bwd_end(struct jaca_exchange *j, struct cg_halo_tag tag, float *dx, int64_t cols) {
  struct cg_backend *be = j->be;
  const int l = tag.layer, G = j->opt.grad_staleness; /* the bound (adaptive: its G) */
  const uint32_t g = j->flight_gen;
  const int64_t ni = j->plan.n_inner;
  struct jaca_stats *s = &j->stats[l];
  if (j->gvh) {
    /* the gradients sent now land in their places of the owner's store; the others stay
     * as last received (on a device backend: in the host copy, then all of it goes up) */
    const int64_t rows = j->gbase[1];
    float *store = on_host(j) ? j->gstore[l] : j->h_gstore[l];
    int64_t n = 0;
    TRY(comm_vhalo_end(j->gvh, store, j->g_got, cols, &n));
    for (int64_t k = 0; k < rows; k++)
      if (j->g_got[k]) j->gepoch[l][k] = tag.epoch;
    s->grad_refreshed += n;
    if (!on_host(j) && rows > 0) {
      TRY(be->upload(be, j->gstore[l], store, (size_t)(rows * cols) * sizeof(float)));
      s->bytes_h2d += rows * cols * (int64_t)sizeof(float);
    }
  }
  for (int c = 0; !j->gvh && c < j->gnc; c++) {
    if (jaca_last_refresh(g, c, j->gphase) != g) continue;
    TRY(comm_halo_end_into(j->bwd[c], CG_HALO_FORWARD, dx + ni * cols, j->gstore[l] + j->gbase[c] * cols, cols));
    const int64_t n = comm_halo_recv_rows(j->bwd[c]);
    for (int64_t k = 0; k < n; k++) j->gepoch[l][j->gbase[c] + k] = tag.epoch;
    s->grad_refreshed += n;
  }
  const int64_t rows = j->gbase[j->gnc];
  for (int64_t k = 0; k < rows; k++) {
    const int64_t age = (int64_t)tag.epoch - (int64_t)j->gepoch[l][k];
    if (age < 0 || age > G)
      return cg_err_set(CG_ERR_INTERNAL, "jaca: a kept gradient of layer %d is %lld epochs old (grad staleness %d)",
                        l, (long long)age, G);
    if (age > s->grad_age_max) s->grad_age_max = age;
  }
  s->grad_used += rows;
  for (int64_t b = 0; b < j->nblk; b++)
    be->scatter_add_rows(be, j->gstore[l] + j->blk_off[b] * cols, cols, j->d_gidx + j->blk_off[b], j->blk_cnt[b], dx);
  return CG_OK;
}

/* Adaptive gradients: the consumer's held copies and flags, and on a device backend the
 * host copies of the halo block and of the owner's store (local; agreed by the caller). */
static int gadapt_alloc(struct jaca_exchange *j, int64_t store_rows) {
  const int L = j->layers.nlayers;
  const int64_t n = j->g_send > 0 ? j->g_send : 1, cols = j->layers.cols, nh = j->plan.n_halo > 0 ? j->plan.n_halo : 1;
  const int64_t nst = store_rows > 0 ? store_rows : 1;
  j->g_held = cg_calloc((size_t)L, sizeof *j->g_held, "jaca: adaptive gradients sent");
  j->g_held_epoch = cg_calloc((size_t)L, sizeof *j->g_held_epoch, "jaca: adaptive gradients' epochs");
  j->h_gstore = cg_calloc((size_t)L, sizeof *j->h_gstore, "jaca: kept gradients (host)");
  j->g_sel = cg_malloc((size_t)n, "jaca: adaptive gradients to send");
  j->g_got = cg_malloc((size_t)nst, "jaca: adaptive gradients received");
  if (!j->g_held || !j->g_held_epoch || !j->h_gstore || !j->g_sel || !j->g_got) return CG_ERR_NOMEM;
  for (int l = 1; l < L; l++) {
    j->g_held[l] = cg_calloc((size_t)(n * cols), sizeof(float), "jaca: adaptive gradients sent");
    j->g_held_epoch[l] = cg_calloc((size_t)n, sizeof(uint32_t), "jaca: adaptive gradients' epochs");
    if (!j->g_held[l] || !j->g_held_epoch[l]) return CG_ERR_NOMEM;
    if (!on_host(j)) {
      j->h_gstore[l] = cg_calloc((size_t)(nst * cols), sizeof(float), "jaca: kept gradients (host)");
      if (!j->h_gstore[l]) return CG_ERR_NOMEM;
    }
  }
  if (!on_host(j)) {
    j->h_ghalo = cg_malloc((size_t)(nh * cols) * sizeof(float), "jaca: halo gradients (host)");
    if (!j->h_ghalo) return CG_ERR_NOMEM;
  }
  return CG_OK;
}

/* Adaptive gradients, begin: each halo row's gradient now against the copy last sent to
 * its owner (adapt_due, bound G); those due are copied into the held copies and sent. */
static int gadapt_send(struct jaca_exchange *j, struct cg_halo_tag tag, const float *dx, int64_t cols) {
  struct cg_backend *be = j->be;
  const int l = tag.layer;
  const int64_t ni = j->plan.n_inner, nh = j->plan.n_halo, n = j->g_send;
  struct jaca_stats *s = &j->stats[l];
  const float *halo = dx + ni * cols;
  if (!on_host(j) && nh > 0) {
    TRY(be->download(be, j->h_ghalo, halo, (size_t)(nh * cols) * sizeof(float)));
    s->bytes_d2h += nh * cols * (int64_t)sizeof(float);
    halo = j->h_ghalo;
  }
  float *held = j->g_held[l];
  uint32_t *he = j->g_held_epoch[l];
  int64_t sent = 0;
  for (int64_t k = 0; k < n; k++) {
    const float *now = halo + (int64_t)j->g_sidx[k] * cols;
    const int due = adapt_due(now, held + k * cols, he[k], cols, j->opt.grad_adapt_eps, tag.epoch,
                              j->opt.grad_staleness);
    j->g_sel[k] = (unsigned char)due;
    if (!due) continue;
    memcpy(held + k * cols, now, (size_t)cols * sizeof(float));
    he[k] = tag.epoch;
    sent++;
  }
  const int64_t b0 = comm_vhalo_bytes_sent(j->gvh);
  TRY(comm_vhalo_begin(j->gvh, held, j->g_sel, cols));
  const int64_t db = comm_vhalo_bytes_sent(j->gvh) - b0;
  s->grad_bytes += db;
  s->grad_index_bytes += db - sent * cols * (int64_t)sizeof(float); /* positions beside partial blocks */
  s->grad_sent += sent;
  s->grad_skipped += n - sent;
  return CG_OK;
}

/* The reversed plans of the stale-gradient path, one per phase, and the owner's store
 * (collective: every rank creates every class's exchange). */
static int bwd_create(struct comm *c, const struct part_local *pl, struct jaca_exchange *j) {
  int st = CG_OK;
  const int G = j->opt.grad_adaptive ? 0 : j->opt.grad_staleness, NC = G + 1;
  const int64_t ni = pl->n_inner, nh = pl->n_halo;
  j->gphase = G;
  struct cg_backend *be = j->be;
  int64_t plain_send = 0;
  for (int k = 0; k < pl->npeers; k++) plain_send += pl->send_count[k];
  j->gnc = NC;
  j->bwd = cg_calloc((size_t)NC, sizeof *j->bwd, "jaca: gradient exchanges");
  j->gbase = cg_calloc((size_t)NC + 1, sizeof(int64_t), "jaca: gradient store layout");
  j->blk_off = cg_calloc((size_t)NC * (size_t)(pl->npeers > 0 ? pl->npeers : 1), sizeof(int64_t), "jaca: blocks");
  j->blk_cnt = cg_calloc((size_t)NC * (size_t)(pl->npeers > 0 ? pl->npeers : 1), sizeof(int64_t), "jaca: blocks");
  int32_t *gidx = cg_malloc(sizeof(int32_t) * (size_t)(plain_send > 0 ? plain_send : 1), "jaca: gradient rows");
  /* per class: peers, consumer-side send lists (halo rows), owner-side counts */
  const size_t np = (size_t)(pl->npeers > 0 ? pl->npeers : 1);
  int32_t *peer = cg_malloc(sizeof(int32_t) * np, "jaca: gradient plan");
  int64_t *soff = cg_malloc(sizeof(int64_t) * np, "jaca: gradient plan"), *scnt = cg_malloc(sizeof(int64_t) * np, "jaca: gradient plan");
  int64_t *roff = cg_malloc(sizeof(int64_t) * np, "jaca: gradient plan"), *rcnt = cg_malloc(sizeof(int64_t) * np, "jaca: gradient plan");
  int32_t *sidx = cg_malloc(sizeof(int32_t) * (size_t)(nh > 0 ? nh : 1), "jaca: gradient plan");
  if (!j->bwd || !j->gbase || !j->blk_off || !j->blk_cnt || !gidx || !peer || !soff || !scnt || !roff || !rcnt || !sidx)
    st = CG_ERR_NOMEM;
  for (int cl = 0; cl < NC; cl++) {
    TRY_GOTO(comm_agree(c, st, "jaca: the gradient plans"), done);
    int n = 0;
    int64_t ns = 0, nr = 0;
    j->gbase[cl + 1] = j->gbase[cl];
    for (int k = 0; k < pl->npeers; k++) {
      int64_t sk = 0, rk = 0;
      for (int64_t i = pl->recv_offset[k]; i < pl->recv_offset[k] + pl->recv_count[k]; i++)
        if (jaca_phase(pl->gid[ni + i], G) == cl) sidx[ns + sk++] = (int32_t)i;
      const int64_t b = j->nblk;
      j->blk_off[b] = j->gbase[cl + 1];
      for (int64_t q = pl->send_offset[k]; q < pl->send_offset[k] + pl->send_count[k]; q++)
        if (jaca_phase(pl->gid[pl->send_idx[q]], G) == cl) gidx[j->gbase[cl + 1] + rk++] = pl->send_idx[q];
      if (rk > 0) {
        j->blk_cnt[b] = rk;
        j->nblk++;
        j->gbase[cl + 1] += rk;
      }
      if (sk == 0 && rk == 0) continue;
      peer[n] = pl->peer[k];
      soff[n] = ns;
      scnt[n] = sk;
      roff[n] = nr;
      rcnt[n] = rk;
      ns += sk;
      nr += rk;
      n++;
    }
    struct comm_halo_plan fp;
    memset(&fp, 0, sizeof fp);
    fp.npeers = n;
    fp.peer = peer;
    fp.send_offset = soff;
    fp.send_count = scnt;
    fp.send_idx = sidx;
    fp.recv_offset = roff;
    fp.recv_count = rcnt;
    fp.n_inner = nh; /* the consumer sends from its halo block */
    fp.n_halo = nr;
    if (j->opt.grad_adaptive) { /* one class: every halo row, a candidate every step */
      j->g_send = ns;
      j->g_sidx = cg_malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1), "jaca: adaptive gradient rows");
      st = j->g_sidx ? CG_OK : CG_ERR_NOMEM;
      if (st == CG_OK && ns > 0) memcpy(j->g_sidx, sidx, sizeof(int32_t) * (size_t)ns);
      TRY_GOTO(comm_agree(c, st, "jaca: the adaptive gradient plan"), done);
      TRY_GOTO(comm_vhalo_create(c, &fp, j->layers.cols, &j->gvh), done);
      comm_vhalo_count_as(j->gvh, CG_HALO_BACKWARD); /* gradients, if sent by "forward" calls */
    } else {
      TRY_GOTO(comm_halo_create(c, be, &fp, j->layers.cols, &j->bwd[cl]), done);
      comm_halo_count_as(j->bwd[cl], CG_HALO_BACKWARD);
    }
  }
  const int L = j->layers.nlayers;
  j->gstore = cg_calloc((size_t)L, sizeof *j->gstore, "jaca: gradient store per layer");
  j->gepoch = cg_calloc((size_t)L, sizeof *j->gepoch, "jaca: gradient epochs per layer");
  j->bgen = cg_calloc((size_t)L, sizeof *j->bgen, "jaca: backward generations");
  st = j->gstore && j->gepoch && j->bgen ? CG_OK : CG_ERR_NOMEM;
  for (int l = 1; st == CG_OK && l < L; l++) {
    st = be->alloc(be, (void **)&j->gstore[l], (size_t)((plain_send > 0 ? plain_send : 1) * j->layers.cols) * sizeof(float),
                   "jaca: kept gradients");
    j->gepoch[l] = cg_calloc((size_t)(plain_send > 0 ? plain_send : 1), sizeof(uint32_t), "jaca: kept gradients' epochs");
    if (st == CG_OK && !j->gepoch[l]) st = CG_ERR_NOMEM;
  }
  if (st == CG_OK) st = be->alloc(be, (void **)&j->d_gidx, (size_t)(plain_send > 0 ? plain_send : 1) * sizeof(int32_t),
                                  "jaca: kept gradients' rows");
  if (st == CG_OK && plain_send > 0) st = be->upload(be, j->d_gidx, gidx, (size_t)plain_send * sizeof(int32_t));
  if (st == CG_OK && j->gvh) st = gadapt_alloc(j, plain_send);
  st = comm_agree(c, st, "jaca: the gradient store");
done:
  cg_free(gidx);
  cg_free(peer);
  cg_free(soff);
  cg_free(scnt);
  cg_free(roff);
  cg_free(rcnt);
  cg_free(sidx);
  return st;
}

static void bwd_free(struct jaca_exchange *j) {
  struct cg_backend *be = j->be;
  for (int l = 1; l < j->layers.nlayers; l++) {
    if (j->gstore && be) be->free(be, j->gstore[l]);
    if (j->gepoch) cg_free(j->gepoch[l]);
  }
  if (be) be->free(be, j->d_gidx);
  cg_free(j->gstore);
  cg_free(j->gepoch);
  cg_free(j->bgen);
  cg_free(j->bwd);
  cg_free(j->gbase);
  cg_free(j->blk_off);
  cg_free(j->blk_cnt);
  for (int l = 1; l < j->layers.nlayers; l++) {
    if (j->g_held) cg_free(j->g_held[l]);
    if (j->g_held_epoch) cg_free(j->g_held_epoch[l]);
    if (j->h_gstore) cg_free(j->h_gstore[l]);
  }
  cg_free(j->g_held);
  cg_free(j->g_held_epoch);
  cg_free(j->h_gstore);
  cg_free(j->g_sidx);
  cg_free(j->g_sel);
  cg_free(j->g_got);
  cg_free(j->h_ghalo);
}

/* Adaptive staleness, begin: class 0's send rows now (host), which of them are due for
 * their destination (adapt_due), those copied into the held copies and sent. */
static int adapt_send(struct jaca_exchange *j, struct cg_halo_tag tag, const float *x, int64_t cols) {
  struct cg_backend *be = j->be;
  const int l = tag.layer;
  const struct jaca_fwd_plan *f = &j->plan.cls[0];
  struct jaca_stats *s = &j->stats[l];
  const int64_t n = j->a_send;
  if (!on_host(j) && n > 0) {
    be->gather_rows(be, x, cols, j->d_aidx, n, j->d_arows);
    TRY(be->download(be, j->h_arows, j->d_arows, (size_t)(n * cols) * sizeof(float)));
    s->bytes_d2h += n * cols * (int64_t)sizeof(float);
  }
  float *held = j->a_held[l];
  uint32_t *he = j->a_held_epoch[l];
  int64_t sent = 0;
  for (int64_t k = 0; k < n; k++) {
    const float *now = on_host(j) ? x + (int64_t)f->send_idx[k] * cols : j->h_arows + k * cols;
    const int due = adapt_due(now, held + k * cols, he[k], cols, j->opt.adapt_eps, tag.epoch, j->opt.staleness);
    j->a_sel[k] = (unsigned char)due;
    if (!due) continue;
    memcpy(held + k * cols, now, (size_t)cols * sizeof(float));
    he[k] = tag.epoch;
    sent++;
  }
  const int64_t b0 = comm_vhalo_bytes_sent(j->vh), i0 = comm_vhalo_inter_bytes_sent(j->vh);
  TRY(comm_vhalo_begin(j->vh, held, j->a_sel, cols));
  const int64_t db = comm_vhalo_bytes_sent(j->vh) - b0, di = comm_vhalo_inter_bytes_sent(j->vh) - i0;
  s->bytes_inter += di;
  s->bytes_intra += db - di;
  s->adapt_index_bytes += db - sent * cols * (int64_t)sizeof(float); /* positions beside partial blocks */
  s->adapt_sent += sent;
  s->adapt_skipped += n - sent;
  return CG_OK;
}

/* Adaptive staleness, begin: this rank's own rows of its node's tier, each written when
 * due against the copy the tier holds. *nw: rows written. */
static int adapt_write(struct jaca_exchange *j, struct cg_halo_tag tag, uint32_t g, const float *x, int64_t cols,
                       int64_t *nw) {
  struct cg_backend *be = j->be;
  const struct jaca_node_plan *p = &j->plan;
  const int l = tag.layer;
  struct jaca_stats *s = &j->stats[l];
  *nw = 0;
  if (p->n_write == 0) return CG_OK;
  if (!on_host(j)) {
    be->gather_rows(be, x, cols, j->d_widx, p->n_write, j->d_pub);
    TRY(be->download(be, j->h_pub, j->d_pub, (size_t)(p->n_write * cols) * sizeof(float)));
    s->bytes_d2h += p->n_write * cols * (int64_t)sizeof(float);
  }
  float *held = j->w_held[l];
  uint32_t *he = j->w_held_epoch[l];
  for (int64_t k = 0; k < p->n_write; k++) {
    const float *row = on_host(j) ? x + (int64_t)p->write_idx[k] * cols : j->h_pub + k * cols;
    if (!adapt_due(row, held + k * cols, he[k], cols, j->opt.adapt_eps, tag.epoch, j->opt.staleness)) {
      s->adapt_skipped++;
      continue;
    }
    memcpy(held + k * cols, row, (size_t)cols * sizeof(float));
    he[k] = tag.epoch;
    const struct jaca_row_meta m = {g, tag.epoch, (uint32_t)p->admitted_gid[p->write_row[k]]};
    jaca_row_publish(node_row(j, l, p->write_row[k]), row, cols, &m);
    s->adapt_sent++;
    (*nw)++;
  }
  return CG_OK;
}

/* Adaptive staleness, end: class 0's rows received now into the rank tier (with their
 * epoch) and, those for the node, into the node tier; the others stay as they were.
 * *direct_now / *mine_now: direct rows / rows for the node received. */
static int adapt_recv(struct jaca_exchange *j, struct cg_halo_tag tag, uint32_t g, int64_t cols, int64_t *direct_now,
                      int64_t *mine_now) {
  struct cg_backend *be = j->be;
  const struct jaca_node_plan *p = &j->plan;
  const struct jaca_fwd_plan *f = &p->cls[0];
  const int l = tag.layer;
  struct jaca_stats *s = &j->stats[l];
  float *blk = on_host(j) ? j->d_src[l] + f->recv_base * cols : j->h_amirror[l];
  TRY(comm_vhalo_end(j->vh, blk, j->a_got, cols, NULL));
  uint32_t *src_epoch = j->src_epoch[l];
  for (int64_t k = 0; k < f->recv_rows; k++) {
    if (!j->a_got[k]) continue;
    src_epoch[f->recv_base + k] = tag.epoch;
    if (f->recv_dest[k] >= 0) {
      (*direct_now)++;
      continue;
    }
    const int64_t r = -1 - f->recv_dest[k];
    const struct jaca_row_meta m = {g, tag.epoch, (uint32_t)p->admitted_gid[r]};
    jaca_row_publish(node_row(j, l, r), blk + k * cols, cols, &m);
    (*mine_now)++;
  }
  if (!on_host(j) && f->recv_rows > 0) {
    TRY(be->upload(be, j->d_src[l] + f->recv_base * cols, blk, (size_t)(f->recv_rows * cols) * sizeof(float)));
    s->bytes_h2d += f->recv_rows * cols * (int64_t)sizeof(float);
  }
  return CG_OK;
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
  if (dir == CG_HALO_BACKWARD && j->gnc == 0) {
    struct jaca_stats *s = &j->stats[tag.layer];
    TRY(jaca_ngrad_begin(j->ng, tag.layer, tag.epoch, x, cols, &s->grad_bytes, &s->grad_bytes_shm));
    s->grad_bytes_exact += j->plan.n_halo * comm_halo_row_bytes(cols, j->bits);
    j->in_flight = 1;
    j->delegated = 0;
    j->layer = tag.layer;
    j->flight_dir = CG_HALO_BACKWARD;
    j->flight_epoch = tag.epoch;
    return CG_OK;
  }
  if (dir == CG_HALO_BACKWARD) return bwd_begin(j, tag, x, cols);
  const struct jaca_node_plan *p = &j->plan;
  struct cg_backend *be = j->be;
  const int l = tag.layer;
  const uint32_t g = j->gen[l] + 1;
  /* generation g overwrites rows of g - 1: a rank of the node still reading those would
   * take a row of the wrong generation (end refuses it) or wait past its own (a check,
   * not a wait: the caller's collective orders them; jaca.h) */
  for (int r = 0; r < p->local_size && g > 1; r++) {
    const uint32_t seen = jaca_word_read(read_word(j, l, r));
    if (seen < g - 1)
      return cg_err_set(CG_ERR_ARG,
                        "jaca: forward exchange %u of layer %d (epoch %u) began while local rank %d of this node "
                        "had not finished reading exchange %u (it is at %u): two training forward exchanges of "
                        "a layer need a collective of every rank between them (jaca/jaca.h)",
                        g, l, tag.epoch, r, g - 1, seen);
  }
  j->gen[l] = g;
  struct jaca_stats *s = &j->stats[l];
  for (int c = 0; c < p->nclasses; c++) {
    if (!refreshed(j, g, c)) continue;
    if (j->vh && c == 0) {
      TRY(adapt_send(j, tag, x, cols));
      continue;
    }
    const struct jaca_fwd_plan *f = &p->cls[c];
    comm_halo_set_quant_key(j->fwd[c], quant_key(tag, 1, c));
    TRY(comm_halo_begin_into(j->fwd[c], CG_HALO_FORWARD, x, j->d_src[l] + f->recv_base * cols, cols));
    s->bytes_intra += f->send_rows_intra * comm_halo_row_bytes(cols, j->bits);
    s->bytes_inter += f->send_rows_inter * comm_halo_row_bytes(cols, j->bits);
  }
  /* this rank's own rows that its node's tier holds, those due now */
  int64_t nw = 0;
  if (j->vh) TRY(adapt_write(j, tag, g, x, cols, &nw));
  else
    for (int64_t k = 0; k < p->n_write; k++) nw += refreshed(j, g, p->write_phase[k]);
  if (nw > 0 && !j->vh) {
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
  if (j->pf && p->n_read > 0) {
    for (int64_t k = 0; k < p->n_read; k++) j->read_want[k] = jaca_last_refresh(g, p->read_phase[k], p->staleness);
    const struct jaca_prefetch_job job = {node_row(j, l, 0), j->stride, p->read_row, j->read_want,
                                          on_host(j) ? j->d_src[l] + p->recv_rows * cols : j->h_read,
                                          j->read_meta, p->n_read, cols,
                                          j->upch ? be : NULL, j->upch,
                                          j->upch ? j->d_src[l] + p->recv_rows * cols : NULL};
    TRY(jaca_prefetch_submit(j->pf, &job));
  }
  /* the plain exchange of the same run (coded as this run's rows are) */
  s->bytes_exact += j->plain_send_rows * comm_halo_row_bytes(cols, j->bits);
  s->bytes_exact_inter += j->plain_send_rows_inter * comm_halo_row_bytes(cols, j->bits);
  j->in_flight = 1;
  j->delegated = 0;
  j->layer = l;
  j->flight_dir = CG_HALO_FORWARD;
  j->flight_gen = g;
  j->flight_epoch = tag.epoch;
  return CG_OK;
}

/* Polls every transfer the exchange in flight has posted (core/exchange.h, Progress);
 * 1 once all of them have completed. The tier's copies happen in end, as without polling. */
static int jx_halo_progress(struct cg_exchange *ex) {
  struct jaca_exchange *j = impl(ex);
  if (!j->in_flight) return cg_err_set(CG_ERR_ARG, "jaca: halo_progress without halo_begin");
  if (j->delegated) return cg_exchange_halo_progress(j->plain);
  const uint32_t g = j->flight_gen;
  int done = 1;
  if (j->flight_dir == CG_HALO_BACKWARD && j->gnc == 0) return jaca_ngrad_progress(j->ng);
  if (j->flight_dir == CG_HALO_BACKWARD && j->gvh) return comm_vhalo_progress(j->gvh);
  if (j->flight_dir == CG_HALO_BACKWARD) {
    for (int c = 0; c < j->gnc; c++) {
      if (jaca_last_refresh(g, c, j->gphase) != g) continue;
      const int st = comm_halo_progress(j->bwd[c]);
      if (st < 0) return st;
      done &= st;
    }
    return done;
  }
  for (int c = 0; c < j->plan.nclasses; c++) {
    if (!refreshed(j, g, c)) continue;
    const int st = j->vh && c == 0 ? comm_vhalo_progress(j->vh) : comm_halo_progress(j->fwd[c]);
    if (st < 0) return st;
    done &= st;
  }
  return done;
}

static int jx_halo_end(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                       int64_t cols) {
  struct jaca_exchange *j = impl(ex);
  if (!j->in_flight) return cg_err_set(CG_ERR_ARG, "jaca: halo_end without halo_begin");
  if (j->delegated) {
    j->in_flight = j->delegated = 0;
    return j->plain->halo_end(j->plain, dir, tag, x, cols);
  }
  if (!cached(j, dir, tag) || tag.layer != j->layer || tag.epoch != j->flight_epoch || dir != j->flight_dir)
    return cg_err_set(CG_ERR_ARG, "jaca: halo_end (layer %d, epoch %u) does not match its begin (layer %d, epoch %u)",
                      tag.layer, tag.epoch, j->layer, j->flight_epoch);
  j->in_flight = 0;
  if (dir == CG_HALO_BACKWARD && j->gnc == 0) {
    struct jaca_stats *s = &j->stats[tag.layer];
    TRY(jaca_ngrad_end(j->ng, tag.layer, tag.epoch, x, cols, &s->torn_reads));
    s->grad_used += j->plan.n_halo;
    return CG_OK;
  }
  if (dir == CG_HALO_BACKWARD) return bwd_end(j, tag, x, cols);
  const struct jaca_node_plan *p = &j->plan;
  struct cg_backend *be = j->be;
  const uint32_t g = j->flight_gen;
  const int l = tag.layer, S = j->opt.staleness; /* the bound (adaptive: its S, not the plan's phases) */
  const double timeout = j->timeout_s;
  float *src = j->d_src[l];
  uint32_t *src_epoch = j->src_epoch[l];
  struct jaca_stats *s = &j->stats[l];
  int64_t direct_now = 0, mine_now = 0; /* direct rows and rows for the node received now */
  for (int c = 0; c < p->nclasses; c++) {
    if (!refreshed(j, g, c)) continue;
    if (j->vh && c == 0) {
      TRY(adapt_recv(j, tag, g, cols, &direct_now, &mine_now));
      continue;
    }
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
  /* this rank's rows from the node tier, each of the generation that last refreshed it:
   * those the prefetch thread has not copied yet, or all of them */
  float *dst = on_host(j) ? src + p->recv_rows * cols : j->h_read;
  int64_t read_fresh = 0, bad = -1;
  if (j->vh) {
    /* which rows were written now depends on their writers' data: wait until every rank
     * of the node has finished its writes of generation g (each is past its own MPI
     * transfer when it says so), then take each row as it is (no prefetch: pf is NULL) */
    jaca_word_publish(done_word(j, l, p->local_rank), g);
    for (int r = 0; r < p->local_size; r++) {
      uint32_t seen = 0;
      if (jaca_word_wait(done_word(j, l, r), g, timeout, &seen) < 0)
        return cg_err_set(CG_ERR_INTERNAL,
                          "jaca: local rank %d did not finish its node tier writes of layer %d, epoch %u "
                          "(generation %u) within %g s (it is at %u): it is gone, stuck or slower than that (see "
                          "its log; CAPGNN_JACA_TIMEOUT=SECONDS waits longer)",
                          r, l, tag.epoch, g, timeout, seen);
    }
  }
  struct jaca_prefetch_result pr;
  memset(&pr, 0, sizeof pr);
  if (j->pf && p->n_read > 0) {
    bad = jaca_prefetch_finish(j->pf, timeout, &pr);
    s->prefetched += pr.prefetched;
    s->end_copied += pr.in_end;
    s->torn_reads += pr.torn;
    s->end_wait_ns += pr.wait_ns;
  } else if (p->n_read > 0) {
    const double t0 = cg_time_now();
    for (int64_t k = 0; k < p->n_read; k++) {
      const uint32_t want = j->vh ? 1u : jaca_last_refresh(g, p->read_phase[k], S);
      const int64_t torn = jaca_row_read_wait(node_row(j, l, p->read_row[k]), dst + k * cols, cols, want, timeout,
                                              &j->read_meta[k]);
      if (torn < 0) {
        bad = k;
        break;
      }
      s->torn_reads += torn;
      s->end_copied++;
    }
    s->end_wait_ns += (int64_t)((cg_time_now() - t0) * 1e9);
  }
  if (bad >= 0) {
    const int64_t r = p->read_row[bad];
    return cg_err_set(CG_ERR_INTERNAL,
                      "jaca: node row %lld (vertex %d, layer %d, owned by rank %d) did not reach generation %u "
                      "(epoch %u's exchange) within %g s (it holds generation %u): the rank that writes it (its "
                      "owner, or the rank of this node that receives it) is gone, stuck or slower than that (see "
                      "its log; CAPGNN_JACA_TIMEOUT=SECONDS waits longer)",
                      (long long)r, p->admitted_gid[r], l, p->halo_owner[p->read_halo[bad]],
                      j->vh ? 1u : jaca_last_refresh(g, p->read_phase[bad], S), tag.epoch, timeout,
                      j->read_meta[bad].gen);
  }
  for (int64_t k = 0; k < p->n_read; k++) {
    const struct jaca_row_meta m = j->read_meta[k];
    const int64_t r = p->read_row[k];
    const uint32_t want = j->vh ? 1u : jaca_last_refresh(g, p->read_phase[k], S);
    if (!j->vh) read_fresh += want == g;
    const int64_t age = (int64_t)tag.epoch - (int64_t)m.epoch;
    if (j->vh) read_fresh += m.gen == g;
    if ((j->vh ? m.gen > g : m.gen != want) || m.gid != (uint32_t)p->admitted_gid[r] || age < 0 || age > S)
      return cg_err_set(CG_ERR_INTERNAL,
                        "jaca: node row %lld of layer %d holds vertex %u, generation %u, epoch %u; expected "
                        "vertex %d, generation %u, at most %d epochs before epoch %u",
                        (long long)r, l, m.gid, m.gen, m.epoch, p->admitted_gid[r], want, S, tag.epoch);
    s->age_sum += age;
    if (age > s->age_max) s->age_max = age;
  }
  jaca_word_publish(read_word(j, l, p->local_rank), g); /* the node tier's rows of g are read */
  if (!on_host(j) && p->n_read > 0) {
    /* every read row once: on the channel (the rows the thread has not enqueued, then
     * the stream waits for all of them), or all here */
    if (j->upch && j->pf) TRY(jaca_prefetch_upload_rest(j->pf, &pr));
    else TRY(be->upload(be, src + p->recv_rows * cols, j->h_read, (size_t)(p->n_read * cols) * sizeof(float)));
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
    t->grad_bytes += s->grad_bytes;
    t->grad_bytes_exact += s->grad_bytes_exact;
    t->grad_bytes_shm += s->grad_bytes_shm;
    t->grad_refreshed += s->grad_refreshed;
    t->grad_used += s->grad_used;
    if (s->grad_age_max > t->grad_age_max) t->grad_age_max = s->grad_age_max;
    t->grad_sent += s->grad_sent;
    t->grad_skipped += s->grad_skipped;
    t->grad_index_bytes += s->grad_index_bytes;
    t->prefetched += s->prefetched;
    t->end_copied += s->end_copied;
    t->end_wait_ns += s->end_wait_ns;
    t->adapt_sent += s->adapt_sent;
    t->adapt_skipped += s->adapt_skipped;
    t->adapt_index_bytes += s->adapt_index_bytes;
  }
}

static void jx_counters(const struct cg_exchange *ex, struct cg_exchange_counters *out) {
  const struct jaca_exchange *j = (const struct jaca_exchange *)ex;
  j->plain->counters(j->plain, out);
  struct jaca_stats t;
  stats_sum(j, &t);
  for (int c = 0; c < j->plan.nclasses; c++) {
    if (!j->fwd[c]) continue; /* adaptive: class 0 is the variable-length exchange */
    out->halo_bytes += comm_halo_bytes_sent(j->fwd[c]);
    out->inter_node_bytes += comm_halo_inter_bytes_sent(j->fwd[c]);
  }
  out->halo_bytes += comm_vhalo_bytes_sent(j->vh);
  out->inter_node_bytes += comm_vhalo_inter_bytes_sent(j->vh);
  for (int c = 0; c < j->gnc; c++) {
    if (!j->bwd[c]) continue; /* adaptive gradients: the variable-length exchange */
    out->halo_bytes += comm_halo_bytes_sent(j->bwd[c]);
    out->inter_node_bytes += comm_halo_inter_bytes_sent(j->bwd[c]);
  }
  out->halo_bytes += comm_vhalo_bytes_sent(j->gvh);
  out->inter_node_bytes += comm_vhalo_inter_bytes_sent(j->gvh);
  out->halo_bytes += jaca_ngrad_bytes_sent(j->ng);
  out->inter_node_bytes += jaca_ngrad_inter_bytes_sent(j->ng);
  out->cache_hits += t.rank_hits + t.node_hits;
  out->cache_lookups += t.lookups;
}

static void jx_free(struct jaca_exchange *j) {
  struct cg_backend *be = j->be;
  jaca_prefetch_destroy(&j->pf); /* first: its thread reads the segment, writes d_src */
  /* then the channel (waits for the uploads in flight), before h_read and d_src go */
  if (be && j->upch) be->upchan_destroy(be, j->upch);
  j->upch = NULL;
  cg_free(j->read_want);
  cg_free(j->read_meta);
  for (int l = 1; l < j->layers.nlayers; l++) { /* (either table may be missing: jx_alloc failed) */
    if (be && j->d_src) be->free(be, j->d_src[l]);
    if (j->src_epoch) cg_free(j->src_epoch[l]);
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
  if (j->h_read_pinned) be->host_free(be, j->h_read);
  else cg_free(j->h_read);
  for (int l = 1; l < j->layers.nlayers; l++) {
    if (j->a_held) cg_free(j->a_held[l]);
    if (j->a_held_epoch) cg_free(j->a_held_epoch[l]);
    if (j->w_held) cg_free(j->w_held[l]);
    if (j->w_held_epoch) cg_free(j->w_held_epoch[l]);
    if (j->h_amirror) cg_free(j->h_amirror[l]);
  }
  cg_free(j->a_held);
  cg_free(j->a_held_epoch);
  cg_free(j->w_held);
  cg_free(j->w_held_epoch);
  cg_free(j->h_amirror);
  cg_free(j->a_sel);
  cg_free(j->a_got);
  cg_free(j->h_arows);
  if (be) {
    be->free(be, j->d_aidx);
    be->free(be, j->d_arows);
  }
  bwd_free(j);
  cg_free(j->gen);
  cg_free(j->stats);
  jaca_node_plan_free(&j->plan);
  cg_free(j);
}

static void jx_destroy(struct cg_exchange *ex) {
  struct jaca_exchange *j = impl(ex);
  if (j->pf) {
    const double cpu = jaca_prefetch_cpu_s(j->pf);
    LOG_DEBUG("jaca", "prefetch thread: %.3f s of CPU, %lld naps", cpu, (long long)jaca_prefetch_naps(j->pf));
  }
  jaca_prefetch_destroy(&j->pf); /* before the segment goes */
  /* collective, in the same order on every rank */
  for (int c = 0; j->fwd && c < j->plan.nclasses; c++) comm_halo_destroy(&j->fwd[c]);
  comm_vhalo_destroy(&j->vh);
  for (int c = 0; j->bwd && c < j->gnc; c++) comm_halo_destroy(&j->bwd[c]);
  comm_vhalo_destroy(&j->gvh);
  jaca_ngrad_destroy(&j->ng);
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

int jaca_exchange_restart_max(struct cg_exchange *ex) {
  if (!ex || ex->destroy != jx_destroy)
    return cg_err_set(CG_ERR_ARG, "jaca_exchange_restart_max: not a caching exchange");
  struct jaca_exchange *j = (struct jaca_exchange *)ex;
  for (int l = 0; l < j->layers.nlayers; l++) {
    j->stats[l].age_max = 0;
    j->stats[l].grad_age_max = 0;
  }
  return CG_OK;
}

int jaca_exchange_window(const struct cg_exchange *ex, struct jaca_window *out) {
  memset(out, 0, sizeof *out);
  if (!ex || ex->destroy != jx_destroy)
    return cg_err_set(CG_ERR_ARG, "jaca_exchange_window: not a caching exchange");
  const struct jaca_node_plan *p = &((const struct jaca_exchange *)ex)->plan;
  out->reads = p->win_reads;
  out->policy_hits = p->win_policy_hits;
  out->oracle_hits = p->win_oracle_hits;
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
  if (j->vh) {
    const int64_t n = j->a_send = p->cls[0].send_rows, nr = p->cls[0].recv_rows, nwr = p->n_write;
    j->a_held = cg_calloc((size_t)L, sizeof *j->a_held, "jaca: adaptive held copies");
    j->a_held_epoch = cg_calloc((size_t)L, sizeof *j->a_held_epoch, "jaca: adaptive held epochs");
    j->w_held = cg_calloc((size_t)L, sizeof *j->w_held, "jaca: adaptive held node rows");
    j->w_held_epoch = cg_calloc((size_t)L, sizeof *j->w_held_epoch, "jaca: adaptive held node epochs");
    j->h_amirror = cg_calloc((size_t)L, sizeof *j->h_amirror, "jaca: adaptive received rows");
    j->a_sel = cg_malloc((size_t)(n > 0 ? n : 1), "jaca: adaptive rows to send");
    j->a_got = cg_malloc((size_t)(nr > 0 ? nr : 1), "jaca: adaptive rows received");
    if (!j->a_held || !j->a_held_epoch || !j->w_held || !j->w_held_epoch || !j->h_amirror || !j->a_sel || !j->a_got)
      return CG_ERR_NOMEM;
    for (int l = 1; l < L; l++) {
      j->a_held[l] = cg_calloc((size_t)((n > 0 ? n : 1) * cols), fl, "jaca: adaptive held copies");
      j->a_held_epoch[l] = cg_calloc((size_t)(n > 0 ? n : 1), sizeof(uint32_t), "jaca: adaptive held epochs");
      j->w_held[l] = cg_calloc((size_t)((nwr > 0 ? nwr : 1) * cols), fl, "jaca: adaptive held node rows");
      j->w_held_epoch[l] = cg_calloc((size_t)(nwr > 0 ? nwr : 1), sizeof(uint32_t), "jaca: adaptive held epochs");
      if (!j->a_held[l] || !j->a_held_epoch[l] || !j->w_held[l] || !j->w_held_epoch[l]) return CG_ERR_NOMEM;
      if (!on_host(j)) {
        j->h_amirror[l] = cg_calloc((size_t)((nr > 0 ? nr : 1) * cols), fl, "jaca: adaptive received rows");
        if (!j->h_amirror[l]) return CG_ERR_NOMEM;
      }
    }
    if (!on_host(j)) {
      TRY(be->alloc(be, (void **)&j->d_aidx, (size_t)(n > 0 ? n : 1) * sizeof(int32_t), "jaca: adaptive send list"));
      TRY(be->alloc(be, (void **)&j->d_arows, (size_t)((n > 0 ? n : 1) * cols) * fl, "jaca: adaptive send rows"));
      if (n > 0) TRY(be->upload(be, j->d_aidx, p->cls[0].send_idx, (size_t)n * sizeof(int32_t)));
      j->h_arows = cg_malloc((size_t)((n > 0 ? n : 1) * cols) * fl, "jaca: adaptive send rows (host)");
      if (!j->h_arows) return CG_ERR_NOMEM;
    }
  }
  if (!on_host(j)) {
    TRY(be->alloc(be, (void **)&j->d_widx, (size_t)(p->n_write > 0 ? p->n_write : 1) * sizeof(int32_t),
                  "jaca: rows written to the node tier"));
    TRY(be->alloc(be, (void **)&j->d_pub, (size_t)((p->n_write > 0 ? p->n_write : 1) * cols) * fl,
                  "jaca: rows written to the node tier"));
    if (p->n_write > 0) TRY(be->upload(be, j->d_widx, p->write_idx, (size_t)p->n_write * sizeof(int32_t)));
    j->h_pub = cg_malloc((size_t)((p->n_write > 0 ? p->n_write : 1) * cols) * fl, "jaca: host rows to write");
    j->h_recv = cg_malloc((size_t)((p->recv_rows > 0 ? p->recv_rows : 1) * cols) * fl, "jaca: host rows received");
    const size_t read_bytes = (size_t)((p->n_read > 0 ? p->n_read : 1) * cols) * fl;
    if (j->opt.prefetch && !j->opt.adaptive && be->host_alloc && be->host_free && be->upchan_create &&
        be->upchan_destroy && be->upchan_begin && be->upchan_upload && be->upchan_join) {
      TRY(be->host_alloc(be, (void **)&j->h_read, read_bytes,
                         "jaca: host rows read (pinned; --cache-prefetch off stages through pageable memory)"));
      j->h_read_pinned = 1;
      TRY(be->upchan_create(be, &j->upch));
    } else {
      j->h_read = cg_malloc(read_bytes, "jaca: host rows read");
    }
    if (!j->h_pub || !j->h_recv || !j->h_read) return CG_ERR_NOMEM;
  }
  j->read_want = cg_malloc((size_t)(p->n_read > 0 ? p->n_read : 1) * sizeof(uint32_t), "jaca: generations to read");
  j->read_meta = cg_calloc((size_t)(p->n_read > 0 ? p->n_read : 1), sizeof(struct jaca_row_meta), "jaca: rows read");
  if (!j->read_want || !j->read_meta) return CG_ERR_NOMEM;
  if (j->opt.prefetch && !j->opt.adaptive) TRY(jaca_prefetch_create(p->n_read, &j->pf)); /* adaptive: see end */
  return CG_OK;
}

static void jx_log(struct comm *c, const struct jaca_exchange *j) {
  /* node totals from each node's local rank 0 */
  int64_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (comm_local_rank(c) == 0) {
    v[0] = j->plan.n_union;
    v[1] = j->plan.n_admitted;
    v[2] = (int64_t)(j->layer_bytes * (size_t)(j->layers.nlayers - 1));
    v[4] = j->plan.win_reads;
    v[5] = j->plan.win_policy_hits;
    v[6] = j->plan.win_oracle_hits < 0 ? 0 : j->plan.win_oracle_hits;
    v[7] = j->plan.win_oracle_hits < 0;
  }
  v[3] = j->plan.n_halo;
  if (comm_allreduce_i64(c, v, 8, COMM_SUM) != CG_OK) {
    cg_err_clear();
    return;
  }
  char desc[512];
  jaca_options_describe(&j->opt, desc, sizeof desc);
  if (j->bits < 32) /* the description's "exact" is about staleness: say what the coding changes */
    LOG_INFO("jaca", "%s; APPROXIMATE: its MPI exchanges send %d-bit coded rows (--halo-bits %d)", desc, j->bits,
             j->bits);
  else
    LOG_INFO("jaca", "%s", desc);
  LOG_INFO("jaca",
           "node tier: %lld of %lld node halo rows held on %d node%s (%lld halo rows over the ranks), "
           "%.1f MiB of shared memory in all",
           (long long)v[1], (long long)v[0], comm_nnodes(c), comm_nnodes(c) == 1 ? "" : "s",
           (long long)v[3], (double)v[2] / 1048576.0);
  if (v[4] > 0 && v[7] == 0)
    LOG_INFO("jaca", "hit rate over a refresh window of %d step%s%s: %.1f %% (Belady's MIN with the same slots: %.1f %%)",
             j->plan.staleness + 1, j->plan.staleness == 0 ? "" : "s",
             j->opt.adaptive ? " (adaptive: before any row is skipped for its drift)" : "",
             100.0 * (double)v[5] / (double)v[4],
             100.0 * (double)v[6] / (double)v[4]);
}

/* The tiers' memory budgets (node_internal.h, struct jaca_budget): a MiB option as
 * given, or with JACA_MB_AUTO the memory measured free now (Algorithm 1: the node's
 * least available host memory over its ranks, so that they all plan the same node tier;
 * the backend's free memory for a rank tier, which on the CPU backend is the same host
 * memory, shared by the node's ranks after the node tier). Collective over the world. */
static int measure_budget(struct comm *c, struct cg_backend *be, const struct jaca_options *o,
                          struct jaca_budget *b) {
  const int64_t MiB = 1048576;
  memset(b, 0, sizeof *b);
  b->node_avail = b->rank_avail = -1;
  b->rank_share = 1;
  int st = CG_OK;
  size_t host_free = 0, dev_free = 0;
  if (o->host_mb == JACA_MB_AUTO || (o->device_mb == JACA_MB_AUTO && on_host_be(be)))
    st = cg_host_mem_info(&host_free, NULL);
  if (st == CG_OK && o->device_mb == JACA_MB_AUTO && !on_host_be(be))
    st = be->mem_info ? be->mem_info(be, &dev_free, NULL)
                      : cg_err_set(CG_ERR_ARG, "jaca: backend %s cannot say its free memory: give --cache-device-mb N",
                                   be->name);
  TRY(comm_agree(c, st, "jaca: measuring free memory for the cache's capacity"));
  const int L = comm_local_size(c);
  int64_t *all = cg_malloc(sizeof(int64_t) * (size_t)L, "jaca: free memory of the node's ranks");
  st = comm_agree(c, all ? CG_OK : CG_ERR_NOMEM, "jaca: measuring free memory");
  if (st < 0) { /* (another rank's failure: this rank's array is freed too) */
    cg_free(all);
    return st;
  }
  st = comm_node_allgather_i64(c, (int64_t)host_free, all);
  int64_t node_free = (int64_t)host_free;
  for (int r = 0; st == CG_OK && r < L; r++)
    if (all[r] < node_free) node_free = all[r];
  /* the node tier is a file in the shared-memory folder (comm_shm_dir), which may be
   * far smaller than the host's memory (a container's 64 MB /dev/shm): its free space,
   * shared by the host's emulated nodes, caps the node tier's budget */
  int64_t shm_free = -1;
  if (st == CG_OK && o->host_mb == JACA_MB_AUTO && L > 1) { /* (one rank: private memory, no file) */
    shm_free = comm_shm_free_bytes();
    const int nodes_here = comm_host_local_size(c) / L > 1 ? comm_host_local_size(c) / L : 1;
    /* three quarters: the gradients' segment and MPI's own transport files share it */
    if (shm_free >= 0) shm_free = shm_free / 4 * 3 / nodes_here;
    st = comm_node_allgather_i64(c, shm_free, all);
    for (int r = 0; st == CG_OK && r < L; r++)
      if (all[r] >= 0 && (shm_free < 0 || all[r] < shm_free)) shm_free = all[r];
  }
  cg_free(all);
  TRY(comm_agree(c, st, "jaca: measuring free memory"));
  if (o->host_mb > 0) b->node_avail = o->host_mb * MiB;
  else if (o->host_mb == JACA_MB_AUTO) {
    b->node_avail = node_free;
    b->node_reserve = o->reserve_mb * MiB;
    if (shm_free >= 0 && shm_free < node_free - b->node_reserve) { /* the folder is the tighter bound */
      b->node_avail = shm_free;
      b->node_reserve = 0;
      b->node_by_shm = 1;
      LOG_DEBUG("jaca", "node tier: %s has %lld bytes free for it, less than the host memory's %lld: capped",
                comm_shm_dir(), (long long)shm_free, (long long)(node_free - o->reserve_mb * MiB));
    }
  }
  if (o->device_mb > 0) b->rank_avail = o->device_mb * MiB;
  else if (o->device_mb == JACA_MB_AUTO) {
    b->rank_reserve = o->reserve_mb * MiB;
    if (on_host_be(be)) {
      b->rank_avail = node_free;
      b->rank_share = L;
      b->rank_after_node = 1;
    } else {
      b->rank_avail = (int64_t)dev_free;
    }
  }
  return CG_OK;
}

/* --halo-bits on every MPI exchange of the cache: they carry training steps only
 * (evaluation, the set-up exchange and the warm-up go through j->plain, which codes
 * training steps itself). Adaptive staleness's variable-length exchange sends floats:
 * refused together. */
static int jx_set_quant(struct jaca_exchange *j, int bits) {
  j->bits = bits;
  if (bits == 32) return CG_OK;
  if (j->opt.adaptive)
    return cg_err_set(CG_ERR_UNSUPPORTED, "--halo-bits %d with --staleness adaptive: the adaptive exchange sends "
                      "full-precision rows (use one or the other)", bits);
  if (j->opt.grad_adaptive)
    return cg_err_set(CG_ERR_UNSUPPORTED, "--halo-bits %d with --grad-staleness adaptive: the adaptive exchange "
                      "sends full-precision gradients (use one or the other)", bits);
  for (int k = 0; k < j->plan.nclasses; k++)
    if (j->fwd[k]) TRY(comm_halo_set_quant(j->fwd[k], bits));
  for (int k = 0; j->bwd && k < j->gnc; k++)
    if (j->bwd[k]) TRY(comm_halo_set_quant(j->bwd[k], bits));
  if (j->ng) TRY(jaca_ngrad_set_quant(j->ng, bits));
  return CG_OK;
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
    /* how long a reader waits for a row's writer before it reports the writer gone or
     * stuck (a rank that died ends the job through MPI before that; this catches a rank
     * stopped or a broken schedule); the environment wins (a rank computing a huge layer) */
    j->timeout_s = o->read_timeout_s > 0.0 ? o->read_timeout_s : JACA_READ_TIMEOUT_S;
    const char *tv = getenv("CAPGNN_JACA_TIMEOUT");
    if (tv && atof(tv) > 0.0) j->timeout_s = atof(tv);
    j->opt = *o;
    j->bits = 32;
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
  {
    struct jaca_budget b;
    TRY_GOTO(measure_budget(c, be, o, &b), fail); /* agreed inside */
    TRY_GOTO(jaca_node_plan_build(c, pl, agg, o, layers, &b, &j->plan), fail); /* agreed inside */
  }
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
    if (o->adaptive && k == 0) TRY_GOTO(comm_vhalo_create(c, &fp, layers->cols, &j->vh), fail);
    else TRY_GOTO(comm_halo_create(c, be, &fp, layers->cols, &j->fwd[k]), fail);
  }
  j->stride = jaca_row_stride(layers->cols);
  j->layer_bytes = j->stride * (size_t)j->plan.n_admitted;
  j->done_off = j->layer_bytes * (size_t)(layers->nlayers - 1);
  {
    /* one node-wide segment, given by local rank 0; aligned here (MPI gives 8 bytes);
     * adaptive: a done word per layer and local rank after the rows; then a read word
     * per layer and local rank */
    const size_t words = (size_t)(layers->nlayers - 1) * (size_t)comm_local_size(c) * JACA_ROW_ALIGN;
    const size_t done = o->adaptive ? words : 0;
    j->read_off = j->done_off + done;
    const size_t bytes = j->layer_bytes * (size_t)(layers->nlayers - 1) + done + words + JACA_ROW_ALIGN;
    st = comm_shm_create(c, comm_local_rank(c) == 0 ? bytes : 0, &j->shm);
    if (st < 0) {
      char why[1024];
      snprintf(why, sizeof why, "%s", cg_err_msg());
      cg_err_set(st, "the halo cache's node tier (--cache-host-mb N makes it smaller): %s", why);
      goto fail;
    }
    uintptr_t base = (uintptr_t)comm_shm_node(j->shm, NULL);
    j->seg = (char *)((base + JACA_ROW_ALIGN - 1) / JACA_ROW_ALIGN * JACA_ROW_ALIGN);
  }
  st = jx_alloc(j);
  TRY_GOTO(comm_agree(c, st, "allocating the halo cache's buffers"), fail);
  if (o->grad_staleness > 0 || o->grad_adaptive) TRY_GOTO(bwd_create(c, pl, j), fail); /* agreed inside */
  else TRY_GOTO(jaca_ngrad_create(c, be, pl, layers, j->timeout_s, &j->ng), fail); /* collective */
  TRY_GOTO(comm_agree(c, jx_set_quant(j, comm_halo_bits(c)), "--halo-bits on the halo cache's exchanges"), fail);
  j->ex.halo_begin = jx_halo_begin;
  j->ex.halo_end = jx_halo_end;
  j->ex.halo_progress = jx_halo_progress;
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
    comm_vhalo_destroy(&j->vh);
    for (int k = 0; j->bwd && k < j->gnc; k++) comm_halo_destroy(&j->bwd[k]);
    comm_vhalo_destroy(&j->gvh);
    jaca_prefetch_destroy(&j->pf);
    jaca_ngrad_destroy(&j->ng);
    comm_shm_destroy(&j->shm);
    cg_exchange_destroy(&j->plain);
    jx_free(j);
  }
  return st;
}
