/* rapa/tests/test_svg.c — the report's SVG writer: escaping, tick steps, size labels,
 * and each chart's marks (one per finite value, carrying data-value and data-path;
 * NaN values not drawn, a group without any shown as "n/a"), balanced tags. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rapa/svg_internal.h"

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

static void test_escape(void **state) {
  struct svg s;
  svg_init(&s);
  svg_escape(&s, "a<b & \"c\" > 'd'");
  assert_string_equal(s.buf, "a&lt;b &amp; &quot;c&quot; &gt; &#39;d&#39;");
  svg_printf(&s, "%d", 42);
  assert_string_equal(s.buf + s.len - 2, "42");
  assert_int_equal(s.failed, 0);
  svg_free(&s);
  assert_null(s.buf);
}

static void test_steps_labels(void **state) {
  assert_true(svg_nice_step(100, 5) == 20);
  assert_true(svg_nice_step(7, 5) == 2);
  assert_true(svg_nice_step(0.9, 5) == 0.2);
  assert_true(fabs(svg_nice_step(3.3e-3, 5) - 1e-3) < 1e-15);
  assert_true(svg_nice_step(0, 5) == 1); /* degenerate range: still a step */
  char b[32];
  svg_bytes_label(8, b, sizeof b);
  assert_string_equal(b, "8 B");
  svg_bytes_label(4096, b, sizeof b);
  assert_string_equal(b, "4 KiB");
  svg_bytes_label(1536, b, sizeof b);
  assert_string_equal(b, "1.5 KiB");
  svg_bytes_label(1073741824.0, b, sizeof b);
  assert_string_equal(b, "1 GiB");
}

static void test_bars(void **state) {
  struct svg s;
  svg_init(&s);
  const char *groups[] = {"g<0>", "g1", "g2"};
  const double a[] = {1.5, NAN, 3}, b[] = {2, NAN, 0.25};
  const char *pa[] = {"ranks[0].x", "ranks[0].y", "ranks[0].z"};
  struct svg_series se[] = {{"rank 0", a, NULL, 3, pa}, {"rank & 1", b, NULL, 3, NULL}};
  svg_bar_chart(&s, "chart-t", "Title \"quoted\"", "GB/s", 3, groups, 2, se);
  assert_int_equal(s.failed, 0);
  assert_int_equal(count(s.buf, "class=\"mark\""), 4); /* the NaN group draws nothing */
  assert_int_equal(count(s.buf, "data-value=\"1.5\""), 1);
  assert_int_equal(count(s.buf, "data-value=\"0.25\""), 1);
  assert_int_equal(count(s.buf, "data-path=\"ranks[0].x\""), 1);
  assert_int_equal(count(s.buf, "data-path=\"ranks[0].y\""), 0);
  assert_int_equal(count(s.buf, "data-path="), 2);
  assert_non_null(strstr(s.buf, "n/a (g1)"));
  assert_non_null(strstr(s.buf, "g&lt;0&gt;"));
  assert_non_null(strstr(s.buf, "rank &amp; 1"));
  assert_non_null(strstr(s.buf, "id=\"chart-t\""));
  assert_null(strstr(s.buf, "nan"));
  assert_int_equal(count(s.buf, "<svg"), 1);
  assert_int_equal(count(s.buf, "</svg>"), 1);
  svg_free(&s);
}

static void test_lines_heat(void **state) {
  struct svg s;
  svg_init(&s);
  const double x[] = {4096, 65536, 1048576}, y[] = {1, 2, NAN};
  struct svg_series se[] = {{"a", y, x, 3, NULL}};
  svg_line_chart(&s, "curve-t", "T", "size", "GB/s", 1, 1, se);
  assert_int_equal(count(s.buf, "class=\"mark\""), 2);
  assert_non_null(strstr(s.buf, "4 KiB"));
  assert_non_null(strstr(s.buf, "<polyline"));
  assert_null(strstr(s.buf, "nan"));
  svg_free(&s);
  svg_init(&s);
  const double m[] = {NAN, 2, 2, NAN};
  const char *labels[] = {"rank 0", "rank 1"};
  const char *paths[] = {NULL, "m[0][1]", "m[1][0]", NULL};
  svg_heatmap(&s, "heat-t", "H", "GB/s", 2, labels, m, paths);
  assert_int_equal(count(s.buf, "class=\"mark\""), 2);
  assert_int_equal(count(s.buf, "data-path=\"m[0][1]\""), 1);
  assert_int_equal(count(s.buf, "fill=\"#eeeeee\""), 2); /* the diagonal */
  assert_null(strstr(s.buf, "nan"));
  svg_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_escape), cmocka_unit_test(test_steps_labels),
                                     cmocka_unit_test(test_bars), cmocka_unit_test(test_lines_heat)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
