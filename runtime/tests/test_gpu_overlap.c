/* runtime/tests/test_gpu_overlap.c — partition-parallel training on the CUDA backend
 * with the halo exchange overlapped (issue #14), under mpiexec -n P.
 *
 * Per model (GCN 3 layers, GraphSAGE 2 layers, GAT 3 layers of 4 heads x 8 with 2 averaged
 * output heads and attention dropout; synth:small, hidden 32, dropout 0.5, 8
 * epochs) and per communication path (auto: NCCL when every rank has a GPU of its own,
 * else CUDA-aware MPI or pinned staging; then mpi-staged forced):
 *  - overlap on and off give the same bits: every epoch's loss, the first step's
 *    gradient and the final parameters (the split products run in the same order; on
 *    NCCL the transfer runs on the exchange's own stream, ordered by events);
 *  - the per-epoch losses are within 1e-4 relative of the same distributed run on the
 *    CPU backend (fp32 on both; the backends add in different orders).
 * Exit 77 (skipped) unless every rank sees a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "cuda/cuda_backend.h"
#include "mpi/comm.h"
#include "runtime/dist.h"
#include "runtime/runtime.h"

static struct comm *g_comm;

#define CHECK(cond, ...)                                                                         \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "[rank %d] FAIL %s:%d: %s: ", comm_rank(g_comm), __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fprintf(stderr, "\n");                                                                     \
      comm_abort(g_comm, 1);                                                                     \
    }                                                                                            \
  } while (0)
#define OK(expr)                                                                                   \
  do {                                                                                             \
    int ok_st_ = (expr);                                                                           \
    CHECK(ok_st_ >= 0, "%s returned %s: %s", #expr, cg_status_str(ok_st_), cg_err_msg());          \
  } while (0)

#define EPOCHS 8

struct out {
  double loss[EPOCHS];
  float *grads0, *params;
  int64_t n;
};

static void train(struct cg_backend *be, const struct rt_local *loc, struct cg_exchange *ex,
                  const struct rt_config *cfg, struct out *o) {
  struct rt_model *m = NULL;
  OK(rt_model_create(be, loc, cfg, ex, &m));
  o->n = rt_model_num_params(m);
  o->grads0 = malloc((size_t)o->n * sizeof(float));
  o->params = malloc((size_t)o->n * sizeof(float));
  CHECK(o->grads0 && o->params, "out of memory");
  double l0 = 0.0;
  OK(rt_model_loss_grad(m, 1, 1, &l0, NULL));
  OK(rt_model_grads_get(m, o->grads0));
  for (int e = 1; e <= EPOCHS; e++) {
    struct rt_step_stats st;
    OK(rt_model_step(m, (uint32_t)e, &st));
    o->loss[e - 1] = st.loss;
  }
  OK(rt_model_params_get(m, o->params));
  rt_model_destroy(&m);
}

static void out_free(struct out *o) {
  free(o->grads0);
  free(o->params);
  memset(o, 0, sizeof *o);
}

/* A distributed run of cfg on a fresh partition set-up and exchange over `be`: with
 * overlap on, and (when `off` is given) again with overlap off on the same exchange. */
static void dist_run(struct cg_backend *be, struct rt_config cfg, struct out *on, struct out *off) {
  struct rt_dist_options o;
  rt_dist_options_defaults(&o);
  o.use_cache = 0;
  struct rt_dist *d = NULL;
  struct cg_exchange *ex = NULL;
  OK(rt_dist_create(g_comm, &cfg, &o, &d));
  OK(rt_dist_bind(d, be, &cfg, &ex));
  cfg.overlap = 1;
  train(be, rt_dist_local(d), ex, &cfg, on);
  if (off) {
    cfg.overlap = 0;
    train(be, rt_dist_local(d), ex, &cfg, off);
  }
  rt_dist_destroy(&d);
}

static void same_bits(const struct out *a, const struct out *b, const char *what) {
  CHECK(a->n == b->n, "%s: %lld vs %lld parameters", what, (long long)a->n, (long long)b->n);
  for (int e = 0; e < EPOCHS; e++)
    CHECK(memcmp(&a->loss[e], &b->loss[e], sizeof(double)) == 0, "%s: epoch %d loss %.17g on, %.17g off",
          what, e + 1, a->loss[e], b->loss[e]);
  CHECK(memcmp(a->grads0, b->grads0, (size_t)a->n * sizeof(float)) == 0, "%s: first-step gradients differ", what);
  CHECK(memcmp(a->params, b->params, (size_t)a->n * sizeof(float)) == 0, "%s: parameters differ", what);
}

int main(int argc, char **argv) {
  OK(comm_init(&argc, &argv, &g_comm));
  cg_log_set_level(CG_LOG_WARN);
  int64_t have = cg_cuda_device_count() > 0;
  OK(comm_allreduce_i64(g_comm, &have, 1, COMM_MIN));
  if (!have) {
    if (comm_rank(g_comm) == 0) printf("not every rank sees a CUDA device: skipped\n");
    comm_finalize(&g_comm);
    return 77;
  }
  int ordinal = 0;
  OK(comm_gpu_bind(g_comm, &ordinal));
  struct cg_backend *cpu = NULL, *gpu = NULL;
  OK(cg_backend_cpu_create(1, &cpu));
  OK(rt_backend_open_ordinal("train", "cuda", 0, 0, ordinal, &gpu));
  const enum rt_model_kind kinds[3] = {RT_MODEL_GCN, RT_MODEL_SAGE, RT_MODEL_GAT};
  const int layers[3] = {3, 2, 3};
  for (int k = 0; k < 3; k++) {
    struct rt_config cfg;
    rt_config_defaults(&cfg);
    cfg.graph = "synth:small";
    cfg.model = kinds[k];
    cfg.layers = layers[k];
    cfg.hidden = 32;
    if (cfg.model == RT_MODEL_GAT) {
      cfg.hidden = 8;
      cfg.heads = 4;
      cfg.out_heads = 2;
    }
    cfg.dropout = 0.5f;
    cfg.epochs = EPOCHS;
    cfg.quiet = 1;
    cfg.seed = 1;
    cfg.device = "cpu";
    struct out ref;
    memset(&ref, 0, sizeof ref);
    dist_run(cpu, cfg, &ref, NULL);
    cfg.device = "cuda";
    const enum comm_path paths[2] = {COMM_PATH_AUTO, COMM_PATH_MPI_STAGED};
    for (int p = 0; p < 2; p++) {
      OK(comm_set_path(g_comm, paths[p]));
      enum comm_path used = COMM_PATH_AUTO;
      OK(comm_path_resolve(g_comm, gpu, &used));
      struct out on, off;
      memset(&on, 0, sizeof on);
      memset(&off, 0, sizeof off);
      dist_run(gpu, cfg, &on, &off);
      char what[96];
      snprintf(what, sizeof what, "%s, %s", rt_model_kind_str(cfg.model), comm_path_name(used));
      same_bits(&on, &off, what);
      double worst = 0.0;
      for (int e = 0; e < EPOCHS; e++) {
        double r = fabs(on.loss[e] - ref.loss[e]) / fabs(ref.loss[e]);
        if (r > worst) worst = r;
      }
      if (comm_rank(g_comm) == 0)
        printf("  %s on %d ranks: overlap on == off bit for bit; worst loss difference to the CPU "
               "run %.3g relative (tolerance 1e-4)\n", what, comm_size(g_comm), worst);
      CHECK(worst <= 1e-4, "%s: losses differ from the CPU run by %.3g relative", what, worst);
      out_free(&on);
      out_free(&off);
    }
    OK(comm_set_path(g_comm, COMM_PATH_AUTO));
    out_free(&ref);
  }
  cg_backend_destroy(&gpu);
  cg_backend_destroy(&cpu);
  comm_finalize(&g_comm);
  return 0;
}
