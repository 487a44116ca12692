/* rapa/cost.c — the loads of a partition and the cost model of one training step
 * (rapa/balance.h).
 *
 * Design notes (the why):
 * - The model walks the ops runtime/model.c runs, with the same schedule rules
 *   (runtime/model_build.c: a layer transforms first when fout < fin, layer 0 without
 *   input dropout aggregates once at set-up; with --layer0-halo exchange layer 0
 *   transforms first over its inner rows and is exchanged like a hidden layer), so a change of schedule there is a change
 *   here; counting the real ops rather than "edges and vertices" (the paper's Eq. 14)
 *   is what lets the prediction be compared with measured times at all.
 * - Dropout is priced separately from memory traffic: its counter-based RNG costs far
 *   more than the bytes it moves on a CPU (rapa_rates.rng_eps).
 * - The exchange is priced per peer, both directions, latency plus bytes over the
 *   link's bandwidth: a conservative sum (a neighbourhood exchange may overlap peers),
 *   which is what the partitioner needs to compare splits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "rapa/balance.h"

int rapa_links_alloc(struct rapa_links *l, int P) {
  memset(l, 0, sizeof *l);
  if (P < 1) return cg_err_set(CG_ERR_ARG, "rapa_links_alloc: %d ranks", P);
  l->P = P;
  l->bw_bps = cg_calloc((size_t)P * (size_t)P, sizeof(double), "link bandwidths");
  l->lat_s = cg_calloc((size_t)P * (size_t)P, sizeof(double), "link latencies");
  if (!l->bw_bps || !l->lat_s) {
    rapa_links_free(l);
    return CG_ERR_NOMEM;
  }
  return CG_OK;
}

void rapa_links_free(struct rapa_links *l) {
  if (!l) return;
  cg_free(l->bw_bps);
  cg_free(l->lat_s);
  memset(l, 0, sizeof *l);
}

void rapa_loads_free(struct rapa_load *loads, int P) {
  if (!loads) return;
  for (int p = 0; p < P; p++) {
    cg_free(loads[p].recv_rows);
    cg_free(loads[p].send_rows);
    memset(&loads[p], 0, sizeof loads[p]);
  }
}

int rapa_loads_compute(const struct graph *g, const int32_t *owner, int P, int self_loops, struct rapa_load *loads) {
  if (!g || !owner || !loads || P < 1 || !g->rowptr)
    return cg_err_set(CG_ERR_ARG, "rapa_loads_compute: missing graph, owners or loads");
  memset(loads, 0, (size_t)P * sizeof *loads);
  int st = CG_OK;
  int32_t *stamp = cg_malloc((size_t)(g->n > 0 ? g->n : 1) * sizeof *stamp, "halo marks");
  if (!stamp) return CG_ERR_NOMEM;
  for (int p = 0; p < P && st == CG_OK; p++) {
    loads[p].recv_rows = cg_calloc((size_t)P, sizeof(int64_t), "halo rows per peer");
    loads[p].send_rows = cg_calloc((size_t)P, sizeof(int64_t), "rows sent per peer");
    if (!loads[p].recv_rows || !loads[p].send_rows) st = CG_ERR_NOMEM;
  }
  if (st != CG_OK) {
    cg_free(stamp);
    rapa_loads_free(loads, P);
    return st;
  }
  /* stamp[u] = the last part that counted u as its halo; vertices visited part by part
   * would need a grouping pass, but a stamp per (u, part) is only needed for the current
   * part, so visit vertices grouped by owner through a counting sort */
  int64_t *start = cg_calloc((size_t)P + 1, sizeof *start, "vertices per part");
  int32_t *order = cg_malloc((size_t)(g->n > 0 ? g->n : 1) * sizeof *order, "vertices by part");
  if (!start || !order) {
    cg_free(start);
    cg_free(order);
    cg_free(stamp);
    rapa_loads_free(loads, P);
    return CG_ERR_NOMEM;
  }
  for (int64_t v = 0; v < g->n; v++) {
    if (owner[v] < 0 || owner[v] >= P) {
      st = cg_err_set(CG_ERR_ARG, "rapa_loads_compute: owner[%lld] = %d outside [0, %d)", (long long)v, owner[v], P);
      break;
    }
    start[owner[v] + 1]++;
  }
  if (st == CG_OK) {
    for (int p = 0; p < P; p++) start[p + 1] += start[p];
    int64_t *cur = cg_malloc((size_t)P * sizeof *cur, "part cursors");
    if (!cur) st = CG_ERR_NOMEM;
    else {
      memcpy(cur, start, (size_t)P * sizeof *cur);
      for (int64_t v = 0; v < g->n; v++) order[cur[owner[v]]++] = (int32_t)v;
      cg_free(cur);
    }
  }
  if (st == CG_OK) {
    for (int64_t v = 0; v < g->n; v++) stamp[v] = -1;
    for (int p = 0; p < P; p++) {
      struct rapa_load *L = &loads[p];
      for (int64_t i = start[p]; i < start[p + 1]; i++) {
        const int32_t v = order[i];
        L->n_inner++;
        L->nnz += g->rowptr[v + 1] - g->rowptr[v] + (self_loops ? 1 : 0);
        for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
          const int32_t u = g->colidx[k];
          if (owner[u] == p || stamp[u] == p) continue;
          stamp[u] = p;
          L->n_halo++;
          L->recv_rows[owner[u]]++;
        }
      }
    }
    for (int p = 0; p < P; p++)
      for (int q = 0; q < P; q++) loads[q].send_rows[p] = loads[p].recv_rows[q];
  }
  cg_free(start);
  cg_free(order);
  cg_free(stamp);
  if (st != CG_OK) rapa_loads_free(loads, P);
  return st;
}

int64_t rapa_shape_params(const struct rapa_shape *s) {
  int64_t n = 0;
  for (int l = 0; l < s->layers; l++) {
    const int64_t fin = l == 0 ? s->features : s->hidden, fout = l == s->layers - 1 ? s->classes : s->hidden;
    n += fin * fout * (s->sage ? 2 : 1) + fout;
  }
  return n;
}

/* The work of one training step on n_in inner and n_tot = n_in + n_halo rows with nnz
 * aggregation nonzeros, op by op as runtime/model.c runs them. */
struct work {
  double gemm, spmm, mem, rng, ops, adam;
  double csr, csr_t, csr_drop; /* sparse features: X·W, Xᵀ·dT (stored entries x width), dropout (entries) */
  double memory; /* bytes of the model's buffers */
};

static void step_work(const struct rapa_shape *s, int64_t n_in, int64_t n_halo, int64_t nnz, struct work *w) {
  memset(w, 0, sizeof *w);
  const double ni = (double)n_in, nt = (double)(n_in + n_halo), z = (double)nnz;
  double wmax = (double)s->classes;
  for (int l = 0; l < s->layers; l++) {
    const double fin = (double)(l == 0 ? s->features : s->hidden);
    const double fout = (double)(l == s->layers - 1 ? s->classes : s->hidden);
    const double p = l == 0 ? s->input_dropout : s->dropout;
    const int x0 = l == 0 && s->layer0_exchange; /* layer 0 over the inner rows, exchanged */
    const int sp = l == 0 && s->feat_density > 0; /* sparse features: CSR products */
    const double dens = sp ? s->feat_density : 1.0;
    const int cached = l == 0 && p == 0.0 && !x0 && !sp;
    const int tf = (fout < fin && !cached) || x0 || sp;
    const int hidden = l < s->layers - 1;
    const double rows = ((l == 0 && !x0) || !tf) ? nt : ni;
    if (fout > wmax) wmax = fout;
    if (l > 0 && fin > wmax) wmax = fin;
    /* ---- forward ---- */
    if (p > 0.0 && sp) { w->csr_drop += rows * fin * dens; w->ops++; }
    else if (p > 0.0) { w->rng += rows * fin; w->mem += 8.0 * rows * fin; w->ops++; }
    if (sp) { /* X·W over the stored entries, then the aggregation */
      w->csr += rows * fin * dens * fout;
      w->spmm += z * fout;
      w->ops += 2;
    } else if (tf) {
      w->gemm += 2.0 * rows * fin * fout;
      w->spmm += z * fout;
      w->ops += 2;
    } else {
      if (!cached) { w->spmm += z * fin; w->ops++; }
      w->gemm += 2.0 * ni * fin * fout;
      w->ops++;
    }
    if (s->sage) {
      if (sp) w->csr += ni * fin * dens * fout;
      else w->gemm += 2.0 * ni * fin * fout;
      w->ops++;
    }
    w->mem += 8.0 * ni * fout; /* bias_add */
    w->ops++;
    if (hidden) { w->mem += 8.0 * ni * fout; w->ops++; } /* relu */
    /* ---- backward ---- */
    w->mem += 4.0 * ni * fout; /* bias_grad */
    w->ops++;
    if (sp) { /* dT = Âᵀ dZ, then Xdᵀ·dT over the stored entries */
      w->spmm += z * fout;
      w->csr_t += rows * fin * dens * fout;
      w->ops += 2;
    } else if (tf) {
      w->spmm += z * fout;
      w->gemm += 2.0 * (l == 0 && !x0 ? nt : ni) * fin * fout;
      w->ops += 2;
      if (l > 0) { w->gemm += 2.0 * ni * fin * fout; w->ops++; }
    } else {
      w->gemm += 2.0 * ni * fin * fout;
      w->ops++;
      if (l > 0) { w->gemm += 2.0 * ni * fin * fout; w->spmm += z * fin; w->ops += 2; }
    }
    if (s->sage) {
      if (sp) w->csr_t += ni * fin * dens * fout;
      else w->gemm += 2.0 * ni * fin * fout;
      w->ops++;
      if (l > 0) { w->gemm += 2.0 * ni * fin * fout; w->ops++; }
    }
    if (l > 0) { /* relu_bwd, or with dropout dropout_relu_bwd: one pass, no mask drawn */
      w->mem += 12.0 * ni * fin;
      w->ops++;
    }
    /* ---- buffers (runtime/model_build.c) ---- */
    if (sp) { /* the stored entries (column, value) and row offsets, their transpose, the dropout's values */
      w->memory += 2.0 * (8.0 * rows * fin * dens + 8.0 * rows);
      if (p > 0.0) w->memory += 4.0 * rows * fin * dens;
    } else {
      w->memory += 4.0 * (x0 ? ni : nt) * fin;   /* in (layer 0: the features; exchanged, inner rows only) */
      if (p > 0.0) w->memory += 4.0 * rows * fin; /* in_d */
    }
    if (tf) w->memory += 4.0 * nt * fout;        /* t */
    else w->memory += 4.0 * ni * fin;            /* agg */
    w->memory += 4.0 * ni * fout;                /* z */
  }
  const double params = (double)rapa_shape_params(s);
  w->mem += 12.0 * ni * (double)s->classes; /* the loss and its gradient */
  w->ops++;
  w->adam += params; /* Adam (priced at adam_eps, or 28 bytes each at mem_bps) */
  w->ops += 2.0 * s->layers * (s->sage ? 3 : 2);
  w->memory += 3.0 * 4.0 * nt * wmax;             /* backward scratch */
  w->memory += 2.0 * (8.0 * z + 8.0 * (ni + nt)); /* Â and Âᵀ: columns, values, offsets */
  w->memory += 16.0 * params;                     /* parameters, gradients, Adam moments */
  w->memory += 4.0 * nt + 12.0 * ni;              /* global ids, labels, split indices */
}

int rapa_cost_rank(const struct rapa_shape *s, const struct rapa_load *load, const struct rapa_rates *r,
                   const struct rapa_links *links, int i, int P, struct rapa_cost *out) {
  memset(out, 0, sizeof *out);
  if (!s || !load || !r || s->layers < 1 || s->features < 1 || s->hidden < 1 || s->classes < 1)
    return cg_err_set(CG_ERR_ARG, "rapa_cost_rank: incomplete model shape or load");
  if (!(r->gemm_flops > 0) || !(r->spmm_rate > 0) || !(r->mem_bps > 0) || !(r->rng_eps > 0) || !(r->op_s >= 0))
    return cg_err_set(CG_ERR_ARG, "rapa_cost_rank: rank %d has a rate that is not positive (gemm %g, spmm %g, "
                      "mem %g, rng %g, op %g)", i, r->gemm_flops, r->spmm_rate, r->mem_bps, r->rng_eps, r->op_s);
  if (links && (links->P != P || i < 0 || i >= P))
    return cg_err_set(CG_ERR_ARG, "rapa_cost_rank: rank %d, links of %d ranks, job of %d", i, links->P, P);
  struct work w;
  step_work(s, load->n_inner, load->n_halo, load->nnz, &w);
  out->gemm_flops = w.gemm;
  out->spmm_nnzcols = w.spmm;
  out->mem_bytes = w.mem;
  out->ops = w.ops;
  out->adam_params = w.adam;
  out->csr_nnzcols = w.csr;
  out->csr_t_nnzcols = w.csr_t;
  out->csr_drop = w.csr_drop;
  /* the sparse-feature ops at their own measured rates; unmeasured (a profile, declared
   * rates): the aggregation's SpMM rate, and a dropout draw plus 8 bytes per entry */
  const double csr_rate = r->csr_rate > 0 ? r->csr_rate : r->spmm_rate;
  const double csr_t_rate = r->csr_t_rate > 0 ? r->csr_t_rate : r->spmm_rate;
  const double drop_s = r->csr_drop_eps > 0 ? w.csr_drop / r->csr_drop_eps
                                            : w.csr_drop / r->rng_eps + 8.0 * w.csr_drop / r->mem_bps;
  /* the optimizer at its own measured rate; unmeasured: the bytes it moves */
  const double adam_s = r->adam_eps > 0 ? w.adam / r->adam_eps : 28.0 * w.adam / r->mem_bps;
  out->comp_s = w.gemm / r->gemm_flops + w.spmm / r->spmm_rate + w.mem / r->mem_bps + w.rng / r->rng_eps +
                w.csr / csr_rate + w.csr_t / csr_t_rate + drop_s + adam_s + w.ops * r->op_s;
  out->memory_bytes = w.memory;
  out->fits = !(r->free_bytes > 0) || w.memory <= r->free_bytes;
  if (links && P > 1) {
    /* hidden layers' exchanges (and layer 0's when it is exchanged): forward rows and
     * backward gradients, at the width the model exchanges (the transformed rows when a
     * layer transforms first; an exchanged layer 0 always does) */
    double comm = 0, bytes = 0, staged = 0;
    for (int l = s->layer0_exchange ? 0 : 1; l < s->layers; l++) {
      const double fin = (double)(l == 0 ? s->features : s->hidden);
      const double fout = (double)(l == s->layers - 1 ? s->classes : s->hidden);
      const double width = l == 0 ? fout : fout < fin ? fout : fin;
      for (int q = 0; q < P; q++) {
        if (q == i || (load->recv_rows[q] == 0 && load->send_rows[q] == 0)) continue;
        const double b = 4.0 * width * (double)(load->recv_rows[q] + load->send_rows[q]);
        const double bw = links->bw_bps[(size_t)i * P + q], lat = links->lat_s[(size_t)i * P + q];
        if (!(bw > 0))
          return cg_err_set(CG_ERR_ARG, "rapa_cost_rank: no bandwidth for the link %d -> %d", i, q);
        comm += 2.0 * (lat + b / bw); /* forward and backward */
        bytes += 2.0 * b;
        staged += b; /* rows out (D2H) and in (H2D), forward and backward: b each way */
      }
    }
    if (r->h2d_bps > 0 && r->d2h_bps > 0) comm += staged / r->d2h_bps + staged / r->h2d_bps;
    double bwmin = INFINITY, latmax = 0;
    for (int a = 0; a < P; a++)
      for (int b = 0; b < P; b++) {
        if (a == b) continue;
        if (links->bw_bps[(size_t)a * P + b] < bwmin) bwmin = links->bw_bps[(size_t)a * P + b];
        if (links->lat_s[(size_t)a * P + b] > latmax) latmax = links->lat_s[(size_t)a * P + b];
      }
    const double ar = 2.0 * (P - 1) / P * 4.0 * (double)rapa_shape_params(s);
    comm += links->allreduce_s > 0 ? links->allreduce_s /* the gradient: measured, or a ring */
                                   : ar / bwmin + 2.0 * (P - 1) * latmax;
    comm += 2.0 * (P - 1) * latmax;              /* the loss (a few doubles) */
    out->comm_s = comm;
    out->halo_bytes = bytes;
    out->allreduce_bytes = ar;
  }
  out->lambda_s = out->comp_s + out->comm_s;
  return CG_OK;
}
