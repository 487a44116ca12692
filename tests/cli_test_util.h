/* tests/cli_test_util.h — helpers shared by the tests of the capgnn binary (tests/). */
#ifndef CAPGNN_TESTS_CLI_TEST_UTIL_H
#define CAPGNN_TESTS_CLI_TEST_UTIL_H

#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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
 * to err_path; the child's pid, -1 when fork fails (exit 125: the test already gone, 126:
 * err_path not writable, 127: exec failed). The child is killed when the test process
 * dies (ctest's TIMEOUT kills the test, not its children): a run of 10000000 epochs left
 * behind would load the machine for hours and hold ctest's output pipe open. */
static inline pid_t cli_spawn(const char *path, const char *const *argv, const char *err_path) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(125);
    const int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fe < 0) _exit(126);
    dup2(fe, 2);
    execv(path, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

/* CPU seconds (user + system) the process `pid` has used; -1 when unreadable. */
static inline double cli_cpu_seconds(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1.0;
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold blanks */
  unsigned long long ut = 0, st = 0;
  if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) return -1.0;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Waits until the child `pid` (cli_spawn) has written a record to the metrics file `met`
 * (cli_metrics_started): 1, the child still running. 0 when it exited first (its wait
 * status in *status) or used `cpu_limit_s` seconds of CPU without a record (then killed
 * with SIGKILL and reaped); either way the test's stdout says what was awaited, for how
 * long and how the child ended. The bound is the child's CPU time, not the clock: on a
 * loaded machine a starved child gets as long as it needs, one that spins without
 * writing does not run on; one that neither runs nor writes is left to ctest's TIMEOUT,
 * after the line that says what the test is waiting for. */
static inline int cli_wait_metrics_started(pid_t pid, const char *met, double cpu_limit_s, int *status) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  printf("  waiting for pid %d to write a record to %s.tmp.* (up to %g s of its CPU time)\n", (int)pid, met,
         cpu_limit_s);
  fflush(stdout);
  double cpu = 0.0;
  *status = 0;
  const char *how = NULL;
  for (;;) {
    if (cli_metrics_started(met)) return 1;
    const pid_t w = waitpid(pid, status, WNOHANG);
    if (w == pid || w < 0) {
      how = "exited first";
      break;
    }
    const double c = cli_cpu_seconds(pid);
    if (c > cpu) cpu = c;
    if (cpu >= cpu_limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, status, 0);
      how = "used its CPU allowance: killed";
      break;
    }
    const struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("  gave up after %.1f s (the child used %.2f s of CPU): no record in %s.tmp.*; the child %s (%s %d)\n", wall,
         cpu, met, how, WIFSIGNALED(*status) ? "signal" : "exit status",
         WIFSIGNALED(*status) ? WTERMSIG(*status) : WEXITSTATUS(*status));
  fflush(stdout);
  return 0;
}

#endif
