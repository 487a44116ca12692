/* partition/assign.c — owner of every vertex: METIS k-way or seeded random.
 *
 * The METIS boundary (idx_t conversion, symmetrisation, status mapping) lives in
 * this file only, so a 64-bit idx_t build of METIS or a different version touches
 * nothing else. */
#include <math.h>
#include <metis.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/philox.h"
#include "core/status.h"
#include "core/timer.h"
#include "partition/part_internal.h"
#include "partition/partition.h"

/* Stream tag of the random partitioner in Philox counter word c1 ("part"), so its
 * draws never coincide with dropout streams keyed by the same seed. */
#define PART_RANDOM_TAG 0x70617274u

const char *part_method_name(enum part_method m) {
  switch (m) {
    case PART_METIS: return "metis";
    case PART_RANDOM: return "random";
  }
  return "unknown";
}

int part_method_parse(const char *name, enum part_method *out) {
  if (name && !strcmp(name, "metis")) {
    *out = PART_METIS;
    return CG_OK;
  }
  if (name && !strcmp(name, "random")) {
    *out = PART_RANDOM;
    return CG_OK;
  }
  return cg_err_set(CG_ERR_ARG, "unknown partition method '%s' (expected metis or random)",
                    name ? name : "(null)");
}

int part_metis_status(int metis_rc, const char *call) {
  switch (metis_rc) {
    case METIS_OK: return CG_OK;
    case METIS_ERROR_INPUT:
      return cg_err_set(CG_ERR_METIS,
                        "%s rejected its input (METIS_ERROR_INPUT); check the graph and the "
                        "partition options (target weights, vertex weights)",
                        call);
    case METIS_ERROR_MEMORY:
      return cg_err_set(CG_ERR_METIS,
                        "%s ran out of memory (METIS_ERROR_MEMORY); use fewer parts or a "
                        "machine with more memory",
                        call);
    case METIS_ERROR:
      return cg_err_set(CG_ERR_METIS, "%s failed (METIS_ERROR)", call);
    default:
      return cg_err_set(CG_ERR_METIS, "%s returned an unknown status %d", call, metis_rc);
  }
}

int part_owner_check(const struct graph *g, const int32_t *owner, int nparts, const char *what) {
  if (!owner) return cg_err_set(CG_ERR_ARG, "%s: owner array is NULL", what);
  for (int64_t v = 0; v < g->n; v++)
    if (owner[v] < 0 || owner[v] >= nparts)
      return cg_err_set(CG_ERR_ARG, "%s: owner[%lld] = %d is outside [0, %d)", what, (long long)v,
                        owner[v], nparts);
  return CG_OK;
}

int part_group_by_owner(const struct graph *g, const int32_t *owner, int nparts, int64_t **start_out,
                        int32_t **order_out) {
  int64_t *start = cg_calloc((size_t)nparts + 1, sizeof *start, "partition group offsets");
  int32_t *order = cg_malloc((size_t)(g->n > 0 ? g->n : 1) * sizeof *order, "partition group order");
  if (!start || !order) {
    cg_free(start);
    cg_free(order);
    return CG_ERR_NOMEM;
  }
  for (int64_t v = 0; v < g->n; v++) start[owner[v] + 1]++;
  for (int p = 0; p < nparts; p++) start[p + 1] += start[p];
  int64_t *cur = cg_malloc((size_t)nparts * sizeof *cur, "partition group cursor");
  if (!cur) {
    cg_free(start);
    cg_free(order);
    return CG_ERR_NOMEM;
  }
  memcpy(cur, start, (size_t)nparts * sizeof *cur);
  for (int64_t v = 0; v < g->n; v++) order[cur[owner[v]]++] = (int32_t)v;
  cg_free(cur);
  *start_out = start;
  *order_out = order;
  return CG_OK;
}

int part_options_check(const struct graph *g, const struct part_options *o) {
  if (!g || !o) return cg_err_set(CG_ERR_ARG, "part_assign: graph and options must not be NULL");
  if (g->n < 1 || !g->rowptr || (g->m > 0 && !g->colidx))
    return cg_err_set(CG_ERR_ARG, "part_assign: graph '%s' is empty or not loaded", g->name);
  if (o->method != PART_METIS && o->method != PART_RANDOM)
    return cg_err_set(CG_ERR_ARG, "part_assign: unknown method %d", (int)o->method);
  if (o->nparts < 1 || (int64_t)o->nparts > g->n)
    return cg_err_set(CG_ERR_ARG,
                      "cannot split graph '%s' (%lld vertices) into %d parts: the number of parts "
                      "must be between 1 and the number of vertices",
                      g->name, (long long)g->n, o->nparts);
  if (o->tpwgts) {
    double sum = 0;
    for (int p = 0; p < o->nparts; p++) {
      float t = o->tpwgts[p];
      if (!(t > 0.0f) || !isfinite(t))
        return cg_err_set(CG_ERR_ARG,
                          "target partition weight %d is %g; every target weight must be a "
                          "positive number",
                          p, (double)t);
      sum += t;
    }
    if (fabs(sum - 1.0) > 1e-3)
      return cg_err_set(CG_ERR_ARG,
                        "target partition weights sum to %.6f; they must sum to 1 (within 1e-3)",
                        sum);
  }
  if (o->vwgt) {
    if (o->method != PART_METIS)
      return cg_err_set(CG_ERR_ARG,
                        "vertex weights are only supported by the metis method, not %s",
                        part_method_name(o->method));
    for (int64_t v = 0; v < g->n; v++)
      if (o->vwgt[v] < 0)
        return cg_err_set(CG_ERR_ARG, "vertex weight of vertex %lld is %lld; weights must be >= 0",
                          (long long)v, (long long)o->vwgt[v]);
  }
  return CG_OK;
}

/* ---- random ---------------------------------------------------------------- */

/* Part sizes: equal (n/P, the first n%P parts one more) or, with target weights,
 * the largest-remainder apportionment of n (ties to the lower part). */
static int random_sizes(int64_t n, const struct part_options *o, int64_t *size) {
  int P = o->nparts;
  if (!o->tpwgts) {
    for (int p = 0; p < P; p++) size[p] = n / P + (p < n % P ? 1 : 0);
    return CG_OK;
  }
  double tsum = 0;
  for (int p = 0; p < P; p++) tsum += o->tpwgts[p];
  double *frac = cg_malloc((size_t)P * sizeof *frac, "random partition remainders");
  if (!frac) return CG_ERR_NOMEM;
  int64_t given = 0;
  for (int p = 0; p < P; p++) {
    double want = (double)o->tpwgts[p] / tsum * (double)n;
    size[p] = (int64_t)floor(want);
    frac[p] = want - (double)size[p];
    given += size[p];
  }
  while (given < n) { /* at most P iterations */
    int best = 0;
    for (int p = 1; p < P; p++)
      if (frac[p] > frac[best]) best = p;
    size[best]++;
    frac[best] = -1.0;
    given++;
  }
  cg_free(frac);
  for (int p = 0; p < P; p++)
    if (size[p] == 0)
      return cg_err_set(CG_ERR_ARG,
                        "target weight %g of part %d gives it no vertex of %lld; raise it or use "
                        "fewer %s",
                        (double)o->tpwgts[p], p, (long long)n, o->parts_are_ranks ? "ranks (mpirun -np)" : "parts");
  return CG_OK;
}

static int assign_random(const struct graph *g, const struct part_options *o, int32_t *owner) {
  int64_t n = g->n;
  int st = CG_OK;
  int64_t *size = cg_malloc((size_t)o->nparts * sizeof *size, "random partition sizes");
  int32_t *perm = cg_malloc((size_t)n * sizeof *perm, "random partition permutation");
  if (!size || !perm) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  TRY_GOTO(random_sizes(n, o, size), done);
  /* Fisher-Yates with one Philox draw per position: the permutation depends only on
   * (seed, n), never on threads or platform. 64 random bits make the modulo bias
   * negligible (< n / 2^64). */
  for (int64_t i = 0; i < n; i++) perm[i] = (int32_t)i;
  uint32_t k0 = (uint32_t)o->seed, k1 = (uint32_t)(o->seed >> 32);
  for (int64_t i = n - 1; i > 0; i--) {
    struct cg_philox_out r = cg_philox4x32_10((uint32_t)i, PART_RANDOM_TAG, (uint32_t)(i >> 32), 0,
                                              k0, k1);
    uint64_t x = ((uint64_t)r.v[1] << 32) | r.v[0];
    int64_t j = (int64_t)(x % (uint64_t)(i + 1));
    int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t pos = 0;
  for (int p = 0; p < o->nparts; p++)
    for (int64_t k = 0; k < size[p]; k++) owner[perm[pos++]] = p;
done:
  cg_free(size);
  cg_free(perm);
  return st;
}

/* ---- METIS --------------------------------------------------------------- */

/* The symmetrised graph in METIS' CSR (idx_t), without self-loops: row u holds the
 * union of u's CSR row and of the rows that list u. For the symmetric graphs of
 * graph.h this is the graph itself; building the union anyway means METIS (which
 * requires symmetry and would misbehave otherwise) is safe on any input. */
static int metis_graph_build(const struct graph *g, idx_t **xadj_out, idx_t **adjncy_out) {
  int64_t n = g->n;
  int st = CG_OK;
  int64_t *tptr = NULL;
  int32_t *tcol = NULL;
  idx_t *xadj = NULL, *adjncy = NULL;
  if (n > (int64_t)IDX_MAX - 1)
    return cg_err_set(CG_ERR_ARG,
                      "graph '%s' has %lld vertices, more than METIS' idx_t (%d bits) can index; "
                      "rebuild METIS with IDXTYPEWIDTH=64",
                      g->name, (long long)n, IDXTYPEWIDTH);
  for (int64_t v = 0; v < n; v++) {
    if (g->rowptr[v + 1] < g->rowptr[v])
      return cg_err_set(CG_ERR_ARG, "graph '%s': rowptr decreases at row %lld", g->name,
                        (long long)v);
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
      if (g->colidx[k] < 0 || g->colidx[k] >= n)
        return cg_err_set(CG_ERR_ARG, "graph '%s': column %d in row %lld is outside [0, %lld)",
                          g->name, g->colidx[k], (long long)v, (long long)n);
      if (k > g->rowptr[v] && g->colidx[k] <= g->colidx[k - 1])
        return cg_err_set(CG_ERR_ARG, "graph '%s': row %lld is not strictly sorted", g->name,
                          (long long)v);
    }
  }
  int64_t m = g->rowptr[n];
  tptr = cg_calloc((size_t)n + 1, sizeof *tptr, "METIS input transpose offsets");
  tcol = cg_malloc((size_t)(m > 0 ? m : 1) * sizeof *tcol, "METIS input transpose");
  xadj = cg_malloc(((size_t)n + 1) * sizeof *xadj, "METIS xadj");
  if (!tptr || !tcol || !xadj) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  for (int64_t k = 0; k < m; k++) tptr[g->colidx[k] + 1]++;
  for (int64_t v = 0; v < n; v++) tptr[v + 1] += tptr[v];
  {
    int64_t *cur = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *cur, "METIS transpose cursor");
    if (!cur) {
      st = CG_ERR_NOMEM;
      goto fail;
    }
    memcpy(cur, tptr, (size_t)n * sizeof *cur);
    for (int64_t v = 0; v < n; v++) /* row order makes every transposed row sorted */
      for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) tcol[cur[g->colidx[k]]++] = (int32_t)v;
    cg_free(cur);
  }
  /* Two passes of the same sorted merge: count, then fill. */
  for (int pass = 0; pass < 2; pass++) {
    int64_t total = 0;
    for (int64_t v = 0; v < n; v++) {
      if (pass == 0) {
        if (total > (int64_t)IDX_MAX) break;
        xadj[v] = (idx_t)total;
      }
      int64_t a = g->rowptr[v], ae = g->rowptr[v + 1], b = tptr[v], be = tptr[v + 1];
      while (a < ae || b < be) {
        int32_t x;
        if (b >= be || (a < ae && g->colidx[a] < tcol[b])) x = g->colidx[a++];
        else if (a >= ae || tcol[b] < g->colidx[a]) x = tcol[b++];
        else {
          x = g->colidx[a++];
          b++;
        }
        if (x == v) continue;
        if (pass == 1) adjncy[total] = (idx_t)x;
        total++;
      }
    }
    if (pass == 0) {
      if (total > (int64_t)IDX_MAX) {
        st = cg_err_set(CG_ERR_ARG,
                        "graph '%s' has %lld symmetric edge entries, more than METIS' idx_t (%d "
                        "bits) can index; rebuild METIS with IDXTYPEWIDTH=64",
                        g->name, (long long)total, IDXTYPEWIDTH);
        goto fail;
      }
      xadj[n] = (idx_t)total;
      adjncy = cg_malloc((size_t)(total > 0 ? total : 1) * sizeof *adjncy, "METIS adjncy");
      if (!adjncy) {
        st = CG_ERR_NOMEM;
        goto fail;
      }
    }
  }
  cg_free(tptr);
  cg_free(tcol);
  *xadj_out = xadj;
  *adjncy_out = adjncy;
  return CG_OK;
fail:
  cg_free(tptr);
  cg_free(tcol);
  cg_free(xadj);
  cg_free(adjncy);
  return st;
}

static int assign_metis(const struct graph *g, const struct part_options *o, int32_t *owner) {
  int st = CG_OK;
  idx_t *xadj = NULL, *adjncy = NULL, *vwgt = NULL, *part = NULL;
  real_t *tpwgts = NULL;
  double t0 = cg_time_now();
  TRY_GOTO(metis_graph_build(g, &xadj, &adjncy), done);
  part = cg_malloc((size_t)g->n * sizeof *part, "METIS part array");
  if (!part) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  if (o->vwgt) {
    /* METIS sums vertex weights in idx_t, so the total must fit, not just each weight. */
    int64_t total = 0;
    vwgt = cg_malloc((size_t)g->n * sizeof *vwgt, "METIS vertex weights");
    if (!vwgt) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    for (int64_t v = 0; v < g->n; v++) {
      total += o->vwgt[v];
      if (o->vwgt[v] > (int64_t)IDX_MAX || total > (int64_t)IDX_MAX) {
        st = cg_err_set(CG_ERR_ARG,
                        "vertex weights overflow METIS' idx_t (%d bits) at vertex %lld (weight "
                        "%lld, running total %lld); scale the weights down",
                        IDXTYPEWIDTH, (long long)v, (long long)o->vwgt[v], (long long)total);
        goto done;
      }
      vwgt[v] = (idx_t)o->vwgt[v];
    }
    if (total == 0) {
      st = cg_err_set(CG_ERR_ARG, "all vertex weights are 0; give at least one vertex a weight");
      goto done;
    }
  }
  if (o->tpwgts) {
    /* METIS insists on a sum of 1 within its own tolerance; renormalise what the
     * caller gave (already checked to be within 1e-3). */
    double sum = 0;
    for (int p = 0; p < o->nparts; p++) sum += o->tpwgts[p];
    tpwgts = cg_malloc((size_t)o->nparts * sizeof *tpwgts, "METIS target weights");
    if (!tpwgts) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    for (int p = 0; p < o->nparts; p++) tpwgts[p] = (real_t)(o->tpwgts[p] / sum);
  }
  idx_t options[METIS_NOPTIONS];
  TRY_GOTO(part_metis_status(METIS_SetDefaultOptions(options), "METIS_SetDefaultOptions"), done);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
  /* METIS seeds are idx_t >= 0: fold the 64-bit seed so every bit matters. */
  uint64_t s = o->seed ^ (o->seed >> 31) ^ (o->seed >> 62);
  options[METIS_OPTION_SEED] = (idx_t)(s & 0x7fffffff);
  idx_t nvtxs = (idx_t)g->n, ncon = 1, nparts = (idx_t)o->nparts, objval = 0;
  int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj, adjncy, vwgt, NULL, NULL, &nparts, tpwgts, NULL,
                               options, &objval, part);
  TRY_GOTO(part_metis_status(rc, "METIS_PartGraphKway"), done);
  {
    int64_t *count = cg_calloc((size_t)o->nparts, sizeof *count, "METIS part sizes");
    if (!count) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    for (int64_t v = 0; v < g->n; v++) {
      if (part[v] < 0 || part[v] >= nparts) {
        cg_free(count);
        st = cg_err_set(CG_ERR_METIS, "METIS_PartGraphKway put vertex %lld in part %lld of %d",
                        (long long)v, (long long)part[v], o->nparts);
        goto done;
      }
      owner[v] = (int32_t)part[v];
      count[part[v]]++;
    }
    for (int p = 0; p < o->nparts; p++)
      if (count[p] == 0 && tpwgts) {
        /* (RAPA's weights for a much slower rank: the part was asked to be empty) */
        cg_free(count);
        st = cg_err_set(CG_ERR_METIS,
                        "METIS left part %d of %d empty on graph '%s': its target weight %g asks for %.2g of "
                        "its %lld vertices; %s",
                        p, o->nparts, g->name, (double)tpwgts[p], (double)tpwgts[p] * (double)g->n,
                        (long long)g->n,
                        o->parts_are_ranks ? "run fewer ranks (mpirun -np), or split evenly (--partition metis)"
                                           : "raise it or use fewer parts");
        goto done;
      } else if (count[p] == 0) {
        cg_free(count);
        st = cg_err_set(CG_ERR_METIS,
                        "METIS left part %d of %d empty on graph '%s' (%lld vertices); %s",
                        p, o->nparts, g->name, (long long)g->n,
                        o->parts_are_ranks ? "run fewer ranks (mpirun -np) or --partition random"
                                           : "use fewer parts or the random method");
        goto done;
      }
    cg_free(count);
  }
  LOG_DEBUG("part", "METIS k-way: %d parts of '%s', edge cut %lld, %.3f s", o->nparts, g->name,
            (long long)objval, cg_time_now() - t0);
done:
  cg_free(xadj);
  cg_free(adjncy);
  cg_free(vwgt);
  cg_free(part);
  cg_free(tpwgts);
  return st;
}

int part_assign(const struct graph *g, const struct part_options *o, int32_t *owner) {
  TRY(part_options_check(g, o));
  if (!owner) return cg_err_set(CG_ERR_ARG, "part_assign: owner array is NULL");
  if (o->nparts == 1) {
    memset(owner, 0, (size_t)g->n * sizeof *owner);
    return CG_OK;
  }
  if (o->method == PART_METIS) TRY(assign_metis(g, o, owner));
  else TRY(assign_random(g, o, owner));
  return CG_OK;
}
