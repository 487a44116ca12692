/* test_part_stats — partition statistics on the hand-made 8-vertex graph compared
 * with values computed by hand (1 and 2 hops), the JSON output, and agreement with
 * part_local's halo on a larger graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <unistd.h>

#include "partition/partition.h"
#include "part_test_util.h"

/* owner B of test_part_plan: part 0 = {0,1,2}, part 1 = {3,4,6}, part 2 = {5,7}.
 * 1 hop:  halo 0 = {3,4,6}, halo 1 = {1,2,5,7}, halo 2 = {3,6}
 *         edges (row lengths) 2+3+4 = 9, 3+3+4 = 10, 3+2 = 5
 *         outer 1->3, 2->4, 2->6 = 3 | 3->1,3->5, 4->2, 6->2,6->5,6->7 = 6 | 5->3,5->6, 7->6 = 3
 *         cut edges (1,3) (2,4) (2,6) (3,5) (5,6) (6,7) = 6
 *         R(v): v0 0, v1 1, v2 1, v3 2 (parts 0, 2), v4 1, v5 1, v6 2 (parts 0, 2), v7 1
 * 2 hops: halo 0 = {3,4,5,6,7} (5 via 3 or 6, 7 via 6)
 *         halo 1 = {0,1,2,5,7}  (0 via 1 or 2)
 *         halo 2 = {1,2,3,4,6}  (1 via 3, 4 via 3 or 6, 2 via 6)
 *         R(v): v0 1, v1..v7 2 each. */
static const int32_t owner_b[8] = {0, 0, 0, 1, 1, 2, 1, 2};

static void expect_common(const struct part_stats *s) {
  const int64_t inner[3] = {3, 3, 2}, edges[3] = {9, 10, 5}, outer[3] = {3, 6, 3};
  assert_int_equal(s->n, 8);
  assert_int_equal(s->m, 24);
  assert_int_equal(s->nparts, 3);
  assert_true(test_i64_equal(s->inner, inner, 3, "inner"));
  assert_true(test_i64_equal(s->edges, edges, 3, "edges"));
  assert_true(test_i64_equal(s->outer_edges, outer, 3, "outer_edges"));
  assert_int_equal(s->edge_cut, 6);
  assert_int_equal(s->inner_min, 2);
  assert_int_equal(s->inner_max, 3);
  assert_true(fabs(s->imbalance - 3.0 * 3 / 8) < 1e-12);
  assert_string_equal(s->graph, "hand8");
}

static void test_hand_one_hop(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_stats s;
  assert_int_equal(part_stats_compute(&g, owner_b, 3, 1, &s), CG_OK);
  part_stats_print(stdout, &s);
  expect_common(&s);
  const int64_t halo[3] = {3, 4, 2}, hist[3] = {1, 5, 2};
  assert_true(test_i64_equal(s.halo, halo, 3, "halo"));
  assert_true(test_i64_equal(s.overlap_hist, hist, 3, "overlap_hist"));
  assert_int_equal(s.halo_total, 9);
  assert_true(s.replication == 9.0 / 8);
  assert_true(s.halo_ratio[0] == 1.0 && s.halo_ratio[1] == 4.0 / 3 && s.halo_ratio[2] == 1.0);
  part_stats_free(&s);
  part_stats_free(&s);
  graph_free(&g);
}

static void test_hand_two_hops(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_stats s;
  assert_int_equal(part_stats_compute(&g, owner_b, 3, 2, &s), CG_OK);
  part_stats_print(stdout, &s);
  expect_common(&s);
  const int64_t halo[3] = {5, 5, 5}, hist[3] = {0, 1, 7};
  assert_true(test_i64_equal(s.halo, halo, 3, "halo"));
  assert_true(test_i64_equal(s.overlap_hist, hist, 3, "overlap_hist"));
  assert_int_equal(s.halo_total, 15);
  assert_true(s.replication == 15.0 / 8);
  assert_true(s.halo_ratio[0] == 5.0 / 3 && s.halo_ratio[1] == 5.0 / 3 && s.halo_ratio[2] == 2.5);
  part_stats_free(&s);
  graph_free(&g);
}

static void test_errors(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_stats s;
  assert_int_equal(part_stats_compute(&g, owner_b, 3, 3, &s), CG_ERR_ARG);
  assert_int_equal(part_stats_compute(&g, owner_b, 2, 1, &s), CG_ERR_ARG); /* owner 2 >= 2 */
  assert_int_equal(part_stats_compute(&g, owner_b, 0, 1, &s), CG_ERR_ARG);
  assert_int_equal(part_stats_compute(&g, owner_b, 3, 1, &s), CG_OK);
  assert_int_equal(part_stats_write_json(&s, "/nonexistent-dir/x/stats.json"), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "/nonexistent-dir/x/stats.json"));
  part_stats_free(&s);
  graph_free(&g);
}

static int64_t json_int(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  assert_non_null(x);
  assert_true(cJSON_IsNumber(x));
  return (int64_t)x->valuedouble;
}

static void test_json(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  struct part_stats s;
  assert_int_equal(part_stats_compute(&g, owner_b, 3, 1, &s), CG_OK);
  snprintf(s.method, sizeof s.method, "hand");
  char path[] = "/tmp/capgnn-part-stats-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(part_stats_write_json(&s, path), CG_OK);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char buf[8192];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  buf[len] = '\0';
  fclose(f);
  remove(path);
  cJSON *root = cJSON_Parse(buf);
  assert_non_null(root);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "graph")->valuestring, "hand8");
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "method")->valuestring, "hand");
  assert_int_equal(json_int(root, "nparts"), 3);
  assert_int_equal(json_int(root, "hops"), 1);
  const cJSON *parts = cJSON_GetObjectItemCaseSensitive(root, "partitions");
  assert_int_equal(cJSON_GetArraySize(parts), 3);
  const cJSON *p1 = cJSON_GetArrayItem(parts, 1);
  assert_int_equal(json_int(p1, "inner"), 3);
  assert_int_equal(json_int(p1, "halo"), 4);
  assert_int_equal(json_int(p1, "edges"), 10);
  assert_int_equal(json_int(p1, "outer_edges"), 6);
  assert_true(fabs(cJSON_GetObjectItemCaseSensitive(p1, "halo_ratio")->valuedouble - 4.0 / 3) < 1e-12);
  const cJSON *tot = cJSON_GetObjectItemCaseSensitive(root, "totals");
  assert_int_equal(json_int(tot, "edge_cut"), 6);
  assert_int_equal(json_int(tot, "halo_total"), 9);
  assert_true(fabs(cJSON_GetObjectItemCaseSensitive(tot, "replication")->valuedouble - 1.125) < 1e-12);
  assert_true(fabs(cJSON_GetObjectItemCaseSensitive(tot, "replication_factor")->valuedouble - 2.125) < 1e-12);
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(tot, "overlap_hist");
  assert_int_equal(cJSON_GetArraySize(h), 3);
  assert_int_equal((int)cJSON_GetArrayItem(h, 0)->valuedouble, 1);
  assert_int_equal((int)cJSON_GetArrayItem(h, 1)->valuedouble, 5);
  assert_int_equal((int)cJSON_GetArrayItem(h, 2)->valuedouble, 2);
  cJSON_Delete(root);
  part_stats_free(&s);
  graph_free(&g);
}

/* On a larger graph, the 1-hop halo of the statistics is part_local's halo, the
 * histogram adds up, and the 2-hop halo contains the 1-hop one. */
static void test_consistent_with_local(void **state) {
  (void)state;
  struct graph g;
  test_graph_grid(&g, 23, 29);
  int64_t n = g.n;
  int32_t *owner = malloc((size_t)n * 4);
  for (int P = 2; P <= 6; P++) {
    struct part_options o = {.method = PART_RANDOM, .nparts = P, .seed = (uint64_t)P};
    assert_int_equal(part_assign(&g, &o, owner), CG_OK);
    struct part_stats s1, s2;
    assert_int_equal(part_stats_compute(&g, owner, P, 1, &s1), CG_OK);
    assert_int_equal(part_stats_compute(&g, owner, P, 2, &s2), CG_OK);
    int64_t hsum = 0, vsum = 0, osum = 0;
    for (int p = 0; p < P; p++) {
      struct part_local pl;
      assert_int_equal(part_local_build(&g, owner, P, p, GRAPH_NORM_GCN, 1, &pl), CG_OK);
      assert_int_equal(s1.inner[p], pl.n_inner);
      assert_int_equal(s1.halo[p], pl.n_halo);
      assert_true(s2.halo[p] >= s1.halo[p]);
      assert_int_equal(s1.edges[p] + pl.n_inner, pl.agg.nnz); /* + self-loops */
      osum += s1.outer_edges[p];
      part_local_free(&pl);
    }
    for (int k = 0; k < P; k++) {
      hsum += k * s1.overlap_hist[k];
      vsum += s1.overlap_hist[k];
    }
    assert_int_equal(hsum, s1.halo_total);
    assert_int_equal(vsum, n);
    assert_int_equal(osum, 2 * s1.edge_cut);
    assert_int_equal(s1.edge_cut, test_edge_cut(&g, owner));
    part_stats_free(&s1);
    part_stats_free(&s2);
  }
  free(owner);
  graph_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_one_hop),          cmocka_unit_test(test_hand_two_hops),
      cmocka_unit_test(test_errors),                cmocka_unit_test(test_json),
      cmocka_unit_test(test_consistent_with_local),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
