/* mpi/grad.c — one all-reduce of the flat gradient buffer per step.
 *
 * Gradients of all parameters live in one contiguous buffer so that a step
 * costs one collective, not one per tensor (latency dominates small tensors).
 * The path (mpi/path.c) is fixed at create; the staged path's host buffer is
 * allocated there (pinned for the CUDA backend), never inside a step. */
#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "mpi/comm_internal.h"
#include "mpi/nccl_internal.h"
#include "mpi/path_internal.h"
#include "mpi/staging_internal.h"

/* MPI counts are int; chunks this size keep the common case at one call. */
#define COMM_GRAD_CHUNK ((int64_t)1 << 30)

struct comm_grad {
  struct comm *c;
  struct cg_backend *be;
  int64_t n;
  struct comm_sel sel;
  int64_t bytes_sent; /* since create (comm_grad_bytes_sent) */
  float *h_buf; /* staged path: host copy of the buffer (pinned when sel.pinned) */
  enum comm_allreduce algo; /* MPI, FLAT or HIER (resolved at create) */
  float *scratch;           /* FLAT / HIER: n + P values */
  float *h_ordered;         /* FLAT / HIER on MPI_CUDA: host copy of the buffer */
  int64_t inter_bytes;      /* comm_grad_inter_bytes_sent */
};

enum comm_allreduce comm_grad_algorithm(const struct comm_grad *g) { return g->algo; }

enum comm_path comm_grad_path(const struct comm_grad *g) { return g->sel.path; }
int64_t comm_grad_bytes_sent(const struct comm_grad *g) { return g->bytes_sent; }
int64_t comm_grad_inter_bytes_sent(const struct comm_grad *g) { return g->inter_bytes; }

int comm_grad_create(struct comm *c, struct cg_backend *be, int64_t n, struct comm_grad **out) {
  int st = CG_OK;
  *out = NULL;
  struct comm_grad *g = NULL;
  if (!c || !be)
    return cg_err_set(CG_ERR_ARG, "comm_grad_create: communicator and backend are required");
  struct comm_sel sel;
  TRY(comm_path_select(c, be, &sel)); /* collective; fails on every rank together */
  enum comm_allreduce algo;
  TRY(comm_allreduce_resolve(c, &algo)); /* collective */
  if (sel.path == COMM_PATH_NCCL) algo = COMM_ALLREDUCE_MPI; /* NCCL adds in its own order */
  if (n < 0)
    st = cg_err_set(CG_ERR_ARG, "comm_grad_create: negative gradient size %lld", (long long)n);
  if (st == CG_OK) {
    g = cg_calloc(1, sizeof *g, "gradient all-reduce state");
    if (!g) st = CG_ERR_NOMEM;
  }
  if (st == CG_OK) {
    g->c = c;
    g->be = be;
    g->n = n;
    g->sel = sel;
    g->algo = algo;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    if (algo != COMM_ALLREDUCE_MPI) {
      g->scratch = cg_malloc(bytes + (size_t)c->size * sizeof(float), "scratch of the ordered all-reduce");
      if (!g->scratch) st = CG_ERR_NOMEM;
      if (st == CG_OK && sel.path == COMM_PATH_MPI_CUDA) {
        g->h_ordered = cg_malloc(bytes, "host copy for the ordered all-reduce of device gradients");
        if (!g->h_ordered) st = CG_ERR_NOMEM;
      }
    }
    if (st == CG_OK && sel.pinned) /* (not over a failed scratch allocation's status) */
      st = comm_pinned_alloc((void **)&g->h_buf, bytes,
                             "the pinned host buffer of the gradient all-reduce");
    else if (st == CG_OK && sel.path == COMM_PATH_MPI_STAGED) {
      g->h_buf = cg_malloc(bytes, "host staging buffer of the gradient all-reduce");
      if (!g->h_buf) st = CG_ERR_NOMEM;
    }
  }
  TRY_GOTO(comm_agree(c, st, "comm_grad_create"), fail);
  /* Every rank must reduce the same number of values, or the collective would
   * mismatch (a truncation error at best, a hang at worst). */
  int64_t range[2] = {n, -n};
  COMM_MPI_TRY_GOTO(MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_INT64_T, MPI_MAX, c->world), fail);
  if (range[0] != -range[1]) {
    st = cg_err_set(CG_ERR_ARG,
                    "comm_grad_create: ranks disagree on the gradient size (this rank %lld, "
                    "smallest %lld, largest %lld): every rank must build the same model",
                    (long long)n, (long long)-range[1], (long long)range[0]);
    goto fail;
  }
  /* said once per choice (`capgnn profile` makes one object per size it measures) */
  const int key = (int)g->algo * 16 + (int)sel.path;
  if (c->rank == 0 && key != c->grad_logged)
    LOG_INFO("mpi", "gradient all-reduce: %s%s", comm_allreduce_name(g->algo),
             g->algo == COMM_ALLREDUCE_HIER   ? " (inside each node, between nodes, inside again; fixed order)"
             : g->algo == COMM_ALLREDUCE_FLAT ? " (one reduce-scatter and all-gather over all ranks; fixed order)"
             : sel.path == COMM_PATH_NCCL     ? " (ncclAllReduce)"
                                              : " (MPI_Allreduce)");
  c->grad_logged = key;
  *out = g;
  return CG_OK;
fail:
  comm_grad_destroy(&g);
  return st;
}

void comm_grad_destroy(struct comm_grad **gp) {
  if (!gp || !*gp) return;
  struct comm_grad *g = *gp;
  if (g->sel.pinned) {
    /* an async copy back from h_buf may still be queued on the stream */
    if (g->be) g->be->sync(g->be);
    comm_pinned_free(g->h_buf);
  } else {
    cg_free(g->h_buf);
  }
  cg_free(g->scratch);
  cg_free(g->h_ordered);
  cg_free(g);
  *gp = NULL;
}

/* MPI_Allreduce in place, in chunks that fit MPI's int counts; or the ordered sum. */
static int grad_mpi_sum(struct comm_grad *g, struct comm *c, float *buf, int64_t n) {
  if (g->algo != COMM_ALLREDUCE_MPI) {
    const int64_t before = c->stats.allreduce_inter_bytes;
    const int st = comm_sum_ordered(c, g->algo, buf, n, g->scratch);
    g->inter_bytes += c->stats.allreduce_inter_bytes - before;
    return st;
  }
  for (int64_t off = 0; off < n; off += COMM_GRAD_CHUNK) {
    int64_t len = n - off < COMM_GRAD_CHUNK ? n - off : COMM_GRAD_CHUNK;
    COMM_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)len, MPI_FLOAT, MPI_SUM, c->world));
  }
  return CG_OK;
}

int comm_grad_allreduce(struct comm_grad *g, float *buf) {
  struct comm *c = g->c;
  struct cg_backend *be = g->be;
  double t0 = cg_time_now();
  size_t bytes = (size_t)g->n * sizeof(float);
  switch (g->sel.path) {
    case COMM_PATH_NCCL:
      TRY(comm_nccl_allreduce(c, be, buf, g->n));
      break;
    case COMM_PATH_MPI_STAGED:
      if (g->sel.pinned) {
        TRY(comm_dev_d2h(be, g->h_buf, buf, bytes));
        TRY(comm_dev_sync(be)); /* the copy, and the ops that wrote buf, are done */
        TRY(grad_mpi_sum(g, c, g->h_buf, g->n));
        TRY(comm_dev_h2d(be, buf, g->h_buf, bytes)); /* ordered before later ops */
      } else {
        TRY(be->download(be, g->h_buf, buf, bytes));
        TRY(grad_mpi_sum(g, c, g->h_buf, g->n));
        TRY(be->upload(be, buf, g->h_buf, bytes));
      }
      break;
    default:        /* HOST and MPI_CUDA: MPI reads and writes buf itself */
      be->sync(be); /* ops that wrote buf may still be in flight */
      if (g->h_ordered) { /* MPI_CUDA, ordered: the sum is computed on the host */
        TRY(be->download(be, g->h_ordered, buf, bytes));
        TRY(grad_mpi_sum(g, c, g->h_ordered, g->n));
        TRY(be->upload(be, buf, g->h_ordered, bytes));
      } else {
        TRY(grad_mpi_sum(g, c, buf, g->n));
      }
      break;
  }
  g->bytes_sent += (int64_t)bytes; /* this object's own count: comm_stats is the whole comm's */
  c->stats.allreduce_bytes += (int64_t)bytes;
  c->stats.allreduce_calls++;
  c->stats.allreduce_s += cg_time_now() - t0;
  return CG_OK;
}
