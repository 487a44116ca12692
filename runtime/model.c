/* runtime/model.c — GCN / GraphSAGE forward, backward, optimizer step and
 * evaluation.
 *
 * The model only orchestrates: every numeric op goes through the backend table
 * (core/ops.h), every backend buffer is allocated when the model is built
 * (runtime/model_build.c), and the training step allocates nothing (host or backend).
 *
 * Shapes (n_in = inner rows, n_tot = inner + halo rows, fin/fout per layer):
 *   in    [n_tot x fin]   layer input. Layer 0: the features (halo rows fetched once
 *                         at setup — they never change; with layer 0 exchanged,
 *                         [n_in x fin]: no halo row at all). Layer l > 0: inner rows are
 *                         the previous layer's ReLU output (read by relu_bwd without
 *                         dropout; with dropout the backward reads in_d).
 *   in_d  [n_tot x fin]   dropout(in) (absent when the layer's dropout is 0: Hd = in;
 *                         layer 0 exchanged: n_in rows, as in)
 *   agg   [n_in x fin]    Â·Hd            (aggregate-first layers; layer 0 without
 *                         input dropout: Â·X, computed once when the model is built, and
 *                         layer 0 then runs no SpMM in forward or backward)
 *   t     [n_tot x fout]  Hd·W_neigh      (transform-first layers)
 *   z     [n_in x fout]   convolution output (the logits for the last layer)
 *   ln_y, ln_mean, ln_rstd                LayerNorm output and saved statistics
 * Backward uses three scratch buffers [n_tot x wmax], wmax = widest gradient, that
 * rotate between dZ, dT/dA and dHd.
 *
 * Halo rows and exchange (single process: n_halo = 0 and the exchange is never called):
 *   aggregate-first, l > 0: exchange H (width fin), dropout over all n_tot rows
 *     (the mask is keyed by global id, so the halo copy gets the owner's mask);
 *     backward: dHd = Âᵀ dA over n_tot rows, halo rows go back to owners.
 *   transform-first, l > 0: T = Hd·W on inner rows, then exchange T (width fout < fin,
 *     so less traffic); backward: dT = Âᵀ dZ, halo rows of dT go back to owners.
 *   layer 0, --layer0-halo local: all n_tot rows of the input are local, so T (or Â·Hd)
 *     is computed without exchange and without sending gradients back (no gradient
 *     w.r.t. the input features is computed at all); the cached Â·X of the
 *     no-input-dropout case is computed after the halo rows of the features have
 *     arrived. Its compute does not shrink with the rank's share of inner rows (every
 *     halo row is transformed, and dropped out, too).
 *   layer 0, --layer0-halo exchange (m->l0x; rt_layer0_exchange_choose, the default
 *     wherever layer 0 transforms first with input dropout): run as a transform-first
 *     hidden layer. T = dropout(X_inner)·W0 on the inner rows only (GEMM, or csr_mm of
 *     the inner rows' sparse features), T's fout-wide rows exchanged (overlapped like
 *     the other layers), aggregated; backward, dT = Âᵀ dZ over n_tot rows, the halo
 *     rows of dT go back to their owners, who add them, then gW0 = Xdᵀ·dT over the inner
 *     rows. The dropout mask is keyed by global id, so every row of T is the one the
 *     owner of a local run would have computed; no halo feature row is fetched or kept.
 *     GAT (model_gat.c) stays local.
 * Sparse input features (m->xs_on, issue #14): layer 0 is transform-first whatever its
 * widths; T = Xd·W is csr_mm over all n_tot rows (X's halo rows are local, as dense
 * features' are; with layer 0 exchanged, over the n_in inner rows only), its dropout csr_dropout with the dense mask of each stored entry,
 * the weight gradient Xdᵀ·dT csr_mm_t; SAGE's self term reads the inner rows (xs_in).
 * Âᵀ is a second uploaded operator: Â is not square when there are halo rows and
 * the SAGE mean is not symmetric even without them.
 *
 * Overlap (runtime.h, "communication"; issue #14). With an exchange the products are
 * split (struct rt_agg): forward, the exchange is begun, the inner part computed (in
 * row blocks, the exchange's progress called after each), the exchange ended and the
 * halo part added; backward, the halo rows of Âᵀ·dY are computed first, their return
 * begun, the inner rows computed with the weight gradients that need no exchange, and
 * the exchange ended. halo_begin / model_poll / halo_end below place the exchange;
 * with --overlap off halo_begin ends it at once and the same ops follow in the same
 * order, so both schedules give the same bits. Between begin and end nothing reads or
 * writes a halo row of the exchanged matrix (core/exchange.h): forward, the inner part
 * reads rows [0, n_in) only, the dropout of the halo rows waits for end; backward, only
 * inner rows are written (SAGE's self term is added into them before end, as the sum
 * was ordered before: Âᵀ dA, + the self term, + the returned gradients).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/exchange.h"
#include "core/log.h"
#include "core/philox.h"
#include "core/status.h"
#include "core/timer.h"
#include "runtime/runtime_internal.h"

/* ---- communication (timed; no-ops for a single process) ---------------------- */

/* Counters of the exchange (zeros without one): each step reports its deltas. */
static void counters_now(const struct rt_model *m, struct cg_exchange_counters *c) {
  memset(c, 0, sizeof *c);
  if (m->ex) m->ex->counters(m->ex, c);
}

static void stats_begin(struct rt_model *m, struct rt_step_stats *st) {
  struct cg_exchange_counters c;
  memset(st, 0, sizeof *st);
  counters_now(m, &c);
  st->halo_bytes = -c.halo_bytes;
  st->allreduce_bytes = -c.allreduce_bytes;
  st->cache_hits = -c.cache_hits;
  st->cache_lookups = -c.cache_lookups;
  st->inter_node_bytes = -c.inter_node_bytes;
}

static void stats_end(struct rt_model *m, struct rt_step_stats *st) {
  struct cg_exchange_counters c;
  counters_now(m, &c);
  st->halo_bytes += c.halo_bytes;
  st->allreduce_bytes += c.allreduce_bytes;
  st->cache_hits += c.cache_hits;
  st->cache_lookups += c.cache_lookups;
  st->inter_node_bytes += c.inter_node_bytes;
}

/* The halo exchange of layer l's x (forward) or gradient dx (backward), in three
 * calls: begin, progress points (model_poll, between the inner blocks and the other
 * work that needs no halo row), end. The backend is synchronised before each call and
 * after end, so that comm_s holds only communication (and waiting for peers), never
 * queued compute; the time inside the calls is comm_exposed_s, the time the exchange
 * was in flight while the step computed comm_hidden_s (runtime.h). With --overlap off
 * the whole exchange runs at halo_end (begin and end back to back): by then
 * everything the exchange reads is computed (backward: the inner rows it adds into),
 * and nothing after it needed it earlier (forward: only the halo part reads halo rows). */
static int halo_begin(struct rt_model *m, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                      int64_t cols, struct rt_step_stats *st) {
  if (!rt_local_exchanges(m->loc)) return CG_OK;
  m->flight.open = 1;
  m->flight.done = 0;
  m->flight.dir = dir;
  m->flight.tag = tag;
  m->flight.x = x;
  m->flight.cols = cols;
  m->flight.t_polls = 0.0;
  m->flight.t_open = 0.0;
  m->flight.t_begin = 0.0;
  m->flight.polls = 0;
  if (!m->cfg.overlap) return CG_OK; /* halo_end runs it */
  m->be->sync(m->be);
  const double t0 = cg_time_now();
  const int rc = m->ex->halo_begin(m->ex, dir, tag, x, cols);
  const double t1 = cg_time_now();
  st->comm_s += t1 - t0;
  st->comm_exposed_s += t1 - t0;
  m->flight.t_open = t1;
  m->flight.t_begin = t1 - t0;
  TRY(rc);
  return CG_OK;
}

/* A progress point: lets the exchange in flight move (core/exchange.h, Progress) once
 * the compute enqueued so far is done; notes when its transfer is seen complete. */
static int model_poll(struct rt_model *m, struct rt_step_stats *st) {
  if (!m->flight.open || m->flight.done || !m->cfg.overlap || !m->ex->halo_progress) return CG_OK;
  m->be->sync(m->be);
  const double t0 = cg_time_now();
  const int rc = m->ex->halo_progress(m->ex);
  const double t1 = cg_time_now();
  m->flight.t_polls += t1 - t0;
  m->flight.polls++;
  st->comm_s += t1 - t0;
  st->comm_exposed_s += t1 - t0;
  TRY(rc);
  if (rc == 1) {
    m->flight.done = 1;
    st->comm_hidden_s += t1 - m->flight.t_open - m->flight.t_polls;
  }
  return CG_OK;
}

/* (for the products' poll callback) */
struct poll_ctx {
  struct rt_model *m;
  struct rt_step_stats *st;
};
static int poll_cb(void *ctx) {
  struct poll_ctx *p = ctx;
  return model_poll(p->m, p->st);
}

static int halo_end(struct rt_model *m, struct rt_step_stats *st) {
  if (!m->flight.open) return CG_OK; /* no exchange */
  m->flight.open = 0;
  m->be->sync(m->be);
  const double t0 = cg_time_now();
  int rc = CG_OK;
  if (m->cfg.overlap) {
    if (!m->flight.done) st->comm_hidden_s += t0 - m->flight.t_open - m->flight.t_polls;
  } else {
    rc = m->ex->halo_begin(m->ex, m->flight.dir, m->flight.tag, m->flight.x, m->flight.cols);
  }
  if (rc >= 0) rc = m->ex->halo_end(m->ex, m->flight.dir, m->flight.tag, m->flight.x, m->flight.cols);
  m->be->sync(m->be);
  const double t1 = cg_time_now();
  st->comm_s += t1 - t0;
  st->comm_exposed_s += t1 - t0;
  TRY(rc);
  LOG_DEBUG("train", "halo exchange layer %d %s (%lld cols, epoch %u): begin %.3f ms, %d progress "
            "calls %.3f ms%s, end %.3f ms%s", m->flight.tag.layer,
            m->flight.dir == CG_HALO_FORWARD ? "forward" : "backward", (long long)m->flight.cols,
            m->flight.tag.epoch, m->flight.t_begin * 1e3, m->flight.polls, m->flight.t_polls * 1e3,
            m->flight.done ? " (saw it complete)" : "", (t1 - t0) * 1e3,
            m->cfg.overlap ? "" : " (overlap off: the whole exchange)");
  return CG_OK;
}

/* What the exchanges of layer l move (core/exchange.h): a training step's rows carry
 * its epoch, evaluation's (no dropout) epoch 0. */
static struct cg_halo_tag halo_tag(int layer, uint32_t epoch, int train) {
  struct cg_halo_tag t;
  t.layer = layer;
  t.epoch = train ? epoch : 0u;
  return t;
}

/* Sum of a few host values over the ranks (losses, evaluation counts). */
static int model_reduce_host(struct rt_model *m, double *v, int n, struct rt_step_stats *st) {
  if (!rt_local_exchanges(m->loc)) return CG_OK;
  double t0 = cg_time_now();
  int rc = m->ex->allreduce_host(m->ex, v, n, CG_REDUCE_SUM);
  st->comm_s += cg_time_now() - t0;
  TRY(rc);
  return CG_OK;
}

/* The one all-reduce of the flat gradient per step. */
static int model_reduce_grads(struct rt_model *m, struct rt_step_stats *st) {
  if (!rt_local_exchanges(m->loc)) return CG_OK;
  m->be->sync(m->be);
  double t0 = cg_time_now();
  int rc = m->ex->allreduce_grads(m->ex, m->g, m->nparams);
  m->be->sync(m->be);
  st->comm_s += cg_time_now() - t0;
  TRY(rc);
  return CG_OK;
}

/* The same placement for the other models' files (runtime_internal.h). */
int rt_model_halo_begin(struct rt_model *m, enum cg_halo_dir dir, int layer, uint32_t epoch, int train,
                        float *x, int64_t cols, struct rt_step_stats *st) {
  return halo_begin(m, dir, halo_tag(layer, epoch, train), x, cols, st);
}
int rt_model_poll(struct rt_model *m, struct rt_step_stats *st) { return model_poll(m, st); }
int rt_model_halo_end(struct rt_model *m, struct rt_step_stats *st) { return halo_end(m, st); }

/* ---- forward ------------------------------------------------------------------ */

static struct cg_dropout_key drop_key(const struct rt_model *m, uint32_t epoch, int layer) {
  struct cg_dropout_key k;
  k.seed = m->cfg.seed;
  k.epoch = epoch;
  k.layer = (uint32_t)layer;
  return k;
}

static const float *layer_hd(const struct rt_model *m, const struct rt_layer *L) {
  return (m->last_fwd_train && L->p_drop > 0.0f) ? L->in_d : L->in;
}
/* Sparse features: the stored values layer 0 multiplied in the last forward. */
static const float *xs_hd(const struct rt_model *m) {
  return (m->last_fwd_train && m->layers[0].p_drop > 0.0f) ? m->xs_vals_d : m->xs_vals;
}

static int forward(struct rt_model *m, uint32_t epoch, int train, struct rt_step_stats *st) {
  if (m->cfg.model == RT_MODEL_GAT) return rt_gat_forward(m, epoch, train, st); /* model_gat.c */
  struct cg_backend *be = m->be;
  const int64_t n_in = m->n_in, n_tot = m->n_tot, n_halo = n_tot - n_in;
  struct poll_ctx pc = {m, st};
  m->last_fwd_train = train;
  m->last_fwd_epoch = epoch;
  for (int l = 0; l < m->nlayers; l++) {
    struct rt_layer *L = &m->layers[l];
    const int64_t fin = L->fin, fout = L->fout;
    const struct cg_halo_tag tag = halo_tag(l, epoch, train);
    const int drop = train && L->p_drop > 0.0f;
    const struct cg_dropout_key key = drop_key(m, epoch, l);
    const float *hd = drop ? L->in_d : L->in;
    const float *w = m->p + L->off_w;
    if (l > 0 && !L->transform_first) {
      /* aggregate-first: the input's halo rows arrive while the inner part runs; their
       * dropout (keyed by global id: the owner's mask) waits for them */
      TRY(halo_begin(m, CG_HALO_FORWARD, tag, L->in, fin, st));
      if (drop) be->dropout(be, L->in, L->in_d, n_in, fin, m->d_gid, L->p_drop, key);
      TRY(rt_agg_fwd_inner(be, &m->agg, hd, fin, L->agg, poll_cb, &pc));
      TRY(halo_end(m, st));
      if (drop && n_halo > 0)
        be->dropout(be, L->in + n_in * fin, L->in_d + n_in * fin, n_halo, fin, m->d_gid + n_in,
                    L->p_drop, key);
      rt_agg_fwd_halo(be, &m->agg, hd, fin, L->agg, m->agg.hbuf);
      be->gemm(be, 0, 0, n_in, fout, fin, 1.0f, L->agg, fin, w, fout, 0.0f, L->z, fout);
    } else {
      /* layer 0 reads all n_tot rows (its halo rows are local) unless it is exchanged
       * (--layer0-halo exchange); a transform-first hidden layer (and an exchanged
       * layer 0) transforms its inner rows and exchanges the (narrower) result */
      const int64_t rows = l == 0 ? m->l0_rows : n_in;
      const int exchanged = l > 0 || m->l0x;
      const int sparse = l == 0 && m->xs_on; /* transform-first: X·W as a sparse product */
      if (sparse) {
        if (drop) be->csr_dropout(be, &m->xs, m->xs_vals, m->xs_vals_d, m->d_gid, L->p_drop, key);
        be->csr_mm(be, &m->xs, drop ? m->xs_vals_d : m->xs_vals, fout, w, fout, L->t, fout);
      } else if (drop) {
        be->dropout(be, L->in, L->in_d, rows, fin, m->d_gid, L->p_drop, key);
      }
      if (L->transform_first) {
        if (!sparse) be->gemm(be, 0, 0, rows, fout, fin, 1.0f, hd, fin, w, fout, 0.0f, L->t, fout);
        if (exchanged) TRY(halo_begin(m, CG_HALO_FORWARD, tag, L->t, fout, st));
        TRY(rt_agg_fwd_inner(be, &m->agg, L->t, fout, L->z, poll_cb, &pc));
        TRY(halo_end(m, st));
        rt_agg_fwd_halo(be, &m->agg, L->t, fout, L->z, m->agg.hbuf);
      } else {
        if (!L->agg_cached) {
          TRY(rt_agg_fwd_inner(be, &m->agg, hd, fin, L->agg, NULL, NULL));
          rt_agg_fwd_halo(be, &m->agg, hd, fin, L->agg, m->agg.hbuf);
        }
        be->gemm(be, 0, 0, n_in, fout, fin, 1.0f, L->agg, fin, w, fout, 0.0f, L->z, fout);
      }
    }
    if (L->off_ws >= 0 && l == 0 && m->xs_on) { /* SAGE's self term of sparse features (scratch is
                                                   free during the forward pass) */
      be->csr_mm(be, &m->xs_in, drop ? m->xs_vals_d : m->xs_vals, fout, m->p + L->off_ws, fout, m->scratch[2],
                 fout);
      be->axpy(be, n_in * fout, 1.0f, m->scratch[2], L->z);
    } else if (L->off_ws >= 0) {
      be->gemm(be, 0, 0, n_in, fout, fin, 1.0f, hd, fin, m->p + L->off_ws, fout, 1.0f, L->z, fout);
    }
    be->bias_add(be, L->z, m->p + L->off_b, n_in, fout);
    if (L->hidden) {
      const float *act_in = L->z;
      if (L->ln_y) {
        be->layernorm_fwd(be, L->z, n_in, fout, m->p + L->off_g, m->p + L->off_beta, RT_LN_EPS,
                          L->ln_y, L->ln_mean, L->ln_rstd);
        act_in = L->ln_y;
      }
      be->relu_fwd(be, act_in, m->layers[l + 1].in, n_in * fout);
    }
  }
  return CG_OK;
}

/* Loss over the train rows: dlogits lands in scratch[0] (scaled for the mean over all
 * train vertices of the graph); returns the global mean loss. */
static int loss_train(struct rt_model *m, double *loss, struct rt_step_stats *st) {
  struct cg_backend *be = m->be;
  const struct rt_layer *last = &m->layers[m->nlayers - 1];
  double sum = 0.0;
  double denom = (double)m->n_split_global[0];
  if (m->loc->multilabel) {
    denom *= (double)m->classes;
    be->bce(be, last->z, m->n_in, m->classes, m->d_mlabels, m->d_idx[0], m->n_idx[0],
            (float)(1.0 / denom), m->scratch[0], &sum);
  } else {
    be->xent(be, last->z, m->n_in, m->classes, m->d_labels, m->d_idx[0], m->n_idx[0],
             (float)(1.0 / denom), m->scratch[0], &sum);
  }
  TRY(model_reduce_host(m, &sum, 1, st));
  *loss = sum / denom;
  return CG_OK;
}

/* ---- backward ---------------------------------------------------------------- */

/* SAGE's self term backward: its weight gradient (needs no exchange) and, l > 0, its
 * share of dHd's inner rows. */
static void sage_self_grad(struct rt_model *m, const struct rt_layer *L, const float *hd,
                           const float *dz) {
  struct cg_backend *be = m->be;
  if (L == &m->layers[0] && m->xs_on) {
    be->csr_mm_t(be, &m->xs_in, xs_hd(m), L->fout, dz, L->fout, m->g + L->off_ws, L->fout);
    return;
  }
  be->gemm(be, 1, 0, L->fin, L->fout, m->n_in, 1.0f, hd, L->fin, dz, L->fout, 0.0f,
           m->g + L->off_ws, L->fout);
}
static void sage_self_dx(struct rt_model *m, const struct rt_layer *L, const float *dz, float *dhd) {
  struct cg_backend *be = m->be;
  be->gemm(be, 0, 1, m->n_in, L->fin, L->fout, 1.0f, dz, L->fout, m->p + L->off_ws, L->fout, 1.0f,
           dhd, L->fin);
}

static int backward(struct rt_model *m, struct rt_step_stats *st) {
  if (m->cfg.model == RT_MODEL_GAT) return rt_gat_backward(m, st); /* model_gat.c */
  struct cg_backend *be = m->be;
  const int64_t n_in = m->n_in;
  struct poll_ctx pc = {m, st};
  float *dz = m->scratch[0]; /* dlogits from the loss */
  for (int l = m->nlayers - 1; l >= 0; l--) {
    struct rt_layer *L = &m->layers[l];
    const int64_t fin = L->fin, fout = L->fout;
    const int sage = L->off_ws >= 0;
    float *q = NULL, *r = NULL; /* the two scratch buffers not holding dz */
    for (int s = 0; s < 3; s++) {
      if (m->scratch[s] == dz) continue;
      if (!q) q = m->scratch[s];
      else r = m->scratch[s];
    }
    const float *hd = layer_hd(m, L);
    const float *w = m->p + L->off_w;
    float *gw = m->g + L->off_w;
    float *dhd = r; /* gradient w.r.t. this layer's (dropped) input, l > 0 */
    const struct cg_halo_tag tag = halo_tag(l, m->last_fwd_epoch, m->last_fwd_train);

    be->bias_grad(be, dz, n_in, fout, m->g + L->off_b);
    if (L->transform_first) {
      /* dT = Âᵀ dZ over n_tot rows: the halo rows first, then their return to the owners
       * runs while the inner rows and SAGE's self weight gradient are computed */
      float *dt = q;
      rt_agg_bwd_halo(be, &m->agg, dz, fout, dt);
      if (l > 0 || m->l0x) TRY(halo_begin(m, CG_HALO_BACKWARD, tag, dt, fout, st));
      TRY(rt_agg_bwd_inner(be, &m->agg, dz, fout, dt, poll_cb, &pc));
      if (sage) {
        sage_self_grad(m, L, hd, dz);
        TRY(model_poll(m, st));
      }
      TRY(halo_end(m, st)); /* owners have added the halo rows of dT */
      if (l == 0) {
        /* Local: all n_tot rows of T were computed here from local input rows. Exchanged:
         * the inner rows only, whose dT now includes what the other ranks sent back. */
        if (m->xs_on) be->csr_mm_t(be, &m->xs, xs_hd(m), fout, dt, fout, gw, fout);
        else be->gemm(be, 1, 0, fin, fout, m->l0_rows, 1.0f, hd, fin, dt, fout, 0.0f, gw, fout);
      } else {
        be->gemm(be, 1, 0, fin, fout, n_in, 1.0f, hd, fin, dt, fout, 0.0f, gw, fout);
        be->gemm(be, 0, 1, n_in, fin, fout, 1.0f, dt, fout, w, fout, 0.0f, dhd, fin);
        if (sage) sage_self_dx(m, L, dz, dhd);
      }
    } else if (l > 0) {
      /* dHd = Âᵀ dA over n_tot rows: the halo rows first, then their return runs while
       * the inner rows, the weight gradients and SAGE's self term are computed */
      float *da = q;
      be->gemm(be, 0, 1, n_in, fin, fout, 1.0f, dz, fout, w, fout, 0.0f, da, fin);
      rt_agg_bwd_halo(be, &m->agg, da, fin, dhd);
      TRY(halo_begin(m, CG_HALO_BACKWARD, tag, dhd, fin, st));
      TRY(rt_agg_bwd_inner(be, &m->agg, da, fin, dhd, poll_cb, &pc));
      be->gemm(be, 1, 0, fin, fout, n_in, 1.0f, L->agg, fin, dz, fout, 0.0f, gw, fout);
      TRY(model_poll(m, st));
      if (sage) {
        sage_self_grad(m, L, hd, dz);
        sage_self_dx(m, L, dz, dhd); /* inner rows, before the returned gradients */
        TRY(model_poll(m, st));
      }
      TRY(halo_end(m, st)); /* owners have added the halo rows of dHd */
    } else {
      be->gemm(be, 1, 0, fin, fout, n_in, 1.0f, L->agg, fin, dz, fout, 0.0f, gw, fout);
      if (sage) sage_self_grad(m, L, hd, dz);
    }
    if (l == 0) break; /* no gradient w.r.t. the input features */
    /* Inner rows of dhd now hold the full gradient w.r.t. Hd; undo dropout and the previous
     * layer's ReLU, then its LayerNorm. With dropout both at once from Hd itself (Hd > 0
     * exactly where the ReLU output was > 0 and kept: the same bits as the mask drawn
     * again, core/ops.h), so the backward draws no random numbers. */
    if (m->last_fwd_train && L->p_drop > 0.0f)
      be->dropout_relu_bwd(be, L->in_d, dhd, n_in * fin, 1.0f / (1.0f - L->p_drop));
    else
      be->relu_bwd(be, L->in, dhd, n_in * fin);
    struct rt_layer *P = &m->layers[l - 1];
    if (P->ln_y) {
      float *dzp = q; /* q is free again: dT / dA are consumed */
      be->layernorm_bwd(be, dhd, P->z, P->ln_mean, P->ln_rstd, m->p + P->off_g, n_in, P->fout, dzp,
                        m->g + P->off_g, m->g + P->off_beta);
      dz = dzp;
    } else {
      dz = dhd;
    }
  }
  return CG_OK;
}

/* ---- public steps ------------------------------------------------------------ */

int rt_model_loss(struct rt_model *m, uint32_t epoch, int train, double *loss) {
  struct rt_step_stats st;
  stats_begin(m, &st);
  TRY(forward(m, epoch, train, &st));
  TRY(loss_train(m, loss, &st));
  return CG_OK;
}

int rt_model_loss_grad(struct rt_model *m, uint32_t epoch, int train, double *loss,
                       struct rt_step_stats *st) {
  struct rt_step_stats local;
  if (!st) st = &local;
  stats_begin(m, st);
  TRY(forward(m, epoch, train, st));
  TRY(loss_train(m, loss, st));
  TRY(backward(m, st));
  TRY(model_reduce_grads(m, st));
  stats_end(m, st);
  st->loss = *loss;
  return CG_OK;
}

int rt_model_step(struct rt_model *m, uint32_t epoch, struct rt_step_stats *st) {
  struct rt_step_stats local;
  if (!st) st = &local;
  double loss = 0.0;
  TRY(rt_model_loss_grad(m, epoch, 1, &loss, st));
  m->t_step++;
  rt_model_optimizer_step(m); /* runtime/optimizer.c */
  return CG_OK;
}

int rt_model_evaluate(struct rt_model *m, struct rt_eval *ev, struct rt_step_stats *st) {
  struct rt_step_stats local;
  if (!st) st = &local;
  stats_begin(m, st);
  struct cg_backend *be = m->be;
  TRY(forward(m, 0, 0, st));
  const struct rt_layer *last = &m->layers[m->nlayers - 1];
  const int ml = m->loc->multilabel;
  double v[11];
  for (int s = 0; s < 3; s++) {
    int64_t c[3] = {0, 0, 0};
    be->eval_counts(be, last->z, m->n_in, m->classes, ml ? NULL : m->d_labels,
                    ml ? m->d_mlabels : NULL, m->d_idx[s], m->n_idx[s], c);
    v[3 * s + 0] = (double)c[0];
    v[3 * s + 1] = (double)c[1];
    v[3 * s + 2] = (double)c[2];
  }
  /* Train and validation losses (unscaled sums; dlogits goes to scratch and is unused). */
  for (int s = 0; s < 2; s++) {
    double sum = 0.0;
    if (ml)
      be->bce(be, last->z, m->n_in, m->classes, m->d_mlabels, m->d_idx[s], m->n_idx[s], 1.0f,
              m->scratch[0], &sum);
    else
      be->xent(be, last->z, m->n_in, m->classes, m->d_labels, m->d_idx[s], m->n_idx[s], 1.0f,
               m->scratch[0], &sum);
    v[9 + s] = sum;
  }
  TRY(model_reduce_host(m, v, 11, st));
  double acc[3];
  for (int s = 0; s < 3; s++) {
    if (ml) {
      double tp = v[3 * s], fp = v[3 * s + 1], fn = v[3 * s + 2];
      acc[s] = (2.0 * tp + fp + fn) > 0.0 ? 2.0 * tp / (2.0 * tp + fp + fn)
                                          : (m->n_split_global[s] > 0 ? 1.0 : NAN);
    } else {
      acc[s] = m->n_split_global[s] > 0 ? v[3 * s] / (double)m->n_split_global[s] : NAN;
    }
  }
  ev->train_acc = acc[0];
  ev->val_acc = acc[1];
  ev->test_acc = acc[2];
  const double per = ml ? (double)m->classes : 1.0;
  ev->train_loss = m->n_split_global[0] > 0 ? v[9] / ((double)m->n_split_global[0] * per) : NAN;
  ev->val_loss = m->n_split_global[1] > 0 ? v[10] / ((double)m->n_split_global[1] * per) : NAN;
  stats_end(m, st);
  return CG_OK;
}
