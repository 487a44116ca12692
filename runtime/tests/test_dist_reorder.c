/* runtime/tests/test_dist_reorder.c — --reorder in partitioned runs (runtime/dist.c's
 * dist_reorder): each rank reorders its inner rows after partitioning.
 * Run under mpiexec -n P. Checked on synth:small:shuffle=1 (whole-graph loading) and on
 * Cora (per-rank loading, when present), for rcm, cluster and metis:
 *  - the rank owns the same vertices as without reordering, its halo rows are the same
 *    in the same places, and every send list names the same vertices in the same order
 *    (the plan renumbered with the rows: a wrong entry would send another row);
 *  - training (rt_run_dist, GCN and SAGE, dropout on, 12 epochs, 1 thread) gives the
 *    losses of the single-process run without reordering within 1e-5 relative per
 *    epoch, and its accuracies within one vertex per split;
 *  - with a halo cache, rcm is refused on every rank (one agreed error), auto keeps the
 *    order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/status.h"
#include "mpi/comm.h"
#include "mpi_test.h"
#include "runtime/dist.h"
#include "runtime/runtime.h"

struct comm *mt_comm; /* mpi/tests/mpi_test.h: MT_CHECK and MT_OK abort the whole job */

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

static void base_config(struct rt_config *c, const char *graph, enum rt_model_kind model) {
  rt_config_defaults(c);
  c->graph = graph;
  c->model = model;
  c->epochs = 12;
  c->device = "cpu";
  c->threads = 1;
  c->quiet = 1;
  c->seed = 1;
  c->hidden = 16;
}

/* The same vertices, halo and send lists (by vertex) with and without reordering. */
static void same_plan(const char *graph, enum graph_reorder m) {
  struct rt_config c;
  base_config(&c, graph, RT_MODEL_GCN);
  struct rt_dist_options o;
  rt_dist_options_defaults(&o);
  o.use_cache = 0;
  struct rt_dist *d0 = NULL, *d1 = NULL;
  MT_OK(rt_dist_create(mt_comm, &c, &o, &d0));
  c.reorder = m;
  MT_OK(rt_dist_create(mt_comm, &c, &o, &d1));
  const struct part_local *a = rt_dist_part(d0), *b = rt_dist_part(d1);
  const struct rt_local *la = rt_dist_local(d0), *lb = rt_dist_local(d1);
  MT_CHECK(a->n_inner == b->n_inner && a->n_halo == b->n_halo && a->npeers == b->npeers, "shapes differ");
  const int64_t ni = a->n_inner, nt = ni + a->n_halo;
  int32_t *x = malloc((size_t)(ni > 0 ? ni : 1) * sizeof *x), *y = malloc((size_t)(ni > 0 ? ni : 1) * sizeof *y);
  memcpy(x, a->gid, (size_t)ni * sizeof *x);
  memcpy(y, b->gid, (size_t)ni * sizeof *y);
  int64_t moved = 0;
  for (int64_t i = 0; i < ni; i++) {
    moved += x[i] != y[i];
    MT_CHECK(lb->gid[i] == b->gid[i], "the plan's ids and the local problem's differ at %lld", (long long)i);
  }
  qsort(x, (size_t)ni, sizeof *x, cmp_i32);
  qsort(y, (size_t)ni, sizeof *y, cmp_i32);
  MT_CHECK(memcmp(x, y, (size_t)ni * sizeof *x) == 0, "rank owns other vertices after --reorder %s",
        graph_reorder_name(m));
  for (int64_t i = ni; i < nt; i++) MT_CHECK(a->gid[i] == b->gid[i], "halo row %lld moved", (long long)i);
  int64_t ns = 0;
  for (int p = 0; p < a->npeers; p++) {
    MT_CHECK(a->peer[p] == b->peer[p] && a->send_count[p] == b->send_count[p] && a->send_offset[p] == b->send_offset[p],
          "peer %d's plan differs", p);
    ns += a->send_count[p];
  }
  for (int64_t k = 0; k < ns; k++)
    MT_CHECK(a->gid[a->send_idx[k]] == b->gid[b->send_idx[k]], "send entry %lld is vertex %d, expected %d", (long long)k,
          b->gid[b->send_idx[k]], a->gid[a->send_idx[k]]);
  MT_CHECK(la->agg.nnz == lb->agg.nnz, "operator sizes differ");
  int64_t moved_all[1] = {moved};
  MT_OK(comm_allreduce_i64(mt_comm, moved_all, 1, COMM_SUM));
  MT_CHECK(moved_all[0] > 0, "--reorder %s moved no row on any rank", graph_reorder_name(m));
  if (comm_rank(mt_comm) == 0)
    printf("  %s --reorder %s: same owners, halo and send lists by vertex; %lld inner rows moved over the ranks\n",
           graph, graph_reorder_name(m), (long long)moved_all[0]);
  free(x);
  free(y);
  rt_dist_destroy(&d0);
  rt_dist_destroy(&d1);
}

static void same_training(const char *graph, enum rt_model_kind model, enum graph_reorder m) {
  struct rt_config c;
  base_config(&c, graph, model);
  struct rt_result ref, got;
  memset(&ref, 0, sizeof ref);
  memset(&got, 0, sizeof got);
  MT_OK(rt_run(&c, &ref)); /* one process, no reordering: the reference */
  c.reorder = m;
  struct rt_dist_options o;
  rt_dist_options_defaults(&o);
  o.use_cache = 0;
  int fatal = 0;
  MT_OK(rt_run_dist(mt_comm, &c, &o, COMM_PATH_AUTO, &got, &fatal));
  double worst = 0;
  for (int e = 0; e < c.epochs; e++) {
    const double d = fabs(ref.loss[e] - got.loss[e]) / fabs(ref.loss[e]);
    if (d > worst) worst = d;
  }
  struct graph g;
  MT_OK(graph_open(graph, &g));
  const double tol[3] = {1.0 / (double)graph_split_count(&g, GRAPH_SPLIT_TRAIN),
                         1.0 / (double)graph_split_count(&g, GRAPH_SPLIT_VAL),
                         1.0 / (double)graph_split_count(&g, GRAPH_SPLIT_TEST)};
  graph_free(&g);
  if (comm_rank(mt_comm) == 0)
    printf("  %s %s, %d ranks --reorder %s: worst loss difference %.2e relative; acc %.4f/%.4f/%.4f vs one rank "
           "%.4f/%.4f/%.4f\n", graph, rt_model_kind_str(model), comm_size(mt_comm), graph_reorder_name(m), worst,
           got.final_train_acc, got.final_val_acc, got.final_test_acc, ref.final_train_acc, ref.final_val_acc,
           ref.final_test_acc);
  MT_CHECK(worst <= 1e-5, "losses differ by %.3g relative", worst);
  MT_CHECK(fabs(got.final_train_acc - ref.final_train_acc) <= tol[0] + 1e-12, "train accuracy differs");
  MT_CHECK(fabs(got.final_val_acc - ref.final_val_acc) <= tol[1] + 1e-12, "val accuracy differs");
  MT_CHECK(fabs(got.final_test_acc - ref.final_test_acc) <= tol[2] + 1e-12, "test accuracy differs");
  rt_result_free(&ref);
  rt_result_free(&got);
}

static void halo_cache_rules(const char *graph) {
  struct rt_config c;
  base_config(&c, graph, RT_MODEL_GCN);
  struct rt_dist_options o;
  rt_dist_options_defaults(&o);
  o.use_cache = 0;
  o.halo_cache.policy = JACA_POLICY_JACA;
  struct rt_dist *d = NULL;
  c.reorder = GRAPH_REORDER_RCM;
  const int st = rt_dist_create(mt_comm, &c, &o, &d);
  MT_CHECK(st == CG_ERR_UNSUPPORTED && d == NULL, "--reorder rcm with a halo cache: status %d", st);
  cg_err_clear();
  c.reorder = GRAPH_REORDER_AUTO;
  MT_OK(rt_dist_create(mt_comm, &c, &o, &d));
  const struct part_local *pl = rt_dist_part(d);
  for (int64_t i = 1; i < pl->n_inner; i++) MT_CHECK(pl->gid[i] > pl->gid[i - 1], "auto reordered with a halo cache");
  rt_dist_destroy(&d);
  if (comm_rank(mt_comm) == 0) printf("  halo cache: rcm refused on every rank, auto keeps the order\n");
}

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  if (!getenv("CAPGNN_LOG_LEVEL")) cg_log_set_level(CG_LOG_WARN);
  char cora[4096];
  snprintf(cora, sizeof cora, "%s/cora.cgr", CAPGNN_TEST_DATASETS);
  const char *graphs[2] = {"synth:small:shuffle=1", access(cora, R_OK) == 0 ? cora : NULL};
  const enum graph_reorder ms[] = {GRAPH_REORDER_RCM, GRAPH_REORDER_CLUSTER, GRAPH_REORDER_METIS};
  for (int gi = 0; gi < 2; gi++) {
    if (!graphs[gi]) {
      if (comm_rank(mt_comm) == 0) printf("  %s: not present, skipped\n", cora);
      continue;
    }
    for (int k = 0; k < 3; k++) same_plan(graphs[gi], ms[k]);
    same_training(graphs[gi], RT_MODEL_GCN, GRAPH_REORDER_CLUSTER);
    same_training(graphs[gi], RT_MODEL_GCN, GRAPH_REORDER_RCM);
    same_training(graphs[gi], RT_MODEL_SAGE, GRAPH_REORDER_METIS);
  }
  halo_cache_rules(graphs[0]);
  MT_OK(comm_barrier(mt_comm));
  if (comm_rank(mt_comm) == 0) printf("test_dist_reorder: all checks passed on %d ranks\n", comm_size(mt_comm));
  comm_finalize(&mt_comm);
  return 0;
}
