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
 * any order) run in between. A negative control feeds one rank's rows of the wrong epoch
 * and must be caught.
 *
 * Configurations: policies jaca, lru, fifo at node-tier capacity 100 % and 10 %; the
 * CPU backend and a fake device backend (mpi/tests/fake_device.h: device pointers fault
 * when the host touches them, so the device path's staging is proved). Counters: per
 * exchange, lookups = halo rows, node hits + misses = lookups; the bytes this rank sends
 * through MPI (split by node) equal its forward plan's rows; at 100 % capacity the
 * inter-node bytes equal the model computed here from all ranks' local graphs alone:
 * each halo vertex owned by this rank and needed on another node crosses once per
 * destination node, and nothing travels between ranks of one node. The seam's counters:
 * cache lookups/hits and halo bytes (plain exchange's + the forward plan's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/ops.h"
#include "core/status.h"
#include "fake_device.h"
#include "graph/graph.h"
#include "jaca/exchange_internal.h"
#include "jaca/jaca.h"
#include "mpi/comm.h"
#include "partition/partition.h"

#define COLS 8
#define NLAYERS 3

static struct comm *g_comm;

#define CHECK(cond, ...)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "[rank %d] FAIL %s:%d: %s: ", comm_rank(g_comm), __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                           \
      fprintf(stderr, "\n");                                                                  \
      comm_abort(g_comm, 1);                                                                  \
    }                                                                                         \
  } while (0)
#define OK(expr)                                                                                   \
  do {                                                                                             \
    int ok_st_ = (expr);                                                                           \
    if (ok_st_ < 0) {                                                                              \
      fprintf(stderr, "[rank %d] FAIL %s:%d: %s: %s\n", comm_rank(g_comm), __FILE__, __LINE__, #expr, \
              cg_err_msg());                                                                       \
      comm_abort(g_comm, 1);                                                                       \
    }                                                                                              \
  } while (0)

static float enc(int64_t o, int64_t g, uint32_t e, int l, int64_t j) {
  return (float)((((g * 4 + o) * 8 + (int64_t)e) * 3 + l) * COLS + j);
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
  OK(graph_synth(spec, &s->g));
  s->owner = malloc(sizeof(int32_t) * (size_t)s->g.n);
  CHECK(s->owner != NULL, "out of memory");
  if (random_owners) {
    struct part_options po;
    memset(&po, 0, sizeof po);
    po.method = PART_RANDOM;
    po.nparts = P;
    po.seed = 5;
    OK(part_assign(&s->g, &po, s->owner));
  } else {
    for (int64_t v = 0; v < s->g.n; v++) s->owner[v] = (int32_t)(v % P);
  }
  s->all = calloc((size_t)P, sizeof *s->all);
  CHECK(s->all != NULL, "out of memory");
  for (int q = 0; q < P; q++) OK(part_local_build(&s->g, s->owner, P, q, GRAPH_NORM_GCN, 1, &s->all[q]));
  s->pl = &s->all[me];
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

/* One cached forward exchange of (layer, epoch); returns the wrong values. With `lie`,
 * rank 0 fills its rows with the next epoch's encoding (the negative control). */
static int64_t forward_check(const struct setup *s, struct cg_backend *be, struct cg_exchange *ex, float *d,
                             float *h, int layer, uint32_t epoch, int lie) {
  const struct part_local *pl = s->pl;
  const int me = comm_rank(g_comm);
  const int64_t rows = pl->n_inner + pl->n_halo;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < COLS; j++)
      h[i * COLS + j] = i < pl->n_inner ? enc(me, pl->gid[i], epoch + (lie && me == 0), layer, j) : -1.0f;
  if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
  const struct cg_halo_tag tag = {layer, epoch};
  OK(ex->halo_begin(ex, CG_HALO_FORWARD, tag, d, COLS));
  OK(comm_barrier(g_comm)); /* other traffic while the exchange is pending */
  OK(ex->halo_end(ex, CG_HALO_FORWARD, tag, d, COLS));
  if (rows > 0) OK(be->download(be, h, d, (size_t)(rows * COLS) * sizeof(float)));
  int64_t bad = 0;
  for (int64_t i = pl->n_inner; i < rows; i++) {
    const int64_t g = pl->gid[i], o = s->owner[g];
    for (int64_t j = 0; j < COLS; j++) {
      const float want = enc(o, g, epoch, layer, j), got = h[i * COLS + j];
      if (got == want) continue;
      if (bad++ == 0 && !lie) {
        const int64_t code = (int64_t)got;
        fprintf(stderr,
                "[rank %d] layer %d epoch %u: halo row %lld (gid %lld, owner %lld) col %lld holds %.0f = (gid %lld, "
                "owner %lld, epoch %lld, layer %lld, col %lld)\n",
                me, layer, epoch, (long long)i, (long long)g, (long long)o, (long long)j, (double)got,
                (long long)(code / COLS / 3 / 8 / 4), (long long)(code / COLS / 3 / 8 % 4),
                (long long)(code / COLS / 3 % 8), (long long)(code / COLS % 3), (long long)(code % COLS));
      }
    }
  }
  return bad;
}

/* Backward through the cache (the plain path): each owner ends with its own value plus
 * its holders' halo values, integers, so the sum is exact in any order. */
static void backward_check(const struct setup *s, struct cg_backend *be, struct cg_exchange *ex, float *d, float *h) {
  const struct part_local *pl = s->pl;
  const int me = comm_rank(g_comm), P = comm_size(g_comm);
  const int64_t rows = pl->n_inner + pl->n_halo;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < COLS; j++) h[i * COLS + j] = (float)((pl->gid[i] * 7 + me * 3 + j) % 1000);
  if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
  OK(cg_exchange_halo(ex, CG_HALO_BACKWARD, (struct cg_halo_tag){2, 3}, d, COLS));
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

static void run_case(const char *spec, int random_owners, enum jaca_policy policy, double capacity,
                     struct cg_backend *be) {
  const int me = comm_rank(g_comm);
  struct setup s;
  setup_make(&s, spec, random_owners);
  const struct part_local *pl = s.pl;
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.policy = policy;
  o.capacity = capacity;
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, 64, &layers, &o, &ex));
  const struct jaca_node_plan *p = jaca_exchange_plan(ex);
  CHECK(p != NULL, "not a caching exchange");
  OK(jaca_node_plan_check(p, pl));
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = malloc(sizeof(float) * (size_t)((rows > 0 ? rows : 1) * COLS)), *d = NULL;
  CHECK(h != NULL, "out of memory");
  OK(be->alloc(be, (void **)&d, sizeof(float) * (size_t)((rows > 0 ? rows : 1) * COLS), "test matrix"));

  struct cg_exchange_counters c0, c1;
  ex->counters(ex, &c0);
  int64_t nfwd = 0;
  for (uint32_t e = 1; e <= 3; e++) {
    for (int l = 1; l < NLAYERS; l++) {
      CHECK(forward_check(&s, be, ex, d, h, l, e, 0) == 0, "%s %s capacity %g: wrong halo values", spec,
            jaca_policy_name(policy), capacity);
      nfwd++;
    }
    backward_check(&s, be, ex, d, h);
    /* evaluation: epoch 0, the plain path, the same values */
    CHECK(forward_check(&s, be, ex, d, h, 1, 0, 0) == 0, "evaluation exchange: wrong halo values");
  }
  ex->counters(ex, &c1);
  /* the negative control: rank 0's rows of the wrong epoch must show up on its consumers */
  int64_t caught = forward_check(&s, be, ex, d, h, 1, 4, 1);
  int64_t holders_of_0 = 0;
  for (int q = 1; q < comm_size(g_comm) && me == 0; q++) /* counted once, then summed */
    for (int64_t i = s.all[q].n_inner; i < s.all[q].n_inner + s.all[q].n_halo; i++)
      holders_of_0 += s.owner[s.all[q].gid[i]] == 0;
  int64_t tot[2] = {caught, holders_of_0};
  OK(comm_allreduce_i64(g_comm, tot, 2, COMM_SUM));
  CHECK(tot[0] == tot[1] * COLS, "the negative control: %lld wrong values seen, %lld expected", (long long)tot[0],
        (long long)(tot[1] * COLS));

  /* statistics and counters of the 3 x 2 cached exchanges */
  struct jaca_stats st, st1;
  OK(jaca_exchange_stats(ex, 0, &st));
  OK(jaca_exchange_stats(ex, 1, &st1));
  const int64_t nx = nfwd + 1; /* with the control's */
  CHECK(st.lookups == nx * pl->n_halo && st.node_hits + st.misses + st.rank_hits == st.lookups,
        "lookups %lld (expected %lld), hits %lld + %lld, misses %lld", (long long)st.lookups,
        (long long)(nx * pl->n_halo), (long long)st.node_hits, (long long)st.rank_hits, (long long)st.misses);
  CHECK(st.misses == nx * (p->n_direct + p->n_received) && st.rank_hits == 0, "misses %lld", (long long)st.misses);
  CHECK(st.bytes_inter == nx * p->send_rows_inter * COLS * 4 && st.bytes_intra == nx * p->send_rows_intra * COLS * 4,
        "bytes %lld inter, %lld intra; plan %lld, %lld rows", (long long)st.bytes_inter, (long long)st.bytes_intra,
        (long long)p->send_rows_inter, (long long)p->send_rows_intra);
  CHECK(st.node_writes == nx * (p->n_write + p->n_received), "node writes %lld, plan %lld + %lld",
        (long long)st.node_writes, (long long)p->n_write, (long long)p->n_received);
  CHECK(st1.lookups == (3 + 1) * pl->n_halo,
        "per-layer lookups %lld", (long long)st1.lookups);
  CHECK(c1.cache_lookups - c0.cache_lookups == nfwd * pl->n_halo, "seam lookups %lld",
        (long long)(c1.cache_lookups - c0.cache_lookups));
  /* the plain path's bytes: 3 evaluation forwards and 3 backwards over the full plan */
  int64_t plain_fwd = 0;
  for (int k = 0; k < pl->npeers; k++) plain_fwd += pl->send_count[k];
  CHECK(st.bytes_exact == nx * plain_fwd * COLS * 4 && st.age_max == 0 && st.age_sum == 0,
        "bytes_exact %lld (expected %lld), age max %lld", (long long)st.bytes_exact,
        (long long)(nx * plain_fwd * COLS * 4), (long long)st.age_max);
  if (be->kind == CG_DEVICE_CPU)
    CHECK(st.bytes_h2d == 0 && st.bytes_d2h == 0, "host/device bytes on the CPU backend");
  else
    CHECK(st.bytes_h2d == nx * p->n_read * COLS * 4 &&
              st.bytes_d2h == nx * (p->n_write + (p->n_received > 0 ? p->recv_rows : 0)) * COLS * 4,
          "host/device bytes %lld / %lld", (long long)st.bytes_h2d, (long long)st.bytes_d2h);
  const int64_t want_bytes = nfwd * p->send_rows * COLS * 4 + 3 * (plain_fwd + pl->n_halo) * COLS * 4;
  CHECK(c1.halo_bytes - c0.halo_bytes == want_bytes, "seam halo bytes %lld, expected %lld",
        (long long)(c1.halo_bytes - c0.halo_bytes), (long long)want_bytes);
  if (capacity >= 1.0) {
    const int64_t model = model_inter_rows(&s);
    CHECK(p->send_rows_inter == model && p->send_rows_intra == 0 && p->n_direct == 0,
          "100 %% capacity: %lld rows to other nodes (model %lld), %lld within the node, %lld direct",
          (long long)p->send_rows_inter, (long long)model, (long long)p->send_rows_intra, (long long)p->n_direct);
  }
  int64_t v[6] = {p->send_rows_inter, plain_fwd, p->n_admitted * (comm_local_rank(g_comm) == 0),
                  p->n_union * (comm_local_rank(g_comm) == 0), st.torn_reads, st.node_hits};
  OK(comm_allreduce_i64(g_comm, v, 6, COMM_SUM));
  if (me == 0)
    printf("ok: %-13s %s owners, %s, %s %3.0f %%: node tiers hold %lld of %lld rows; rows sent between nodes per "
           "exchange %lld (per-rank exchange: %lld in all); %lld node hits, %lld torn reads retried\n",
           spec, random_owners ? "random" : "v mod P", be->name, jaca_policy_name(policy), capacity * 100,
           (long long)v[2], (long long)v[3], (long long)v[0], (long long)v[1], (long long)v[5], (long long)v[4]);
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
      run_case("synth:tiny", 1, pols[pi], caps[ci], cpu);
      run_case("synth:small", pi % 2, pols[pi], caps[ci], cpu);
    }
  run_case("synth:tiny", 0, JACA_POLICY_JACA, 1.0, dev);
  run_case("synth:small", 1, JACA_POLICY_JACA, 0.1, dev);
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
    o.staleness = 2;
    CHECK(jaca_exchange_create(g_comm, cpu, s.pl, &s.pl->agg, 64, &layers, &o, &ex) == CG_ERR_UNSUPPORTED && !ex,
          "staleness 2 must be refused");
    cg_err_clear();
    setup_free(&s);
  }
  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (comm_rank(g_comm) == 0) printf("test_jaca_exchange: all checks passed on %d ranks, %d nodes\n", comm_size(g_comm), comm_nnodes(g_comm));
  comm_finalize(&g_comm);
  return 0;
}
