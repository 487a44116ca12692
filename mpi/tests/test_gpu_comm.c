/* mpi/tests/test_gpu_comm.c — halo exchange and gradient all-reduce on the CUDA
 * backend over every communication path, bit for bit against the CPU backend.
 *
 * Needs a GPU (exit 77, skipped, without one or without CUDA in the build). Binds
 * each rank with comm_gpu_bind (checks the ordinal rule and the share count), runs
 * the halo_check.h workouts (4 graph shapes x 3 widths: forward, backward, back to
 * back without host synchronisation) and the all-reduce workout on the CPU backend,
 * then on the CUDA backend for each path: mpi-staged (always), mpi-cuda (skipped,
 * with the reason, where MPI is not CUDA-aware: the request must then be refused on
 * every rank), nccl (only with one rank per GPU; where ranks share a GPU, or the
 * build has no NCCL, the request must be refused cleanly on every rank) and auto
 * (which must pick nccl, else mpi-cuda, else mpi-staged). Every value is checked
 * against the expected one and the hashes of all values read back must equal the
 * CPU run's. With 2+ ranks, a job mixing a CPU rank with CUDA ranks runs too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "halo_check.h"
#include "mpi/comm.h"
#include "mpi_test.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

struct comm *mt_comm;

#ifdef CAPGNN_HAVE_CUDA

#define NCONF 4
#define NWIDTH 3
#define NGRAD 4
static const struct fx_opts configs[NCONF] = {
    {.seed = 1, .n = 240, .avg_deg = 4},
    {.seed = 2, .n = 300, .avg_deg = 2, .last_rank_empty = 1},
    {.seed = 3, .n = 50, .avg_deg = 0},
    {.seed = 4, .n = 200, .avg_deg = 3, .all_peers = 1},
};
static const int64_t widths[NWIDTH] = {1, 5, 64};
static const int64_t grad_sizes[NGRAD] = {0, 1, 1000, 300007};

struct hashes {
  uint64_t halo[NCONF][NWIDTH];
  uint64_t grad[NGRAD];
};

/* All workouts over be with the current request; every object must use `want`. */
static void run_all(struct comm *c, struct cg_backend *be, enum comm_path want, struct hashes *out,
                    const struct hashes *ref, const char *what) {
  for (int kc = 0; kc < NCONF; kc++) {
    struct hc_case k;
    hc_case_make(&k, c, &configs[kc]);
    struct comm_halo *h = NULL;
    MT_OK(comm_halo_create(c, be, &k.l.plan, widths[NWIDTH - 1], &h));
    MT_CHECK(comm_halo_path(h) == want, "%s: halo path %s, expected %s", what,
             comm_path_name(comm_halo_path(h)), comm_path_name(want));
    for (int w = 0; w < NWIDTH; w++) {
      uint64_t hash =
          hc_halo_workout(&k, be, h, widths[w], 1000 + 10 * (uint64_t)(kc * NWIDTH + w));
      out->halo[kc][w] = hash;
      if (ref)
        MT_CHECK(hash == ref->halo[kc][w], "%s: graph %d width %lld differs from the CPU run", what,
                 kc, (long long)widths[w]);
    }
    comm_halo_destroy(&h);
    hc_case_free(&k);
  }
  for (int i = 0; i < NGRAD; i++) {
    struct comm_grad *g = NULL;
    MT_OK(comm_grad_create(c, be, grad_sizes[i], &g));
    MT_CHECK(comm_grad_path(g) == want, "%s: all-reduce path %s, expected %s", what,
             comm_path_name(comm_grad_path(g)), comm_path_name(want));
    out->grad[i] = hc_grad_workout(c, be, g, grad_sizes[i]);
    if (ref)
      MT_CHECK(out->grad[i] == ref->grad[i], "%s: all-reduce of %lld values differs from the CPU",
               what, (long long)grad_sizes[i]);
    comm_grad_destroy(&g);
  }
  if (comm_rank(c) == 0 && ref)
    printf("ok: %s: %d graphs x %d widths and %d all-reduces identical to the CPU backend\n", what,
           NCONF, NWIDTH, NGRAD);
}

/* The request must be refused on every rank with CG_ERR_UNSUPPORTED and `text`. */
static void expect_refused(struct comm *c, struct cg_backend *be, int st, const char *text) {
  MT_CHECK(st == CG_ERR_UNSUPPORTED && strstr(cg_err_msg(), text) != NULL,
           "expected a refusal mentioning '%s', got %d: %s", text, st, cg_err_msg());
  cg_err_clear();
  struct comm_grad *g = NULL;
  st = comm_grad_create(c, be, 16, &g);
  MT_CHECK(st == CG_ERR_UNSUPPORTED && g == NULL, "comm_grad_create was not refused (%d)", st);
  cg_err_clear();
}

static int run_gpu(struct comm *c, int ndev) {
  int r = comm_rank(c);
  int ord = -1;
  MT_OK(comm_gpu_bind(c, &ord));
  MT_CHECK(ord == comm_host_local_rank(c) % ndev, "bound to %d, expected host-local rank %d mod %d",
           ord, comm_host_local_rank(c), ndev);
  /* with the same devices visible to every rank of the host */
  int want_share = 0;
  for (int q = 0; q < comm_host_local_size(c); q++) want_share += q % ndev == ord;
  MT_CHECK(comm_gpu_share(c) == want_share, "share %d, expected %d", comm_gpu_share(c), want_share);
  int64_t maxshare = comm_gpu_share(c);
  MT_OK(comm_allreduce_i64(c, &maxshare, 1, COMM_MAX));

  struct cg_backend *cpu = NULL, *gpu = NULL;
  MT_OK(cg_backend_cpu_create(1, &cpu));
  MT_OK(cg_backend_cuda_create(ord, 0, &gpu));
  MT_CHECK(cg_cuda_is_backend(gpu) && !cg_cuda_is_backend(cpu), "cg_cuda_is_backend");

  static struct hashes ref, got;
  MT_OK(comm_set_path(c, COMM_PATH_AUTO));
  run_all(c, cpu, COMM_PATH_HOST, &ref, NULL, "cpu");

  int aware = 0, nccl = 0;
  const enum comm_path paths[] = {COMM_PATH_MPI_STAGED, COMM_PATH_MPI_CUDA, COMM_PATH_NCCL,
                                  COMM_PATH_AUTO};
  for (int i = 0; i < 4; i++) {
    enum comm_path p = paths[i], res = COMM_PATH_AUTO;
    MT_OK(comm_set_path(c, p));
    int st = comm_path_resolve(c, gpu, &res);
    if (p == COMM_PATH_MPI_CUDA && st == CG_ERR_UNSUPPORTED) {
      if (r == 0) printf("skipped mpi-cuda: %s\n", cg_err_msg());
      expect_refused(c, gpu, st, "not CUDA-aware");
      continue;
    }
    if (p == COMM_PATH_MPI_CUDA) aware = 1;
    if (p == COMM_PATH_NCCL) {
#ifndef CAPGNN_HAVE_NCCL
      if (r == 0) printf("skipped nccl: %s\n", cg_err_msg());
      expect_refused(c, gpu, st, "no NCCL");
      continue;
#else
      if (maxshare > 1) {
        if (r == 0) printf("ok: nccl refused cleanly, ranks share a GPU: %s\n", cg_err_msg());
        expect_refused(c, gpu, st, "share a GPU");
        continue;
      }
      nccl = 1;
#endif
    }
    MT_OK(st);
    enum comm_path want = p != COMM_PATH_AUTO ? p
                          : nccl              ? COMM_PATH_NCCL
                          : aware             ? COMM_PATH_MPI_CUDA
                                              : COMM_PATH_MPI_STAGED;
    MT_CHECK(res == want, "request %s resolved to %s, expected %s", comm_path_name(p),
             comm_path_name(res), comm_path_name(want));
    char what[64];
    snprintf(what, sizeof what, "cuda over %s%s", comm_path_name(res),
             p == COMM_PATH_AUTO ? " (auto)" : "");
    run_all(c, gpu, want, &got, &ref, what);
  }

  /* a CPU rank among CUDA ranks: auto cannot use NCCL; the MPI paths must match */
  if (comm_size(c) > 1) {
    MT_OK(comm_set_path(c, COMM_PATH_AUTO));
    struct cg_backend *mine = r == 0 ? cpu : gpu;
    enum comm_path want = r == 0  ? COMM_PATH_HOST
                          : aware ? COMM_PATH_MPI_CUDA
                                  : COMM_PATH_MPI_STAGED;
    run_all(c, mine, want, &got, &ref, "rank 0 on the CPU, the others on CUDA (auto)");
  }
  cg_backend_destroy(&gpu);
  cg_backend_destroy(&cpu);
  return 0;
}

#endif /* CAPGNN_HAVE_CUDA */

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  int r = comm_rank(c), rc = 0;
#ifndef CAPGNN_HAVE_CUDA
  int ord = 0;
  MT_CHECK(comm_gpu_bind(c, &ord) == CG_ERR_UNSUPPORTED && ord == -1,
           "comm_gpu_bind without CUDA must be refused");
  if (r == 0) printf("skipped: this build has no CUDA backend\n");
  rc = 77;
#else
  int64_t ndev = cg_cuda_device_count();
  MT_OK(comm_allreduce_i64(c, &ndev, 1, COMM_MIN));
  if (ndev == 0) {
    if (r == 0) printf("skipped: no CUDA device visible on every rank\n");
    rc = 77;
  } else {
    rc = run_gpu(c, cg_cuda_device_count());
    if (r == 0) printf("test_gpu_comm: all checks passed on %d ranks\n", comm_size(c));
  }
#endif
  comm_finalize(&mt_comm);
  return rc;
}
