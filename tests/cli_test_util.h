/* tests/cli_test_util.h — helpers shared by the tests of the capgnn binary (tests/). */
#ifndef CAPGNN_TESTS_CLI_TEST_UTIL_H
#define CAPGNN_TESTS_CLI_TEST_UTIL_H

#include <glob.h>
#include <stdio.h>
#include <sys/stat.h>

/* Whether a run writing metrics to `met` has written a record: during the run the
 * records go to a temporary beside it (MET.tmp.XXXXXX, core/outfile.h), renamed to
 * MET when the run ends. */
static inline int cli_metrics_started(const char *met) {
  char pat[1100];
  snprintf(pat, sizeof pat, "%s.tmp.*", met);
  glob_t gl;
  int found = 0;
  if (glob(pat, 0, NULL, &gl) == 0) {
    for (size_t i = 0; i < gl.gl_pathc && !found; i++) {
      struct stat sb;
      found = stat(gl.gl_pathv[i], &sb) == 0 && sb.st_size > 0;
    }
    globfree(&gl);
  }
  return found;
}

#endif
