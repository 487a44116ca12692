/* core/tests/test_watchdog.c — the stall watchdog (core/watchdog.h) without MPI:
 * it fires after the timeout without a mark, not while marks come; a process that
 * stops (SIGSTOP) is named by its peer through the shared slots; the default ends
 * the process with CG_STALL_EXIT_CODE. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/status.h"
#include "core/watchdog.h"

static volatile int fired;
static char message[4096];

static void on_fire(const char *msg, void *ctx) {
  (void)ctx;
  snprintf(message, sizeof message, "%s", msg);
  fired = 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void wait_fired(double limit_s) {
  const double t0 = now_s();
  while (!fired && now_s() - t0 < limit_s) usleep(10 * 1000);
}

/* One process: marks keep it quiet; without them it fires after the timeout and says
 * where this rank was. */
static void test_fires_without_marks(void **state) {
  (void)state;
  cg_watchdog_set_slots(NULL, 0, 0, 0);
  cg_watchdog_set_handler(on_fire, NULL);
  fired = 0;
  assert_int_equal(cg_watchdog_start(0.3, "training"), CG_OK);
  for (int i = 0; i < 12; i++) { /* 0.6 s of progress */
    cg_watch_mark("the training step", i + 1, -1, 0);
    usleep(50 * 1000);
  }
  assert_false(fired);
  cg_watch_mark("halo exchange (forward)", 13, 1, 1);
  const double t0 = now_s();
  wait_fired(5.0);
  const double took = now_s() - t0;
  cg_watchdog_stop();
  assert_true(fired);
  printf("  fired %.2f s after the last mark (timeout 0.3 s)\n  %s\n", took, message);
  assert_true(took >= 0.3 && took < 1.5);
  assert_non_null(strstr(message, "rank 0 has been waiting for the other ranks in halo exchange (forward), layer "
                                  "1 of epoch 13"));
  /* busy rather than waiting: said so */
  fired = 0;
  assert_int_equal(cg_watchdog_start(0.2, "training"), CG_OK);
  cg_watch_mark("writing the checkpoint", 7, -1, 0);
  wait_fired(5.0);
  cg_watchdog_stop();
  assert_true(fired);
  assert_non_null(strstr(message, "rank 0 is stuck in writing the checkpoint of epoch 7, not waiting"));
  /* 0: never started */
  fired = 0;
  assert_int_equal(cg_watchdog_start(0.0, "training"), CG_OK);
  usleep(300 * 1000);
  cg_watchdog_stop();
  assert_false(fired);
  cg_watchdog_set_handler(NULL, NULL);
}

/* Two processes sharing their slots (as the ranks of a host do through mpi/): the
 * child trains, then is stopped with SIGSTOP; the parent, waiting, fires and names it
 * as stopped, with where it was. */
static void test_names_a_stopped_peer(void **state) {
  (void)state;
  const size_t b = cg_watch_slot_bytes();
  void *mem = mmap(NULL, 2 * b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(mem != MAP_FAILED);
  memset(mem, 0, 2 * b);
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    cg_watchdog_set_slots(mem, 2, 1, 1);
    if (cg_watchdog_start(60.0, "training") != CG_OK) _exit(1);
    cg_watch_mark("the evaluation", 42, -1, 0);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    for (;;) pause();
  }
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  usleep(100 * 1000);
  kill(child, SIGSTOP);
  cg_watchdog_set_slots(mem, 2, 0, 0);
  cg_watchdog_set_handler(on_fire, NULL);
  fired = 0;
  assert_int_equal(cg_watchdog_start(1.0, "training"), CG_OK);
  cg_watch_mark("gradient all-reduce", 42, -1, 1);
  wait_fired(10.0);
  cg_watchdog_stop();
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  cg_watchdog_set_handler(NULL, NULL);
  cg_watchdog_set_slots(NULL, 0, 0, 0);
  munmap(mem, 2 * b);
  assert_true(fired);
  printf("  %s\n", message);
  char want[128];
  snprintf(want, sizeof want, "rank 1 (pid %d, this host) has not run for", (int)child);
  assert_non_null(strstr(message, want));
  assert_non_null(strstr(message, "it is stopped (SIGSTOP"));
  assert_non_null(strstr(message, "it stopped in the evaluation of epoch 42"));
}

/* Without a handler the process ends with CG_STALL_EXIT_CODE, the lines on stderr. */
static void test_default_exit(void **state) {
  (void)state;
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    cg_watchdog_set_slots(NULL, 0, 0, 0);
    if (cg_watchdog_start(0.2, "training") != CG_OK) _exit(1);
    cg_watch_mark("the training step", 1, -1, 0);
    for (;;) pause(); /* the main thread is stuck */
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), CG_STALL_EXIT_CODE);
}

/* In a forked child: stderr to the pipe's write end `wfd` (the read end `rfd` closed), the
 * watchdog started with 0.2 s and one mark left, so it fires 0.2 s later. */
static void child_start_stalled(int rfd, int wfd) {
  close(rfd);
  if (dup2(wfd, STDERR_FILENO) < 0) _exit(1);
  cg_watchdog_set_slots(NULL, 0, 0, 0);
  if (cg_watchdog_start(0.2, "training") != CG_OK) _exit(1);
  cg_watch_mark("the training step", 1, -1, 0);
}

/* The child must end by itself, with CG_STALL_EXIT_CODE, within 20 s; killed otherwise
 * (its process group too when `group`), and the pipe's read end `rfd` closed. */
static void expect_stall_exit(pid_t child, int rfd, int group) {
  int status = 0;
  pid_t w = 0;
  const double t0 = now_s();
  while ((w = waitpid(child, &status, WNOHANG)) == 0 && now_s() - t0 < 20.0) usleep(50 * 1000);
  const double took = now_s() - t0;
  if (group) kill(-child, SIGKILL); /* a grandchild, and the child if it still runs */
  if (w == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  close(rfd);
  printf("  the child %s after %.1f s\n", w == child ? "ended" : "was still running (killed)", took);
  assert_int_equal(w, child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), CG_STALL_EXIT_CODE);
}

/* The main thread blocked in a write to stderr (a pipe nobody reads, a log file on a hung
 * file system) holds stderr's lock, so the watchdog's report cannot be written: the
 * process must end all the same, with CG_STALL_EXIT_CODE (it hung for ever, the job with
 * it, whatever --stall-timeout said). */
static void test_exit_when_stderr_blocks(void **state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    child_start_stalled(fds[0], fds[1]);
    char line[4096];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    for (;;) fprintf(stderr, "%s\n", line); /* fills the pipe, then waits in it holding stderr's lock */
  }
  close(fds[1]);
  expect_stall_exit(child, fds[0], 0);
}

/* As above, but the main thread waits in the kernel where only a fatal signal wakes it
 * (a write to a hard-mounted NFS or a FUSE file system that hangs: TASK_KILLABLE; here
 * the wait of a vfork() parent for its child, which is the same kind of wait), holding
 * stderr's lock. A process-directed SIGALRM goes to that thread (Linux gives it to the
 * main thread when it does not block it) and is never run: the deadline must not
 * depend on which thread a signal reaches. */
static void test_exit_when_main_sleeps_in_kernel(void **state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    child_start_stalled(fds[0], fds[1]);
    setpgid(0, 0); /* (the grandchild with it, for the kill below) */
    flockfile(stderr); /* held, as by a thread stuck inside a write to it */
    if (vfork() == 0)
      for (;;) pause(); /* (the grandchild: killed with its process group below) */
    _exit(1);
  }
  close(fds[1]);
  expect_stall_exit(child, fds[0], 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_fires_without_marks),
                                     cmocka_unit_test(test_names_a_stopped_peer),
                                     cmocka_unit_test(test_default_exit),
                                     cmocka_unit_test(test_exit_when_stderr_blocks),
                                     cmocka_unit_test(test_exit_when_main_sleeps_in_kernel)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
