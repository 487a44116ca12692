/* mpi/tests/halo_check.c — see halo_check.h. */
#include "halo_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"

/* A float in [-1, 1) with 24 random bits, from (salt, a, gid, j). */
static float hval(uint64_t salt, uint64_t a, int64_t gid, int64_t j) {
  struct mt_rng r = {salt * 0x9E3779B97F4A7C15ull ^ (a + 1) * 0xD1B54A32D192ED03ull ^
                     (uint64_t)gid * 0xBF58476D1CE4E5B9ull ^ (uint64_t)j * 0x94D049BB133111EBull};
  uint64_t z = mt_next(&r);
  return (float)((int64_t)(z >> 40) - ((int64_t)1 << 23)) / (float)((int64_t)1 << 23);
}

/* value roles: inner rows of x, inner rows of dx, halo rows of dx (per holding rank) */
#define ROLE_X 0u
#define ROLE_DXI 1u
#define ROLE_DXH(q) (2u + (uint64_t)(q))

static uint64_t fnv(uint64_t h, const float *v, size_t n) {
  const unsigned char *b = (const unsigned char *)v;
  for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}

void hc_case_make(struct hc_case *k, struct comm *c, const struct fx_opts *o) {
  int P = comm_size(c), r = comm_rank(c);
  memset(k, 0, sizeof *k);
  k->c = c;
  MT_OK(fx_graph_make(&k->g, P, o));
  MT_OK(fx_local_make(&k->g, r, o->all_peers, &k->l));
  k->marks = malloc((size_t)P * (size_t)k->g.n + 1);
  MT_CHECK(k->marks != NULL, "out of memory");
  for (int q = 0; q < P; q++) fx_halo_marks(&k->g, q, k->marks + (size_t)q * (size_t)k->g.n);
}

void hc_case_free(struct hc_case *k) {
  free(k->marks);
  fx_local_free(&k->l);
  fx_graph_free(&k->g);
  memset(k, 0, sizeof *k);
}

static void fill_x(const struct hc_case *k, float *x, int64_t cols, uint64_t salt) {
  const struct fx_local *l = &k->l;
  for (int64_t i = 0; i < l->n_inner + l->n_halo; i++)
    for (int64_t j = 0; j < cols; j++)
      x[i * cols + j] = i < l->n_inner ? hval(salt, ROLE_X, l->gid[i], j) : -77.0f;
}

static void fill_dx(const struct hc_case *k, float *dx, int64_t cols, uint64_t salt) {
  const struct fx_local *l = &k->l;
  int r = comm_rank(k->c);
  for (int64_t i = 0; i < l->n_inner + l->n_halo; i++)
    for (int64_t j = 0; j < cols; j++)
      dx[i * cols + j] = hval(salt, i < l->n_inner ? ROLE_DXI : ROLE_DXH(r), l->gid[i], j);
}

static void check_x(const struct hc_case *k, const float *x, int64_t cols, uint64_t salt,
                    const char *be, const char *what) {
  const struct fx_local *l = &k->l;
  int64_t bad = 0;
  for (int64_t i = 0; i < l->n_inner + l->n_halo; i++)
    for (int64_t j = 0; j < cols; j++) {
      float want = hval(salt, ROLE_X, l->gid[i], j), got = x[i * cols + j];
      if (memcmp(&want, &got, sizeof want) == 0) continue;
      if (bad++ == 0)
        fprintf(stderr,
                "[rank %d] %s %s (cols %lld): local row %lld (gid %lld, %s) col %lld holds %.9g, "
                "expected %.9g\n",
                comm_rank(k->c), be, what, (long long)cols, (long long)i, (long long)l->gid[i],
                i < l->n_inner ? "inner" : "halo", (long long)j, got, want);
    }
  MT_CHECK(bad == 0, "%lld wrong values after %s on %s", (long long)bad, what, be);
}

/* What the owner's row of dx (gid) holds after the backward exchange: its own value
 * plus one block per rank holding it as halo, added in ascending rank order (the
 * order comm_halo_end promises backward). */
static float dx_sum(const struct hc_case *k, uint64_t salt, int64_t gid, int64_t j, float scale) {
  int P = comm_size(k->c), owner = k->g.owner[gid];
  float v = scale * hval(salt, ROLE_DXI, gid, j);
  for (int q = 0; q < P; q++)
    if (q != owner && k->marks[(size_t)q * (size_t)k->g.n + (size_t)gid])
      v = v + hval(salt, ROLE_DXH(q), gid, j);
  return v;
}

/* After backward: inner rows hold dx_sum and halo rows are left alone, unless
 * `halo_summed`: a forward exchange followed, so they hold their owners' sums. The
 * inner rows' own values were multiplied by `scale` between begin and end. */
static void check_dx_scaled(const struct hc_case *k, const float *dx, int64_t cols, uint64_t salt,
                            int halo_summed, float scale, const char *be, const char *what) {
  const struct fx_local *l = &k->l;
  int r = comm_rank(k->c);
  int64_t bad = 0;
  for (int64_t i = 0; i < l->n_inner + l->n_halo; i++) {
    int64_t gid = l->gid[i];
    for (int64_t j = 0; j < cols; j++) {
      float want =
          i < l->n_inner || halo_summed ? dx_sum(k, salt, gid, j, scale) : hval(salt, ROLE_DXH(r), gid, j);
      float got = dx[i * cols + j];
      if (memcmp(&want, &got, sizeof want) == 0) continue;
      if (bad++ == 0)
        fprintf(stderr,
                "[rank %d] %s %s (cols %lld): local row %lld (gid %lld, %s) col %lld holds %.9g, "
                "expected %.9g\n",
                r, be, what, (long long)cols, (long long)i, (long long)gid,
                i < l->n_inner ? "inner" : "halo", (long long)j, got, want);
    }
  }
  MT_CHECK(bad == 0, "%lld wrong values after %s on %s", (long long)bad, what, be);
}

static void check_dx(const struct hc_case *k, const float *dx, int64_t cols, uint64_t salt,
                     int halo_summed, const char *be, const char *what) {
  check_dx_scaled(k, dx, cols, salt, halo_summed, 1.0f, be, what);
}

/* The rows the plan sends forward and receives (= sends backward). */
static void plan_rows(const struct fx_local *l, int64_t *send_rows, int64_t *recv_rows) {
  *send_rows = *recv_rows = 0;
  for (int i = 0; i < l->npeers; i++) {
    *send_rows += l->send_count[i];
    *recv_rows += l->recv_count[i];
  }
}

/* The workout drives either a comm_halo or the seam of core/exchange.h over one. */
struct hc_target {
  struct comm_halo *h;
  struct cg_exchange *ex;
};

/* Through the seam each call carries a tag (core/exchange.h); the plain exchange must
 * move the same rows whatever it says, so the workout varies it. */
static struct cg_halo_tag t_tag(enum cg_halo_dir d, int64_t cols) {
  struct cg_halo_tag tag = {(int)(cols % 3) + (d == CG_HALO_BACKWARD), (uint32_t)cols};
  return tag;
}
static int t_begin(const struct hc_target *t, enum cg_halo_dir d, float *x, int64_t cols) {
  return t->h ? comm_halo_begin(t->h, d, x, cols)
              : t->ex->halo_begin(t->ex, d, t_tag(d, cols), x, cols);
}
static int t_end(const struct hc_target *t, enum cg_halo_dir d, float *x, int64_t cols) {
  return t->h ? comm_halo_end(t->h, d, x, cols) : t->ex->halo_end(t->ex, d, t_tag(d, cols), x, cols);
}
/* Progress polled until the transfer is reported done (every rank polls, so every
 * peer's part moves), then once more. */
static void t_progress_until_done(const struct hc_target *t, const char *tag) {
  long polls = 0;
  int st;
  while ((st = t->h ? comm_halo_progress(t->h) : cg_exchange_halo_progress(t->ex)) == 0)
    MT_CHECK(++polls < 100000000L, "%s: the exchange never completed", tag);
  MT_CHECK(st == 1, "%s: progress returned %d", tag, st);
  st = t->h ? comm_halo_progress(t->h) : cg_exchange_halo_progress(t->ex);
  MT_CHECK(st == 1, "%s: progress after completion returned %d", tag, st);
}
static int t_exchange(const struct hc_target *t, enum cg_halo_dir d, float *x, int64_t cols) {
  return t->h ? comm_halo_exchange(t->h, d, x, cols)
              : cg_exchange_halo(t->ex, d, t_tag(d, cols), x, cols);
}

static uint64_t workout(const struct hc_case *k, struct cg_backend *be, const struct hc_target *t,
                        const char *tag, int64_t cols, uint64_t salt) {
  struct comm *c = k->c;
  const struct fx_local *l = &k->l;
  int64_t rows = l->n_inner + l->n_halo;
  size_t n = (size_t)rows * (size_t)cols, bytes = (n > 0 ? n : 1) * sizeof(float);
  float *hm[4], *dm[4];
  for (int i = 0; i < 4; i++) {
    hm[i] = malloc(bytes);
    dm[i] = NULL;
    MT_CHECK(hm[i] != NULL, "out of memory");
    MT_OK(be->alloc(be, (void **)&dm[i], bytes, "test matrix"));
  }
  uint64_t hash = 0xCBF29CE484222325ull;
  int64_t send_rows, recv_rows;
  plan_rows(l, &send_rows, &recv_rows);

  /* non-blocking, other MPI traffic between begin and end */
  fill_x(k, hm[0], cols, salt);
  fill_dx(k, hm[1], cols, salt + 1);
  MT_OK(be->upload(be, dm[0], hm[0], n * sizeof(float)));
  MT_OK(be->upload(be, dm[1], hm[1], n * sizeof(float)));
  comm_stats_reset(c);
  struct cg_exchange_counters ec0 = {0}, ec = {0};
  if (t->ex) t->ex->counters(t->ex, &ec0);
  const int64_t own0 = t->h ? comm_halo_bytes_sent(t->h) : 0;
  const int64_t own_inter0 = t->h ? comm_halo_inter_bytes_sent(t->h) : 0;
  MT_OK(t_begin(t, CG_HALO_FORWARD, dm[0], cols));
  MT_OK(comm_barrier(c));
  MT_OK(t_end(t, CG_HALO_FORWARD, dm[0], cols));
  MT_OK(t_begin(t, CG_HALO_BACKWARD, dm[1], cols));
  MT_OK(comm_barrier(c));
  MT_OK(t_end(t, CG_HALO_BACKWARD, dm[1], cols));
  MT_OK(be->download(be, hm[0], dm[0], n * sizeof(float)));
  MT_OK(be->download(be, hm[1], dm[1], n * sizeof(float)));
  check_x(k, hm[0], cols, salt, tag, "forward");
  check_dx(k, hm[1], cols, salt + 1, 0, tag, "backward");
  hash = fnv(fnv(hash, hm[0], n), hm[1], n);

  struct comm_stats s;
  comm_stats_get(c, &s);
  MT_CHECK(s.halo_fwd_bytes == send_rows * cols * 4 && s.halo_bwd_bytes == recv_rows * cols * 4,
           "%s: bytes %lld / %lld, expected rows %lld / %lld x %lld cols x 4", tag,
           (long long)s.halo_fwd_bytes, (long long)s.halo_bwd_bytes, (long long)send_rows,
           (long long)recv_rows, (long long)cols);
  MT_CHECK(s.halo_fwd_calls == 1 && s.halo_bwd_calls == 1, "%s: calls %lld / %lld", tag,
           (long long)s.halo_fwd_calls, (long long)s.halo_bwd_calls);
  /* where they went: each peer's rows (forward sent, backward returned) to a rank of this
   * node or of another (all intra on one node; CAPGNN_EMULATE_NODES splits it) */
  int64_t inter_rows = 0;
  for (int i = 0; i < l->npeers; i++)
    if (comm_node_of(c, l->peer[i]) != comm_node_of(c, comm_rank(c)))
      inter_rows += l->send_count[i] + l->recv_count[i];
  const int64_t inter_want = inter_rows * cols * 4, all_want = (send_rows + recv_rows) * cols * 4;
  MT_CHECK(s.halo_inter_bytes == inter_want && s.halo_intra_bytes == all_want - inter_want,
           "%s: halo bytes intra %lld / inter %lld, expected %lld / %lld", tag,
           (long long)s.halo_intra_bytes, (long long)s.halo_inter_bytes, (long long)(all_want - inter_want),
           (long long)inter_want);
  if (t->h) { /* the object's own count: the same bytes */
    const int64_t own_inter = comm_halo_inter_bytes_sent(t->h) - own_inter0;
    MT_CHECK(own_inter == inter_want, "%s: comm_halo_inter_bytes_sent grew by %lld, expected %lld", tag,
             (long long)own_inter, (long long)inter_want);
    int64_t own = comm_halo_bytes_sent(t->h) - own0;
    MT_CHECK(own == (send_rows + recv_rows) * cols * 4,
             "%s: comm_halo_bytes_sent grew by %lld, expected %lld", tag, (long long)own,
             (long long)((send_rows + recv_rows) * cols * 4));
  }
  if (t->ex) { /* what the seam counted during the round */
    t->ex->counters(t->ex, &ec);
    int64_t halo = ec.halo_bytes - ec0.halo_bytes, ar = ec.allreduce_bytes - ec0.allreduce_bytes;
    MT_CHECK(halo == (send_rows + recv_rows) * cols * 4 && ar == 0 && ec.cache_hits == 0 &&
                 ec.cache_lookups == 0,
             "%s: seam counted %lld halo bytes (expected %lld), %lld all-reduce bytes, cache "
             "%lld / %lld",
             tag, (long long)halo, (long long)((send_rows + recv_rows) * cols * 4), (long long)ar,
             (long long)ec.cache_hits, (long long)ec.cache_lookups);
  }

  /* back to back on two matrices, nothing read on the host in between */
  fill_x(k, hm[0], cols, salt + 2);
  fill_x(k, hm[1], cols, salt + 3);
  fill_dx(k, hm[2], cols, salt + 4);
  fill_dx(k, hm[3], cols, salt + 5);
  for (int i = 0; i < 4; i++) MT_OK(be->upload(be, dm[i], hm[i], n * sizeof(float)));
  MT_OK(t_exchange(t, CG_HALO_FORWARD, dm[0], cols));
  MT_OK(t_exchange(t, CG_HALO_FORWARD, dm[1], cols));
  MT_OK(t_exchange(t, CG_HALO_BACKWARD, dm[2], cols));
  MT_OK(t_exchange(t, CG_HALO_BACKWARD, dm[3], cols));
  /* the sums just added into dm[2]'s inner rows, shipped: the gather must wait for the
   * scatter-add still queued on the stream */
  MT_OK(t_exchange(t, CG_HALO_FORWARD, dm[2], cols));
  for (int i = 0; i < 4; i++) MT_OK(be->download(be, hm[i], dm[i], n * sizeof(float)));
  check_x(k, hm[0], cols, salt + 2, tag, "forward (1st of 2 back to back)");
  check_x(k, hm[1], cols, salt + 3, tag, "forward (2nd of 2 back to back)");
  check_dx(k, hm[2], cols, salt + 4, 1, tag, "backward then forward (1st of 2 back to back)");
  check_dx(k, hm[3], cols, salt + 5, 0, tag, "backward (2nd of 2 back to back)");
  for (int i = 0; i < 4; i++) hash = fnv(hash, hm[i], n);

  /* overlapped, as the model runs it (issue #14): progress polled between begin and
   * end; backward, the inner rows are rewritten on the backend (doubled) between begin
   * and end, and end's adds must come after that */
  fill_x(k, hm[0], cols, salt + 6);
  fill_dx(k, hm[1], cols, salt + 7);
  MT_OK(be->upload(be, dm[0], hm[0], n * sizeof(float)));
  MT_OK(be->upload(be, dm[1], hm[1], n * sizeof(float)));
  MT_OK(t_begin(t, CG_HALO_FORWARD, dm[0], cols));
  t_progress_until_done(t, tag);
  MT_OK(t_end(t, CG_HALO_FORWARD, dm[0], cols));
  MT_OK(t_begin(t, CG_HALO_BACKWARD, dm[1], cols));
  be->scale(be, l->n_inner * cols, 2.0f, dm[1]);
  t_progress_until_done(t, tag);
  MT_OK(t_end(t, CG_HALO_BACKWARD, dm[1], cols));
  MT_OK(be->download(be, hm[0], dm[0], n * sizeof(float)));
  MT_OK(be->download(be, hm[1], dm[1], n * sizeof(float)));
  check_x(k, hm[0], cols, salt + 6, tag, "forward (overlapped)");
  check_dx_scaled(k, hm[1], cols, salt + 7, 0, 2.0f, tag, "backward (overlapped, inner rows rewritten)");
  hash = fnv(fnv(hash, hm[0], n), hm[1], n);
  for (int i = 0; i < 4; i++) {
    be->free(be, dm[i]);
    free(hm[i]);
  }
  return hash;
}

uint64_t hc_halo_workout(const struct hc_case *k, struct cg_backend *be, struct comm_halo *h,
                         int64_t cols, uint64_t salt) {
  int64_t send_rows, recv_rows;
  plan_rows(&k->l, &send_rows, &recv_rows);
  MT_CHECK(comm_halo_send_rows(h) == send_rows && comm_halo_recv_rows(h) == recv_rows,
           "comm_halo rows %lld out / %lld in, the plan %lld / %lld",
           (long long)comm_halo_send_rows(h), (long long)comm_halo_recv_rows(h),
           (long long)send_rows, (long long)recv_rows);
  char tag[64];
  snprintf(tag, sizeof tag, "%s/%s", be->name, comm_path_name(comm_halo_path(h)));
  struct hc_target t = {.h = h};
  return workout(k, be, &t, tag, cols, salt);
}

uint64_t hc_exchange_workout(const struct hc_case *k, struct cg_backend *be, struct cg_exchange *ex,
                             int64_t cols, uint64_t salt) {
  char tag[64];
  snprintf(tag, sizeof tag, "%s/seam", be->name);
  struct hc_target t = {.ex = ex};
  return workout(k, be, &t, tag, cols, salt);
}

uint64_t hc_grad_workout(struct comm *c, struct cg_backend *be, struct comm_grad *g, int64_t n) {
  int P = comm_size(c), r = comm_rank(c);
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
  float *h = malloc(bytes), *d = NULL;
  MT_CHECK(h != NULL, "out of memory");
  MT_OK(be->alloc(be, (void **)&d, bytes, "test gradient"));
  for (int64_t i = 0; i < n; i++) h[i] = (float)((r + 1) * (i % 7) + (i % 1000));
  if (n > 0) MT_OK(be->upload(be, d, h, (size_t)n * sizeof(float)));
  comm_stats_reset(c);
  /* twice with no host read in between (the second must see the first's result) */
  MT_OK(comm_grad_allreduce(g, d));
  MT_OK(comm_grad_allreduce(g, d));
  if (n > 0) MT_OK(be->download(be, h, d, (size_t)n * sizeof(float)));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double want = ((double)P * (P + 1) / 2 * (double)(i % 7) + (double)P * (double)(i % 1000)) * P;
    if (h[i] != want && bad++ == 0)
      fprintf(stderr, "[rank %d] %s/%s n=%lld: buf[%lld] = %.1f, expected %.1f\n", r, be->name,
              comm_path_name(comm_grad_path(g)), (long long)n, (long long)i, h[i], want);
  }
  MT_CHECK(bad == 0, "%lld wrong sums", (long long)bad);
  struct comm_stats s;
  comm_stats_get(c, &s);
  MT_CHECK(s.allreduce_bytes == 2 * n * 4 && s.allreduce_calls == 2,
           "all-reduce counters: %lld bytes in %lld calls, expected %lld in 2",
           (long long)s.allreduce_bytes, (long long)s.allreduce_calls, (long long)(2 * n * 4));
  uint64_t hash = fnv(0xCBF29CE484222325ull, h, (size_t)n);
  be->free(be, d);
  free(h);
  return hash;
}
