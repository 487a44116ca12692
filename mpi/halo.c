/* mpi/halo.c — non-blocking halo exchange over a distributed-graph communicator.
 *
 * Design notes (the why):
 * - One neighbourhood communicator whose sources and destinations are both the
 *   ranks we exchange with in either direction. Forward and backward then use the
 *   same communicator with the count arrays swapped, and the graph is symmetric
 *   by construction once the plans are known to agree (checked at create, because
 *   an inconsistent graph or mismatched counts would make MPI hang or truncate).
 * - Counts and displacements are in rows, with a contiguous datatype of `cols`
 *   floats, so that a halo of more than 2^31 values still fits MPI's int counts.
 *   Row types are cached by width (layers alternate between a few widths).
 * - One implementation for both directions: a direction only decides which buffer
 *   and counts are sent and which receive (struct halo_route), plus what end does
 *   last (backward adds the received rows). The three paths are then written once,
 *   so forward and backward cannot drift apart.
 * - CPU backend: MPI reads the gathered rows and writes x's halo block directly
 *   (backend memory is host memory). Device backends use the path chosen at create
 *   (mpi/path.c): NCCL or CUDA-aware MPI on device buffers, or staging through host
 *   buffers (pinned, async copies on the backend stream; mpi/staging.c). Everything
 *   is allocated at create; nothing per exchange.
 * - Received forward rows land straight in x's halo block on every path (it is one
 *   contiguous block per peer), so no path needs a copy that another avoids.
 * - MPI_CUDA uses MPI_Isend/MPI_Irecv: CUDA-aware Open MPI takes device buffers in
 *   point-to-point calls and blocking collectives, not in non-blocking collectives.
 *   Point-to-point and neighbourhood collectives do not match each other, so when
 *   any rank uses MPI_CUDA every rank uses point-to-point for that object (p2p).
 * - Staged path: every begin synchronises the stream before MPI touches the host
 *   buffers, which also completes the previous end's async copy out of them.
 * - Backward adds one peer block at a time in ascending peer order: within one
 *   block an inner row appears at most once (checked at create), so the sum does
 *   not depend on message arrival order nor on how a backend implements
 *   scatter_add_rows (atomics included).
 * - Overlap (issue #14): the caller computes between begin and end. Open MPI moves a
 *   large message only while a rank is inside an MPI call (no progress thread; over
 *   shared memory the receiver copies the sender's buffer, CMA, when it sees the
 *   request), so comm_halo_progress tests the requests: called between the caller's
 *   row blocks it lets the transfer happen there instead of inside end. All MPI calls
 *   stay on the calling thread (MPI_THREAD_FUNNELED).
 * - NCCL runs on a stream of its own (created at create), ordered after the gather by
 *   an event and before whatever the backend's stream runs after end by another: the
 *   transfer then runs on the GPU beside the inner rows' kernels instead of queued
 *   behind or before them. Backward's adds stay on the backend's stream, in end, after
 *   what the caller wrote into the inner rows between begin and end.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "mpi/comm_internal.h"
#include "mpi/nccl_internal.h"
#include "mpi/quant_internal.h"
#include "mpi/path_internal.h"
#include "mpi/staging_internal.h"

#define HALO_TYPE_CACHE 8

struct comm_halo {
  struct comm *c;
  struct cg_backend *be;
  MPI_Comm graph;
  int nnb;                  /* neighbours: peers with traffic in at least one direction */
  int *nb;                  /* their world ranks, ascending */
  int *send_cnt, *send_dsp; /* forward send = backward receive, in rows, per neighbour */
  int *recv_cnt, *recv_dsp; /* forward receive = backward send, in rows, per neighbour */
  int64_t n_inner, n_halo, max_cols;
  int64_t send_rows, recv_rows;
  int64_t bytes_sent; /* since create, both directions (comm_halo_bytes_sent) */
  int64_t inter_bytes; /* ... of them to ranks of other nodes (comm_halo_inter_bytes_sent) */
  struct comm_sel sel; /* path, fixed at create */
  int32_t *d_idx;      /* backend memory: packed send list (send_rows) */
  /* backend memory: send_rows x max_cols (forward: gathered rows; backward: received grads) */
  float *d_rows;
  /* host staging (staged path; pinned when sel.pinned): max(send, recv) rows x max_cols each */
  float *h_a, *h_b;
  /* NCCL path: its own stream, and events "rows ready" (backend stream -> comm stream)
   * and "transfer done" (comm stream -> backend stream); NULL on the other paths */
  void *d_stream, *ev_ready, *ev_done;
  /* exchange in flight: 1 request (neighbourhood collective) or up to 2 per neighbour */
  int in_flight;
  enum cg_halo_dir flight_dir;
  int count_bwd; /* comm_halo_count_as(BACKWARD): comm_stats' backward counters, whatever the call's direction */
  MPI_Request *reqs;
  int nreq;
  const float *flight_x, *flight_recv;
  int64_t flight_cols;
  /* quantised rows (comm_halo_set_quant): bits 32 = off; host buffers of the coded
   * rows out and in, grown on first use; begins quantised so far (the rounding
   * stream); whether the exchange in flight is quantised */
  int qbits;
  uint64_t qkey, qcalls; /* comm_halo_set_quant_key, and begins coded since it was set */
  unsigned char *q_out, *q_in;
  int flight_q;
  /* row datatypes by width (cols > 0: cols floats; cols < 0: -cols bytes) */
  int64_t type_cols[HALO_TYPE_CACHE];
  MPI_Datatype types[HALO_TYPE_CACHE];
  int ntypes, type_next;
};

int64_t comm_halo_send_rows(const struct comm_halo *h) { return h->send_rows; }
int64_t comm_halo_recv_rows(const struct comm_halo *h) { return h->recv_rows; }
enum comm_path comm_halo_path(const struct comm_halo *h) { return h->sel.path; }
int64_t comm_halo_bytes_sent(const struct comm_halo *h) { return h->bytes_sent; }
int64_t comm_halo_inter_bytes_sent(const struct comm_halo *h) { return h->inter_bytes; }

/* ---- plan checks ------------------------------------------------------------- */

/* Everything that can be checked with this rank's plan alone. */
static int halo_plan_check_local(const struct comm *c, const struct comm_halo_plan *p,
                                 int64_t max_cols) {
  int st = CG_OK;
  int64_t *stamp = NULL;
  if (!p) return cg_err_set(CG_ERR_ARG, "comm_halo_create: no plan given");
  if (max_cols < 1 || max_cols > INT_MAX)
    return cg_err_set(CG_ERR_ARG, "comm_halo_create: max_cols %lld must be in [1, %d]",
                      (long long)max_cols, INT_MAX);
  if (p->n_inner < 0 || p->n_halo < 0 || p->n_inner + p->n_halo > INT32_MAX)
    return cg_err_set(CG_ERR_ARG,
                      "invalid halo plan: n_inner %lld, n_halo %lld (both >= 0, sum <= 2^31-1 "
                      "since local ids are int32)",
                      (long long)p->n_inner, (long long)p->n_halo);
  if (p->npeers < 0 || p->npeers > c->size - 1)
    return cg_err_set(CG_ERR_ARG, "invalid halo plan: %d peers, expected 0..%d (world size %d)",
                      p->npeers, c->size - 1, c->size);
  if (p->npeers > 0 &&
      (!p->peer || !p->send_offset || !p->send_count || !p->recv_offset || !p->recv_count))
    return cg_err_set(CG_ERR_ARG, "invalid halo plan: %d peers but a per-peer array is NULL",
                      p->npeers);
  int64_t s_sum = 0, r_sum = 0;
  for (int i = 0; i < p->npeers; i++) {
    int q = p->peer[i];
    if (q < 0 || q >= c->size || q == c->rank)
      return cg_err_set(CG_ERR_ARG,
                        "invalid halo plan: peer[%d] = %d is not another rank (this rank %d, world "
                        "size %d)",
                        i, q, c->rank, c->size);
    if (i > 0 && q <= p->peer[i - 1])
      return cg_err_set(
          CG_ERR_ARG, "invalid halo plan: peers must be strictly ascending, peer[%d] = %d after %d",
          i, q, p->peer[i - 1]);
    if (p->send_count[i] < 0 || p->recv_count[i] < 0)
      return cg_err_set(CG_ERR_ARG, "invalid halo plan: negative count for peer %d", q);
    if (p->send_offset[i] != s_sum || p->recv_offset[i] != r_sum)
      return cg_err_set(CG_ERR_ARG,
                        "invalid halo plan: blocks must be packed in peer order; peer %d has "
                        "send_offset %lld (expected %lld), recv_offset %lld (expected %lld)",
                        q, (long long)p->send_offset[i], (long long)s_sum,
                        (long long)p->recv_offset[i], (long long)r_sum);
    s_sum += p->send_count[i];
    r_sum += p->recv_count[i];
    if (s_sum > INT_MAX || r_sum > INT_MAX)
      return cg_err_set(CG_ERR_UNSUPPORTED, "halo plan too large: more than %d rows to one side",
                        INT_MAX);
  }
  if (r_sum > p->n_halo)
    return cg_err_set(CG_ERR_ARG, "invalid halo plan: %lld halo rows received but n_halo is %lld",
                      (long long)r_sum, (long long)p->n_halo);
  if (s_sum > 0 && !p->send_idx)
    return cg_err_set(CG_ERR_ARG, "invalid halo plan: %lld rows to send but send_idx is NULL",
                      (long long)s_sum);
  if (s_sum > 0) {
    stamp = cg_calloc((size_t)(p->n_inner > 0 ? p->n_inner : 1), sizeof *stamp, "halo plan check");
    if (!stamp) return CG_ERR_NOMEM;
  }
  for (int i = 0; i < p->npeers && st == CG_OK; i++) {
    for (int64_t k = p->send_offset[i]; k < p->send_offset[i] + p->send_count[i]; k++) {
      int32_t v = p->send_idx[k];
      if (v < 0 || v >= p->n_inner) {
        st = cg_err_set(CG_ERR_ARG,
                        "invalid halo plan: send_idx[%lld] = %d for peer %d is not an inner row "
                        "(n_inner %lld)",
                        (long long)k, v, p->peer[i], (long long)p->n_inner);
        break;
      }
      if (stamp[v] == i + 1) {
        st = cg_err_set(CG_ERR_ARG,
                        "invalid halo plan: inner row %d is sent twice to peer %d (send_idx[%lld])",
                        v, p->peer[i], (long long)k);
        break;
      }
      stamp[v] = i + 1;
    }
  }
  cg_free(stamp);
  return st;
}

/* What this rank sends to q must be what q expects from this rank. */
static int halo_plan_check_global(struct comm *c, const struct comm_halo_plan *p) {
  int st = CG_OK;
  int64_t *sends = cg_calloc((size_t)c->size, sizeof(int64_t), "halo count check");
  int64_t *gets = cg_calloc((size_t)c->size, sizeof(int64_t), "halo count check");
  /* every rank enters the all-to-all or none: one leaving alone would leave the others
   * waiting inside it */
  TRY_GOTO(comm_agree(c, sends && gets ? CG_OK : CG_ERR_NOMEM, "comm_halo_create (plan consistency)"), done);
  for (int i = 0; i < p->npeers; i++) sends[p->peer[i]] = p->send_count[i];
  COMM_MPI_TRY_GOTO(MPI_Alltoall(sends, 1, MPI_INT64_T, gets, 1, MPI_INT64_T, c->world), done);
  int i = 0;
  for (int q = 0; q < c->size; q++) {
    int64_t expect = 0;
    while (i < p->npeers && p->peer[i] < q) i++;
    if (i < p->npeers && p->peer[i] == q) expect = p->recv_count[i];
    if (gets[q] != expect) {
      st = cg_err_set(CG_ERR_ARG,
                      "halo plans disagree: rank %d expects %lld rows from rank %d, whose plan "
                      "sends %lld (plans must be built from the same partition on every rank)",
                      c->rank, (long long)expect, q, (long long)gets[q]);
      break;
    }
  }
done:
  cg_free(sends);
  cg_free(gets);
  return st;
}

/* ---- create / destroy -------------------------------------------------------------- */

static int halo_alloc(struct comm_halo *h, const struct comm_halo_plan *p) {
  struct cg_backend *be = h->be;
  int nnb = 0;
  for (int i = 0; i < p->npeers; i++)
    if (p->send_count[i] > 0 || p->recv_count[i] > 0) nnb++;
  size_t n = (size_t)(nnb > 0 ? nnb : 1);
  h->nb = cg_malloc(n * sizeof(int), "halo neighbour list");
  h->send_cnt = cg_malloc(n * sizeof(int), "halo send counts");
  h->send_dsp = cg_malloc(n * sizeof(int), "halo send displacements");
  h->recv_cnt = cg_malloc(n * sizeof(int), "halo receive counts");
  h->recv_dsp = cg_malloc(n * sizeof(int), "halo receive displacements");
  h->reqs = cg_malloc(2 * n * sizeof(MPI_Request), "halo requests");
  if (!h->nb || !h->send_cnt || !h->send_dsp || !h->recv_cnt || !h->recv_dsp || !h->reqs)
    return CG_ERR_NOMEM;
  for (size_t i = 0; i < 2 * n; i++) h->reqs[i] = MPI_REQUEST_NULL;
  int k = 0;
  for (int i = 0; i < p->npeers; i++) {
    if (p->send_count[i] == 0 && p->recv_count[i] == 0) continue;
    h->nb[k] = p->peer[i];
    h->send_cnt[k] = (int)p->send_count[i];
    h->send_dsp[k] = (int)p->send_offset[i];
    h->recv_cnt[k] = (int)p->recv_count[i];
    h->recv_dsp[k] = (int)p->recv_offset[i];
    k++;
  }
  h->nnb = nnb;

  /* Every buffer gets at least one row so that pointers are never NULL. */
  size_t srows = (size_t)(h->send_rows > 0 ? h->send_rows : 1);
  TRY(be->alloc(be, (void **)&h->d_idx, srows * sizeof(int32_t), "halo send list"));
  TRY(be->alloc(be, (void **)&h->d_rows, srows * (size_t)h->max_cols * sizeof(float),
                "halo send/receive rows"));
  if (h->send_rows > 0)
    TRY(be->upload(be, h->d_idx, p->send_idx, (size_t)h->send_rows * sizeof(int32_t)));
  if (h->sel.path == COMM_PATH_NCCL) {
    TRY(comm_dev_stream_create(&h->d_stream));
    TRY(comm_dev_event_create(&h->ev_ready));
    TRY(comm_dev_event_create(&h->ev_done));
  }
  if (h->sel.path == COMM_PATH_MPI_STAGED) {
    int64_t m = h->send_rows > h->recv_rows ? h->send_rows : h->recv_rows;
    size_t bytes = (size_t)(m > 0 ? m : 1) * (size_t)h->max_cols * sizeof(float);
    if (h->sel.pinned) {
      TRY(comm_pinned_alloc((void **)&h->h_a, bytes, "pinned staging of halo rows (outgoing)"));
      TRY(comm_pinned_alloc((void **)&h->h_b, bytes, "pinned staging of halo rows (incoming)"));
    } else {
      h->h_a = cg_malloc(bytes, "host staging of halo rows (outgoing)");
      h->h_b = cg_malloc(bytes, "host staging of halo rows (incoming)");
      if (!h->h_a || !h->h_b) return CG_ERR_NOMEM;
    }
  }
  return CG_OK;
}

int comm_halo_create(struct comm *c, struct cg_backend *be, const struct comm_halo_plan *plan,
                     int64_t max_cols, struct comm_halo **out) {
  int st = CG_OK;
  *out = NULL;
  if (!c || !be)
    return cg_err_set(CG_ERR_ARG, "comm_halo_create: communicator and backend are required");
  struct comm_sel sel;
  TRY(comm_path_select(c, be, &sel)); /* collective; fails on every rank together */
  struct comm_halo *h = cg_calloc(1, sizeof *h, "halo exchange state");
  if (!h) st = CG_ERR_NOMEM;
  if (h) {
    h->c = c;
    h->be = be;
    h->sel = sel;
    h->graph = MPI_COMM_NULL;
    h->qbits = 32;
    st = halo_plan_check_local(c, plan, max_cols);
  }
  if (st == CG_OK) {
    h->n_inner = plan->n_inner;
    h->n_halo = plan->n_halo;
    h->max_cols = max_cols;
    for (int i = 0; i < plan->npeers; i++) {
      h->send_rows += plan->send_count[i];
      h->recv_rows += plan->recv_count[i];
    }
    st = halo_alloc(h, plan);
  }
  /* Every rank leaves together if any plan is bad, before the count exchange
   * (which needs valid counts) and before the graph (which needs consistent plans). */
  TRY_GOTO(comm_agree(c, st, "comm_halo_create (plan check)"), fail);
  st = halo_plan_check_global(c, plan);
  TRY_GOTO(comm_agree(c, st, "comm_halo_create (plan consistency)"), fail);

  /* Unit weights instead of MPI_UNWEIGHTED: Open MPI defines that as a small
   * integer cast to a pointer, which GCC's access checks reject. reorder = 0:
   * ranks keep their world numbers. */
  int *ones = cg_malloc(sizeof(int) * (size_t)(h->nnb > 0 ? h->nnb : 1), "halo graph weights");
  st = comm_agree(c, ones ? CG_OK : CG_ERR_NOMEM, "comm_halo_create (graph weights)"); /* (the graph is collective) */
  if (st < 0) {
    cg_free(ones);
    goto fail;
  }
  for (int i = 0; i < h->nnb; i++) ones[i] = 1;
  int rc = MPI_Dist_graph_create_adjacent(c->world, h->nnb, h->nb, ones, h->nnb, h->nb, ones,
                                          MPI_INFO_NULL, 0, &h->graph);
  cg_free(ones);
  if (rc != MPI_SUCCESS) {
    st = comm_mpi_error(rc, "MPI_Dist_graph_create_adjacent", __FILE__, __LINE__);
    goto fail;
  }
  COMM_MPI_TRY_GOTO(MPI_Comm_set_errhandler(h->graph, MPI_ERRORS_RETURN), fail);
  LOG_DEBUG("mpi", "halo plan: %d neighbours, %lld rows out, %lld rows in, max %lld cols, %s%s",
            h->nnb, (long long)h->send_rows, (long long)h->recv_rows, (long long)max_cols,
            comm_path_name(sel.path), sel.p2p ? " (point-to-point)" : "");
  *out = h;
  return CG_OK;

fail:
  cg_err_trail(__FILE__, __LINE__, "comm_halo_create");
  comm_halo_destroy(&h);
  return st;
}

void comm_halo_destroy(struct comm_halo **hp) {
  if (!hp || !*hp) return;
  struct comm_halo *h = *hp;
  if (h->in_flight && h->nreq > 0) {
    LOG_WARN("mpi", "comm_halo_destroy: an exchange is still in flight; waiting for it");
    MPI_Waitall(h->nreq, h->reqs, MPI_STATUSES_IGNORE);
  }
  /* device backends: queued copies or NCCL calls may still use the buffers */
  if (h->d_stream) comm_dev_stream_sync(h->d_stream);
  if (h->be && h->be->kind != CG_DEVICE_CPU) h->be->sync(h->be);
  comm_dev_event_destroy(h->ev_ready);
  comm_dev_event_destroy(h->ev_done);
  comm_dev_stream_destroy(h->d_stream);
  for (int i = 0; i < h->ntypes; i++)
    if (h->types[i] != MPI_DATATYPE_NULL) MPI_Type_free(&h->types[i]);
  if (h->graph != MPI_COMM_NULL) MPI_Comm_free(&h->graph);
  if (h->be) {
    h->be->free(h->be, h->d_idx);
    h->be->free(h->be, h->d_rows);
  }
  if (h->sel.pinned) {
    comm_pinned_free(h->h_a);
    comm_pinned_free(h->h_b);
  } else {
    cg_free(h->h_a);
    cg_free(h->h_b);
  }
  cg_free(h->q_out);
  cg_free(h->q_in);
  cg_free(h->reqs);
  cg_free(h->nb);
  cg_free(h->send_cnt);
  cg_free(h->send_dsp);
  cg_free(h->recv_cnt);
  cg_free(h->recv_dsp);
  cg_free(h);
  *hp = NULL;
}

/* ---- exchange ------------------------------------------------------------------------ */

static const char *dir_name(enum cg_halo_dir dir) {
  return dir == CG_HALO_FORWARD ? "forward" : "backward";
}

/* The datatype of one row: key > 0 is `key` floats, key < 0 is -key bytes (a
 * quantised row). */
static int halo_row_type(struct comm_halo *h, int64_t key, MPI_Datatype *t) {
  for (int i = 0; i < h->ntypes; i++)
    if (h->type_cols[i] == key) {
      *t = h->types[i];
      return CG_OK;
    }
  int slot;
  if (h->ntypes < HALO_TYPE_CACHE) {
    slot = h->ntypes++;
  } else { /* evict round-robin; freeing a type a pending operation uses is allowed */
    slot = h->type_next;
    h->type_next = (h->type_next + 1) % HALO_TYPE_CACHE;
    if (h->types[slot] != MPI_DATATYPE_NULL) MPI_Type_free(&h->types[slot]);
  }
  h->type_cols[slot] = 0;
  h->types[slot] = MPI_DATATYPE_NULL;
  if (key > 0) COMM_MPI_TRY(MPI_Type_contiguous((int)key, MPI_FLOAT, &h->types[slot]));
  else COMM_MPI_TRY(MPI_Type_contiguous((int)-key, MPI_BYTE, &h->types[slot]));
  COMM_MPI_TRY(MPI_Type_commit(&h->types[slot]));
  h->type_cols[slot] = key;
  *t = h->types[slot];
  return CG_OK;
}

/* One direction as this rank sees it: the rows it sends (src, scnt[k] rows at row
 * sdsp[k] for neighbour k) and where the rows it receives land (dst, rcnt, rdsp).
 * Backward is forward with the roles swapped: the halo rows of x go back to their
 * owners, which receive them into the row buffer and add them from there. */
struct halo_route {
  const float *src;
  const int *scnt, *sdsp;
  int64_t srows;
  float *dst;
  const int *rcnt, *rdsp;
  int64_t rrows;
};

static struct halo_route halo_route(const struct comm_halo *h, enum cg_halo_dir dir, float *x,
                                    float *recv, int64_t cols) {
  float *xhalo = recv ? recv : x ? x + h->n_inner * cols : NULL;
  if (dir == CG_HALO_FORWARD)
    return (struct halo_route){h->d_rows, h->send_cnt, h->send_dsp, h->send_rows,
                               xhalo,     h->recv_cnt, h->recv_dsp, h->recv_rows};
  return (struct halo_route){xhalo,     h->recv_cnt, h->recv_dsp, h->recv_rows,
                             h->d_rows, h->send_cnt, h->send_dsp, h->send_rows};
}

/* The counters of one direction (comm_stats). */
static void halo_count(struct comm *c, enum cg_halo_dir dir, int64_t bytes, int64_t calls,
                       double s) {
  if (dir == CG_HALO_FORWARD) {
    c->stats.halo_fwd_bytes += bytes;
    c->stats.halo_fwd_calls += calls;
    c->stats.halo_fwd_s += s;
  } else {
    c->stats.halo_bwd_bytes += bytes;
    c->stats.halo_bwd_calls += calls;
    c->stats.halo_bwd_s += s;
  }
}

static int halo_dir_check(enum cg_halo_dir dir, const char *fn) {
  if (dir != CG_HALO_FORWARD && dir != CG_HALO_BACKWARD)
    return cg_err_set(CG_ERR_ARG,
                      "%s: unknown direction %d (use CG_HALO_FORWARD or CG_HALO_BACKWARD)", fn,
                      (int)dir);
  return CG_OK;
}

static int halo_begin_check(struct comm_halo *h, enum cg_halo_dir dir, const float *x,
                            int64_t cols) {
  TRY(halo_dir_check(dir, "comm_halo_begin"));
  const char *d = dir_name(dir);
  if (h->in_flight)
    return cg_err_set(CG_ERR_ARG,
                      "comm_halo_begin(%s): a %s exchange is still in flight on this plan (call "
                      "comm_halo_end first)",
                      d, dir_name(h->flight_dir));
  if (cols < 1 || cols > h->max_cols)
    return cg_err_set(CG_ERR_ARG,
                      "comm_halo_begin(%s): cols %lld outside [1, max_cols %lld] given at create",
                      d, (long long)cols, (long long)h->max_cols);
  if (!x && h->n_inner + h->n_halo > 0)
    return cg_err_set(CG_ERR_ARG, "comm_halo_begin(%s): matrix pointer is NULL", d);
  return CG_OK;
}

static int halo_end_check(struct comm_halo *h, enum cg_halo_dir dir, const float *x,
                          const float *recv, int64_t cols) {
  TRY(halo_dir_check(dir, "comm_halo_end"));
  const char *d = dir_name(dir);
  if (!h->in_flight || h->flight_dir != dir)
    return cg_err_set(CG_ERR_ARG,
                      "comm_halo_end(%s): no %s exchange in flight (call comm_halo_begin(%s) "
                      "first)",
                      d, d, d);
  if (x != h->flight_x || recv != h->flight_recv || cols != h->flight_cols)
    return cg_err_set(CG_ERR_ARG,
                      "comm_halo_end(%s): matrix, receive buffer or cols differ from the "
                      "comm_halo_begin call",
                      d);
  return CG_OK;
}

/* Wait for the exchange in flight; the object is idle afterwards whatever happens. */
static int halo_wait(struct comm_halo *h) {
  int rc = h->nreq > 0 ? MPI_Waitall(h->nreq, h->reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
  h->nreq = 0;
  h->in_flight = 0;
  h->flight_x = h->flight_recv = NULL;
  if (rc != MPI_SUCCESS)
    return comm_mpi_error(rc, "MPI_Waitall (halo exchange)", __FILE__, __LINE__);
  return CG_OK;
}

/* Start the MPI transfer: for neighbour k, scnt[k] rows from sbuf + sdsp[k] rows out,
 * rcnt[k] rows into rbuf + rdsp[k] rows; a row is one `row` datatype of row_bytes
 * bytes (cols floats, or a quantised row). Buffers are host memory, or device memory
 * on the MPI_CUDA path. A failure here is fatal to the step (the caller aborts the
 * job), so requests already posted are not unwound. */
static int halo_mpi_start(struct comm_halo *h, const void *sbuf, const int *scnt, const int *sdsp,
                          void *rbuf, const int *rcnt, const int *rdsp, MPI_Datatype row,
                          size_t row_bytes) {
  h->nreq = 0;
  if (!h->sel.p2p) {
    COMM_MPI_TRY(MPI_Ineighbor_alltoallv(sbuf, scnt, sdsp, row, rbuf, rcnt, rdsp, row, h->graph,
                                         &h->reqs[0]));
    h->nreq = 1;
    return CG_OK;
  }
  /* Receives first, so that no message arrives unexpected. One exchange per object in
   * flight, its own communicator and MPI's non-overtaking order keep one tag enough. */
  for (int k = 0; k < h->nnb; k++)
    if (rcnt[k] > 0) {
      COMM_MPI_TRY(MPI_Irecv((char *)rbuf + (size_t)rdsp[k] * row_bytes, rcnt[k], row, h->nb[k], 0,
                             h->graph, &h->reqs[h->nreq]));
      h->nreq++;
    }
  for (int k = 0; k < h->nnb; k++)
    if (scnt[k] > 0) {
      COMM_MPI_TRY(MPI_Isend((const char *)sbuf + (size_t)sdsp[k] * row_bytes, scnt[k], row, h->nb[k],
                             0, h->graph, &h->reqs[h->nreq]));
      h->nreq++;
    }
  return CG_OK;
}

int comm_set_halo_bits(struct comm *c, int bits) {
  if (bits != 32 && !comm_quant_bits_ok(bits))
    return cg_err_set(CG_ERR_ARG, "--halo-bits %d: expected 32 (exact), 16, 8 or 4", bits);
  c->halo_bits = bits;
  return CG_OK;
}

int comm_halo_bits(const struct comm *c) { return c->halo_bits ? c->halo_bits : 32; }

/* The rounding stream of the next coded begin: the caller's key (comm_halo_set_quant_key:
 * what the exchange carries, e.g. epoch, layer and direction, so that a resumed run
 * rounds as an uninterrupted one), the begins coded since it was set, and this rank. */
static uint64_t halo_quant_stream(const struct comm_halo *h) {
  return (h->qkey * 0x9e3779b97f4a7c15ull) ^ (h->qcalls << 20) ^ (uint64_t)h->c->rank;
}

void comm_halo_count_as(struct comm_halo *h, enum cg_halo_dir dir) { h->count_bwd = dir == CG_HALO_BACKWARD; }

void comm_halo_set_quant_key(struct comm_halo *h, uint64_t key) {
  h->qkey = key;
  h->qcalls = 0;
}

int64_t comm_halo_row_bytes(int64_t cols, int bits) {
  return bits < 32 ? (int64_t)comm_quant_row_bytes(cols, bits) : cols * (int64_t)sizeof(float);
}

/* The coded rows' host buffers, sized for the widest row at the most bits; at set_quant,
 * not in a training step. */
static int halo_quant_alloc(struct comm_halo *h) {
  if (h->q_out && h->q_in) return CG_OK;
  if (comm_quant_row_bytes(h->max_cols, 16) > (size_t)INT_MAX)
    return cg_err_set(CG_ERR_UNSUPPORTED, "coded halo rows of %lld columns: wider than MPI counts allow",
                      (long long)h->max_cols);
  const size_t rb = comm_quant_row_bytes(h->max_cols, 16);
  const int64_t m = h->send_rows > h->recv_rows ? h->send_rows : h->recv_rows;
  cg_free(h->q_out);
  cg_free(h->q_in);
  h->q_out = cg_malloc((size_t)(m > 0 ? m : 1) * rb, "quantised halo rows (outgoing)");
  h->q_in = cg_malloc((size_t)(m > 0 ? m : 1) * rb, "quantised halo rows (incoming)");
  if (h->q_out && h->q_in) return CG_OK;
  cg_free(h->q_out);
  cg_free(h->q_in);
  h->q_out = h->q_in = NULL;
  return CG_ERR_NOMEM;
}

int comm_halo_set_quant(struct comm_halo *h, int bits) {
  if (!h) return cg_err_set(CG_ERR_ARG, "comm_halo_set_quant: no exchange");
  if (bits != 32 && !comm_quant_bits_ok(bits))
    return cg_err_set(CG_ERR_ARG, "halo rows of %d bits: expected 32 (exact), 16, 8 or 4", bits);
  if (bits == h->qbits) return CG_OK; /* nothing changes (begin reports its own misuse) */
  if (h->in_flight)
    return cg_err_set(CG_ERR_ARG, "comm_halo_set_quant: an exchange is in flight (set it between exchanges)");
  if (bits < 32 && (h->sel.path == COMM_PATH_NCCL || h->sel.path == COMM_PATH_MPI_CUDA))
    return cg_err_set(CG_ERR_UNSUPPORTED,
                      "halo rows of %d bits are coded in host memory, which the %s path does not use: "
                      "use --comm mpi-staged (or --halo-bits 32)",
                      bits, comm_path_name(h->sel.path));
  if (bits < 32) TRY(halo_quant_alloc(h));
  h->qbits = bits;
  return CG_OK;
}

int comm_halo_begin(struct comm_halo *h, enum cg_halo_dir dir, float *x, int64_t cols) {
  return comm_halo_begin_into(h, dir, x, NULL, cols);
}

int comm_halo_begin_into(struct comm_halo *h, enum cg_halo_dir dir, float *x, float *recv,
                         int64_t cols) {
  struct cg_backend *be = h->be;
  double t0 = cg_time_now();
  TRY(halo_begin_check(h, dir, x, cols));
  const int q = h->qbits < 32;
  const size_t row_bytes = q ? comm_quant_row_bytes(cols, h->qbits) : (size_t)cols * sizeof(float);
  MPI_Datatype row = MPI_DATATYPE_NULL; /* set by halo_row_type */
  TRY(halo_row_type(h, q ? -(int64_t)row_bytes : cols, &row));
  /* forward sends owned rows picked by the plan: gather them into the row buffer */
  if (dir == CG_HALO_FORWARD && h->send_rows > 0)
    be->gather_rows(be, x, cols, h->d_idx, h->send_rows, h->d_rows);
  struct halo_route rt = halo_route(h, dir, x, recv, cols);
  size_t sbytes = (size_t)(rt.srows * cols) * sizeof(float);
  switch (h->sel.path) {
    case COMM_PATH_NCCL: /* on its own stream, after the gather / the caller's writes */
      TRY(comm_dev_event_record(be, h->ev_ready, NULL));
      TRY(comm_dev_stream_wait(be, h->d_stream, h->ev_ready));
      TRY(comm_nccl_exchange(h->c, be, h->d_stream, h->nnb, h->nb, rt.src, rt.scnt, rt.sdsp, rt.dst,
                             rt.rcnt, rt.rdsp, cols));
      TRY(comm_dev_event_record(be, h->ev_done, h->d_stream));
      break;
    case COMM_PATH_MPI_STAGED:
      if (h->sel.pinned) {
        TRY(comm_dev_d2h(be, h->h_a, rt.src, sbytes));
        TRY(comm_dev_sync(be)); /* always: also completes the last end's copy out of h_b */
      } else if (rt.srows > 0) {
        TRY(be->download(be, h->h_a, rt.src, sbytes));
      }
      if (q) { /* the rows are in host memory now: code them there */
        comm_quant_rows(h->h_a, rt.srows, cols, h->qbits, halo_quant_stream(h), 0, h->q_out);
        TRY(halo_mpi_start(h, h->q_out, rt.scnt, rt.sdsp, h->q_in, rt.rcnt, rt.rdsp, row, row_bytes));
      } else {
        TRY(halo_mpi_start(h, h->h_a, rt.scnt, rt.sdsp, h->h_b, rt.rcnt, rt.rdsp, row, row_bytes));
      }
      break;
    default: /* HOST, MPI_CUDA: MPI reads the rows to send and writes the received ones */
      be->sync(be); /* the gather, or the ops that wrote dx's halo rows, may be in flight */
      if (q) { /* HOST only (set_quant refuses MPI_CUDA): backend memory is host memory */
        comm_quant_rows(rt.src, rt.srows, cols, h->qbits, halo_quant_stream(h), 0, h->q_out);
        TRY(halo_mpi_start(h, h->q_out, rt.scnt, rt.sdsp, h->q_in, rt.rcnt, rt.rdsp, row, row_bytes));
      } else {
        TRY(halo_mpi_start(h, rt.src, rt.scnt, rt.sdsp, rt.dst, rt.rcnt, rt.rdsp, row, row_bytes));
      }
      break;
  }
  if (q) h->qcalls++;
  h->flight_q = q;
  h->in_flight = 1;
  h->flight_dir = dir;
  h->flight_x = x;
  h->flight_recv = recv;
  h->flight_cols = cols;
  const int64_t bytes = rt.srows * (int64_t)row_bytes;
  h->bytes_sent += bytes; /* this object's own count: comm_stats is the whole comm's */
  halo_count(h->c, h->count_bwd ? CG_HALO_BACKWARD : dir, bytes, 1, cg_time_now() - t0);
  for (int k = 0; k < h->nnb; k++) { /* where they went: this node or another */
    const int64_t b = (int64_t)rt.scnt[k] * (int64_t)row_bytes;
    if (comm_node_of(h->c, h->nb[k]) == h->c->node_id) {
      h->c->stats.halo_intra_bytes += b;
    } else {
      h->c->stats.halo_inter_bytes += b;
      h->inter_bytes += b;
    }
  }
  return CG_OK;
}

int comm_halo_end(struct comm_halo *h, enum cg_halo_dir dir, float *x, int64_t cols) {
  return comm_halo_end_into(h, dir, x, NULL, cols);
}

int comm_halo_end_into(struct comm_halo *h, enum cg_halo_dir dir, float *x, float *recv,
                       int64_t cols) {
  struct cg_backend *be = h->be;
  double t0 = cg_time_now();
  TRY(halo_end_check(h, dir, x, recv, cols));
  struct halo_route rt = halo_route(h, dir, x, recv, cols);
  const int q = h->flight_q;
  h->flight_q = 0;
  int st = halo_wait(h);
  /* quantised: decode into where the rows would have landed (host memory: x's halo
   * rows or the row buffer on the CPU backend, the incoming staging buffer staged) */
  if (st == CG_OK && q && rt.rrows > 0)
    comm_dequant_rows(h->q_in, rt.rrows, cols, h->qbits,
                      h->sel.path == COMM_PATH_MPI_STAGED ? h->h_b : rt.dst);
  /* NCCL: what the backend's stream runs from now on comes after the transfer */
  if (st == CG_OK && h->sel.path == COMM_PATH_NCCL) st = comm_dev_stream_wait(be, NULL, h->ev_done);
  /* staged: the received rows are in host memory (forward: x's halo rows are their
   * place; backward: the row buffer) */
  if (st == CG_OK && h->sel.path == COMM_PATH_MPI_STAGED && rt.rrows > 0) {
    size_t rbytes = (size_t)(rt.rrows * cols) * sizeof(float);
    if (h->sel.pinned)
      st = comm_dev_h2d(be, rt.dst, h->h_b, rbytes);
    else
      st = be->upload(be, rt.dst, h->h_b, rbytes);
  }
  if (st == CG_OK && dir == CG_HALO_BACKWARD)
    for (int k = 0; k < h->nnb; k++) /* ascending peer order: deterministic sums */
      if (h->send_cnt[k] > 0)
        be->scatter_add_rows(be, h->d_rows + (int64_t)h->send_dsp[k] * cols, cols,
                             h->d_idx + h->send_dsp[k], h->send_cnt[k], x);
  halo_count(h->c, h->count_bwd ? CG_HALO_BACKWARD : dir, 0, 0, cg_time_now() - t0);
  TRY(st);
  return CG_OK;
}

int comm_halo_progress(struct comm_halo *h) {
  double t0 = cg_time_now();
  if (!h->in_flight)
    return cg_err_set(CG_ERR_ARG, "comm_halo_progress: no exchange in flight (call it between "
                      "comm_halo_begin and comm_halo_end)");
  int done = 1, st = CG_OK;
  if (h->sel.path == COMM_PATH_NCCL) {
    st = comm_dev_event_query(h->ev_done);
    done = st == 1;
  } else if (h->nreq > 0) { /* completed requests become MPI_REQUEST_NULL: end's wait is then free */
    int rc = MPI_Testall(h->nreq, h->reqs, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) st = comm_mpi_error(rc, "MPI_Testall (halo exchange)", __FILE__, __LINE__);
  }
  halo_count(h->c, h->count_bwd ? CG_HALO_BACKWARD : h->flight_dir, 0, 0, cg_time_now() - t0);
  TRY(st);
  return done ? 1 : 0;
}

int comm_halo_exchange(struct comm_halo *h, enum cg_halo_dir dir, float *x, int64_t cols) {
  TRY(comm_halo_begin(h, dir, x, cols));
  TRY(comm_halo_end(h, dir, x, cols));
  return CG_OK;
}
