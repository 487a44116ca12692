/* mpi/grad.c — one all-reduce of the flat gradient buffer per step.
 *
 * Gradients of all parameters live in one contiguous buffer so that a step
 * costs one collective, not one per tensor (latency dominates small tensors).
 * Non-CPU backends are staged through a host buffer allocated once here. */
#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "mpi/comm_internal.h"

/* MPI counts are int; chunks this size keep the common case at one call. */
#define COMM_GRAD_CHUNK ((int64_t)1 << 30)

struct comm_grad {
  struct comm *c;
  struct cg_backend *be;
  int64_t n;
  float *h_buf; /* host staging, NULL for the CPU backend */
};

int comm_grad_create(struct comm *c, struct cg_backend *be, int64_t n, struct comm_grad **out) {
  int st = CG_OK;
  *out = NULL;
  struct comm_grad *g = NULL;
  if (!c || !be)
    return cg_err_set(CG_ERR_ARG, "comm_grad_create: communicator and backend are required");
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
    if (be->kind != CG_DEVICE_CPU) {
      g->h_buf =
          cg_malloc((size_t)n * sizeof(float), "host staging buffer of the gradient all-reduce");
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
  *out = g;
  return CG_OK;
fail:
  comm_grad_destroy(&g);
  return st;
}

void comm_grad_destroy(struct comm_grad **gp) {
  if (!gp || !*gp) return;
  cg_free((*gp)->h_buf);
  cg_free(*gp);
  *gp = NULL;
}

int comm_grad_allreduce(struct comm_grad *g, float *buf) {
  struct comm *c = g->c;
  struct cg_backend *be = g->be;
  double t0 = cg_time_now();
  size_t bytes = (size_t)g->n * sizeof(float);
  float *host = buf;
  if (g->h_buf) {
    TRY(be->download(be, g->h_buf, buf, bytes));
    host = g->h_buf;
  } else {
    be->sync(be); /* ops that wrote buf may still be in flight */
  }
  for (int64_t off = 0; off < g->n; off += COMM_GRAD_CHUNK) {
    int64_t len = g->n - off < COMM_GRAD_CHUNK ? g->n - off : COMM_GRAD_CHUNK;
    COMM_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, host + off, (int)len, MPI_FLOAT, MPI_SUM, c->world));
  }
  if (g->h_buf) TRY(be->upload(be, buf, g->h_buf, bytes));
  c->stats.allreduce_bytes += (int64_t)bytes;
  c->stats.allreduce_calls++;
  c->stats.allreduce_s += cg_time_now() - t0;
  return CG_OK;
}
