/* graph/tests/test_open_hints.c — `--graph NAME` for a dataset that is not there:
 * for every known name the message says which files to download and the exact
 * `capgnn convert` command (with the folder it looked in); unknown names get the
 * generic ways to supply a graph. */
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
#include "graph_test_util.h"

static char *tmpdir;

static void expect_hint(const char *name, const char *download, const char *command) {
  struct graph g;
  assert_int_equal(graph_open(name, &g), CG_ERR_NOT_FOUND);
  const char *msg = cg_err_msg();
  printf("  %s -> %s\n", name, msg);
  char want[4400];
  snprintf(want, sizeof want, "%s/%s", tmpdir, name);
  assert_non_null(strstr(msg, want)); /* the path it tried */
  assert_non_null(strstr(msg, download));
  assert_non_null(strstr(msg, command));
  assert_null(g.rowptr);
}

static void test_known(void **state) {
  (void)state;
  setenv("CAPGNN_DATA", tmpdir, 1);
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "capgnn convert --from dgl-reddit --input REDDIT_DIR --output %s/reddit.cgr", tmpdir);
  expect_hint("reddit", "reddit_data.npz and reddit_graph.npz", cmd);
  expect_hint("reddit.cgr", "DGL's RedditDataset", cmd);
  snprintf(cmd, sizeof cmd, "capgnn convert --from ogb --input ogbn_products --output %s/ogbn-products.cgr", tmpdir);
  expect_hint("ogbn-products", "OGB's ogbn-products dataset folder", cmd);
  snprintf(cmd, sizeof cmd, "capgnn convert --from ogb --input ogbn_arxiv --output %s/ogbn-arxiv.cgr", tmpdir);
  expect_hint("ogbn-arxiv", "raw/ and split/", cmd);
  snprintf(cmd, sizeof cmd, "capgnn convert --from saint --input FLICKR_DIR --output %s/flickr.cgr", tmpdir);
  expect_hint("flickr", "GraphSAINT's Flickr data folder FLICKR_DIR (adj_full.npz, feats.npy, class_map.json, role.json", cmd);
  snprintf(cmd, sizeof cmd, "--from saint --input YELP_DIR --output %s/yelp.cgr", tmpdir);
  expect_hint("yelp", "GraphSAINT's Yelp", cmd);
  snprintf(cmd, sizeof cmd, "--from saint --input AMAZON_DIR --output %s/amazon-products.cgr", tmpdir);
  expect_hint("amazon-products", "GraphSAINT's Amazon", cmd);
  snprintf(cmd, sizeof cmd, "copy cora.cgr, distributed with capgnn's datasets");
  expect_hint("cora", "Planetoid", cmd);
  expect_hint("citeseer", "citeseer.cgr", "set CAPGNN_DATA to the folder that holds it");
  /* Unknown: the generic instructions, with this name filled in. */
  snprintf(cmd, sizeof cmd, "--output %s/mygraph.cgr", tmpdir);
  expect_hint("mygraph", "capgnn convert --from dgl-reddit|ogb|saint|edgelist", cmd);
  unsetenv("CAPGNN_DATA");
}

static void test_hint_api(void **state) {
  (void)state;
  char b[1024];
  assert_int_equal(graph_dataset_hint("ogbn-arxiv", "/data", b, sizeof b), 1);
  assert_non_null(strstr(b, "--output /data/ogbn-arxiv.cgr"));
  assert_int_equal(graph_dataset_hint("nope", "/data", b, sizeof b), 0);
  unsetenv("CAPGNN_DATA");
  assert_string_equal(graph_data_dir(), GRAPH_DEFAULT_DATA_DIR);
  setenv("CAPGNN_DATA", "/srv/graphs", 1);
  assert_string_equal(graph_data_dir(), "/srv/graphs");
  unsetenv("CAPGNN_DATA");
}

int main(void) {
  tmpdir = gt_mkdtemp();
  if (!tmpdir) return 1;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_known), cmocka_unit_test(test_hint_api)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  gt_rmdir(tmpdir);
  return failed;
}
