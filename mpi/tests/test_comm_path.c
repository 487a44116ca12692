/* mpi/tests/test_comm_path.c — choosing the communication path, on any machine.
 *
 * No GPU needed: the CPU backend and the fake device (a wrapped device backend,
 * fake_device.h) cover the host and pageable-staged paths and every refusal:
 *  - path names and the --comm parser; comm_set_path refuses "host" and junk;
 *  - CPU backend: host, whatever was requested; fake device: mpi-staged (auto or
 *    forced), while nccl and mpi-cuda fail on every rank with CG_ERR_UNSUPPORTED and
 *    a message that says why;
 *  - ranks requesting different paths fail together (CG_ERR_ARG on every rank);
 *  - a job that mixes CPU and device ranks exchanges halos and all-reduces exactly
 *    like an all-CPU job (same values bit for bit), with the neighbourhood collective
 *    and with point-to-point calls (CAPGNN_HALO_P2P=1 is set by the test registration
 *    for one run; this test reports which it ran);
 *  - comm_gpu_bind: CG_ERR_UNSUPPORTED without CUDA in the build, CG_ERR_NOT_FOUND on
 *    every rank when no GPU is visible, success (and a sane share count) with one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "fake_device.h"
#include "halo_check.h"
#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

static void check_names(void) {
  const enum comm_path all[] = {COMM_PATH_AUTO, COMM_PATH_NCCL, COMM_PATH_MPI_CUDA,
                                COMM_PATH_MPI_STAGED};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    enum comm_path p = COMM_PATH_HOST;
    MT_OK(comm_path_parse(comm_path_name(all[i]), &p));
    MT_CHECK(p == all[i], "parse(name(%d)) gave %d", (int)all[i], (int)p);
  }
  MT_CHECK(strcmp(comm_path_name(COMM_PATH_HOST), "host") == 0, "host name");
  MT_CHECK(strcmp(comm_path_name((enum comm_path)42), "?") == 0, "unknown name");
  enum comm_path p = COMM_PATH_AUTO;
  const char *bad[] = {"host", "NCCL", "", "mpi", "mpi-staged ", NULL};
  for (int i = 0; i < 6; i++) {
    MT_CHECK(comm_path_parse(bad[i], &p) == CG_ERR_ARG, "'%s' parsed", bad[i] ? bad[i] : "NULL");
    MT_CHECK(strstr(cg_err_msg(), "mpi-staged") != NULL, "message lists the choices: %s",
             cg_err_msg());
  }
  cg_err_clear();
  MT_CHECK(comm_set_path(mt_comm, COMM_PATH_HOST) == CG_ERR_ARG, "host accepted as a request");
  MT_CHECK(comm_set_path(mt_comm, (enum comm_path)9) == CG_ERR_ARG, "junk accepted");
  MT_CHECK(comm_get_path(mt_comm) == COMM_PATH_AUTO, "a refused request changed the path");
  cg_err_clear();
}

/* One halo plan and one gradient buffer over be with the current request: the
 * create calls must succeed with `want`, or fail with `fail_status` on every rank
 * (the message containing `fail_text` on ranks where `culprit` is set). */
static void expect_path(struct comm *c, struct cg_backend *be, enum comm_path want, int fail_status,
                        int culprit, const char *fail_text) {
  struct hc_case k;
  struct fx_opts o = {.seed = 5, .n = 120, .avg_deg = 3};
  hc_case_make(&k, c, &o);
  struct comm_halo *h = NULL;
  struct comm_grad *g = NULL;
  enum comm_path got = COMM_PATH_AUTO;
  int st[3] = {comm_path_resolve(c, be, &got), comm_halo_create(c, be, &k.l.plan, 8, &h),
               comm_grad_create(c, be, 10, &g)};
  for (int i = 0; i < 3; i++) {
    if (fail_status == 0) {
      MT_OK(st[i]);
      continue;
    }
    MT_CHECK(st[i] == fail_status, "call %d returned %d, expected %d (%s)", i, st[i], fail_status,
             cg_err_msg());
  }
  if (fail_status == 0) {
    MT_CHECK(got == want && comm_halo_path(h) == want && comm_grad_path(g) == want,
             "backend %s, request %s: paths %s / %s / %s, expected %s", be->name,
             comm_path_name(comm_get_path(c)), comm_path_name(got),
             comm_path_name(comm_halo_path(h)), comm_path_name(comm_grad_path(g)),
             comm_path_name(want));
  } else {
    MT_CHECK(h == NULL && g == NULL, "a refused create returned an object");
    if (culprit)
      MT_CHECK(strstr(cg_err_msg(), fail_text) != NULL, "message '%s' lacks '%s'", cg_err_msg(),
               fail_text);
    cg_err_clear();
  }
  comm_halo_destroy(&h);
  comm_grad_destroy(&g);
  hc_case_free(&k);
}

/* Halo and gradient results over (per rank) backend be must hash like the all-CPU run. */
static void mixed_run(struct comm *c, struct cg_backend *be, const uint64_t *ref, int nref,
                      const char *what) {
  const struct fx_opts configs[] = {{.seed = 1, .n = 240, .avg_deg = 4},
                                    {.seed = 4, .n = 200, .avg_deg = 3, .all_peers = 1}};
  const int64_t widths[] = {1, 9};
  int i = 0;
  for (int kc = 0; kc < 2; kc++) {
    struct hc_case k;
    hc_case_make(&k, c, &configs[kc]);
    struct comm_halo *h = NULL;
    MT_OK(comm_halo_create(c, be, &k.l.plan, 9, &h));
    for (int w = 0; w < 2; w++, i++) {
      uint64_t hash = hc_halo_workout(&k, be, h, widths[w], 100 + (uint64_t)i);
      if (ref)
        MT_CHECK(i < nref && hash == ref[i], "%s: halo results differ from the CPU run", what);
    }
    comm_halo_destroy(&h);
    hc_case_free(&k);
  }
  struct comm_grad *g = NULL;
  MT_OK(comm_grad_create(c, be, 5003, &g));
  uint64_t hash = hc_grad_workout(c, be, g, 5003);
  if (ref) MT_CHECK(i < nref && hash == ref[i], "%s: all-reduce results differ", what);
  comm_grad_destroy(&g);
  if (comm_rank(c) == 0 && ref) printf("ok: %s gives the all-CPU results bit for bit\n", what);
}

static uint64_t ref_hashes[8];

static void ref_run(struct comm *c, struct cg_backend *cpu) {
  const struct fx_opts configs[] = {{.seed = 1, .n = 240, .avg_deg = 4},
                                    {.seed = 4, .n = 200, .avg_deg = 3, .all_peers = 1}};
  const int64_t widths[] = {1, 9};
  int i = 0;
  for (int kc = 0; kc < 2; kc++) {
    struct hc_case k;
    hc_case_make(&k, c, &configs[kc]);
    struct comm_halo *h = NULL;
    MT_OK(comm_halo_create(c, cpu, &k.l.plan, 9, &h));
    for (int w = 0; w < 2; w++, i++)
      ref_hashes[i] = hc_halo_workout(&k, cpu, h, widths[w], 100 + (uint64_t)i);
    comm_halo_destroy(&h);
    hc_case_free(&k);
  }
  struct comm_grad *g = NULL;
  MT_OK(comm_grad_create(c, cpu, 5003, &g));
  ref_hashes[i] = hc_grad_workout(c, cpu, g, 5003);
  comm_grad_destroy(&g);
}

static void check_bind(struct comm *c) {
  int ord = 123;
  int st = comm_gpu_bind(c, &ord);
  int r = comm_rank(c);
  if (st == CG_OK) {
    MT_CHECK(ord >= 0 && comm_gpu_share(c) >= 1 && comm_gpu_share(c) <= comm_host_local_size(c),
             "bound to %d, share %d", ord, comm_gpu_share(c));
    if (r == 0) printf("ok: comm_gpu_bind bound rank 0 to GPU %d\n", ord);
    return;
  }
  MT_CHECK(ord == -1 && comm_gpu_share(c) == 0, "a failed bind left ordinal %d share %d", ord,
           comm_gpu_share(c));
  MT_CHECK(st == CG_ERR_UNSUPPORTED || st == CG_ERR_NOT_FOUND, "comm_gpu_bind returned %d: %s", st,
           cg_err_msg());
  if (r == 0) printf("ok: comm_gpu_bind fails cleanly here (%s)\n", cg_err_msg());
  /* every rank must have failed: a collective after it must not hang or mismatch */
  int64_t fails = 1;
  MT_OK(comm_allreduce_i64(c, &fails, 1, COMM_SUM));
  MT_CHECK(fails == comm_size(c), "only %lld ranks ran", (long long)fails);
  cg_err_clear();
}

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  int P = comm_size(c), r = comm_rank(c);
  struct cg_backend *cpu = NULL, *dev = NULL;
  MT_OK(cg_backend_cpu_create(1, &cpu));
  MT_OK(fake_device_create(cpu, &dev));
  const char *p2p = getenv("CAPGNN_HALO_P2P");
  if (r == 0)
    printf("halo mechanism: %s\n", p2p && strcmp(p2p, "1") == 0
                                       ? "point-to-point (CAPGNN_HALO_P2P=1)"
                                       : "neighbourhood collective");

  check_names();

  /* CPU: host whatever is asked */
  const enum comm_path reqs[] = {COMM_PATH_AUTO, COMM_PATH_NCCL, COMM_PATH_MPI_CUDA,
                                 COMM_PATH_MPI_STAGED};
  for (int i = 0; i < 4; i++) {
    MT_OK(comm_set_path(c, reqs[i]));
    expect_path(c, cpu, COMM_PATH_HOST, 0, 0, NULL);
  }
  /* wrapped device: staged through its own copies; nccl and mpi-cuda refused */
  MT_OK(comm_set_path(c, COMM_PATH_AUTO));
  expect_path(c, dev, COMM_PATH_MPI_STAGED, 0, 0, NULL);
  MT_OK(comm_set_path(c, COMM_PATH_MPI_STAGED));
  expect_path(c, dev, COMM_PATH_MPI_STAGED, 0, 0, NULL);
  MT_OK(comm_set_path(c, COMM_PATH_NCCL));
  expect_path(c, dev, COMM_PATH_AUTO, CG_ERR_UNSUPPORTED, 1, "--comm nccl");
  MT_OK(comm_set_path(c, COMM_PATH_MPI_CUDA));
  expect_path(c, dev, COMM_PATH_AUTO, CG_ERR_UNSUPPORTED, 1, "cannot go to MPI");
  if (r == 0) printf("ok: host for the CPU backend, mpi-staged for a wrapped device, refusals\n");

  /* disagreeing requests fail on every rank */
  if (P > 1) {
    MT_OK(comm_set_path(c, r == P - 1 ? COMM_PATH_MPI_STAGED : COMM_PATH_AUTO));
    expect_path(c, cpu, COMM_PATH_AUTO, CG_ERR_ARG, 1, "ranks request different");
    if (r == 0) printf("ok: ranks requesting different paths fail together\n");
  }
  MT_OK(comm_set_path(c, COMM_PATH_AUTO));

  /* mixed job: even ranks on the CPU, odd ranks on the fake device */
  ref_run(c, cpu);
  mixed_run(c, r % 2 ? dev : cpu, ref_hashes, 8, "a job mixing CPU and staged device ranks");
  mixed_run(c, dev, ref_hashes, 8, "an all-device (staged) job");

  check_bind(c);

  cg_backend_destroy(&dev);
  cg_backend_destroy(&cpu);
  if (r == 0) printf("test_comm_path: all checks passed on %d ranks\n", P);
  comm_finalize(&mt_comm);
  return 0;
}
