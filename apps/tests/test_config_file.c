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

enum { O_GRAPH = 1, O_LAYERS, O_HIDDEN, O_LR, O_LAYERNORM, O_QUIET, O_FEAT_NORM, O_PART_CACHE, O_NO_PART_CACHE };
/* (as capgnn train's: --part-cache DIR and its opposite --no-part-cache, alias --no-cache) */
static const struct option opts[] = {
    {"graph", required_argument, NULL, O_GRAPH},           {"layers", required_argument, NULL, O_LAYERS},
    {"hidden", required_argument, NULL, O_HIDDEN},         {"lr", required_argument, NULL, O_LR},
    {"layernorm", no_argument, NULL, O_LAYERNORM},         {"quiet", no_argument, NULL, O_QUIET},
    {"feat-norm", required_argument, NULL, O_FEAT_NORM},   {"config", required_argument, NULL, 'c'},
    {"part-cache", required_argument, NULL, O_PART_CACHE}, {"no-part-cache", no_argument, NULL, O_NO_PART_CACHE},
    {"no-cache", no_argument, NULL, O_NO_PART_CACHE},      {NULL, 0, NULL, 0}};

struct settings {
  const char *graph, *feat_norm, *part_cache;
  int layers, hidden, layernorm, quiet, no_part_cache;
  double lr;
};

/* What a command would end up with: parse the expanded list with getopt_long. */
static struct settings resolve(int argc, char **argv) {
  struct settings s = {"synth:small", "none", NULL, 2, 16, 0, 0, 0, 0.01};
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
      case O_PART_CACHE: snprintf(keep[k], 64, "%s", optarg); s.part_cache = keep[k++]; break;
      case O_NO_PART_CACHE: s.no_part_cache = 1; break;
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

/* Switches: false in a later file (or line) cancels an earlier true; the command line
 * wins over a file's switch, also over its opposite (no-part-cache vs part-cache), and
 * takes --SWITCH=true|false; the words left out no longer shift config_file_origin. */
static void test_switches(void **state) {
  (void)state;
  const char *a = file("sw_a.ini", "graph = reddit\nlayernorm = true\nquiet = yes\n");
  const char *b = file("sw_b.ini", "[model]\nlayernorm = false\nhidden = 64\n");
  char *argv1[] = {"capgnn", "--config", (char *)a, "--config", (char *)b, NULL};
  struct settings s = resolve(5, argv1);
  assert_int_equal(s.layernorm, 0); /* b's false over a's true */
  assert_int_equal(s.quiet, 1);
  assert_string_equal(s.graph, "reddit");
  assert_int_equal(s.hidden, 64);
  char *argv2[] = {"capgnn", "--config", (char *)b, "--config", (char *)a, NULL};
  assert_int_equal(resolve(5, argv2).layernorm, 1); /* the later file, either way */
  const char *same = file("sw_same.ini", "layernorm = on\n[model]\nlayernorm = off\n");
  char *argv3[] = {"capgnn", "--config", (char *)same, NULL};
  assert_int_equal(resolve(3, argv3).layernorm, 0); /* the later line of one file */

  /* the command line's option wins over a file's opposite switch (and its alias) */
  const char *nc = file("sw_nc.ini", "no-part-cache = true\n");
  const char *nc2 = file("sw_nc2.ini", "no_cache = 1\n");
  char *argv4[] = {"capgnn", "--part-cache", "/tmp/pc", "--config", (char *)nc, "--config", (char *)nc2, NULL};
  s = resolve(7, argv4);
  assert_string_equal(s.part_cache, "/tmp/pc");
  assert_int_equal(s.no_part_cache, 0);
  const char *pc = file("sw_pc.ini", "part-cache = /d/cache\n");
  char *argv5[] = {"capgnn", "--config", (char *)pc, "--no-cache", NULL};
  s = resolve(4, argv5);
  assert_null(s.part_cache);
  assert_int_equal(s.no_part_cache, 1);
  /* across files: a later file's option drops an earlier file's opposite switch; a
   * switch set to false only cancels that switch, not the folder */
  char *argv6[] = {"capgnn", "--config", (char *)nc, "--config", (char *)pc, NULL};
  s = resolve(5, argv6);
  assert_string_equal(s.part_cache, "/d/cache");
  assert_int_equal(s.no_part_cache, 0);
  const char *ncf = file("sw_ncf.ini", "no-part-cache = false\n");
  char *argv7[] = {"capgnn", "--config", (char *)pc, "--config", (char *)ncf, NULL};
  s = resolve(5, argv7);
  assert_string_equal(s.part_cache, "/d/cache");
  assert_int_equal(s.no_part_cache, 0);

  /* --SWITCH=true|false on the command line, wherever it stands relative to --config */
  char *argv8[] = {"capgnn", "--config", (char *)a, "--layernorm=false", NULL};
  assert_int_equal(resolve(4, argv8).layernorm, 0);
  char *argv9[] = {"capgnn", "--layernorm=no", "--config", (char *)a, NULL};
  s = resolve(4, argv9);
  assert_int_equal(s.layernorm, 0);
  assert_int_equal(s.quiet, 1);
  char *argv10[] = {"capgnn", "--layern=0", "--quiet=OFF", "--config", (char *)a, NULL}; /* a prefix, as getopt_long */
  s = resolve(5, argv10);
  assert_int_equal(s.layernorm, 0);
  assert_int_equal(s.quiet, 0);
  char *argv11[] = {"capgnn", "--layernorm=true", "--quiet=1", NULL};
  s = resolve(3, argv11);
  assert_int_equal(s.layernorm, 1);
  assert_int_equal(s.quiet, 1);
  char *argv12[] = {"capgnn", "--layernorm", "--layernorm=off", "--quiet=off", "--quiet", NULL};
  s = resolve(5, argv12);
  assert_int_equal(s.layernorm, 0); /* the later word of the command line */
  assert_int_equal(s.quiet, 1);
  char *argv13[] = {"capgnn", "--config", (char *)nc, "--no-cache=false", NULL};
  assert_int_equal(resolve(4, argv13).no_part_cache, 0);
  /* a value that is not true or false is refused and says how to turn the switch off */
  char *argv14[] = {"capgnn", "--config", (char *)a, "--layernorm=maybe", NULL};
  int n;
  char **v;
  assert_int_equal(config_file_expand(4, argv14, opts, &n, &v), CG_ERR_ARG);
  printf("  -> %s\n", cg_err_msg());
  assert_null(v);
  assert_non_null(strstr(cg_err_msg(), "option '--layernorm=maybe': a switch takes true or false"));
  assert_non_null(strstr(cg_err_msg(), "--layernorm=false turns it off"));
  /* after "--", words are operands; a value word is not an option */
  char *argv15[] = {"capgnn", "--config", (char *)a, "--graph", "--layernorm=false", "--", "--quiet=false", NULL};
  assert_int_equal(config_file_expand(7, argv15, opts, &n, &v), CG_OK);
  assert_int_equal(n, 7);
  assert_string_equal(v[1], "--layernorm");
  assert_string_equal(v[2], "--quiet");
  assert_string_equal(v[3], "--graph");
  assert_string_equal(v[4], "--layernorm=false");
  assert_string_equal(v[5], "--");
  assert_string_equal(v[6], "--quiet=false");
  config_file_argv_free(n, v);

  /* the words each file keeps still name it (a's graph is the command line's here) */
  char *argv16[] = {"capgnn", "--config", (char *)a, "--config", (char *)b, "--graph", "cora", NULL};
  assert_int_equal(config_file_expand(7, argv16, opts, &n, &v), CG_OK);
  assert_int_equal(n, 5);
  assert_string_equal(v[1], "--quiet");
  assert_string_equal(config_file_origin(1), a);
  assert_string_equal(v[2], "--hidden=64");
  assert_string_equal(config_file_origin(2), b);
  assert_string_equal(v[3], "--graph");
  assert_null(config_file_origin(3));
  assert_null(config_file_origin(0));
  config_file_argv_free(n, v);
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
  /* a ' ;' inside quotes still ends the line (inih): the unclosed quote is refused, not
   * read as the path "runs/a */
  expect_error("semi.ini", "[output]\nmetrics = \"runs/a ;1.jsonl\"\n", CG_ERR_ARG, "the quote is not closed");
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
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_resolution), cmocka_unit_test(test_switches),
                                     cmocka_unit_test(test_errors)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
  return failed;
}
