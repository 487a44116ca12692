/* rapa/tests/test_cost.c — the cost model (rapa/balance.h) against values computed by
 * hand (two model shapes: aggregation cached at layer 0 / dropout everywhere and
 * transform-first layers; the communication and memory of the first), the loads of a
 * hand-made partition, and capability-weighted METIS within 5 % of its target shares on
 * cora (skipped when absent) and on synth:small, for speeds 1 / 0.33 and 1 / 0.5 /
 * 0.25 / 0.25. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/status.h"
#include "graph/graph.h"
#include "rapa/balance.h"

static const struct rapa_rates unit_rates = {
    .gemm_flops = 1e9, .spmm_rate = 1e8, .mem_bps = 1e9, .rng_eps = 1e8, .op_s = 1e-6};

static void near(double got, double want, const char *what) {
  if (!(fabs(got - want) <= 1e-12 * fabs(want) + 1e-18)) {
    fprintf(stderr, "%s: got %.17g, want %.17g\n", what, got, want);
    fail();
  }
}

/* GCN 2 layers, 4 -> 2 -> 2, no dropout (layer 0's aggregation cached); 3 inner rows, 1
 * halo row, 7 nonzeros; 2 ranks. By hand: layer 0 GEMM 2*3*4*2 forward and backward (96
 * FLOPs), bias/ReLU/bias-grad 48+48+24 bytes, 5 ops; layer 1 (2 -> 2: aggregate first)
 * SpMM 7*2 forward and backward, GEMMs 24 x 3, 48+24+72 bytes, 8 ops; the loss 72 bytes
 * and 1 op; Adam 16 parameters (no measured rate: 28 bytes each, 448 bytes) and 8 ops.
 * Totals: 168 FLOPs, 28 nonzero-columns, 336 bytes + Adam's 448, 22 ops -> 2.3232e-5 s. Exchange of layer 1 (width 2) with rank 1: 1 row in,
 * 2 out: 24 bytes, forward and backward: 2 (1e-5 + 24 / 1e6); all-reduce of 16 floats:
 * 64 bytes / 1e6 + 2 latencies; the loss: 2 latencies -> 1.72e-4 s. Memory: layer 0 136
 * bytes, layer 1 80, scratch 96, operators 224, parameters 256, ids 52 = 844. */
static void test_cost_hand_cached(void **state) {
  (void)state;
  struct rapa_shape s = {2, 4, 2, 2, 0, 0.0f, 0.0f, 0, 0};
  int64_t recv[2] = {0, 1}, send[2] = {0, 2};
  struct rapa_load load = {3, 1, 7, recv, send};
  struct rapa_links links;
  assert_int_equal(rapa_links_alloc(&links, 2), CG_OK);
  for (int i = 0; i < 4; i++) {
    links.bw_bps[i] = 1e6;
    links.lat_s[i] = 1e-5;
  }
  struct rapa_cost c;
  assert_int_equal(rapa_shape_params(&s), 16);
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, &links, 0, 2, &c), CG_OK);
  near(c.gemm_flops, 168, "gemm");
  near(c.spmm_nnzcols, 28, "spmm");
  near(c.mem_bytes, 336, "mem");
  near(c.adam_params, 16, "adam");
  near(c.ops, 22, "ops");
  near(c.comp_s, 2.3232e-5, "comp");
  near(c.halo_bytes, 48, "halo bytes");
  near(c.allreduce_bytes, 64, "allreduce bytes");
  near(c.comm_s, 1.72e-4, "comm");
  near(c.lambda_s, 2.3232e-5 + 1.72e-4, "lambda");
  near(c.memory_bytes, 844, "memory");
  assert_true(c.fits);
  /* memory against a device that has less: does not fit */
  struct rapa_rates small = unit_rates;
  small.free_bytes = 843;
  assert_int_equal(rapa_cost_rank(&s, &load, &small, &links, 0, 2, &c), CG_OK);
  assert_false(c.fits);
  /* staged rows: 24 bytes out (D2H) and 24 in (H2D) per step at 1e3 B/s more */
  small.free_bytes = 0;
  small.h2d_bps = small.d2h_bps = 1e3;
  assert_int_equal(rapa_cost_rank(&s, &load, &small, &links, 0, 2, &c), CG_OK);
  near(c.comm_s, 1.72e-4 + 2 * 24 / 1e3, "staged comm");
  /* a measured all-reduce in place of the ring's 8.4e-5 (64 bytes / 1e6 + 2 x 1e-5) */
  links.allreduce_s = 5e-4;
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, &links, 0, 2, &c), CG_OK);
  near(c.comm_s, 1.72e-4 - 8.4e-5 + 5e-4, "measured all-reduce");
  near(c.allreduce_bytes, 64, "the same all-reduce bytes");
  links.allreduce_s = 0;
  /* one rank alone: no communication */
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, NULL, 0, 1, &c), CG_OK);
  near(c.comm_s, 0, "comm alone");
  rapa_links_free(&links);
}

/* GCN 2 layers, 8 -> 4 -> 2, dropout 0.5 everywhere (both layers transform first); 10
 * inner, 5 halo rows, 30 nonzeros, one rank. By hand: layer 0 dropout of 15 x 8 (120
 * elements, 960 bytes), GEMM 2*15*8*4 forward and backward, SpMM 30*4 both ways, bias,
 * ReLU, bias-grad 320+320+160 bytes, 8 ops; layer 1 dropout 10 x 4 forward (40 elements,
 * 320 bytes; the backward reads the mask from the dropout's output: no draw), GEMMs 160 x
 * 3, SpMM 30*2 both ways, 160+80+480 bytes, 9 ops; loss 240 bytes; Adam 46 parameters (28
 * x 46 = 1288 bytes). Totals: 2400 FLOPs, 360 nonzero-columns, 3040 bytes + Adam's 1288,
 * 160 dropout elements, 26 ops -> 3.7928e-5 s. */
static void test_cost_hand_dropout(void **state) {
  (void)state;
  struct rapa_shape s = {2, 8, 4, 2, 0, 0.5f, 0.5f, 0, 0};
  int64_t zero[1] = {0};
  struct rapa_load load = {10, 5, 30, zero, zero};
  struct rapa_cost c;
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, NULL, 0, 1, &c), CG_OK);
  near(c.gemm_flops, 2400, "gemm");
  near(c.spmm_nnzcols, 360, "spmm");
  near(c.mem_bytes, 3040, "mem");
  near(c.adam_params, 46, "adam");
  near(c.ops, 26, "ops");
  near(c.comp_s, 3.7928e-5, "comp");
  struct rapa_rates bad = unit_rates;
  bad.gemm_flops = 0;
  assert_int_equal(rapa_cost_rank(&s, &load, &bad, NULL, 0, 1, &c), CG_ERR_ARG);
  cg_err_clear();
}

/* The optimizer at its own measured rate: the dropout test's shape and rank (46
 * parameters), adam_eps 1e6 parameters/s. Without it Adam costs 28 x 46 bytes at 1e9 B/s
 * = 1.288e-6 s; with it 46 / 1e6 = 4.6e-5 s: 3.7928e-5 - 1.288e-6 + 4.6e-5 = 8.264e-5 s.
 * Everything else (the work, the elementwise bytes) unchanged. */
static void test_cost_hand_adam(void **state) {
  (void)state;
  struct rapa_shape s = {2, 8, 4, 2, 0, 0.5f, 0.5f, 0, 0};
  int64_t zero[1] = {0};
  struct rapa_load load = {10, 5, 30, zero, zero};
  struct rapa_rates r = unit_rates;
  r.adam_eps = 1e6;
  struct rapa_cost c;
  assert_int_equal(rapa_cost_rank(&s, &load, &r, NULL, 0, 1, &c), CG_OK);
  near(c.adam_params, 46, "adam");
  near(c.mem_bytes, 3040, "mem");
  near(c.comp_s, 8.264e-5, "comp at the Adam rate");
}

/* The same shape and rank with sparse features, 25 % of the entries stored (30 of the
 * 15 x 8 rows x features layer 0 reads, local). Layer 0 then multiplies them as CSR:
 * its dropout over the 30 stored entries, X·W and Xᵀ·dT 30 x 4 stored-entry-columns
 * each (csr, csr_t), besides the aggregations' 30 x 4 each way (240 nonzero-columns), no
 * GEMM; bias, ReLU, bias-grad 800 bytes, 8 ops as before. Layer 1, loss and Adam
 * unchanged (480 FLOPs, 120 nonzero-columns, 1280 bytes + Adam's 1288, 40 dropout elements,
 * 18 ops). Totals: 480 FLOPs, 360 nonzero-columns, 2080 bytes + 1288, 40 dropout elements, 26 ops, and
 * 120 + 120 CSR stored-entry-columns and 30 dropped entries.
 * Without CSR rates (unit_rates: the fallbacks, SpMM rate 1e8 and a draw plus 8 bytes per
 * entry): 4.8e-7 + 3.6e-6 + 3.368e-6 + 4e-7 + 2.6e-5 + 2.4e-6 + 3e-7 + 2.4e-7 = 3.6788e-5
 * s, the price before the CSR rates existed. With them (csr_rate 1e7, csr_t_rate 5e6,
 * csr_drop_eps 1e6): 3.6788e-5 - 2.94e-6 + 1.2e-5 + 2.4e-5 + 3e-5 = 9.9848e-5 s.
 * Memory: the entries, their transpose and offsets 2 (8 x 30 + 8 x 15) = 720 bytes and
 * the dropout's values 120, against the dense 480 + 480: 120 bytes less. */
static void test_cost_hand_sparse(void **state) {
  (void)state;
  struct rapa_shape s = {2, 8, 4, 2, 0, 0.5f, 0.5f, 0, 0};
  int64_t zero[1] = {0};
  struct rapa_load load = {10, 5, 30, zero, zero};
  struct rapa_cost dense, c;
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, NULL, 0, 1, &dense), CG_OK);
  s.feat_density = 0.25;
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, NULL, 0, 1, &c), CG_OK);
  near(c.gemm_flops, 480, "gemm");
  near(c.spmm_nnzcols, 360, "spmm");
  near(c.csr_nnzcols, 120, "csr");
  near(c.csr_t_nnzcols, 120, "csr_t");
  near(c.csr_drop, 30, "csr dropout");
  near(c.mem_bytes, 2080, "mem");
  near(c.ops, 26, "ops");
  near(c.comp_s, 3.6788e-5, "comp");
  near(c.memory_bytes, dense.memory_bytes - 120, "memory");
  struct rapa_rates csr = unit_rates;
  csr.csr_rate = 1e7;
  csr.csr_t_rate = 5e6;
  csr.csr_drop_eps = 1e6;
  assert_int_equal(rapa_cost_rank(&s, &load, &csr, NULL, 0, 1, &c), CG_OK);
  near(c.comp_s, 9.9848e-5, "comp at the CSR rates");
  /* the dense model ignores them */
  s.feat_density = 0;
  assert_int_equal(rapa_cost_rank(&s, &load, &csr, NULL, 0, 1, &c), CG_OK);
  near(c.comp_s, dense.comp_s, "dense comp");
}

/* The same shape and rank with layer 0 exchanged (--layer0-halo exchange), 2 ranks: 5
 * halo rows in from rank 1, 6 out. Layer 0 then runs over the 10 inner rows only: its
 * dropout 10 x 8 (80 elements, 640 bytes), its GEMMs 2*10*8*4 forward and backward
 * (1280 FLOPs instead of 1920). Totals: 1760 FLOPs, 360 nonzero-columns, 2720 bytes + Adam's 1288, 120
 * dropout elements, 26 ops -> 3.6568e-5 s. Memory: its input and dropout 10 x 8 instead
 * of 15 x 8 (320 bytes less). Exchange: layer 1's 2-wide rows, 4 x 2 x 11 = 88 bytes
 * each way, and now layer 0's 4-wide ones, 176 each way: 528 halo bytes (176 local),
 * 2 (1e-5 + 176 / 1e6) s more. */
static void test_cost_hand_layer0_exchange(void **state) {
  (void)state;
  struct rapa_shape s = {2, 8, 4, 2, 0, 0.5f, 0.5f, 0, 0};
  int64_t recv[2] = {0, 5}, send[2] = {0, 6};
  struct rapa_load load = {10, 5, 30, recv, send};
  struct rapa_links links;
  assert_int_equal(rapa_links_alloc(&links, 2), CG_OK);
  for (int i = 0; i < 4; i++) {
    links.bw_bps[i] = 1e6;
    links.lat_s[i] = 1e-5;
  }
  struct rapa_cost lc, xc;
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, &links, 0, 2, &lc), CG_OK);
  near(lc.gemm_flops, 2400, "gemm (local)");
  near(lc.halo_bytes, 176, "halo bytes (local)");
  s.layer0_exchange = 1;
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, &links, 0, 2, &xc), CG_OK);
  near(xc.gemm_flops, 1760, "gemm");
  near(xc.spmm_nnzcols, 360, "spmm");
  near(xc.mem_bytes, 2720, "mem");
  near(xc.ops, 26, "ops");
  near(xc.comp_s, 3.6568e-5, "comp");
  near(xc.memory_bytes, lc.memory_bytes - 320, "memory");
  near(xc.halo_bytes, 528, "halo bytes");
  near(xc.comm_s, lc.comm_s + 2 * (1e-5 + 176 / 1e6), "comm");
  /* one rank: the flag changes the compute only (no exchange) */
  assert_int_equal(rapa_cost_rank(&s, &load, &unit_rates, NULL, 0, 1, &xc), CG_OK);
  near(xc.comm_s, 0, "comm alone");
  rapa_links_free(&links);
}

/* The path 0-1-2-3-4-5 owned 0 0 0 1 1 2. */
static void test_loads_path(void **state) {
  (void)state;
  static int64_t rowptr[7] = {0, 1, 3, 5, 7, 9, 10};
  static int32_t col[10] = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4};
  struct graph g;
  memset(&g, 0, sizeof g);
  g.n = 6;
  g.m = 10;
  g.rowptr = rowptr;
  g.colidx = col;
  const int32_t owner[6] = {0, 0, 0, 1, 1, 2};
  struct rapa_load L[3];
  assert_int_equal(rapa_loads_compute(&g, owner, 3, 1, L), CG_OK);
  const int64_t inner[3] = {3, 2, 1}, halo[3] = {1, 2, 1}, nnz[3] = {8, 6, 2};
  const int64_t recv[3][3] = {{0, 1, 0}, {1, 0, 1}, {0, 1, 0}};
  for (int p = 0; p < 3; p++) {
    assert_int_equal(L[p].n_inner, inner[p]);
    assert_int_equal(L[p].n_halo, halo[p]);
    assert_int_equal(L[p].nnz, nnz[p]);
    for (int q = 0; q < 3; q++) {
      assert_int_equal(L[p].recv_rows[q], recv[p][q]);
      assert_int_equal(L[p].send_rows[q], recv[q][p]);
    }
  }
  rapa_loads_free(L, 3);
  assert_int_equal(rapa_loads_compute(&g, owner, 3, 0, L), CG_OK);
  assert_int_equal(L[0].nnz, 5);
  rapa_loads_free(L, 3);
  const int32_t bad[6] = {0, 0, 0, 1, 1, 3};
  assert_int_equal(rapa_loads_compute(&g, bad, 3, 1, L), CG_ERR_ARG);
  cg_err_clear();
}

/* Weighted METIS: rates scaled by each rank's speed make capability = speed / sum
 * exactly, and each part's share of the vertex weight lands within 5 % of its target. */
static void weighted_on(const char *graph) {
  struct graph g;
  memset(&g, 0, sizeof g);
  assert_int_equal(graph_open(graph, &g), CG_OK);
  const struct rapa_shape s = {2, g.feat_dim, 16, g.num_classes, 0, 0.5f, 0.5f, 0, 0};
  const double sp2[2] = {1, 0.33}, sp4[4] = {1, 0.5, 0.25, 0.25};
  const double *speeds[2] = {sp2, sp4};
  const int Ps[2] = {2, 4};
  int32_t *owner = malloc((size_t)g.n * sizeof *owner), *again = malloc((size_t)g.n * sizeof *again);
  assert_non_null(owner);
  assert_non_null(again);
  for (int k = 0; k < 2; k++) {
    const int P = Ps[k];
    struct rapa_rates r[4];
    double sum = 0;
    for (int p = 0; p < P; p++) {
      r[p] = unit_rates;
      r[p].gemm_flops *= speeds[k][p];
      r[p].spmm_rate *= speeds[k][p];
      r[p].mem_bps *= speeds[k][p];
      r[p].rng_eps *= speeds[k][p];
      r[p].op_s /= speeds[k][p];
      sum += speeds[k][p];
    }
    struct rapa_split sp;
    assert_int_equal(rapa_partition_weighted(&g, &s, r, NULL, P, 1, -1.0, 0, owner, &sp), CG_OK);
    assert_int_equal(sp.passes, 1);
    for (int p = 0; p < P; p++) {
      near(sp.capability[p], speeds[k][p] / sum, "capability");
      const double dev = fabs(sp.share[p] - sp.target[p]) / sp.target[p];
      printf("  %s P=%d part %d: target %.4f, share %.4f (%.2f %%), predicted %.3g s\n", graph, P, p, sp.target[p],
             sp.share[p], 100 * dev, sp.cost[p].lambda_s);
      assert_true(dev <= 0.05);
    }
    /* deterministic, and rapa_split_evaluate prices the same split the same way */
    struct rapa_split ev;
    assert_int_equal(rapa_partition_weighted(&g, &s, r, NULL, P, 1, -1.0, 0, again, &ev), CG_OK);
    assert_memory_equal(owner, again, (size_t)g.n * sizeof *owner);
    assert_int_equal(rapa_split_evaluate(&g, &s, r, NULL, P, owner, &ev), CG_OK);
    for (int p = 0; p < P; p++) near(ev.cost[p].lambda_s, sp.cost[p].lambda_s, "evaluate");
  }
  free(owner);
  free(again);
  graph_free(&g);
}

static void test_weighted_synth(void **state) {
  (void)state;
  weighted_on("synth:small");
}

static void test_weighted_cora(void **state) {
  (void)state;
  char path[4096];
  snprintf(path, sizeof path, "%s/cora.cgr", CAPGNN_TEST_DATASETS);
  if (access(path, R_OK) != 0) skip();
  weighted_on(path);
}

/* Halo pruning on a hand-made graph: parts {0,1,2,3} and {4,5,6,7}, cut edges 3-4, 2-5,
 * 1-6, 3-6. Rank 1 is 10 times slower, so its lambda stays above the mean whatever it
 * drops: it removes all its halo vertices, in ascending score (GCN degrees with the
 * self-loop: d = 4 4 4 4 5 4 6 3):
 *   S(1) = 2/sqrt(4*6) = 0.408, S(2) = 2/sqrt(4*4) = 0.5, S(3) = 2/sqrt(4*5) + 2/sqrt(4*6)
 *   = 0.855 (each the halo of one part only: R = 1),
 * so the order is 1, 2, 3 and the 4 cut edges go, both directions: the pruned graph is the
 * two parts' own edges (2 x 9 entries), symmetric, and passes graph_check. Rank 0, below
 * the mean, drops nothing. eps <= 0 prunes nothing; a large eps stops before any round. */
static void test_prune_hand(void **state) {
  (void)state;
  static int64_t rowptr[9] = {0, 3, 6, 9, 12, 16, 19, 24, 26};
  static int32_t col[26] = {1, 2, 3, 0, 2, 6, 0, 1, 5, 0, 4, 6, 3, 5, 6, 7,
                            2, 4, 6, 1, 3, 4, 5, 7, 4, 6};
  static int32_t labels[8] = {0, 0, 0, 0, 1, 1, 1, 1};
  static uint8_t split[8] = {1, 1, 2, 3, 1, 1, 2, 3};
  static float feat[8 * 2] = {1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1};
  struct graph g;
  memset(&g, 0, sizeof g);
  snprintf(g.name, sizeof g.name, "hand8p");
  g.n = 8;
  g.m = 26;
  g.rowptr = rowptr;
  g.colidx = col;
  g.feat_dim = 2;
  g.feat_nnz = 16;
  g.feat_values = feat;
  g.num_classes = 2;
  g.labels = labels;
  g.split = split;
  graph_checksum_update(&g);
  assert_int_equal(graph_check(&g, "hand graph"), CG_OK);
  const int32_t owner[8] = {0, 0, 0, 0, 1, 1, 1, 1};
  const struct rapa_shape s = {2, 2, 4, 2, 0, 0.5f, 0.5f, 0, 0};
  struct rapa_rates r[2] = {unit_rates, unit_rates};
  r[1].gemm_flops /= 10;
  r[1].spmm_rate /= 10;
  r[1].mem_bps /= 10;
  r[1].rng_eps /= 10;
  r[1].op_s *= 10;
  struct graph pr;
  struct rapa_prune_result res;
  assert_int_equal(rapa_prune_halo(&g, owner, 2, &s, r, NULL, 0.05, &pr, &res), CG_OK);
  assert_int_equal(res.cut_edges, 4);
  assert_int_equal(res.removed_edges, 4);
  assert_int_equal(res.nlog, 3);
  const int32_t want[3] = {1, 2, 3};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(res.log_part[i], 1);
    assert_int_equal(res.log_vertex[i], want[i]);
  }
  assert_int_equal(pr.m, 18);
  assert_int_equal(graph_check(&pr, "pruned graph"), CG_OK);
  const int64_t want_ptr[9] = {0, 3, 5, 7, 8, 11, 13, 16, 18};
  const int32_t want_col[18] = {1, 2, 3, 0, 2, 0, 1, 0, 5, 6, 7, 4, 6, 4, 5, 7, 4, 6};
  assert_memory_equal(pr.rowptr, want_ptr, sizeof want_ptr);
  assert_memory_equal(pr.colidx, want_col, sizeof want_col);
  assert_true(res.after[1].lambda_s < res.before[1].lambda_s);
  graph_free(&pr);
  rapa_prune_result_free(&res);
  /* off, and a tolerance already met: the graph unchanged */
  const double epss[2] = {0.0, 100.0};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(rapa_prune_halo(&g, owner, 2, &s, r, NULL, epss[k], &pr, &res), CG_OK);
    assert_int_equal(res.removed_edges, 0);
    assert_int_equal(res.nlog, 0);
    assert_int_equal(pr.m, g.m);
    assert_memory_equal(pr.colidx, g.colidx, sizeof col);
    assert_true(pr.checksum == g.checksum);
    graph_free(&pr);
    rapa_prune_result_free(&res);
  }
}

/* On synth:small with equal METIS parts and one rank 4 times slower: pruning lowers the
 * spread of lambda, removes only cut edges, and the pruned graph is a valid graph. */
static void test_prune_synth(void **state) {
  (void)state;
  struct graph g;
  memset(&g, 0, sizeof g);
  assert_int_equal(graph_open("synth:small", &g), CG_OK);
  const struct rapa_shape s = {2, g.feat_dim, 16, g.num_classes, 0, 0.5f, 0.5f, 0, 0};
  struct rapa_rates r[2] = {unit_rates, unit_rates};
  r[1].gemm_flops /= 4;
  r[1].spmm_rate /= 4;
  r[1].mem_bps /= 4;
  r[1].rng_eps /= 4;
  r[1].op_s *= 4;
  int32_t *owner = malloc((size_t)g.n * sizeof *owner);
  assert_non_null(owner);
  for (int64_t v = 0; v < g.n; v++) owner[v] = v < g.n / 2 ? 0 : 1;
  struct graph pr;
  struct rapa_prune_result res;
  assert_int_equal(rapa_prune_halo(&g, owner, 2, &s, r, NULL, 0.05, &pr, &res), CG_OK);
  assert_true(res.removed_edges > 0 && res.removed_edges <= res.cut_edges);
  assert_int_equal(pr.m, g.m - 2 * res.removed_edges);
  assert_int_equal(graph_check(&pr, "pruned synth:small"), CG_OK);
  const double sb = fabs(res.before[0].lambda_s - res.before[1].lambda_s);
  const double sa = fabs(res.after[0].lambda_s - res.after[1].lambda_s);
  printf("  synth:small, speeds 1 / 0.25, halves: %lld of %lld cut edges removed (%lld halo vertices, %d rounds); "
         "|lambda_0 - lambda_1| %.3g -> %.3g s\n", (long long)res.removed_edges, (long long)res.cut_edges,
         (long long)res.nlog, res.rounds, sb, sa);
  assert_true(sa < sb);
  for (int64_t i = 0; i < res.nlog; i++) assert_int_equal(res.log_part[i], 1); /* only the slow rank is above */
  graph_free(&pr);
  rapa_prune_result_free(&res);
  free(owner);
  graph_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cost_hand_cached), cmocka_unit_test(test_cost_hand_dropout),
      cmocka_unit_test(test_cost_hand_adam),
      cmocka_unit_test(test_cost_hand_layer0_exchange), cmocka_unit_test(test_cost_hand_sparse),
      cmocka_unit_test(test_loads_path),       cmocka_unit_test(test_weighted_synth),
      cmocka_unit_test(test_weighted_cora),    cmocka_unit_test(test_prune_hand),
      cmocka_unit_test(test_prune_synth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
