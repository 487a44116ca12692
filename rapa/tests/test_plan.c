/* rapa/tests/test_plan.c — the scale model (rapa/plan.h) on a hand-made partition: 8
 * vertices, 4 ranks of 2 vertices, 2 nodes of 2 ranks, every count and time computed
 * by hand below; the cache's inter-node rows are each remote row once per node; the
 * plan's communication without the cache on one node equals rapa_cost_rank's; the
 * oversubscription of shared cores; a measured all-reduce curve. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/status.h"
#include "graph/graph.h"
#include "rapa/plan.h"

static void near(double got, double want, const char *what) {
  if (!(fabs(got - want) <= 1e-12 * fabs(want) + 1e-18)) {
    fprintf(stderr, "%s: got %.17g, want %.17g\n", what, got, want);
    fail();
  }
}

/* Undirected edges 0-2, 0-4, 0-6, 1-4, 3-4, 5-7, 2-3; rank r owns {2r, 2r+1}; ranks 0, 1 on
 * node 0, ranks 2, 3 on node 1. Halos: rank 0 {2, 4, 6}, rank 1 {0, 4}, rank 2 {0, 1, 3, 7},
 * rank 3 {0, 5}. */
static void hand_graph(struct graph *g, int32_t *owner) {
  static const int edges[][2] = {{0, 2}, {0, 4}, {0, 6}, {1, 4}, {3, 4}, {5, 7}, {2, 3}};
  const int ne = (int)(sizeof edges / sizeof edges[0]);
  memset(g, 0, sizeof *g);
  g->n = 8;
  g->rowptr = calloc(9, sizeof *g->rowptr);
  g->colidx = calloc(2 * (size_t)ne, sizeof *g->colidx);
  assert_non_null(g->rowptr);
  assert_non_null(g->colidx);
  for (int e = 0; e < ne; e++) {
    g->rowptr[edges[e][0] + 1]++;
    g->rowptr[edges[e][1] + 1]++;
  }
  for (int v = 0; v < 8; v++) g->rowptr[v + 1] += g->rowptr[v];
  int64_t at[8];
  for (int v = 0; v < 8; v++) at[v] = g->rowptr[v];
  for (int e = 0; e < ne; e++) {
    g->colidx[at[edges[e][0]]++] = edges[e][1];
    g->colidx[at[edges[e][1]]++] = edges[e][0];
  }
  for (int v = 0; v < 8; v++) owner[v] = v / 2;
}

static void free_hand_graph(struct graph *g) {
  free(g->rowptr);
  free(g->colidx);
}

static const struct rapa_rates unit_rates = {
    .gemm_flops = 1e9, .spmm_rate = 1e8, .mem_bps = 1e9, .rng_eps = 1e8, .op_s = 1e-6};
/* GCN 2 layers, 4 -> 2 -> 2, no dropout: layer 1 exchanges width 2 (8 bytes a row);
 * 16 parameters (64 bytes). */
static const struct rapa_shape shape = {2, 4, 2, 2, 0, 0.0f, 0.0f, 0, 0};

static struct rapa_plan_opts two_nodes(int cache) {
  struct rapa_plan_opts o;
  memset(&o, 0, sizeof o);
  o.P = 4;
  o.nodes = 2;
  o.threads = 1;
  o.cache = cache;
  o.allreduce = RAPA_ALLREDUCE_HIER;
  o.bw_intra = 1e6;
  o.bw_inter = 1e5;
  o.lat_intra = 1e-5;
  o.lat_inter = 1e-4;
  return o;
}

/* Without the cache. Rank 0: with rank 1 (same node) 1 row out, 1 in: 2 x (1e-5 + 16 / 1e6);
 * with rank 2 2 out, 1 in: 2 x (1e-4 + 24 / 1e5); with rank 3 1 and 1: 2 x (1e-4 + 16 / 1e5)
 * -> 1.252e-3. Hierarchical all-reduce of 64 bytes, 2 ranks per node, 2 nodes: 64 / 1e6 +
 * 2e-5 + 32 / 1e5 + 2e-4 = 6.04e-4; the loss 6 x 1e-4. Bytes: 11 halo rows, forward and
 * back, 8 bytes each: 176; between nodes 7 rows each way: 112; the all-reduce's inter-node
 * wire bytes 2 (N-1) x 64 = 128. */
static void test_plan_plain(void **state) {
  (void)state;
  struct graph g;
  int32_t owner[8];
  hand_graph(&g, owner);
  struct rapa_rates rates[4] = {unit_rates, unit_rates, unit_rates, unit_rates};
  struct rapa_plan_opts o = two_nodes(0);
  struct rapa_plan p;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  const int64_t halo[4] = {3, 2, 4, 2};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(p.loads[i].n_halo, halo[i]);
    assert_int_equal(p.rank[i].node, i / 2);
  }
  near(p.rank[0].halo_s, 1.252e-3, "rank 0 halo time");
  near(p.rank[0].allreduce_s, 6.04e-4, "rank 0 all-reduce time");
  near(p.rank[0].loss_s, 6e-4, "rank 0 loss time");
  near(p.rank[0].shm_s, 0, "rank 0 shared memory");
  near(p.rank[0].comm_s, 1.252e-3 + 6.04e-4 + 6e-4, "rank 0 comm");
  assert_int_equal(p.rank[0].peers, 3);
  near(p.halo_bytes, 176, "halo bytes");
  near(p.rank[0].halo_bytes_intra, 16, "rank 0 intra bytes");  /* 1 row out + 1 gradient */
  near(p.rank[0].halo_bytes_inter, 40, "rank 0 inter bytes");  /* 3 rows out, 2 gradients */
  near(p.inter_node_bytes, 112 + 128, "inter-node bytes");
  near(p.allreduce_bytes, 4 * 64, "all-reduce bytes");
  double mx = 0;
  for (int i = 0; i < 4; i++) {
    near(p.rank[i].lambda_s, p.rank[i].comp_s + p.rank[i].comm_s, "lambda");
    if (p.rank[i].lambda_s > mx) mx = p.rank[i].lambda_s;
  }
  near(p.epoch_s, mx, "epoch");
  near(p.rank[p.slowest].wait_s, 0, "the slowest waits for nobody");
  rapa_plan_free(&p);
  free_hand_graph(&g);
}

/* With the cache. Node 0 needs rows 4 (of rank 2, by ranks 0 and 1: receiver 4 mod 2 = the
 * first, rank 0) and 6 (of rank 3, rank 0); node 1 needs 0 (by ranks 2 and 3: receiver
 * rank 2), 1 and 3 (rank 2). So rank 2 sends 1 row to node 0 instead of 2, rank 0 sends 2
 * to node 1 instead of 3: 5 forward rows between nodes instead of 7, the gradients
 * unchanged (7). Rank 0: with rank 2 forward 2 out, 1 in and gradients 1 out, 2 in: 2 x
 * (1e-4 + 24 / 1e5); with rank 3 forward 1 in: 1e-4 + 8 / 1e5, gradients 1 and 1: 1e-4 +
 * 16 / 1e5; nothing through MPI with rank 1 -> 1.12e-3. Its shared memory: the gradient
 * rows with rank 1 (1 + 1), the row it writes for rank 1 and its 3 halo rows read or
 * written: 6 rows, 48 bytes. Node tiers: 4 and 5 rows. */
static void test_plan_cache(void **state) {
  (void)state;
  struct graph g;
  int32_t owner[8];
  hand_graph(&g, owner);
  struct rapa_rates rates[4] = {unit_rates, unit_rates, unit_rates, unit_rates};
  struct rapa_plan_opts o = two_nodes(1);
  struct rapa_plan p;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  const int64_t fwd[16] = {0, 0, 2, 0, /* rank 0 -> rank 2: rows 0, 1 */
                           0, 0, 1, 0, /* rank 1 -> rank 2: row 3 */
                           1, 0, 0, 0, /* rank 2 -> rank 0: row 4, once for node 0 */
                           1, 0, 0, 0}; /* rank 3 -> rank 0: row 6 */
  for (int k = 0; k < 16; k++) assert_int_equal(p.fwd_rows[k], fwd[k]);
  /* each remote row once per node: the distinct (row, node) pairs with the owner elsewhere */
  int64_t fwd_inter = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      if (i / 2 != j / 2) fwd_inter += p.fwd_rows[i * 4 + j];
  assert_int_equal(fwd_inter, 2 + 3);
  assert_int_equal(p.node_tier_rows[0], 4);
  assert_int_equal(p.node_tier_rows[1], 5);
  near(p.rank[0].halo_s, 1.12e-3, "rank 0 halo time with the cache");
  near(p.rank[0].shm_bytes, 48, "rank 0 shared-memory bytes");
  near(p.rank[0].shm_s, 48 / 1e9, "rank 0 shared-memory time");
  near(p.rank[0].halo_bytes_intra, 0, "nothing through MPI within a node");
  near(p.halo_bytes, (5 + 7) * 8, "halo bytes with the cache");
  near(p.inter_node_bytes, (5 + 7) * 8 + 128, "inter-node bytes with the cache");
  near(p.node_tier_bytes_max, 5 * 8, "largest node tier");
  rapa_plan_free(&p);
  /* device ranks at 1e3 B/s each way: rank 0 sends 4 rows through MPI (2 forward, 2
   * gradients: 32 bytes) and receives 5 (40 bytes); its 48 shared-memory bytes are staged
   * half each way: (32 + 24) / 1e3 + (40 + 24) / 1e3; device to device, only the tier's */
  for (int i = 0; i < 4; i++) rates[i].h2d_bps = rates[i].d2h_bps = 1e3;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  near(p.rank[0].staging_s, 0.12, "rank 0 staging");
  rapa_plan_free(&p);
  o.gpu_direct = 1;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  near(p.rank[0].staging_s, 0.048, "rank 0 staging, device to device");
  rapa_plan_free(&p);
  free_hand_graph(&g);
}

/* One node, flat all-reduce, one link speed: the plan's communication is rapa_cost_rank's;
 * so is compute, stretched when 4 one-thread ranks share 2 cores: ranks 0 and 2 take turns
 * on core 0, 1 and 3 on core 1 (mpirun --map-by core --bind-to core), so each rank's
 * compute is its core's summed compute (ranks 0 and 2: c0 + c2; 1 and 3: c1 + c3). With 2
 * threads a rank, the factor ranks x threads / cores = 4. */
static void test_plan_matches_cost_model(void **state) {
  (void)state;
  struct graph g;
  int32_t owner[8];
  hand_graph(&g, owner);
  struct rapa_rates rates[4] = {unit_rates, unit_rates, unit_rates, unit_rates};
  struct rapa_plan_opts o = two_nodes(0);
  o.nodes = 1;
  o.allreduce = RAPA_ALLREDUCE_FLAT;
  o.host_cores = 2;
  struct rapa_links links;
  assert_int_equal(rapa_links_alloc(&links, 4), CG_OK);
  for (int k = 0; k < 16; k++) {
    links.bw_bps[k] = o.bw_intra;
    links.lat_s[k] = o.lat_intra;
  }
  struct rapa_plan p;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  struct rapa_cost c[4];
  for (int i = 0; i < 4; i++) {
    assert_int_equal(rapa_cost_rank(&shape, &p.loads[i], &rates[i], &links, i, 4, &c[i]), CG_OK);
    near(p.rank[i].comm_s, c[i].comm_s, "comm = the cost model's");
    near(p.rank[i].cost.memory_bytes, c[i].memory_bytes, "memory = the cost model's");
  }
  /* the halos differ (3, 2, 4, 2 rows), so the cores' sums do */
  assert_true(c[0].comp_s + c[2].comp_s > c[1].comp_s + c[3].comp_s);
  for (int i = 0; i < 4; i++) {
    const double core = c[i % 2].comp_s + c[i % 2 + 2].comp_s;
    near(p.rank[i].comp_s, core, "compute = the core's ranks' summed compute");
    near(p.rank[i].oversub, core / c[i].comp_s, "the stretch");
  }
  assert_int_equal(p.slowest == 0 || p.slowest == 2, 1);
  near(p.inter_node_bytes, 0, "one node: nothing between nodes");
  rapa_plan_free(&p);
  /* a round-robin quantum (plan.h): the shape exchanges layer 1 only, so a step has 4
   * compute phases of t = c_i / 4. A quantum longer than every phase: each rank's own
   * compute, its core-mate's in its waits (the epoch unchanged); a quantum of half a
   * phase of rank 0: compute c0 + c2 x (2 t0 - t0 / 2) / (2 t0) = c0 + 3 c2 / 4 */
  o.quantum_s = 1.0;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  for (int i = 0; i < 4; i++) {
    const double core = c[i % 2].comp_s + c[i % 2 + 2].comp_s;
    near(p.rank[i].comp_s, c[i].comp_s, "compute: its own (phases shorter than the quantum)");
    near(p.rank[i].core_wait_s, core - c[i].comp_s, "the core-mate's compute, in its waits");
    near(p.rank[i].lambda_s, core + p.rank[i].comm_s, "lambda: the core's compute + comm");
  }
  rapa_plan_free(&p);
  o.quantum_s = c[0].comp_s / 4.0 / 2.0;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  near(p.rank[0].comp_s, c[0].comp_s + 0.75 * c[2].comp_s, "compute: 3/4 of the mate's inside");
  near(p.rank[0].core_wait_s, 0.25 * c[2].comp_s, "the rest in its waits");
  near(p.rank[0].lambda_s, c[0].comp_s + c[2].comp_s + p.rank[0].comm_s, "lambda unchanged");
  rapa_plan_free(&p);
  o.quantum_s = 0;
  /* 4 cores: each rank alone on its core */
  o.host_cores = 4;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  for (int i = 0; i < 4; i++) near(p.rank[i].comp_s, c[i].comp_s, "compute alone");
  rapa_plan_free(&p);
  /* 2 threads a rank on 2 cores: the factor */
  o.host_cores = 2;
  o.threads = 2;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  for (int i = 0; i < 4; i++) {
    near(p.rank[i].oversub, 4.0, "4 ranks x 2 threads on 2 cores");
    near(p.rank[i].comp_s, 4.0 * c[i].comp_s, "compute, oversubscribed");
  }
  rapa_plan_free(&p);
  /* ranks 2 and 3 on devices (staging rates): they share no core, and the CPU ranks'
   * cores hold only them: 2 threads a rank, 2 CPU ranks on 2 cores: x 2; one thread a
   * rank: each CPU rank alone on its core */
  rates[2].h2d_bps = rates[2].d2h_bps = rates[3].h2d_bps = rates[3].d2h_bps = 1e10;
  assert_true(rapa_plan_device_rank(&rates[2]) && !rapa_plan_device_rank(&rates[0]));
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  for (int i = 0; i < 4; i++) {
    near(p.rank[i].oversub, i < 2 ? 2.0 : 1.0, "2 CPU ranks x 2 threads on 2 cores; device ranks alone");
    near(p.rank[i].comp_s, (i < 2 ? 2.0 : 1.0) * c[i].comp_s, "compute, device ranks not slowed");
  }
  rapa_plan_free(&p);
  o.threads = 1;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  for (int i = 0; i < 4; i++) {
    near(p.rank[i].comp_s, c[i].comp_s, "no core shared with a device rank");
    near(p.rank[i].oversub, 1.0, "the stretch");
  }
  rates[2].h2d_bps = rates[2].d2h_bps = rates[3].h2d_bps = rates[3].d2h_bps = 0;
  rapa_links_free(&links);
  rapa_plan_free(&p);
  /* bad jobs are refused with a message */
  o.nodes = 3;
  o.allreduce = RAPA_ALLREDUCE_HIER;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_ERR_ARG);
  o.nodes = 5;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_ERR_ARG);
  o.nodes = 2;
  o.bw_inter = 0;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_ERR_ARG);
  free_hand_graph(&g);
}

/* A measured all-reduce curve (ar_points) in place of the formula: below the smallest
 * size its time, between two sizes the line through them, past the largest the last two
 * points' line; every rank's all-reduce of the shape's 64 bytes, the rest as without it. */
static void test_plan_measured_allreduce(void **state) {
  (void)state;
  struct rapa_plan_opts o = two_nodes(0);
  o.ar_points = 3;
  const double b[3] = {32, 128, 1024}, t[3] = {1e-5, 3e-5, 1.2e-4};
  memcpy(o.ar_bytes, b, sizeof b);
  memcpy(o.ar_s, t, sizeof t);
  near(rapa_plan_allreduce_curve(&o, 8), 1e-5, "below the smallest size");
  near(rapa_plan_allreduce_curve(&o, 32), 1e-5, "at the smallest");
  near(rapa_plan_allreduce_curve(&o, 64), 1e-5 + 2e-5 * 32.0 / 96.0, "between the first two");
  near(rapa_plan_allreduce_curve(&o, 576), 3e-5 + 9e-5 * 448.0 / 896.0, "between the last two");
  near(rapa_plan_allreduce_curve(&o, 2048), 1.2e-4 + 9e-5 * 1024.0 / 896.0, "past the largest: the last line");
  o.ar_s[2] = 2e-5; /* a falling last segment (noisy medians): never below the largest's time past it */
  near(rapa_plan_allreduce_curve(&o, 576), 3e-5 - 1e-5 * 448.0 / 896.0, "a falling segment, inside");
  near(rapa_plan_allreduce_curve(&o, 4096), 2e-5, "a falling segment, past the largest");
  o.ar_s[2] = 1.2e-4;
  struct graph g;
  int32_t owner[8];
  hand_graph(&g, owner);
  struct rapa_rates rates[4] = {unit_rates, unit_rates, unit_rates, unit_rates};
  struct rapa_plan p, q;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &p), CG_OK);
  o.ar_points = 0;
  assert_int_equal(rapa_plan_compute(&g, owner, &shape, rates, &o, &q), CG_OK);
  for (int i = 0; i < 4; i++) {
    near(p.rank[i].allreduce_s, 1e-5 + 2e-5 * 32.0 / 96.0, "the curve at 64 bytes");
    near(q.rank[i].allreduce_s, 6.04e-4, "the formula (test_plan_plain)");
    near(p.rank[i].comm_s - p.rank[i].allreduce_s, q.rank[i].comm_s - q.rank[i].allreduce_s, "the rest unchanged");
  }
  near(p.allreduce_bytes, q.allreduce_bytes, "the same bytes");
  rapa_plan_free(&p);
  rapa_plan_free(&q);
  /* one rank: no all-reduce, curve or not */
  o.P = 1;
  o.nodes = 1;
  o.ar_points = 3;
  int32_t one[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  assert_int_equal(rapa_plan_compute(&g, one, &shape, rates, &o, &p), CG_OK);
  near(p.rank[0].allreduce_s, 0, "one rank: no all-reduce");
  rapa_plan_free(&p);
  free_hand_graph(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_plain),
      cmocka_unit_test(test_plan_cache),
      cmocka_unit_test(test_plan_matches_cost_model),
      cmocka_unit_test(test_plan_measured_allreduce),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
