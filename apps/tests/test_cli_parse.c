/* apps/tests/test_cli_parse.c — the numeric option parsers every subcommand shares
 * (apps/cli.c): the whole word is the number, the type's range is enforced, an
 * unsigned option never takes a '-' (strtoull would wrap "-1" and " -1" to 2^64 - 1,
 * which `partition --seed` and `convert --seed` used to accept), a float option is
 * finite once rounded to float; a refusal leaves the value alone, returns the usage
 * exit status and prints exactly one "capgnn: error:" line in the subcommands' form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "apps/commands_internal.h"

/* stderr of one parser call, captured through a temporary file. */
static char err[4096];
static int saved_fd = -1;
static FILE *capture;

static void capture_begin(void) {
  fflush(stderr);
  capture = tmpfile();
  assert_non_null(capture);
  saved_fd = dup(STDERR_FILENO);
  assert_true(saved_fd >= 0);
  assert_true(dup2(fileno(capture), STDERR_FILENO) >= 0);
}

static const char *capture_end(void) {
  fflush(stderr);
  assert_true(dup2(saved_fd, STDERR_FILENO) >= 0);
  close(saved_fd);
  rewind(capture);
  size_t n = fread(err, 1, sizeof err - 1, capture);
  err[n] = '\0';
  fclose(capture);
  return err;
}

/* A refused value: usage status, *out untouched (checked by the callers through a
 * sentinel), one error line equal to `want` when given. */
static void expect_refused(int rc, const char *want) {
  const char *e = capture_end();
  assert_int_equal(rc, CAPGNN_EXIT_USAGE);
  assert_true(strncmp(e, "capgnn: error: ", 15) == 0);
  const char *nl = strchr(e, '\n');
  assert_non_null(nl);
  assert_string_equal(nl + 1, ""); /* exactly one line */
  if (want) assert_string_equal(e, want);
}

static void ok_u64(const char *s, uint64_t want) {
  uint64_t v = 12345;
  capture_begin();
  int rc = cli_parse_u64("train", "--seed", s, &v);
  assert_string_equal(capture_end(), "");
  assert_int_equal(rc, 0);
  assert_true(v == want);
}

static void bad_u64(const char *s) {
  uint64_t v = 12345;
  capture_begin();
  int rc = cli_parse_u64("partition", "--seed", s, &v);
  expect_refused(rc, NULL);
  assert_true(v == 12345);
}

static void test_u64(void **state) {
  (void)state;
  ok_u64("0", 0);
  ok_u64("7", 7);
  ok_u64("+7", 7);
  ok_u64("18446744073709551615", UINT64_MAX);
  /* the drift: the partition and convert copies checked only s[0] == '-' */
  bad_u64("-1");
  bad_u64(" -1");
  bad_u64("\t-1");
  bad_u64("-0");
  bad_u64("18446744073709551616"); /* 2^64 */
  bad_u64("");
  bad_u64(" 5");
  bad_u64("5 ");
  bad_u64("5x");
  bad_u64("abc");
  bad_u64("1e3");
  bad_u64("0x10");
  uint64_t v = 3;
  capture_begin();
  int rc = cli_parse_u64("convert", "--seed", " -1", &v);
  expect_refused(rc, "capgnn: error: --seed ' -1': expected a non-negative integer (see capgnn convert --help)\n");
  assert_true(v == 3);
}

static void ok_int(const char *s, int want) {
  int v = 12345;
  capture_begin();
  int rc = cli_parse_int("train", "--epochs", s, &v);
  assert_string_equal(capture_end(), "");
  assert_int_equal(rc, 0);
  assert_int_equal(v, want);
}

static void bad_int(const char *s) {
  int v = 12345;
  capture_begin();
  int rc = cli_parse_int("train", "--epochs", s, &v);
  expect_refused(rc, NULL);
  assert_int_equal(v, 12345);
}

static void test_int(void **state) {
  (void)state;
  ok_int("0", 0);
  ok_int("-3", -3); /* the range is the caller's (rt_config_check) */
  ok_int("+4", 4);
  ok_int("2147483647", 2147483647);
  ok_int("-2147483648", -2147483647 - 1);
  bad_int("2147483648");
  bad_int("-2147483649");
  bad_int("99999999999999999999");
  bad_int("");
  bad_int(" 5");
  bad_int("5 ");
  bad_int("1.5");
  bad_int("abc");
  int v = 1;
  capture_begin();
  int rc = cli_parse_int("train", "--epochs", "abc", &v);
  expect_refused(rc, "capgnn: error: --epochs 'abc': expected an integer (see capgnn train --help)\n");
}

static void test_int_in(void **state) {
  (void)state;
  int v = 9;
  capture_begin();
  int rc = cli_parse_int_in("partition", "--hops", "2", 1, 2, &v);
  assert_string_equal(capture_end(), "");
  assert_int_equal(rc, 0);
  assert_int_equal(v, 2);
  const char *bad[] = {"0", "3", "-1", "", " 1", "1 ", "x", "4294967297"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 9;
    capture_begin();
    rc = cli_parse_int_in("partition", "--hops", bad[i], 1, 2, &v);
    expect_refused(rc, NULL);
    assert_int_equal(v, 9);
  }
  capture_begin();
  rc = cli_parse_int_in("partition", "--parts", "0", 1, 2147483647, &v);
  expect_refused(rc, "capgnn: error: --parts '0': expected an integer in [1, 2147483647] (see capgnn partition "
                     "--help)\n");
}

static void test_i64(void **state) {
  (void)state;
  int64_t v = 5;
  capture_begin();
  int rc = cli_parse_i64("train", "--hidden", "9223372036854775807", &v);
  assert_string_equal(capture_end(), "");
  assert_int_equal(rc, 0);
  assert_true(v == INT64_MAX);
  capture_begin();
  rc = cli_parse_i64("train", "--hidden", "-9223372036854775808", &v);
  assert_string_equal(capture_end(), "");
  assert_int_equal(rc, 0);
  assert_true(v == INT64_MIN);
  const char *bad[] = {"9223372036854775808", "-9223372036854775809", "", " 1", "1 ", "abc", "16k"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 5;
    capture_begin();
    rc = cli_parse_i64("train", "--hidden", bad[i], &v);
    expect_refused(rc, NULL);
    assert_true(v == 5);
  }
  capture_begin();
  rc = cli_parse_i64("train", "--hidden", "abc", &v);
  expect_refused(rc, "capgnn: error: --hidden 'abc': expected an integer (see capgnn train --help)\n");
}

static void test_float(void **state) {
  (void)state;
  const struct {
    const char *s;
    float want;
  } good[] = {{"0.01", 0.01f}, {"1e-3", 1e-3f}, {"-0.5", -0.5f}, {"+2", 2.0f}, {".5", 0.5f},
              {"0", 0.0f},     {"3.4e38", 3.4e38f}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    float v = 9.0f;
    capture_begin();
    int rc = cli_parse_float("train", "--lr", good[i].s, &v);
    assert_string_equal(capture_end(), "");
    assert_int_equal(rc, 0);
    assert_true(v == good[i].want);
  }
  /* 1e39 is a double but not a float: it used to become inf */
  const char *bad[] = {"nan", "inf", "-inf", "infinity", "1e39", "-1e39", "1e400", "1e-400",
                       "",    " 0.1", "0.1 ", "0.1x",    "abc",  "--1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    float v = 9.0f;
    capture_begin();
    int rc = cli_parse_float("train", "--lr", bad[i], &v);
    expect_refused(rc, NULL);
    assert_true(v == 9.0f);
  }
  float v = 9.0f;
  capture_begin();
  int rc = cli_parse_float("train", "--lr", "nan", &v);
  expect_refused(rc, "capgnn: error: --lr 'nan': expected a number (see capgnn train --help)\n");
  /* a value a float cannot hold is named as written, not as the inf or 0 it would become */
  capture_begin();
  rc = cli_parse_float("train", "--lr", "1e300", &v);
  expect_refused(rc, "capgnn: error: --lr '1e300': out of range (values are single-precision floats, at "
                     "most about 3.4e38 in magnitude) (see capgnn train --help)\n");
  capture_begin();
  rc = cli_parse_float("train", "--lr", "1e-50", &v);
  expect_refused(rc, "capgnn: error: --lr '1e-50': too close to 0 for a single-precision float (smallest "
                     "about 1.4e-45): write 0 if that is meant (see capgnn train --help)\n");
  capture_begin();
  rc = cli_parse_float("train", "--lr", "inf", &v);
  expect_refused(rc, "capgnn: error: --lr 'inf': expected a finite number (see capgnn train --help)\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_u64), cmocka_unit_test(test_int),   cmocka_unit_test(test_int_in),
      cmocka_unit_test(test_i64), cmocka_unit_test(test_float),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
