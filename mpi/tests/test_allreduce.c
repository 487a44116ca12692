/* mpi/tests/test_allreduce.c — gradient all-reduce and the small host collectives.
 *
 * Values are integers small enough that float/double sums are exact in any order,
 * so results are compared exactly. The gradient buffer is tested on the CPU
 * backend (in place) and on the fake device (staged through host memory). */
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
  cg_err_clear();

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
  check_host(c);
  check_agree(c);
  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (comm_rank(c) == 0) printf("test_allreduce: all checks passed on %d ranks\n", comm_size(c));
  comm_finalize(&mt_comm);
  return 0;
}
