/* jaca/tests/test_jaca_exchange.c — the caching exchange moves exactly the right rows,
 * of the right age, through both paths (the node tier and the direct rows), and counts
 * what it sends.
 *
 * Every rank builds the same graph (synth:tiny, synth:small) and owner array (random,
 * or v mod P), and its local graph (part_local_build). Forward payload: inner row
 * (global id g) of owner o at epoch e and layer l holds, in column j, the integer
 * enc(o, g, e, l, j) (below 2^24, exact as a float); after a cached forward exchange of
 * (l, e) every halo row must hold its owner's encoding of that very epoch and layer, so
 * a row from the wrong rank, vertex, column, layer or epoch is caught value by value.
 * Epochs run 1..3 over layers 1..2; an evaluation exchange (epoch 0, the plain path) and
 * a backward exchange (owners add the exact sum of their holders' integer gradients, in
 * any order; those of holders on the owner's node come through the node tier) run in
 * between. A negative control feeds one rank's rows of the wrong epoch
 * and must be caught.
 *
 * Configurations: policies jaca, lru, fifo at node-tier capacity 100 % and 10 %; the
 * CPU backend and a fake device backend (mpi/tests/fake_device.h: device pointers fault
 * when the host touches them, so the device path's staging is proved), mostly with its
 * side uploads (deferred until joined: the prefetch thread's uploads of the rank tier's
 * rows and end's join are proved by the values; every read row goes through the
 * channel once per exchange, nothing else does, the pinned staging is freed), once
 * without (all rows uploaded in end). Counters: per
 * exchange, lookups = halo rows, node hits + misses = lookups; the bytes this rank sends
 * through MPI (split by node) equal its forward plan's rows; at 100 % capacity the
 * inter-node bytes equal the model computed here from all ranks' local graphs alone:
 * each halo vertex owned by this rank and needed on another node crosses once per
 * destination node, and nothing travels between ranks of one node. The seam's counters:
 * cache lookups/hits and halo bytes (plain exchange's + the forward plan's).
 * Gradients: stale (--grad-staleness G, by phase) and adaptive (--grad-staleness
 * adaptive:EPS:G: a hand-made drift decides exactly which gradients travel; every owner
 * sum and every age checked), and adaptive at EPS 0 bit for bit against G = 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/ops.h"
#include "core/status.h"
#include "core/timer.h"
#include "fake_device.h"
#include "graph/graph.h"
#include "jaca/exchange_internal.h"
#include "jaca/jaca.h"
#include "mpi/comm.h"
#include "jaca_test.h"
#include "mpi_test.h"
#include "partition/partition.h"

#define COLS 8
#define NLAYERS 3

/* the job's world (mpi/tests/mpi_test.h: MT_CHECK and MT_OK abort the whole job) */
struct comm *mt_comm;
#define g_comm mt_comm
#define CHECK MT_CHECK
#define OK MT_OK

#define EPOCH_CODES 16 /* epochs 0..15 fit the encoding */
static float enc(int64_t o, int64_t g, uint32_t e, int l, int64_t j) {
  return (float)((((g * 4 + o) * EPOCH_CODES + (int64_t)e) * 3 + l) * COLS + j);
}

struct setup {
  struct graph g;
  int32_t *owner;
  struct part_local *all; /* every rank's local graph */
  const struct part_local *pl;
};

static void setup_make(struct setup *s, const char *spec, int random_owners) {
  const int P = comm_size(g_comm), me = comm_rank(g_comm);
  memset(s, 0, sizeof *s);
  s->owner = jt_synth_owned(spec, P, random_owners ? 5 : 0, &s->g);
  s->all = calloc((size_t)P, sizeof *s->all);
  CHECK(s->all != NULL, "out of memory");
  for (int q = 0; q < P; q++) OK(part_local_build(&s->g, s->owner, P, q, GRAPH_NORM_GCN, 1, &s->all[q]));
  s->pl = &s->all[me];
}

/* A case's host copy and backend matrix of rows x COLS (at least one row). */
static void case_matrices(int64_t rows, struct cg_backend *be, float **h, float **d) {
  const size_t bytes = sizeof(float) * (size_t)((rows > 0 ? rows : 1) * COLS);
  *h = malloc(bytes);
  CHECK(*h != NULL, "out of memory");
  *d = NULL;
  OK(be->alloc(be, (void **)d, bytes, "test matrix"));
}

static void setup_free(struct setup *s) {
  for (int q = 0; q < comm_size(g_comm); q++) part_local_free(&s->all[q]);
  free(s->all);
  free(s->owner);
  graph_free(&s->g);
}

/* Rows this rank sends to other nodes when every node holds its whole halo: per other
 * node, the distinct vertices owned here that some rank of that node holds as halo. */
static int64_t model_inter_rows(const struct setup *s) {
  const int P = comm_size(g_comm), me = comm_rank(g_comm);
  int64_t rows = 0;
  unsigned char *need = malloc((size_t)s->g.n);
  CHECK(need != NULL, "out of memory");
  for (int node = 0; node < comm_nnodes(g_comm); node++) {
    if (node == comm_node(g_comm)) continue;
    memset(need, 0, (size_t)s->g.n);
    for (int q = 0; q < P; q++) {
      if (comm_node_of(g_comm, q) != node) continue;
      const struct part_local *l = &s->all[q];
      for (int64_t i = 0; i < l->n_halo; i++) need[l->gid[l->n_inner + i]] = 1;
    }
    for (int64_t v = 0; v < s->g.n; v++) rows += need[v] && s->owner[v] == me;
  }
  free(need);
  return rows;
}

/* One forward exchange of (layer, epoch); returns the wrong values. With `lie`, rank 0
 * fills its rows with the next epoch's encoding (the negative control). `plan` (the
 * cache's, NULL for an exchange the cache does not serve: evaluation) gives the epoch
 * each halo row must come from under its staleness: the generation that last
 * refreshed the row's class (jaca_last_refresh; here generation = epoch, one cached
 * exchange per layer and epoch). Independently of the schedule, no row may be older
 * than the staleness bound: *worst_age gets the oldest row's age, read from its value. */
static void fill_rows(const struct setup *s, struct cg_backend *be, float *d, float *h, int layer, uint32_t epoch,
                      int lie) {
  const struct part_local *pl = s->pl;
  const int me = comm_rank(g_comm);
  const int64_t rows = pl->n_inner + pl->n_halo;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < COLS; j++)
      h[i * COLS + j] = i < pl->n_inner ? enc(me, pl->gid[i], epoch + (lie && me == 0), layer, j) : -1.0f;
  if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
}

static int64_t halo_verify(const struct setup *s, struct cg_backend *be, float *d, float *h, int layer,
                           uint32_t epoch, int lie, const struct jaca_node_plan *plan, int64_t *worst_age);

static int64_t forward_check(const struct setup *s, struct cg_backend *be, struct cg_exchange *ex, float *d,
                             float *h, int layer, uint32_t epoch, int lie, const struct jaca_node_plan *plan,
                             int64_t *worst_age) {
  fill_rows(s, be, d, h, layer, epoch, lie);
  const struct cg_halo_tag tag = {layer, epoch};
  OK(ex->halo_begin(ex, CG_HALO_FORWARD, tag, d, COLS));
  OK(comm_barrier(g_comm)); /* other traffic while the exchange is pending */
  OK(ex->halo_end(ex, CG_HALO_FORWARD, tag, d, COLS));
  return halo_verify(s, be, d, h, layer, epoch, lie, plan, worst_age);
}

/* The halo rows of d after a forward exchange of (layer, epoch), as forward_check says. */
static int64_t halo_verify(const struct setup *s, struct cg_backend *be, float *d, float *h, int layer,
                           uint32_t epoch, int lie, const struct jaca_node_plan *plan, int64_t *worst_age) {
  const struct part_local *pl = s->pl;
  const int me = comm_rank(g_comm);
  const int64_t rows = pl->n_inner + pl->n_halo;
  if (rows > 0) OK(be->download(be, h, d, (size_t)(rows * COLS) * sizeof(float)));
  int64_t bad = 0;
  for (int64_t i = pl->n_inner; i < rows; i++) {
    const int64_t g = pl->gid[i], o = s->owner[g];
    const uint32_t from = plan ? jaca_last_refresh(epoch, plan->halo_class[i - pl->n_inner], plan->staleness) : epoch;
    const int64_t age = (int64_t)epoch - (int64_t)(((int64_t)h[i * COLS] / COLS / 3) % EPOCH_CODES);
    if (worst_age && age > *worst_age) *worst_age = age;
    for (int64_t j = 0; j < COLS; j++) {
      const float want = enc(o, g, from, layer, j), got = h[i * COLS + j];
      if (got == want) continue;
      if (bad++ == 0 && !lie) {
        const int64_t code = (int64_t)got;
        fprintf(stderr,
                "[rank %d] layer %d epoch %u (rows of epoch %u expected): halo row %lld (gid %lld, owner %lld) col "
                "%lld holds %.0f = (gid %lld, owner %lld, epoch %lld, layer %lld, col %lld)\n",
                me, layer, epoch, from, (long long)i, (long long)g, (long long)o, (long long)j, (double)got,
                (long long)(code / COLS / 3 / EPOCH_CODES / 4), (long long)(code / COLS / 3 / EPOCH_CODES % 4),
                (long long)(code / COLS / 3 % EPOCH_CODES), (long long)(code / COLS % 3), (long long)(code % COLS));
      }
    }
  }
  return bad;
}

/* Backward through the cache (the plain path): each owner ends with its own value plus
 * its holders' halo values, integers, so the sum is exact in any order. */
static void grad_fill(const struct setup *s, struct cg_backend *be, float *d, float *h) {
  const struct part_local *pl = s->pl;
  const int me = comm_rank(g_comm);
  const int64_t rows = pl->n_inner + pl->n_halo;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < COLS; j++) h[i * COLS + j] = (float)((pl->gid[i] * 7 + me * 3 + j) % 1000);
  if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
}

static void grad_verify(const struct setup *s, struct cg_backend *be, float *d, float *h);

static void backward_check(const struct setup *s, struct cg_backend *be, struct cg_exchange *ex, float *d, float *h) {
  grad_fill(s, be, d, h);
  OK(cg_exchange_halo(ex, CG_HALO_BACKWARD, (struct cg_halo_tag){2, 3}, d, COLS));
  grad_verify(s, be, d, h);
}

/* The inner rows of d after a backward exchange of grad_fill's values, as backward_check
 * says. */
static void grad_verify(const struct setup *s, struct cg_backend *be, float *d, float *h) {
  const struct part_local *pl = s->pl;
  const int me = comm_rank(g_comm), P = comm_size(g_comm);
  const int64_t rows = pl->n_inner + pl->n_halo;
  if (rows > 0) OK(be->download(be, h, d, (size_t)(rows * COLS) * sizeof(float)));
  for (int64_t i = 0; i < pl->n_inner; i++) {
    const int64_t g = pl->gid[i];
    for (int64_t j = 0; j < COLS; j++) {
      double want = (double)((g * 7 + me * 3 + j) % 1000);
      for (int q = 0; q < P; q++) {
        if (q == me) continue;
        const struct part_local *l = &s->all[q];
        for (int64_t k = l->n_inner; k < l->n_inner + l->n_halo; k++)
          if (l->gid[k] == g) want += (double)((g * 7 + q * 3 + j) % 1000);
      }
      CHECK(h[i * COLS + j] == want, "backward: inner row %lld (gid %lld) col %lld holds %.0f, expected %.0f",
            (long long)i, (long long)g, (long long)j, (double)h[i * COLS + j], want);
    }
  }
}

/* What one cached exchange at generation g should count (the plan's classes due at g). */
struct expect {
  int64_t inter, intra, rank_hits, node_hits, misses, writes, refreshed;
};
static void expect_add(struct expect *x, const struct jaca_node_plan *p, uint32_t g) {
  int64_t direct_now = 0, mine_now = 0, fresh_reads = 0, writes = 0;
  for (int c = 0; c < p->nclasses; c++) {
    if (jaca_last_refresh(g, c, p->staleness) != g) continue;
    x->inter += p->cls[c].send_rows_inter;
    x->intra += p->cls[c].send_rows_intra;
    direct_now += p->cls[c].recv_rows - p->cls[c].n_received;
    mine_now += p->cls[c].n_received;
  }
  for (int64_t k = 0; k < p->n_read; k++) fresh_reads += jaca_last_refresh(g, p->read_phase[k], p->staleness) == g;
  for (int64_t k = 0; k < p->n_write; k++) writes += jaca_last_refresh(g, p->write_phase[k], p->staleness) == g;
  x->rank_hits += p->n_direct - direct_now;
  x->node_hits += p->n_read - mine_now;
  x->misses += direct_now + mine_now;
  x->writes += writes + mine_now;
  x->refreshed += direct_now + fresh_reads;
}

static int64_t g_reserve_mb = -1; /* >= 0: Algorithm 1's reserve for run_case */
static int g_prefetch = 1;        /* run_case's --cache-prefetch */

static void run_case(const char *spec, int random_owners, enum jaca_policy policy, double capacity, int staleness,
                     struct cg_backend *be) {
  const int me = comm_rank(g_comm);
  struct setup s;
  setup_make(&s, spec, random_owners);
  const struct part_local *pl = s.pl;
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.policy = policy;
  o.capacity = capacity;
  o.staleness = staleness;
  o.prefetch = g_prefetch;
  /* no MiB budget, so that the tiers do not depend on the memory free while the test
   * runs; Algorithm 1 (auto) only with the reserve below */
  o.host_mb = o.device_mb = 0;
  if (g_reserve_mb >= 0) {
    o.host_mb = o.device_mb = JACA_MB_AUTO;
    o.reserve_mb = g_reserve_mb;
  }
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  const int side = be->kind != CG_DEVICE_CPU && be->upchan_upload != NULL; /* the fake device's side uploads */
  struct fake_side_counts sc0, sc1;
  memset(&sc0, 0, sizeof sc0);
  memset(&sc1, 0, sizeof sc1);
  if (side) fake_device_side_counts(be, &sc0);
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &o, &ex));
  const struct jaca_node_plan *p = jaca_exchange_plan(ex);
  CHECK(p != NULL, "not a caching exchange");
  if (g_reserve_mb >= 0) /* more reserved than any host has free: the tiers hold nothing */
    CHECK(p->n_admitted == 0 && p->n_rank_cached == 0 && p->node_rows_budget == 0,
          "reserve %lld MiB: %lld node rows, %lld kept, budget %lld", (long long)g_reserve_mb,
          (long long)p->n_admitted, (long long)p->n_rank_cached, (long long)p->node_rows_budget);
  else /* no MiB budget: the capacity fraction alone */
    CHECK(p->node_rows_budget == (int64_t)(capacity * (double)p->n_union) ||
              p->node_rows_budget == p->n_union,
          "node tier budget %lld rows of %lld at capacity %g", (long long)p->node_rows_budget,
          (long long)p->n_union, capacity);
  OK(jaca_node_plan_check(p, pl));
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = NULL, *d = NULL;
  case_matrices(rows, be, &h, &d);

  /* epochs: 3 when exact, else two periods and one more (every class refreshed, then
   * kept, twice); an evaluation and a backward exchange after each epoch */
  const uint32_t E = staleness == 0 ? 3u : (uint32_t)(2 * (staleness + 1) + 1);
  CHECK(E + 1 < EPOCH_CODES, "too many epochs for the encoding");
  struct cg_exchange_counters c0, c1;
  ex->counters(ex, &c0);
  comm_stats_reset(g_comm);
  struct expect x1 = {0}; /* layer 1's */
  int64_t worst_age = 0, per_gen_inter[EPOCH_CODES] = {0}, per_gen_hits[EPOCH_CODES] = {0},
          per_gen_lookups[EPOCH_CODES] = {0};
  for (uint32_t e = 1; e <= E; e++) {
    for (int l = 1; l < NLAYERS; l++) {
      CHECK(forward_check(&s, be, ex, d, h, l, e, 0, p, &worst_age) == 0,
            "%s %s capacity %g staleness %d: wrong halo values", spec, jaca_policy_name(policy), capacity, staleness);
      if (l == 1) {
        const int64_t before = x1.inter;
        expect_add(&x1, p, e);
        per_gen_inter[e] = x1.inter - before;
        struct jaca_stats now;
        OK(jaca_exchange_stats(ex, 1, &now));
        per_gen_hits[e] = now.rank_hits + now.node_hits;
        per_gen_lookups[e] = now.lookups;
      }
    }
    backward_check(&s, be, ex, d, h);
    /* evaluation: epoch 0, the plain path, the current values */
    CHECK(forward_check(&s, be, ex, d, h, 1, 0, 0, NULL, NULL) == 0, "evaluation exchange: wrong halo values");
  }
  ex->counters(ex, &c1);
  struct jaca_stats st_c1;
  OK(jaca_exchange_stats(ex, 0, &st_c1));
  const int64_t sent_c1 = st_c1.bytes_intra + st_c1.bytes_inter;
  CHECK(worst_age <= staleness, "a halo row %lld epochs old was used under staleness %d", (long long)worst_age,
        staleness);
  int64_t nx = (int64_t)E;
  if (staleness == 0) {
    /* the negative control: rank 0's rows of the wrong epoch must show up on its consumers */
    int64_t caught = forward_check(&s, be, ex, d, h, 1, E + 1, 1, p, NULL);
    expect_add(&x1, p, E + 1);
    nx++;
    int64_t holders_of_0 = 0;
    for (int q = 1; q < comm_size(g_comm) && me == 0; q++) /* counted once, then summed */
      for (int64_t i = s.all[q].n_inner; i < s.all[q].n_inner + s.all[q].n_halo; i++)
        holders_of_0 += s.owner[s.all[q].gid[i]] == 0;
    int64_t tot[2] = {caught, holders_of_0};
    OK(comm_allreduce_i64(g_comm, tot, 2, COMM_SUM));
    CHECK(tot[0] == tot[1] * COLS, "the negative control: %lld wrong values seen, %lld expected", (long long)tot[0],
          (long long)(tot[1] * COLS));
  } else {
    /* one period after the first generation refreshes every phase once and the rows the
     * rank tier does not keep every time: the inter-node rows of one full refresh */
    int64_t period = 0, always = p->cls[staleness + 1].send_rows_inter;
    for (int g = 2; g <= staleness + 2; g++) period += per_gen_inter[g];
    CHECK(period == per_gen_inter[1] + staleness * always,
          "inter-node rows over one period %lld, one full refresh %lld + %d x %lld always", (long long)period,
          (long long)per_gen_inter[1], staleness, (long long)always);
  }

  /* the hit rates of one refresh window: the plan's equal what the cache did over
   * generations 2 .. S + 2 (every phase refreshed once), summed over the ranks; Belady's
   * MIN with the same slots does at least as well, and no better when the tiers hold
   * every row and nothing is reused across steps */
  double win_rate = 0.0, win_oracle = 0.0;
  {
    struct jaca_window w;
    OK(jaca_exchange_window(ex, &w));
    CHECK(comm_local_rank(g_comm) == 0 || (w.reads == 0 && w.policy_hits == 0 && w.oracle_hits == 0),
          "window counts on a rank other than the node's first");
    int64_t v[5] = {per_gen_hits[staleness + 2] - per_gen_hits[1], per_gen_lookups[staleness + 2] - per_gen_lookups[1],
                    w.policy_hits, w.reads, w.oracle_hits};
    OK(comm_allreduce_i64(g_comm, v, 5, COMM_SUM));
    CHECK(v[0] == v[2] && v[1] == v[3], "one window: %lld hits of %lld reads measured, the plan says %lld of %lld",
          (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3]);
    CHECK(v[4] >= v[2] && v[4] <= v[3], "Belady's MIN: %lld hits, the plan %lld, of %lld reads", (long long)v[4],
          (long long)v[2], (long long)v[3]);
    if (capacity >= 1.0 && staleness == 0)
      CHECK(v[4] == v[2], "every row held, staleness 0: MIN %lld hits, the plan %lld", (long long)v[4], (long long)v[2]);
    win_rate = v[3] ? 100.0 * (double)v[2] / (double)v[3] : 0.0;
    win_oracle = v[3] ? 100.0 * (double)v[4] / (double)v[3] : 0.0;
  }

  /* statistics and counters */
  struct jaca_stats st, st1;
  OK(jaca_exchange_stats(ex, 0, &st));
  OK(jaca_exchange_stats(ex, 1, &st1));
  const int64_t L1 = NLAYERS - 1;
  CHECK(st1.lookups == nx * pl->n_halo && st.lookups == st1.lookups + (E * (L1 - 1)) * pl->n_halo,
        "lookups %lld / %lld", (long long)st1.lookups, (long long)st.lookups);
  CHECK(st1.rank_hits == x1.rank_hits && st1.node_hits == x1.node_hits && st1.misses == x1.misses &&
            st1.refreshed == x1.refreshed && st1.node_writes == x1.writes,
        "layer 1: rank hits %lld (%lld), node hits %lld (%lld), misses %lld (%lld), refreshed %lld (%lld), writes %lld "
        "(%lld)",
        (long long)st1.rank_hits, (long long)x1.rank_hits, (long long)st1.node_hits, (long long)x1.node_hits,
        (long long)st1.misses, (long long)x1.misses, (long long)st1.refreshed, (long long)x1.refreshed,
        (long long)st1.node_writes, (long long)x1.writes);
  CHECK(st1.rank_hits + st1.node_hits + st1.misses == st1.lookups, "hits + misses != lookups");
  CHECK(st1.bytes_inter == x1.inter * COLS * 4 && st1.bytes_intra == x1.intra * COLS * 4,
        "bytes %lld inter, %lld intra; plan %lld, %lld rows", (long long)st1.bytes_inter, (long long)st1.bytes_intra,
        (long long)x1.inter, (long long)x1.intra);
  CHECK(st1.age_max <= staleness && st.age_max == worst_age,
        "the cache's own ages: max %lld (the values say %lld)", (long long)st.age_max, (long long)worst_age);
  if (staleness > 0 && p->n_rank_cached + p->n_read > 0) CHECK(st.rank_hits + st.node_hits > 0, "no hit with staleness");
  /* every node-tier row read once per training forward exchange, by the prefetch thread
   * or by end(); none by the thread with prefetch off */
  CHECK(st.prefetched + st.end_copied == (E * (L1 - 1) + nx) * p->n_read && (g_prefetch || st.prefetched == 0),
        "prefetch %s: %lld rows prefetched + %lld copied in end, expected %lld reads", g_prefetch ? "on" : "off",
        (long long)st.prefetched, (long long)st.end_copied, (long long)((E * (L1 - 1) + nx) * p->n_read));
  CHECK(st.end_wait_ns >= 0, "negative wait");
  CHECK(c1.cache_lookups - c0.cache_lookups == E * L1 * pl->n_halo, "seam lookups %lld",
        (long long)(c1.cache_lookups - c0.cache_lookups));
  /* the plain path's bytes: E evaluation forwards and E backwards over the full plan */
  int64_t plain_fwd = 0;
  for (int k = 0; k < pl->npeers; k++) plain_fwd += pl->send_count[k];
  CHECK(st.bytes_exact == (E * L1 + nx - E) * plain_fwd * COLS * 4,
        "bytes_exact %lld (expected %lld)", (long long)st.bytes_exact,
        (long long)((E * L1 + nx - E) * plain_fwd * COLS * 4));
  if (be->kind == CG_DEVICE_CPU) CHECK(st.bytes_h2d == 0 && st.bytes_d2h == 0, "host/device bytes on the CPU backend");
  else CHECK(st.bytes_h2d == (E * L1 + nx - E) * p->n_read * COLS * 4, "host-to-device bytes %lld", (long long)st.bytes_h2d);
  /* the gradients: those for owners on this node through the node tier, the others
   * through MPI, every one every step (backward_check proved the sums exact) */
  int64_t grad_far = 0;
  for (int64_t i = pl->n_inner; i < pl->n_inner + pl->n_halo; i++)
    grad_far += comm_node_of(g_comm, s.owner[pl->gid[i]]) != comm_node(g_comm);
  CHECK(st.grad_bytes == (int64_t)E * grad_far * COLS * 4 &&
            st.grad_bytes_shm == (int64_t)E * (pl->n_halo - grad_far) * COLS * 4 &&
            st.grad_bytes_exact == (int64_t)E * pl->n_halo * COLS * 4,
        "gradient bytes: %lld through MPI, %lld through the node tier, %lld exact; halo rows %lld, %lld of them "
        "owned on other nodes, %u steps",
        (long long)st.grad_bytes, (long long)st.grad_bytes_shm, (long long)st.grad_bytes_exact, (long long)pl->n_halo,
        (long long)grad_far, E);
  CHECK(c1.halo_bytes - c0.halo_bytes == sent_c1 + (int64_t)E * plain_fwd * COLS * 4 + st.grad_bytes,
        "seam halo bytes %lld: the cache's forward bytes %lld + %u x %lld rows x %d x 4 (evaluations) + gradient "
        "bytes %lld",
        (long long)(c1.halo_bytes - c0.halo_bytes), (long long)sent_c1, E, (long long)plain_fwd, COLS,
        (long long)st.grad_bytes);
  { /* comm_stats: the gradients (the node tier's own exchange to other nodes) in the backward counters */
    struct comm_stats cs;
    comm_stats_get(g_comm, &cs);
    CHECK(cs.halo_bwd_bytes == st.grad_bytes, "comm_stats: backward %lld bytes; the cache sent %lld gradient bytes",
          (long long)cs.halo_bwd_bytes, (long long)st.grad_bytes);
  }
  if (capacity >= 1.0 && staleness == 0 && g_reserve_mb < 0) {
    const int64_t model = model_inter_rows(&s);
    CHECK(p->cls[0].send_rows_inter + p->cls[1].send_rows_inter == model &&
              p->cls[0].send_rows_intra + p->cls[1].send_rows_intra == 0 && p->n_direct == 0,
          "100 %% capacity: %lld rows to other nodes (model %lld), %lld within the node, %lld direct",
          (long long)(p->cls[0].send_rows_inter + p->cls[1].send_rows_inter), (long long)model,
          (long long)(p->cls[0].send_rows_intra + p->cls[1].send_rows_intra), (long long)p->n_direct);
  }
  int64_t pv[3] = {st.prefetched, st.end_copied, st.end_wait_ns};
  OK(comm_allreduce_i64(g_comm, pv, 3, COMM_SUM));
  int64_t v[8] = {per_gen_inter[1], plain_fwd, p->n_admitted * (comm_local_rank(g_comm) == 0),
                  p->n_union * (comm_local_rank(g_comm) == 0), st.torn_reads, st.node_hits, st.rank_hits,
                  x1.inter};
  OK(comm_allreduce_i64(g_comm, v, 8, COMM_SUM));
  if (me == 0)
    printf("ok: %-13s %s owners, %s, %s %3.0f %%, S %d: node tiers hold %lld of %lld rows; rows between nodes: %lld "
           "per full refresh, %.1f per exchange over %lld (per-rank exchange: %lld in all); %lld node hits, %lld rank "
           "hits, %lld torn reads retried, oldest row used %lld epochs; hit rate over a window %.1f %%, Belady's MIN %.1f %%; prefetch %s: %lld rows prefetched, %lld copied in end (%.1f ms)\n",
           spec, random_owners ? "random" : "v mod P", be->name, jaca_policy_name(policy), capacity * 100, staleness,
           (long long)v[2], (long long)v[3], (long long)v[0], (double)v[7] / (double)nx, (long long)nx, (long long)v[1],
           (long long)v[5], (long long)v[6], (long long)v[4], (long long)worst_age, win_rate, win_oracle,
           g_prefetch ? "on" : "off", (long long)pv[0], (long long)pv[1], 1e-6 * (double)pv[2]);
  const int64_t p_n_read = p->n_read, nexch = E * L1 + nx - E; /* cached forward exchanges */
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
  if (side) {
    /* with prefetch, every read row of every cached exchange crossed the channel once (the
     * thread's runs and end's rest), each exchange joined once; without, nothing did */
    fake_device_side_counts(be, &sc1);
    const int64_t want = g_prefetch ? nexch * p_n_read * COLS * 4 : 0;
    CHECK(sc1.bytes - sc0.bytes == want && sc1.joins - sc0.joins == (g_prefetch && p_n_read > 0 ? nexch : 0),
          "side uploads: %lld bytes in %lld calls (%lld from the prefetch thread), %lld joins; expected %lld bytes",
          (long long)(sc1.bytes - sc0.bytes), (long long)(sc1.uploads - sc0.uploads),
          (long long)(sc1.uploads_other_thread - sc0.uploads_other_thread), (long long)(sc1.joins - sc0.joins),
          (long long)want);
    CHECK(sc1.host_live == sc0.host_live, "pinned staging not freed: %lld buffers live, %lld before",
          (long long)sc1.host_live, (long long)sc0.host_live);
    int64_t v2[2] = {sc1.uploads - sc0.uploads, sc1.uploads_other_thread - sc0.uploads_other_thread};
    OK(comm_allreduce_i64(g_comm, v2, 2, COMM_SUM));
    if (me == 0)
      printf("ok:   side uploads: %lld calls, %lld of them from the prefetch threads\n", (long long)v2[0],
             (long long)v2[1]);
  }
  setup_free(&s);
}

/* Stale gradients (--grad-staleness G): each consumer's halo row gradient encodes
 * (consumer, gid, epoch, column); after the backward exchange of epoch e every owner's
 * inner row must hold its own value plus, from each consumer holding it, the gradient of
 * the epoch that last refreshed the row's phase (jaca_last_refresh under G; integers, so
 * the sum is exact in any order), never one more than G epochs old. */
static float genc(int64_t q, int64_t g, uint32_t e, int64_t j) {
  return (float)((g * 7 + q * 3 + (int64_t)e * 11 + j) % 100003);
}

/* What this rank sent since comm_stats_reset, backward exchanges only: gradients, in
 * comm_stats' backward counters (jaca's gradient objects run "forward" calls over plans
 * from consumers to owners, and were counted as forward). */
static void grad_stats_check(int64_t grad_bytes, const char *what) {
  struct comm_stats cs;
  comm_stats_get(g_comm, &cs);
  CHECK(cs.halo_fwd_bytes == 0 && cs.halo_fwd_calls == 0 && cs.halo_bwd_bytes == grad_bytes,
        "%s: comm_stats forward %lld bytes in %lld calls, backward %lld bytes; the cache sent %lld gradient bytes",
        what, (long long)cs.halo_fwd_bytes, (long long)cs.halo_fwd_calls, (long long)cs.halo_bwd_bytes,
        (long long)grad_bytes);
}

static void grad_case(const char *spec, int G, struct cg_backend *be) {
  const int me = comm_rank(g_comm), P = comm_size(g_comm);
  struct setup s;
  setup_make(&s, spec, 1);
  const struct part_local *pl = s.pl;
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.host_mb = o.device_mb = 0;
  o.policy = JACA_POLICY_JACA;
  o.grad_staleness = G;
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &o, &ex));
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = NULL, *d = NULL;
  case_matrices(rows, be, &h, &d);
  const uint32_t E = (uint32_t)(2 * (G + 1) + 1);
  int64_t worst = 0, bytes = 0, exact = 0;
  comm_stats_reset(g_comm);
  for (uint32_t e = 1; e <= E; e++) {
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < COLS; j++)
        h[i * COLS + j] = i < pl->n_inner ? (float)((pl->gid[i] + j) % 1000) : genc(me, pl->gid[i], e, j);
    if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
    OK(cg_exchange_halo(ex, CG_HALO_BACKWARD, (struct cg_halo_tag){1, e}, d, COLS));
    if (rows > 0) OK(be->download(be, h, d, (size_t)(rows * COLS) * sizeof(float)));
    const uint32_t from_max = e;
    for (int64_t i = 0; i < pl->n_inner; i++) {
      const int64_t g = pl->gid[i];
      const uint32_t from = jaca_last_refresh(e, jaca_phase(g, G), G);
      for (int64_t j = 0; j < COLS; j++) {
        double want = (double)((g + j) % 1000);
        for (int q = 0; q < P; q++) {
          if (q == me) continue;
          const struct part_local *l = &s.all[q];
          for (int64_t k = l->n_inner; k < l->n_inner + l->n_halo; k++)
            if (l->gid[k] == g) {
              want += genc(q, g, from, j);
              if ((int64_t)(from_max - from) > worst) worst = from_max - from; /* a gradient was added */
            }
        }
        CHECK(h[i * COLS + j] == want, "grad staleness %d epoch %u: inner row %lld (gid %lld) col %lld holds %.0f, "
              "expected %.0f (gradients of epoch %u)", G, e, (long long)i, (long long)g, (long long)j,
              (double)h[i * COLS + j], want, from);
      }
    }
  }
  struct jaca_stats st;
  OK(jaca_exchange_stats(ex, 1, &st));
  CHECK(st.grad_age_max == worst && worst <= G, "the oldest gradient: %lld epochs (the values: %lld)",
        (long long)st.grad_age_max, (long long)worst);
  grad_stats_check(st.grad_bytes, "grad staleness");
  int64_t v[2] = {st.grad_bytes, st.grad_bytes_exact};
  OK(comm_allreduce_i64(g_comm, v, 2, COMM_SUM));
  bytes = v[0];
  exact = v[1];
  if (P > 1 && exact > 0) CHECK(bytes < exact && bytes > 0, "gradient bytes %lld of %lld", (long long)bytes, (long long)exact);
  if (me == 0)
    printf("ok: %-13s %s, grad staleness %d: %u backward exchanges, %lld of %lld gradient bytes sent, oldest %lld epochs\n",
           spec, be->name, G, E, (long long)bytes, (long long)exact, (long long)worst);
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
  setup_free(&s);
}

/* Adaptive gradients (--grad-staleness adaptive:EPS:G), hand-made drift. Consumer q's
 * gradient of halo vertex g at epoch e, column j (integers, so the owner's sums are exact
 * in any order):
 *   col 0  GB            (the norm: ~GB; the small changes below stay far under EPS)
 *   col 1  e             (moves by 1 an epoch: relative drift <= G / GB, far below EPS)
 *   col 2  GB * gver     gver = gver(q, g, e): how many "events" (q, g) had in epochs
 *                        1..e (a hash says when); an event moves the gradient by a
 *                        relative drift > 0.1, far above EPS = 0.02
 *   col 3+ (g * 5 + q * 3 + j) % 97
 * The consumer's rule, simulated here per (q, g): its gradient is sent at e when it never
 * was, when gver changed since the last send, or when the last send is more than G
 * epochs old. After the backward exchange of epoch e every owner's inner row must hold
 * its own value plus, from each consumer q holding it, q's gradient of the epoch of its
 * last send (never more than G epochs old); each rank's grad_sent / grad_skipped must
 * equal the simulation over its halo rows, its grad_age_max the oldest gradient added,
 * and the job must meet every reason to send and to skip, or the case proves nothing. */
#define GB 4096.0f
static int gevent(int64_t q, int64_t g, uint32_t e) {
  uint64_t z = (uint64_t)g * 131 + (uint64_t)q * 7919 + e + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return e >= 2 && (z ^ (z >> 31)) % 5 == 0;
}
static int gver(int64_t q, int64_t g, uint32_t e) {
  int v = 0;
  for (uint32_t k = 1; k <= e; k++) v += gevent(q, g, k);
  return v;
}
static uint32_t glast_sent(int64_t q, int64_t g, uint32_t e, int G) {
  uint32_t ls = 0;
  for (uint32_t k = 1; k <= e; k++)
    if (ls == 0 || gver(q, g, k) != gver(q, g, ls) || (int64_t)k - (int64_t)ls > G) ls = k;
  return ls;
}
static float gpay(int64_t q, int64_t g, uint32_t e, int64_t j) {
  if (j == 0) return GB;
  if (j == 1) return (float)e;
  if (j == 2) return GB * (float)gver(q, g, e);
  return (float)((g * 5 + q * 3 + j) % 97);
}

static void grad_adapt_case(const char *spec, int random_owners, int S, int G, struct cg_backend *be) {
  const int me = comm_rank(g_comm), P = comm_size(g_comm);
  const double EPS = 0.02;
  struct setup s;
  setup_make(&s, spec, random_owners);
  const struct part_local *pl = s.pl;
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.host_mb = o.device_mb = 0;
  o.policy = JACA_POLICY_JACA;
  o.staleness = S; /* the forward rows' schedule does not touch the gradients */
  o.grad_adaptive = 1;
  o.grad_adapt_eps = EPS;
  o.grad_staleness = G;
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &o, &ex));
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = NULL, *d = NULL;
  case_matrices(rows, be, &h, &d);
  const uint32_t E = (uint32_t)(3 * (G + 1) + 2);
  int64_t worst = 0, want_sent = 0, want_skipped = 0, by_event = 0, by_age = 0;
  comm_stats_reset(g_comm);
  for (uint32_t e = 1; e <= E; e++) {
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < COLS; j++)
        h[i * COLS + j] = i < pl->n_inner ? (float)((pl->gid[i] + j) % 1000) : gpay(me, pl->gid[i], e, j);
    if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
    OK(cg_exchange_halo(ex, CG_HALO_BACKWARD, (struct cg_halo_tag){1, e}, d, COLS));
    if (rows > 0) OK(be->download(be, h, d, (size_t)(rows * COLS) * sizeof(float)));
    for (int64_t i = 0; i < pl->n_inner; i++) {
      const int64_t g = pl->gid[i];
      for (int64_t j = 0; j < COLS; j++) {
        double want = (double)((g + j) % 1000);
        for (int q = 0; q < P; q++) {
          if (q == me) continue;
          const struct part_local *l = &s.all[q];
          for (int64_t k = l->n_inner; k < l->n_inner + l->n_halo; k++)
            if (l->gid[k] == g) {
              const uint32_t from = glast_sent(q, g, e, G);
              want += gpay(q, g, from, j);
              if ((int64_t)(e - from) > worst) worst = e - from;
            }
        }
        CHECK(h[i * COLS + j] == want, "adaptive grad G %d epoch %u: inner row %lld (gid %lld) col %lld holds %.0f, "
              "expected %.0f", G, e, (long long)i, (long long)g, (long long)j, (double)h[i * COLS + j], want);
      }
    }
    for (int64_t k = pl->n_inner; k < rows; k++) { /* what this rank should have sent */
      const int64_t g = pl->gid[k];
      if (glast_sent(me, g, e, G) != e) {
        want_skipped++;
        continue;
      }
      want_sent++;
      if (e > 1 && gver(me, g, e) != gver(me, g, glast_sent(me, g, e - 1, G))) by_event++;
      else if (e > 1) by_age++;
    }
  }
  struct jaca_stats st;
  OK(jaca_exchange_stats(ex, 1, &st));
  CHECK(st.grad_sent == want_sent && st.grad_skipped == want_skipped,
        "gradients sent %lld, skipped %lld; expected %lld and %lld", (long long)st.grad_sent,
        (long long)st.grad_skipped, (long long)want_sent, (long long)want_skipped);
  CHECK(st.grad_age_max == worst && worst <= G, "the oldest gradient: %lld epochs (the values: %lld), bound %d",
        (long long)st.grad_age_max, (long long)worst, G);
  CHECK(st.grad_bytes >= want_sent * COLS * (int64_t)sizeof(float) &&
            st.grad_bytes == want_sent * COLS * (int64_t)sizeof(float) + st.grad_index_bytes,
        "gradient bytes %lld: %lld gradients and %lld bytes of positions", (long long)st.grad_bytes,
        (long long)want_sent, (long long)st.grad_index_bytes);
  grad_stats_check(st.grad_bytes, "adaptive gradients");
  int64_t v[7] = {by_event, by_age, want_skipped, worst == G, st.grad_bytes, st.grad_bytes_exact, want_sent};
  OK(comm_allreduce_i64(g_comm, v, 7, COMM_SUM));
  if (P > 1)
    CHECK(v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0 && v[4] < v[5],
          "the case proves nothing: %lld sends by drift, %lld by age, %lld skips, %lld owners at the bound, %lld of "
          "%lld bytes", (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4],
          (long long)v[5]);
  if (me == 0)
    printf("ok: %-13s %s, grad adaptive:%g:%d (staleness %d): %u backward exchanges, %lld gradients sent by drift, "
           "%lld by age, %lld skipped, %lld of %lld gradient bytes sent\n", spec, be->name, EPS, G, S, E,
           (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[4], (long long)v[5]);
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
  setup_free(&s);
}

/* Adaptive gradients at EPS 0 against --grad-staleness 0 (the node tier's exact path),
 * bit for bit, on random (non-integer) gradients: the owner adds in the same order. */
static void grad_exact_case(const char *spec, struct cg_backend *be) {
  const int me = comm_rank(g_comm);
  struct setup s;
  setup_make(&s, spec, 1);
  const struct part_local *pl = s.pl;
  struct jaca_options oe, oa;
  jaca_options_defaults(&oe);
  oe.host_mb = oe.device_mb = 0;
  oe.policy = JACA_POLICY_JACA;
  oa = oe;
  OK(jaca_grad_staleness_parse("adaptive:0:3", &oa));
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *xe = NULL, *xa = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &oe, &xe));
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &oa, &xa));
  const int64_t rows = pl->n_inner + pl->n_halo, n = (rows > 0 ? rows : 1) * COLS;
  float *h = malloc(sizeof(float) * (size_t)n), *he = malloc(sizeof(float) * (size_t)n),
        *ha = malloc(sizeof(float) * (size_t)n), *d = NULL;
  CHECK(h && he && ha, "out of memory");
  OK(be->alloc(be, (void **)&d, sizeof(float) * (size_t)n, "test matrix"));
  uint64_t z = 12345 + (uint64_t)me;
  for (uint32_t e = 1; e <= 5; e++)
    for (int l = 1; l < NLAYERS; l++) {
      for (int64_t i = 0; i < rows * COLS; i++) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = (float)((double)(z >> 11) / 9007199254740992.0 - 0.5);
        if (e > 1 && i >= pl->n_inner * COLS && (z >> 7) % 3 == 0) h[i] = 0.25f; /* some unchanged */
      }
      const struct cg_halo_tag tag = {l, e};
      for (int pass = 0; pass < 2; pass++) {
        if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
        OK(cg_exchange_halo(pass ? xa : xe, CG_HALO_BACKWARD, tag, d, COLS));
        if (rows > 0) OK(be->download(be, pass ? ha : he, d, (size_t)(rows * COLS) * sizeof(float)));
      }
      CHECK(rows == 0 || memcmp(he, ha, sizeof(float) * (size_t)(pl->n_inner * COLS)) == 0,
            "epoch %u layer %d: adaptive gradients at EPS 0 differ from --grad-staleness 0", e, l);
    }
  struct jaca_stats st;
  OK(jaca_exchange_stats(xa, 0, &st));
  CHECK(st.grad_skipped == 0 && st.grad_age_max == 0 && st.grad_index_bytes == 0 &&
            st.grad_sent == 5 * (NLAYERS - 1) * pl->n_halo,
        "EPS 0 skipped %lld gradients, sent %lld, oldest %lld epochs, %lld bytes of positions",
        (long long)st.grad_skipped, (long long)st.grad_sent, (long long)st.grad_age_max,
        (long long)st.grad_index_bytes);
  if (me == 0) printf("ok: %-13s %s, grad adaptive:0: bit for bit --grad-staleness 0\n", spec, be->name);
  be->free(be, d);
  free(h);
  free(he);
  free(ha);
  cg_exchange_destroy(&xa);
  cg_exchange_destroy(&xe);
  setup_free(&s);
}

/* The age checks of end are the last guard of the staleness bound (jaca/exchange.c: "a
 * broken schedule is an error, not a stale value"). The schedule counts generations,
 * the bound is in epochs, so a caller that skips an epoch breaks it: at staleness 2,
 * epochs 1, 2 and then 4 (generation 3) leave the phase-0 rows of epoch 1, 3 epochs old,
 * one more than the bound. end must refuse them on every rank that holds one: directly
 * kept rows with the direct check's message, else rows read from the node tier with the
 * node check's; a rank without a phase-0 row ends normally. v[0] / v[1] count the ranks
 * with a direct / node-tier phase-0 row (so that the caller can require both kinds). */
static void stale_guard_case(const char *spec, double capacity, struct cg_backend *be, int64_t v[2]) {
  const int me = comm_rank(g_comm), S = 2;
  struct setup s;
  setup_make(&s, spec, 1);
  const struct part_local *pl = s.pl;
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.policy = JACA_POLICY_JACA;
  o.capacity = capacity;
  o.staleness = S;
  o.prefetch = 0; /* end reads the node rows itself (no copy left pending by the error) */
  o.host_mb = o.device_mb = 0;
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &o, &ex));
  const struct jaca_node_plan *p = jaca_exchange_plan(ex);
  CHECK(p != NULL && p->nclasses == S + 2, "not a caching exchange of staleness %d", S);
  int direct0 = 0, node0 = 0;
  for (int64_t k = 0; k < p->cls[0].recv_rows; k++) direct0 |= p->cls[0].recv_dest[k] >= 0;
  for (int64_t k = 0; k < p->n_read; k++) node0 |= p->read_phase[k] == 0;
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = NULL, *d = NULL;
  case_matrices(rows, be, &h, &d);
  for (uint32_t e = 1; e <= 2; e++) {
    CHECK(forward_check(&s, be, ex, d, h, 1, e, 0, p, NULL) == 0, "stale guard: epoch %u: wrong halo values", e);
    OK(comm_barrier(g_comm)); /* (a training step's all-reduce: no writer a generation ahead of a reader) */
  }
  const uint32_t jump = 4;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < COLS; j++) h[i * COLS + j] = i < pl->n_inner ? enc(me, pl->gid[i], jump, 1, j) : -1.0f;
  if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
  const struct cg_halo_tag tag = {1, jump};
  OK(ex->halo_begin(ex, CG_HALO_FORWARD, tag, d, COLS));
  const int rc = ex->halo_end(ex, CG_HALO_FORWARD, tag, d, COLS);
  const char *msg = rc < 0 ? cg_err_msg() : "(none)";
  if (direct0)
    CHECK(rc == CG_ERR_INTERNAL && strstr(msg, "epochs old (staleness 2)"),
          "%s capacity %g: a directly kept row 3 epochs old at staleness 2: end returned %d (%s)", spec, capacity,
          rc, msg);
  else if (node0)
    CHECK(rc == CG_ERR_INTERNAL && strstr(msg, "at most 2 epochs before epoch 4"),
          "%s capacity %g: a node-tier row 3 epochs old at staleness 2: end returned %d (%s)", spec, capacity, rc,
          msg);
  else
    CHECK(rc == CG_OK, "%s capacity %g: no phase-0 row, yet end returned %d (%s)", spec, capacity, rc, msg);
  cg_err_clear();
  int64_t t[2] = {direct0, node0};
  OK(comm_allreduce_i64(g_comm, t, 2, COMM_SUM));
  v[0] += t[0];
  v[1] += t[1];
  if (me == 0)
    printf("ok: %-13s capacity %g, an epoch skipped at staleness 2: refused on the %lld ranks with a kept row and "
           "the %lld with a node-tier row of phase 0\n", spec, capacity, (long long)t[0], (long long)t[1]);
  OK(comm_barrier(g_comm));
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
  setup_free(&s);
}

/* jaca.h's contract: two training forward exchanges of a layer need a collective of
 * every rank between them, for the next one overwrites the node tier's rows of the one
 * before. Broken here on one node: local rank 0 ends exchange 1 and begins exchange 2
 * while the others have not ended exchange 1 yet. The begin must refuse (naming the
 * contract) before it writes anything, and the others must still read exchange 1's rows
 * (a row of exchange 2 there would be the hazard the contract prevents). */
static void early_writer_case(const char *spec, double capacity, int staleness, struct cg_backend *be) {
  if (comm_nnodes(g_comm) != 1 || comm_local_size(g_comm) < 2) return; /* others' rows would wait for them */
  const int me = comm_rank(g_comm), early = comm_local_rank(g_comm) == 0;
  struct setup s;
  setup_make(&s, spec, 1);
  const struct part_local *pl = s.pl;
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.policy = JACA_POLICY_JACA;
  o.capacity = capacity;
  o.staleness = staleness;
  o.host_mb = o.device_mb = 0;
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &o, &ex));
  const struct jaca_node_plan *p = jaca_exchange_plan(ex);
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = NULL, *d = NULL;
  case_matrices(rows, be, &h, &d);
  const struct cg_halo_tag t1 = {1, 1}, t2 = {1, 2};
  fill_rows(&s, be, d, h, 1, 1, 0);
  OK(ex->halo_begin(ex, CG_HALO_FORWARD, t1, d, COLS));
  if (early) {
    OK(ex->halo_end(ex, CG_HALO_FORWARD, t1, d, COLS));
    CHECK(halo_verify(&s, be, d, h, 1, 1, 0, p, NULL) == 0, "early writer: exchange 1: wrong halo values");
    fill_rows(&s, be, d, h, 1, 2, 0);
    const int rc = ex->halo_begin(ex, CG_HALO_FORWARD, t2, d, COLS);
    const char *msg = rc < 0 ? cg_err_msg() : "(none)";
    CHECK(rc == CG_ERR_ARG && strstr(msg, "had not finished reading exchange 1") &&
              strstr(msg, "need a collective of every rank between them"),
          "%s capacity %g staleness %d: exchange 2 began before the node's other ranks ended exchange 1: "
          "begin returned %d (%s)", spec, capacity, staleness, rc, msg);
    cg_err_clear();
  }
  OK(comm_barrier(g_comm)); /* the early rank's refused begin comes first */
  if (!early) {
    OK(ex->halo_end(ex, CG_HALO_FORWARD, t1, d, COLS));
    CHECK(halo_verify(&s, be, d, h, 1, 1, 0, p, NULL) == 0,
          "early writer: exchange 1 read after a refused exchange 2: wrong halo values");
  }
  if (me == 0)
    printf("ok: %-13s capacity %g staleness %d, a forward exchange begun before the node's ranks read the one "
           "before: refused, their rows intact\n", spec, capacity, staleness);
  OK(comm_barrier(g_comm));
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
  setup_free(&s);
}

/* The same contract for the node tier's halo gradients (--grad-staleness 0): the next
 * backward exchange of a layer overwrites the gradient blocks its owners read in the one
 * before. Broken here on one node: local rank 0 ends backward exchange 1 and begins
 * exchange 2 while the owners it writes for have not ended exchange 1. The begin must
 * refuse (naming the contract) before it writes anything, and the owners must still add
 * exchange 1's gradients. */
static void early_grad_writer_case(const char *spec, struct cg_backend *be) {
  if (comm_nnodes(g_comm) != 1 || comm_local_size(g_comm) < 2) return; /* others' rows would wait for them */
  const int me = comm_rank(g_comm), early = comm_local_rank(g_comm) == 0;
  struct setup s;
  setup_make(&s, spec, 1);
  const struct part_local *pl = s.pl;
  /* the early rank writes gradients for an owner (one node: every peer): else nothing to refuse */
  int64_t writes = 0;
  for (int k = 0; early && k < pl->npeers; k++) writes += pl->peer[k] != me ? pl->recv_count[k] : 0;
  OK(comm_allreduce_i64(g_comm, &writes, 1, COMM_SUM));
  CHECK(writes > 0, "%s: local rank 0 holds no halo row: the case tests nothing", spec);
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.policy = JACA_POLICY_JACA;
  o.host_mb = o.device_mb = 0;
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &o, &ex));
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = NULL, *d = NULL;
  case_matrices(rows, be, &h, &d);
  const struct cg_halo_tag t1 = {1, 1}, t2 = {1, 2};
  grad_fill(&s, be, d, h);
  OK(ex->halo_begin(ex, CG_HALO_BACKWARD, t1, d, COLS));
  if (early) {
    OK(ex->halo_end(ex, CG_HALO_BACKWARD, t1, d, COLS));
    grad_verify(&s, be, d, h);
    grad_fill(&s, be, d, h);
    const int rc = ex->halo_begin(ex, CG_HALO_BACKWARD, t2, d, COLS);
    const char *msg = rc < 0 ? cg_err_msg() : "(none)";
    CHECK(rc == CG_ERR_ARG && strstr(msg, "had not finished reading the gradients of exchange 1") &&
              strstr(msg, "need a collective of every rank between them"),
          "%s: backward exchange 2 began before the node's owners ended exchange 1: begin returned %d (%s)", spec,
          rc, msg);
    cg_err_clear();
  }
  OK(comm_barrier(g_comm)); /* the early rank's refused begin comes first */
  if (!early) {
    OK(ex->halo_end(ex, CG_HALO_BACKWARD, t1, d, COLS));
    grad_verify(&s, be, d, h); /* exchange 1's gradients, none of a refused exchange 2 */
  }
  if (me == 0)
    printf("ok: %-13s a backward exchange begun before the node's owners read the one before: refused, their "
           "gradients intact\n", spec);
  OK(comm_barrier(g_comm));
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
  setup_free(&s);
}

/* A node-tier row that is never written: on one node, rank 0 leaves out exchange 1 of
 * layer 1 (a schedule broken on one rank). Its readers must fail within the readers'
 * timeout (jaca_options.read_timeout_s, 0.5 s here; CAPGNN_JACA_TIMEOUT unset for the
 * case) with an error naming the row's owner, the layer, the epoch and the generation
 * waited for; a rank that reads no row of rank 0 ends normally. */
static void stuck_reader_case(const char *spec, struct cg_backend *be) {
  if (comm_nnodes(g_comm) != 1 || comm_size(g_comm) < 2) return; /* MPI transfers would wait instead */
  const int me = comm_rank(g_comm);
  char *env = getenv("CAPGNN_JACA_TIMEOUT") ? strdup(getenv("CAPGNN_JACA_TIMEOUT")) : NULL;
  unsetenv("CAPGNN_JACA_TIMEOUT");
  struct setup s;
  setup_make(&s, spec, 1);
  const struct part_local *pl = s.pl;
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.policy = JACA_POLICY_JACA;
  o.prefetch = 0; /* end reads the node rows itself (no copy left pending by the error) */
  o.host_mb = o.device_mb = 0;
  o.read_timeout_s = 0.5;
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &o, &ex));
  if (env) setenv("CAPGNN_JACA_TIMEOUT", env, 1);
  free(env);
  const struct jaca_node_plan *p = jaca_exchange_plan(ex);
  CHECK(p->n_direct == 0, "the whole node halo in the tier, yet %lld direct rows", (long long)p->n_direct);
  int reads0 = 0;
  for (int64_t k = 0; k < p->n_read; k++) reads0 |= p->halo_owner[p->read_halo[k]] == 0;
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = NULL, *d = NULL;
  case_matrices(rows, be, &h, &d);
  if (me != 0) {
    fill_rows(&s, be, d, h, 1, 1, 0);
    const struct cg_halo_tag t1 = {1, 1};
    const double t0 = cg_time_now();
    OK(ex->halo_begin(ex, CG_HALO_FORWARD, t1, d, COLS));
    const int rc = ex->halo_end(ex, CG_HALO_FORWARD, t1, d, COLS);
    const double dt = cg_time_now() - t0;
    const char *msg = rc < 0 ? cg_err_msg() : "(none)";
    if (reads0)
      CHECK(rc == CG_ERR_INTERNAL && strstr(msg, "layer 1, owned by rank 0) did not reach generation 1 (epoch 1's "
                                                 "exchange) within 0.5 s (it holds generation 0)") && dt < 10.0,
            "a node row rank 0 never writes: end returned %d after %.1f s (%s)", rc, dt, msg);
    else
      CHECK(rc == CG_OK, "no row of rank 0 to read, yet end returned %d (%s)", rc, msg);
    cg_err_clear();
  }
  int64_t n = reads0 && me != 0;
  OK(comm_allreduce_i64(g_comm, &n, 1, COMM_SUM));
  CHECK(n > 0, "no rank reads a row of rank 0: the case tests nothing");
  if (me == 0)
    printf("ok: %-13s a node row never written: %lld readers failed within the 0.5 s timeout, naming it\n", spec,
           (long long)n);
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
  setup_free(&s);
}

int main(int argc, char **argv) {
  if (comm_init(&argc, &argv, &g_comm) != CG_OK) {
    fprintf(stderr, "comm_init: %s\n", cg_err_msg());
    return 1;
  }
  cg_log_set_level(CG_LOG_WARN);
  struct cg_backend *cpu = NULL, *dev = NULL;
  OK(cg_backend_cpu_create(1, &cpu));
  OK(fake_device_create(cpu, &dev));
  const enum jaca_policy pols[] = {JACA_POLICY_JACA, JACA_POLICY_LRU, JACA_POLICY_FIFO};
  const double caps[] = {1.0, 0.1};
  for (int pi = 0; pi < 3; pi++)
    for (int ci = 0; ci < 2; ci++) {
      run_case("synth:tiny", 1, pols[pi], caps[ci], 0, cpu);
      run_case("synth:small", pi % 2, pols[pi], caps[ci], 0, cpu);
    }
  /* staleness: rows kept between refreshes, never older than S */
  run_case("synth:tiny", 1, JACA_POLICY_JACA, 1.0, 1, cpu);
  run_case("synth:small", 1, JACA_POLICY_JACA, 0.1, 3, cpu);
  run_case("synth:small", 0, JACA_POLICY_LRU, 0.5, 2, cpu);
  run_case("synth:tiny", 0, JACA_POLICY_FIFO, 0.1, 5, cpu);
  /* ... and a schedule that would hand out an older row is refused, both kinds of row */
  {
    int64_t kinds[2] = {0, 0};
    stale_guard_case("synth:small", 0.1, cpu, kinds);
    stale_guard_case("synth:small", 1.0, cpu, kinds);
    CHECK(comm_size(g_comm) == 1 || (kinds[0] > 0 && kinds[1] > 0),
          "the stale guard cases met %lld directly kept and %lld node-tier phase-0 rows: both kinds must be tried",
          (long long)kinds[0], (long long)kinds[1]);
  }
  /* ... and so is a forward exchange begun before the node's ranks read the one before */
  early_writer_case("synth:small", 1.0, 0, cpu);
  early_writer_case("synth:small", 0.1, 2, cpu);
  early_grad_writer_case("synth:small", cpu);
  /* ... and a row never written is reported within the readers' timeout */
  stuck_reader_case("synth:small", cpu);
  fake_device_side_uploads(dev, 1);
  run_case("synth:tiny", 0, JACA_POLICY_JACA, 1.0, 0, dev);
  run_case("synth:small", 1, JACA_POLICY_JACA, 0.1, 0, dev);
  run_case("synth:small", 1, JACA_POLICY_JACA, 0.5, 2, dev);
  fake_device_side_uploads(dev, 0); /* a device without side uploads: all rows in end */
  run_case("synth:small", 1, JACA_POLICY_JACA, 0.1, 0, dev);
  fake_device_side_uploads(dev, 1);
  /* prefetch off: the same cases' values (every run_case checks each halo value exactly
   * against its encoding, so on and off land the same values in the same rows) */
  g_prefetch = 0;
  for (int ci = 0; ci < 2; ci++) run_case("synth:small", 1, JACA_POLICY_JACA, caps[ci], 0, cpu);
  run_case("synth:small", 1, JACA_POLICY_JACA, 0.1, 3, cpu);
  run_case("synth:tiny", 0, JACA_POLICY_FIFO, 0.1, 5, cpu);
  run_case("synth:small", 1, JACA_POLICY_JACA, 0.5, 2, dev);
  g_prefetch = 1;
  /* Algorithm 1 with more memory reserved than there is: no tier holds a row, every
   * row travels directly, still right */
  g_reserve_mb = (int64_t)1 << 40;
  run_case("synth:small", 1, JACA_POLICY_JACA, 1.0, 0, cpu);
  run_case("synth:small", 1, JACA_POLICY_LRU, 1.0, 2, cpu);
  g_reserve_mb = -1;
  grad_case("synth:tiny", 1, cpu);
  grad_case("synth:small", 3, cpu);
  grad_case("synth:small", 2, dev);
  grad_adapt_case("synth:small", 1, 0, 3, cpu);
  grad_adapt_case("synth:tiny", 1, 0, 1, cpu);
  grad_adapt_case("synth:small", 1, 0, 2, dev);
  grad_exact_case("synth:small", cpu);
  grad_exact_case("synth:tiny", dev);
  int64_t up = 0, down = 0;
  fake_device_counts(dev, &up, &down);
  /* policy none: the plain exchange itself */
  {
    struct setup s;
    setup_make(&s, "synth:tiny", 1);
    struct jaca_options o;
    jaca_options_defaults(&o);
    const struct jaca_layers layers = {NLAYERS, COLS};
    struct cg_exchange *ex = NULL;
    OK(jaca_exchange_create(g_comm, cpu, s.pl, &s.pl->agg, 64, &layers, &o, &ex));
    CHECK(jaca_exchange_plan(ex) == NULL, "policy none must give the plain exchange");
    struct jaca_stats st;
    CHECK(jaca_exchange_stats(ex, 0, &st) == CG_ERR_ARG, "stats of a plain exchange");
    cg_err_clear();
    cg_exchange_destroy(&ex);
    /* options that are not built yet are refused on every rank */
    o.policy = JACA_POLICY_JACA;
    o.grad_staleness = JACA_MAX_STALENESS + 1;
    CHECK(jaca_exchange_create(g_comm, cpu, s.pl, &s.pl->agg, 64, &layers, &o, &ex) == CG_ERR_ARG && !ex,
          "grad staleness above the limit must be refused");
    cg_err_clear();
    setup_free(&s);
  }
  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (comm_rank(g_comm) == 0) printf("test_jaca_exchange: all checks passed on %d ranks, %d nodes\n", comm_size(g_comm), comm_nnodes(g_comm));
  comm_finalize(&g_comm);
  return 0;
}
