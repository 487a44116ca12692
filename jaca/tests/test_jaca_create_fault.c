/* jaca/tests/test_jaca_create_fault.c — every allocation of jaca_exchange_create may
 * fail: the create then fails on every rank with CG_ERR_NOMEM, leaves nothing allocated
 * and crashes nowhere (run under the sanitizers in a CAPGNN_SANITIZE build).
 *
 * For each option set (the exact cache with the node-tier gradients and the prefetch
 * thread; stale rows and stale gradients; adaptive rows and gradients through the
 * variable-length exchange) and each victim rank, the n-th allocation of the victim's
 * create fails, for n = 1, 2, ... until a create makes fewer than n allocations (then it
 * succeeds and is destroyed, and must leave nothing allocated either). The allocations
 * counted are those of capgnn's own code on the calling thread (mpi/tests/alloc_fault.h),
 * not MPI's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_fault.h"
#include "mpi_test.h"
#include "core/ops.h"
#include "core/status.h"
#include "graph/graph.h"
#include "jaca/jaca.h"
#include "mpi/comm.h"
#include "partition/partition.h"

struct comm *mt_comm;

/* One sweep: returns the number of failing creates checked. */
static int sweep(struct cg_backend *be, const struct part_local *pl, const struct jaca_options *o, int victim,
                 const char *name) {
  const struct jaca_layers layers = {3, 8};
  int checked = 0;
  for (int n = 1;; n++) {
    struct cg_exchange *ex = NULL;
    af_track_begin();
    if (comm_rank(mt_comm) == victim) af_fail_at(n);
    const int st = jaca_exchange_create(mt_comm, be, pl, &pl->agg, 64, &layers, o, &ex);
    const int pending = af_fail_pending();
    af_fail_at(0);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", st < 0 ? cg_err_msg() : "");
    cg_err_clear();
    if (st == CG_OK) cg_exchange_destroy(&ex);
    const int left = af_track_end();
    int64_t v[3] = {st == CG_OK, pending, -(int64_t)(st == CG_OK)};
    MT_OK(comm_allreduce_i64(mt_comm, v, 3, COMM_MAX));
    MT_CHECK(left == 0, "%s: allocation %d of rank %d failing: the create returned %d and left %d block(s) allocated",
          name, n, victim, st, left);
    if (v[1]) { /* the victim made fewer than n allocations: nothing failed */
      MT_CHECK(st == CG_OK, "%s: no allocation failed, yet the create returned %d (%s)", name, st, msg);
      return checked;
    }
    /* a failed allocation the create can do without (a fallback) may let it succeed */
    MT_CHECK((st == CG_ERR_NOMEM && ex == NULL) || st == CG_OK, "%s: allocation %d of rank %d failing: the create "
          "returned %d (%s)", name, n, victim, st, msg);
    MT_CHECK(v[0] == -v[2], "%s: allocation %d of rank %d failing: the create succeeded on some ranks only", name, n,
          victim);
    checked++;
  }
}

int main(int argc, char **argv) {
  if (comm_init(&argc, &argv, &mt_comm) != CG_OK) {
    fprintf(stderr, "comm_init: %s\n", cg_err_msg());
    return 1;
  }
  const int P = comm_size(mt_comm), me = comm_rank(mt_comm);
  struct cg_backend *cpu = NULL;
  MT_OK(cg_backend_cpu_create(1, &cpu));
  struct graph g;
  MT_OK(graph_synth("synth:tiny", &g));
  int32_t *owner = malloc(sizeof(int32_t) * (size_t)g.n);
  MT_CHECK(owner != NULL, "out of memory");
  for (int64_t v = 0; v < g.n; v++) owner[v] = (int32_t)(v % P);
  struct part_local pl;
  MT_OK(part_local_build(&g, owner, P, me, GRAPH_NORM_GCN, 1, &pl));

  struct jaca_options o[3];
  const char *names[3] = {"exact", "stale rows and gradients", "adaptive rows and gradients"};
  for (int k = 0; k < 3; k++) {
    jaca_options_defaults(&o[k]);
    o[k].policy = JACA_POLICY_JACA;
    o[k].host_mb = 0; /* no budget from free memory: the same plan every time */
    o[k].device_mb = 0;
  }
  o[1].capacity = 0.5;
  o[1].staleness = 2;
  o[1].grad_staleness = 2;
  MT_OK(jaca_staleness_parse("adaptive:0.1:3", &o[2]));
  MT_OK(jaca_grad_staleness_parse("adaptive:0.1:3", &o[2]));
  o[2].capacity = 0.5;

  for (int k = 0; k < 3; k++)
    for (int victim = 0; victim < P; victim++) {
      const int n = sweep(cpu, &pl, &o[k], victim, names[k]);
      if (me == 0) printf("ok: %s, rank %d's allocations: %d creates with one failing, none leaked\n", names[k], victim, n);
    }
  part_local_free(&pl);
  free(owner);
  graph_free(&g);
  cg_backend_destroy(&cpu);
  if (me == 0) printf("test_jaca_create_fault: all checks passed\n");
  comm_finalize(&mt_comm);
  return 0;
}
