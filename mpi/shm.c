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
 * - The segment is a file in the library's backing folder (Open MPI: /dev/shm), whose
 *   size MPI_Win_allocate_shared does not check for us: when the file does not fit, the
 *   allocation fails on the node's first rank alone while its peers wait inside the
 *   call, out of reach of any agreement. So the space is checked (and agreed) first, and
 *   a failure of the call itself ends the job (comm_abort) instead of hanging it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

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

/* Open MPI's effective osc_sm_backing_directory, read through the MPI tool interface:
 * it may come from mpirun --mca, an OMPI_MCA_ variable or an MCA parameter file
 * ($HOME/.openmpi/mca-params.conf, the system one). 0 when the library has no such
 * variable (another MPI) or it cannot be read. */
static int shm_dir_from_mpit(char *out, int cap) {
  int provided = 0, idx = -1, count = 0, ok = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 0;
  MPI_T_cvar_handle h;
  if (MPI_T_cvar_get_index("osc_sm_backing_directory", &idx) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS) {
    /* a string variable's count is its buffer size: read into one at least that big */
    char *buf = count > 0 ? cg_calloc((size_t)count + 1, 1, "backing folder name") : NULL;
    if (buf && MPI_T_cvar_read(h, buf) == MPI_SUCCESS && buf[0] && (int)strlen(buf) < cap) {
      memcpy(out, buf, strlen(buf) + 1);
      ok = 1;
    }
    free(buf);
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return ok;
}

const char *comm_shm_dir(void) {
  static char dir[4096];
  if (dir[0]) return dir;
  const char *d = getenv("OMPI_MCA_osc_sm_backing_directory");
  int initialized = 0;
  if (MPI_Initialized(&initialized) == MPI_SUCCESS && initialized && shm_dir_from_mpit(dir, (int)sizeof dir))
    return dir;
  return d && d[0] ? d : "/dev/shm";
}

int64_t comm_shm_free_bytes(void) {
  struct statvfs v;
  if (statvfs(comm_shm_dir(), &v) != 0) return -1;
  const uint64_t b = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
  return b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)b;
}

/* Whether the host's segments fit the backing folder: the bytes of every rank on the
 * host (emulated nodes share it), checked by its first rank. A node of one rank is left
 * out: Open MPI backs its window with private memory, not a file there. Collective over
 * the host. */
static int shm_check_space(struct comm *c, size_t bytes) {
  int64_t host_bytes = c->local_size > 1 ? (int64_t)bytes : 0;
  TRY(comm_host_sum_i64(c, &host_bytes));
  if (c->host_local_rank != 0 || host_bytes == 0) return CG_OK;
  const int64_t avail = comm_shm_free_bytes();
  if (avail < 0 || host_bytes <= avail) return CG_OK; /* unknown: the allocation will tell */
  return cg_err_set(CG_ERR_NOMEM,
                    "node shared memory: %lld bytes needed on this host, but %s has %lld bytes free (a "
                    "container's default /dev/shm is 64 MB: docker run --shm-size=...; or another folder: "
                    "mpirun --mca osc_sm_backing_directory DIR)",
                    (long long)host_bytes, comm_shm_dir(), (long long)avail);
}

int comm_shm_fits(struct comm *c, size_t bytes, int *fits) {
  *fits = 0;
  const int st = shm_check_space(c, bytes);
  if (st != CG_OK && st != CG_ERR_NOMEM) return comm_agree(c, st, "comm_shm_fits");
  int64_t ok = st == CG_OK;
  if (!ok) cg_err_clear(); /* not an error here: the caller chooses */
  TRY(comm_allreduce_i64(c, &ok, 1, COMM_MIN));
  *fits = ok != 0;
  return CG_OK;
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
    /* the node's other ranks may still be inside the call (it failed here alone):
     * no agreement reaches them, so the job ends */
    LOG_ERROR("mpi", "cannot allocate %zu bytes of node shared memory (MPI_Win_allocate_shared: %s); %s may be "
              "too small (df %s): ending the job, since the node's other ranks may be waiting inside the call",
              bytes, msg, comm_shm_dir(), comm_shm_dir());
    comm_abort(c, 1);
    return cg_err_set(CG_ERR_MPI, "cannot allocate %zu bytes of node shared memory", bytes);
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
  st = shm_check_space(c, bytes);
  TRY_GOTO(comm_agree(c, st, "comm_shm_create (space for node shared memory)"), fail);
  st = shm_map(s, bytes);
  /* every part zeroed before anyone reads; entered by every rank of the node, also one
   * whose mapping failed after the window was created (its peers are in it) */
  const int bst = comm_node_barrier(c);
  if (st == CG_OK) st = bst;
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
