/* core/tests/test_log.c — no raw control byte of a user's string reaches the terminal:
 * cg_text_escape writes bytes below 0x20 (newline and tab too), 0x7f and the C1 controls
 * (UTF-8 encoded, or a lone byte 0x80..0x9F) as \xNN, keeps other UTF-8 and backslashes
 * (escaping twice changes nothing), cuts at a whole escape or character; cg_err_set and
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

/* The C1 controls U+0080..U+009F, UTF-8 encoded (C2 80..C2 9F: U+009B is CSI to a
 * terminal that decodes them), are escaped byte by byte, and so is a byte 0x80..0x9F
 * that starts no well-formed UTF-8 sequence (raw C1 to an 8-bit terminal); every other
 * UTF-8 character, and any other byte of invalid UTF-8, is kept. */
static void test_escape_c1(void **state) {
  (void)state;
  char out[128], twice[128];
  assert_string_equal(cg_text_escape(out, sizeof out, "a\xc2\x9b" "31mRED"), "a\\xc2\\x9b31mRED");
  assert_string_equal(cg_text_escape(out, sizeof out, "\xc2\x80\xc2\x85\xc2\x9f"),
                      "\\xc2\\x80\\xc2\\x85\\xc2\\x9f"); /* PAD, NEL, APC */
  assert_string_equal(cg_text_escape(twice, sizeof twice, out), out);
  /* kept: NBSP, accented letters whose second byte is 0x80..0x9F (U+00C0, U+00DB,
   * U+011B), an em dash, a CJK character, an emoji */
  const char *kept = "\xc2\xa0 \xc3\x80\xc3\x9b\xc4\x9b \xe2\x80\x94 \xe4\xb8\xad \xf0\x9f\x98\x80";
  assert_string_equal(cg_text_escape(out, sizeof out, kept), kept);
  /* invalid UTF-8: a lone 0x80..0x9F is escaped (raw 0x9b is CSI to an 8-bit terminal);
   * a lone lead byte, a byte 0xa0..0xff, a truncated sequence's lead are kept */
  assert_string_equal(cg_text_escape(out, sizeof out, "a\x9b" "b\x80\xa0\xc2" "c\xff"), "a\\x9bb\\x80\xa0\xc2" "c\xff");
  assert_string_equal(cg_text_escape(twice, sizeof twice, out), out);
  assert_string_equal(cg_text_escape(out, sizeof out, "\xe2\x80x"), "\xe2\\x80x"); /* truncated */
  assert_string_equal(cg_text_escape(out, sizeof out, "\xe0\x82\x9b"), "\xe0\\x82\\x9b"); /* overlong CSI */
  assert_string_equal(cg_text_escape(out, sizeof out, "\xc0\x9b"), "\xc0\\x9b");             /* overlong ESC */
  assert_string_equal(cg_text_escape(twice, sizeof twice, out), out);
  assert_string_equal(cg_text_escape(out, sizeof out, "\xed\xa0\x80"), "\xed\xa0\\x80"); /* a surrogate */
  /* cut short at a whole character: no half escape, no half sequence */
  assert_string_equal(cg_text_escape(out, 9, "ab\xc2\x9b"), "ab");
  assert_string_equal(cg_text_escape(out, 4, "ab\xc3\xa9"), "ab");
  assert_string_equal(cg_text_escape(out, 5, "ab\xc3\xa9"), "ab\xc3\xa9");
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
      cmocka_unit_test(test_escape_c1),
      cmocka_unit_test(test_err_and_log),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
