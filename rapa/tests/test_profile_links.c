/* rapa/tests/test_profile_links.c — the links part of a profile read from the profile
 * cache (rapa_cache_read, "capgnn-links-profile"), on files a crash or another program
 * may have left: a rank count whose n(n-1)/2 pairs do not fit an int (65536 overflowed
 * int, undefined behaviour; seen reading the reader for fuzz/fuzz_profile, which shows
 * it under UBSan) and a missing or non-numeric count (converted NaN to int before) are
 * refused naming "nranks"; a valid file reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "core/status.h"
#include "rapa/rapa_internal.h"

static const char *const links_file =
    "{\"schema\": \"capgnn-links-profile\", \"version\": 1, \"layout\": \"h|cpu-t1|0;quick=1\", "
    "\"measured\": \"2026-01-01T00:00:00Z\", \"quick\": true, \"links\": {%s \"quick\": true, "
    "\"sizes\": [8], \"pairs\": [], \"matrix\": {\"bandwidth_gbs\": [[null]], \"latency_us\": [[null]]}, "
    "\"matrix_note\": \"\", \"device_note\": \"\", \"nccl_note\": \"\", \"allreduce\": null}}";

static int read_links(const char *nranks, char *why, size_t why_len) {
  char path[] = "/tmp/capgnn_links_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fprintf(f, links_file, nranks);
  fclose(f);
  cJSON *root = NULL;
  int rc = rapa_cache_read(path, "capgnn-links-profile", 0, 0, &root, why, why_len);
  cJSON_Delete(root);
  unlink(path);
  return rc;
}

static void test_links_nranks(void **state) {
  (void)state;
  char why[2048];
  assert_int_equal(read_links("\"nranks\": 1,", why, sizeof why), 1);
  const char *bad[] = {"\"nranks\": 65536,", "\"nranks\": 1e300,", "", "\"nranks\": \"two\",", "\"nranks\": 0,"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(read_links(bad[i], why, sizeof why), 0);
    printf("  links with '%s': %s\n", bad[i], why);
    assert_non_null(strstr(why, "nranks"));
    assert_non_null(strstr(why, "1 .. 65535"));
  }
  /* the largest count: its pairs fit an int, their product did not (UBSan found the
   * first version of the check computing it in int); refused for its missing pairs */
  assert_int_equal(read_links("\"nranks\": 65535,", why, sizeof why), 0);
  printf("  links with 65535 ranks: %s\n", why);
  assert_non_null(strstr(why, "pairs"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_links_nranks)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
