/* mpi/tests/test_exchange.c — the seam of core/exchange.h over MPI (comm_exchange_create).
 *
 * Through the table, forward and backward must give exactly what comm_halo gives: the
 * halo_check.h workout (values a function of (owner, global id, column), checked value
 * by value, so misrouting is caught) runs through a comm_halo and through the seam over
 * the same plan, and the hashes of everything read back must be equal. Also: the seam's
 * counters (halo bytes = forward + backward bytes sent, all-reduce bytes, cache counters
 * 0; its own since it was created, whatever other objects on the comm and
 * comm_stats_reset do), the gradient all-reduce (integer values, exact in any order;
 * created at the first call and again when the size changes), host SUM and MAX, and
 * errors that name the failing call: misuse inside a step (CG_ERR_ARG, local), ranks
 * disagreeing on the gradient size, a bad plan and a failed allocation at create (every
 * rank fails; nothing is left allocated, alloc_fault.h). On the CPU backend (host
 * path) and on the fake device (staged path); the registration also runs it with
 * CAPGNN_HALO_P2P=1 (point-to-point calls). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exchange.h"
#include "alloc_fault.h"
#include "core/ops.h"
#include "fake_device.h"
#include "halo_check.h"
#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

#define MAX_COLS 64

/* The call must fail with `status` and a message containing both texts. */
static void expect_error(int st, int status, const char *what, const char *text1,
                         const char *text2) {
  MT_CHECK(st == status, "%s: returned %d, expected %d (%s)", what, st, status, cg_err_msg());
  MT_CHECK(strstr(cg_err_msg(), text1) != NULL && strstr(cg_err_msg(), text2) != NULL,
           "%s: message '%s' lacks '%s' or '%s'", what, cg_err_msg(), text1, text2);
  cg_err_clear();
}

static void check_halo(struct comm *c, struct cg_backend *be, const struct fx_opts *o) {
  struct hc_case k;
  hc_case_make(&k, c, o);
  struct comm_halo *h = NULL;
  struct cg_exchange *ex = NULL;
  MT_OK(comm_halo_create(c, be, &k.l.plan, MAX_COLS, &h));
  MT_OK(comm_exchange_create(c, be, &k.l.plan, MAX_COLS, &ex));
  MT_CHECK(ex != NULL && ex->halo_begin && ex->halo_end && ex->allreduce_grads &&
               ex->allreduce_host && ex->counters && ex->destroy,
           "the seam's table must be complete (core/exchange.h)");
  const int64_t widths[] = {1, 5, MAX_COLS};
  for (int w = 0; w < 3; w++) {
    uint64_t salt = o->seed * 100 + (uint64_t)w;
    uint64_t want = hc_halo_workout(&k, be, h, widths[w], salt);
    uint64_t got = hc_exchange_workout(&k, be, ex, widths[w], salt);
    MT_CHECK(got == want, "%s, seed %llu, cols %lld: the seam differs from comm_halo", be->name,
             (unsigned long long)o->seed, (long long)widths[w]);
  }
  if (comm_rank(c) == 0)
    printf("ok: %s/%s seed %llu: the seam gives comm_halo's results in both directions\n",
           be->name, comm_path_name(comm_halo_path(h)), (unsigned long long)o->seed);
  cg_exchange_destroy(&ex);
  MT_CHECK(ex == NULL, "cg_exchange_destroy must clear the handle");
  cg_exchange_destroy(&ex); /* NULL is fine */
  comm_halo_destroy(&h);
  hc_case_free(&k);
}

/* Two all-reduces of n integer-valued floats through the seam, checked after each. */
static void grads_round(struct comm *c, struct cg_backend *be, struct cg_exchange *ex, int64_t n) {
  int P = comm_size(c), r = comm_rank(c);
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
  float *h = malloc(bytes), *d = NULL;
  MT_CHECK(h != NULL, "out of memory");
  MT_OK(be->alloc(be, (void **)&d, bytes, "test gradient"));
  for (int64_t i = 0; i < n; i++) h[i] = (float)((r + 1) * (i % 7) + (i % 1000));
  if (n > 0) MT_OK(be->upload(be, d, h, (size_t)n * sizeof(float)));
  struct cg_exchange_counters e0, e1;
  ex->counters(ex, &e0);
  for (int rep = 0; rep < 2; rep++) {
    MT_OK(ex->allreduce_grads(ex, d, n));
    if (n > 0) MT_OK(be->download(be, h, d, (size_t)n * sizeof(float)));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
      /* after rep+1 all-reduces each value is P^rep times the one-step sum */
      double want = (double)P * (P + 1) / 2 * (double)(i % 7) + (double)P * (double)(i % 1000);
      for (int k = 0; k < rep; k++) want *= P;
      if (h[i] != want && bad++ == 0)
        fprintf(stderr, "[rank %d] %s n=%lld rep %d: buf[%lld] = %.1f, expected %.1f\n", r,
                be->name, (long long)n, rep, (long long)i, h[i], want);
    }
    MT_CHECK(bad == 0, "%lld wrong sums", (long long)bad);
  }
  ex->counters(ex, &e1);
  MT_CHECK(e1.allreduce_bytes - e0.allreduce_bytes == 2 * n * 4 &&
               e1.halo_bytes == e0.halo_bytes && e1.cache_hits == 0 && e1.cache_lookups == 0,
           "%s n=%lld: seam counted %lld all-reduce bytes (expected %lld), %lld halo bytes",
           be->name, (long long)n, (long long)(e1.allreduce_bytes - e0.allreduce_bytes),
           (long long)(2 * n * 4), (long long)(e1.halo_bytes - e0.halo_bytes));
  be->free(be, d);
  free(h);
}

static void check_reductions(struct comm *c, struct cg_backend *be) {
  int P = comm_size(c), r = comm_rank(c);
  struct hc_case k;
  struct fx_opts o = {.seed = 7, .n = 120, .avg_deg = 3};
  hc_case_make(&k, c, &o);
  struct cg_exchange *ex = NULL;
  MT_OK(comm_exchange_create(c, be, &k.l.plan, 8, &ex));

  /* gradient buffer: created at the first call, kept, re-created when n changes */
  const int64_t sizes[] = {1000, 1000, 0, 300007, 1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) grads_round(c, be, ex, sizes[i]);

  double v[3] = {r + 0.5, -r, 2.0 * r};
  MT_OK(ex->allreduce_host(ex, v, 3, CG_REDUCE_SUM));
  MT_CHECK(v[0] == P * (P - 1) / 2.0 + 0.5 * P && v[1] == -P * (P - 1) / 2.0 &&
               v[2] == (double)P * (P - 1),
           "SUM gave %g %g %g", v[0], v[1], v[2]);
  double m[2] = {r * 1.5, -r * 1.5};
  MT_OK(ex->allreduce_host(ex, m, 2, CG_REDUCE_MAX));
  MT_CHECK(m[0] == (P - 1) * 1.5 && m[1] == 0.0, "MAX gave %g %g", m[0], m[1]);
  MT_OK(ex->allreduce_host(ex, m, 0, CG_REDUCE_SUM));

  /* misuse inside a step: CG_ERR_ARG on this rank, the message names the call */
  float *x = NULL;
  size_t bytes = (size_t)(k.l.n_inner + k.l.n_halo + 1) * 8 * sizeof(float);
  MT_OK(be->alloc(be, (void **)&x, bytes, "test matrix"));
  be->fill(be, x, (k.l.n_inner + k.l.n_halo) * 8, 0.0f);
  const struct cg_halo_tag tag = {1, 1};
  expect_error(ex->halo_end(ex, CG_HALO_FORWARD, tag, x, 8), CG_ERR_ARG, "end without begin",
               "comm_halo_end(forward) (8 columns) failed", "no forward exchange in flight");
  expect_error(ex->halo_begin(ex, CG_HALO_BACKWARD, tag, x, 9), CG_ERR_ARG, "cols > max_cols",
               "comm_halo_begin(backward) (9 columns) failed", "max_cols 8");
  MT_OK(ex->halo_begin(ex, CG_HALO_BACKWARD, tag, x, 8));
  expect_error(ex->halo_end(ex, CG_HALO_FORWARD, tag, x, 8), CG_ERR_ARG, "end of the other direction",
               "comm_halo_end(forward) (8 columns) failed", "no forward exchange in flight");
  expect_error(ex->halo_begin(ex, CG_HALO_FORWARD, tag, x, 8), CG_ERR_ARG, "two in flight",
               "comm_halo_begin(forward) (8 columns) failed", "backward exchange is still");
  MT_OK(ex->halo_end(ex, CG_HALO_BACKWARD, tag, x, 8));
  expect_error(ex->allreduce_host(ex, v, -1, CG_REDUCE_SUM), CG_ERR_ARG, "negative count",
               "comm_allreduce_host (-1 values) failed", "negative count");
  expect_error(ex->allreduce_host(ex, v, -2, CG_REDUCE_MAX), CG_ERR_ARG, "negative count (MAX)",
               "comm_allreduce_host(MAX) (-2 values) failed", "negative count");
  be->free(be, x);

  /* ranks disagreeing on the gradient size fail together; the next good call works */
  if (P > 1) {
    float g[11] = {0};
    int st = ex->allreduce_grads(ex, g, r == 0 ? 11 : 10);
    MT_CHECK(st == CG_ERR_ARG, "mismatched gradient sizes accepted (%d)", st);
    char text[64];
    snprintf(text, sizeof text, "comm_grad_create (%d values) failed", r == 0 ? 11 : 10);
    expect_error(st, CG_ERR_ARG, "mismatched gradient sizes", text, "gradient size");
    if (be->kind == CG_DEVICE_CPU) {
      for (int i = 0; i < 10; i++) g[i] = (float)(r + i);
      MT_OK(ex->allreduce_grads(ex, g, 10));
      for (int i = 0; i < 10; i++)
        MT_CHECK(g[i] == (float)(P * (P - 1) / 2 + P * i), "g[%d] = %g after a failed size", i,
                 g[i]);
    }
  }
  cg_exchange_destroy(&ex);
  hc_case_free(&k);
  if (r == 0) printf("ok: %s: gradient and host reductions, counters, errors\n", be->name);
}

/* The seam's counters are its own since it was created: another comm_halo and comm_grad
 * on the same comm exchanging between two reads, and comm_stats_reset, leave them as
 * they were (they once read comm_stats, which counts every object on the comm). */
static void check_own_counters(struct comm *c, struct cg_backend *be) {
  const int64_t cols = 5, n = 100;
  struct hc_case k;
  struct fx_opts o = {.seed = 9, .n = 160, .avg_deg = 3};
  hc_case_make(&k, c, &o);
  struct comm_halo *h = NULL;
  struct comm_grad *g = NULL;
  struct cg_exchange *ex = NULL;
  MT_OK(comm_halo_create(c, be, &k.l.plan, cols, &h)); /* the same plan: the same traffic */
  MT_OK(comm_grad_create(c, be, n, &g));
  /* traffic on the comm before the seam exists: not the seam's */
  uint64_t salt = 900;
  hc_halo_workout(&k, be, h, cols, salt++);
  const int64_t step = (comm_halo_send_rows(h) + comm_halo_recv_rows(h)) * cols * 4;
  MT_OK(comm_exchange_create(c, be, &k.l.plan, cols, &ex));
  struct cg_exchange_counters e0, e1, e2;
  ex->counters(ex, &e0);
  MT_CHECK(e0.halo_bytes == 0 && e0.allreduce_bytes == 0,
           "%s: a new exchange counts %lld halo and %lld all-reduce bytes", be->name,
           (long long)e0.halo_bytes, (long long)e0.allreduce_bytes);

  size_t xbytes = (size_t)(k.l.n_inner + k.l.n_halo + 1) * (size_t)cols * sizeof(float);
  float *x = NULL, *buf = NULL;
  MT_OK(be->alloc(be, (void **)&x, xbytes, "test matrix"));
  MT_OK(be->alloc(be, (void **)&buf, (size_t)n * sizeof(float), "test gradient"));
  be->fill(be, x, (k.l.n_inner + k.l.n_halo) * cols, 1.0f);
  be->fill(be, buf, n, 1.0f);
  for (int round = 1; round <= 2; round++) {
    const struct cg_halo_tag tag = {1, (uint32_t)round};
    MT_OK(cg_exchange_halo(ex, CG_HALO_FORWARD, tag, x, cols));
    MT_OK(cg_exchange_halo(ex, CG_HALO_BACKWARD, tag, x, cols));
    MT_OK(ex->allreduce_grads(ex, buf, n));
    ex->counters(ex, &e1);
    /* between two reads: the other objects exchange, the comm's counters are cleared */
    int64_t hb = comm_halo_bytes_sent(h), gb = comm_grad_bytes_sent(g);
    hc_halo_workout(&k, be, h, cols, salt++); /* resets comm_stats itself */
    hc_grad_workout(c, be, g, n);
    comm_stats_reset(c);
    ex->counters(ex, &e2);
    MT_CHECK(e2.halo_bytes == e1.halo_bytes && e2.allreduce_bytes == e1.allreduce_bytes,
             "%s round %d: the seam's counters moved from %lld / %lld to %lld / %lld halo / "
             "all-reduce bytes while other objects exchanged",
             be->name, round, (long long)e1.halo_bytes, (long long)e1.allreduce_bytes,
             (long long)e2.halo_bytes, (long long)e2.allreduce_bytes);
    MT_CHECK(e2.halo_bytes == round * step && e2.allreduce_bytes == round * n * 4,
             "%s round %d: the seam counts %lld halo and %lld all-reduce bytes, expected %lld "
             "and %lld",
             be->name, round, (long long)e2.halo_bytes, (long long)e2.allreduce_bytes,
             (long long)(round * step), (long long)(round * n * 4));
    /* and the other objects counted only their own traffic */
    MT_CHECK(comm_grad_bytes_sent(g) - gb == 2 * n * 4, "%s: comm_grad counted %lld bytes",
             be->name, (long long)(comm_grad_bytes_sent(g) - gb));
    MT_CHECK(comm_halo_bytes_sent(h) > hb || step == 0, "%s: comm_halo counted nothing",
             be->name);
  }
  be->free(be, x);
  be->free(be, buf);
  cg_exchange_destroy(&ex);
  comm_grad_destroy(&g);
  comm_halo_destroy(&h);
  hc_case_free(&k);
  if (comm_rank(c) == 0)
    printf("ok: %s: the seam counts its own traffic only, since it was created\n", be->name);
}

/* A bad plan on one rank: comm_exchange_create fails on every rank, *out NULL. */
static void check_create_fails(struct comm *c, struct cg_backend *be) {
  int P = comm_size(c), r = comm_rank(c);
  struct hc_case k;
  struct fx_opts o = {.seed = 8, .n = 100, .avg_deg = 3};
  hc_case_make(&k, c, &o);
  struct cg_exchange *ex = NULL;
  int st = comm_exchange_create(c, be, &k.l.plan, r == P - 1 ? 0 : 8, &ex);
  MT_CHECK(st == CG_ERR_ARG && ex == NULL, "a bad plan on rank %d was accepted (%d)", P - 1, st);
  if (r == P - 1)
    MT_CHECK(strstr(cg_err_msg(), "max_cols 0") != NULL, "message: %s", cg_err_msg());
  else
    MT_CHECK(strstr(cg_err_msg(), "failed during") != NULL, "message: %s", cg_err_msg());
  cg_err_clear();
  hc_case_free(&k);
  if (r == 0) printf("ok: a bad plan fails comm_exchange_create on every rank\n");
}

/* An allocation failing on one rank: comm_exchange_create fails on every rank, and the
 * ranks whose own allocation succeeded free it (they once returned without). */
static void check_create_nomem(struct comm *c, struct cg_backend *be) {
  int P = comm_size(c), r = comm_rank(c);
  struct hc_case k;
  struct fx_opts o = {.seed = 10, .n = 100, .avg_deg = 3};
  hc_case_make(&k, c, &o);
  struct cg_exchange *ex = NULL;
  af_track_begin();
  if (r == P - 1) af_fail_next(); /* its first allocation: the exchange itself */
  int st = comm_exchange_create(c, be, &k.l.plan, 8, &ex);
  int left = af_track_end();
  MT_CHECK(st == CG_ERR_NOMEM && ex == NULL, "an allocation failing on rank %d: returned %d (%s)",
           P - 1, st, cg_err_msg());
  MT_CHECK(strstr(cg_err_msg(), r == P - 1 ? "out of memory" : "failed during allocating the "
                                                                "exchange") != NULL,
           "message: %s", cg_err_msg());
  MT_CHECK(left == 0, "comm_exchange_create failed but left %d block(s) allocated", left);
  cg_err_clear();
  hc_case_free(&k);
  if (r == 0) printf("ok: an allocation failing on one rank fails every rank, nothing leaks\n");
}

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  struct cg_backend *cpu = NULL, *dev = NULL;
  MT_OK(cg_backend_cpu_create(1, &cpu));
  MT_OK(fake_device_create(cpu, &dev));
  const char *p2p = getenv("CAPGNN_HALO_P2P");
  if (comm_rank(c) == 0)
    printf("halo mechanism: %s\n", p2p && strcmp(p2p, "1") == 0
                                       ? "point-to-point (CAPGNN_HALO_P2P=1)"
                                       : "neighbourhood collective");
  const struct fx_opts configs[] = {
      {.seed = 1, .n = 240, .avg_deg = 4},
      {.seed = 2, .n = 300, .avg_deg = 2, .last_rank_empty = 1},
      {.seed = 3, .n = 50, .avg_deg = 0},
      {.seed = 4, .n = 200, .avg_deg = 3, .all_peers = 1},
  };
  struct cg_backend *backends[] = {cpu, dev};
  for (int b = 0; b < 2; b++) {
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
      check_halo(c, backends[b], &configs[i]);
    check_reductions(c, backends[b]);
    check_own_counters(c, backends[b]);
  }
  int64_t up = 0, down = 0;
  fake_device_counts(dev, &up, &down);
  MT_CHECK(up > 0 && down > 0, "the fake device was never staged through (%lld up, %lld down)",
           (long long)up, (long long)down);
  check_create_fails(c, cpu);
  check_create_nomem(c, cpu);
  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (comm_rank(c) == 0) printf("test_exchange: all checks passed on %d ranks\n", comm_size(c));
  comm_finalize(&mt_comm);
  return 0;
}
