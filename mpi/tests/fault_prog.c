/* mpi/tests/fault_prog.c — a training-like loop where rank 1 fails on purpose.
 *
 * Every rank loops over halo forward + backward exchanges and a gradient
 * all-reduce. At iteration 5 rank 1 fails, according to argv[1]:
 *   exit      exit(3) in the middle of an exchange, without MPI_Finalize
 *   kill      raise(SIGKILL) in the middle of an exchange
 *   segv      raise(SIGSEGV) (a crash)
 *   abort     a step call fails (cols > max_cols); the rank logs it and calls comm_abort
 *   fatal     a CPU backend op gets an invalid argument (gemm with m = -1): its check
 *             fails inside the op, cg_fatal logs it and the handler that comm_init
 *             installed ends the job with CG_FATAL_EXIT_CODE (core/fatal.h); the
 *             program itself handles nothing
 *   badinput  (at setup, not iteration 5) rank 1's plan names a peer that does not
 *             exist; comm_halo_create fails on every rank; they log and comm_abort
 * The other ranks are then blocked in an exchange with rank 1; the job must still
 * end, non-zero, within seconds (checked by run_fault.sh). If the loop ever
 * completes the program exits 0, which the wrapper reports as a failure. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/ops.h"
#include "core/status.h"
#include "halo_fixture.h"
#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

#define COLS 16
#define ITERS 2000

static void fatal(struct comm *c, const char *what, int code) {
  LOG_ERROR("test", "%s failed: %s", what, cg_err_msg());
  comm_abort(c, code);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "exit") && strcmp(mode, "kill") && strcmp(mode, "segv") &&
      strcmp(mode, "abort") && strcmp(mode, "badinput") && strcmp(mode, "fatal")) {
    fprintf(stderr, "usage: fault_prog exit|kill|segv|abort|badinput|fatal\n");
    return 2;
  }
  struct comm *c = NULL;
  if (comm_init(&argc, &argv, &c) < 0) fatal(NULL, "comm_init", 2);
  mt_comm = c;
  int P = comm_size(c), r = comm_rank(c);
  if (P < 2) {
    fprintf(stderr, "fault_prog needs at least 2 ranks\n");
    comm_abort(c, 2);
  }
  struct cg_backend *be = NULL;
  if (cg_backend_cpu_create(1, &be) < 0) fatal(c, "cg_backend_cpu_create", 2);

  struct fx_opts o = {.seed = 5, .n = 300, .avg_deg = 4};
  struct fx_graph g;
  struct fx_local l;
  if (fx_graph_make(&g, P, &o) < 0 || fx_local_make(&g, r, 0, &l) < 0) fatal(c, "fixture", 2);
  if (!strcmp(mode, "badinput") && r == 1 && l.npeers > 0) l.peer[l.npeers - 1] = (int32_t)P;

  struct comm_halo *h = NULL;
  if (comm_halo_create(c, be, &l.plan, COLS, &h) < 0) fatal(c, "comm_halo_create", 4);
  struct comm_grad *gr = NULL;
  if (comm_grad_create(c, be, 1000, &gr) < 0) fatal(c, "comm_grad_create", 4);
  float *x = NULL, *grad = NULL;
  if (be->alloc(be, (void **)&x, (size_t)(l.n_inner + l.n_halo + 1) * COLS * sizeof(float), "x") <
          0 ||
      be->alloc(be, (void **)&grad, 1000 * sizeof(float), "grad") < 0)
    fatal(c, "alloc", 2);
  be->fill(be, x, (l.n_inner + l.n_halo) * COLS, 1.0f);

  for (int it = 0; it < ITERS; it++) {
    if (comm_halo_begin(h, CG_HALO_FORWARD, x, COLS) < 0) fatal(c, "comm_halo_begin(forward)", 5);
    if (r == 1 && it == 5) {
      fprintf(stderr, "[rank 1] fault_prog: failing now (%s)\n", mode);
      fflush(stderr);
      if (!strcmp(mode, "exit")) exit(3);
      if (!strcmp(mode, "kill")) raise(SIGKILL);
      if (!strcmp(mode, "segv")) raise(SIGSEGV);
      if (!strcmp(mode, "fatal"))
        be->gemm(be, 0, 0, -1, COLS, COLS, 1.0f, x, COLS, x, COLS, 0.0f, x, COLS);
    }
    if (comm_halo_end(h, CG_HALO_FORWARD, x, COLS) < 0) fatal(c, "comm_halo_end(forward)", 5);
    int64_t cols = (r == 1 && it == 5 && !strcmp(mode, "abort")) ? COLS + 1 : COLS;
    if (comm_halo_exchange(h, CG_HALO_BACKWARD, x, cols) < 0)
      fatal(c, "comm_halo_exchange(backward)", 6);
    be->fill(be, grad, 1000, 1.0f);
    if (comm_grad_allreduce(gr, grad) < 0) fatal(c, "comm_grad_allreduce", 7);
  }
  /* Only reached when the fault did not stop the job. */
  fprintf(stderr, "[rank %d] fault_prog: the loop finished although rank 1 failed\n", r);
  be->free(be, x);
  be->free(be, grad);
  comm_grad_destroy(&gr);
  comm_halo_destroy(&h);
  fx_local_free(&l);
  fx_graph_free(&g);
  cg_backend_destroy(&be);
  comm_finalize(&c);
  return 0;
}
