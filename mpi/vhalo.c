/* mpi/vhalo.c — the variable-length halo exchange (comm.h, comm_vhalo): each rank sends
 * each peer only the rows it picks this time, and the peer learns which.
 *
 * Design notes (the why):
 * - One message per peer and direction, always sent (possibly empty), so that every
 *   posted receive is matched and nobody needs a count exchange first: the receiver
 *   posts its plan's full block (every row it could get) and learns how many came from
 *   the message's size (MPI_Get_count). The message is the picked rows' positions in
 *   the peer's block (int32) followed by the rows, so a row is never misplaced; a
 *   message of the whole block goes without positions under its own tag (the receiver
 *   takes any tag and reads it from the status), so EPS 0 costs what the plain
 *   exchange does.
 * - Host memory only: the caller (jaca/'s adaptive mode) compares rows on the host
 *   anyway, to decide which ones to send.
 * - Its own communicator (a dup of the world), point-to-point: one
 *   exchange per object in flight and MPI's non-overtaking order keep messages apart,
 *   and nothing else on the job can match them.
 * - The plan's consistency (what a rank may send each peer is what that peer expects
 *   at most) is checked at create with one all-to-all of the counts: a receive block
 *   smaller than the message would truncate it. */
#include <limits.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "mpi/comm_internal.h"

/* A message of some rows (positions, then rows) or of the whole block (rows only). */
#define VH_TAG_SOME 0
#define VH_TAG_ALL 1

struct comm_vhalo {
  struct comm *c;
  MPI_Comm comm;
  int npeers;
  int *peer;
  int64_t *soff, *scnt, *roff, *rcnt; /* rows, per peer (the plan's) */
  int64_t send_rows, recv_rows, max_cols;
  char *sbuf, *rbuf; /* per peer: [positions | rows], at offset * (4 + 4 max_cols) bytes */
  MPI_Request *reqs;  /* receives [0, npeers), sends [npeers, 2 npeers) */
  MPI_Status *stat;
  int in_flight, completed; /* completed: progress saw every request done (statuses in stat) */
  int64_t flight_cols;
  int64_t bytes_sent, inter_bytes;
  int count_bwd; /* comm_vhalo_count_as(BACKWARD): comm_stats' backward counters */
};

static size_t vrow_bytes(int64_t cols) { return sizeof(int32_t) + (size_t)cols * sizeof(float); }

void comm_vhalo_destroy(struct comm_vhalo **hp) {
  if (!hp || !*hp) return;
  struct comm_vhalo *h = *hp;
  if (h->in_flight) {
    LOG_WARN("mpi", "comm_vhalo_destroy: an exchange is still in flight; waiting for it");
    MPI_Waitall(2 * h->npeers, h->reqs, MPI_STATUSES_IGNORE);
  }
  if (h->comm != MPI_COMM_NULL) MPI_Comm_free(&h->comm);
  cg_free(h->peer);
  cg_free(h->soff);
  cg_free(h->scnt);
  cg_free(h->roff);
  cg_free(h->rcnt);
  cg_free(h->sbuf);
  cg_free(h->rbuf);
  cg_free(h->reqs);
  cg_free(h->stat);
  cg_free(h);
  *hp = NULL;
}

int comm_vhalo_create(struct comm *c, const struct comm_halo_plan *plan, int64_t max_cols, struct comm_vhalo **out) {
  int st = CG_OK;
  *out = NULL;
  const int P = c->size;
  struct comm_vhalo *h = cg_calloc(1, sizeof *h, "variable halo exchange");
  int64_t *mine = cg_calloc((size_t)P, sizeof(int64_t), "variable halo counts");
  int64_t *theirs = cg_calloc((size_t)P, sizeof(int64_t), "variable halo counts");
  if (!h || !mine || !theirs) st = CG_ERR_NOMEM;
  if (h) h->comm = MPI_COMM_NULL;
  if (st == CG_OK && (max_cols < 1 || plan->npeers < 0))
    st = cg_err_set(CG_ERR_ARG, "comm_vhalo_create: max_cols %lld, %d peers", (long long)max_cols, plan->npeers);
  if (st == CG_OK) {
    const size_t np = (size_t)(plan->npeers > 0 ? plan->npeers : 1);
    h->c = c;
    h->npeers = plan->npeers;
    h->max_cols = max_cols;
    h->peer = cg_malloc(sizeof(int) * np, "variable halo peers");
    h->soff = cg_malloc(sizeof(int64_t) * np, "variable halo plan");
    h->scnt = cg_malloc(sizeof(int64_t) * np, "variable halo plan");
    h->roff = cg_malloc(sizeof(int64_t) * np, "variable halo plan");
    h->rcnt = cg_malloc(sizeof(int64_t) * np, "variable halo plan");
    h->reqs = cg_malloc(sizeof(MPI_Request) * 2 * np, "variable halo requests");
    h->stat = cg_malloc(sizeof(MPI_Status) * 2 * np, "variable halo statuses");
    if (!h->peer || !h->soff || !h->scnt || !h->roff || !h->rcnt || !h->reqs || !h->stat) st = CG_ERR_NOMEM;
  }
  for (int k = 0; st == CG_OK && k < plan->npeers; k++) {
    const int q = plan->peer[k];
    if (q < 0 || q >= P || q == c->rank || (k > 0 && q <= plan->peer[k - 1]) || plan->send_count[k] < 0 ||
        plan->recv_count[k] < 0) {
      st = cg_err_set(CG_ERR_ARG, "comm_vhalo_create: peer %d (entry %d): peers must be other ranks, ascending, "
                      "with counts >= 0", q, k);
      break;
    }
    h->peer[k] = q;
    h->soff[k] = h->send_rows;
    h->scnt[k] = plan->send_count[k];
    h->roff[k] = h->recv_rows;
    h->rcnt[k] = plan->recv_count[k];
    h->send_rows += plan->send_count[k];
    h->recv_rows += plan->recv_count[k];
    mine[q] = plan->send_count[k];
    if ((double)(plan->send_count[k] > plan->recv_count[k] ? plan->send_count[k] : plan->recv_count[k]) *
            (double)vrow_bytes(max_cols) > (double)INT_MAX)
      st = cg_err_set(CG_ERR_ARG, "comm_vhalo_create: %lld rows of %lld columns for rank %d exceed one MPI message",
                      (long long)plan->send_count[k], (long long)max_cols, q);
  }
  if (st == CG_OK) {
    h->sbuf = cg_malloc((size_t)(h->send_rows > 0 ? h->send_rows : 1) * vrow_bytes(max_cols), "variable halo out");
    h->rbuf = cg_malloc((size_t)(h->recv_rows > 0 ? h->recv_rows : 1) * vrow_bytes(max_cols), "variable halo in");
    if (!h->sbuf || !h->rbuf) st = CG_ERR_NOMEM;
  }
  TRY_GOTO(comm_agree(c, st, "comm_vhalo_create (plan)"), fail);
  /* what each rank may send each peer must fit the block that peer posts */
  {
    int rc = MPI_Alltoall(mine, 1, MPI_INT64_T, theirs, 1, MPI_INT64_T, c->world);
    st = rc == MPI_SUCCESS ? CG_OK : comm_mpi_error(rc, "MPI_Alltoall (variable halo counts)", __FILE__, __LINE__);
    for (int q = 0; st == CG_OK && q < P; q++) {
      int64_t expect = 0;
      for (int k = 0; k < h->npeers; k++)
        if (h->peer[k] == q) expect = h->rcnt[k];
      if (theirs[q] != expect)
        st = cg_err_set(CG_ERR_ARG, "comm_vhalo_create: rank %d may send %lld rows here, this rank's plan "
                        "receives %lld from it", q, (long long)theirs[q], (long long)expect);
    }
  }
  TRY_GOTO(comm_agree(c, st, "comm_vhalo_create (plan consistency)"), fail);
  COMM_MPI_TRY_GOTO(MPI_Comm_dup(c->world, &h->comm), fail);
  COMM_MPI_TRY_GOTO(MPI_Comm_set_errhandler(h->comm, MPI_ERRORS_RETURN), fail);
  cg_free(mine);
  cg_free(theirs);
  *out = h;
  return CG_OK;
fail:
  cg_err_trail(__FILE__, __LINE__, "comm_vhalo_create");
  cg_free(mine);
  cg_free(theirs);
  comm_vhalo_destroy(&h);
  return st;
}

void comm_vhalo_count_as(struct comm_vhalo *h, enum cg_halo_dir dir) { h->count_bwd = dir == CG_HALO_BACKWARD; }

int comm_vhalo_begin(struct comm_vhalo *h, const float *rows, const unsigned char *sel, int64_t cols) {
  const double t0 = cg_time_now();
  if (h->in_flight) return cg_err_set(CG_ERR_ARG, "comm_vhalo_begin: an exchange is still in flight");
  if (cols < 1 || cols > h->max_cols)
    return cg_err_set(CG_ERR_ARG, "comm_vhalo_begin: cols %lld outside [1, %lld]", (long long)cols,
                      (long long)h->max_cols);
  const size_t rb = vrow_bytes(cols);
  for (int k = 0; k < h->npeers; k++)
    if (h->rcnt[k] > 0)
      COMM_MPI_TRY(MPI_Irecv(h->rbuf + (size_t)h->roff[k] * rb, (int)((size_t)h->rcnt[k] * rb), MPI_BYTE, h->peer[k],
                             MPI_ANY_TAG, h->comm, &h->reqs[k]));
    else h->reqs[k] = MPI_REQUEST_NULL;
  int64_t sent = 0;
  for (int k = 0; k < h->npeers; k++) {
    h->reqs[h->npeers + k] = MPI_REQUEST_NULL;
    if (h->scnt[k] == 0) continue;
    char *msg = h->sbuf + (size_t)h->soff[k] * rb;
    int32_t n = 0;
    for (int64_t i = 0; i < h->scnt[k]; i++) n += sel[h->soff[k] + i] != 0;
    int32_t *pos = (int32_t *)msg;
    float *dst = (float *)(msg + (size_t)n * sizeof(int32_t));
    int32_t m = 0;
    for (int64_t i = 0; n < h->scnt[k] && i < h->scnt[k]; i++) {
      if (!sel[h->soff[k] + i]) continue;
      pos[m] = (int32_t)i;
      memcpy(dst + (int64_t)m * cols, rows + (h->soff[k] + i) * cols, (size_t)cols * sizeof(float));
      m++;
    }
    int64_t bytes = (int64_t)n * (int64_t)rb;
    int tag = VH_TAG_SOME;
    if (n == h->scnt[k]) { /* every row: no positions (tag VH_TAG_ALL), as the plain exchange */
      memcpy(msg, rows + h->soff[k] * cols, (size_t)(n * cols) * sizeof(float));
      bytes = n * cols * (int64_t)sizeof(float);
      tag = VH_TAG_ALL;
    }
    COMM_MPI_TRY(MPI_Isend(msg, (int)bytes, MPI_BYTE, h->peer[k], tag, h->comm, &h->reqs[h->npeers + k]));
    sent += bytes;
    if (comm_node_of(h->c, h->peer[k]) == h->c->node_id) {
      h->c->stats.halo_intra_bytes += bytes;
    } else {
      h->c->stats.halo_inter_bytes += bytes;
      h->inter_bytes += bytes;
    }
  }
  h->bytes_sent += sent;
  if (h->count_bwd) {
    h->c->stats.halo_bwd_bytes += sent;
    h->c->stats.halo_bwd_calls++;
    h->c->stats.halo_bwd_s += cg_time_now() - t0;
  } else {
    h->c->stats.halo_fwd_bytes += sent;
    h->c->stats.halo_fwd_calls++;
    h->c->stats.halo_fwd_s += cg_time_now() - t0;
  }
  h->in_flight = 1;
  h->completed = 0;
  h->flight_cols = cols;
  return CG_OK;
}

int comm_vhalo_progress(struct comm_vhalo *h) {
  if (!h->in_flight) return cg_err_set(CG_ERR_ARG, "comm_vhalo_progress: no exchange in flight");
  if (h->completed) return 1;
  int done = 1;
  /* MPI_Testall completes (and frees) the requests only when all of them are done, and
   * then fills the statuses end needs for the counts */
  if (h->npeers > 0) COMM_MPI_TRY(MPI_Testall(2 * h->npeers, h->reqs, &done, h->stat));
  h->completed = done != 0;
  return done ? 1 : 0;
}

int comm_vhalo_end(struct comm_vhalo *h, float *recv, unsigned char *got, int64_t cols, int64_t *nrecv) {
  const double t0 = cg_time_now();
  if (!h->in_flight || cols != h->flight_cols)
    return cg_err_set(CG_ERR_ARG, "comm_vhalo_end: no exchange of %lld columns in flight", (long long)cols);
  h->in_flight = 0;
  if (h->npeers > 0 && !h->completed) COMM_MPI_TRY(MPI_Waitall(2 * h->npeers, h->reqs, h->stat));
  h->completed = 0;
  const size_t rb = vrow_bytes(cols);
  memset(got, 0, (size_t)h->recv_rows);
  int64_t total = 0;
  for (int k = 0; k < h->npeers; k++) {
    if (h->rcnt[k] == 0) continue;
    int bytes = 0;
    COMM_MPI_TRY(MPI_Get_count(&h->stat[k], MPI_BYTE, &bytes));
    const char *msg = h->rbuf + (size_t)h->roff[k] * rb;
    if (h->stat[k].MPI_TAG == VH_TAG_ALL) {
      if (bytes != (int)(h->rcnt[k] * cols * (int64_t)sizeof(float)))
        return cg_err_set(CG_ERR_INTERNAL, "comm_vhalo_end: %d bytes from rank %d for its whole block of %lld rows of "
                          "%lld columns", bytes, h->peer[k], (long long)h->rcnt[k], (long long)cols);
      memcpy(recv + h->roff[k] * cols, msg, (size_t)bytes);
      memset(got + h->roff[k], 1, (size_t)h->rcnt[k]);
      total += h->rcnt[k];
      continue;
    }
    if (bytes == MPI_UNDEFINED || bytes < 0 || (size_t)bytes % rb != 0 || (size_t)bytes / rb > (size_t)h->rcnt[k])
      return cg_err_set(CG_ERR_INTERNAL, "comm_vhalo_end: %d bytes from rank %d: not whole rows of %lld columns "
                        "within its block of %lld", bytes, h->peer[k], (long long)cols, (long long)h->rcnt[k]);
    const int64_t n = (int64_t)((size_t)bytes / rb);
    const int32_t *pos = (const int32_t *)msg;
    const float *src = (const float *)(msg + (size_t)n * sizeof(int32_t));
    for (int64_t m = 0; m < n; m++) {
      const int64_t i = pos[m];
      if (i < 0 || i >= h->rcnt[k] || got[h->roff[k] + i])
        return cg_err_set(CG_ERR_INTERNAL, "comm_vhalo_end: rank %d sent row %lld of its block of %lld twice or "
                          "out of range", h->peer[k], (long long)i, (long long)h->rcnt[k]);
      got[h->roff[k] + i] = 1;
      memcpy(recv + (h->roff[k] + i) * cols, src + m * cols, (size_t)cols * sizeof(float));
    }
    total += n;
  }
  if (nrecv) *nrecv = total;
  *(h->count_bwd ? &h->c->stats.halo_bwd_s : &h->c->stats.halo_fwd_s) += cg_time_now() - t0;
  return CG_OK;
}

int64_t comm_vhalo_send_rows(const struct comm_vhalo *h) { return h->send_rows; }
int64_t comm_vhalo_recv_rows(const struct comm_vhalo *h) { return h->recv_rows; }
int64_t comm_vhalo_bytes_sent(const struct comm_vhalo *h) { return h ? h->bytes_sent : 0; }
int64_t comm_vhalo_inter_bytes_sent(const struct comm_vhalo *h) { return h ? h->inter_bytes : 0; }
