/* core/tests/test_progress.c — progress lines: the text (amounts, rates, ETA), and
 * what each mode prints: TTY redraws with "\r", log mode stays silent for short
 * steps, --quiet (OFF) prints nothing. stderr is captured in a file. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/progress.h"

static void test_amounts(void **state) {
  (void)state;
  char b[64];
  struct {
    double v;
    const char *unit, *want;
  } c[] = {{512, "B", "512 B"},          {1234, "B", "1.23 kB"},       {694e6, "B", "694 MB"},
           {1.5e9, "B", "1.50 GB"},      {25.5e6, "B", "25.5 MB"},     {1234567, "edges", "1,234,567 edges"},
           {999, "rows", "999 rows"},    {1000, "", "1,000"},          {0, "B", "0 B"},
           {1, "epochs", "1 epoch"},     {1, "entries", "1 entry"},    {0, "epochs", "0 epochs"},
           {1, "B", "1 B"},              {1, "", "1"}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    cg_progress_amount(b, sizeof b, c[i].v, c[i].unit);
    assert_string_equal(b, c[i].want);
  }
  cg_progress_duration(b, sizeof b, 4.2);
  assert_string_equal(b, "0:04");
  cg_progress_duration(b, sizeof b, 3723);
  assert_string_equal(b, "1:02:03");
  cg_progress_duration(b, sizeof b, -1);
  assert_string_equal(b, "?");
  /* Truncation is safe. */
  assert_int_equal(cg_progress_amount(b, 4, 1234567, "edges"), 3);
  assert_int_equal(strlen(b), 3);
}

static void test_lines(void **state) {
  (void)state;
  char b[256];
  cg_progress_format(b, sizeof b, "reading x", 312000000, 694000000, "B", NULL, 3.0);
  assert_string_equal(b, "reading x   45.0%  312 MB / 694 MB  104 MB/s  ETA 0:04");
  cg_progress_format(b, sizeof b, "building", 2000000, 4000000, "entries", "", 2.0);
  assert_string_equal(b, "building   50.0%  2,000,000 / 4,000,000 entries  1.00M entries/s  ETA 0:02");
  cg_progress_format(b, sizeof b, "gen", 1000, 0, "entries", NULL, 2.0);
  assert_string_equal(b, "gen  1,000 entries  500 entries/s  elapsed 0:02");
  cg_progress_format(b, sizeof b, "done", 10, 10, "B", NULL, 1.0);
  assert_string_equal(b, "done  100.0%  10 B / 10 B  10 B/s  ETA 0:00");
  cg_progress_format(b, sizeof b, "training", 37, 200, "epochs", "loss 0.4123  val acc 0.8912", 18.5);
  assert_string_equal(b, "training   18.5%  37 / 200 epochs  loss 0.4123  val acc 0.8912  2.00 epochs/s  ETA 1:22");
}

/* Runs one step in `mode` with stderr redirected; returns what it printed. */
static char *capture(enum cg_progress_mode mode, int updates) {
  char path[] = "/tmp/capgnn_progress_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  cg_progress_set_mode(mode);
  struct cg_progress p;
  cg_progress_begin(&p, "step", 100, "B");
  for (int i = 1; i <= updates; i++) cg_progress_update(&p, i);
  cg_progress_end(&p);
  cg_progress_end(&p); /* twice prints once */
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(fd);
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
  assert_non_null(s);
  size_t got = n > 0 ? fread(s, 1, (size_t)n, fp) : 0;
  fclose(fp);
  unlink(path);
  s[got] = '\0';
  return s;
}

/* A control byte in what is shown (a file's name) is kept escaped as \xNN: the line's own
 * \r and erase codes are the only ones that reach the terminal. */
static void test_what_escaped(void **state) {
  (void)state;
  struct cg_progress p;
  cg_progress_set_mode(CG_PROGRESS_OFF);
  cg_progress_begin(&p, "loading a\x1b[2Jb\x07.cgr", 100, "B");
  assert_string_equal(p.what, "loading a\\x1b[2Jb\\x07.cgr");
  cg_progress_cancel(&p);
}

static void test_modes(void **state) {
  (void)state;
  char *s = capture(CG_PROGRESS_TTY, 100);
  assert_non_null(strstr(s, "\rstep "));
  assert_non_null(strstr(s, "\rstep: done, 100 B in "));
  assert_int_equal(strchr(s, '\n') - s, (long)strlen(s) - 1); /* one final newline only */
  free(s);
  s = capture(CG_PROGRESS_LOG, 100); /* a short step: silent */
  assert_string_equal(s, "");
  free(s);
  s = capture(CG_PROGRESS_OFF, 100);
  assert_string_equal(s, "");
  free(s);
  cg_progress_set_mode(CG_PROGRESS_AUTO);
  assert_int_equal(cg_progress_get_mode(), CG_PROGRESS_AUTO);
}

int main(void) {
  unsetenv("CAPGNN_LOG_LEVEL");
  unsetenv("CAPGNN_LOG_SUBSYS");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_amounts),
      cmocka_unit_test(test_lines),
      cmocka_unit_test(test_modes),
      cmocka_unit_test(test_what_escaped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
