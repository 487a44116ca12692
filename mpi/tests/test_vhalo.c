/* mpi/tests/test_vhalo.c — the variable-length halo exchange (comm_vhalo): each rank
 * sends each peer the rows it picks, the peer gets exactly those, in their places, and
 * learns which.
 *
 * Every rank exchanges with every other: towards q it may send 3 + (r + q) mod 4 rows
 * (so the plans agree). Round k picks row i of the block r -> q by a hash of (r, q, i, k),
 * some rounds every row of a block (the whole-block message) or none; a row's value
 * encodes (sender, receiver, position, round, column). The receiver checks its got flags
 * against the same hash, every received row value by value, that rows not received were
 * not written, and that the bytes sent are the model's (rows, plus 4-byte positions
 * beside partial blocks), in comm_stats' forward counters, and after comm_vhalo_count_as
 * (gradients) in the backward ones. One round is completed through comm_vhalo_progress. A plan
 * whose counts disagree with a peer's must fail on every rank. */
#include <stdlib.h>
#include <string.h>

#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

static uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int64_t block(int r, int q) { return 3 + (r + q) % 4; }
/* round k: 0 none, 1 all, else by hash */
static int picked(int r, int q, int64_t i, int k) {
  const int mode = (int)(mix((uint64_t)(r * 64 + q) * 16 + (uint64_t)k) % 5);
  if (mode == 0) return 0;
  if (mode == 1) return 1;
  return mix(((uint64_t)(r * 64 + q) * 64 + (uint64_t)i) * 16 + (uint64_t)k) % 3 != 0;
}
static float val(int r, int q, int64_t i, int k, int64_t j) {
  return (float)((((r * 8 + q) * 8 + i) * 16 + k) * 8 + j);
}

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  const int P = comm_size(c), me = comm_rank(c);
  const int np = P - 1;
  int32_t *peer = malloc(sizeof(int32_t) * (size_t)(np > 0 ? np : 1));
  int64_t *so = malloc(sizeof(int64_t) * (size_t)(np > 0 ? np : 1)), *sc = malloc(sizeof(int64_t) * (size_t)(np > 0 ? np : 1));
  int64_t *ro = malloc(sizeof(int64_t) * (size_t)(np > 0 ? np : 1)), *rc = malloc(sizeof(int64_t) * (size_t)(np > 0 ? np : 1));
  MT_CHECK(peer && so && sc && ro && rc, "out of memory");
  int64_t ns = 0, nr = 0;
  for (int q = 0, k = 0; q < P; q++) {
    if (q == me) continue;
    peer[k] = q;
    so[k] = ns;
    sc[k] = block(me, q);
    ro[k] = nr;
    rc[k] = block(q, me);
    ns += sc[k];
    nr += rc[k];
    k++;
  }
  struct comm_halo_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.npeers = np;
  plan.peer = peer;
  plan.send_offset = so;
  plan.send_count = sc;
  plan.recv_offset = ro;
  plan.recv_count = rc;
  const int64_t MAXC = 5;
  struct comm_vhalo *h = NULL;
  MT_OK(comm_vhalo_create(c, &plan, MAXC, &h));
  MT_CHECK(comm_vhalo_send_rows(h) == ns && comm_vhalo_recv_rows(h) == nr, "rows %lld / %lld",
           (long long)comm_vhalo_send_rows(h), (long long)comm_vhalo_recv_rows(h));
  float *rows = malloc(sizeof(float) * (size_t)((ns > 0 ? ns : 1) * MAXC));
  float *recv = malloc(sizeof(float) * (size_t)((nr > 0 ? nr : 1) * MAXC));
  unsigned char *sel = malloc((size_t)(ns > 0 ? ns : 1)), *got = malloc((size_t)(nr > 0 ? nr : 1));
  MT_CHECK(rows && recv && sel && got, "out of memory");
  int64_t want_bytes = 0, partial = 0, whole = 0, empty = 0, fwd_bytes = 0;
  comm_stats_reset(c);
  for (int k = 0; k < 12; k++) {
    const int64_t cols = k % 2 ? 3 : MAXC;
    if (k == 8) { /* from here the rows stand for gradients going back to their owners */
      fwd_bytes = want_bytes;
      comm_vhalo_count_as(h, CG_HALO_BACKWARD);
    }
    for (int b = 0; b < np; b++) {
      int64_t n = 0;
      for (int64_t i = 0; i < sc[b]; i++) {
        sel[so[b] + i] = (unsigned char)picked(me, peer[b], i, k);
        n += sel[so[b] + i];
        for (int64_t j = 0; j < cols; j++) rows[(so[b] + i) * cols + j] = val(me, peer[b], i, k, j);
      }
      want_bytes += n * cols * 4 + (n < sc[b] ? n * 4 : 0);
      partial += n > 0 && n < sc[b];
      whole += n == sc[b];
      empty += n == 0;
    }
    for (int64_t x = 0; x < nr * cols; x++) recv[x] = -1.0f;
    memset(got, 7, (size_t)(nr > 0 ? nr : 1));
    MT_OK(comm_vhalo_begin(h, rows, sel, cols));
    if (k == 5)
      while (1) {
        const int st = comm_vhalo_progress(h);
        MT_CHECK(st >= 0, "progress: %s", cg_err_msg());
        if (st == 1) break;
      }
    int64_t n = -1;
    MT_OK(comm_vhalo_end(h, recv, got, cols, &n));
    int64_t cnt = 0;
    for (int b = 0; b < np; b++)
      for (int64_t i = 0; i < rc[b]; i++) {
        const int want = picked(peer[b], me, i, k);
        MT_CHECK(got[ro[b] + i] == want, "round %d: row %lld from rank %d: got %d, expected %d", k, (long long)i,
                 peer[b], got[ro[b] + i], want);
        cnt += want;
        for (int64_t j = 0; j < cols; j++) {
          const float v = recv[(ro[b] + i) * cols + j], w = want ? val(peer[b], me, i, k, j) : -1.0f;
          MT_CHECK(v == w, "round %d: row %lld from rank %d col %lld holds %.0f, expected %.0f", k, (long long)i,
                   peer[b], (long long)j, (double)v, (double)w);
        }
      }
    MT_CHECK(n == cnt, "round %d: %lld rows received, expected %lld", k, (long long)n, (long long)cnt);
  }
  MT_CHECK(comm_vhalo_bytes_sent(h) == want_bytes, "%lld bytes sent, expected %lld",
           (long long)comm_vhalo_bytes_sent(h), (long long)want_bytes);
  struct comm_stats s;
  comm_stats_get(c, &s);
  MT_CHECK(s.halo_fwd_bytes == fwd_bytes && s.halo_bwd_bytes == want_bytes - fwd_bytes && s.halo_fwd_calls == 8 &&
               s.halo_bwd_calls == 4 && s.halo_intra_bytes + s.halo_inter_bytes == want_bytes,
           "comm_stats: forward %lld bytes in %lld calls, backward %lld in %lld (expected %lld in 8, %lld in 4)",
           (long long)s.halo_fwd_bytes, (long long)s.halo_fwd_calls, (long long)s.halo_bwd_bytes,
           (long long)s.halo_bwd_calls, (long long)fwd_bytes, (long long)(want_bytes - fwd_bytes));
  int64_t kinds[3] = {partial, whole, empty};
  MT_OK(comm_allreduce_i64(c, kinds, 3, COMM_SUM));
  if (P > 1) MT_CHECK(kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 0, "rounds lack a kind of block");
  comm_vhalo_destroy(&h);
  MT_CHECK(h == NULL, "destroy must clear the handle");
  /* a plan whose counts disagree with its peer's: refused on every rank */
  if (P > 1) {
    if (me == 0) sc[0]++;
    MT_CHECK(comm_vhalo_create(c, &plan, MAXC, &h) == CG_ERR_ARG && h == NULL, "disagreeing counts must be refused");
    cg_err_clear();
  }
  if (me == 0) printf("test_vhalo: ok on %d ranks (%lld partial, %lld whole, %lld empty blocks)\n", P,
                      (long long)kinds[0], (long long)kinds[1], (long long)kinds[2]);
  free(rows);
  free(recv);
  free(sel);
  free(got);
  free(peer);
  free(so);
  free(sc);
  free(ro);
  free(rc);
  comm_finalize(&mt_comm);
  return 0;
}
