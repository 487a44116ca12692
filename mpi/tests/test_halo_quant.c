/* mpi/tests/test_halo_quant.c — the halo exchange with coded rows (--halo-bits,
 * comm_halo_set_quant).
 *
 * Every rank builds the same random graph and owner array (halo_fixture.h), then its
 * plan. Forward: inner row gid g of owner o holds values of mixed sign and scale that
 * every rank can recompute; after the exchange each halo row must be within one step
 * (max - min of its row) / (2^bits - 1) of its owner's row. Backward: each rank puts
 * its own values in its halo rows; each owner must end with its inner value plus the
 * sum over the ranks holding the row as halo, within the sum of their steps. Bytes
 * counted must be the coded rows' (8 + ceil(cols * bits / 8) each). 4, 8 and 16 bits,
 * widths 1, 7 and 64, the CPU backend (host path) and a fake device (staged path),
 * blocking and overlapped (progress until done). Two objects over the same plan code
 * alike (deterministic); back at 32 bits the rows arrive bit for bit. Misuse: another
 * width, or a change while an exchange is in flight, is refused. The plain exchange
 * (comm_exchange_create) under comm_set_halo_bits(4) codes training steps only: rows of
 * an evaluation tag (epoch 0) arrive bit for bit, those of epoch 1 within one step and
 * not all exact, and the same epoch's exchange rounds alike twice (keyed by the tag). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exchange.h"
#include "core/ops.h"
#include "fake_device.h"
#include "halo_fixture.h"
#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

#define MAX_COLS 64

static float enc(int64_t who, int64_t gid, int64_t j, int dir) {
  const double t = 0.37 * (double)(gid * 131 + j * 7 + who * 17 + dir * 5);
  return (float)(sin(t) * (1.0 + (double)((gid + j) % 5)) * (dir ? 1e-4 : 1.0));
}

static double row_step(int64_t who, int64_t gid, int64_t cols, int dir, int bits) {
  float lo = INFINITY, hi = -INFINITY;
  for (int64_t j = 0; j < cols; j++) {
    lo = fminf(lo, enc(who, gid, j, dir));
    hi = fmaxf(hi, enc(who, gid, j, dir));
  }
  return ((double)hi - lo) / (double)((1u << bits) - 1u);
}

static int64_t qrow_bytes(int64_t cols, int bits) { return bits == 32 ? cols * 4 : 8 + (cols * bits + 7) / 8; }

/* One forward + backward round at `bits`; the halo block read back into out (forward
 * results, then the owners' rows after backward) when out is not NULL. */
static void round_q(struct comm *c, struct cg_backend *be, const struct fx_graph *g, const struct fx_local *l,
                    const unsigned char *marks, struct comm_halo *h, int64_t cols, int bits, int overlapped,
                    float *out) {
  const int r = comm_rank(c), P = comm_size(c);
  const int64_t rows = l->n_inner + l->n_halo;
  const size_t bytes = (size_t)(rows > 0 ? rows : 1) * (size_t)cols * sizeof(float);
  float *hx = malloc(bytes), *dx = NULL;
  MT_CHECK(hx != NULL, "out of memory");
  MT_OK(be->alloc(be, (void **)&dx, bytes, "test matrix"));
  MT_OK(comm_halo_set_quant(h, bits));
  /* forward */
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) hx[i * cols + j] = i < l->n_inner ? enc(r, l->gid[i], j, 0) : -7.0f;
  MT_OK(be->upload(be, dx, hx, (size_t)rows * (size_t)cols * sizeof(float)));
  int64_t before = comm_halo_bytes_sent(h);
  MT_OK(comm_halo_begin(h, CG_HALO_FORWARD, dx, cols));
  if (overlapped)
    while (comm_halo_progress(h) == 0) {
    }
  MT_OK(comm_halo_end(h, CG_HALO_FORWARD, dx, cols));
  MT_CHECK(comm_halo_bytes_sent(h) - before == comm_halo_send_rows(h) * qrow_bytes(cols, bits),
           "forward bytes %lld, modelled %lld rows x %lld", (long long)(comm_halo_bytes_sent(h) - before),
           (long long)comm_halo_send_rows(h), (long long)qrow_bytes(cols, bits));
  MT_OK(be->download(be, hx, dx, (size_t)rows * (size_t)cols * sizeof(float)));
  for (int64_t i = l->n_inner; i < rows; i++) {
    const int64_t gid = l->gid[i], o = g->owner[gid];
    const double step = bits == 32 ? 0.0 : row_step(o, gid, cols, 0, bits);
    for (int64_t j = 0; j < cols; j++) {
      const float want = enc(o, gid, j, 0), got = hx[i * cols + j];
      const double err = fabs((double)got - want);
      MT_CHECK(bits == 32 ? got == want : err <= step * (1.0 + 1e-5) + 1e-7,
               "%d bits, cols %lld: halo row gid %lld (owner %lld) col %lld: %.9g, expected %.9g (step %.3g)", bits,
               (long long)cols, (long long)gid, (long long)o, (long long)j, (double)got, (double)want, step);
    }
  }
  if (out) memcpy(out, hx + l->n_inner * cols, (size_t)l->n_halo * (size_t)cols * sizeof(float));
  /* backward: halo rows hold this rank's gradients; owners add what comes back */
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      hx[i * cols + j] = enc(r, l->gid[i], j, 1);
  MT_OK(be->upload(be, dx, hx, (size_t)rows * (size_t)cols * sizeof(float)));
  before = comm_halo_bytes_sent(h);
  MT_OK(comm_halo_begin(h, CG_HALO_BACKWARD, dx, cols));
  if (overlapped)
    while (comm_halo_progress(h) == 0) {
    }
  MT_OK(comm_halo_end(h, CG_HALO_BACKWARD, dx, cols));
  MT_CHECK(comm_halo_bytes_sent(h) - before == comm_halo_recv_rows(h) * qrow_bytes(cols, bits),
           "backward bytes %lld, modelled %lld rows x %lld", (long long)(comm_halo_bytes_sent(h) - before),
           (long long)comm_halo_recv_rows(h), (long long)qrow_bytes(cols, bits));
  MT_OK(be->download(be, hx, dx, (size_t)rows * (size_t)cols * sizeof(float)));
  for (int64_t i = 0; i < l->n_inner; i++) {
    const int64_t gid = l->gid[i];
    for (int64_t j = 0; j < cols; j++) {
      double want = enc(r, gid, j, 1), tol = 1e-6 * fabs(want) + 1e-9;
      for (int q = 0; q < P; q++) {
        if (q == r || !marks[(size_t)q * (size_t)g->n + (size_t)gid]) continue;
        want += enc(q, gid, j, 1);
        tol += bits == 32 ? 1e-6 * fabs(enc(q, gid, j, 1)) : row_step(q, gid, cols, 1, bits) * (1.0 + 1e-5) + 1e-9;
      }
      const double err = fabs((double)hx[i * cols + j] - want);
      MT_CHECK(err <= tol, "%d bits, cols %lld: owner row gid %lld col %lld: %.9g, expected %.9g (tolerance %.3g)",
               bits, (long long)cols, (long long)gid, (long long)j, (double)hx[i * cols + j], want, tol);
    }
  }
  if (out) memcpy(out + l->n_halo * cols, hx, (size_t)l->n_inner * (size_t)cols * sizeof(float));
  be->free(be, dx);
  free(hx);
}

static void run_config(struct comm *c, struct cg_backend *be, const struct fx_opts *o) {
  const int P = comm_size(c), r = comm_rank(c);
  struct fx_graph g;
  struct fx_local l;
  MT_OK(fx_graph_make(&g, P, o));
  MT_OK(fx_local_make(&g, r, o->all_peers, &l));
  unsigned char *marks = malloc((size_t)P * (size_t)g.n + 1);
  MT_CHECK(marks != NULL, "out of memory");
  for (int q = 0; q < P; q++) fx_halo_marks(&g, q, marks + (size_t)q * (size_t)g.n);
  struct comm_halo *h = NULL, *h2 = NULL;
  MT_OK(comm_halo_create(c, be, &l.plan, MAX_COLS, &h));
  MT_OK(comm_halo_create(c, be, &l.plan, MAX_COLS, &h2));
  const int bits_all[] = {4, 8, 16};
  const int64_t widths[] = {1, 7, MAX_COLS};
  const size_t nout = (size_t)(l.n_inner + l.n_halo + 1) * MAX_COLS;
  float *a = malloc(nout * sizeof(float)), *b = malloc(nout * sizeof(float));
  MT_CHECK(a && b, "out of memory");
  for (int w = 0; w < 3; w++)
    for (int k = 0; k < 3; k++) {
      round_q(c, be, &g, &l, marks, h, widths[w], bits_all[k], 0, a);
      round_q(c, be, &g, &l, marks, h2, widths[w], bits_all[k], 1, b); /* the same stream on another object */
      MT_CHECK(!memcmp(a, b, (size_t)(l.n_inner + l.n_halo) * (size_t)widths[w] * sizeof(float)),
               "two exchanges over the same plan coded the same rows differently (%d bits, cols %lld)",
               bits_all[k], (long long)widths[w]);
    }
  for (int w = 0; w < 3; w++) round_q(c, be, &g, &l, marks, h, widths[w], 32, w == 1, NULL); /* exact again */
  /* misuse, locally */
  MT_CHECK(comm_halo_set_quant(h, 5) == CG_ERR_ARG, "5 bits accepted");
  MT_CHECK(strstr(cg_err_msg(), "5 bits") != NULL, "message: %s", cg_err_msg());
  cg_err_clear();
  float *dx = NULL;
  MT_OK(be->alloc(be, (void **)&dx, (size_t)(l.n_inner + l.n_halo + 1) * sizeof(float), "misuse matrix"));
  MT_OK(comm_halo_begin(h, CG_HALO_FORWARD, dx, 1));
  MT_OK(comm_halo_set_quant(h, 32)); /* unchanged: fine */
  MT_CHECK(comm_halo_set_quant(h, 8) == CG_ERR_ARG, "a width changed while an exchange is in flight");
  cg_err_clear();
  MT_OK(comm_halo_end(h, CG_HALO_FORWARD, dx, 1));
  be->free(be, dx);
  comm_halo_destroy(&h);
  comm_halo_destroy(&h2);
  if (r == 0)
    printf("ok: %s seed %llu n %lld deg %lld%s\n", be->name, (unsigned long long)o->seed, (long long)o->n,
           (long long)o->avg_deg, o->last_rank_empty ? " last-rank-empty" : "");
  free(a);
  free(b);
  free(marks);
  fx_local_free(&l);
  fx_graph_free(&g);
}

/* The plain exchange codes training steps only. */
static void run_plain_exchange(struct comm *c, struct cg_backend *be) {
  const int P = comm_size(c), r = comm_rank(c);
  const struct fx_opts o = {.seed = 5, .n = 200, .avg_deg = 4};
  struct fx_graph g;
  struct fx_local l;
  MT_OK(fx_graph_make(&g, P, &o));
  MT_OK(fx_local_make(&g, r, 0, &l));
  MT_OK(comm_set_halo_bits(c, 4));
  struct cg_exchange *ex = NULL;
  MT_OK(comm_exchange_create(c, be, &l.plan, MAX_COLS, &ex));
  const int64_t cols = 16, rows = l.n_inner + l.n_halo;
  const size_t bytes = (size_t)(rows > 0 ? rows : 1) * (size_t)cols * sizeof(float);
  float *hx = malloc(bytes), *first = malloc(bytes), *dx = NULL;
  MT_CHECK(hx && first, "out of memory");
  MT_OK(be->alloc(be, (void **)&dx, bytes, "test matrix"));
  const uint32_t epochs[] = {0, 1, 1};
  int64_t inexact = 0;
  for (int k = 0; k < 3; k++) {
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) hx[i * cols + j] = i < l.n_inner ? enc(r, l.gid[i], j, 0) : -7.0f;
    MT_OK(be->upload(be, dx, hx, (size_t)rows * (size_t)cols * sizeof(float)));
    const struct cg_halo_tag tag = {.layer = 1, .epoch = epochs[k]};
    MT_OK(ex->halo_begin(ex, CG_HALO_FORWARD, tag, dx, cols));
    MT_OK(ex->halo_end(ex, CG_HALO_FORWARD, tag, dx, cols));
    MT_OK(be->download(be, hx, dx, (size_t)rows * (size_t)cols * sizeof(float)));
    for (int64_t i = l.n_inner; i < rows; i++) {
      const int64_t gid = l.gid[i], own = g.owner[gid];
      const double step = row_step(own, gid, cols, 0, 4);
      for (int64_t j = 0; j < cols; j++) {
        const float want = enc(own, gid, j, 0), got = hx[i * cols + j];
        if (epochs[k] == 0)
          MT_CHECK(got == want, "evaluation (epoch 0) row gid %lld col %lld: %.9g, expected %.9g exactly",
                   (long long)gid, (long long)j, (double)got, (double)want);
        else
          MT_CHECK(fabs((double)got - want) <= step * (1.0 + 1e-5) + 1e-7, "epoch 1 row gid %lld col %lld: %.9g, "
                   "expected %.9g within %.3g", (long long)gid, (long long)j, (double)got, (double)want, step);
        if (k == 1) inexact += got != want;
        if (k == 2)
          MT_CHECK(got == first[i * cols + j], "epoch 1 exchanged twice rounded differently (gid %lld col %lld)",
                   (long long)gid, (long long)j);
      }
    }
    if (k == 1) memcpy(first, hx, (size_t)rows * (size_t)cols * sizeof(float));
  }
  MT_CHECK(l.n_halo == 0 || inexact > 0, "4-bit training rows all arrived exact: nothing was coded");
  cg_exchange_destroy(&ex);
  MT_OK(comm_set_halo_bits(c, 32));
  be->free(be, dx);
  free(hx);
  free(first);
  fx_local_free(&l);
  fx_graph_free(&g);
}

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  struct cg_backend *cpu = NULL, *dev = NULL;
  MT_OK(cg_backend_cpu_create(1, &cpu));
  MT_OK(fake_device_create(cpu, &dev));
  const struct fx_opts configs[] = {
      {.seed = 1, .n = 240, .avg_deg = 4},
      {.seed = 2, .n = 300, .avg_deg = 2, .last_rank_empty = 1},
  };
  struct cg_backend *backends[] = {cpu, dev};
  for (int bk = 0; bk < 2; bk++)
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) run_config(c, backends[bk], &configs[k]);
  run_plain_exchange(c, cpu);
  run_plain_exchange(c, dev);
  MT_CHECK(comm_set_halo_bits(c, 3) == CG_ERR_ARG, "--halo-bits 3 accepted");
  cg_err_clear();
  MT_OK(comm_set_halo_bits(c, 4));
  MT_CHECK(comm_halo_bits(c) == 4, "comm_halo_bits %d", comm_halo_bits(c));
  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (comm_rank(c) == 0) printf("test_halo_quant: all checks passed on %d ranks\n", comm_size(c));
  comm_finalize(&mt_comm);
  return 0;
}
