/* core/tests/test_outfile.c — output files: whole or nothing, links followed,
 * devices and directories never replaced. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/outfile.h"
#include "core/status.h"

static char dir[64];

static char *in_dir(const char *name) {
  static char buf[4][128];
  static int next;
  char *p = buf[next++ % 4];
  snprintf(p, 128, "%s/%s", dir, name);
  return p;
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void expect_text(const char *path, const char *text) {
  char buf[64] = {0};
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  assert_string_equal(buf, text);
}

static int write_text(const char *path, const char *text) {
  struct cg_outfile o;
  int st = cg_outfile_open(&o, path, "test output");
  if (st != CG_OK) return st;
  fputs(text, o.fp);
  return cg_outfile_commit(&o);
}

/* nothing but the expected names in the folder (no temporaries left) */
static void expect_entries(int n) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq %d", dir, n);
  assert_int_equal(system(cmd), 0);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/capgnn_outfile_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_new_and_replace(void **state) {
  (void)state;
  assert_int_equal(write_text(in_dir("a.txt"), "one"), CG_OK);
  expect_text(in_dir("a.txt"), "one");
  assert_int_equal(write_text(in_dir("a.txt"), "two"), CG_OK);
  expect_text(in_dir("a.txt"), "two");
  expect_entries(1);
  /* abort leaves the old content and no temporary */
  struct cg_outfile o;
  assert_int_equal(cg_outfile_open(&o, in_dir("a.txt"), "test output"), CG_OK);
  fputs("half", o.fp);
  cg_outfile_abort(&o);
  expect_text(in_dir("a.txt"), "two");
  expect_entries(1);
  assert_int_equal(remove(in_dir("a.txt")), 0);
}

/* cg_outfile_same: one file under two names, existing or not yet. */
static void test_same(void **state) {
  (void)state;
  assert_false(cg_outfile_same(NULL, in_dir("x")));
  /* neither exists: the same folder and name, however written */
  assert_true(cg_outfile_same(in_dir("x"), in_dir("./x")));
  assert_false(cg_outfile_same(in_dir("x"), in_dir("y")));
  assert_false(cg_outfile_same("/nonexistent-capgnn/x", "/nonexistent-capgnn/y"));
  assert_true(cg_outfile_same("/nonexistent-capgnn/x", "/nonexistent-capgnn/x"));
  /* both exist: a link and a hard link are the file itself */
  assert_int_equal(write_text(in_dir("x"), "one"), CG_OK);
  assert_int_equal(symlink(in_dir("x"), in_dir("sym")), 0);
  assert_int_equal(link(in_dir("x"), in_dir("hard")), 0);
  assert_true(cg_outfile_same(in_dir("sym"), in_dir("x")));
  assert_true(cg_outfile_same(in_dir("hard"), in_dir("./x")));
  /* one exists, the other not */
  assert_false(cg_outfile_same(in_dir("x"), in_dir("y")));
  assert_int_equal(remove(in_dir("sym")), 0);
  assert_int_equal(remove(in_dir("hard")), 0);
  assert_int_equal(remove(in_dir("x")), 0);
}

static void test_links_and_devices(void **state) {
  (void)state;
  struct stat st;
  /* a link to a regular file: the target is replaced, the link stays a link */
  put(in_dir("real.txt"), "old");
  assert_int_equal(symlink(in_dir("real.txt"), in_dir("link.txt")), 0);
  assert_int_equal(write_text(in_dir("link.txt"), "new"), CG_OK);
  assert_int_equal(lstat(in_dir("link.txt"), &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  expect_text(in_dir("real.txt"), "new");
  expect_entries(2);
  /* a link to a device is written through (a rename would replace the link here, or
   * the device itself when given its own name) */
  assert_int_equal(symlink("/dev/null", in_dir("null")), 0);
  assert_int_equal(write_text(in_dir("null"), "gone"), CG_OK);
  assert_int_equal(lstat(in_dir("null"), &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  assert_int_equal(stat("/dev/null", &st), 0);
  assert_true(S_ISCHR(st.st_mode));
  expect_entries(3);
  /* reached through /proc (as /dev/stdout -> /proc/self/fd/1 -> a redirected
   * file): written in place, after what is already there, the file not replaced */
  put(in_dir("log.txt"), "keep ");
  FILE *lf = fopen(in_dir("log.txt"), "a");
  assert_non_null(lf);
  struct stat before, after;
  assert_int_equal(stat(in_dir("log.txt"), &before), 0);
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(lf));
  assert_int_equal(write_text(proc, "more"), CG_OK);
  fclose(lf);
  assert_int_equal(stat(in_dir("log.txt"), &after), 0);
  assert_true(before.st_ino == after.st_ino);
  expect_text(in_dir("log.txt"), "keep more");
  expect_entries(4);
  assert_int_equal(remove(in_dir("log.txt")), 0);
  /* a replaced file keeps its mode */
  put(in_dir("secret.txt"), "a");
  assert_int_equal(chmod(in_dir("secret.txt"), 0600), 0);
  assert_int_equal(write_text(in_dir("secret.txt"), "b"), CG_OK);
  assert_int_equal(stat(in_dir("secret.txt"), &after), 0);
  assert_int_equal(after.st_mode & 07777, 0600);
  assert_int_equal(remove(in_dir("secret.txt")), 0);
  /* a dangling link and a directory are refused with the reason */
  assert_int_equal(symlink(in_dir("missing.txt"), in_dir("dangling")), 0);
  assert_int_equal(write_text(in_dir("dangling"), "x"), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "missing file"));
  cg_err_clear();
  assert_int_equal(write_text(dir, "x"), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "directory"));
  cg_err_clear();
  /* an unwritable place */
  assert_int_equal(write_text("/nonexistent-dir/x.txt", "x"), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "test output"));
  cg_err_clear();
  expect_entries(4);
}

/* The early check of a path never blocks on a FIFO (no reader yet), and still
 * refuses a missing folder. */
static void test_probe(void **state) {
  (void)state;
  char fifo[128]; /* (in_dir's buffers rotate) */
  snprintf(fifo, sizeof fifo, "%s", in_dir("fifo"));
  assert_int_equal(mkfifo(fifo, 0600), 0);
  alarm(10); /* a blocking open would hang the test: fail it instead */
  assert_int_equal(cg_outfile_probe(fifo, "test output"), CG_OK);
  alarm(0);
  assert_int_equal(cg_outfile_probe(in_dir("new.txt"), "test output"), CG_OK);
  assert_int_equal(access(in_dir("new.txt"), F_OK), -1); /* nothing left behind */
  /* a missing folder is named as such (outputs do not create folders), and a file
   * where a folder should be */
  assert_int_not_equal(cg_outfile_probe(in_dir("nodir/x.txt"), "test output"), CG_OK);
  char want[256];
  snprintf(want, sizeof want, "the folder '%s' does not exist (create it", in_dir("nodir"));
  if (!strstr(cg_err_msg(), want)) fail_msg("expected \"%s\" in: %s", want, cg_err_msg());
  cg_err_clear();
  assert_int_not_equal(cg_outfile_probe(in_dir("nodir/sub/x.txt"), "test output"), CG_OK);
  snprintf(want, sizeof want, "the folder '%s' does not exist", in_dir("nodir/sub"));
  assert_non_null(strstr(cg_err_msg(), want));
  cg_err_clear();
  put(in_dir("afile"), "x");
  assert_int_not_equal(cg_outfile_probe(in_dir("afile/x.txt"), "test output"), CG_OK);
  assert_non_null(strstr(cg_err_msg(), "afile' is a regular file, not a folder"));
  cg_err_clear();
  assert_int_not_equal(cg_outfile_probe(in_dir("afile/sub/x.txt"), "test output"), CG_OK);
  assert_non_null(strstr(cg_err_msg(), "a part of the folder path"));
  cg_err_clear();
  remove(in_dir("afile"));
  remove(fifo);
}

/* The rule every output follows (cg_outfile_check): never an input (links and hard
 * links resolved, --force or not), an existing file only of the same kind or with
 * force, a kind that holds datasets only with force; empty files and devices pass. */
static void test_rule(void **state) {
  (void)state;
  static const char *const sig[] = {"REC:", NULL};
  const struct cg_outfile_kind rec = {"record file", sig, 0, NULL}, data = {"dataset", sig, 1, NULL};
  put(in_dir("in.dat"), "input data");
  put(in_dir("old.rec"), "REC: earlier output");
  put(in_dir("notes.txt"), "my notes\nline two");
  put(in_dir("empty"), "");
  assert_int_equal(link(in_dir("in.dat"), in_dir("hard.dat")), 0);
  assert_int_equal(symlink(in_dir("in.dat"), in_dir("soft.dat")), 0);
  char input[128];
  snprintf(input, sizeof input, "%s", in_dir("in.dat")); /* (in_dir's buffers rotate) */
  const struct cg_outfile_input in[] = {{"--graph", NULL}, {"--input", input}};
  /* rule 1: the input itself, through a hard link, through a symbolic link; force or not */
  const char *same[] = {"in.dat", "hard.dat", "soft.dat"};
  for (int i = 0; i < 3; i++)
    for (int force = 0; force <= 1; force++) {
      assert_int_equal(cg_outfile_check(in_dir(same[i]), "--out", &rec, in, 2, force, 0), CG_ERR_ARG);
      assert_non_null(strstr(cg_err_msg(), "is the --input"));
      cg_err_clear();
    }
  /* rule 2 */
  assert_int_equal(cg_outfile_check(in_dir("new.rec"), "--out", &rec, in, 2, 0, 0), CG_OK);
  assert_int_equal(cg_outfile_check(in_dir("old.rec"), "--out", &rec, in, 2, 0, 0), CG_OK);
  assert_int_equal(cg_outfile_check(in_dir("empty"), "--out", &rec, in, 2, 0, 0), CG_OK);
  assert_int_equal(cg_outfile_check("/dev/null", "--out", &rec, in, 2, 0, 0), CG_OK);
  assert_int_equal(cg_outfile_check(in_dir("notes.txt"), "--out", &rec, in, 2, 0, 0), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "is not a record file (text starting 'my notes')"));
  assert_non_null(strstr(cg_err_msg(), "--force"));
  cg_err_clear();
  assert_int_equal(cg_outfile_check(in_dir("notes.txt"), "--out", &rec, in, 2, 1, 0), CG_OK);
  assert_int_equal(cg_outfile_check(in_dir("old.rec"), "--out", &data, in, 2, 0, 0), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "a dataset exists there"));
  cg_err_clear();
  assert_int_equal(cg_outfile_check(in_dir("old.rec"), "--out", &data, in, 2, 1, 0), CG_OK);
  assert_int_equal(cg_outfile_check(dir, "--out", &rec, in, 2, 1, 0), CG_ERR_IO);
  cg_err_clear();
  /* rule 3: '-' is meant as standard output, not a file named '-'; force or not */
  for (int force = 0; force <= 1; force++) {
    assert_int_equal(cg_outfile_check("-", "--out", &rec, in, 2, force, 0), CG_ERR_ARG);
    assert_non_null(strstr(cg_err_msg(), "--out -: '-' is not standard output here; write /dev/stdout"));
    cg_err_clear();
  }
  assert_true(cg_outfile_is_kind(in_dir("old.rec"), &rec));
  assert_false(cg_outfile_is_kind(in_dir("notes.txt"), &rec));
  /* a temporary that starts as a copy (a resumed run's metrics), replaced or abandoned */
  struct cg_outfile o;
  assert_int_equal(cg_outfile_open_keep(&o, in_dir("old.rec"), "test output"), CG_OK);
  fputs(" + more", o.fp);
  expect_text(in_dir("old.rec"), "REC: earlier output");
  assert_int_equal(cg_outfile_commit(&o), CG_OK);
  expect_text(in_dir("old.rec"), "REC: earlier output + more");
  assert_int_equal(cg_outfile_open_keep(&o, in_dir("brand-new.rec"), "test output"), CG_OK);
  fputs("REC: first", o.fp);
  assert_int_equal(cg_outfile_commit(&o), CG_OK);
  expect_text(in_dir("brand-new.rec"), "REC: first");
  const char *names[] = {"in.dat", "hard.dat", "soft.dat", "old.rec", "notes.txt", "empty", "brand-new.rec"};
  for (int i = 0; i < 7; i++) assert_int_equal(remove(in_dir(names[i])), 0);
  expect_entries(4); /* test_links_and_devices' files, and no temporary */
}

/* A read-only file (no write bit: rename in a writable folder would ignore the mode) is
 * replaced only with force, whatever it holds, also when empty; a kind may recognise
 * its files by a match function over their first bytes. */
static int starts_rec_digit(const char *head, size_t n) {
  return n >= 5 && !memcmp(head, "REC:", 4) && head[4] >= '0' && head[4] <= '9';
}

static void test_read_only(void **state) {
  (void)state;
  static const char *const sig[] = {"REC:", NULL};
  const struct cg_outfile_kind rec = {"record file", sig, 0, NULL};
  put(in_dir("ro.rec"), "REC: earlier output");
  put(in_dir("ro.txt"), "my notes");
  put(in_dir("ro.empty"), "");
  const char *ro[] = {"ro.rec", "ro.txt", "ro.empty"};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(chmod(in_dir(ro[i]), 0444), 0);
    assert_int_equal(cg_outfile_check(in_dir(ro[i]), "--out", &rec, NULL, 0, 0, 0), CG_ERR_IO);
    assert_non_null(strstr(cg_err_msg(), "the file is read-only"));
    assert_non_null(strstr(cg_err_msg(), "--force"));
    cg_err_clear();
    assert_int_equal(cg_outfile_check(in_dir(ro[i]), "--out", &rec, NULL, 0, 1, 0), CG_OK);
  }
  /* through a symbolic link: the file's mode counts */
  assert_int_equal(symlink(in_dir("ro.rec"), in_dir("ro.link")), 0);
  assert_int_equal(cg_outfile_check(in_dir("ro.link"), "--out", &rec, NULL, 0, 0, 0), CG_ERR_IO);
  cg_err_clear();
  /* one write bit (anyone's) is enough: the rule is about files nobody may write */
  assert_int_equal(chmod(in_dir("ro.rec"), 0644), 0);
  assert_int_equal(cg_outfile_check(in_dir("ro.rec"), "--out", &rec, NULL, 0, 0, 0), CG_OK);
  assert_int_equal(chmod(in_dir("ro.rec"), 0464), 0);
  assert_int_equal(cg_outfile_check(in_dir("ro.rec"), "--out", &rec, NULL, 0, 0, 0), CG_OK);
  /* with force the replacement happens and keeps the mode */
  assert_int_equal(write_text(in_dir("ro.txt"), "new"), CG_OK);
  expect_text(in_dir("ro.txt"), "new");
  struct stat sb;
  assert_int_equal(stat(in_dir("ro.txt"), &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0444);
  /* a match function: "REC:" and a digit */
  const struct cg_outfile_kind strict = {"strict record file", NULL, 0, starts_rec_digit};
  put(in_dir("a.rec"), "REC:1 mine");
  put(in_dir("b.rec"), "REC: theirs");
  assert_true(cg_outfile_is_kind(in_dir("a.rec"), &strict));
  assert_false(cg_outfile_is_kind(in_dir("b.rec"), &strict));
  assert_int_equal(cg_outfile_check(in_dir("a.rec"), "--out", &strict, NULL, 0, 0, 0), CG_OK);
  assert_int_equal(cg_outfile_check(in_dir("b.rec"), "--out", &strict, NULL, 0, 0, 0), CG_ERR_IO);
  assert_non_null(strstr(cg_err_msg(), "is not a strict record file"));
  cg_err_clear();
  const char *names[] = {"ro.link", "ro.rec", "ro.txt", "ro.empty", "a.rec", "b.rec"};
  for (int i = 0; i < 6; i++) assert_int_equal(remove(in_dir(names[i])), 0);
  expect_entries(4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_new_and_replace),
      cmocka_unit_test(test_same),
      cmocka_unit_test(test_links_and_devices),
      cmocka_unit_test(test_probe),
      cmocka_unit_test(test_rule),
      cmocka_unit_test(test_read_only),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
