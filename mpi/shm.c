/* mpi/shm.c — one shared-memory segment per node (comm_shm_*, mpi/comm.h).
 *
 * Design notes (the why):
 * - MPI_Win_allocate_shared on the node communicator rather than shm_open/mmap of our
 *   own: the library already knows which processes share a node (also emulated ones:
 *   the node communicator is a split of the host's), creates the segment private to
 *   the job (mode 0600) and unlinks its file once every rank has attached, so no code
 *   path of ours (error, signal, kill) can leave a segment behind. The window is never
 *   used for RMA: it is memory, and the ordering between processes is C11 atomics.
 * - Every part is zeroed by its own rank, then a node barrier: a reader of the segment
 *   (a row sequence number) must never see what the allocator left there.
 * - Creation is agreed over the world, like every other set-up call of mpi/: a node
 *   whose allocation fails must not leave the other nodes waiting in a later
 *   collective. MPI_Win_free is collective over the node only.
 */
#include <stdint.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "mpi/comm_internal.h"

struct comm_shm {
  struct comm *c;
  MPI_Win win;
  int nparts;
  char **part;   /* local rank -> its part in this process' mapping */
  size_t *bytes; /* local rank -> size of its part */
  size_t total;
};

void *comm_shm_part(const struct comm_shm *s, int local_rank, size_t *bytes) {
  if (local_rank < 0 || local_rank >= s->nparts) {
    if (bytes) *bytes = 0;
    return NULL;
  }
  if (bytes) *bytes = s->bytes[local_rank];
  return s->part[local_rank];
}

void *comm_shm_node(const struct comm_shm *s, size_t *bytes) {
  if (bytes) *bytes = s->total;
  return s->part[0];
}

static int shm_map(struct comm_shm *s, size_t bytes) {
  struct comm *c = s->c;
  void *mine = NULL;
  if (bytes > (size_t)(INT64_MAX / 2))
    return cg_err_set(CG_ERR_ARG, "comm_shm_create: %zu bytes do not fit MPI_Aint", bytes);
  /* A size-0 part still gets a valid base; 1-byte displacement unit: plain bytes. */
  int rc = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, MPI_INFO_NULL, c->node, &mine, &s->win);
  if (rc != MPI_SUCCESS) {
    s->win = MPI_WIN_NULL;
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = 0;
    msg[len] = '\0';
    return cg_err_set(CG_ERR_MPI,
                      "cannot allocate %zu bytes of node shared memory (MPI_Win_allocate_shared: "
                      "%s); the node's /dev/shm may be too small (df /dev/shm)",
                      bytes, msg);
  }
  COMM_MPI_TRY(MPI_Win_set_errhandler(s->win, MPI_ERRORS_RETURN));
  s->nparts = c->local_size;
  s->part = cg_calloc((size_t)s->nparts, sizeof *s->part, "node segment parts");
  s->bytes = cg_calloc((size_t)s->nparts, sizeof *s->bytes, "node segment part sizes");
  if (!s->part || !s->bytes) return CG_ERR_NOMEM;
  for (int r = 0; r < s->nparts; r++) {
    MPI_Aint sz = 0;
    int disp = 0;
    void *base = NULL;
    COMM_MPI_TRY(MPI_Win_shared_query(s->win, r, &sz, &disp, &base));
    s->part[r] = base;
    s->bytes[r] = (size_t)sz;
    s->total += (size_t)sz;
  }
  /* Contiguity is MPI's default (no alloc_shared_noncontig); check it, since the
   * node-wide view depends on it. */
  for (int r = 1; r < s->nparts; r++)
    if (s->bytes[r - 1] > 0 && s->part[r] != s->part[r - 1] + s->bytes[r - 1] && s->bytes[r] > 0)
      return cg_err_set(CG_ERR_UNSUPPORTED,
                        "comm_shm_create: the MPI library placed the parts of the node segment "
                        "apart (local rank %d), a node-wide view needs them contiguous",
                        r);
  if (bytes > 0) memset(mine, 0, bytes);
  return CG_OK;
}

int comm_shm_create(struct comm *c, size_t bytes, struct comm_shm **out) {
  int st = CG_OK;
  *out = NULL;
  struct comm_shm *s = cg_calloc(1, sizeof *s, "node shared segment");
  if (!s) st = CG_ERR_NOMEM;
  if (s) {
    s->c = c;
    s->win = MPI_WIN_NULL;
  }
  /* Every rank of a node must enter the window's creation together: agree first that
   * every rank has its struct, then allocate (collective over the node). */
  TRY_GOTO(comm_agree(c, st, "comm_shm_create"), fail);
  st = shm_map(s, bytes);
  if (st == CG_OK) st = comm_node_barrier(c); /* every part zeroed before anyone reads */
  TRY_GOTO(comm_agree(c, st, "comm_shm_create (node shared memory)"), fail);
  LOG_DEBUG("mpi", "node shared segment: %zu bytes here, %zu on node %d", bytes, s->total,
            c->node_id);
  *out = s;
  return CG_OK;
fail:
  cg_err_trail(__FILE__, __LINE__, "comm_shm_create");
  comm_shm_destroy(&s);
  return st;
}

void comm_shm_destroy(struct comm_shm **sp) {
  if (!sp || !*sp) return;
  struct comm_shm *s = *sp;
  if (s->win != MPI_WIN_NULL) MPI_Win_free(&s->win);
  cg_free(s->part);
  cg_free(s->bytes);
  cg_free(s);
  *sp = NULL;
}
