/* tests/cli_test_util.h — helpers shared by the tests of the capgnn binary (tests/). */
#ifndef CAPGNN_TESTS_CLI_TEST_UTIL_H
#define CAPGNN_TESTS_CLI_TEST_UTIL_H

#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Starts `path` with argv (NULL-terminated, argv[0] included) in a child whose stderr goes
 * to err_path; the child's pid, -1 when fork fails (exit 126: err_path not writable, 127:
 * exec failed). */
static inline pid_t cli_spawn(const char *path, const char *const *argv, const char *err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fe < 0) _exit(126);
    dup2(fe, 2);
    execv(path, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

#endif
