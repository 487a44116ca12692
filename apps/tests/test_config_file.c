/* apps/tests/test_config_file.c — --config FILE resolution: file settings become the
 * long options they name, in file order, before the command line (which therefore
 * wins); later files override earlier ones; flags take true/false; unknown keys,
 * bad values, syntax errors and missing files are errors naming FILE:LINE. */
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "apps/config_file_internal.h"
#include "core/status.h"

static char dir[] = "/tmp/capgnn_config_XXXXXX";

enum { O_GRAPH = 1, O_LAYERS, O_HIDDEN, O_LR, O_LAYERNORM, O_QUIET, O_FEAT_NORM };
static const struct option opts[] = {
    {"graph", required_argument, NULL, O_GRAPH},         {"layers", required_argument, NULL, O_LAYERS},
    {"hidden", required_argument, NULL, O_HIDDEN},       {"lr", required_argument, NULL, O_LR},
    {"layernorm", no_argument, NULL, O_LAYERNORM},       {"quiet", no_argument, NULL, O_QUIET},
    {"feat-norm", required_argument, NULL, O_FEAT_NORM}, {"config", required_argument, NULL, 'c'},
    {NULL, 0, NULL, 0}};

struct settings {
  const char *graph, *feat_norm;
  int layers, hidden, layernorm, quiet;
  double lr;
};

/* What a command would end up with: parse the expanded list with getopt_long. */
static struct settings resolve(int argc, char **argv) {
  struct settings s = {"synth:small", "none", 2, 16, 0, 0, 0.01};
  int n;
  char **v;
  int st = config_file_expand(argc, argv, opts, &n, &v);
  if (st) cg_err_report("expand");
  assert_int_equal(st, CG_OK);
  assert_null(v[n]);
  static char keep[16][64];
  optind = 1;
  opterr = 0;
  int c, k = 0;
  while ((c = getopt_long(n, v, "", opts, NULL)) != -1) {
    switch (c) {
      case O_GRAPH: snprintf(keep[k], 64, "%s", optarg); s.graph = keep[k++]; break;
      case O_FEAT_NORM: snprintf(keep[k], 64, "%s", optarg); s.feat_norm = keep[k++]; break;
      case O_LAYERS: s.layers = atoi(optarg); break;
      case O_HIDDEN: s.hidden = atoi(optarg); break;
      case O_LR: s.lr = atof(optarg); break;
      case O_LAYERNORM: s.layernorm = 1; break;
      case O_QUIET: s.quiet = 1; break;
      default: fail_msg("unexpected option %d", c);
    }
  }
  config_file_argv_free(n, v);
  return s;
}

static const char *file(const char *name, const char *text) {
  static char p[8][512];
  static int i;
  char *q = p[i++ % 8];
  snprintf(q, 512, "%s/%s", dir, name);
  FILE *fp = fopen(q, "w");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
  return q;
}

static void test_resolution(void **state) {
  (void)state;
  const char *a = file("a.ini",
                       "# paper settings\n[data]\ngraph = reddit\nfeat_norm = row\n\n[model]\nlayers = 3\n"
                       "hidden = 256\nlayernorm = true\n; a comment\n[training]\nlr = 0.01\nquiet = off\n");
  const char *b = file("b.ini", "[model]\nhidden = 64\n");
  /* File only. */
  char *argv1[] = {"capgnn", "--config", (char *)a, NULL};
  struct settings s = resolve(3, argv1);
  assert_string_equal(s.graph, "reddit");
  assert_string_equal(s.feat_norm, "row");
  assert_int_equal(s.layers, 3);
  assert_int_equal(s.hidden, 256);
  assert_int_equal(s.layernorm, 1);
  assert_int_equal(s.quiet, 0);
  /* The command line wins, wherever it stands relative to --config. */
  char *argv2[] = {"capgnn", "--hidden", "32", "--config", (char *)a, "--lr", "0.5", NULL};
  s = resolve(7, argv2);
  assert_int_equal(s.hidden, 32);
  assert_true(s.lr == 0.5);
  assert_int_equal(s.layers, 3);
  /* A later file overrides an earlier one; --config=FILE works too. */
  char opt_b[600];
  snprintf(opt_b, sizeof opt_b, "--config=%s", b);
  char *argv3[] = {"capgnn", "--config", (char *)a, opt_b, NULL};
  s = resolve(4, argv3);
  assert_int_equal(s.hidden, 64);
  assert_string_equal(s.graph, "reddit");
  /* '#' after white space is a comment like ';', and quotes around a value are not
   * part of it; a '#' inside a word stays */
  const char *q = file("q.ini", "graph = \"karate\"\nfeat_norm = 'row'\nlr = 0.05 # higher\nhidden = 8 ; eight\n");
  char *argv5[] = {"capgnn", "--config", (char *)q, NULL};
  s = resolve(3, argv5);
  assert_string_equal(s.graph, "karate");
  assert_string_equal(s.feat_norm, "row");
  assert_true(s.lr == 0.05);
  assert_int_equal(s.hidden, 8);
  const char *h = file("h.ini", "graph = data/a#b.cgr\n");
  char *argv6[] = {"capgnn", "--config", (char *)h, NULL};
  s = resolve(3, argv6);
  assert_string_equal(s.graph, "data/a#b.cgr");
  /* a quoted value keeps a " #" (--print-config quotes such a value), and a comment may follow */
  const char *hq = file("hq.ini", "graph = \"/d/a #b.cgr\"   # the file\n");
  char *argv7[] = {"capgnn", "--config", (char *)hq, NULL};
  s = resolve(3, argv7);
  assert_string_equal(s.graph, "/d/a #b.cgr");
  /* No config: nothing changes. */
  char *argv4[] = {"capgnn", "--layers", "5", NULL};
  s = resolve(3, argv4);
  assert_int_equal(s.layers, 5);
  assert_int_equal(s.hidden, 16);
  /* The names of the files, for --print-config. */
  const char *names[4];
  assert_int_equal(config_file_names(4, argv3, names, 4), 2);
  assert_string_equal(names[0], a);
  assert_string_equal(names[1], b);
}

static void expect_error(const char *name, const char *text, int status, const char *what) {
  const char *p = file(name, text);
  char *argv[] = {"capgnn", "--config", (char *)p, NULL};
  int n;
  char **v;
  int st = config_file_expand(3, argv, opts, &n, &v);
  printf("  -> %s\n", cg_err_msg());
  assert_int_equal(st, status);
  assert_non_null(strstr(cg_err_msg(), p));
  assert_non_null(strstr(cg_err_msg(), what));
  assert_null(v);
}

static void test_errors(void **state) {
  (void)state;
  expect_error("typo.ini", "[model]\nlayers = 2\nhiden = 3\n", CG_ERR_ARG, ":3: unknown key 'hiden'; did you mean 'hidden'?");
  expect_error("flag.ini", "[model]\nlayernorm = maybe\n", CG_ERR_ARG, ":2: 'layernorm = maybe': expected true or false");
  expect_error("syntax.ini", "[model]\nlayers 2\n", CG_ERR_ARG, ":2: syntax error");
  expect_error("nested.ini", "config = other.ini\n", CG_ERR_ARG, ":1: 'config' cannot be set in a settings file");
  char *argv[] = {"capgnn", "--config", "/nonexistent/x.ini", NULL};
  int n;
  char **v;
  assert_int_equal(config_file_expand(3, argv, opts, &n, &v), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "/nonexistent/x.ini: cannot open"));
  char *argv2[] = {"capgnn", "--config", NULL};
  assert_int_equal(config_file_expand(2, argv2, opts, &n, &v), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "needs a value"));
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_resolution), cmocka_unit_test(test_errors)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
  return failed;
}
