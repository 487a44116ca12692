/* rapa/tests/test_mapping.c — the doctor's mapping checks (rapa_mapping_check) on
 * made-up jobs: a good 2 x 2 GPU job finds nothing; each mistake is found alone, once,
 * naming the ranks or host; unbound ranks and emulated nodes are not mistakes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rapa/rapa.h"

#define MAXW 16
static char warn[MAXW][RAPA_WARN_LEN];

/* Rank r of a job with `per_node` ranks per node, one host per node (hostN), 2 NUMA
 * nodes of 8 cores each, one InfiniBand NIC on NUMA node 0 and one on node 1; rank r
 * bound to its own 8 cores on the NUMA node of its own GPU. */
static void good(struct rapa_rank_facts *f, int n, int per_node) {
  memset(f, 0, (size_t)n * sizeof *f);
  for (int r = 0; r < n; r++) {
    const int local = r % per_node;
    f[r].rank = r;
    f[r].node = r / per_node;
    snprintf(f[r].host, sizeof f[r].host, "host%d", f[r].node);
    f[r].host_cores = f[r].host_pus = 16;
    f[r].bound_pus = 8;
    f[r].cpu_numa = local % 2;
    f[r].cpu_mask[0] = 0xffull << (8 * (local % 2));
    snprintf(f[r].bound_cpus, sizeof f[r].bound_cpus, "%d-%d", 8 * (local % 2), 8 * (local % 2) + 7);
    f[r].host_gpus = per_node;
    snprintf(f[r].gpu_name, sizeof f[r].gpu_name, "H100");
    snprintf(f[r].gpu_uuid, sizeof f[r].gpu_uuid, "GPU-%d-%d", f[r].node, local);
    f[r].gpu_numa = local % 2;
    f[r].nics = f[r].ib_nics = 2;
    f[r].nic_numa_mask = 3;
  }
}

static int check(struct rapa_rank_facts *f, int n) { return rapa_mapping_check(f, n, warn, MAXW); }

static int any(int nw, const char *needle) {
  for (int i = 0; i < nw && i < MAXW; i++)
    if (strstr(warn[i], needle)) return 1;
  return 0;
}

static void good_job_is_quiet(void **state) {
  (void)state;
  struct rapa_rank_facts f[4];
  good(f, 4, 2);
  int nodes, hosts;
  rapa_facts_counts(f, 4, &nodes, &hosts);
  assert_int_equal(nodes, 2);
  assert_int_equal(hosts, 2);
  assert_int_equal(check(f, 4), 0);
}

static void shared_gpu(void **state) {
  (void)state;
  struct rapa_rank_facts f[4];
  good(f, 4, 2);
  snprintf(f[3].gpu_uuid, sizeof f[3].gpu_uuid, "%s", f[2].gpu_uuid); /* ranks 2, 3: one GPU */
  f[3].gpu_numa = f[2].gpu_numa;
  f[3].cpu_numa = f[2].cpu_numa;
  const int nw = check(f, 4);
  assert_int_equal(nw, 1);
  assert_non_null(strstr(warn[0], "ranks 2, 3 share GPU"));
  assert_non_null(strstr(warn[0], "host1"));
  assert_non_null(strstr(warn[0], "other GPUs")); /* host1 has 2 GPUs, one idle */
  /* the same UUID on two hosts is two GPUs (UUIDs are unique; this is a made-up clash) */
  good(f, 4, 2);
  snprintf(f[2].gpu_uuid, sizeof f[2].gpu_uuid, "%s", f[0].gpu_uuid);
  assert_int_equal(check(f, 4), 0);
}

static void gpu_far_from_nic(void **state) {
  (void)state;
  struct rapa_rank_facts f[4];
  good(f, 4, 2);
  for (int r = 0; r < 4; r++) f[r].nic_numa_mask = 1; /* NICs on node 0 only */
  const int nw = check(f, 4);
  assert_int_equal(nw, 2); /* ranks 1 and 3: GPUs on node 1 */
  assert_non_null(strstr(warn[0], "rank 1: its GPU"));
  assert_non_null(strstr(warn[1], "rank 3: its GPU"));
  assert_true(any(nw, "UCX_NET_DEVICES"));
}

static void cpus_far_from_gpu(void **state) {
  (void)state;
  struct rapa_rank_facts f[2];
  good(f, 2, 2);
  f[1].cpu_numa = 0; /* bound on node 0, GPU on node 1 */
  f[1].cpu_mask[0] = 0xff00ull << 8; /* cores 16..23: no overlap with rank 0 */
  const int nw = check(f, 2);
  assert_int_equal(nw, 1);
  assert_non_null(strstr(warn[0], "rank 1 runs on CPUs of NUMA node 0, its GPU is on node 1"));
  assert_non_null(strstr(warn[0], "--map-by ppr:K:numa --bind-to numa")); /* not --bind-to numa alone */
}

static void uneven_nodes(void **state) {
  (void)state;
  struct rapa_rank_facts f[3];
  good(f, 3, 2); /* node 0: ranks 0, 1; node 1: rank 2 */
  f[2].host_gpus = 1;
  const int nw = check(f, 3);
  assert_int_equal(nw, 1);
  assert_non_null(strstr(warn[0], "nodes run 1 to 2 ranks"));
}

static void oversubscribed_and_overlapping(void **state) {
  (void)state;
  /* emulated nodes: 4 ranks on one 2-core host ("vm"), no GPU, no InfiniBand */
  struct rapa_rank_facts f[4];
  memset(f, 0, sizeof f);
  for (int r = 0; r < 4; r++) {
    f[r].rank = r;
    f[r].node = r / 2;
    snprintf(f[r].host, sizeof f[r].host, "vm");
    f[r].host_cores = f[r].host_pus = f[r].bound_pus = 2; /* unbound */
    f[r].cpu_mask[0] = 3;
    f[r].cpu_numa = 0;
    f[r].gpu_numa = -1;
    f[r].nics = 1;
  }
  int nw = check(f, 4);
  assert_int_equal(nw, 1); /* unbound ranks overlap by design; one host: no TCP warning */
  assert_non_null(strstr(warn[0], "host vm runs 4 ranks on 2 cores"));
  /* two ranks bound to the same core */
  f[0].bound_pus = f[1].bound_pus = 1;
  f[0].cpu_mask[0] = f[1].cpu_mask[0] = 1;
  snprintf(f[0].bound_cpus, sizeof f[0].bound_cpus, "0");
  snprintf(f[1].bound_cpus, sizeof f[1].bound_cpus, "0");
  nw = check(f, 4);
  assert_int_equal(nw, 2);
  assert_true(any(nw, "ranks 0 and 1 are bound to overlapping CPUs (0 and 0)"));
}

static void no_infiniband(void **state) {
  (void)state;
  struct rapa_rank_facts f[4];
  good(f, 4, 2);
  for (int r = 2; r < 4; r++) f[r].ib_nics = 0; /* host1 has Ethernet only */
  const int nw = check(f, 4);
  assert_int_equal(nw, 1);
  assert_non_null(strstr(warn[0], "host host1 has no InfiniBand device"));
  /* the same host split into emulated nodes: not a network at all */
  good(f, 4, 2);
  for (int r = 0; r < 4; r++) {
    snprintf(f[r].host, sizeof f[r].host, "one");
    f[r].ib_nics = 0;
    snprintf(f[r].gpu_uuid, sizeof f[r].gpu_uuid, "GPU-%d", r);
    f[r].host_gpus = 4;
    f[r].host_cores = f[r].host_pus = 32;
    f[r].cpu_mask[0] = 0xffull << (8 * r);
  }
  assert_int_equal(check(f, 4), 0);
}

static void warnings_beyond_the_buffer_are_counted(void **state) {
  (void)state;
  struct rapa_rank_facts f[40];
  good(f, 40, 2);
  for (int r = 0; r < 40; r++) f[r].nic_numa_mask = 1; /* 20 GPUs on node 1 far from the NICs */
  assert_int_equal(check(f, 40), 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(good_job_is_quiet),
      cmocka_unit_test(shared_gpu),
      cmocka_unit_test(gpu_far_from_nic),
      cmocka_unit_test(cpus_far_from_gpu),
      cmocka_unit_test(uneven_nodes),
      cmocka_unit_test(oversubscribed_and_overlapping),
      cmocka_unit_test(no_infiniband),
      cmocka_unit_test(warnings_beyond_the_buffer_are_counted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
