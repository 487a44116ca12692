/* tests/cli_test_util.h — helpers shared by the tests of the capgnn binary (tests/). */
#ifndef CAPGNN_TESTS_CLI_TEST_UTIL_H
#define CAPGNN_TESTS_CLI_TEST_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Starts `path` with argv (NULL-terminated, argv[0] included) in a child whose stderr
 * (and its stdout too when `both`) goes to out_path and that gets `deathsig` when the test
 * process dies; the child's pid, -1 when fork fails (exit 125: the test already gone, 126:
 * out_path not writable, 127: exec failed). */
static inline pid_t cli_spawn_(const char *path, const char *const *argv, const char *out_path, int both,
                               int deathsig) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, deathsig) != 0 || getppid() != parent) _exit(125);
    const int fe = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fe < 0) _exit(126);
    if (both) dup2(fe, 1);
    dup2(fe, 2);
    execvp(path, (char *const *)argv); /* a path with a slash: as execv */
    _exit(127);
  }
  return pid;
}

/* Starts `path` with argv (NULL-terminated, argv[0] included) in a child whose stderr goes
 * to err_path; the child's pid, -1 when fork fails (exit 125: the test already gone, 126:
 * err_path not writable, 127: exec failed). The child is killed when the test process
 * dies (ctest's TIMEOUT kills the test, not its children): a run of 10000000 epochs left
 * behind would load the machine for hours and hold ctest's output pipe open. */
static inline pid_t cli_spawn(const char *path, const char *const *argv, const char *err_path) {
  return cli_spawn_(path, argv, err_path, 0, SIGKILL);
}

/* cli_spawn for an MPI job: `mpiexec` (argv[0] its path) with stdout and stderr to
 * log_path. When the test process dies, mpiexec gets SIGTERM, not SIGKILL: Open MPI's
 * mpiexec (4.1) passes SIGTERM on to its ranks and kills them odls_base_sigkill_timeout
 * seconds later. The ranks are mpiexec's children, each in a process group of its own,
 * so neither the test's death nor a signal to mpiexec's process group reaches them. */
static inline pid_t cli_spawn_job(const char *mpiexec, const char *const *argv, const char *log_path) {
  return cli_spawn_(mpiexec, argv, log_path, 1, SIGTERM);
}

/* A process of an MPI job: its pid and start time (in clock ticks since boot), which tell
 * it from a later process given the same pid. */
struct cli_proc {
  pid_t pid;
  unsigned long long start;
};

/* From /proc/PID/stat: the parent, the CPU seconds (user + system, its reaped children's
 * included) and the start time; 0, or -1 when the process is gone (or a zombie). */
static inline int cli_proc_stat(pid_t pid, pid_t *ppid, double *cpu, unsigned long long *start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold blanks */
  char state = 0;
  int pp = 0;
  unsigned long long ut = 0, st = 0, t0 = 0;
  long long cut = 0, cst = 0;
  if (!p || sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d %*d %*d %llu",
                   &state, &pp, &ut, &st, &cut, &cst, &t0) != 7 || state == 'Z')
    return -1;
  *ppid = pp;
  *cpu = (double)(ut + st + (unsigned long long)(cut + cst)) / (double)sysconf(_SC_CLK_TCK);
  *start = t0;
  return 0;
}

/* CPU seconds (user + system, its reaped children's included) the process `pid` has
 * used; -1 when it is gone or unreadable. */
static inline double cli_cpu_seconds(pid_t pid) {
  pid_t ppid = 0;
  double cpu = 0.0;
  unsigned long long start = 0;
  return cli_proc_stat(pid, &ppid, &cpu, &start) == 0 ? cpu : -1.0;
}

/* The CPU seconds of `root` and of every live process descended from it (parent by
 * parent, as /proc says now): an MPI job's, mpiexec's own CPU time does not count its
 * ranks'. Up to `max` of the processes, root first, go to tree[], their number to *n;
 * -1 when root is gone. */
static inline double cli_tree_cpu_seconds(pid_t root, struct cli_proc *tree, int max, int *n) {
  *n = 0;
  DIR *d = opendir("/proc");
  if (!d) return -1.0;
  size_t cap = 256, np = 0;
  struct {
    pid_t pid, ppid;
    double cpu;
    unsigned long long start;
    int in;
  } *all = malloc(cap * sizeof *all);
  struct dirent *e;
  while (all && (e = readdir(d)) != NULL) {
    char *end;
    const long v = strtol(e->d_name, &end, 10);
    if (*end || v <= 0) continue;
    if (np == cap) {
      void *q = realloc(all, 2 * cap * sizeof *all);
      if (!q) break;
      all = q;
      cap *= 2;
    }
    all[np].pid = (pid_t)v;
    if (cli_proc_stat(all[np].pid, &all[np].ppid, &all[np].cpu, &all[np].start) == 0) {
      all[np].in = all[np].pid == root;
      np++;
    }
  }
  closedir(d);
  double cpu = -1.0;
  for (size_t i = 0; all && i < np; i++)
    if (all[i].in) {
      cpu = all[i].cpu;
      tree[(*n)++] = (struct cli_proc){all[i].pid, all[i].start};
    }
  for (int grew = cpu >= 0.0; grew;) { /* add the children of the processes in, to a fixed point */
    grew = 0;
    for (size_t i = 0; i < np; i++) {
      if (all[i].in) continue;
      for (size_t j = 0; j < np; j++)
        if (all[j].in && all[j].pid == all[i].ppid) {
          all[i].in = grew = 1;
          cpu += all[i].cpu;
          if (*n < max) tree[(*n)++] = (struct cli_proc){all[i].pid, all[i].start};
          break;
        }
    }
  }
  free(all);
  return cpu;
}

/* How many of the n processes are still alive (the same pid and start time, not a zombie). */
static inline int cli_procs_alive(const struct cli_proc *procs, int n) {
  int alive = 0;
  for (int i = 0; i < n; i++) {
    pid_t pp;
    double cpu;
    unsigned long long t0;
    alive += cli_proc_stat(procs[i].pid, &pp, &cpu, &t0) == 0 && t0 == procs[i].start;
  }
  return alive;
}

#define CLI_JOB_MAX 64

/* SIGKILL to those of the n processes still alive but `except`, then waits up to 30 s
 * for them to be gone; how many are left. */
static inline int cli_kill_procs(const struct cli_proc *procs, int n, pid_t except) {
  for (int i = 0; i < n; i++) {
    pid_t pp;
    double cpu;
    unsigned long long t0;
    if (procs[i].pid != except && cli_proc_stat(procs[i].pid, &pp, &cpu, &t0) == 0 && t0 == procs[i].start)
      kill(procs[i].pid, SIGKILL);
  }
  const struct timespec nap = {0, 50 * 1000 * 1000};
  int alive = 0;
  for (int k = 0; k < 600 && (alive = cli_procs_alive(procs, n)) > 0; k++) nanosleep(&nap, NULL);
  return alive;
}

/* Ends the MPI job of mpiexec `pid` (cli_spawn_job, not yet reaped) and reaps mpiexec (its
 * wait status in *status); procs[CLI_JOB_MAX] holds the n processes of the job seen last
 * (cli_tree_cpu_seconds), to which those seen now are added. SIGTERM to mpiexec, which
 * passes it on to its ranks and kills them a second later (after a SIGKILL the ranks
 * would be left to notice the lost mpiexec themselves, when they next run); after
 * `grace_s` seconds of the clock, SIGKILL to mpiexec and to every process of the job
 * still alive (once mpiexec is gone its ranks are init's children: mpiexec's tree no
 * longer finds them). Returns how many are left alive 30 s later (0 expected); says on
 * stdout what it did. */
static inline int cli_end_job(pid_t pid, struct cli_proc *procs, int n, double grace_s, int *status) {
  int m = 0;
  struct cli_proc now[CLI_JOB_MAX];
  cli_tree_cpu_seconds(pid, now, CLI_JOB_MAX, &m);
  for (int i = 0; i < m; i++) {
    int known = 0;
    for (int j = 0; j < n && !known; j++) known = procs[j].pid == now[i].pid && procs[j].start == now[i].start;
    if (!known && n < CLI_JOB_MAX) procs[n++] = now[i];
  }
  kill(pid, SIGTERM);
  const struct timespec nap = {0, 50 * 1000 * 1000};
  int reaped = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double t = 0.0;
  while (!(reaped = waitpid(pid, status, WNOHANG) == pid) && t < grace_s) {
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    t = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  }
  int alive = cli_procs_alive(procs, n);
  if (!reaped || alive) {
    printf("  mpiexec %d %s %.2f s after SIGTERM, %d other process(es) of its job alive: SIGKILL to each\n",
           (int)pid, reaped ? "ended" : "still running", t, alive - !reaped);
    if (!reaped) {
      kill(pid, SIGKILL);
      waitpid(pid, status, 0);
    }
    alive = cli_kill_procs(procs, n, pid);
  }
  printf("  the job of mpiexec %d ended: %d of its %d process(es) left alive\n", (int)pid, alive, n);
  fflush(stdout);
  return alive;
}

/* One look at the child `pid` (cli_spawn, or cli_spawn_job when `job`): 0 while it runs
 * within `cpu_limit_s` seconds of CPU time (the most seen so far goes to *cpu; a job's is
 * that of mpiexec and all its descendants, cli_tree_cpu_seconds, whose processes seen last
 * go to procs[CLI_JOB_MAX] and their number to *nprocs); 1 when it has exited (its wait
 * status in *status; a job's processes that outlived mpiexec get SIGKILL); 2 when it used
 * its allowance: then ended (cli_end_job for a job, else SIGKILL) and reaped. */
static inline int cli_poll_(pid_t pid, double cpu_limit_s, int *status, int job, struct cli_proc *procs,
                            int *nprocs, double *cpu) {
  const pid_t w = waitpid(pid, status, WNOHANG);
  if (w == pid || w < 0) {
    if (job && cli_procs_alive(procs, *nprocs) > 0) /* mpiexec gone, ranks left */
      printf("  mpiexec %d exited; %d process(es) of its job left alive after SIGKILL\n", (int)pid,
             cli_kill_procs(procs, *nprocs, pid));
    return 1;
  }
  int m = 0;
  struct cli_proc seen[CLI_JOB_MAX];
  const double c = job ? cli_tree_cpu_seconds(pid, seen, CLI_JOB_MAX, &m) : cli_cpu_seconds(pid);
  if (job && m > 0) {
    memcpy(procs, seen, (size_t)m * sizeof *seen);
    *nprocs = m;
  }
  if (c > *cpu) *cpu = c;
  if (*cpu < cpu_limit_s) return 0;
  if (job) {
    cli_end_job(pid, procs, *nprocs, 10.0, status);
  } else {
    kill(pid, SIGKILL);
    waitpid(pid, status, 0);
  }
  return 2;
}

/* Waits until the child `pid` (cli_spawn, or cli_spawn_job when `job`) has written a record
 * to the metrics file `met` (cli_metrics_started): 1, the child still running. 0 when it
 * exited first (its wait status in *status) or used `cpu_limit_s` seconds of CPU without a
 * record (then ended, cli_end_job for a job, else SIGKILL, and reaped); either way the
 * test's stdout says what was awaited, for how long and how the child ended. The bound is
 * CPU time, not the clock: on a loaded machine a starved child gets as long as it needs,
 * one that spins without writing does not run on; one that neither runs nor writes is
 * left to ctest's TIMEOUT, after the line that says what the test is waiting for. A job's
 * CPU time is that of mpiexec and all its descendants, its ranks (cli_tree_cpu_seconds);
 * the processes seen last go to procs[CLI_JOB_MAX] and their number to *nprocs (job only). */
static inline int cli_wait_metrics_(pid_t pid, const char *met, double cpu_limit_s, int *status, int job,
                                    struct cli_proc *procs, int *nprocs) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  printf("  waiting for %s %d to write a record to %s.tmp.* (up to %g s of %s CPU time)\n",
         job ? "mpiexec" : "pid", (int)pid, met, cpu_limit_s, job ? "its and its ranks'" : "its");
  fflush(stdout);
  double cpu = 0.0;
  *status = 0;
  int ended;
  for (;;) {
    if (cli_metrics_started(met)) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      printf("  a record after %.1f s (%.2f s of CPU seen)\n",
             (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), cpu);
      fflush(stdout);
      return 1;
    }
    if ((ended = cli_poll_(pid, cpu_limit_s, status, job, procs, nprocs, &cpu)) != 0) break;
    const struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  const char *how = ended == 1 ? "exited first" : "used its CPU allowance: killed";
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("  gave up after %.1f s (the child used %.2f s of CPU%s): no record in %s.tmp.*; the child %s (%s %d)\n",
         wall, cpu, job ? ", its ranks' included" : "", met, how, WIFSIGNALED(*status) ? "signal" : "exit status",
         WIFSIGNALED(*status) ? WTERMSIG(*status) : WEXITSTATUS(*status));
  fflush(stdout);
  return 0;
}

/* cli_wait_metrics_ for a child of cli_spawn, bounded by its own CPU time. */
static inline int cli_wait_metrics_started(pid_t pid, const char *met, double cpu_limit_s, int *status) {
  return cli_wait_metrics_(pid, met, cpu_limit_s, status, 0, NULL, NULL);
}

/* cli_wait_metrics_started for the job of mpiexec `pid` (cli_spawn_job), bounded by the
 * CPU time of mpiexec and its ranks together; ended with cli_end_job when it gives up.
 * procs[CLI_JOB_MAX] receives the job's processes seen last, *nprocs their number. */
static inline int cli_wait_job_metrics_started(pid_t pid, const char *met, double cpu_limit_s, int *status,
                                               struct cli_proc *procs, int *nprocs) {
  *nprocs = 0;
  return cli_wait_metrics_(pid, met, cpu_limit_s, status, 1, procs, nprocs);
}

/* Runs the command line `line` to its end, stdout and stderr to log_path; its exit status,
 * -1 when it did not exit (a signal, or killed here). Instead of system(), whose shell and
 * job outlive a test that ctest's TIMEOUT kills: the words of `line` (split at blanks, no
 * quoting: the tests' paths hold none; NAME=VALUE words before the program go to its
 * environment) are started as cli_spawn_job starts mpiexec (a program named mpiexec or
 * mpirun: SIGTERM when the test dies, which it passes on to its ranks) or cli_spawn any
 * other (SIGKILL), and waited for up to `cpu_limit_s` seconds of CPU time, the job's
 * processes' together (cli_poll_): then ended, said on stdout, and -1. */
static inline int cli_run(const char *line, const char *log_path, double cpu_limit_s) {
  char buf[8192], *save = NULL;
  const char *argv[256];
  struct {
    char *name, *old;
  } env[8];
  int argc = 0, nenv = 0;
  /* a line these buffers cannot hold whole is a test's error: said, not cut */
  if (snprintf(buf, sizeof buf, "%s", line) >= (int)sizeof buf) {
    printf("cli_run: the command line is longer than %zu bytes\n", sizeof buf - 1);
    return -1;
  }
  for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(w, '=');
    if (argc == 0 && eq && eq > w && !memchr(w, '/', (size_t)(eq - w))) {
      if (nenv == 8) {
        printf("cli_run: more than 8 NAME=VALUE words before the program\n");
        break; /* nothing is started (argc is 0); the environment is restored below */
      }
      *eq = '\0';
      const char *old = getenv(w);
      env[nenv].name = w;
      env[nenv++].old = old ? strdup(old) : NULL;
      setenv(w, eq + 1, 1);
      continue;
    }
    if (argc == 255) {
      printf("cli_run: more than 255 words in the command line\n");
      argc = 0; /* nothing is started; the environment is restored below */
      break;
    }
    argv[argc++] = w;
  }
  argv[argc] = NULL;
  int status = -1, job = 0; /* (-1: not an exit status, when waitpid fails) */
  if (argc > 0) {
    const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    job = strncmp(base, "mpiexec", 7) == 0 || strncmp(base, "mpirun", 6) == 0;
  }
  const pid_t pid = argc > 0 ? cli_spawn_(argv[0], argv, log_path, 1, job ? SIGTERM : SIGKILL) : -1;
  for (int i = nenv - 1; i >= 0; i--) { /* the child has its copy: the test's own environment back */
    if (env[i].old) setenv(env[i].name, env[i].old, 1);
    else unsetenv(env[i].name);
    free(env[i].old);
  }
  if (pid < 0) return -1;
  struct cli_proc procs[CLI_JOB_MAX];
  int nprocs = 0, ended;
  double cpu = 0.0;
  long nap_ns = 10 * 1000 * 1000; /* doubled up to 0.25 s: a short run is seen to end soon after it does, a
                                   * long one is not slowed by many scans of /proc */
  while ((ended = cli_poll_(pid, cpu_limit_s, &status, job, procs, &nprocs, &cpu)) == 0) {
    const struct timespec nap = {0, nap_ns};
    nanosleep(&nap, NULL);
    nap_ns = nap_ns * 2 < 250 * 1000 * 1000 ? nap_ns * 2 : 250 * 1000 * 1000;
  }
  if (ended == 2) {
    printf("  `%s` used its %g s of CPU time without ending: killed\n", line, cpu_limit_s);
    fflush(stdout);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif
