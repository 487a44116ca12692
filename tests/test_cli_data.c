/* tests/test_cli_data.c — the data commands through the real `capgnn` binary:
 * gen -> info, convert (report, malformed input, no partial output, usage errors),
 * `--graph NAME` for a missing dataset (download + convert instructions), and
 * --config with command-line overrides resolved by --print-config for every file
 * in configs/; --version, option range messages, an unusable --metrics path (found
 * before the graph is opened) and `partition` with --quiet and an unwritable cache.
 *
 *   test_cli_data CAPGNN_BINARY CONFIGS_DIR */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/status.h"
#include "graph_test_util.h"
#include "import_test_util.h"

static const char *capgnn, *configs;
static char *tmpdir;

struct run {
  int rc;
  char *out, *err;
};

static char *slurp(const char *path) {
  size_t n;
  unsigned char *b = gt_read(path, &n);
  char *s = malloc(n + 1);
  if (b && n) memcpy(s, b, n);
  s[n] = '\0';
  free(b);
  return s;
}

/* Runs "capgnn ARGS" with `env` (may be NULL) prepended; captures stdout and stderr. */
static struct run run(const char *env, const char *fmt, ...) {
  char args[8192], cmd[20480], o[4200], e[4200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(o, sizeof o, "%s/stdout", tmpdir);
  snprintf(e, sizeof e, "%s/stderr", tmpdir);
  snprintf(cmd, sizeof cmd, "%s '%s' %s > '%s' 2> '%s' < /dev/null", env ? env : "", capgnn, args, o, e);
  int status = system(cmd);
  struct run r = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(o), slurp(e)};
  printf("$ capgnn %s -> %d\n%s%s", args, r.rc, r.out, r.err);
  return r;
}

static void run_free(struct run *r) {
  free(r->out);
  free(r->err);
}

static void test_gen_info(void **state) {
  (void)state;
  struct run r = run(NULL, "gen tiny -o '%s/tiny.cgr'", tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "synth:tiny"));
  run_free(&r);
  r = run(NULL, "info '%s/tiny.cgr'", tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "checksum:   OK"));
  assert_non_null(strstr(r.out, "degree:"));
  assert_non_null(strstr(r.out, "split:      train"));
  run_free(&r);
  /* A damaged copy: header shown, check failed, exit 1. */
  char src[4200], dst[4200];
  snprintf(src, sizeof src, "%s/tiny.cgr", tmpdir);
  snprintf(dst, sizeof dst, "%s/cut.cgr", tmpdir);
  size_t n;
  unsigned char *b = gt_read(src, &n);
  assert_int_equal(gt_write(dst, b, n - 100), 0);
  free(b);
  r = run(NULL, "info '%s'", dst);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.out, "header (unverified): name 'tiny'"));
  assert_non_null(strstr(r.out, "checksum:   FAILED"));
  run_free(&r);
  r = run(NULL, "gen nosuchpreset -o '%s/x.cgr'", tmpdir);
  assert_int_equal(r.rc, 2);
  run_free(&r);
  /* Output through a symbolic link: the file it points to is replaced, the link
   * stays (writing a temporary and renaming it over the link used to replace the
   * link, and /dev/stdout itself when given that name). */
  char lnk[4200];
  snprintf(lnk, sizeof lnk, "%s/link.cgr", tmpdir);
  assert_int_equal(symlink(src, lnk), 0);
  r = run(NULL, "gen tiny:seed=5 -o '%s' --force", lnk); /* an existing graph: --force */
  assert_int_equal(r.rc, 0);
  run_free(&r);
  struct stat st;
  assert_int_equal(lstat(lnk, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  r = run(NULL, "info '%s'", src);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "checksum:   OK"));
  run_free(&r);
  assert_int_equal(remove(lnk), 0);
  /* -o /dev/stdout: the graph goes to stdout (here a file) and the report to stderr */
  r = run(NULL, "gen tiny -o /dev/stdout");
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.err, "wrote /dev/stdout"));
  run_free(&r);
  char so[4200], copy[4200];
  snprintf(so, sizeof so, "%s/stdout", tmpdir);
  snprintf(copy, sizeof copy, "%s/from_stdout.cgr", tmpdir);
  b = gt_read(so, &n);
  assert_non_null(b);
  assert_int_equal(gt_write(copy, b, n), 0);
  free(b);
  r = run(NULL, "info '%s'", copy);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "checksum:   OK"));
  run_free(&r);
}

/* A control byte in a file name (or a spec) comes out escaped as \xNN, never raw on the
 * terminal: gen's report, info's "file:" line on stdout and its error about a file of
 * another kind (core/log.h, cg_text_escape); a normal name is printed as it was. */
static void test_control_bytes_escaped(void **state) {
  (void)state;
  struct run r = run(NULL, "gen tiny -o '%s/ta\x1b[31mb.cgr'", tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "wrote "));
  assert_non_null(strstr(r.out, "/ta\\x1b[31mb.cgr: synth:tiny (generated in"));
  assert_null(strpbrk(r.out, "\x1b\x07"));
  run_free(&r);
  r = run(NULL, "info '%s/ta\x1b[31mb.cgr'", tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "/ta\\x1b[31mb.cgr ("));
  assert_non_null(strstr(r.out, "checksum:   OK"));
  assert_null(strpbrk(r.out, "\x1b\x07"));
  run_free(&r);
  char other[4200];
  snprintf(other, sizeof other, "%s/no\x07t.txt", tmpdir);
  assert_int_equal(gt_write(other, "hello\n", 6), 0);
  r = run(NULL, "info '%s'", other);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "/no\\x07t.txt: an unknown kind of file, not a capgnn graph"));
  assert_null(strpbrk(r.err, "\x1b\x07"));
  run_free(&r);
}

/* The .cgr version written: --block-shift implies version 2 (refused with version 1), and
 * convert --from cgr keeps its input's version and block size unless told otherwise. */
static unsigned cgr_version_of(const char *path) {
  size_t n;
  unsigned char *b = gt_read(path, &n);
  assert_non_null(b);
  assert_true(n >= 12);
  const unsigned v = b[8] | b[9] << 8 | b[10] << 16 | (unsigned)b[11] << 24; /* FORMAT.md: u32 at 8 */
  free(b);
  return v;
}

static void test_cgr_versions(void **state) {
  (void)state;
  char v2[4200], v1[4200], o[4200];
  snprintf(v2, sizeof v2, "%s/v2.cgr", tmpdir);
  snprintf(v1, sizeof v1, "%s/v1.cgr", tmpdir);
  snprintf(o, sizeof o, "%s/conv.cgr", tmpdir);
  struct run r = run(NULL, "gen tiny --block-shift 10 -o '%s' --quiet", v2);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  assert_int_equal(cgr_version_of(v2), 2);
  r = run(NULL, "gen tiny -o '%s' --quiet", v1);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  assert_int_equal(cgr_version_of(v1), 1);
  /* a path given without its .cgr finds the file */
  r = run(NULL, "info '%s/v1'", tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "v1.cgr ("));
  run_free(&r);
  r = run(NULL, "gen tiny --cgr-version 1 --block-shift 10 -o '%s/x.cgr'", tmpdir);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "does not apply to --cgr-version 1"));
  run_free(&r);
  /* the input's version and block size, as info names them, unless told otherwise */
  static const struct {
    const char *opts, *info;
  } keep[] = {{"", "block shift 10"}, {"--cgr-version 2", "block shift 10"}, {"--block-shift 12", "block shift 12"}};
  for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
    r = run(NULL, "convert --from cgr --input '%s' --output '%s' %s --quiet --force", v2, o, keep[k].opts);
    assert_int_equal(r.rc, 0);
    run_free(&r);
    assert_int_equal(cgr_version_of(o), 2);
    r = run(NULL, "info '%s'", o);
    assert_int_equal(r.rc, 0);
    if (!strstr(r.out, keep[k].info)) fail_msg("convert --from cgr %s: no '%s' in:\n%s", keep[k].opts, keep[k].info, r.out);
    run_free(&r);
  }
  r = run(NULL, "info '%s'", v1);
  assert_non_null(strstr(r.out, ".cgr version 1"));
  run_free(&r);
  /* --quiet: no INFO line (the reorder report) either */
  r = run(NULL, "convert --from cgr --input '%s' --output '%s' --reorder rcm --quiet --force", v1, o);
  assert_int_equal(r.rc, 0);
  assert_null(strstr(r.err, "order"));
  assert_null(strstr(r.out, "order"));
  run_free(&r);
  r = run(NULL, "convert --from cgr --input '%s' --output '%s' --reorder rcm --force", v1, o);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.err, "rcm order"));
  run_free(&r);
  r = run(NULL, "convert --from cgr --input '%s' --output '%s' --quiet --force", v1, o);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  assert_int_equal(cgr_version_of(o), 1);
  r = run(NULL, "convert --from cgr --input '%s' --output '%s' --block-shift 12 --quiet --force", v1, o);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  assert_int_equal(cgr_version_of(o), 2);
  r = run(NULL, "convert --from cgr --input '%s' --output '%s' --cgr-version 1 --quiet --force", v2, o);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  assert_int_equal(cgr_version_of(o), 1);
}

/* A word that looks like an option is not taken as the previous option's value. */
static void test_value_is_option(void **state) {
  (void)state;
  struct run r = run(NULL, "train --graph synth:tiny --epochs 1 --metrics --quiet");
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "option '--metrics' needs a value, got the option '--quiet'"));
  run_free(&r);
  r = run(NULL, "gen tiny -o --quiet");
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "option '-o' needs a value"));
  run_free(&r);
  /* a switch given a value: train (settings files) takes true or false and says how to
   * turn it off; a command without settings files takes none and says to leave it out;
   * an absurd epoch count */
  r = run(NULL, "train --graph synth:tiny --layernorm=maybe");
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "option '--layernorm=maybe': a switch takes true or false"));
  assert_non_null(strstr(r.err, "--layernorm=false turns it off"));
  run_free(&r);
  r = run(NULL, "partition --no-cache=false");
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "option '--no-cache' takes no value: it is a switch (give it to turn it on, "
                                "leave it out to keep it off)"));
  run_free(&r);
  r = run(NULL, "train --graph synth:tiny --epochs 2000000000");
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "--epochs 2000000000: expected an integer in [1, 10000000]"));
  run_free(&r);
  /* a bad value from a settings file names the file; a value starting with -- is
   * fine there */
  char ini[4200];
  snprintf(ini, sizeof ini, "%s/bad_value.ini", tmpdir);
  const char *text = "[model]\nhidden = abc\n";
  assert_int_equal(gt_write(ini, text, strlen(text)), 0);
  r = run(NULL, "--config '%s' --graph synth:tiny", ini);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "--hidden 'abc': expected an integer (set in"));
  assert_non_null(strstr(r.err, "bad_value.ini"));
  run_free(&r);
  text = "[output]\nmetrics = --odd-name.jsonl\n";
  assert_int_equal(gt_write(ini, text, strlen(text)), 0);
  r = run(NULL, "--config '%s' --print-config", ini);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "metrics = --odd-name.jsonl"));
  run_free(&r);
  /* the = form still passes such a value on */
  r = run(NULL, "partition --graph=synth:tiny --parts 2 --quiet --json='%s/--x.json'", tmpdir);
  assert_int_equal(r.rc, 0);
  run_free(&r);
}

static void test_convert(void **state) {
  (void)state;
  char p[4200];
  snprintf(p, sizeof p, "%s/edges.txt", tmpdir);
  const char *edges = "# u v\n0 1\n1 0\n1 2\n2 2\n2 3\n2 3\n";
  assert_int_equal(gt_write(p, edges, strlen(edges)), 0);
  const float x[4 * 2] = {1, 0, 0, 1, 1, 1, 0, 0};
  const int64_t y[4] = {0, 1, 1, -1};
  const uint8_t s[4] = {1, 2, 3, 0};
  snprintf(p, sizeof p, "%s/X.npy", tmpdir);
  assert_int_equal(it_write_npy(p, "<f4", "(4, 2)", x, sizeof x), 0);
  snprintf(p, sizeof p, "%s/Y.npy", tmpdir);
  assert_int_equal(it_write_npy(p, "<i8", "(4,)", y, sizeof y), 0);
  snprintf(p, sizeof p, "%s/S.npy", tmpdir);
  assert_int_equal(it_write_npy(p, "|u1", "(4,)", s, sizeof s), 0);
  struct run r = run(NULL,
                     "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels '%s/Y.npy' "
                     "--split '%s/S.npy' --output '%s/small.cgr' --quiet",
                     tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "read 6 entries"));
  assert_non_null(strstr(r.out, "removed 1 self-loops"));
  assert_non_null(strstr(r.out, "merged 1 duplicate entries"));          /* (2,3) twice */
  assert_non_null(strstr(r.out, "added 2 reverse entries"));             /* (2,1), (3,2) */
  assert_non_null(strstr(r.out, "result: 6 directed entries (3 undirected edges)"));
  assert_string_equal(r.err, ""); /* --quiet */
  run_free(&r);
  r = run(NULL, "info '%s/small.cgr'", tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "name:       small"));
  run_free(&r);

  /* A vertex id out of range: the file and line, exit 1, no output left. */
  snprintf(p, sizeof p, "%s/bad.txt", tmpdir);
  assert_int_equal(gt_write(p, "0 1\n1 4\n", strlen("0 1\n1 4\n")), 0);
  r = run(NULL,
          "convert --from edgelist --input '%s/bad.txt' --features '%s/X.npy' --labels '%s/Y.npy' --output "
          "'%s/bad.cgr'",
          tmpdir, tmpdir, tmpdir, tmpdir);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "bad.txt: line 2: vertex id out of range: 4"));
  snprintf(p, sizeof p, "%s/bad.cgr", tmpdir);
  assert_false(gt_exists(p));
  assert_false(gt_tmp_exists(p));
  run_free(&r);
  /* Usage errors exit 2. */
  r = run(NULL, "convert --input x --output y.cgr");
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "--from is required"));
  run_free(&r);
  r = run(NULL, "convert --from planetoid --input x --output y.cgr");
  assert_int_equal(r.rc, 2);
  run_free(&r);
  r = run(NULL, "convert --help");
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "ogbn-products"));
  run_free(&r);
}

/* A user's own small graph in folder d (edge list, features, labels): a path
 * 0-1-2-3-4-5 numbered out of order, so that rcm renames its vertices. */
static void own_files(char *d, size_t len, const char *sub) {
  char p[4300];
  snprintf(d, len, "%s/%s", tmpdir, sub);
  assert_int_equal(mkdir(d, 0755), 0);
  const char *edges = "0 5\n5 2\n2 4\n4 1\n1 3\n";
  snprintf(p, sizeof p, "%s/edges.txt", d);
  assert_int_equal(gt_write(p, edges, strlen(edges)), 0);
  const float x[6 * 2] = {1, 0, 0, 1, 1, 1, 0, 0, 2, 0, 0, 2};
  const int64_t y[6] = {0, 1, 1, 0, 1, 0};
  snprintf(p, sizeof p, "%s/X.npy", d);
  assert_int_equal(it_write_npy(p, "<f4", "(6, 2)", x, sizeof x), 0);
  snprintf(p, sizeof p, "%s/Y.npy", d);
  assert_int_equal(it_write_npy(p, "<i8", "(6,)", y, sizeof y), 0);
}

/* The report of a conversion with --reorder gives the checksum of the file it wrote
 * (the one `capgnn info` shows), not the checksum before reordering. */
static void test_convert_reorder_checksum(void **state) {
  (void)state;
  char d[4200], plain[32] = "", reord[32] = "", info[32] = "";
  own_files(d, sizeof d, "own_reorder");
  const char *c;
  struct run r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels "
                     "'%s/Y.npy' --output '%s/plain.cgr' --quiet", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_non_null(c = strstr(r.out, "checksum 0x"));
  snprintf(plain, sizeof plain, "%.10s", c + 9);
  run_free(&r);
  /* an unknown --from (a PyG user's 'pyg') names the way from PyG and DGL */
  r = run(NULL, "convert --from pyg --input '%s/edges.txt' -o '%s/pyg.cgr'", d, d);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "a PyG Data or a DGL graph: save its edges as text and its arrays with numpy, then "
                                "--from edgelist"));
  run_free(&r);
  /* -o is --output, as in capgnn gen and predict: the same file */
  r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels "
          "'%s/Y.npy' -o '%s/short.cgr' --quiet", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_non_null(c = strstr(r.out, "checksum 0x"));
  assert_memory_equal(c + 9, plain, 10);
  run_free(&r);
  r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels '%s/Y.npy' "
          "--output '%s/rcm.cgr' --reorder rcm --quiet", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_non_null(c = strstr(r.out, "  file:"));
  assert_non_null(c = strstr(c, "checksum 0x"));
  snprintf(reord, sizeof reord, "%.10s", c + 9);
  run_free(&r);
  r = run(NULL, "info '%s/rcm.cgr'", d);
  assert_int_equal(r.rc, 0);
  assert_non_null(c = strstr(r.out, "graph checksum 0x"));
  snprintf(info, sizeof info, "%.10s", c + 15);
  run_free(&r);
  assert_string_not_equal(plain, info); /* rcm did rename the vertices */
  assert_string_equal(reord, info);
}

/* convert --reorder --order-out: line v of the map is the input id of vertex v of the
 * written file, checked row by row (features, label, every edge); the map needs
 * --reorder, is never the graph it maps, and follows the output rules (an order file
 * is replaced, another file only with --force). */
static void test_convert_order_out(void **state) {
  (void)state;
  char d[4200], p[4300];
  own_files(d, sizeof d, "own_order");
  struct run r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels "
                     "'%s/Y.npy' --feat-storage dense --output '%s/plain.cgr' --quiet", d, d, d, d);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels '%s/Y.npy' "
          "--feat-storage dense --output '%s/rcm.cgr' --reorder rcm --order-out '%s/rcm.order' --quiet",
          d, d, d, d, d);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  snprintf(p, sizeof p, "%s/rcm.order", d);
  char *text = slurp(p);
  assert_non_null(text);
  assert_memory_equal(text, "# capgnn vertex order: ", 23);
  int32_t order[6];
  int seen[6] = {0};
  const char *c = strchr(text, '\n') + 1;
  for (int v = 0; v < 6; v++) {
    char *end = NULL;
    const long id = strtol(c, &end, 10);
    assert_true(end != c && *end == '\n' && id >= 0 && id < 6 && !seen[id]);
    seen[id] = 1;
    order[v] = (int32_t)id;
    c = end + 1;
  }
  assert_int_equal(*c, '\0');
  free(text);
  /* a newline (or another control byte) in a file name is escaped in the '#' line
   * (core/log.h, cg_text_escape): it stays one line, and the map still starts on the
   * second (numpy.loadtxt skips the '#' line, and only it) */
  snprintf(p, sizeof p, "%s/plain.cgr", d);
  size_t size;
  unsigned char *bytes = gt_read(p, &size);
  assert_non_null(bytes);
  snprintf(p, sizeof p, "%s/pl\tain.cgr", d);
  assert_int_equal(gt_write(p, bytes, size), 0);
  free(bytes);
  r = run(NULL, "convert --from cgr --input '%s/pl\tain.cgr' --output '%s/n\nl\x1b[1m.cgr' --reorder rcm "
          "--order-out '%s/nl.order' --quiet", d, d, d);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  snprintf(p, sizeof p, "%s/nl.order", d);
  text = slurp(p);
  assert_non_null(text);
  char *eol = strchr(text, '\n');
  assert_non_null(eol);
  *eol = '\0';
  printf("  %s\n", text);
  assert_non_null(strstr(text, "/pl\\x09ain.cgr of vertex v of "));
  assert_non_null(strstr(text, "/n\\x0al\\x1b[1m.cgr (order rcm)"));
  assert_null(strchr(text, '\x1b'));
  c = eol + 1;
  for (int v = 0; v < 6; v++) {
    char *end = NULL;
    assert_int_equal(strtol(c, &end, 10), order[v]); /* the same map as above */
    assert_true(end != c && *end == '\n');
    c = end + 1;
  }
  assert_int_equal(*c, '\0');
  free(text);
  struct graph a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  snprintf(p, sizeof p, "%s/plain.cgr", d);
  assert_int_equal(graph_load_cgr(p, &a), CG_OK);
  snprintf(p, sizeof p, "%s/rcm.cgr", d);
  assert_int_equal(graph_load_cgr(p, &b), CG_OK);
  int moved = 0;
  for (int v = 0; v < 6; v++) {
    const int u = order[v];
    moved |= u != v;
    assert_memory_equal(b.feat_values + 2 * v, a.feat_values + 2 * u, 2 * sizeof(float));
    assert_int_equal(b.labels[v], a.labels[u]);
    assert_int_equal(b.rowptr[v + 1] - b.rowptr[v], a.rowptr[u + 1] - a.rowptr[u]);
    for (int64_t k = b.rowptr[v]; k < b.rowptr[v + 1]; k++) {
      int found = 0;
      for (int64_t j = a.rowptr[u]; j < a.rowptr[u + 1]; j++) found |= a.colidx[j] == order[b.colidx[k]];
      assert_true(found);
    }
  }
  assert_true(moved); /* rcm renumbered this path graph */
  graph_free(&a);
  graph_free(&b);
  /* from a .cgr too, and an order file is replaced without --force */
  r = run(NULL, "convert --from cgr --input '%s/plain.cgr' --output '%s/rcm2.cgr' --reorder rcm "
          "--order-out '%s/rcm.order' --quiet", d, d, d);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  /* refusals: without --reorder; the output graph itself; another kind of file */
  r = run(NULL, "convert --from cgr --input '%s/plain.cgr' --output '%s/x.cgr' --order-out '%s/x.order'", d, d, d);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "--order-out writes the map of --reorder"));
  run_free(&r);
  r = run(NULL, "convert --from cgr --input '%s/plain.cgr' --output '%s/x.cgr' --reorder rcm --order-out "
          "'%s/./x.cgr'", d, d, d);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "--order-out and --output name the same file"));
  run_free(&r);
  snprintf(p, sizeof p, "%s/notes.txt", d);
  assert_int_equal(gt_write(p, "my notes\n", 9), 0);
  r = run(NULL, "convert --from cgr --input '%s/plain.cgr' --output '%s/y.cgr' --reorder rcm --order-out "
          "'%s/notes.txt'", d, d, d);
  assert_int_not_equal(r.rc, 0);
  run_free(&r);
  text = slurp(p);
  assert_string_equal(text, "my notes\n");
  free(text);
  snprintf(p, sizeof p, "%s/y.cgr", d);
  assert_int_not_equal(access(p, F_OK), 0); /* refused before any work */
  /* never a source file, even with --force: the labels of an import, and the --input
   * graph named without its .cgr (the map is written after they were read) */
  snprintf(p, sizeof p, "%s/Y.npy", d);
  text = slurp(p);
  assert_non_null(text);
  r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels '%s/Y.npy' "
          "--feat-storage dense --output '%s/z.cgr' --reorder rcm --order-out '%s/Y.npy' --force --quiet",
          d, d, d, d, d);
  assert_int_not_equal(r.rc, 0);
  assert_non_null(strstr(r.err, "is the --labels"));
  run_free(&r);
  char *after = slurp(p);
  assert_non_null(after);
  assert_memory_equal(after, text, 10); /* still the .npy ("\x93NUMPY...") */
  free(after);
  free(text);
  snprintf(p, sizeof p, "%s/plain.cgr", d);
  struct stat before, now;
  assert_int_equal(stat(p, &before), 0);
  r = run(NULL, "convert --from cgr --input '%s/plain' --output '%s/w.cgr' --reorder rcm --order-out "
          "'%s/plain.cgr' --force --quiet", d, d, d);
  assert_int_not_equal(r.rc, 0);
  assert_non_null(strstr(r.err, "is the --input"));
  run_free(&r);
  assert_int_equal(stat(p, &now), 0);
  assert_int_equal(now.st_size, before.st_size);
  assert_int_equal(graph_load_cgr(p, &a), CG_OK); /* still the graph */
  graph_free(&a);
}

/* A boolean mask given as --split (PyG's train_mask saved with numpy.save) is refused
 * with the line that makes a split, not read as "every True vertex is train". */
static void test_convert_mask_as_split(void **state) {
  (void)state;
  char d[4200], p[4300];
  own_files(d, sizeof d, "own_mask");
  const uint8_t mask[6] = {1, 1, 1, 0, 0, 0};
  snprintf(p, sizeof p, "%s/train_mask.npy", d);
  assert_int_equal(it_write_npy(p, "|b1", "(6,)", mask, sizeof mask), 0);
  struct run r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels "
                     "'%s/Y.npy' --split '%s/train_mask.npy' --output '%s/o.cgr'", d, d, d, d, d);
  assert_int_not_equal(r.rc, 0);
  assert_non_null(strstr(r.err, "a boolean array (a train/val/test mask?), not a split"));
  assert_non_null(strstr(r.err, "1 * train_mask + 2 * val_mask + 3 * test_mask"));
  run_free(&r);
  snprintf(p, sizeof p, "%s/o.cgr", d);
  assert_int_not_equal(access(p, F_OK), 0);
}

/* A NumPy edge array (PyG's edge_index saved with numpy.save) given as the edge list is
 * named as such, and its bytes are not printed to the terminal. */
static void test_convert_binary_edges(void **state) {
  (void)state;
  char d[4200], p[4300];
  own_files(d, sizeof d, "own_binary");
  const int64_t e[5 * 2] = {0, 5, 5, 2, 2, 4, 4, 1, 1, 3};
  snprintf(p, sizeof p, "%s/edges.npy", d);
  assert_int_equal(it_write_npy(p, "<i8", "(5, 2)", e, sizeof e), 0);
  struct run r = run(NULL, "convert --from edgelist --input '%s/edges.npy' --features '%s/X.npy' --labels "
                     "'%s/Y.npy' --output '%s/o.cgr'", d, d, d, d);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "edges.npy: line 1: binary data, not a text edge list (a NumPy .npy array"));
  assert_non_null(strstr(r.err, "numpy.savetxt"));
  assert_null(strstr(r.err, "NUMPY")); /* the file's bytes are not printed */
  run_free(&r);
  /* another binary file (a zip archive's header) */
  snprintf(p, sizeof p, "%s/edges.zip", d);
  assert_int_equal(gt_write(p, "PK\x03\x04\x14\x00\n", 7), 0);
  r = run(NULL, "convert --from edgelist --input '%s/edges.zip' --features '%s/X.npy' --labels '%s/Y.npy' "
          "--output '%s/o.cgr'", d, d, d, d);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "edges.zip: line 1: binary data, not a text edge list"));
  run_free(&r);
  /* ids written as floats (numpy.savetxt without fmt='%d') */
  snprintf(p, sizeof p, "%s/edges_f.txt", d);
  assert_int_equal(gt_write(p, "0.000000000000000000e+00 5.000000000000000000e+00\n", 50), 0);
  r = run(NULL, "convert --from edgelist --input '%s/edges_f.txt' --features '%s/X.npy' --labels '%s/Y.npy' "
          "--output '%s/o.cgr'", d, d, d, d);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "(vertex ids are integers: numpy.savetxt writes floats unless given fmt='%d')"));
  run_free(&r);
  snprintf(p, sizeof p, "%s/o.cgr", d);
  assert_false(gt_exists(p));
}

/* Features of shape (n, 0) are refused by convert, with the way to a graph without
 * features, instead of being written into a file that capgnn train then refuses. */
static void test_convert_no_feature_columns(void **state) {
  (void)state;
  char d[4200], p[4300];
  own_files(d, sizeof d, "own_nofeat");
  snprintf(p, sizeof p, "%s/X0.npy", d);
  assert_int_equal(it_write_npy(p, "<f4", "(6, 0)", "", 0), 0);
  struct run r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X0.npy' --labels "
                     "'%s/Y.npy' --output '%s/o.cgr'", d, d, d, d);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "X0.npy: shape (6, 0): no features per vertex"));
  assert_non_null(strstr(r.err, "--features identity"));
  run_free(&r);
  snprintf(p, sizeof p, "%s/o.cgr", d);
  assert_false(gt_exists(p));
}

/* Without --split, labels that leave the random 60/20/20 split without a train vertex
 * (none labelled, or one: 60 % of one is none) are refused by convert, as a --split
 * file without one is, instead of being written into a file capgnn train refuses. */
static void test_convert_random_split_no_train(void **state) {
  (void)state;
  char d[4200], p[4300];
  own_files(d, sizeof d, "own_unlabelled");
  const int64_t none[6] = {-1, -1, -1, -1, -1, -1}, one[6] = {-1, -1, 1, -1, -1, -1},
                two[6] = {-1, -1, 1, -1, 0, -1};
  snprintf(p, sizeof p, "%s/Y0.npy", d);
  assert_int_equal(it_write_npy(p, "<i8", "(6,)", none, sizeof none), 0);
  snprintf(p, sizeof p, "%s/Y1.npy", d);
  assert_int_equal(it_write_npy(p, "<i8", "(6,)", one, sizeof one), 0);
  snprintf(p, sizeof p, "%s/Y2.npy", d);
  assert_int_equal(it_write_npy(p, "<i8", "(6,)", two, sizeof two), 0);
  for (int k = 0; k < 2; k++) {
    struct run r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels "
                       "'%s/Y%d.npy' --output '%s/o.cgr'", d, d, d, k, d);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, k ? "Y1.npy: 1 of 6 vertices labelled" : "Y0.npy: 0 of 6 vertices labelled"));
    assert_non_null(strstr(r.err, "has no train vertex"));
    run_free(&r);
    snprintf(p, sizeof p, "%s/o.cgr", d);
    assert_false(gt_exists(p));
  }
  /* two labelled vertices: one train (floor(0.6 x 2)), one test */
  struct run r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels "
                     "'%s/Y2.npy' --output '%s/o.cgr' --quiet", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "split:    train 1, val 0, test 1, in no split 4"));
  run_free(&r);
}

/* Labels whose ids leave classes without a vertex (ids from 1, ids with gaps) are
 * noted with the way to number them 0..K-1; not when --classes fixes the count, nor
 * when every class has a vertex. */
static void test_convert_empty_classes_note(void **state) {
  (void)state;
  char d[4200], p[4300];
  own_files(d, sizeof d, "own_classes");
  const int64_t gaps[6] = {1, 3, 3, -1, 1, 3}; /* classes 0 and 2 empty of 4 */
  snprintf(p, sizeof p, "%s/Ygaps.npy", d);
  assert_int_equal(it_write_npy(p, "<i8", "(6,)", gaps, sizeof gaps), 0);
  struct run r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels "
                     "'%s/Ygaps.npy' --output '%s/o.cgr' --quiet", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "note:     2 of the 4 classes (largest label + 1) have no vertex"));
  assert_non_null(strstr(r.out, "numpy.unique(Y[Y >= 0], return_inverse=True)[1]"));
  run_free(&r);
  r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels '%s/Ygaps.npy' "
          "--classes 5 --output '%s/o.cgr' --quiet --force", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_null(strstr(r.out, "have no vertex"));
  run_free(&r);
  r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels '%s/Y.npy' "
          "--output '%s/o.cgr' --quiet --force", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_null(strstr(r.out, "note:"));
  run_free(&r);
}

/* An n x C array of 0/1 with exactly one class per labelled row (one-hot labels) is
 * taken as multi-label, as documented, and noted with the line that gives class ids;
 * a row with two classes makes it multi-label without the note. */
static void test_convert_one_hot_note(void **state) {
  (void)state;
  char d[4200], p[4300];
  own_files(d, sizeof d, "own_onehot");
  const uint8_t hot[6 * 3] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  uint8_t two[6 * 3];
  memcpy(two, hot, sizeof two);
  two[1] = 1;
  snprintf(p, sizeof p, "%s/Yhot.npy", d);
  assert_int_equal(it_write_npy(p, "|u1", "(6, 3)", hot, sizeof hot), 0);
  snprintf(p, sizeof p, "%s/Ytwo.npy", d);
  assert_int_equal(it_write_npy(p, "|u1", "(6, 3)", two, sizeof two), 0);
  struct run r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels "
                     "'%s/Yhot.npy' --output '%s/o.cgr' --quiet", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "labels:   3 classes, multi-label; 1 vertex unlabelled"));
  assert_non_null(strstr(r.out, "note:     every labelled vertex has exactly one class"));
  assert_non_null(strstr(r.out, "numpy.where(Y.any(1), Y.argmax(1), -1)"));
  run_free(&r);
  r = run(NULL, "convert --from edgelist --input '%s/edges.txt' --features '%s/X.npy' --labels '%s/Ytwo.npy' "
          "--output '%s/o.cgr' --quiet --force", d, d, d, d);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "multi-label"));
  assert_null(strstr(r.out, "exactly one class"));
  run_free(&r);
}

static void test_missing_dataset(void **state) {
  (void)state;
  char env[4300];
  snprintf(env, sizeof env, "CAPGNN_DATA='%s'", tmpdir);
  struct run r = run(env, "--graph reddit --epochs 1");
  assert_int_equal(r.rc, 1);
  char want[4400];
  snprintf(want, sizeof want, "capgnn convert --from dgl-reddit --input REDDIT_DIR --output %s/reddit.cgr", tmpdir);
  assert_non_null(strstr(r.err, want));
  assert_non_null(strstr(r.err, "reddit_data.npz and reddit_graph.npz"));
  run_free(&r);
  r = run(env, "--graph ogbn-products --epochs 1");
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "--from ogb --input ogbn_products"));
  run_free(&r);
}

static void test_config(void **state) {
  (void)state;
  /* Command line over file. */
  struct run r = run(NULL, "--config '%s/cora.ini' --hidden 32 --print-config", configs);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "hidden = 32"));
  assert_non_null(strstr(r.out, "layers = 2"));
  assert_non_null(strstr(r.out, "wd-scope = first"));
  assert_non_null(strstr(r.out, "graph = cora"));
  assert_non_null(strstr(r.out, "lr = 0.01\n"));
  assert_non_null(strstr(r.out, "weight-decay = 0.0005\n"));
  /* The printed settings are a settings file that resolves to the same settings. */
  char saved[4200];
  snprintf(saved, sizeof saved, "%s/resolved.ini", tmpdir);
  assert_int_equal(gt_write(saved, r.out, strlen(r.out)), 0);
  struct run r2 = run(NULL, "--config '%s' --print-config", saved);
  assert_int_equal(r2.rc, 0);
  const char *body1 = strchr(r.out, '\n'), *body2 = strchr(r2.out, '\n'); /* skip the "resolved from" line */
  assert_non_null(body1);
  assert_non_null(body2);
  assert_string_equal(body1, body2);
  run_free(&r2);
  run_free(&r);
  r = run(NULL, "--config '%s/reddit.ini' --print-config", configs);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "layers = 3"));
  assert_non_null(strstr(r.out, "hidden = 256"));
  assert_non_null(strstr(r.out, "epochs = 200"));
  run_free(&r);
  /* Every shipped file resolves. */
  DIR *d = opendir(configs);
  assert_non_null(d);
  struct dirent *de;
  int n = 0;
  while ((de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (l < 5 || strcmp(de->d_name + l - 4, ".ini") != 0) continue;
    r = run(NULL, "--config '%s/%s' --print-config", configs, de->d_name);
    assert_int_equal(r.rc, 0);
    run_free(&r);
    n++;
  }
  closedir(d);
  assert_true(n >= 8);
  /* A typo names the file and line. */
  char p[4200];
  snprintf(p, sizeof p, "%s/typo.ini", tmpdir);
  assert_int_equal(gt_write(p, "[model]\nhiden = 8\n", strlen("[model]\nhiden = 8\n")), 0);
  r = run(NULL, "--config '%s' --print-config", p);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "typo.ini:2: unknown key 'hiden'; did you mean 'hidden'?"));
  run_free(&r);
  /* ... and a DGL or PyG script's name gets capgnn's */
  snprintf(p, sizeof p, "%s/dgl.ini", tmpdir);
  assert_int_equal(gt_write(p, "[data]\ndataset = cora\n", strlen("[data]\ndataset = cora\n")), 0);
  r = run(NULL, "--config '%s' --print-config", p);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "dgl.ini:2: unknown key 'dataset'; did you mean 'graph'?"));
  run_free(&r);
}

/* A settings line longer than inih's 200 bytes (issue #18, item 6): a long metrics path
 * works, with an inline comment after it; a long key is an error that names the limit. */
static void test_config_long_lines(void **state) {
  (void)state;
  char dir[4200], ini[4200], metrics[8500];
  char name[161];
  memset(name, 'd', 160);
  name[160] = '\0';
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
  assert_int_equal(mkdir(dir, 0755), 0);
  memset(name, 'm', 120);
  snprintf(metrics, sizeof metrics, "%s/%.120s.jsonl", dir, name);
  assert_true(strlen(metrics) > 250);
  snprintf(ini, sizeof ini, "%s/long.ini", tmpdir);
  FILE *f = fopen(ini, "w");
  assert_non_null(f);
  fprintf(f, "# %0300d\n[output]\nmetrics = %s   ; where the records go\nquiet = true\n", 0, metrics);
  fclose(f);
  struct run r = run(NULL, "--config '%s' --graph synth:tiny --epochs 2 --threads 1", ini);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  char *m = slurp(metrics);
  assert_non_null(strstr(m, "\"summary\":true"));
  free(m);
  f = fopen(ini, "w");
  assert_non_null(f);
  fprintf(f, "[output]\n%0250d = 1\n", 0);
  fclose(f);
  r = run(NULL, "--config '%s' --print-config", ini);
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "long.ini:2: line of 254 characters: a section name or key must fit in"));
  run_free(&r);
}

/* Inputs of the wrong kind (issue #18, item 5): a named pipe as --graph or to `capgnn
 * info` is refused at once (it used to block forever in open(), waiting for a writer);
 * convert --input names what it got instead of "no such file". Each run has a time
 * limit, so that a regression fails instead of hanging the suite. */
static void test_wrong_kind_inputs(void **state) {
  (void)state;
  char fifo[4200];
  snprintf(fifo, sizeof fifo, "%s/pipe.cgr", tmpdir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  struct run r = run("timeout 20", "info '%s'", fifo);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "pipe.cgr: a named pipe (FIFO), not a .cgr file"));
  run_free(&r);
  r = run("timeout 20", "--graph '%s' --epochs 1 --quiet", fifo);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "a named pipe (FIFO), not a .cgr file"));
  run_free(&r);
  r = run("timeout 20", "--graph '%s' --epochs 1 --quiet", tmpdir);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "a folder, not a .cgr file"));
  run_free(&r);
  { /* info on another kind of file says what it is, not "checksum FAILED" */
    char js[4200];
    snprintf(js, sizeof js, "%s/m.jsonl", tmpdir);
    FILE *fp = fopen(js, "w");
    assert_non_null(fp);
    fputs("{\"epoch\": 1}\n", fp);
    fclose(fp);
    r = run("timeout 20", "info '%s'", js);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "JSON text"));
    assert_null(strstr(r.out, "checksum:"));
    run_free(&r);
  }
  r = run("timeout 20", "convert --from edgelist --input '%s' --features x.npy --labels y.npy --output '%s/o.cgr'",
          tmpdir, tmpdir);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, ": a folder, not a regular file (--from edgelist"));
  run_free(&r);
  r = run("timeout 20", "convert --from edgelist --input '%s' --features x.npy --labels y.npy --output '%s/o.cgr'",
          fifo, tmpdir);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "pipe.cgr: a named pipe (FIFO), not a regular file"));
  run_free(&r);
  r = run("timeout 20", "convert --from saint --input '%s' --output '%s/o.cgr'", fifo, tmpdir);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "pipe.cgr: a named pipe (FIFO), not a folder (--from saint"));
  run_free(&r);
  r = run("timeout 20", "convert --from ogb --input '%s/missing' --output '%s/o.cgr'", tmpdir, tmpdir);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "missing: no such folder (--from ogb"));
  run_free(&r);
  assert_int_equal(remove(fifo), 0);
}

/* ---- outputs never destroy data (issue #18, item 2) ---- */

struct kept {
  char path[4200];
  unsigned char *bytes;
  size_t n;
};

static void keep(struct kept *k, const char *path) {
  snprintf(k->path, sizeof k->path, "%s", path);
  k->bytes = gt_read(path, &k->n);
  assert_non_null(k->bytes);
}

/* The file holds exactly what it held when kept (and no temporary is left beside it). */
static void expect_intact(struct kept *k) {
  size_t n;
  unsigned char *now = gt_read(k->path, &n);
  if (!now || n != k->n || memcmp(now, k->bytes, n) != 0) fail_msg("%s was changed", k->path);
  free(now);
  char cmd[8600];
  snprintf(cmd, sizeof cmd, "! ls '%.4200s'.tmp.* >/dev/null 2>&1", k->path);
  assert_int_equal(system(cmd), 0);
}

static void expect_refused(struct run r, const char *want) {
  assert_int_equal(r.rc != 0, 1);
  if (!strstr(r.err, want)) fail_msg("expected '%s' in: %s", want, r.err);
  run_free(&r);
}

/* Each command that writes, pointed at a file it must not destroy: refused, the file
 * intact; with --force a file of another kind is replaced, an input never is. */
static void test_outputs_never_destroy(void **state) {
  (void)state;
  char d[4000], g[4200], notes[4200], edges[4200], xp[4200], yp[4200], ini[4200], pj[4200];
  snprintf(d, sizeof d, "%.3900s/outputs", tmpdir);
  assert_int_equal(mkdir(d, 0755), 0);
  snprintf(g, sizeof g, "%s/ds.cgr", d);
  snprintf(notes, sizeof notes, "%s/notes.txt", d);
  snprintf(edges, sizeof edges, "%s/edges.txt", d);
  snprintf(xp, sizeof xp, "%s/X.npy", d);
  snprintf(yp, sizeof yp, "%s/Y.npy", d);
  snprintf(ini, sizeof ini, "%s/run.ini", d);
  snprintf(pj, sizeof pj, "%s/part.json", d);
  struct run r = run(NULL, "gen tiny -o '%s' --quiet", g);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  assert_int_equal(gt_write(notes, "results of last week\n", 21), 0);
  assert_int_equal(gt_write(edges, "0 1\n1 2\n2 3\n", 12), 0);
  const float x[4 * 2] = {1, 0, 0, 1, 1, 1, 0, 0};
  const int64_t y[4] = {0, 1, 1, -1};
  assert_int_equal(it_write_npy(xp, "<f4", "(4, 2)", x, sizeof x), 0);
  assert_int_equal(it_write_npy(yp, "<i8", "(4,)", y, sizeof y), 0);
  assert_int_equal(gt_write(ini, "[model]\nhidden = 8\n", 19), 0);
  static struct kept k[6];
  const char *kept_paths[6] = {g, notes, edges, xp, yp, ini};
  for (int i = 0; i < 6; i++) keep(&k[i], kept_paths[i]);
  const char *train = "--graph synth:tiny --epochs 1 --threads 1 --quiet";

  /* train --metrics naming a dataset or a text file */
  expect_refused(run(NULL, "%s --metrics '%s'", train, g), "is not a capgnn metrics file");
  expect_refused(run(NULL, "%s --metrics '%s'", train, notes), "is not a capgnn metrics file (JSON Lines) (text "
                                                                "starting 'results of last week')");
  /* ... the graph of the run itself, by path or by dataset name: never, even with --force */
  expect_refused(run(NULL, "--graph '%s' --epochs 1 --quiet --metrics '%s' --force", g, g), "name the same file");
  char env[4300];
  snprintf(env, sizeof env, "CAPGNN_DATA='%s'", d);
  expect_refused(run(env, "--graph ds --epochs 1 --quiet --metrics '%s' --force", g),
                 "is the --graph");
  /* ... a settings file of the run, even with --force */
  expect_refused(run(NULL, "--config '%s' %s --metrics '%s' --force", ini, train, ini), "is the --config");
  /* --checkpoint over a text file */
  expect_refused(run(NULL, "%s --checkpoint '%s'", train, notes), "is not a capgnn checkpoint");
  /* partition --json naming the input graph (even with --force), or a text file */
  expect_refused(run(NULL, "partition --graph '%s' --parts 2 --no-part-cache --quiet --json '%s' --force", g, g),
                 "is the --graph");
  expect_refused(run(NULL, "partition --graph '%s' --parts 2 --no-part-cache --quiet --json '%s'", g, notes),
                 "is not a partition statistics file");
  /* convert --output equal to an input (with --force too) or over an existing dataset */
  const char *inputs[3] = {edges, xp, yp};
  for (int i = 0; i < 3; i++)
    expect_refused(run(NULL, "convert --from edgelist --input '%s' --features '%s' --labels '%s' --output '%s' "
                             "--force --quiet", edges, xp, yp, inputs[i]),
                   "of this run: writing there would destroy it");
  expect_refused(run(NULL, "convert --from edgelist --input '%s' --features '%s' --labels '%s' --output '%s' "
                           "--quiet", edges, xp, yp, g),
                 "a graph (.cgr) exists there; refusing to replace it");
  /* gen -o over an existing dataset or a text file */
  expect_refused(run(NULL, "gen small -o '%s' --quiet", g), "a graph (.cgr) exists there; refusing to replace it");
  expect_refused(run(NULL, "gen small -o '%s' --quiet", notes), "is not a graph (.cgr)");
  for (int i = 0; i < 6; i++) expect_intact(&k[i]);

  /* what may be replaced is: an earlier output of the same kind, or another kind with
   * --force */
  r = run(NULL, "partition --graph '%s' --parts 2 --no-part-cache --quiet --json '%s'", g, pj);
  assert_int_equal(r.rc, 0);
  {
    char said[4300]; /* where the statistics went, as train and the other commands say */
    snprintf(said, sizeof said, "statistics: %s\n", pj);
    assert_non_null(strstr(r.out, said));
  }
  run_free(&r);
  r = run(NULL, "partition --graph '%s' --parts 3 --no-part-cache --quiet --json '%s'", g, pj);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  char *text = slurp(pj);
  assert_non_null(strstr(text, "\"nparts\":\t3"));
  free(text);
  r = run(NULL, "%s --metrics '%s' --force", train, notes);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.err, "replacing the existing file (--force)"));
  run_free(&r);
  text = slurp(notes);
  assert_non_null(strstr(text, "\"summary\":true"));
  free(text);
  r = run(NULL, "gen small -o '%s' --force --quiet", g);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  for (int i = 0; i < 6; i++) free(k[i].bytes);
}

static int count_of(const char *s, const char *what) {
  int k = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p++) k++;
  return k;
}

/* --force over a file of another kind is said when the file is replaced, once: a run that
 * fails after the output check (a graph not found) says nothing and leaves the file as it
 * was (train --metrics / --checkpoint / --save-best, predict --output, partition and plan
 * --json used to say "replacing" at the check, then fail); a checkpoint written at every
 * epoch is named once. */
static void test_force_said_when_written(void **state) {
  (void)state;
  char d[4000], m[4200], c[4200], b[4200], p[4200], ck[4200];
  char *const f[4] = {m, c, b, p};
  snprintf(d, sizeof d, "%.3900s/force-later", tmpdir);
  assert_int_equal(mkdir(d, 0755), 0);
  static const char *const names[4] = {"m.txt", "ck.txt", "best.txt", "p.npy"};
  static struct kept k[4];
  for (int i = 0; i < 4; i++) {
    snprintf(f[i], sizeof m, "%s/%s", d, names[i]);
    assert_int_equal(gt_write(f[i], "results of last week\n", 21), 0);
    keep(&k[i], f[i]);
  }
  snprintf(ck, sizeof ck, "%s/model.ckpt", d);
  struct run r = run(NULL, "--graph synth:tiny --epochs 1 --threads 1 --quiet --checkpoint '%s'", ck);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  const char *const nosuch = "--graph nosuch-graph --epochs 3 --threads 1 --quiet";
  static const char *const failing[] = {"%s --metrics '%s' --force", "%s --checkpoint '%s' --force",
                                        "%s --save-best '%s' --force"};
  for (int i = 0; i < 3; i++) {
    r = run(NULL, failing[i], nosuch, f[i]);
    assert_int_not_equal(r.rc, 0);
    if (strstr(r.err, "replacing")) fail_msg("a failed run warned of a replacement:\n%s", r.err);
    run_free(&r);
  }
  r = run(NULL, "predict --checkpoint '%s' --graph nosuch-graph --output '%s' --force", ck, f[3]);
  assert_int_not_equal(r.rc, 0);
  if (strstr(r.err, "replacing")) fail_msg("a failed predict warned of a replacement:\n%s", r.err);
  run_free(&r);
  r = run(NULL, "partition --graph nosuch-graph --parts 2 --quiet --json '%s' --force", f[0]);
  assert_int_not_equal(r.rc, 0);
  if (strstr(r.err, "replacing")) fail_msg("a failed partition warned of a replacement:\n%s", r.err);
  run_free(&r);
  r = run(NULL, "plan --graph nosuch-graph --parts 2 --link-gbps 1 --quiet --json '%s' --force", f[0]);
  assert_int_not_equal(r.rc, 0);
  if (strstr(r.err, "replacing")) fail_msg("a failed plan warned of a replacement:\n%s", r.err);
  run_free(&r);
  for (int i = 0; i < 4; i++) expect_intact(&k[i]);
  /* written: each file named once, a checkpoint saved at each of 3 epochs too */
  r = run(NULL, "--graph synth:tiny --epochs 3 --threads 1 --quiet --metrics '%s' --checkpoint '%s' "
          "--checkpoint-every 1 --save-best '%s' --force", f[0], f[1], f[2]);
  assert_int_equal(r.rc, 0);
  for (int i = 0; i < 3; i++) {
    char said[4300];
    snprintf(said, sizeof said, "%.4200s: replacing the existing file (--force)", f[i]);
    if (count_of(r.err, said) != 1) fail_msg("'%s' not said once:\n%s", said, r.err);
  }
  run_free(&r);
  r = run(NULL, "predict --checkpoint '%s' --output '%s' --force", ck, f[3]);
  assert_int_equal(r.rc, 0);
  assert_int_equal(count_of(r.err, "replacing the existing file (--force)"), 1);
  run_free(&r);
  for (int i = 0; i < 4; i++) free(k[i].bytes);
}

/* convert --force over an existing file, with an input that turns out bad: the error
 * alone, the file intact, and no "replacing" warning for a file that is not replaced
 * (it used to be said before the input was read, and twice for --from cgr); a good
 * conversion says it once, when it writes. */
static void test_convert_force_bad_input(void **state) {
  (void)state;
  char d[4000], notes[4200], g[4200], cut[4200], edges[4200], yp[4200];
  snprintf(d, sizeof d, "%.3900s/convert-force", tmpdir);
  assert_int_equal(mkdir(d, 0755), 0);
  snprintf(notes, sizeof notes, "%s/notes.txt", d);
  snprintf(g, sizeof g, "%s/g.cgr", d);
  snprintf(cut, sizeof cut, "%s/cut.cgr", d);
  snprintf(edges, sizeof edges, "%s/edges.txt", d);
  snprintf(yp, sizeof yp, "%s/Y.npy", d);
  struct run r = run(NULL, "gen tiny -o '%s' --quiet", g);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  size_t n;
  unsigned char *bytes = gt_read(g, &n);
  assert_non_null(bytes);
  assert_int_equal(gt_write(cut, bytes, n / 2), 0); /* a truncated graph */
  free(bytes);
  assert_int_equal(gt_write(notes, "results of last week\n", 21), 0);
  assert_int_equal(gt_write(edges, "0 1\n1 2\n", 8), 0);
  const int64_t y[3] = {0, 1, 1};
  assert_int_equal(it_write_npy(yp, "<i8", "(3,)", y, sizeof y), 0);
  static struct kept k;
  keep(&k, notes);
  r = run(NULL, "convert --from cgr --input '%s' --output '%s' --force", cut, notes);
  assert_int_not_equal(r.rc, 0);
  if (strstr(r.err, "replacing")) fail_msg("a failed conversion warned of a replacement:\n%s", r.err);
  run_free(&r);
  expect_intact(&k);
  r = run(NULL, "convert --from edgelist --input '%s' --features identity --labels '%s/none.npy' --output '%s' "
          "--force", edges, d, notes);
  assert_int_not_equal(r.rc, 0);
  if (strstr(r.err, "replacing")) fail_msg("a failed import warned of a replacement:\n%s", r.err);
  run_free(&r);
  expect_intact(&k);
  free(k.bytes);
  r = run(NULL, "convert --from edgelist --input '%s' --features identity --labels '%s' --output '%s' --force "
          "--quiet", edges, yp, notes);
  assert_int_equal(r.rc, 0);
  assert_int_equal(count_of(r.err, "replacing the existing file (--force)"), 1);
  run_free(&r);
  assert_int_equal(gt_write(notes, "results of last week\n", 21), 0);
  r = run(NULL, "convert --from cgr --input '%s' --output '%s' --force", g, notes);
  assert_int_equal(r.rc, 0);
  assert_int_equal(count_of(r.err, "replacing the existing file (--force)"), 1);
  run_free(&r);
}

/* What a new user's pass found: (1) a read-only file is kept (rename in a writable
 * folder would ignore its mode) unless --force; (2) a user's own JSON Lines log with
 * an "epoch" key is not taken for capgnn's metrics file, while capgnn's own still is;
 * (3) a missing folder is named as such; (4) --print-config checks no output (no
 * "replacing" warning for a file it does not write) and prints neither force nor
 * resume, so that a run from the printed file asks before replacing files. */
static void test_outputs_review(void **state) {
  (void)state;
  char d[4000], m[4200], ck[4200], dgl[4200], pw[4200], ini[4200], want[4300];
  snprintf(d, sizeof d, "%.3900s/outputs-review", tmpdir);
  assert_int_equal(mkdir(d, 0755), 0);
  snprintf(m, sizeof m, "%s/m.jsonl", d);
  snprintf(ck, sizeof ck, "%s/c.ckpt", d);
  snprintf(dgl, sizeof dgl, "%s/dgl.jsonl", d);
  snprintf(pw, sizeof pw, "%s/pw.cgr", d);
  snprintf(ini, sizeof ini, "%s/printed.ini", d);
  const char *train = "--graph synth:tiny --epochs 1 --threads 1 --quiet";
  struct run r = run(NULL, "%s --metrics '%s' --checkpoint '%s'", train, m, ck);
  assert_int_equal(r.rc, 0);
  run_free(&r);

  /* 1. read-only: refused, with or without an earlier output of the kind there */
  assert_int_equal(chmod(m, 0444), 0);
  assert_int_equal(chmod(ck, 0444), 0);
  static struct kept k[2];
  keep(&k[0], m);
  keep(&k[1], ck);
  expect_refused(run(NULL, "%s --metrics '%s'", train, m), "the file is read-only");
  r = run(NULL, "%s --checkpoint '%s'", train, ck);
  assert_int_not_equal(r.rc, 0);
  if (!strstr(r.err, "read-only") || !strstr(r.err, "--force") || strstr(r.err, "replacing"))
    fail_msg("read-only checkpoint: %s", r.err);
  run_free(&r);
  expect_intact(&k[0]);
  expect_intact(&k[1]);
  r = run(NULL, "%s --metrics '%s' --force", train, m);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.err, "replacing the read-only file (--force)"));
  run_free(&r);
  struct stat sb;
  assert_int_equal(stat(m, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0444); /* replaced, still read-only */
  for (int i = 0; i < 2; i++) free(k[i].bytes);
  assert_int_equal(chmod(m, 0644), 0);
  assert_int_equal(chmod(ck, 0644), 0);

  /* 2. a DGL script's log, and one written compact: not capgnn's metrics file */
  const char *logs[2] = {"{\"epoch\": 1, \"loss\": 0.5, \"note\": \"my results\"}\n", "{\"epoch\":1,\"loss\":0.5}\n"};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(gt_write(dgl, logs[i], strlen(logs[i])), 0);
    expect_refused(run(NULL, "%s --metrics '%s'", train, dgl), "is not a capgnn metrics file");
    char *now = slurp(dgl);
    assert_string_equal(now, logs[i]);
    free(now);
  }
  /* ... capgnn's own (written above) is replaced without --force */
  r = run(NULL, "%s --metrics '%s'", train, m);
  assert_int_equal(r.rc, 0);
  assert_null(strstr(r.err, "--force"));
  run_free(&r);

  /* 3. a missing folder, for each command's output option */
  snprintf(want, sizeof want, "the folder '%s/nodir' does not exist", d);
  expect_refused(run(NULL, "%s --metrics '%s/nodir/x.jsonl'", train, d), want);
  expect_refused(run(NULL, "%s --checkpoint '%s/nodir/x.ckpt'", train, d), want);
  expect_refused(run(NULL, "gen tiny -o '%s/nodir/x.cgr' --quiet", d), want);
  expect_refused(run(NULL, "partition --graph synth:tiny --parts 2 --no-part-cache --quiet --json '%s/nodir/p.json'",
                     d), want);
  assert_int_equal(access(d, F_OK), 0);
  snprintf(want, sizeof want, "%s/nodir", d);
  assert_int_not_equal(access(want, F_OK), 0); /* not created */

  /* 4. --print-config: no output checked (pw.cgr is a graph: replacing it needs
   * --force, which a real run would warn about) */
  r = run(NULL, "gen tiny -o '%s' --quiet", pw);
  assert_int_equal(r.rc, 0);
  run_free(&r);
  r = run(NULL, "%s --partition rapa --prune-halo 0.1 --prune-write '%s' --force --print-config", train, pw);
  assert_int_equal(r.rc, 0);
  if (strstr(r.err, "WARN") || strstr(r.err, "replacing")) fail_msg("--print-config checked an output: %s", r.err);
  assert_non_null(strstr(r.out, "prune-write = "));
  run_free(&r);
  /* ... and leaves force and resume out: a run from the printed file asks */
  r = run(NULL, "%s --metrics '%s' --checkpoint '%s' --resume '%s' --force --print-config", train, dgl, ck, ck);
  assert_int_equal(r.rc, 0);
  if (strstr(r.out, "\nforce =") || strstr(r.out, "\nresume =")) fail_msg("printed force or resume:\n%s", r.out);
  assert_non_null(strstr(r.out, "# force: left out on purpose"));
  assert_non_null(strstr(r.out, "# resume: left out on purpose"));
  assert_int_equal(gt_write(ini, r.out, strlen(r.out)), 0);
  run_free(&r);
  expect_refused(run(NULL, "--config '%s'", ini), "is not a capgnn metrics file"); /* dgl.jsonl: no force */
  r = run(NULL, "--config '%s' --metrics '%s'", ini, m); /* a fresh run (no resume), replacing its own outputs */
  assert_int_equal(r.rc, 0);
  run_free(&r);
  char *text = slurp(m);
  assert_non_null(strstr(text, "\"summary\":true"));
  assert_non_null(strstr(text, "\"resumed_from_epoch\":0"));
  free(text);
}

static void test_version_threads(void **state) {
  (void)state;
  struct run r = run(NULL, "--version");
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "capgnn " CAPGNN_EXPECT_VERSION "\n"));
  assert_non_null(strstr(r.out, "CUDA backend: "));
  struct run r2 = run(NULL, "version");
  assert_int_equal(r2.rc, 0);
  assert_string_equal(r.out, r2.out);
  run_free(&r2);
  run_free(&r);
  r = run(NULL, "version extra");
  assert_int_equal(r.rc, 2);
  run_free(&r);
  /* The error and --help describe 0 the same way. */
  r = run(NULL, "--threads -1");
  assert_int_equal(r.rc, 2);
  assert_non_null(strstr(r.err, "(0 = the host's cores / its ranks)"));
  run_free(&r);
  r = run(NULL, "train --help");
  assert_non_null(strstr(r.out, "0 = the host's cores / its"));
  run_free(&r);
}

static void test_metrics_path(void **state) {
  (void)state;
  /* The metrics folder is checked before the graph: the error is about the metrics
   * file although the graph does not exist either. */
  struct run r = run(NULL, "--graph '%s/none.cgr' --metrics '%s/nodir/m.jsonl' --epochs 1", tmpdir, tmpdir);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "cannot create metrics file"));
  assert_null(strstr(r.err, "none.cgr"));
  run_free(&r);
  /* The check does not truncate an existing file: an earlier metrics file stays until
   * the run (which fails later, at the graph) has records to replace it with; any
   * other file is refused (--force replaces it). */
  char m[4200];
  snprintf(m, sizeof m, "%s/old.jsonl", tmpdir);
  /* (the first line of a capgnn metrics file: core/outfile.h's kind needs it whole up
   * to "epoch_s") */
  static const char first[] = "{\"epoch\":1,\"loss\":1.9,\"train_acc\":null,\"val_acc\":0.3,\"test_acc\":0.25,"
                              "\"val_loss\":1.8,\"epoch_s\":0.01}\n";
  assert_int_equal(gt_write(m, first, strlen(first)), 0);
  r = run(NULL, "--graph '%s/none.cgr' --metrics '%s' --epochs 1", tmpdir, m);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "none.cgr"));
  run_free(&r);
  char *kept = slurp(m);
  assert_string_equal(kept, first);
  free(kept);
  assert_int_equal(gt_write(m, "keep\n", 5), 0);
  r = run(NULL, "--graph '%s/none.cgr' --metrics '%s' --epochs 1", tmpdir, m);
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "is not a capgnn metrics file"));
  run_free(&r);
  kept = slurp(m);
  assert_string_equal(kept, "keep\n");
  free(kept);
}

static void test_partition_cache(void **state) {
  (void)state;
  struct run r = run(NULL, "partition --help");
  if (r.rc != 0) { /* built without the partition command */
    run_free(&r);
    skip();
  }
  assert_non_null(strstr(r.out, "--quiet"));
  run_free(&r);
  /* A cache folder that cannot be created (its parent is a file): warned, not saved. */
  char f[4200];
  snprintf(f, sizeof f, "%s/plainfile", tmpdir);
  assert_int_equal(gt_write(f, "x", 1), 0);
  r = run(NULL, "partition --graph synth:tiny --parts 2 --cache '%s/sub' --quiet", f);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "(computed, not saved)"));
  assert_non_null(strstr(r.err, "could not save"));
  run_free(&r);
  r = run(NULL, "partition --graph synth:tiny --parts 2 --cache '%s/pcache' --quiet", tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, ".part (computed)\n"));
  run_free(&r);
  r = run(NULL, "partition --graph synth:tiny --parts 2 --cache '%s/pcache' --quiet", tmpdir);
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, ".part (reused)\n"));
  run_free(&r);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CAPGNN_BINARY CONFIGS_DIR\n", argv[0]);
    return 2;
  }
  capgnn = argv[1];
  configs = argv[2];
  tmpdir = gt_mkdtemp();
  if (!tmpdir) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gen_info),
      cmocka_unit_test(test_cgr_versions),
      cmocka_unit_test(test_control_bytes_escaped),
      cmocka_unit_test(test_value_is_option),
      cmocka_unit_test(test_convert),
      cmocka_unit_test(test_convert_reorder_checksum),
      cmocka_unit_test(test_convert_order_out),
      cmocka_unit_test(test_convert_mask_as_split),
      cmocka_unit_test(test_convert_binary_edges),
      cmocka_unit_test(test_convert_no_feature_columns),
      cmocka_unit_test(test_convert_random_split_no_train),
      cmocka_unit_test(test_convert_empty_classes_note),
      cmocka_unit_test(test_convert_one_hot_note),
      cmocka_unit_test(test_missing_dataset),
      cmocka_unit_test(test_config),
      cmocka_unit_test(test_config_long_lines),
      cmocka_unit_test(test_wrong_kind_inputs),
      cmocka_unit_test(test_outputs_never_destroy),
      cmocka_unit_test(test_convert_force_bad_input),
      cmocka_unit_test(test_force_said_when_written),
      cmocka_unit_test(test_outputs_review),
      cmocka_unit_test(test_version_threads),
      cmocka_unit_test(test_metrics_path),
      cmocka_unit_test(test_partition_cache),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  gt_rmdir(tmpdir);
  return failed;
}
