/* core/tests/test_log.c — no raw control byte of a user's string reaches the terminal:
 * cg_text_escape writes bytes below 0x20 (newline and tab too) and 0x7f as \xNN, keeps
 * backslashes (escaping twice changes nothing), cuts at a whole escape; cg_err_set and
 * cg_log_write pass their formatted text through it (stderr captured in a file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/log.h"
#include "core/status.h"

static void test_escape(void **state) {
  (void)state;
  char out[64], twice[64];
  assert_string_equal(cg_text_escape(out, sizeof out, "no\x1b[31mRED\x07such"), "no\\x1b[31mRED\\x07such");
  assert_string_equal(cg_text_escape(out, sizeof out, "a\nb\tc\x7f" "d\\e"), "a\\x0ab\\x09c\\x7fd\\e");
  assert_string_equal(cg_text_escape(twice, sizeof twice, out), out); /* harmless twice */
  assert_string_equal(cg_text_escape(out, sizeof out, "plain text, UTF-8 \xc3\xa9"), "plain text, UTF-8 \xc3\xa9");
  assert_string_equal(cg_text_escape(out, 6, "ab\x1b" "cd"), "ab"); /* no half escape */
  assert_string_equal(cg_text_escape(out, 4, "abcdef"), "abc");
  assert_string_equal(cg_text_escape(out, sizeof out, NULL), "");
}

static void test_err_and_log(void **state) {
  (void)state;
  assert_int_equal(cg_err_set(CG_ERR_ARG, "graph '%s' not found", "no\x1b[31mRED\x07such"), CG_ERR_ARG);
  assert_string_equal(cg_err_msg(), "graph 'no\\x1b[31mRED\\x07such' not found");
  /* a message passed on (its own buffer as the argument) stays as it was */
  cg_err_set(CG_ERR_IO, "%s", cg_err_msg());
  assert_string_equal(cg_err_msg(), "graph 'no\\x1b[31mRED\\x07such' not found");

  char path[] = "/tmp/capgnn_test_log_XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  cg_log_write(CG_LOG_WARN, "core", "--metrics %s: replacing", "a\x1b]0;title\x07" "b");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char buf[256] = "";
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  close(fd);
  unlink(path);
  buf[n] = '\0';
  assert_non_null(strstr(buf, "WARN --metrics a\\x1b]0;title\\x07b: replacing\n"));
  for (size_t i = 0; i + 1 < n; i++) assert_true((unsigned char)buf[i] >= 0x20); /* the one newline ends it */
  assert_int_equal(buf[n - 1], '\n');
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape),
      cmocka_unit_test(test_err_and_log),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
