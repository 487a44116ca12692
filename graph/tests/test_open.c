/* graph/tests/test_open.c — graph_open's name resolution: synth specs, paths,
 * $CAPGNN_DATA/NAME.cgr, the ./data default, and a helpful "not found" message.
 * Uses a graph it writes itself into a temporary folder; no datasets needed. */
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
#include "graph_test_util.h"

static char *tmpdir;
static uint32_t tiny_checksum;

static int setup(void **state) {
  (void)state;
  tmpdir = gt_mkdtemp();
  if (!tmpdir) return -1;
  char path[4200], data[4200];
  snprintf(path, sizeof path, "%s/mygraph.cgr", tmpdir);
  snprintf(data, sizeof data, "%s/data", tmpdir);
  struct graph g;
  if (graph_synth("synth:tiny", &g) || graph_save_cgr(path, &g)) return -1;
  tiny_checksum = g.checksum;
  if (mkdir(data, 0755) != 0) return -1;
  snprintf(path, sizeof path, "%s/data/indata.cgr", tmpdir);
  if (graph_save_cgr(path, &g)) return -1;
  graph_free(&g);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  gt_rmdir(tmpdir);
  return 0;
}

static void open_ok(const char *name) {
  struct graph g;
  int st = graph_open(name, &g);
  if (st) cg_err_report("test");
  assert_int_equal(st, CG_OK);
  assert_int_equal(g.checksum, tiny_checksum);
  assert_string_equal(g.name, "tiny");
  graph_free(&g);
}

static void test_synth_spec(void **state) {
  (void)state;
  open_ok("synth:tiny");
  struct graph g;
  assert_int_equal(graph_open("synth:bogus", &g), CG_ERR_ARG);
}

static void test_path_and_data_dir(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/mygraph.cgr", tmpdir);
  open_ok(path); /* an existing path */
  setenv("CAPGNN_DATA", tmpdir, 1);
  open_ok("mygraph");     /* $CAPGNN_DATA/NAME.cgr */
  open_ok("mygraph.cgr"); /* ... with the extension given */
  unsetenv("CAPGNN_DATA");

  /* Unset: ./data is the default folder. */
  char cwd[4096];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(tmpdir), 0);
  open_ok("indata");
  open_ok("mygraph.cgr"); /* a relative path that exists */
  assert_int_equal(chdir(cwd), 0);
}

static void test_not_found(void **state) {
  (void)state;
  struct graph g;
  setenv("CAPGNN_DATA", tmpdir, 1);
  assert_int_equal(graph_open("nosuchgraph", &g), CG_ERR_NOT_FOUND);
  const char *msg = cg_err_msg();
  printf("  -> %s\n", msg);
  char tried[4200];
  snprintf(tried, sizeof tried, "%s/nosuchgraph.cgr", tmpdir);
  assert_non_null(strstr(msg, tried));       /* names the paths it tried */
  assert_non_null(strstr(msg, "CAPGNN_DATA")); /* says what to set */
  assert_non_null(strstr(msg, "capgnn convert"));
  assert_null(strstr(msg, "does not exist"));
  /* a CAPGNN_DATA that names no folder: said */
  char nodir[4200];
  snprintf(nodir, sizeof nodir, "%s/no-such-folder", tmpdir);
  setenv("CAPGNN_DATA", nodir, 1);
  assert_int_equal(graph_open("nosuchgraph", &g), CG_ERR_NOT_FOUND);
  printf("  -> %s\n", cg_err_msg());
  char said[4400];
  snprintf(said, sizeof said, "CAPGNN_DATA is '%s', a folder that does not exist)", nodir);
  assert_non_null(strstr(cg_err_msg(), said));
  unsetenv("CAPGNN_DATA");
  assert_int_equal(graph_open("nosuchgraph", &g), CG_ERR_NOT_FOUND);
  printf("  -> %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "./data/nosuchgraph.cgr"));
  assert_non_null(strstr(cg_err_msg(), "unset"));
  /* NAME.cgr in the current folder is not NAME (a dataset name): the message says so */
  char cwd[4096];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(tmpdir), 0);
  assert_int_equal(graph_open("mygraph", &g), CG_ERR_NOT_FOUND);
  printf("  -> %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "'mygraph.cgr' is in the current folder"));
  assert_non_null(strstr(cg_err_msg(), "give the file's path ('mygraph.cgr' or './mygraph')"));
  assert_int_equal(graph_open("nosuchgraph", &g), CG_ERR_NOT_FOUND);
  assert_null(strstr(cg_err_msg(), "in the current folder"));
  assert_int_equal(chdir(cwd), 0);
  assert_int_equal(graph_open("some/dir/x.cgr", &g), CG_ERR_NOT_FOUND);
  assert_int_equal(graph_open("", &g), CG_ERR_ARG);
  assert_int_equal(graph_open(NULL, &g), CG_ERR_ARG);
  assert_null(g.rowptr);
}

/* A name that resolves to a corrupt file reports the file's problem, not "not found". */
static void test_corrupt_file(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/broken.cgr", tmpdir);
  assert_int_equal(gt_write(path, "CAPGNN01 but far too short", 26), 0);
  setenv("CAPGNN_DATA", tmpdir, 1);
  struct graph g;
  assert_int_equal(graph_open("broken", &g), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "file too short"));
  unsetenv("CAPGNN_DATA");
}

int main(void) {
  unsetenv("CAPGNN_DATA");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_synth_spec),
      cmocka_unit_test(test_path_and_data_dir),
      cmocka_unit_test(test_not_found),
      cmocka_unit_test(test_corrupt_file),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
