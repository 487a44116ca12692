/* mpi/comm.c — MPI start-up, node layout, small host collectives, counters.
 *
 * The base layer of mpi/: it calls no other file of the module. What another file
 * starts and MPI must outlive (NCCL) it hands over as a release function
 * (comm_release_set), so that comm_finalize can stop it first without knowing what
 * it is. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fatal.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/status.h"
#include "mpi/comm_internal.h"

int comm_mpi_error(int rc, const char *call, const char *file, int line) {
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
    snprintf(msg, sizeof msg, "MPI error %d", rc);
  else
    msg[len] = '\0';
  const char *base = strrchr(file, '/');
  return cg_err_set(CG_ERR_MPI, "%s failed at %s:%d: %s", call, base ? base + 1 : file, line, msg);
}

void comm_release_set(struct comm *c, void (*fn)(struct comm *c)) { c->release = fn; }

/* Number of emulated nodes per host from CAPGNN_EMULATE_NODES (1 when unset). */
static int emulate_nodes_from_env(int *k) {
  *k = 1;
  const char *s = getenv("CAPGNN_EMULATE_NODES");
  if (!s || !s[0]) return CG_OK;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end != '\0' || v < 1 || v > INT_MAX)
    return cg_err_set(CG_ERR_ARG,
                      "CAPGNN_EMULATE_NODES='%s' is not valid: set it to a positive integer "
                      "(the number of emulated nodes per host) or unset it",
                      s);
  *k = (int)v;
  return CG_OK;
}

int comm_emulate_nodes_check(void) {
  int k = 1;
  return emulate_nodes_from_env(&k);
}

static void comm_free_comms(struct comm *c) {
  cg_free(c->node_of);
  cg_free(c->node_ranks);
  c->node_of = c->node_ranks = NULL;
  if (c->cross != MPI_COMM_NULL) MPI_Comm_free(&c->cross);
  if (c->node != MPI_COMM_NULL) MPI_Comm_free(&c->node);
  if (c->host != MPI_COMM_NULL) MPI_Comm_free(&c->host);
  if (c->world != MPI_COMM_NULL) MPI_Comm_free(&c->world);
}

/* A rank's CAPGNN_EMULATE_NODES as emulate_nodes_agree gathers it (-1: invalid), in words. */
static const char *emulate_nodes_text(int k, char *buf, size_t len) {
  if (k == -1) snprintf(buf, len, "a value that is not a positive integer");
  else if (k == 1) snprintf(buf, len, "1 (or unset)");
  else snprintf(buf, len, "%d", k);
  return buf;
}

/* CAPGNN_EMULATE_NODES the same on every rank, or CG_ERR_ARG on every rank: each rank
 * splits its own host by its own value, so a value set on some ranks only gives a layout
 * that none of them asked for (rank 0 alone with 2 of 4 ranks: one node, logged as
 * emulated), and a value invalid on some ranks only left those ranks before MPI started,
 * without a word from rank 0. */
static int emulate_nodes_agree(struct comm *c, int *k) {
  int st = emulate_nodes_from_env(k);
  int mine = st == CG_OK ? *k : -1, *all = NULL;
  if (st != CG_OK) {
    cg_err_clear();
    *k = 1;
  }
  if (c->size == 1) {
    return st == CG_OK ? CG_OK : emulate_nodes_from_env(k);
  }
  all = cg_malloc(sizeof(int) * (size_t)c->size, "every rank's CAPGNN_EMULATE_NODES");
  int ok = all != NULL;
  COMM_MPI_TRY_GOTO(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c->world), done);
  if (!ok) {
    st = cg_err_set(CG_ERR_NOMEM, "out of memory for every rank's CAPGNN_EMULATE_NODES");
    goto done;
  }
  COMM_MPI_TRY_GOTO(MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, c->world), done);
  int ndiff = 0;
  for (int r = 1; r < c->size; r++) ndiff += all[r] != all[0];
  if (ndiff == 0) { /* the same everywhere: valid, or this rank's own message */
    st = mine == -1 ? emulate_nodes_from_env(k) : CG_OK;
    goto done;
  }
  char list[600];
  size_t len = 0;
  int named = 0;
  for (int r = 1; r < c->size && named < 8; r++) {
    if (all[r] == all[0]) continue;
    char v[48];
    const int w = snprintf(list + len, sizeof list - len, "%srank %d reads %s", named ? ", " : "", r,
                           emulate_nodes_text(all[r], v, sizeof v));
    if (w > 0 && (size_t)w < sizeof list - len) len += (size_t)w;
    named++;
  }
  char first[48];
  st = cg_err_set(CG_ERR_ARG,
                  "CAPGNN_EMULATE_NODES differs across the ranks: rank 0 reads %s, but %s%s (%d of %d ranks "
                  "differ from rank 0): set it the same on every rank (mpirun -x CAPGNN_EMULATE_NODES passes "
                  "it to all)",
                  emulate_nodes_text(all[0], first, sizeof first), list, ndiff > named ? ", ..." : "", ndiff,
                  c->size);
done:
  cg_free(all);
  return st;
}

/* Node ids: the lowest world rank of each node, numbered in increasing order. */
static int comm_layout(struct comm *c) {
  int st = CG_OK;
  int *leaders = NULL;
  unsigned char *seen = NULL;
  int k = 1;

  TRY(emulate_nodes_agree(c, &k));
  COMM_MPI_TRY(
      MPI_Comm_split_type(c->world, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &c->host));
  COMM_MPI_TRY(MPI_Comm_set_errhandler(c->host, MPI_ERRORS_RETURN));
  COMM_MPI_TRY(MPI_Comm_rank(c->host, &c->host_local_rank));
  COMM_MPI_TRY(MPI_Comm_size(c->host, &c->host_local_size));

  if (k > c->host_local_size) {
    if (c->host_local_rank == 0)
      LOG_WARN("mpi",
               "CAPGNN_EMULATE_NODES=%d but host %s runs only %d ranks: using %d emulated nodes "
               "there",
               k, cg_hostname(), c->host_local_size, c->host_local_size);
    k = c->host_local_size;
  }
  c->emulate_k = k;
  /* Contiguous blocks of host-local ranks, sizes differing by at most one. */
  int block = (int)((int64_t)c->host_local_rank * k / c->host_local_size);
  COMM_MPI_TRY(MPI_Comm_split(c->host, block, c->host_local_rank, &c->node));
  COMM_MPI_TRY(MPI_Comm_set_errhandler(c->node, MPI_ERRORS_RETURN));
  COMM_MPI_TRY(MPI_Comm_rank(c->node, &c->local_rank));
  COMM_MPI_TRY(MPI_Comm_size(c->node, &c->local_size));

  int leader = c->rank;
  COMM_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, c->node));
  leaders = cg_malloc(sizeof(int) * (size_t)c->size, "node leaders");
  seen = cg_calloc((size_t)c->size, 1, "node leader flags");
  if (!leaders || !seen) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  COMM_MPI_TRY_GOTO(MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, c->world), done);
  for (int r = 0; r < c->size; r++) seen[leaders[r]] = 1;
  c->node_id = 0;
  c->nnodes = 0;
  for (int r = 0; r < c->size; r++) {
    if (!seen[r]) continue;
    if (r < leader) c->node_id++;
    c->nnodes++;
  }
  /* Every rank's node and this node's members, for code that routes by node. */
  c->node_of = cg_malloc(sizeof(int) * (size_t)c->size, "node of every rank");
  c->node_ranks = cg_malloc(sizeof(int) * (size_t)c->local_size, "ranks of this node");
  if (!c->node_of || !c->node_ranks) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  COMM_MPI_TRY_GOTO(MPI_Allgather(&c->node_id, 1, MPI_INT, c->node_of, 1, MPI_INT, c->world), done);
  COMM_MPI_TRY_GOTO(MPI_Allgather(&c->rank, 1, MPI_INT, c->node_ranks, 1, MPI_INT, c->node), done);
done:
  cg_free(leaders);
  cg_free(seen);
  return st;
}

/* core/fatal.h's handler once MPI runs: a fatal error inside a training step ends
 * the whole job (MPI_Abort on the world), so no peer waits in a collective for a
 * rank that is gone. The world, not c->world: it outlives any struct comm. */
static void comm_fatal_handler(int code, void *ctx) {
  (void)ctx;
  comm_abort(NULL, code);
}

/* comm_init's first collective, and comm_leave's for a process that never started MPI:
 * each rank says whether it is leaving (the exit status it leaves with, or -1 when it
 * goes on), so that a rank that stopped before MPI (a command line or setting it
 * refused) ends the others with a message instead of leaving them in a collective for
 * ever. Gives v[0] = the world size minus the lowest leaving rank (0: none leaves) and
 * v[1] = the largest status the leaving ranks leave with. */
static int leavers_agree(int leaving_status, int v[2]) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  v[0] = leaving_status >= 0 ? size - rank : 0;
  v[1] = leaving_status;
  COMM_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  return CG_OK;
}

int comm_leave(int code) {
  int initialised = 0, finalised = 0;
  fflush(stdout); /* (a rank's last lines reach mpirun before any rank can leave) */
  fflush(stderr);
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (finalised) return code;
  if (!initialised) {
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return code;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int v[2];
    if (leavers_agree(code, v) != CG_OK) cg_err_clear(); /* (leaving anyway) */
  }
  /* every rank has said what it had to before any rank can leave: mpirun ends the whole
   * job as soon as one process exits non-zero, and the others with it, mid-sentence */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}

/* A process no launcher started (no mpirun, srun or other PMI environment) is an MPI
 * "singleton". Open MPI then forks an orted daemon of its own before MPI_Init returns, which
 * only MPI_Comm_spawn and connecting to other jobs need, neither of which capgnn does: on
 * the 2-core VM (2026-11-29) a one-epoch karate run took 0.37-0.40 s with the daemon and
 * 0.28-0.31 s without (five runs each). ess_singleton_isolated (Open MPI 4.x) skips it; a
 * value the user set is kept, and other MPI libraries ignore the variable. */
static void singleton_without_daemon(void) {
  static const char *const launched[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof launched / sizeof launched[0]; i++)
    if (getenv(launched[i])) return;
  setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
}

int comm_init(int *argc, char ***argv, struct comm **out) {
  int st = CG_OK;
  *out = NULL;
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (finalised)
    return cg_err_set(CG_ERR_MPI,
                      "comm_init called after MPI_Finalize: MPI can start only once "
                      "per process");
  int we_init = 0;
  if (!initialised) {
    singleton_without_daemon();
    int provided = 0;
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
      return cg_err_set(CG_ERR_MPI,
                        "MPI_Init_thread failed (code %d): check the MPI installation "
                        "and how the job was launched",
                        rc);
    we_init = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_FUNNELED)
      LOG_WARN("mpi",
               "MPI provides thread level %d < MPI_THREAD_FUNNELED; only the main thread "
               "calls MPI, which should still work",
               provided);
  }

  int left[2];
  TRY(leavers_agree(-1, left));
  if (left[0] > 0) {
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* (on every rank that went on: MPI left running for comm_leave, as below) */
    return cg_err_set(CG_ERR_ARG,
                      "rank %d of %d stopped before it started MPI (exit status %d), where rank %d went on: "
                      "every rank must be given the same command line, settings files and CAPGNN_* "
                      "environment (run rank %d's command alone to see why it stopped)",
                      size - left[0], size, left[1], rank, size - left[0]);
  }

  struct comm *c = cg_calloc(1, sizeof *c, "communicator state");
  if (!c) return CG_ERR_NOMEM;
  c->world = c->host = c->node = c->cross = MPI_COMM_NULL;
  c->shared_win = MPI_WIN_NULL;
  c->we_initialised = we_init;
  c->path_req = COMM_PATH_AUTO;
  c->path_logged = -1;
  c->grad_logged = -1;
  c->gpu_ordinal = -1;
  c->uuid_dev = -1;
  c->cuda_aware = -1;
  c->nccl_dev = -1;

  COMM_MPI_TRY_GOTO(MPI_Comm_dup(MPI_COMM_WORLD, &c->world), fail);
  COMM_MPI_TRY_GOTO(MPI_Comm_set_errhandler(c->world, MPI_ERRORS_RETURN), fail);
  COMM_MPI_TRY_GOTO(MPI_Comm_rank(c->world, &c->rank), fail);
  COMM_MPI_TRY_GOTO(MPI_Comm_size(c->world, &c->size), fail);
  cg_log_set_rank(c->rank);
  TRY_GOTO(comm_layout(c), fail);

  /* One rank is the common case and says nothing new: keep it out of the way (DEBUG). */
  if (cg_log_enabled(c->size > 1 ? CG_LOG_INFO : CG_LOG_DEBUG, "mpi"))
    cg_log_write(c->size > 1 ? CG_LOG_INFO : CG_LOG_DEBUG, "mpi",
                 "%d rank%s on %d node%s%s (this rank: node %d, local rank %d of %d)", c->size,
           c->size == 1 ? "" : "s", c->nnodes, c->nnodes == 1 ? "" : "s",
           getenv("CAPGNN_EMULATE_NODES") && atoi(getenv("CAPGNN_EMULATE_NODES")) > 1 ? " (emulated)" : "",
           c->node_id, c->local_rank,
           c->local_size);
  /* Whoever initialised MPI: from now on a fatal step error ends the job. The caller's
   * handler is kept for comm_finalize to restore, since after it MPI may be gone. */
  cg_fatal_get_handler(&c->prev_fatal, &c->prev_fatal_ctx);
  cg_fatal_set_handler(comm_fatal_handler, NULL);
  *out = c;
  return CG_OK;

fail:
  cg_err_trail(__FILE__, __LINE__, "comm_init");
  comm_free_comms(c);
  cg_free(c);
  /* (a setting every rank refused together, CG_ERR_ARG: MPI stays up until the caller
   * has said so and calls comm_leave, so that no rank leaves while rank 0 still speaks) */
  return st;
}

void comm_finalize(struct comm **cp) {
  if (!cp || !*cp) return;
  struct comm *c = *cp;
  int we_init = c->we_initialised;
  /* comm's handler calls MPI_Abort: not once MPI is finalised, nor after *c is gone */
  cg_fatal_set_handler(c->prev_fatal, c->prev_fatal_ctx);
  /* what was started after MPI (NCCL) stops before MPI */
  if (c->release) c->release(c);
  if (c->shared_win != MPI_WIN_NULL) MPI_Win_free(&c->shared_win);
  comm_free_comms(c);
  cg_free(c);
  *cp = NULL;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (we_init && !finalised) MPI_Finalize();
}

int comm_rank(const struct comm *c) { return c->rank; }
int comm_size(const struct comm *c) { return c->size; }
int comm_node(const struct comm *c) { return c->node_id; }
int comm_nnodes(const struct comm *c) { return c->nnodes; }
int comm_local_rank(const struct comm *c) { return c->local_rank; }
int comm_local_size(const struct comm *c) { return c->local_size; }
int comm_host_local_rank(const struct comm *c) { return c->host_local_rank; }
int comm_node_of(const struct comm *c, int world_rank) {
  return world_rank >= 0 && world_rank < c->size ? c->node_of[world_rank] : -1;
}
int comm_node_world_rank(const struct comm *c, int local_rank) {
  return local_rank >= 0 && local_rank < c->local_size ? c->node_ranks[local_rank] : -1;
}
int comm_host_local_size(const struct comm *c) { return c->host_local_size; }

void comm_abort(struct comm *c, int code) {
  if (code == 0) code = 1; /* an abort is never a success */
  LOG_ERROR("mpi", "aborting the whole job (exit code %d)", code);
  fflush(stdout);
  fflush(stderr);
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised) MPI_Abort(c ? c->world : MPI_COMM_WORLD, code);
  /* MPI_Abort does not return; this covers "MPI not running". */
  _exit(code);
}

/* ---- host collectives -------------------------------------------------------- */

int comm_barrier(struct comm *c) {
  COMM_MPI_TRY(MPI_Barrier(c->world));
  return CG_OK;
}

int comm_bcast(struct comm *c, void *buf, size_t bytes, int root) {
  if (root < 0 || root >= c->size)
    return cg_err_set(CG_ERR_ARG, "comm_bcast: root %d is not a rank (world size %d)", root,
                      c->size);
  char *p = buf;
  while (bytes > 0) { /* MPI counts are int: send large buffers in chunks */
    int n = bytes > (size_t)(1 << 30) ? (1 << 30) : (int)bytes;
    COMM_MPI_TRY(MPI_Bcast(p, n, MPI_BYTE, root, c->world));
    p += n;
    bytes -= (size_t)n;
  }
  return CG_OK;
}

static MPI_Op comm_mpi_op(enum comm_op op) {
  switch (op) {
    case COMM_MAX:
      return MPI_MAX;
    case COMM_MIN:
      return MPI_MIN;
    default:
      return MPI_SUM;
  }
}

static int comm_op_check(enum comm_op op, int n, const char *fn) {
  if (op != COMM_SUM && op != COMM_MAX && op != COMM_MIN)
    return cg_err_set(CG_ERR_ARG, "%s: unknown reduction %d (use COMM_SUM, COMM_MAX or COMM_MIN)",
                      fn, (int)op);
  if (n < 0) return cg_err_set(CG_ERR_ARG, "%s: negative count %d", fn, n);
  return CG_OK;
}

int comm_allreduce_host(struct comm *c, double *v, int n, enum comm_op op) {
  TRY(comm_op_check(op, n, "comm_allreduce_host"));
  if (n == 0) return CG_OK;
  COMM_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, comm_mpi_op(op), c->world));
  return CG_OK;
}

int comm_allreduce_i64(struct comm *c, int64_t *v, int n, enum comm_op op) {
  TRY(comm_op_check(op, n, "comm_allreduce_i64"));
  if (n == 0) return CG_OK;
  COMM_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, comm_mpi_op(op), c->world));
  return CG_OK;
}

int comm_host_sum_i64(struct comm *c, int64_t *v) {
  COMM_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT64_T, MPI_SUM, c->host));
  return CG_OK;
}

int comm_allgather_i64(struct comm *c, int64_t value, int64_t *out) {
  COMM_MPI_TRY(MPI_Allgather(&value, 1, MPI_INT64_T, out, 1, MPI_INT64_T, c->world));
  return CG_OK;
}

int comm_node_allgather_i64(struct comm *c, int64_t value, int64_t *out) {
  COMM_MPI_TRY(MPI_Allgather(&value, 1, MPI_INT64_T, out, 1, MPI_INT64_T, c->node));
  return CG_OK;
}

int comm_node_barrier(struct comm *c) {
  COMM_MPI_TRY(MPI_Barrier(c->node));
  return CG_OK;
}

/* Counts and displacements as MPI's ints, checked: set-up exchanges of ids stay far
 * below 2^31 values per rank, and a larger one must fail, not wrap. */
static int counts_to_int(const int64_t *cnt, int n, int *icnt, int *idsp, const char *fn) {
  int64_t sum = 0;
  for (int i = 0; i < n; i++) {
    if (cnt[i] < 0 || cnt[i] > INT_MAX || sum > INT_MAX)
      return cg_err_set(CG_ERR_UNSUPPORTED, "%s: %lld values to or from one rank (at most %d)", fn,
                        (long long)cnt[i], INT_MAX);
    icnt[i] = (int)cnt[i];
    idsp[i] = (int)sum;
    sum += cnt[i];
  }
  if (sum > INT_MAX)
    return cg_err_set(CG_ERR_UNSUPPORTED, "%s: %lld values in all (at most %d)", fn,
                      (long long)sum, INT_MAX);
  return CG_OK;
}

/* Every rank of `mc` learns whether all of them are ready to enter a collective
 * (status >= 0 on each): a rank that failed before it and left alone would leave the
 * others waiting inside. MINLOC: the most negative status, and the lowest rank (`me`,
 * named "WHOSE N SUFFIX" in the message) that has it. */
static int agree_in(struct comm *c, MPI_Comm mc, int me, int status, const char *whose, const char *suffix,
                    const char *what) {
  struct {
    int status, rank;
  } mine = {status < 0 ? status : 0, me}, worst;
  COMM_MPI_TRY(MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MINLOC, mc));
  if (worst.status >= 0) return CG_OK;
  if (status < 0) return status; /* keep this rank's own message */
  cg_err_set(worst.status, "%s %d%s failed during %s (%s; see that rank's log)", whose, worst.rank, suffix, what,
             cg_status_str(worst.status));
  c->relay_hash = cg_fnv1a_str(cg_err_msg()); /* (comm_err_is_relay) */
  return worst.status;
}

int comm_err_is_relay(const struct comm *c) {
  return c && c->relay_hash && cg_err_msg()[0] && cg_fnv1a_str(cg_err_msg()) == c->relay_hash;
}

/* comm_agree over the ranks of this node (for node collectives). */
static int node_agree(struct comm *c, int status, const char *what) {
  return agree_in(c, c->node, c->local_rank, status, "local rank", " of this node", what);
}

int comm_node_allgatherv_i64(struct comm *c, const int64_t *mine, int64_t n, int64_t *all) {
  int st = CG_OK;
  const int L = c->local_size;
  int64_t *cnt = cg_malloc(sizeof(int64_t) * (size_t)L, "node gather counts");
  int *icnt = cg_malloc(sizeof(int) * (size_t)L, "node gather counts");
  int *idsp = cg_malloc(sizeof(int) * (size_t)L, "node gather displacements");
  if (!cnt || !icnt || !idsp) st = CG_ERR_NOMEM;
  /* the node's ranks enter the gathers together or not at all (node_agree) */
  TRY_GOTO(node_agree(c, st, "comm_node_allgatherv_i64"), done);
  TRY_GOTO(comm_node_allgather_i64(c, n, cnt), done);
  st = counts_to_int(cnt, L, icnt, idsp, "comm_node_allgatherv_i64"); /* the same counts on every rank */
  if (st == CG_OK)
    COMM_MPI_TRY_GOTO(MPI_Allgatherv(mine, (int)n, MPI_INT64_T, all, icnt, idsp, MPI_INT64_T, c->node), done);
done:
  cg_free(cnt);
  cg_free(icnt);
  cg_free(idsp);
  return st;
}

int comm_alltoall_i64(struct comm *c, const int64_t *send, int64_t *recv) {
  COMM_MPI_TRY(MPI_Alltoall(send, 1, MPI_INT64_T, recv, 1, MPI_INT64_T, c->world));
  return CG_OK;
}

int comm_alltoallv_i64(struct comm *c, const int64_t *send, const int64_t *scount, int64_t *recv,
                       const int64_t *rcount) {
  int st = CG_OK;
  const int P = c->size;
  int *sc = cg_malloc(sizeof(int) * (size_t)P * 4, "all-to-all counts");
  if (!sc) st = CG_ERR_NOMEM;
  int *sd = sc ? sc + P : NULL, *rc = sc ? sc + 2 * P : NULL, *rd = sc ? sc + 3 * P : NULL;
  if (st == CG_OK) st = counts_to_int(scount, P, sc, sd, "comm_alltoallv_i64");
  if (st == CG_OK) st = counts_to_int(rcount, P, rc, rd, "comm_alltoallv_i64");
  /* every rank enters the collective or none: one that failed here alone (its counts
   * too large, no memory) would leave the others waiting inside it */
  TRY_GOTO(comm_agree(c, st, "comm_alltoallv_i64"), done);
  COMM_MPI_TRY_GOTO(MPI_Alltoallv(send, sc, sd, MPI_INT64_T, recv, rc, rd, MPI_INT64_T, c->world),
                    done);
done:
  cg_free(sc);
  return st;
}

int comm_agree(struct comm *c, int status, const char *what) {
  return agree_in(c, c->world, c->rank, status, "rank", "", what ? what : "setup");
}

/* ---- memory shared by the ranks of a host ---------------------------------------- */

int comm_host_shared(struct comm *c, size_t bytes, void **base) {
  int st = CG_OK;
  *base = NULL;
  if (c->shared_win != MPI_WIN_NULL) {
    if (bytes != c->shared_bytes)
      return cg_err_set(CG_ERR_ARG, "comm_host_shared: a block of %zu bytes per rank exists, %zu asked",
                        c->shared_bytes, bytes);
    *base = c->shared_base;
    return CG_OK;
  }
  void *mine = NULL, *first = NULL;
  MPI_Aint size = 0;
  int unit = 0;
  MPI_Win win = MPI_WIN_NULL;
  /* contiguous (the default): rank r's part follows rank r-1's */
  int rc = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, MPI_INFO_NULL, c->host, &mine, &win);
  if (rc != MPI_SUCCESS) st = comm_mpi_error(rc, "MPI_Win_allocate_shared", __FILE__, __LINE__);
  if (st == CG_OK) {
    rc = MPI_Win_shared_query(win, 0, &size, &unit, &first);
    if (rc != MPI_SUCCESS) st = comm_mpi_error(rc, "MPI_Win_shared_query", __FILE__, __LINE__);
  }
  if (st == CG_OK && (char *)first + (size_t)c->host_local_rank * bytes != (char *)mine)
    st = cg_err_set(CG_ERR_UNSUPPORTED, "comm_host_shared: MPI placed the ranks' parts apart");
  if (st == CG_OK) memset(mine, 0, bytes);
  st = comm_agree(c, st, "allocating memory shared by the ranks of a host");
  if (st == CG_OK) { /* every part zeroed before anyone reads it */
    rc = MPI_Barrier(c->host);
    if (rc != MPI_SUCCESS) st = comm_mpi_error(rc, "MPI_Barrier (host)", __FILE__, __LINE__);
  }
  if (st != CG_OK) {
    if (win != MPI_WIN_NULL) MPI_Win_free(&win);
    return st;
  }
  c->shared_win = win;
  c->shared_base = first;
  c->shared_bytes = bytes;
  *base = first;
  return CG_OK;
}

/* ---- counters ------------------------------------------------------------------ */

void comm_stats_get(const struct comm *c, struct comm_stats *s) {
  *s = c->stats;
  s->halo_s = s->halo_fwd_s + s->halo_bwd_s;
}

void comm_stats_reset(struct comm *c) { memset(&c->stats, 0, sizeof c->stats); }
