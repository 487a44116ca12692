/* jaca/tests/test_jaca_gpu.c — the caching exchange on the CUDA backend against the
 * CPU cache: the rank tier in device memory, and the prefetch on its own stream with
 * pinned staging (issue #13 item 3), under mpiexec -n P.
 *
 * Every rank builds synth:small with random owners and its local graph. Per
 * configuration (policy jaca; node-tier capacity 100 % and 10 % (rows no tier holds
 * travel directly into the rank tier); staleness 0 and 2) the same sequence runs three
 * times: on the CPU backend with prefetch on, on the CUDA backend with prefetch on (the
 * thread's uploads on the exchange's upload channel, end's join) and off (every row
 * uploaded in end). A sequence is E epochs x layers 1..2 of forward exchanges; between
 * begin and end the backend computes (GEMMs on its stream, which the uploads must not
 * wait for and the end's gather must wait for), and a barrier follows every end (the
 * gradient all-reduce of training). Inner row (global id g) of layer l at epoch e holds
 * val(g, e, l, j), arbitrary float bits; every halo row after each end must hold
 * val(g, e', l, j) for the epoch e' that last refreshed its class (jaca_last_refresh),
 * and the three runs' halo blocks must be equal bit for bit. The counters must agree
 * too: rows read from the node tier, host-to-device bytes (every read row once).
 * Exit 77 (skipped) without CUDA in the build or without a GPU on every rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/ops.h"
#include "core/status.h"
#include "graph/graph.h"
#include "jaca/exchange_internal.h"
#include "jaca/jaca.h"
#include "mpi/comm.h"
#include "partition/partition.h"
#include "jaca_test.h"
#include "mpi_test.h"
#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#define COLS 24
#define NLAYERS 3
#define GEMM_N 256

/* the job's world (mpi/tests/mpi_test.h: MT_CHECK and MT_OK abort the whole job) */
struct comm *mt_comm;

#ifdef CAPGNN_HAVE_CUDA

/* Arbitrary float bits (finite): a hash of (gid, epoch, layer, column). */
static float val(int64_t g, uint32_t e, int l, int64_t j) {
  uint64_t z = (uint64_t)g * 0x9E3779B97F4A7C15ull ^ ((uint64_t)e << 40) ^ ((uint64_t)l << 56) ^ (uint64_t)j;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return ((float)(int32_t)(uint32_t)z) * 0x1p-24f; /* |v| < 128, 24 significant bits */
}

struct run_out {
  float *halo;   /* per exchange (epoch, layer): n_halo x COLS */
  struct jaca_stats st;
};

/* One sequence of forward exchanges on `be`; the halo blocks into o->halo. */
static void run_seq(struct cg_backend *be, const struct part_local *pl, double capacity, int staleness,
                    int prefetch, uint32_t E, struct run_out *o) {
  struct jaca_options opt;
  jaca_options_defaults(&opt);
  opt.policy = JACA_POLICY_JACA;
  opt.capacity = capacity;
  opt.staleness = staleness;
  opt.prefetch = prefetch;
  opt.host_mb = opt.device_mb = 0; /* the capacity fraction alone */
  const struct jaca_layers layers = {NLAYERS, COLS};
  struct cg_exchange *ex = NULL;
  MT_OK(jaca_exchange_create(mt_comm, be, pl, &pl->agg, 64, &layers, &opt, &ex));
  const struct jaca_node_plan *p = jaca_exchange_plan(ex);
  MT_CHECK(p != NULL, "not a caching exchange");
  const int64_t rows = pl->n_inner + pl->n_halo, nh = pl->n_halo;
  float *h = malloc(sizeof(float) * (size_t)((rows > 0 ? rows : 1) * COLS)), *d = NULL;
  float *a = NULL, *b = NULL, *c = NULL;
  MT_CHECK(h != NULL, "out of memory");
  MT_OK(be->alloc(be, (void **)&d, sizeof(float) * (size_t)((rows > 0 ? rows : 1) * COLS), "test rows"));
  MT_OK(be->alloc(be, (void **)&a, sizeof(float) * GEMM_N * GEMM_N, "test gemm"));
  MT_OK(be->alloc(be, (void **)&b, sizeof(float) * GEMM_N * GEMM_N, "test gemm"));
  MT_OK(be->alloc(be, (void **)&c, sizeof(float) * GEMM_N * GEMM_N, "test gemm"));
  be->fill(be, a, GEMM_N * GEMM_N, 0.5f);
  be->fill(be, b, GEMM_N * GEMM_N, 0.25f);
  for (uint32_t e = 1; e <= E; e++)
    for (int l = 1; l < NLAYERS; l++) {
      for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < COLS; j++) h[i * COLS + j] = i < pl->n_inner ? val(pl->gid[i], e, l, j) : -1.0f;
      if (rows > 0) MT_OK(be->upload(be, d, h, (size_t)(rows * COLS) * sizeof(float)));
      const struct cg_halo_tag tag = {l, e};
      MT_OK(ex->halo_begin(ex, CG_HALO_FORWARD, tag, d, COLS));
      for (int k = 0; k < 4; k++) /* the layer's compute, on the backend's stream */
        be->gemm(be, 0, 0, GEMM_N, GEMM_N, GEMM_N, 1.0f, a, GEMM_N, b, GEMM_N, 0.0f, c, GEMM_N);
      MT_OK(ex->halo_end(ex, CG_HALO_FORWARD, tag, d, COLS));
      if (rows > 0) MT_OK(be->download(be, h, d, (size_t)(rows * COLS) * sizeof(float)));
      MT_OK(comm_barrier(mt_comm)); /* training's all-reduce: nobody writes e + 1 before all read e */
      float *out = o->halo + ((size_t)(e - 1) * (NLAYERS - 1) + (size_t)(l - 1)) * (size_t)(nh * COLS);
      memcpy(out, h + pl->n_inner * COLS, sizeof(float) * (size_t)(nh * COLS));
      for (int64_t i = 0; i < nh; i++) {
        const uint32_t from = jaca_last_refresh(e, p->halo_class[i], p->staleness);
        for (int64_t j = 0; j < COLS; j++) {
          const float want = val(pl->gid[pl->n_inner + i], from, l, j), got = out[i * COLS + j];
          MT_CHECK(memcmp(&want, &got, sizeof want) == 0,
                "%s prefetch %s, capacity %g, staleness %d: epoch %u layer %d halo row %lld (gid %d) col %lld holds "
                "%a, expected %a (epoch %u)",
                be->name, prefetch ? "on" : "off", capacity, staleness, e, l, (long long)i, pl->gid[pl->n_inner + i],
                (long long)j, (double)got, (double)want, from);
        }
      }
    }
  MT_OK(jaca_exchange_stats(ex, 0, &o->st));
  be->free(be, a);
  be->free(be, b);
  be->free(be, c);
  be->free(be, d);
  free(h);
  cg_exchange_destroy(&ex);
}

static void run_config(struct cg_backend *cpu, struct cg_backend *gpu, const struct part_local *pl, double capacity,
                       int staleness) {
  const uint32_t E = staleness == 0 ? 3u : (uint32_t)(2 * (staleness + 1) + 1);
  const size_t n = (size_t)E * (NLAYERS - 1) * (size_t)(pl->n_halo > 0 ? pl->n_halo : 1) * COLS;
  struct run_out ref = {0}, on = {0}, off = {0};
  ref.halo = calloc(n, sizeof(float));
  on.halo = calloc(n, sizeof(float));
  off.halo = calloc(n, sizeof(float));
  MT_CHECK(ref.halo && on.halo && off.halo, "out of memory");
  run_seq(cpu, pl, capacity, staleness, 1, E, &ref);
  run_seq(gpu, pl, capacity, staleness, 1, E, &on);
  run_seq(gpu, pl, capacity, staleness, 0, E, &off);
  MT_CHECK(memcmp(ref.halo, on.halo, n * sizeof(float)) == 0, "CUDA with prefetch differs from the CPU cache");
  MT_CHECK(memcmp(ref.halo, off.halo, n * sizeof(float)) == 0, "CUDA without prefetch differs from the CPU cache");
  const struct jaca_stats *r = &ref.st, *a = &on.st, *b = &off.st;
  MT_CHECK(a->lookups == r->lookups && a->node_hits == r->node_hits && a->rank_hits == r->rank_hits &&
            a->misses == r->misses && b->node_hits == r->node_hits && b->misses == r->misses,
        "counters differ: lookups %lld/%lld, node hits %lld/%lld/%lld, misses %lld/%lld/%lld (cpu/cuda on/cuda off)",
        (long long)r->lookups, (long long)a->lookups, (long long)r->node_hits, (long long)a->node_hits,
        (long long)b->node_hits, (long long)r->misses, (long long)a->misses, (long long)b->misses);
  MT_CHECK(a->prefetched + a->end_copied == r->prefetched + r->end_copied && b->prefetched == 0 &&
            b->end_copied == r->prefetched + r->end_copied,
        "node tier reads: cpu %lld + %lld, cuda on %lld + %lld, cuda off %lld + %lld", (long long)r->prefetched,
        (long long)r->end_copied, (long long)a->prefetched, (long long)a->end_copied, (long long)b->prefetched,
        (long long)b->end_copied);
  const int64_t h2d = (a->prefetched + a->end_copied) * COLS * (int64_t)sizeof(float);
  MT_CHECK(r->bytes_h2d == 0 && a->bytes_h2d == h2d && b->bytes_h2d == h2d,
        "host-to-device bytes: cpu %lld, cuda on %lld, off %lld; expected 0, %lld, %lld", (long long)r->bytes_h2d,
        (long long)a->bytes_h2d, (long long)b->bytes_h2d, (long long)h2d, (long long)h2d);
  int64_t v[3] = {a->prefetched, a->end_copied, a->lookups};
  MT_OK(comm_allreduce_i64(mt_comm, v, 3, COMM_SUM));
  if (comm_rank(mt_comm) == 0)
    printf("ok: capacity %3.0f %%, staleness %d, %u epochs: CUDA (prefetch on, off) = CPU bit for bit over %lld halo "
           "reads; node tier rows: %lld prefetched, %lld copied in end\n",
           capacity * 100, staleness, E, (long long)v[2], (long long)v[0], (long long)v[1]);
  free(ref.halo);
  free(on.halo);
  free(off.halo);
}

static int run_gpu(void) {
  const int P = comm_size(mt_comm), me = comm_rank(mt_comm);
  int ord = -1;
  MT_OK(comm_gpu_bind(mt_comm, &ord));
  struct cg_backend *cpu = NULL, *gpu = NULL;
  MT_OK(cg_backend_cpu_create(1, &cpu));
  MT_OK(cg_backend_cuda_create(ord, 0, &gpu));
  MT_CHECK(gpu->host_alloc && gpu->host_free && gpu->upchan_create && gpu->upchan_destroy && gpu->upchan_begin &&
            gpu->upchan_upload && gpu->upchan_join,
        "the CUDA backend must have side uploads");
  MT_CHECK(!cpu->host_alloc && !cpu->upchan_create, "the CPU backend needs no side uploads");
  MT_OK(comm_set_path(mt_comm, COMM_PATH_AUTO));
  struct graph g;
  int32_t *owner = jt_synth_owned("synth:small", P, 7, &g);
  struct part_local pl;
  MT_OK(part_local_build(&g, owner, P, me, GRAPH_NORM_GCN, 1, &pl));
  run_config(cpu, gpu, &pl, 1.0, 0);
  run_config(cpu, gpu, &pl, 0.1, 0);
  run_config(cpu, gpu, &pl, 1.0, 2);
  run_config(cpu, gpu, &pl, 0.1, 2);
  part_local_free(&pl);
  free(owner);
  graph_free(&g);
  cg_backend_destroy(&gpu);
  cg_backend_destroy(&cpu);
  return 0;
}

#endif /* CAPGNN_HAVE_CUDA */

int main(int argc, char **argv) {
  if (comm_init(&argc, &argv, &mt_comm) != CG_OK) {
    fprintf(stderr, "comm_init: %s\n", cg_err_msg());
    return 1;
  }
  cg_log_set_level(CG_LOG_WARN);
  int rc = 77;
#ifdef CAPGNN_HAVE_CUDA
  int64_t ndev = cg_cuda_device_count();
  MT_OK(comm_allreduce_i64(mt_comm, &ndev, 1, COMM_MIN));
  if (ndev == 0) {
    if (comm_rank(mt_comm) == 0) printf("skipped: no CUDA device visible on every rank\n");
  } else {
    rc = run_gpu();
    if (comm_rank(mt_comm) == 0)
      printf("test_jaca_gpu: all checks passed on %d ranks, %d nodes\n", comm_size(mt_comm), comm_nnodes(mt_comm));
  }
#else
  if (comm_rank(mt_comm) == 0) printf("skipped: this build has no CUDA backend\n");
#endif
  comm_finalize(&mt_comm);
  return rc;
}
