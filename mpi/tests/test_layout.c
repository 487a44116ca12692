/* mpi/tests/test_layout.c — node ids and local ranks, real and emulated.
 *
 * Runs on one host, so every rank shares memory with every other. With
 * CAPGNN_EMULATE_NODES=k (clamped to the number of ranks) world rank r belongs
 * to emulated node r*k/P, and local ranks count up within a node. Each rank
 * checks its own values against that formula, then all ranks check the gathered
 * layout is consistent. With the argument --expect-init-error, comm_init must
 * fail with CG_ERR_ARG (an invalid CAPGNN_EMULATE_NODES) and leave MPI running until
 * comm_leave ends it; with --expect-mismatch (the program starts MPI and sets
 * CAPGNN_EMULATE_NODES=2 on its last rank only), fail with CG_ERR_ARG on every rank,
 * naming that rank; with --expect-leaver (the last rank, from its launcher's
 * environment, stops before MPI and calls comm_leave(2)), fail with CG_ERR_ARG on the
 * other ranks, naming it, instead of waiting for it for ever; with --expect-split-error
 * (MPI_Comm_split_type fails, after the CAPGNN_EMULATE_NODES agreement: this program's
 * own definition, through PMPI), fail with CG_ERR_MPI and leave MPI running, as for any
 * failure that is not every rank's refusal of the setting: a rank that finalised MPI
 * there would hang when its peers still wait in a collective (the caller calls
 * comm_abort).
 *
 * Also core/fatal.h's handler: the program installs its own before comm_init;
 * comm_init replaces it with comm's (MPI_Abort) on success only, and comm_finalize
 * puts the program's back, so that a fatal error after comm_finalize reaches it
 * (here it longjmps back) instead of a comm_abort on a finalised MPI. */
#include <mpi.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fatal.h"
#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

/* --expect-split-error: comm_init's MPI_Comm_split_type fails (this definition takes
 * the place of the library's; PMPI_Comm_split_type is the real one). */
static int fail_split;
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out) {
  if (fail_split) return MPI_ERR_OTHER;
  return PMPI_Comm_split_type(comm, type, key, info, out);
}

/* The program's own fatal handler: counts its calls and jumps back. */
static struct {
  int calls, code;
  jmp_buf back;
} own;

static void own_handler(int code, void *ctx) {
  (void)ctx;
  own.calls++;
  own.code = code;
  longjmp(own.back, 1);
}

/* Whether the installed fatal handler is the program's. */
static int own_installed(void) {
  void (*h)(int, void *) = NULL;
  void *ctx = NULL;
  cg_fatal_get_handler(&h, &ctx);
  return h == own_handler && ctx == &own;
}

int main(int argc, char **argv) {
  cg_fatal_set_handler(own_handler, &own);
  if (argc > 1 && !strcmp(argv[1], "--expect-init-error")) {
    struct comm *c = NULL;
    int st = comm_init(&argc, &argv, &c);
    if (st != CG_ERR_ARG || c != NULL || !strstr(cg_err_msg(), "CAPGNN_EMULATE_NODES")) {
      fprintf(stderr, "FAIL: comm_init returned %d (%s) with CAPGNN_EMULATE_NODES='%s'\n", st,
              cg_err_msg(), getenv("CAPGNN_EMULATE_NODES"));
      comm_abort(NULL, 1);
    }
    if (!own_installed()) {
      fprintf(stderr, "FAIL: a failed comm_init replaced the program's fatal handler\n");
      comm_abort(NULL, 1);
    }
    /* refused by every rank together: MPI left running for comm_leave, which ends it */
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    if (!initialised || finalised) {
      fprintf(stderr, "FAIL: comm_init refused an agreed setting and ended MPI before comm_leave\n");
      comm_abort(NULL, 1);
    }
    printf("ok: comm_init refused it: %s\n", cg_err_msg());
    if (comm_leave(0) != 0) return 1;
    MPI_Finalized(&finalised);
    if (!finalised) {
      fprintf(stderr, "FAIL: comm_leave left MPI running\n");
      return 1;
    }
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "--expect-split-error")) {
    fail_split = 1;
    struct comm *c = NULL;
    const int st = comm_init(&argc, &argv, &c);
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (st != CG_ERR_MPI || c != NULL || finalised) {
      fprintf(stderr, "FAIL: comm_init returned %d (%s), MPI %s; expected CG_ERR_MPI with MPI still running\n", st,
              cg_err_msg(), finalised ? "finalised" : "running");
      if (!finalised) comm_abort(NULL, 1);
      return 1;
    }
    printf("ok: comm_init failed (%s) and left MPI running\n", cg_err_msg());
    MPI_Finalize(); /* every rank failed at the same point: none waits for another */
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "--expect-leaver")) {
    const char *rs = getenv("OMPI_COMM_WORLD_RANK"), *ps = getenv("OMPI_COMM_WORLD_SIZE");
    if (!rs || !ps) {
      fprintf(stderr, "FAIL: --expect-leaver runs under Open MPI's mpirun\n");
      return 1;
    }
    const int r = atoi(rs), P = atoi(ps);
    if (r == P - 1) return comm_leave(2) == 2 ? 0 : 1; /* (the test's own status: 0) */
    struct comm *c = NULL;
    char want[120];
    snprintf(want, sizeof want, "rank %d of %d stopped before it started MPI (exit status 2)", P - 1, P);
    const int st = comm_init(&argc, &argv, &c);
    if (st != CG_ERR_ARG || c != NULL || !strstr(cg_err_msg(), want)) {
      fprintf(stderr, "FAIL: rank %d: comm_init returned %d (%s), expected CG_ERR_ARG with '%s'\n", r, st,
              cg_err_msg(), want);
      comm_abort(NULL, 1);
    }
    if (r == 0) printf("ok: comm_init refused it: %s\n", cg_err_msg());
    return comm_leave(0);
  }
  if (argc > 1 && !strcmp(argv[1], "--expect-mismatch")) {
    /* CAPGNN_EMULATE_NODES=2 on the last rank only: refused by every rank with the same
     * message naming it (each rank split its host by its own value, silently) */
    MPI_Init(&argc, &argv);
    int r = 0, P = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (r == P - 1) setenv("CAPGNN_EMULATE_NODES", "2", 1);
    else unsetenv("CAPGNN_EMULATE_NODES");
    struct comm *c = NULL;
    char want[200];
    snprintf(want, sizeof want, "rank 0 reads 1 (or unset), but rank %d reads 2 (1 of %d ranks differ", P - 1, P);
    const int st = comm_init(&argc, &argv, &c);
    if (st != CG_ERR_ARG || c != NULL || !strstr(cg_err_msg(), want)) {
      fprintf(stderr, "FAIL: rank %d: comm_init returned %d (%s), expected CG_ERR_ARG with '%s'\n", r, st,
              cg_err_msg(), want);
      comm_abort(NULL, 1);
    }
    if (r == 0) printf("ok: comm_init refused it on every rank: %s\n", cg_err_msg());
    return comm_leave(0); /* (the barrier and MPI_Finalize, whoever started MPI) */
    return 0;
  }

  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  int P = comm_size(c), r = comm_rank(c);
  MT_CHECK(!own_installed(), "comm_init kept the program's fatal handler instead of comm's");
  MT_CHECK(comm_host_local_size(c) == P && comm_host_local_rank(c) == r,
           "this test expects one host: host-local %d of %d, world %d of %d",
           comm_host_local_rank(c), comm_host_local_size(c), r, P);

  int k = 1;
  const char *env = getenv("CAPGNN_EMULATE_NODES");
  if (env && env[0]) k = atoi(env);
  if (k > P) k = P;
  int node = (int)((long)r * k / P);
  int first = -1, size = 0;
  for (int q = 0; q < P; q++)
    if ((int)((long)q * k / P) == node) {
      if (first < 0) first = q;
      size++;
    }
  MT_CHECK(comm_nnodes(c) == k, "nnodes %d, expected %d", comm_nnodes(c), k);
  MT_CHECK(comm_node(c) == node, "node %d, expected %d", comm_node(c), node);
  MT_CHECK(comm_local_rank(c) == r - first, "local rank %d, expected %d", comm_local_rank(c),
           r - first);
  MT_CHECK(comm_local_size(c) == size, "local size %d, expected %d", comm_local_size(c), size);

  /* Gathered: every node's local ranks are 0..size-1 in world-rank order. */
  int64_t *nodes = malloc(sizeof(int64_t) * (size_t)P),
          *locals = malloc(sizeof(int64_t) * (size_t)P);
  MT_CHECK(nodes && locals, "out of memory");
  MT_OK(comm_allgather_i64(c, comm_node(c), nodes));
  MT_OK(comm_allgather_i64(c, comm_local_rank(c), locals));
  for (int q = 1; q < P; q++) {
    MT_CHECK(nodes[q] >= nodes[q - 1], "node ids not in world-rank order at rank %d", q);
    MT_CHECK(nodes[q] == nodes[q - 1] ? locals[q] == locals[q - 1] + 1 : locals[q] == 0,
             "local rank of rank %d is %lld", q, (long long)locals[q]);
  }
  MT_CHECK(nodes[0] == 0 && locals[0] == 0 && nodes[P - 1] == comm_nnodes(c) - 1, "numbering");
  free(nodes);
  free(locals);
  if (r == 0) printf("ok: %d ranks, %d node(s)%s\n", P, comm_nnodes(c), env ? " (emulated)" : "");

  /* Memory shared by the host's ranks (the stall watchdog's slots): zeroed, each
   * rank's part where the others read it without MPI, the same block when asked again. */
  unsigned char *blk = NULL, *again = NULL;
  MT_OK(comm_host_shared(c, 24, (void **)&blk));
  const int hr = comm_host_local_rank(c), hs = comm_host_local_size(c);
  for (int q = 0; q < hs; q++)
    for (int b = 0; b < 24; b++) MT_CHECK(blk[q * 24 + b] == 0, "shared block not zeroed at part %d", q);
  MT_OK(comm_barrier(c));
  memset(blk + hr * 24, 0x40 + hr, 24);
  MT_OK(comm_barrier(c));
  for (int q = 0; q < hs; q++)
    MT_CHECK(blk[q * 24 + 23] == 0x40 + q, "part %d of the shared block reads %d", q, blk[q * 24 + 23]);
  MT_OK(comm_host_shared(c, 24, (void **)&again));
  MT_CHECK(again == blk, "a second call gave another block");
  MT_CHECK(comm_host_shared(c, 32, (void **)&again) == CG_ERR_ARG, "another size was accepted");
  cg_err_clear();
  if (r == 0) printf("ok: memory shared by the %d ranks of the host\n", hs);
  comm_finalize(&mt_comm);

  /* MPI is finalised: the program's handler is back and a fatal error reaches it */
  if (!own_installed()) {
    fprintf(stderr, "[rank %d] FAIL: comm_finalize did not restore the fatal handler\n", r);
    return 1;
  }
  if (!setjmp(own.back)) {
    if (r == 0) printf("a fatal error after comm_finalize (the ERROR line is expected):\n");
    fflush(stdout);
    CG_FATAL("test", "after_finalize()", "the program's handler must see this");
  }
  cg_fatal_set_handler(NULL, NULL); /* re-arm after the longjmp */
  if (own.calls != 1 || own.code != CG_FATAL_EXIT_CODE) {
    fprintf(stderr, "[rank %d] FAIL: the program's handler ran %d times (code %d)\n", r,
            own.calls, own.code);
    return 1;
  }
  if (r == 0) printf("ok: comm_finalize restored the program's fatal handler\n");
  return 0;
}
