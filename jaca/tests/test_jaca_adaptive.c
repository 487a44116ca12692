/* jaca/tests/test_jaca_adaptive.c — adaptive staleness (--staleness adaptive:EPS:S):
 * exactly the rows that drifted or were due travel, no row served is older than S, and
 * EPS = 0 is the exact cache bit for bit.
 *
 * Options: jaca_staleness_parse, jaca_grad_staleness_parse (the same syntax, for the
 * gradients) and jaca_options_check on good and bad values.
 *
 * Hand-made drift: every rank builds the same graph and owners (as test_jaca_exchange)
 * and fills its inner rows with a payload it knows the drift of. Row of vertex g at
 * epoch e, layer l (values exact as floats):
 *   col 0  B + g          (the vertex: a misplaced row is caught)
 *   col 1  B + e          (the epoch the values were produced in: a row's age is read
 *                          from its value, independently of any schedule; relative
 *                          drift per epoch ~1e-7, far below EPS)
 *   col 2  B * (1 + v)    v = ver(g, e): how many "events" g had in epochs 1..e (an event
 *                          when a hash of (g, e) says so); an event moves the row by a
 *                          relative drift > 0.06, far above EPS = 0.02
 *   col 3+ B + 8 g + j + l
 * with B = 2^22. The owner's rule, simulated here per vertex: a kept row is sent at e
 * when it was never sent, when ver changed since the last send, or when the last send
 * is more than S epochs old. Then every halo row of class 0 (kept) must hold exactly the
 * payload of the epoch of its last send, every row of class 1 (not kept) this epoch's,
 * no row may be older than S (read from col 1), and this rank's counters adapt_sent /
 * adapt_skipped must equal the simulation summed over its send lists and node writes.
 * The run must meet all three reasons (events, the age bound, skips), or it proves
 * nothing. Node tier readers are covered: 2 emulated nodes at 4 ranks.
 *
 * EPS = 0: random rows (a third unchanged each epoch) through the exact cache (S = 0)
 * and the adaptive one at EPS 0: the halo blocks must be equal bit for bit, every row
 * sent every step. Both backends: CPU and the fake device (staged path). */
#include <math.h>
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
#include "jaca_test.h"
#include "mpi_test.h"
#include "partition/partition.h"

#define COLS 6
#define NLAYERS 3
#define B 4194304.0f /* 2^22 */

/* the job's world (mpi/tests/mpi_test.h: MT_CHECK and MT_OK abort the whole job) */
struct comm *mt_comm;
#define g_comm mt_comm
#define CHECK MT_CHECK
#define OK MT_OK

struct setup {
  struct graph g;
  int32_t *owner;
  struct part_local pl;
};

static void setup_make(struct setup *s, const char *spec, int random_owners) {
  const int P = comm_size(g_comm), me = comm_rank(g_comm);
  memset(s, 0, sizeof *s);
  s->owner = jt_synth_owned(spec, P, random_owners ? 11 : 0, &s->g);
  OK(part_local_build(&s->g, s->owner, P, me, GRAPH_NORM_GCN, 1, &s->pl));
}

static void setup_free(struct setup *s) {
  part_local_free(&s->pl);
  free(s->owner);
  graph_free(&s->g);
}

static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* whether vertex g has an event (a big change) at epoch e, and its version at e */
static int event(int64_t g, uint32_t e) { return e >= 2 && mix((uint64_t)g * 131 + e) % 5 == 0; }
static int ver(int64_t g, uint32_t e) {
  int v = 0;
  for (uint32_t k = 1; k <= e; k++) v += event(g, k);
  return v;
}
/* the epoch of the last send of g's kept row as of epoch e (the owner's rule) */
static uint32_t last_sent(int64_t g, uint32_t e, int S) {
  uint32_t ls = 0;
  for (uint32_t k = 1; k <= e; k++)
    if (ls == 0 || ver(g, k) != ver(g, ls) || (int64_t)k - (int64_t)ls > S) ls = k;
  return ls;
}
static float payload(int64_t g, uint32_t e, int l, int64_t j) {
  if (j == 0) return B + (float)g;
  if (j == 1) return B + (float)e;
  if (j == 2) return B * (float)(1 + ver(g, e));
  return B + (float)(8 * g + j + l);
}

static void drift_case(const char *spec, int random_owners, enum jaca_policy pol, double capacity, int S,
                       struct cg_backend *be) {
  const double EPS = 0.02;
  struct setup s;
  setup_make(&s, spec, random_owners);
  const struct part_local *pl = &s.pl;
  struct jaca_options o;
  jaca_options_defaults(&o);
  o.policy = pol;
  o.capacity = capacity;
  o.host_mb = o.device_mb = 0;
  o.adaptive = 1;
  o.adapt_eps = EPS;
  o.staleness = S;
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, COLS, &layers, &o, &ex));
  const struct jaca_node_plan *p = jaca_exchange_plan(ex);
  CHECK(p && p->adaptive && p->nclasses == 2, "an adaptive plan has 2 classes");
  OK(jaca_node_plan_check(p, pl));
  const int64_t rows = pl->n_inner + pl->n_halo;
  float *h = malloc(sizeof(float) * (size_t)((rows > 0 ? rows : 1) * COLS)), *d = NULL;
  CHECK(h != NULL, "out of memory");
  OK(be->alloc(be, (void **)&d, sizeof(float) * (size_t)((rows > 0 ? rows : 1) * COLS), "test matrix"));
  const uint32_t E = (uint32_t)(3 * (S + 1) + 2);
  int64_t want_sent = 0, want_skipped = 0, worst_age = 0, by_event = 0, by_age = 0, kept_rows = 0;
  for (uint32_t e = 1; e <= E; e++) {
    for (int l = 1; l < NLAYERS; l++) {
      for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < COLS; j++) h[i * COLS + j] = i < pl->n_inner ? payload(pl->gid[i], e, l, j) : -1.0f;
      if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
      const struct cg_halo_tag tag = {l, e};
      OK(ex->halo_begin(ex, CG_HALO_FORWARD, tag, d, COLS));
      OK(ex->halo_end(ex, CG_HALO_FORWARD, tag, d, COLS));
      if (rows > 0) OK(be->download(be, h, d, (size_t)(rows * COLS) * sizeof(float)));
      for (int64_t i = pl->n_inner; i < rows; i++) {
        const int64_t g = pl->gid[i];
        const int kept = p->halo_class[i - pl->n_inner] == 0;
        const uint32_t from = kept ? last_sent(g, e, S) : e;
        kept_rows += kept;
        const int64_t age = (int64_t)e - (int64_t)(h[i * COLS + 1] - B);
        if (age > worst_age) worst_age = age;
        CHECK(age >= 0 && age <= S, "layer %d epoch %u: halo row %lld (gid %lld) is %lld epochs old, bound %d", l, e,
              (long long)i, (long long)g, (long long)age, S);
        for (int64_t j = 0; j < COLS; j++)
          CHECK(h[i * COLS + j] == payload(g, from, l, j),
                "layer %d epoch %u: halo row %lld (gid %lld, %s) col %lld holds %.0f, expected %.0f (epoch %u's)", l,
                e, (long long)i, (long long)g, kept ? "kept" : "not kept", (long long)j, (double)h[i * COLS + j],
                (double)payload(g, from, l, j), from);
      }
      /* what this rank should have sent / written: its class 0 send list and its node writes */
      const struct jaca_fwd_plan *f = &p->cls[0];
      for (int64_t k = 0; k < f->send_rows + p->n_write; k++) {
        const int64_t g = pl->gid[k < f->send_rows ? f->send_idx[k] : p->write_idx[k - f->send_rows]];
        const uint32_t ls = last_sent(g, e, S);
        if (ls == e) {
          want_sent++;
          if (e > 1 && ver(g, e) != ver(g, last_sent(g, e - 1, S))) by_event++;
          else if (e > 1) by_age++;
        } else {
          want_skipped++;
        }
      }
    }
    OK(comm_barrier(g_comm)); /* the step's all-reduce, in training */
  }
  struct jaca_stats st;
  OK(jaca_exchange_stats(ex, 0, &st));
  CHECK(st.adapt_sent == want_sent && st.adapt_skipped == want_skipped,
        "rows sent %lld, skipped %lld; expected %lld and %lld", (long long)st.adapt_sent, (long long)st.adapt_skipped,
        (long long)want_sent, (long long)want_skipped);
  CHECK(st.age_max == worst_age, "the cache says the oldest row was %lld epochs old, the values %lld",
        (long long)st.age_max, (long long)worst_age);
  CHECK(st.lookups == st.rank_hits + st.node_hits + st.misses, "lookups %lld != hits + misses", (long long)st.lookups);
  /* the job as a whole met every reason to send and to skip, and used rows S epochs old */
  int64_t v[6] = {by_event, by_age, want_skipped, kept_rows, worst_age == S, st.bytes_intra + st.bytes_inter};
  OK(comm_allreduce_i64(g_comm, v, 6, COMM_SUM));
  if (comm_size(g_comm) > 1) {
    CHECK(v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0 && v[4] > 0,
          "the case proves nothing: %lld sends by event, %lld by age, %lld skips, %lld kept rows read, %lld ranks at "
          "the bound", (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4]);
  }
  if (comm_rank(g_comm) == 0)
    printf("ok: %-12s %s cap %g adaptive:%g:%d on %s: %lld rows sent by drift, %lld by age, %lld skipped, %lld "
           "bytes over MPI (job)\n", spec, jaca_policy_name(pol), capacity, EPS, S, be->name, (long long)v[0],
           (long long)v[1], (long long)v[2], (long long)v[5]);
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
  setup_free(&s);
}

/* EPS = 0 against the exact cache, bit for bit, on random rows. */
static void exact_case(const char *spec, double capacity, struct cg_backend *be) {
  struct setup s;
  setup_make(&s, spec, 1);
  const struct part_local *pl = &s.pl;
  struct jaca_options oe, oa;
  jaca_options_defaults(&oe);
  oe.policy = JACA_POLICY_JACA;
  oe.capacity = capacity;
  oe.host_mb = oe.device_mb = 0;
  oa = oe;
  OK(jaca_staleness_parse("adaptive:0:4", &oa));
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *xe = NULL, *xa = NULL;
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, COLS, &layers, &oe, &xe));
  OK(jaca_exchange_create(g_comm, be, pl, &pl->agg, COLS, &layers, &oa, &xa));
  const int64_t rows = pl->n_inner + pl->n_halo, n = (rows > 0 ? rows : 1) * COLS;
  float *h = malloc(sizeof(float) * (size_t)n), *he = malloc(sizeof(float) * (size_t)n),
        *ha = malloc(sizeof(float) * (size_t)n), *d = NULL;
  CHECK(h && he && ha, "out of memory");
  OK(be->alloc(be, (void **)&d, sizeof(float) * (size_t)n, "test matrix"));
  for (uint32_t e = 1; e <= 6; e++) {
    for (int l = 1; l < NLAYERS; l++) {
      for (int64_t i = 0; i < pl->n_inner; i++) {
        const int64_t g = pl->gid[i];
        const int same = mix((uint64_t)g * 7 + e) % 3 == 0 && e > 1; /* unchanged since e - 1 */
        const uint32_t ee = same ? e - 1 : e;
        for (int64_t j = 0; j < COLS; j++)
          h[i * COLS + j] = (float)((double)(mix(((uint64_t)g * 64 + (uint64_t)j) * 64 + ee * 4 + (uint64_t)l) >> 11) /
                                    9007199254740992.0 - 0.5);
      }
      const struct cg_halo_tag tag = {l, e};
      for (int pass = 0; pass < 2; pass++) {
        struct cg_exchange *ex = pass ? xa : xe;
        float *out = pass ? ha : he;
        for (int64_t i = pl->n_inner; i < rows; i++)
          for (int64_t j = 0; j < COLS; j++) h[i * COLS + j] = -7.0f;
        if (rows > 0) OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
        OK(ex->halo_begin(ex, CG_HALO_FORWARD, tag, d, COLS));
        OK(ex->halo_end(ex, CG_HALO_FORWARD, tag, d, COLS));
        if (rows > 0) OK(be->download(be, out, d, (size_t)(rows * COLS) * sizeof(float)));
      }
      CHECK(rows == 0 || memcmp(he, ha, sizeof(float) * (size_t)(rows * COLS)) == 0,
            "epoch %u layer %d: adaptive EPS 0 differs from the exact cache", e, l);
    }
    OK(comm_barrier(g_comm));
  }
  struct jaca_stats st;
  OK(jaca_exchange_stats(xa, 0, &st));
  CHECK(st.adapt_skipped == 0 && st.age_max == 0 && st.adapt_index_bytes == 0,
        "EPS 0 skipped %lld rows, oldest %lld epochs, %lld bytes of positions", (long long)st.adapt_skipped,
        (long long)st.age_max, (long long)st.adapt_index_bytes);
  struct jaca_stats se;
  OK(jaca_exchange_stats(xe, 0, &se));
  CHECK(st.bytes_intra == se.bytes_intra && st.bytes_inter == se.bytes_inter,
        "EPS 0 sent %lld + %lld bytes, the exact cache %lld + %lld", (long long)st.bytes_intra,
        (long long)st.bytes_inter, (long long)se.bytes_intra, (long long)se.bytes_inter);
  if (comm_rank(g_comm) == 0) printf("ok: %-12s cap %g adaptive:0 on %s: bit for bit the exact cache\n", spec,
                                     capacity, be->name);
  be->free(be, d);
  free(h);
  free(he);
  free(ha);
  cg_exchange_destroy(&xa);
  cg_exchange_destroy(&xe);
  setup_free(&s);
}

static void options_case(void) {
  struct jaca_options o;
  jaca_options_defaults(&o);
  OK(jaca_staleness_parse("adaptive", &o));
  CHECK(o.adaptive == 1 && o.adapt_eps == JACA_ADAPT_EPS_DEFAULT && o.staleness == JACA_ADAPT_S_DEFAULT,
        "adaptive: defaults %g, %d", o.adapt_eps, o.staleness);
  OK(jaca_staleness_parse("adaptive:0.05", &o));
  CHECK(o.adaptive == 1 && o.adapt_eps == 0.05 && o.staleness == JACA_ADAPT_S_DEFAULT, "adaptive:0.05");
  OK(jaca_staleness_parse("adaptive:0:3", &o));
  CHECK(o.adaptive == 1 && o.adapt_eps == 0.0 && o.staleness == 3, "adaptive:0:3");
  o.policy = JACA_POLICY_JACA;
  OK(jaca_options_check(&o));
  char buf[512];
  CHECK(strstr(jaca_options_describe(&o, buf, sizeof buf), "drift exceeds 0") != NULL, "describe: %s", buf);
  OK(jaca_staleness_parse("7", &o));
  CHECK(o.adaptive == 0 && o.staleness == 7, "a number turns adaptive off");
  const char *bad[] = {"adaptive:", "adaptive:-1", "adaptive:0.1:0", "adaptive:x", "adaptivex", "adaptive:0.1:",
                       "adaptive:0.1:3:4", "adaptive:nan", "-1", "3x", "", "adaptive:0.1:1001"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    CHECK(jaca_staleness_parse(bad[k], &o) == CG_ERR_ARG, "'%s' must be refused", bad[k]);
    cg_err_clear();
  }
  jaca_options_defaults(&o);
  o.policy = JACA_POLICY_JACA;
  o.adaptive = 1;
  o.adapt_eps = 0.01;
  o.staleness = 0;
  CHECK(jaca_options_check(&o) == CG_ERR_ARG, "adaptive with S = 0 must be refused");
  o.staleness = 2;
  o.adapt_eps = NAN;
  CHECK(jaca_options_check(&o) == CG_ERR_ARG, "adaptive with EPS NaN must be refused");
  o.adapt_eps = -0.5;
  CHECK(jaca_options_check(&o) == CG_ERR_ARG, "adaptive with EPS < 0 must be refused");
  cg_err_clear();
  /* --grad-staleness: the same syntax and defaults, into the gradients' fields only */
  jaca_options_defaults(&o);
  o.policy = JACA_POLICY_JACA;
  OK(jaca_grad_staleness_parse("adaptive", &o));
  CHECK(o.grad_adaptive == 1 && o.grad_adapt_eps == JACA_ADAPT_EPS_DEFAULT &&
            o.grad_staleness == JACA_ADAPT_S_DEFAULT && o.adaptive == 0 && o.staleness == 0,
        "grad adaptive: defaults %g, %d", o.grad_adapt_eps, o.grad_staleness);
  OK(jaca_grad_staleness_parse("adaptive:0.1", &o));
  CHECK(o.grad_adapt_eps == 0.1 && o.grad_staleness == JACA_ADAPT_S_DEFAULT, "grad adaptive:0.1");
  OK(jaca_grad_staleness_parse("adaptive:0:2", &o));
  CHECK(o.grad_adaptive == 1 && o.grad_adapt_eps == 0.0 && o.grad_staleness == 2, "grad adaptive:0:2");
  OK(jaca_options_check(&o));
  /* EPS 0 resends every gradient that changed at all: exact, and said so */
  CHECK(strstr(jaca_options_describe(&o, buf, sizeof buf), "--grad-staleness adaptive:0:2") != NULL &&
            strstr(buf, "APPROXIMATE") == NULL && strstr(buf, "exact: ") != NULL &&
            strstr(buf, "hidden halo rows every epoch (--staleness 0)") != NULL,
        "describe: %s", buf);
  o.grad_adapt_eps = 0.1;
  CHECK(strstr(jaca_options_describe(&o, buf, sizeof buf), "APPROXIMATE") != NULL, "describe: %s", buf);
  o.grad_adapt_eps = 0.0;
  OK(jaca_grad_staleness_parse("4", &o));
  CHECK(o.grad_adaptive == 0 && o.grad_adapt_eps == 0.0 && o.grad_staleness == 4, "a number turns it off");
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    CHECK(jaca_grad_staleness_parse(bad[k], &o) == CG_ERR_ARG, "grad '%s' must be refused", bad[k]);
    CHECK(strstr(cg_err_msg(), "--grad-staleness") != NULL, "the message names the option: %s", cg_err_msg());
    cg_err_clear();
  }
  jaca_options_defaults(&o);
  o.policy = JACA_POLICY_JACA;
  o.grad_adaptive = 1;
  o.grad_adapt_eps = 0.01;
  o.grad_staleness = 0;
  CHECK(jaca_options_check(&o) == CG_ERR_ARG, "adaptive gradients with G = 0 must be refused");
  o.grad_staleness = 2;
  o.grad_adapt_eps = NAN;
  CHECK(jaca_options_check(&o) == CG_ERR_ARG, "adaptive gradients with EPS NaN must be refused");
  o.grad_adapt_eps = -0.5;
  CHECK(jaca_options_check(&o) == CG_ERR_ARG, "adaptive gradients with EPS < 0 must be refused");
  o.grad_adapt_eps = 0.5;
  o.grad_adaptive = 2;
  CHECK(jaca_options_check(&o) == CG_ERR_ARG, "a grad adaptive flag of 2 must be refused");
  cg_err_clear();
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
  options_case();
  drift_case("synth:small", 1, JACA_POLICY_JACA, 1.0, 3, cpu);
  drift_case("synth:small", 0, JACA_POLICY_LRU, 0.3, 2, cpu);
  drift_case("synth:tiny", 1, JACA_POLICY_FIFO, 1.0, 1, cpu);
  drift_case("synth:small", 1, JACA_POLICY_JACA, 0.5, 3, dev);
  exact_case("synth:small", 1.0, cpu);
  exact_case("synth:small", 0.2, cpu);
  exact_case("synth:tiny", 1.0, dev);
  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (comm_rank(g_comm) == 0)
    printf("test_jaca_adaptive: all checks passed on %d ranks, %d nodes\n", comm_size(g_comm), comm_nnodes(g_comm));
  comm_finalize(&g_comm);
  return 0;
}
