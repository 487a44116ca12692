/* mpi/exchange.c — the plain exchange behind the seam of core/exchange.h: halo rows
 * through one comm_halo, the flat gradient through one comm_grad, host values through
 * the world communicator.
 *
 * Design notes (the why):
 * - The gradient all-reduce is created at its first call: the parameter count is
 *   known only once the model exists, and every rank reaches its first all-reduce
 *   together (comm_grad_create is collective).
 * - The counters are those of its own comm_halo and comm_grad (comm_*_bytes_sent), not
 *   comm_stats: that one adds up every object on the comm and comm_stats_reset clears
 *   it, while the seam promises counts since this exchange was created. A gradient
 *   object replaced when the size changes leaves its count behind (grad_bytes_before).
 * - A failing call keeps the library's message and names the call and its size, so
 *   the one line the job prints says what broke (the log prefix adds the rank).
 */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "mpi/comm_internal.h"

struct comm_exchange {
  struct cg_exchange ex; /* first: the seam's table */
  struct comm *c;
  struct cg_backend *be;
  struct comm_halo *halo;
  struct comm_grad *grad;
  int64_t grad_n;
  int64_t grad_bytes_before; /* comm_grad_bytes_sent of the gradient objects replaced */
  int64_t grad_inter_before; /* ... and their comm_grad_inter_bytes_sent */
  int bits;                  /* comm_halo_bits at create: training steps' rows */
};

static struct comm_exchange *impl(struct cg_exchange *ex) { return (struct comm_exchange *)ex; }

static int call_error(int st, const char *call, int64_t n, const char *unit) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", cg_err_msg());
  return cg_err_set(st < 0 ? st : CG_ERR_INTERNAL, "%s (%lld %s) failed: %s", call, (long long)n,
                    unit, msg[0] ? msg : cg_status_str(st));
}

static const char *halo_call(enum cg_halo_dir dir, int end) {
  if (dir == CG_HALO_FORWARD) return end ? "comm_halo_end(forward)" : "comm_halo_begin(forward)";
  return end ? "comm_halo_end(backward)" : "comm_halo_begin(backward)";
}

/* Every exchange here moves the rows afresh; the tag says only whether it is a
 * training step's (coded with --halo-bits) or evaluation's / set-up's (exact). */
static int ex_halo_begin(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag,
                         float *x, int64_t cols) {
  struct comm_exchange *e = impl(ex);
  int st = comm_halo_set_quant(e->halo, tag.epoch > 0 ? e->bits : 32);
  comm_halo_set_quant_key(e->halo, ((uint64_t)tag.epoch << 32) | ((uint64_t)(uint32_t)tag.layer << 1) | (uint64_t)dir);
  if (st == CG_OK) st = comm_halo_begin(e->halo, dir, x, cols);
  return st < 0 ? call_error(st, halo_call(dir, 0), cols, "columns") : CG_OK;
}

static int ex_halo_end(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag,
                       float *x, int64_t cols) {
  int st = comm_halo_end(impl(ex)->halo, dir, x, cols);
  return st < 0 ? call_error(st, halo_call(dir, 1), cols, "columns") : CG_OK;
}

static int ex_halo_progress(struct cg_exchange *ex) {
  int st = comm_halo_progress(impl(ex)->halo);
  if (st >= 0) return st;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", cg_err_msg());
  return cg_err_set(st, "comm_halo_progress failed: %s", msg[0] ? msg : cg_status_str(st));
}

static int ex_allreduce_grads(struct cg_exchange *ex, float *buf, int64_t n) {
  struct comm_exchange *e = impl(ex);
  int st = CG_OK;
  if (!e->grad || e->grad_n != n) {
    if (e->grad) e->grad_bytes_before += comm_grad_bytes_sent(e->grad);
    if (e->grad) e->grad_inter_before += comm_grad_inter_bytes_sent(e->grad);
    comm_grad_destroy(&e->grad);
    st = comm_grad_create(e->c, e->be, n, &e->grad);
    if (st < 0) return call_error(st, "comm_grad_create", n, "values");
    e->grad_n = n;
  }
  st = comm_grad_allreduce(e->grad, buf);
  return st < 0 ? call_error(st, "comm_grad_allreduce", n, "values") : CG_OK;
}

static int ex_allreduce_host(struct cg_exchange *ex, double *v, int n, enum cg_reduce op) {
  struct comm_exchange *e = impl(ex);
  const int max = op == CG_REDUCE_MAX;
  int st = comm_allreduce_host(e->c, v, n, max ? COMM_MAX : COMM_SUM);
  return st < 0 ? call_error(st, max ? "comm_allreduce_host(MAX)" : "comm_allreduce_host", n, "values")
                : CG_OK;
}

static void ex_counters(const struct cg_exchange *ex, struct cg_exchange_counters *out) {
  const struct comm_exchange *e = (const struct comm_exchange *)ex;
  memset(out, 0, sizeof *out);
  out->halo_bytes = comm_halo_bytes_sent(e->halo);
  out->allreduce_bytes = e->grad_bytes_before + (e->grad ? comm_grad_bytes_sent(e->grad) : 0);
  out->inter_node_bytes = comm_halo_inter_bytes_sent(e->halo) + e->grad_inter_before +
                          (e->grad ? comm_grad_inter_bytes_sent(e->grad) : 0);
}

static void ex_destroy(struct cg_exchange *ex) {
  struct comm_exchange *e = impl(ex);
  comm_grad_destroy(&e->grad);
  comm_halo_destroy(&e->halo);
  cg_free(e);
}

int comm_exchange_create(struct comm *c, struct cg_backend *be, const struct comm_halo_plan *plan,
                         int64_t max_cols, struct cg_exchange **out) {
  int st = CG_OK;
  *out = NULL;
  struct comm_exchange *e = cg_calloc(1, sizeof *e, "exchange");
  if (!e) st = CG_ERR_NOMEM;
  st = comm_agree(c, st, "allocating the exchange");
  if (st < 0) { /* all ranks leave; e exists where another rank was the one that failed */
    cg_free(e);
    cg_err_trail(__FILE__, __LINE__, "comm_agree");
    return st;
  }
  e->c = c;
  e->be = be;
  st = comm_halo_create(c, be, plan, max_cols, &e->halo); /* collective, agreed inside */
  if (st < 0) {
    cg_free(e);
    cg_err_trail(__FILE__, __LINE__, "comm_halo_create");
    return st;
  }
  /* a width the path cannot code fails here, on every rank, not in the first step */
  e->bits = comm_halo_bits(c);
  st = comm_agree(c, comm_halo_set_quant(e->halo, e->bits), "--halo-bits on this exchange's path");
  if (st == CG_OK) st = comm_halo_set_quant(e->halo, 32);
  if (st < 0) {
    comm_halo_destroy(&e->halo);
    cg_free(e);
    cg_err_trail(__FILE__, __LINE__, "comm_halo_set_quant");
    return st;
  }
  e->ex.halo_begin = ex_halo_begin;
  e->ex.halo_end = ex_halo_end;
  e->ex.halo_progress = ex_halo_progress;
  e->ex.allreduce_grads = ex_allreduce_grads;
  e->ex.allreduce_host = ex_allreduce_host;
  e->ex.counters = ex_counters;
  e->ex.destroy = ex_destroy;
  *out = &e->ex;
  return CG_OK;
}
