/* mpi/tests/test_halo_exchange.c — the halo exchange moves exactly the right rows.
 *
 * Every rank builds the same random graph and owner array, then its own plan.
 * Forward payload: inner row (gid g) of owner o, column j holds
 * 1 + ((o*n + g)*cols + j), an integer below 2^24 so every float is exact; after
 * the exchange each halo row must hold its owner's encoding, so a row that comes
 * from the wrong rank, the wrong vertex or the wrong column is caught and printed.
 * Backward: each rank puts 3 + ((r*n + g)*cols + j) in its halo row of g; the owner
 * must end with its own value plus the exact sum over the ranks holding g as halo.
 * Byte counters must equal the modelled rows x cols x 4. Each round runs blocking,
 * non-blocking (other MPI traffic between begin and end), and overlapped as the model
 * does it (issue #14): comm_halo_progress called until it reports the transfer done
 * (and once more), and backward with the inner rows rewritten (doubled) between begin
 * and end, which end's adds must come after. Runs with the CPU
 * backend and with a fake device backend (staging path), cols in {1, 5, 64},
 * several graph shapes (a rank with no peers, no edges, peers with no traffic),
 * checks that a sabotaged plan is detected, and that bad plans fail on every rank.
 * The same rounds with the halo block in a buffer of its own (comm_halo_begin_into). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/ops.h"
#include "fake_device.h"
#include "halo_fixture.h"
#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;
static const char *mismatch_note = ""; /* marks the mismatches the sabotage test wants */

#define MAX_COLS 64

struct ctx {
  struct comm *c;
  const struct fx_graph *g;
  const struct fx_local *l;
  unsigned char *marks; /* marks[q * n + v]: v is a halo vertex of rank q */
  int64_t model_fwd_rows, model_bwd_rows;
};

static double enc_fwd(const struct fx_graph *g, int64_t o, int64_t gid, int64_t cols, int64_t j) {
  return 1.0 + (double)((o * g->n + gid) * cols + j);
}
static double enc_bwd(const struct fx_graph *g, int64_t s, int64_t gid, int64_t cols, int64_t j) {
  return 3.0 + (double)((s * g->n + gid) * cols + j);
}

static void model_rows(struct ctx *x) {
  const struct fx_graph *g = x->g;
  int r = comm_rank(x->c);
  x->model_fwd_rows = x->model_bwd_rows = 0;
  for (int q = 0; q < g->nranks; q++)
    for (int64_t v = 0; v < g->n; v++) {
      if (!x->marks[(size_t)q * (size_t)g->n + (size_t)v]) continue;
      if (q == r)
        x->model_bwd_rows++;
      else if (g->owner[v] == r)
        x->model_fwd_rows++;
    }
}

/* How a round runs the exchange: begin + end in one call, begin and end with a
 * barrier between them, or overlapped (progress until done, inner rows rewritten
 * between a backward begin and end). */
enum round_mode { ROUND_BLOCKING = 0, ROUND_NONBLOCKING = 1, ROUND_OVERLAPPED = 2 };

/* comm_halo_progress until it reports the transfer done (every rank polls, so every
 * peer's part moves), then once more: it keeps saying so. */
static void progress_until_done(struct comm_halo *h) {
  long polls = 0;
  int st;
  while ((st = comm_halo_progress(h)) == 0) MT_CHECK(++polls < 100000000L, "the exchange never completed");
  MT_CHECK(st == 1, "comm_halo_progress returned %d", st);
  MT_CHECK(comm_halo_progress(h) == 1, "comm_halo_progress after completion");
}

/* One forward + backward round; returns the number of wrong forward values
 * (aborts on any other failure unless `tolerate_fwd` is set). */
static int64_t round_check(struct ctx *x, struct cg_backend *be, struct comm_halo *h, int64_t cols,
                           enum round_mode nonblocking, int tolerate_fwd) {
  const struct fx_graph *g = x->g;
  const struct fx_local *l = x->l;
  struct comm *c = x->c;
  int r = comm_rank(c);
  int64_t rows = l->n_inner + l->n_halo;
  size_t bytes = (size_t)(rows > 0 ? rows : 1) * (size_t)cols * sizeof(float);
  float *hx = malloc(bytes);
  float *dx = NULL;
  MT_CHECK(hx != NULL, "out of memory");
  MT_OK(be->alloc(be, (void **)&dx, bytes, "test matrix"));

  /* ---- forward ---- */
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      hx[i * cols + j] = i < l->n_inner ? (float)enc_fwd(g, r, l->gid[i], cols, j) : -1.0f;
  MT_OK(be->upload(be, dx, hx, (size_t)rows * (size_t)cols * sizeof(float)));
  comm_stats_reset(c);
  if (nonblocking) {
    MT_OK(comm_halo_begin(h, CG_HALO_FORWARD, dx, cols));
    if (nonblocking == ROUND_OVERLAPPED) progress_until_done(h);
    else MT_OK(comm_barrier(c)); /* other MPI traffic while the exchange is pending */
    MT_OK(comm_halo_end(h, CG_HALO_FORWARD, dx, cols));
  } else {
    MT_OK(comm_halo_exchange(h, CG_HALO_FORWARD, dx, cols));
  }
  MT_OK(be->download(be, hx, dx, (size_t)rows * (size_t)cols * sizeof(float)));
  int64_t bad = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t gid = l->gid[i];
    int64_t o = i < l->n_inner ? r : g->owner[gid];
    for (int64_t j = 0; j < cols; j++) {
      double want = enc_fwd(g, o, gid, cols, j), got = hx[i * cols + j];
      if (got == want) continue;
      if (bad++ == 0) {
        long long code = (long long)got - 1;
        fprintf(
            stderr,
            "[rank %d] %sforward mismatch (backend %s, cols %lld): local row %lld (gid %lld, owner "
            "%lld) col %lld holds %.1f",
            r, mismatch_note, be->name, (long long)cols, (long long)i, (long long)gid, (long long)o,
            (long long)j, got);
        if (got >= 1)
          fprintf(stderr, " = (owner %lld, gid %lld, col %lld)", code / cols / g->n,
                  code / cols % g->n, code % cols);
        fprintf(stderr, ", expected %.1f\n", want);
      }
    }
  }
  if (!tolerate_fwd) MT_CHECK(bad == 0, "%lld wrong forward values", (long long)bad);

  /* ---- backward ---- */
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      hx[i * cols + j] = (float)(i < l->n_inner ? enc_fwd(g, r, l->gid[i], cols, j)
                                                : enc_bwd(g, r, l->gid[i], cols, j));
  MT_OK(be->upload(be, dx, hx, (size_t)rows * (size_t)cols * sizeof(float)));
  const double inner_scale = nonblocking == ROUND_OVERLAPPED ? 2.0 : 1.0;
  if (nonblocking) {
    MT_OK(comm_halo_begin(h, CG_HALO_BACKWARD, dx, cols));
    if (nonblocking == ROUND_OVERLAPPED) {
      /* the caller may write the inner rows now: end adds into what is there then */
      (void)comm_halo_progress(h);
      for (int64_t i = 0; i < l->n_inner * cols; i++) hx[i] *= 2.0f;
      if (l->n_inner > 0) MT_OK(be->upload(be, dx, hx, (size_t)l->n_inner * (size_t)cols * sizeof(float)));
      progress_until_done(h);
    } else {
      MT_OK(comm_barrier(c));
    }
    MT_OK(comm_halo_end(h, CG_HALO_BACKWARD, dx, cols));
  } else {
    MT_OK(comm_halo_exchange(h, CG_HALO_BACKWARD, dx, cols));
  }
  MT_OK(be->download(be, hx, dx, (size_t)rows * (size_t)cols * sizeof(float)));
  int64_t bad_b = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t gid = l->gid[i];
    for (int64_t j = 0; j < cols; j++) {
      double want;
      if (i < l->n_inner) {
        want = inner_scale * enc_fwd(g, r, gid, cols, j);
        for (int q = 0; q < g->nranks; q++)
          if (q != r && x->marks[(size_t)q * (size_t)g->n + (size_t)gid])
            want += enc_bwd(g, q, gid, cols, j);
      } else {
        want = enc_bwd(g, r, gid, cols, j); /* halo rows of dx are left alone */
      }
      double got = hx[i * cols + j];
      if (got == want) continue;
      if (bad_b++ == 0)
        fprintf(
            stderr,
            "[rank %d] %sbackward mismatch (backend %s, cols %lld): local row %lld (gid %lld, %s) "
            "col %lld holds %.1f, expected %.1f\n",
            r, mismatch_note, be->name, (long long)cols, (long long)i, (long long)gid,
            i < l->n_inner ? "inner" : "halo", (long long)j, got, want);
    }
  }
  if (!tolerate_fwd) MT_CHECK(bad_b == 0, "%lld wrong backward values", (long long)bad_b);

  /* ---- counters: bytes this rank sent, exactly the modelled rows ---- */
  struct comm_stats s;
  comm_stats_get(c, &s);
  MT_CHECK(s.halo_fwd_bytes == x->model_fwd_rows * cols * 4,
           "forward bytes %lld, modelled %lld rows x %lld cols x 4", (long long)s.halo_fwd_bytes,
           (long long)x->model_fwd_rows, (long long)cols);
  MT_CHECK(s.halo_bwd_bytes == x->model_bwd_rows * cols * 4,
           "backward bytes %lld, modelled %lld rows x %lld cols x 4", (long long)s.halo_bwd_bytes,
           (long long)x->model_bwd_rows, (long long)cols);
  MT_CHECK(s.halo_fwd_calls == 1 && s.halo_bwd_calls == 1, "calls %lld / %lld",
           (long long)s.halo_fwd_calls, (long long)s.halo_bwd_calls);
  MT_CHECK(s.halo_s >= 0 && s.halo_s == s.halo_fwd_s + s.halo_bwd_s, "halo seconds");
  int64_t tot[2] = {s.halo_fwd_bytes, s.halo_bwd_bytes};
  MT_OK(comm_allreduce_i64(c, tot, 2, COMM_SUM));
  MT_CHECK(tot[0] == tot[1], "total forward bytes %lld != total backward bytes %lld",
           (long long)tot[0], (long long)tot[1]);

  be->free(be, dx);
  free(hx);
  return bad;
}

/* comm_halo_begin_into / end_into: x holds the inner rows only, the halo block is a
 * separate buffer; forward fills it with the owners' rows (in halo order), backward
 * sends it back and the owners add it into x, exactly as with the block inside x. */
static void into_check(struct ctx *x, struct cg_backend *be, struct comm_halo *h, int64_t cols) {
  const struct fx_graph *g = x->g;
  const struct fx_local *l = x->l;
  const int r = comm_rank(x->c);
  const int64_t ni = l->n_inner, nh = l->n_halo;
  size_t xb = (size_t)(ni > 0 ? ni : 1) * (size_t)cols * sizeof(float);
  size_t rb = (size_t)(nh > 0 ? nh : 1) * (size_t)cols * sizeof(float);
  float *hx = malloc(xb), *hr = malloc(rb), *dx = NULL, *dr = NULL;
  MT_CHECK(hx && hr, "out of memory");
  MT_OK(be->alloc(be, (void **)&dx, xb, "test inner rows"));
  MT_OK(be->alloc(be, (void **)&dr, rb, "test halo block"));
  for (int64_t i = 0; i < ni; i++)
    for (int64_t j = 0; j < cols; j++) hx[i * cols + j] = (float)enc_fwd(g, r, l->gid[i], cols, j);
  for (int64_t i = 0; i < nh * cols; i++) hr[i] = -1.0f;
  if (ni > 0) MT_OK(be->upload(be, dx, hx, (size_t)ni * (size_t)cols * sizeof(float)));
  if (nh > 0) MT_OK(be->upload(be, dr, hr, (size_t)nh * (size_t)cols * sizeof(float)));
  MT_OK(comm_halo_begin_into(h, CG_HALO_FORWARD, dx, dr, cols));
  MT_OK(comm_barrier(x->c));
  MT_OK(comm_halo_end_into(h, CG_HALO_FORWARD, dx, dr, cols));
  if (nh > 0) MT_OK(be->download(be, hr, dr, (size_t)nh * (size_t)cols * sizeof(float)));
  for (int64_t i = 0; i < nh; i++) {
    const int64_t gid = l->gid[ni + i];
    for (int64_t j = 0; j < cols; j++)
      MT_CHECK(hr[i * cols + j] == (float)enc_fwd(g, g->owner[gid], gid, cols, j),
               "%s into-forward: halo row %lld (gid %lld) col %lld holds %.1f", be->name,
               (long long)i, (long long)gid, (long long)j, hr[i * cols + j]);
  }
  for (int64_t i = 0; i < nh; i++)
    for (int64_t j = 0; j < cols; j++) hr[i * cols + j] = (float)enc_bwd(g, r, l->gid[ni + i], cols, j);
  if (nh > 0) MT_OK(be->upload(be, dr, hr, (size_t)nh * (size_t)cols * sizeof(float)));
  MT_OK(comm_halo_begin_into(h, CG_HALO_BACKWARD, dx, dr, cols));
  MT_CHECK(comm_halo_end_into(h, CG_HALO_BACKWARD, dx, NULL, cols) == CG_ERR_ARG,
           "end_into with another receive buffer than begin must be refused");
  cg_err_clear();
  MT_OK(comm_halo_end_into(h, CG_HALO_BACKWARD, dx, dr, cols));
  if (ni > 0) MT_OK(be->download(be, hx, dx, (size_t)ni * (size_t)cols * sizeof(float)));
  for (int64_t i = 0; i < ni; i++) {
    const int64_t gid = l->gid[i];
    for (int64_t j = 0; j < cols; j++) {
      double want = enc_fwd(g, r, gid, cols, j);
      for (int q = 0; q < g->nranks; q++)
        if (q != r && x->marks[(size_t)q * (size_t)g->n + (size_t)gid]) want += enc_bwd(g, q, gid, cols, j);
      MT_CHECK(hx[i * cols + j] == want, "%s into-backward: inner row %lld (gid %lld) col %lld holds %.1f, expected %.1f",
               be->name, (long long)i, (long long)gid, (long long)j, hx[i * cols + j], want);
    }
  }
  be->free(be, dx);
  be->free(be, dr);
  free(hx);
  free(hr);
}

static void run_config(struct comm *c, struct cg_backend *be, const struct fx_opts *o) {
  int P = comm_size(c), r = comm_rank(c);
  struct fx_graph g;
  struct fx_local l;
  MT_OK(fx_graph_make(&g, P, o));
  MT_OK(fx_local_make(&g, r, o->all_peers, &l));
  struct ctx x = {.c = c, .g = &g, .l = &l};
  x.marks = malloc((size_t)P * (size_t)g.n + 1);
  MT_CHECK(x.marks != NULL, "out of memory");
  for (int q = 0; q < P; q++) fx_halo_marks(&g, q, x.marks + (size_t)q * (size_t)g.n);
  model_rows(&x);

  struct comm_halo *h = NULL;
  MT_OK(comm_halo_create(c, be, &l.plan, MAX_COLS, &h));
  MT_CHECK(comm_halo_send_rows(h) == x.model_fwd_rows, "send rows %lld, modelled %lld",
           (long long)comm_halo_send_rows(h), (long long)x.model_fwd_rows);
  MT_CHECK(comm_halo_recv_rows(h) == x.model_bwd_rows, "recv rows %lld, modelled %lld",
           (long long)comm_halo_recv_rows(h), (long long)x.model_bwd_rows);
  const int64_t widths[] = {1, 5, MAX_COLS};
  for (int w = 0; w < 3; w++) {
    round_check(&x, be, h, widths[w], ROUND_NONBLOCKING, 0);
    round_check(&x, be, h, widths[w], ROUND_BLOCKING, 0);
    round_check(&x, be, h, widths[w], ROUND_OVERLAPPED, 0);
    into_check(&x, be, h, widths[w]);
  }
  comm_halo_destroy(&h);
  MT_CHECK(h == NULL, "destroy must clear the handle");
  if (r == 0)
    printf("ok: %s seed %llu n %lld deg %lld%s%s: %lld rows out, %lld in (rank 0)\n", be->name,
           (unsigned long long)o->seed, (long long)o->n, (long long)o->avg_deg,
           o->last_rank_empty ? " last-rank-empty" : "", o->all_peers ? " all-peers" : "",
           (long long)x.model_fwd_rows, (long long)x.model_bwd_rows);
  free(x.marks);
  fx_local_free(&l);
  fx_graph_free(&g);
}

/* A plan whose rows are swapped on rank 0 must be caught by the checks above. */
static void run_sabotage(struct comm *c, struct cg_backend *be) {
  int P = comm_size(c), r = comm_rank(c);
  struct fx_opts o = {.seed = 11, .n = 240, .avg_deg = 4};
  struct fx_graph g;
  struct fx_local l;
  MT_OK(fx_graph_make(&g, P, &o));
  MT_OK(fx_local_make(&g, r, 0, &l));
  struct ctx x = {.c = c, .g = &g, .l = &l};
  x.marks = malloc((size_t)P * (size_t)g.n + 1);
  MT_CHECK(x.marks != NULL, "out of memory");
  for (int q = 0; q < P; q++) fx_halo_marks(&g, q, x.marks + (size_t)q * (size_t)g.n);
  model_rows(&x);
  int swapped = 0;
  if (r == 0)
    for (int i = 0; i < l.npeers && !swapped; i++)
      if (l.send_count[i] >= 2) {
        int32_t *s = l.send_idx + l.send_offset[i], t = s[0];
        s[0] = s[1];
        s[1] = t;
        swapped = 1;
      }
  struct comm_halo *h = NULL;
  MT_OK(comm_halo_create(c, be, &l.plan, MAX_COLS, &h));
  mismatch_note = "(expected, sabotaged plan) ";
  int64_t bad[2] = {round_check(&x, be, h, 5, ROUND_NONBLOCKING, 1), swapped};
  mismatch_note = "";
  MT_OK(comm_allreduce_i64(c, bad, 2, COMM_SUM));
  MT_CHECK(bad[1] == 1, "rank 0 found no peer with two rows to swap");
  MT_CHECK(bad[0] > 0, "swapping two rows of rank 0's send list went unnoticed");
  if (r == 0)
    printf("ok: a swapped send list is detected (%lld wrong values in total)\n", (long long)bad[0]);
  comm_halo_destroy(&h);
  free(x.marks);
  fx_local_free(&l);
  fx_graph_free(&g);
}

/* Bad plans: every rank must return an error, the culprit with its own message. */
static void expect_create_fails(struct comm *c, struct cg_backend *be, const struct fx_local *l,
                                int culprit, const char *culprit_msg) {
  struct comm_halo *h = NULL;
  int st = comm_halo_create(c, be, &l->plan, MAX_COLS, &h);
  MT_CHECK(st < 0 && h == NULL, "a bad plan on rank %d was accepted", culprit);
  if (comm_rank(c) == culprit)
    MT_CHECK(strstr(cg_err_msg(), culprit_msg) != NULL, "message '%s' lacks '%s'", cg_err_msg(),
             culprit_msg);
  else
    MT_CHECK(strstr(cg_err_msg(), "failed during") != NULL, "message '%s' does not name the rank",
             cg_err_msg());
  cg_err_clear();
}

static void run_bad_plans(struct comm *c, struct cg_backend *be) {
  int P = comm_size(c), r = comm_rank(c);
  struct fx_opts o = {.seed = 21, .n = 240, .avg_deg = 4};
  struct fx_graph g;
  struct fx_local l;
  MT_OK(fx_graph_make(&g, P, &o));
  MT_OK(fx_local_make(&g, r, 0, &l));
  int culprit = P - 1;

  /* 1. a peer that is not a rank */
  if (r == culprit) {
    MT_CHECK(l.npeers > 0, "fixture rank has no peers");
    l.peer[l.npeers - 1] = (int32_t)P;
  }
  expect_create_fails(c, be, &l, culprit, "is not another rank");
  fx_local_free(&l);
  MT_OK(fx_local_make(&g, r, 0, &l));

  /* 2. an inner row sent twice to one peer */
  if (r == culprit)
    for (int i = 0; i < l.npeers; i++)
      if (l.send_count[i] >= 2) {
        l.send_idx[l.send_offset[i] + 1] = l.send_idx[l.send_offset[i]];
        break;
      }
  expect_create_fails(c, be, &l, culprit, "sent twice");
  fx_local_free(&l);
  MT_OK(fx_local_make(&g, r, 0, &l));

  /* 3. plans that disagree: rank 0 sends one row less to its last peer than that
   * peer expects; only the peer can see it, yet every rank must fail. */
  int victim = -1;
  if (r == 0) {
    MT_CHECK(l.npeers > 0 && l.send_count[l.npeers - 1] > 0, "fixture rank 0 sends nothing");
    l.send_count[l.npeers - 1]--;
    victim = l.peer[l.npeers - 1];
  }
  MT_OK(comm_bcast(c, &victim, sizeof victim, 0));
  expect_create_fails(c, be, &l, victim, "halo plans disagree");
  fx_local_free(&l);
  fx_graph_free(&g);
  if (r == 0) printf("ok: bad plans fail on every rank with the culprit's message\n");
}

/* A misused call must return CG_ERR_ARG with a message containing both texts. */
static void expect_misuse(int st, const char *what, const char *text1, const char *text2) {
  MT_CHECK(st == CG_ERR_ARG, "%s (returned %d)", what, st);
  MT_CHECK(strstr(cg_err_msg(), text1) != NULL && strstr(cg_err_msg(), text2) != NULL,
           "%s: message '%s' lacks '%s' or '%s'", what, cg_err_msg(), text1, text2);
  cg_err_clear();
}

/* Misuse inside a step returns CG_ERR_ARG locally (no collective involved), in both
 * directions; the object stays usable. */
static void run_misuse(struct comm *c, struct cg_backend *be) {
  int P = comm_size(c), r = comm_rank(c);
  struct fx_opts o = {.seed = 31, .n = 60, .avg_deg = 2};
  struct fx_graph g;
  struct fx_local l;
  MT_OK(fx_graph_make(&g, P, &o));
  MT_OK(fx_local_make(&g, r, 0, &l));
  struct comm_halo *h = NULL;
  MT_OK(comm_halo_create(c, be, &l.plan, 8, &h));
  float *x = NULL;
  size_t bytes = (size_t)(l.n_inner + l.n_halo + 1) * 8 * sizeof(float);
  MT_OK(be->alloc(be, (void **)&x, bytes, "test matrix"));
  be->fill(be, x, (l.n_inner + l.n_halo) * 8, 0.0f);
  const enum cg_halo_dir dirs[] = {CG_HALO_FORWARD, CG_HALO_BACKWARD};
  for (int i = 0; i < 2; i++) {
    enum cg_halo_dir d = dirs[i], other = dirs[1 - i];
    const char *dn = d == CG_HALO_FORWARD ? "forward" : "backward";
    char begin[64], end[64], none[64];
    snprintf(begin, sizeof begin, "comm_halo_begin(%s)", dn);
    snprintf(end, sizeof end, "comm_halo_end(%s)", dn);
    snprintf(none, sizeof none, "no %s exchange in flight", dn);
    expect_misuse(comm_halo_begin(h, d, x, 9), "cols > max_cols accepted", begin, "max_cols 8");
    expect_misuse(comm_halo_begin(h, d, x, 0), "cols 0 accepted", begin, "cols 0");
    expect_misuse(comm_halo_end(h, d, x, 8), "end without begin accepted", end, none);
    expect_misuse(comm_halo_progress(h), "progress without begin accepted", "comm_halo_progress",
                  "no exchange in flight");
    MT_OK(comm_halo_begin(h, d, x, 8));
    expect_misuse(comm_halo_begin(h, other, x, 8), "two exchanges in flight accepted", "still in flight",
                  dn);
    expect_misuse(comm_halo_begin(h, d, x, 8), "the same exchange begun twice", "still in flight",
                  dn);
    expect_misuse(comm_halo_end(h, other, x, 8), "the end of the other direction accepted",
                  "comm_halo_end", "in flight");
    expect_misuse(comm_halo_end(h, d, x, 4), "end with other cols accepted", end, "differ");
    expect_misuse(comm_halo_end(h, d, x + 8, 8), "end with another matrix accepted", end,
                  "differ");
    MT_OK(comm_halo_end(h, d, x, 8));
  }
  expect_misuse(comm_halo_begin(h, (enum cg_halo_dir)2, x, 8), "direction 2 accepted",
                "comm_halo_begin", "unknown direction");
  expect_misuse(comm_halo_end(h, (enum cg_halo_dir)-1, x, 8), "direction -1 accepted",
                "comm_halo_end", "unknown direction");
  expect_misuse(comm_halo_exchange(h, (enum cg_halo_dir)7, x, 8), "direction 7 accepted",
                "comm_halo_begin", "unknown direction");
  /* after all that misuse the object still works, both ways */
  MT_OK(comm_halo_exchange(h, CG_HALO_FORWARD, x, 8));
  MT_OK(comm_halo_exchange(h, CG_HALO_BACKWARD, x, 8));
  cg_err_clear();
  be->free(be, x);
  comm_halo_destroy(&h);
  comm_halo_destroy(&h); /* NULL is fine */
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
      {.seed = 3, .n = 50, .avg_deg = 0},
      {.seed = 4, .n = 200, .avg_deg = 3, .all_peers = 1},
  };
  struct cg_backend *backends[] = {cpu, dev};
  for (int b = 0; b < 2; b++)
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++)
      run_config(c, backends[b], &configs[k]);
  int64_t up = 0, down = 0;
  fake_device_counts(dev, &up, &down);
  MT_CHECK(up > 0 && down > 0, "the fake device was never staged through (%lld up, %lld down)",
           (long long)up, (long long)down);
  run_misuse(c, cpu);
  run_misuse(c, dev);
  if (comm_size(c) > 1) {
    run_sabotage(c, cpu);
    run_sabotage(c, dev);
    run_bad_plans(c, cpu);
  }
  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (comm_rank(c) == 0)
    printf("test_halo_exchange: all checks passed on %d ranks\n", comm_size(c));
  comm_finalize(&mt_comm);
  return 0;
}
