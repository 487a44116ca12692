/* mpi/tests/test_allreduce.c — gradient all-reduce and the small host collectives.
 *
 * Values are integers small enough that float/double sums are exact in any order,
 * so results are compared exactly. The gradient buffer is tested on the CPU
 * backend (in place) and on the fake device (staged through host memory).
 * The ordered algorithms (FLAT, HIER; mpi/allreduce.c) get values whose sum depends on
 * the order: both must give, bit for bit, the sum in the documented order (each
 * node's ranks in rank order, then the nodes), computed here from every rank's
 * values; and the bytes each sends within and between nodes must add up to the
 * modelled ones. Run on one node and on emulated nodes (even and uneven). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "fake_device.h"
#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

static void check_grad(struct comm *c, struct cg_backend *be, int64_t n) {
  int P = comm_size(c), r = comm_rank(c);
  struct comm_grad *g = NULL;
  MT_OK(comm_grad_create(c, be, n, &g));
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
  float *h = malloc(bytes), *d = NULL;
  MT_CHECK(h != NULL, "out of memory");
  MT_OK(be->alloc(be, (void **)&d, bytes, "test gradient"));
  for (int64_t i = 0; i < n; i++) h[i] = (float)((r + 1) * (i % 7) + (i % 1000));
  if (n > 0) MT_OK(be->upload(be, d, h, (size_t)n * sizeof(float)));
  comm_stats_reset(c);
  for (int rep = 0; rep < 2; rep++) {
    MT_OK(comm_grad_allreduce(g, d));
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
  struct comm_stats s;
  comm_stats_get(c, &s);
  MT_CHECK(s.allreduce_bytes == 2 * n * 4 && s.allreduce_calls == 2,
           "all-reduce counters: %lld bytes in %lld calls, expected %lld in 2",
           (long long)s.allreduce_bytes, (long long)s.allreduce_calls, (long long)(2 * n * 4));
  MT_CHECK(s.halo_fwd_bytes == 0 && s.halo_bwd_bytes == 0, "halo counters moved");
  be->free(be, d);
  free(h);
  comm_grad_destroy(&g);
  MT_CHECK(g == NULL, "destroy must clear the handle");
}


/* Rank r's value i: a float whose sum over ranks depends on the order of addition. */
static float val(int r, int64_t i) {
  const double u = (double)(((int64_t)r * 7919 + i * 104729) % 1000003) / 1000003.0;
  return (float)(u * ldexp(1.0, (int)(i % 17) - 8) * (r % 2 ? -1.0 : 1.0));
}

/* The documented order, from every rank's values (each rank can compute them all). */
static float want_sum(struct comm *c, int64_t i) {
  const int P = comm_size(c), N = comm_nnodes(c);
  float total = 0.0f;
  for (int j = 0; j < N; j++) {
    float p = 0.0f;
    int first = 1;
    for (int r = 0; r < P; r++)
      if (comm_node_of(c, r) == j) {
        p = first ? val(r, i) : p + val(r, i);
        first = 0;
      }
    total = j == 0 ? p : total + p;
  }
  return total;
}

static int64_t seg(int64_t n, int s, int k) { return n * k / s; }

static void check_ordered(struct comm *c, struct cg_backend *be, enum comm_allreduce algo, int64_t n) {
  const int P = comm_size(c), r = comm_rank(c), N = comm_nnodes(c);
  int even = 1;
  for (int j = 0; j < N; j++) {
    int cnt = 0;
    for (int q = 0; q < P; q++) cnt += comm_node_of(c, q) == j;
    even &= cnt == P / N && P % N == 0;
  }
  MT_OK(comm_set_allreduce(c, algo));
  struct comm_grad *g = NULL;
  const int st = comm_grad_create(c, be, n, &g);
  if (algo == COMM_ALLREDUCE_HIER && !even) {
    MT_CHECK(st == CG_ERR_UNSUPPORTED && g == NULL && strstr(cg_err_msg(), "same number of ranks"),
             "hier on uneven nodes: %d (%s)", st, cg_err_msg());
    cg_err_clear();
    MT_OK(comm_set_allreduce(c, COMM_ALLREDUCE_AUTO));
    return;
  }
  MT_OK(st);
  const enum comm_allreduce expect = algo != COMM_ALLREDUCE_AUTO ? algo
                                     : N > 1 && even          ? COMM_ALLREDUCE_HIER
                                                              : COMM_ALLREDUCE_MPI;
  MT_CHECK(comm_grad_algorithm(g) == expect, "%s resolved to %s, expected %s", comm_allreduce_name(algo),
           comm_allreduce_name(comm_grad_algorithm(g)), comm_allreduce_name(expect));
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
  float *h = malloc(bytes), *d = NULL;
  MT_CHECK(h != NULL, "out of memory");
  MT_OK(be->alloc(be, (void **)&d, bytes, "test gradient"));
  for (int64_t i = 0; i < n; i++) h[i] = val(r, i);
  if (n > 0) MT_OK(be->upload(be, d, h, (size_t)n * sizeof(float)));
  comm_stats_reset(c);
  MT_OK(comm_grad_allreduce(g, d));
  if (n > 0) MT_OK(be->download(be, h, d, (size_t)n * sizeof(float)));
  struct comm_stats s;
  comm_stats_get(c, &s);
  if (expect != COMM_ALLREDUCE_MPI) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
      const float w = want_sum(c, i);
      if (memcmp(&h[i], &w, sizeof w) != 0 && bad++ == 0)
        fprintf(stderr, "[rank %d] %s %s n=%lld: buf[%lld] = %.9g, the ordered sum is %.9g\n", r,
                comm_allreduce_name(expect), be->name, (long long)n, (long long)i, h[i], w);
    }
    MT_CHECK(bad == 0, "%lld sums not in the documented order", (long long)bad);
    /* bytes: this rank's, then the job's against the model */
    int64_t v[2] = {s.allreduce_intra_bytes, s.allreduce_inter_bytes};
    MT_OK(comm_allreduce_i64(c, v, 2, COMM_SUM));
    int64_t want_intra = 0, want_inter = 0;
    if (expect == COMM_ALLREDUCE_FLAT) {
      for (int q = 0; q < P; q++)
        for (int k = 0; k < P; k++) {
          if (k == q) continue;
          const int64_t b = (seg(n, P, k + 1) - seg(n, P, k)) + (seg(n, P, q + 1) - seg(n, P, q));
          if (comm_node_of(c, q) == comm_node_of(c, k)) want_intra += b;
          else want_inter += b;
        }
    } else {
      const int L = P / N;
      want_intra = 2 * (int64_t)N * n * (L - 1);
      want_inter = 2 * (int64_t)(N - 1) * n;
    }
    MT_CHECK(v[0] == want_intra * 4 && v[1] == want_inter * 4,
             "%s %s n=%lld bytes: %lld within nodes, %lld between, modelled %lld and %lld", comm_allreduce_name(expect),
             be->name, (long long)n,
             (long long)v[0], (long long)v[1], (long long)want_intra * 4, (long long)want_inter * 4);
  } else {
    MT_CHECK(s.allreduce_intra_bytes == 0 && s.allreduce_inter_bytes == 0,
             "MPI_Allreduce counted wire bytes (%lld, %lld)", (long long)s.allreduce_intra_bytes,
             (long long)s.allreduce_inter_bytes);
    for (int64_t i = 0; i < n; i++) /* the library's order: close, not the same bits */
      MT_CHECK(fabsf(h[i] - want_sum(c, i)) <= 1e-5f * (1.0f + fabsf(want_sum(c, i))),
               "MPI_Allreduce buf[%lld] = %g, expected about %g", (long long)i, h[i], want_sum(c, i));
  }
  be->free(be, d);
  free(h);
  comm_grad_destroy(&g);
  MT_OK(comm_set_allreduce(c, COMM_ALLREDUCE_AUTO));
}

static void check_host(struct comm *c) {
  int P = comm_size(c), r = comm_rank(c);
  double v[3] = {r + 0.5, -r, 2.0 * r};
  MT_OK(comm_allreduce_host(c, v, 3, COMM_SUM));
  MT_CHECK(v[0] == P * (P - 1) / 2.0 + 0.5 * P && v[1] == -P * (P - 1) / 2.0 &&
               v[2] == (double)P * (P - 1),
           "SUM gave %g %g %g", v[0], v[1], v[2]);
  double m[2] = {r * 1.5, -r * 1.5};
  MT_OK(comm_allreduce_host(c, m, 2, COMM_MAX));
  MT_CHECK(m[0] == (P - 1) * 1.5 && m[1] == 0.0, "MAX gave %g %g", m[0], m[1]);
  double n[2] = {r * 1.5, -r * 1.5};
  MT_OK(comm_allreduce_host(c, n, 2, COMM_MIN));
  MT_CHECK(n[0] == 0.0 && n[1] == -(P - 1) * 1.5, "MIN gave %g %g", n[0], n[1]);
  MT_CHECK(comm_allreduce_host(c, n, 2, (enum comm_op)7) == CG_ERR_ARG, "bad op accepted");

  int64_t big[3] = {((int64_t)1 << 40) + r, r, -r};
  MT_OK(comm_allreduce_i64(c, big, 1, COMM_SUM));
  MT_OK(comm_allreduce_i64(c, big + 1, 1, COMM_MAX));
  MT_OK(comm_allreduce_i64(c, big + 2, 1, COMM_MIN));
  MT_CHECK(big[0] == P * ((int64_t)1 << 40) + P * (P - 1) / 2 && big[1] == P - 1 && big[2] == 1 - P,
           "i64 reductions gave %lld %lld %lld", (long long)big[0], (long long)big[1],
           (long long)big[2]);

  int64_t *all = malloc(sizeof(int64_t) * (size_t)P);
  MT_CHECK(all != NULL, "out of memory");
  MT_OK(comm_allgather_i64(c, 1000 + 3 * (int64_t)r, all));
  for (int q = 0; q < P; q++)
    MT_CHECK(all[q] == 1000 + 3 * q, "allgather[%d] = %lld", q, (long long)all[q]);
  free(all);

  /* broadcast of a few MiB from the last rank */
  size_t nb = (size_t)3 << 20;
  unsigned char *b = malloc(nb);
  MT_CHECK(b != NULL, "out of memory");
  for (size_t i = 0; i < nb; i++) b[i] = r == P - 1 ? (unsigned char)(i * 31 + 7) : 0;
  MT_OK(comm_bcast(c, b, nb, P - 1));
  for (size_t i = 0; i < nb; i++)
    MT_CHECK(b[i] == (unsigned char)(i * 31 + 7), "bcast byte %zu = %u", i, b[i]);
  free(b);
  MT_CHECK(comm_bcast(c, &nb, sizeof nb, P) == CG_ERR_ARG, "bcast from a non-rank accepted");
  MT_OK(comm_barrier(c));
}

static void check_agree(struct comm *c) {
  int P = comm_size(c), r = comm_rank(c);
  MT_OK(comm_agree(c, CG_OK, "nothing"));
  if (P < 2) return;
  int mine = CG_OK;
  if (r == 1) mine = cg_err_set(CG_ERR_IO, "rank 1 could not read its file");
  int st = comm_agree(c, mine, "loading");
  MT_CHECK(st == CG_ERR_IO, "agree returned %d, expected %d", st, CG_ERR_IO);
  if (r == 1)
    MT_CHECK(strstr(cg_err_msg(), "could not read") != NULL, "own message lost: %s", cg_err_msg());
  else
    MT_CHECK(strstr(cg_err_msg(), "rank 1 failed during loading") != NULL, "message: %s",
             cg_err_msg());
  /* the others' message is a relay (a report leaves it out), rank 1's its own; an error
   * set afterwards is no relay */
  MT_CHECK(comm_err_is_relay(c) == (r != 1), "rank %d: comm_err_is_relay %d on '%s'", r, comm_err_is_relay(c),
           cg_err_msg());
  cg_err_set(CG_ERR_IO, "something else");
  MT_CHECK(!comm_err_is_relay(c), "rank %d: a later error taken for a relay", r);
  cg_err_clear();
  MT_CHECK(!comm_err_is_relay(c), "rank %d: no error taken for a relay", r);

  /* ranks disagreeing on the gradient size fail together */
  struct cg_backend *cpu = NULL;
  MT_OK(cg_backend_cpu_create(1, &cpu));
  struct comm_grad *g = NULL;
  st = comm_grad_create(c, cpu, r == 0 ? 11 : 10, &g);
  MT_CHECK(st == CG_ERR_ARG && g == NULL, "mismatched gradient sizes accepted (%d)", st);
  cg_err_clear();
  cg_backend_destroy(&cpu);
}

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  struct cg_backend *cpu = NULL, *dev = NULL;
  MT_OK(cg_backend_cpu_create(1, &cpu));
  MT_OK(fake_device_create(cpu, &dev));
  const int64_t sizes[] = {0, 1, 1000, 300007};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    check_grad(c, cpu, sizes[k]);
    check_grad(c, dev, sizes[k]);
  }
  const enum comm_allreduce algos[] = {COMM_ALLREDUCE_FLAT, COMM_ALLREDUCE_HIER, COMM_ALLREDUCE_AUTO,
                                       COMM_ALLREDUCE_MPI};
  const int64_t osizes[] = {0, 1, 5, 4099, 100003};
  for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++)
    for (size_t k = 0; k < sizeof osizes / sizeof osizes[0]; k++) {
      check_ordered(c, cpu, algos[a], osizes[k]);
      check_ordered(c, dev, algos[a], osizes[k]);
    }
  enum comm_allreduce parsed;
  MT_CHECK(comm_allreduce_parse("hier", &parsed) == CG_OK && parsed == COMM_ALLREDUCE_HIER, "parse hier");
  MT_CHECK(comm_allreduce_parse("ring", &parsed) == CG_ERR_ARG, "parse accepted 'ring'");
  cg_err_clear();
  check_host(c);
  check_agree(c);
  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (comm_rank(c) == 0) printf("test_allreduce: all checks passed on %d ranks\n", comm_size(c));
  comm_finalize(&mt_comm);
  return 0;
}
