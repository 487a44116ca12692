/* core/tests/test_fatal.c — the fatal-error path of a training step (core/fatal.h).
 *
 * - cg_fatal writes one ERROR line with host, rank, subsystem, file:line, the
 *   failing call and the message, flushed before the handler runs, then calls the
 *   installed handler with CG_FATAL_EXIT_CODE and its context (here a handler
 *   that longjmps back); cg_fatal_get_handler returns what is installed;
 * - the CPU backend's argument checks (CPU_REQUIRE) go through it;
 * - in a child process: the default handler and NULL (restored default) abort,
 *   a handler that returns aborts, and a fatal error inside the handler aborts
 *   instead of recursing (SIGABRT, not a hang: ctest's timeout would say so).
 * stderr is captured in a file. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/fatal.h"
#include "core/log.h"
#include "core/ops.h"

/* ---- stderr capture ---- */

static char cap_path[64];
static int cap_fd = -1, cap_saved = -1;

static void capture_begin(void) {
  strcpy(cap_path, "/tmp/capgnn_fatal_XXXXXX");
  cap_fd = mkstemp(cap_path);
  assert_true(cap_fd >= 0);
  fflush(stderr);
  cap_saved = dup(STDERR_FILENO);
  assert_true(cap_saved >= 0);
  assert_true(dup2(cap_fd, STDERR_FILENO) >= 0);
}

/* What the capture file holds now (malloc'ed). */
static char *capture_read(void) {
  off_t n = lseek(cap_fd, 0, SEEK_END);
  char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
  if (!s) return NULL;
  ssize_t got = n > 0 ? pread(cap_fd, s, (size_t)n, 0) : 0;
  s[got > 0 ? got : 0] = '\0';
  return s;
}

static char *capture_end(void) {
  fflush(stderr);
  dup2(cap_saved, STDERR_FILENO);
  close(cap_saved);
  char *s = capture_read();
  close(cap_fd);
  unlink(cap_path);
  assert_non_null(s);
  return s;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* ---- a handler that records its call and longjmps back ---- */

struct record {
  int calls, code;
  void *ctx;
  char *seen; /* the captured stderr at the moment the handler ran */
  jmp_buf back;
};

static void jump_handler(int code, void *ctx) {
  struct record *r = ctx;
  r->calls++;
  r->code = code;
  r->ctx = ctx;
  r->seen = capture_read();
  longjmp(r->back, 1);
}

static void test_logs_and_calls_handler(void **state) {
  (void)state;
  static struct record rec; /* static: modified between setjmp and longjmp */
  memset(&rec, 0, sizeof rec);
  cg_log_set_rank(3);
  void (*h)(int, void *) = jump_handler;
  void *ctx = &rec;
  cg_fatal_get_handler(&h, &ctx); /* the default before: NULL, NULL */
  assert_null(h);
  assert_null(ctx);
  cg_fatal_set_handler(jump_handler, &rec);
  cg_fatal_get_handler(&h, &ctx); /* what was installed, to be put back later */
  assert_ptr_equal(h, jump_handler);
  assert_ptr_equal(ctx, &rec);
  capture_begin();
  volatile int line = 0;
  if (!setjmp(rec.back)) {
    line = __LINE__ + 1;
    CG_FATAL("test", "frobnicate(x, y)", "x=%d is not %s", 42, "even enough");
  }
  char *out = capture_end();
  cg_fatal_set_handler(NULL, NULL);
  cg_log_set_rank(0);

  assert_int_equal(rec.calls, 1);
  assert_int_equal(rec.code, CG_FATAL_EXIT_CODE);
  assert_int_equal(rec.code, 70);
  assert_ptr_equal(rec.ctx, &rec);
  char want[512];
  snprintf(want, sizeof want,
           "[%s:3 test] ERROR %s:%d: frobnicate(x, y) failed: x=42 is not even enough "
           "(fatal inside a training step, aborting)\n",
           cg_hostname(), __FILE__, line);
  printf("logged: %s", out);
  assert_string_equal(out, want);
  /* flushed before the handler ran (a handler that ends the process loses nothing) */
  assert_non_null(rec.seen);
  assert_string_equal(rec.seen, want);
  free(rec.seen);
  free(out);
}

/* Invalid arguments to a CPU op reach the handler, with the condition and the
 * message in the line; the handler can be installed again after a longjmp. */
static void test_cpu_backend_require(void **state) {
  (void)state;
  struct cg_backend *be = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &be), 0);
  float w[4] = {1, 2, 3, 4}, g[4] = {0}, m[4] = {0}, v[4] = {0};
  const struct cg_adam_params p = {0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, 0};
  static struct record rec;
  for (int round = 0; round < 2; round++) {
    memset(&rec, 0, sizeof rec);
    cg_fatal_set_handler(jump_handler, &rec);
    capture_begin();
    if (!setjmp(rec.back)) {
      if (round == 0) be->adam(be, w, g, m, v, 4, &p, 0);
      else be->gemm(be, 0, 0, -1, 2, 2, 1.0f, w, 2, w, 2, 0.0f, w, 2);
    }
    char *out = capture_end();
    cg_fatal_set_handler(NULL, NULL);
    printf("logged: %s", out);
    assert_int_equal(rec.calls, 1);
    assert_int_equal(rec.code, CG_FATAL_EXIT_CODE);
    assert_int_equal(count_lines(out), 1);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "[%s:0 core] ERROR ", cg_hostname());
    assert_true(strncmp(out, prefix, strlen(prefix)) == 0);
    assert_non_null(strstr(out, "cpu_backend.c:"));
    if (round == 0)
      assert_non_null(strstr(out, ": cpu backend: t >= 1 failed: adam: step t=0 must be >= 1 "
                                  "(fatal inside a training step, aborting)"));
    else
      assert_non_null(strstr(out, "failed: gemm: negative size m=-1 n=2 k=2"));
    free(rec.seen);
    free(out);
  }
  /* nothing was written by the refused calls */
  assert_true(w[0] == 1.0f && w[3] == 4.0f && m[0] == 0.0f && v[0] == 0.0f);
  cg_backend_destroy(&be);
}

/* ---- in a child: how the process ends ---- */

static void returning_handler(int code, void *ctx) {
  (void)code;
  (void)ctx;
}

static void refailing_handler(int code, void *ctx) {
  (void)code;
  (void)ctx;
  CG_FATAL("test", "cleanup()", "failed again");
}

enum child_case { CHILD_DEFAULT, CHILD_RESTORED, CHILD_RETURNS, CHILD_REFAILS };

/* Runs cg_fatal in a child under `which` setting; returns its wait status and
 * its stderr in *out. */
static int run_child(enum child_case which, char **out) {
  fflush(stdout); /* or the child's cg_fatal would flush our pending output again */
  capture_begin();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* an expected abort leaves no core file */
    if (which == CHILD_RESTORED) {
      cg_fatal_set_handler(returning_handler, NULL);
      cg_fatal_set_handler(NULL, NULL);
    } else if (which == CHILD_RETURNS) {
      cg_fatal_set_handler(returning_handler, NULL);
    } else if (which == CHILD_REFAILS) {
      cg_fatal_set_handler(refailing_handler, NULL);
    }
    CG_FATAL("test", "step()", "case %d", (int)which);
    _exit(0); /* not reached: cg_fatal does not return */
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  *out = capture_end();
  printf("child %d: %s", (int)which, *out);
  return status;
}

static void assert_aborted(int status) {
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void test_default_handler_aborts(void **state) {
  (void)state;
  char *out = NULL;
  assert_aborted(run_child(CHILD_DEFAULT, &out));
  assert_non_null(strstr(out, "step() failed: case 0 (fatal inside a training step, aborting)"));
  free(out);
  assert_aborted(run_child(CHILD_RESTORED, &out));
  assert_int_equal(count_lines(out), 1);
  free(out);
}

static void test_returning_handler_aborts(void **state) {
  (void)state;
  char *out = NULL;
  assert_aborted(run_child(CHILD_RETURNS, &out));
  assert_non_null(strstr(out, "step() failed: case 2"));
  assert_non_null(strstr(out, "the fatal-error handler returned; aborting"));
  free(out);
}

static void test_fatal_inside_handler_aborts(void **state) {
  (void)state;
  char *out = NULL;
  assert_aborted(run_child(CHILD_REFAILS, &out));
  assert_non_null(strstr(out, "step() failed: case 3 (fatal inside a training step"));
  assert_non_null(strstr(out, "cleanup() failed: failed again (inside the fatal-error handler"));
  assert_int_equal(count_lines(out), 2);
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_logs_and_calls_handler),
      cmocka_unit_test(test_cpu_backend_require),
      cmocka_unit_test(test_default_handler_aborts),
      cmocka_unit_test(test_returning_handler_aborts),
      cmocka_unit_test(test_fatal_inside_handler_aborts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
