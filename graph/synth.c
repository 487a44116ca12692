/* graph/synth.c — synthetic graphs shaped like Reddit, ogbn-products and small test
 * graphs (spec grammar in graph.h).
 *
 * Model: a degree-corrected stochastic block model, sampled Chung-Lu style.
 * - Communities are contiguous id ranges of varied size (1:9 spread).
 * - Every vertex u has a weight w_u from a capped Pareto law (P(X > x) = x^-4/3, capped
 *   at 128x the minimum); its expected degree is proportional to w_u. u makes about
 *   half its target degree as "out" draws (the other half arrives as other vertices'
 *   draws): 85 % inside its community, the rest outside it, each endpoint picked with
 *   probability proportional to its weight (alias tables), so both ends of an edge
 *   follow the power law. A vertex's draws are distinct (a small hash set rejects
 *   repeats), its intra share is capped at half its community so hubs spill over.
 * - Symmetrising: the in-lists are the transpose of the out-lists (one counting pass,
 *   which leaves them sorted); row u is the merge of its sorted out- and in-lists,
 *   dropping pairs drawn from both ends. O(n + m) besides the per-vertex sort.
 * - Pairs drawn from both ends make m a few percent smaller than the draws; the
 *   budget is scaled by a first guess (SYNTH_DRAW_FACTOR0) and, when m misses the
 *   target by more than SYNTH_EDGE_TOL, the graph is re-drawn with the measured ratio.
 * - Each community has a dominant class; a vertex takes it except for 10 % label noise
 *   (multilabel: up to three classes of the community, plus rare others). Features are
 *   the class centroid plus noise (make_features), weak alone, strong when averaged
 *   over the neighbourhood, so a GCN must use the graph. Split 60/20/20 per vertex.
 *
 * Determinism: every random number comes from Philox keyed by the seed and indexed by
 * (vertex, draw, stream), never by thread or schedule, and only correctly rounded
 * arithmetic (+ - * / sqrt, integer maths) is used: no libm transcendental functions
 * (normals are Irwin-Hall sums), no floating-point reduction whose order depends on
 * threads, and no contraction into FMA (this file is built with -ffp-contract=off). So
 * the same spec gives the same bytes on any thread count and any IEEE-754 machine, and
 * ranks that each generate the graph agree. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/log.h"
#include "core/philox.h"
#include "core/status.h"
#include "core/timer.h"
#include "graph/graph.h"
#include "graph_internal.h"

/* Philox streams (counter word c2) so that no two uses share random numbers. */
enum {
  STREAM_COMM = 1,
  STREAM_WEIGHT,
  STREAM_ROUND,
  STREAM_EDGE,
  STREAM_LABEL,
  STREAM_MLABEL,
  STREAM_CENTROID,
  STREAM_FEAT,
  STREAM_SPLIT,
  STREAM_SHUFFLE,
};

/* Model constants (see the header comment). */
#define SYNTH_P_INTRA 0.85        /* share of a vertex's out draws inside its community */
#define SYNTH_PARETO_CAP 128.0    /* cap of the Pareto weight x >= 1 (max/mean weight ~ 40) */
#define SYNTH_WEIGHT_UNIT 1024.0  /* weights are integers so every sum is exact */
#define SYNTH_LABEL_NOISE 0.10    /* probability that a vertex's label is a uniform class */
#define SYNTH_ML_KEEP 0.7         /* multilabel: P(vertex has one of its community's classes) */
#define SYNTH_ML_CLASSES 3        /* multilabel: classes tied to each community */
#define SYNTH_EDGE_TOL 0.015      /* accept |m / m_target - 1| within this */
#define SYNTH_EDGE_ITERS 3
#define SYNTH_DRAW_FACTOR0 1.09   /* first guess of draws per wanted edge (repeats cost ~8-10 %) */

struct synth_params {
  char preset[16];
  int64_t n;
  double degree; /* average directed entries per row */
  int64_t f, c, k;
  int multilabel;
  int identity; /* features = the identity matrix (f = n), stored sparse */
  int shuffle; /* 1: the vertices in a seeded random order (shuffle_vertices) */
  uint64_t seed;
};

struct synth_preset {
  const char *name;
  int64_t n;
  double m; /* directed entries of the real dataset (degree = m / n) */
  int64_t f, c;
};

static const struct synth_preset presets[] = {
    {"reddit", 232965, 114615892.0, 602, 41},
    {"products", 2449029, 123718280.0, 100, 47},
    {"small", 3000, 3000.0 * 20, 64, 8},
    {"tiny", 200, 200.0 * 8, 16, 4},
};

/* ---- random numbers ---------------------------------------------------------- */

static inline struct cg_philox_out rnd(const struct synth_params *p, uint32_t stream, uint64_t idx,
                                       uint64_t j) {
  return cg_philox4x32_10((uint32_t)j, (uint32_t)idx, stream, (uint32_t)(j >> 32) ^ (uint32_t)(idx >> 32),
                          (uint32_t)p->seed, (uint32_t)(p->seed >> 32));
}
/* Uniform in [0, 1) and in (0, 1], exact from 32 bits. */
static inline double unit01(uint32_t x) { return (double)x * (1.0 / 4294967296.0); }
static inline double unit01c(uint32_t x) { return ((double)x + 1.0) * (1.0 / 4294967296.0); }

/* Approximately standard normal from four 32-bit words: a centred Irwin-Hall sum of
 * four uniforms scaled to unit variance. Integer sum + one multiply: exact everywhere. */
static inline double normal4(struct cg_philox_out o) {
  int64_t s = (int64_t)((uint64_t)o.v[0] + o.v[1] + o.v[2] + o.v[3]) - ((int64_t)1 << 33);
  return (double)s * (1.7320508075688772 / 4294967296.0);
}
/* The same with 16-bit uniforms: half k (0 or 1) of each word, so one Philox call
 * gives two normals (features are the bulk of the random numbers). */
static inline double normal4h(struct cg_philox_out o, int k) {
  const int sh = 16 * k;
  int64_t s = (int64_t)((o.v[0] >> sh) & 0xffffu) + ((o.v[1] >> sh) & 0xffffu) +
              ((o.v[2] >> sh) & 0xffffu) + ((o.v[3] >> sh) & 0xffffu) - 2 * 65536;
  return (double)s * (1.7320508075688772 / 65536.0);
}

/* ---- spec parsing ------------------------------------------------------------ */

static int parse_i64(const char *spec, const char *key, const char *val, int64_t lo, int64_t hi,
                     int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(val, &end, 10);
  if (errno || end == val || *end || v < lo || v > hi)
    return cg_err_set(CG_ERR_ARG, "%s: %s=%s: expected an integer in [%lld, %lld]", spec, key, val,
                      (long long)lo, (long long)hi);
  *out = v;
  return CG_OK;
}

static int parse_f64(const char *spec, const char *key, const char *val, double lo, double hi,
                     double *out) {
  char *end;
  errno = 0;
  double v = strtod(val, &end);
  if (errno || end == val || *end || !(v >= lo && v <= hi))
    return cg_err_set(CG_ERR_ARG, "%s: %s=%s: expected a number in [%g, %g]", spec, key, val, lo, hi);
  *out = v;
  return CG_OK;
}

static int parse_spec(const char *spec, struct synth_params *p) {
  memset(p, 0, sizeof *p);
  if (strncmp(spec, "synth:", 6) != 0)
    return cg_err_set(CG_ERR_ARG, "'%s': a synthetic graph spec starts with \"synth:\"", spec);
  const char *name = spec + 6;
  size_t nlen = strcspn(name, ":");
  const struct synth_preset *pr = NULL;
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strlen(presets[i].name) == nlen && strncmp(presets[i].name, name, nlen) == 0) pr = &presets[i];
  if (!pr)
    return cg_err_set(CG_ERR_ARG,
                      "%s: unknown preset '%.*s'; expected one of reddit, products, small, tiny "
                      "(e.g. synth:small or synth:reddit:scale=0.1)",
                      spec, (int)nlen, name);
  snprintf(p->preset, sizeof p->preset, "%s", pr->name);
  p->n = pr->n;
  p->degree = pr->m / (double)pr->n;
  p->f = pr->f;
  p->c = pr->c;
  p->k = 0; /* chosen from n and the degree below */
  p->seed = 1;
  double scale = 1.0;

  const char *rest = name + nlen;
  if (*rest == ':') rest++;
  char buf[256];
  unsigned seen = 0; /* bit i: keys[i] given */
  while (*rest) {
    size_t len = strcspn(rest, ",");
    if (len == 0 || len >= sizeof buf)
      return cg_err_set(CG_ERR_ARG, "%s: malformed option list near '%s' (expected key=value,...)",
                        spec, rest);
    memcpy(buf, rest, len);
    buf[len] = '\0';
    rest += len;
    if (*rest == ',') rest++;
    char *eq = strchr(buf, '=');
    if (!eq)
      return cg_err_set(CG_ERR_ARG, "%s: option '%s' has no value (expected key=value)", spec, buf);
    *eq = '\0';
    const char *key = buf, *val = eq + 1;
    if (strchr(val, ':') || strchr(val, '='))
      return cg_err_set(CG_ERR_ARG, "%s: %s=%s: options are separated by commas (synth:%s:key=value,key=value)",
                        spec, key, val, pr->name);
    /* a key given twice is refused rather than the last one silently winning (keys[]: the
     * options parsed below; one missing here is only not checked for repeats) */
    static const char *const keys[] = {"scale",       "seed",       "nodes",    "degree", "feats", "classes",
                                       "communities", "multilabel", "identity", "shuffle"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
      if (strcmp(key, keys[i]) == 0) {
        if (seen & (1u << i)) return cg_err_set(CG_ERR_ARG, "%s: option '%s' given twice", spec, key);
        seen |= 1u << i;
      }
    int64_t iv = 0;
    if (strcmp(key, "scale") == 0) {
      TRY(parse_f64(spec, key, val, 1e-9, 1e6, &scale));
    } else if (strcmp(key, "seed") == 0) {
      char *end;
      errno = 0;
      unsigned long long s = strtoull(val, &end, 10);
      if (errno || end == val || *end || val[0] == '-')
        return cg_err_set(CG_ERR_ARG, "%s: seed=%s: expected a non-negative integer", spec, val);
      p->seed = s;
    } else if (strcmp(key, "nodes") == 0) {
      TRY(parse_i64(spec, key, val, 1, INT32_MAX, &p->n));
    } else if (strcmp(key, "degree") == 0) {
      TRY(parse_f64(spec, key, val, 0.0, 1e9, &p->degree));
    } else if (strcmp(key, "feats") == 0) {
      TRY(parse_i64(spec, key, val, 1, INT32_MAX, &p->f));
    } else if (strcmp(key, "classes") == 0) {
      TRY(parse_i64(spec, key, val, 1, 1 << 20, &p->c));
    } else if (strcmp(key, "communities") == 0) {
      TRY(parse_i64(spec, key, val, 1, INT32_MAX, &p->k));
    } else if (strcmp(key, "multilabel") == 0) {
      TRY(parse_i64(spec, key, val, 0, 1, &iv));
      p->multilabel = (int)iv;
    } else if (strcmp(key, "identity") == 0) {
      TRY(parse_i64(spec, key, val, 0, 1, &iv));
      p->identity = (int)iv;
    } else if (strcmp(key, "shuffle") == 0) {
      TRY(parse_i64(spec, key, val, 0, 1, &iv));
      p->shuffle = (int)iv;
    } else {
      return cg_err_set(CG_ERR_ARG,
                        "%s: unknown option '%s'; expected scale, seed, nodes, degree, feats, "
                        "classes, communities, multilabel, identity or shuffle",
                        spec, key);
    }
  }
  double nn = floor((double)p->n * scale + 0.5);
  if (nn < 1 || nn >= 2147483648.0)
    return cg_err_set(CG_ERR_ARG, "%s: %lld nodes x scale %g gives %.0f nodes, expected 1 .. 2^31-1",
                      spec, (long long)p->n, scale, nn);
  p->n = (int64_t)nn;
  if (p->degree > (double)(p->n - 1)) p->degree = (double)(p->n - 1);
  if (p->k == 0) {
    /* Communities of ~16x the average degree keep the intra-community density
     * moderate; at least one community per class so every class dominates one. */
    double deg = p->degree > 1 ? p->degree : 1;
    p->k = (int64_t)((double)p->n / (16 * deg));
    if (p->k < p->c) p->k = p->c;
  }
  if (p->k > p->n) p->k = p->n;
  return CG_OK;
}

/* ---- small helpers --------------------------------------------------------------- */

static void sort_i32(int32_t *a, int64_t n) {
  while (n > 16) {
    int32_t x = a[0], y = a[n / 2], z = a[n - 1];
    int32_t piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    int64_t i = 0, j = n - 1;
    while (i <= j) {
      while (a[i] < piv) i++;
      while (a[j] > piv) j--;
      if (i <= j) {
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    /* Recurse into the smaller part, loop on the larger: O(log n) stack. */
    if (j + 1 < n - i) {
      sort_i32(a, j + 1);
      a += i;
      n -= i;
    } else {
      sort_i32(a + i, n - i);
      n = j + 1;
    }
  }
  for (int64_t i = 1; i < n; i++) {
    int32_t v = a[i];
    int64_t j = i - 1;
    while (j >= 0 && a[j] > v) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
}

/* Walker/Vose alias table over integer weights w[0..cnt): exact integer arithmetic, a
 * fixed processing order, so the table is the same on every machine. Sampling needs
 * two 32-bit words: a slot and a coin, compared against a 32-bit threshold. */
struct alias_slot {
  uint32_t thr;  /* keep the slot when the coin is below this */
  int32_t alias; /* else take this slot */
};

static void alias_build(const uint32_t *w, int64_t cnt, struct alias_slot *tab, int32_t *small,
                        int32_t *large, uint64_t *p) {
  uint64_t total = 0;
  for (int64_t i = 0; i < cnt; i++) total += w[i];
  int64_t ns = 0, nl = 0;
  for (int64_t i = 0; i < cnt; i++) {
    p[i] = (uint64_t)w[i] * (uint64_t)cnt; /* < 2^17 * 2^31: no overflow */
    if (p[i] < total)
      small[ns++] = (int32_t)i;
    else
      large[nl++] = (int32_t)i;
  }
  while (ns > 0 && nl > 0) {
    int32_t sm = small[--ns], lg = large[--nl];
    tab[sm].thr = (uint32_t)(((unsigned __int128)p[sm] << 32) / total);
    tab[sm].alias = lg;
    p[lg] -= total - p[sm];
    if (p[lg] < total)
      small[ns++] = lg;
    else
      large[nl++] = lg;
  }
  while (nl > 0) {
    int32_t i = large[--nl];
    tab[i].thr = UINT32_MAX;
    tab[i].alias = i;
  }
  while (ns > 0) { /* only reachable through rounding; cannot happen with exact sums */
    int32_t i = small[--ns];
    tab[i].thr = UINT32_MAX;
    tab[i].alias = i;
  }
}

static inline int64_t alias_pick(const struct alias_slot *tab, int64_t cnt, uint32_t slot_word,
                                 uint32_t coin) {
  int64_t i = (int64_t)(((uint64_t)slot_word * (uint64_t)cnt) >> 32);
  struct alias_slot sl = tab[i];
  return coin < sl.thr ? i : sl.alias;
}

struct synth_ctx {
  const struct synth_params *p;
  int64_t n;
  int64_t *bound; /* k + 1 community boundaries */
  int32_t *comm;  /* community of each vertex */
  uint32_t *w;    /* integer vertex weights */
  uint64_t wtot;  /* their sum */
  struct alias_slot *ctab; /* alias table of each community over its own vertices (local slots) */
  struct alias_slot *gtab; /* alias table over all vertices */
};

static int make_communities(struct synth_ctx *x) {
  const struct synth_params *p = x->p;
  int64_t n = x->n, k = p->k;
  x->bound = cg_malloc((size_t)(k + 1) * sizeof *x->bound, "synthetic community bounds");
  x->comm = cg_malloc((size_t)n * sizeof *x->comm, "synthetic community ids");
  double *cum = cg_malloc((size_t)(k + 1) * sizeof *cum, "synthetic community sizes");
  if (!x->bound || !x->comm || !cum) {
    cg_free(cum);
    return CG_ERR_NOMEM;
  }
  /* Size weights (0.5 + U)^2: a 1:9 spread. One vertex per community is reserved so
   * every community is non-empty; the rest is shared out in proportion. */
  cum[0] = 0;
  for (int64_t i = 0; i < k; i++) {
    double s = 0.5 + unit01(rnd(p, STREAM_COMM, (uint64_t)i, 0).v[0]);
    cum[i + 1] = cum[i] + s * s;
  }
  int64_t rest = n - k;
  for (int64_t i = 0; i <= k; i++) {
    int64_t share = (int64_t)floor((double)rest * (cum[i] / cum[k]));
    if (share > rest) share = rest;
    x->bound[i] = i + share;
  }
  x->bound[k] = n;
  cg_free(cum);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < k; i++)
    for (int64_t u = x->bound[i]; u < x->bound[i + 1]; u++) x->comm[u] = (int32_t)i;
  return CG_OK;
}

static int make_weights(struct synth_ctx *x) {
  const struct synth_params *p = x->p;
  const int64_t n = x->n, k = p->k;
  x->w = cg_malloc((size_t)n * sizeof *x->w, "synthetic vertex weights");
  x->ctab = cg_malloc((size_t)n * sizeof *x->ctab, "synthetic community alias tables");
  x->gtab = cg_malloc((size_t)n * sizeof *x->gtab, "synthetic global alias table");
  int32_t *small = cg_malloc((size_t)n * sizeof *small, "alias table scratch");
  int32_t *large = cg_malloc((size_t)n * sizeof *large, "alias table scratch");
  uint64_t *scratch = cg_malloc((size_t)n * sizeof *scratch, "alias table scratch");
  int st = CG_OK;
  if (!x->w || !x->ctab || !x->gtab || !small || !large || !scratch) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  /* Pareto with P(X > x) = x^(-4/3): x = U^(-3/4) = 1 / sqrt(U * sqrt(U)), built from
   * correctly rounded operations only, capped, then made an integer so sums are exact. */
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < n; u++) {
    double uu = unit01c(rnd(p, STREAM_WEIGHT, (uint64_t)u, 0).v[0]);
    double xw = 1.0 / sqrt(uu * sqrt(uu));
    if (xw > SYNTH_PARETO_CAP) xw = SYNTH_PARETO_CAP;
    x->w[u] = (uint32_t)(xw * SYNTH_WEIGHT_UNIT);
  }
  x->wtot = 0;
  for (int64_t u = 0; u < n; u++) x->wtot += x->w[u];
  /* Communities own disjoint slices of the scratch arrays, so they build in parallel. */
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < k; c++) {
    int64_t a = x->bound[c], sz = x->bound[c + 1] - a;
    alias_build(x->w + a, sz, x->ctab + a, small + a, large + a, scratch + a);
  }
  alias_build(x->w, n, x->gtab, small, large, scratch);
done:
  cg_free(small);
  cg_free(large);
  cg_free(scratch);
  return st;
}

/* Out-draw budget of vertex u: half its target degree (the other half arrives as
 * other vertices' draws), scaled by `factor`. */
static double draw_budget(const struct synth_ctx *x, double factor, int64_t u) {
  return factor * 0.5 * (x->p->degree * (double)x->n) * ((double)x->w[u] / (double)x->wtot);
}
/* Its intra and inter shares, within what the community and the rest can supply. */
static void split_budget(const struct synth_ctx *x, int64_t u, int64_t tu, int64_t *tin, int64_t *tout) {
  int64_t c = x->comm[u], sz = x->bound[c + 1] - x->bound[c];
  *tin = (int64_t)floor((double)tu * SYNTH_P_INTRA + 0.5);
  if (*tin > (sz - 1) / 2) *tin = (sz - 1) / 2;
  *tout = tu - *tin;
  if (*tout > (x->n - sz) / 2) *tout = (x->n - sz) / 2;
}

/* Vertex u's out-draw budget with the budget scaled by `factor`: *tin intra draws and
 * *tout inter draws (the rounding of the fractional budget is u's own random number). */
static void vertex_budget(const struct synth_ctx *x, double factor, int64_t u, int64_t *tin, int64_t *tout) {
  double t = draw_budget(x, factor, u);
  double fl = floor(t);
  int64_t tu = (int64_t)fl + (unit01(rnd(x->p, STREAM_ROUND, (uint64_t)u, 0).v[0]) < t - fl ? 1 : 0);
  split_budget(x, u, tu, tin, tout);
}

/* The targets vertex u draws: distinct, sorted, no self-loop, into t (room for want_in +
 * want_out); returns how many. Draw j of u uses Philox counter (j, u, STREAM_EDGE), so
 * the accepted set depends on u alone, never on the schedule or on other vertices; `set`
 * (room for 2^bits entries, bits the smallest >= 4 with 2^bits >= 2 (want_in + want_out))
 * rejects repeats in O(1). *ndraws counts the draws spent. */
static int64_t draw_vertex(const struct synth_ctx *x, int64_t u, int64_t want_in, int64_t want_out,
                           uint32_t *set, int32_t *t, uint64_t *ndraws) {
  const struct synth_params *p = x->p;
  const int64_t n = x->n, want = want_in + want_out;
  const uint32_t empty = UINT32_MAX;
  const int64_t c = x->comm[u], a = x->bound[c], b = x->bound[c + 1];
  int bits = 4;
  while (((int64_t)1 << bits) < 2 * want) bits++; /* <= 32 since want < 2^31 */
  const uint32_t mask = (uint32_t)(((uint64_t)1 << bits) - 1);
  for (uint64_t i = 0; i <= mask; i++) set[i] = empty;
  int64_t have_in = 0, have_out = 0;
  const uint64_t jmax = 4 * (uint64_t)want + 64;
  uint64_t j = 0;
  for (; (have_in < want_in || have_out < want_out) && j < jmax; j++) {
    /* Intra: the community's alias table. Inter: the global table, rejecting the
     * own community (a draw spent, as for a self-loop). */
    struct cg_philox_out o = rnd(p, STREAM_EDGE, (uint64_t)u, j);
    int64_t v;
    int intra = have_in < want_in;
    if (intra) {
      v = a + alias_pick(x->ctab + a, b - a, o.v[0], o.v[1]);
      if (v == u) continue;
    } else {
      v = alias_pick(x->gtab, n, o.v[2], o.v[3]);
      if (v >= a && v < b) continue;
    }
    uint32_t h = ((uint32_t)v * 0x9E3779B1u) >> (32 - bits) & mask;
    while (set[h] != empty && set[h] != (uint32_t)v) h = (h + 1) & mask;
    if (set[h] == (uint32_t)v) continue; /* a repeat */
    set[h] = (uint32_t)v;
    t[have_in + have_out] = (int32_t)v;
    if (intra)
      have_in++;
    else
      have_out++;
  }
  *ndraws += j;
  sort_i32(t, have_in + have_out);
  return have_in + have_out;
}

/* One sample of the edge model with out-draw budget scaled by `factor`; fills the
 * symmetric, sorted, deduplicated CSR. */
static int build_edges(struct synth_ctx *x, double factor, int64_t **rowptr_out,
                       int32_t **colidx_out, int64_t *m_out) {
  const int64_t n = x->n;
  int st = CG_OK;
  int64_t *off = NULL, *irow = NULL, *rowptr = NULL, *cursor = NULL;
  int32_t *outc = NULL, *tgt = NULL, *inl = NULL, *colidx = NULL;

  off = cg_malloc((size_t)(n + 1) * sizeof *off, "synthetic out-draw offsets");
  outc = cg_malloc((size_t)n * sizeof *outc, "synthetic out-draw counts");
  if (!off || !outc) {
    st = CG_ERR_NOMEM;
    goto done;
  }
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < n; u++) {
    int64_t tin, tout;
    vertex_budget(x, factor, u, &tin, &tout);
    off[u + 1] = tin + tout;
    outc[u] = (int32_t)tin; /* the intra share, until the draw pass overwrites it */
  }
  off[0] = 0;
  for (int64_t u = 0; u < n; u++) off[u + 1] += off[u];
  const int64_t e = off[n];
  tgt = cg_malloc((size_t)e * sizeof *tgt, "synthetic out-draw targets");
  if (!tgt) {
    st = CG_ERR_NOMEM;
    goto done;
  }

  double tt0 = cg_time_now();
  int64_t maxwant = 0;
  for (int64_t u = 0; u < n; u++)
    if (off[u + 1] - off[u] > maxwant) maxwant = off[u + 1] - off[u];
  int hash_bits = 4;
  while (((int64_t)1 << hash_bits) < 2 * maxwant) hash_bits++;
  int nomem = 0;
  uint64_t ndraws = 0;

  /* Draw the targets of each vertex: distinct, sorted, no self-loop. Draw j of vertex
   * u uses Philox counter (j, u, STREAM_EDGE), so the accepted set is independent of
   * the schedule; an open-addressing set (per thread) rejects repeats in O(1). */
#pragma omp parallel reduction(| : nomem) reduction(+ : ndraws)
  {
    uint32_t *set = malloc(((size_t)1 << hash_bits) * sizeof *set);
    if (!set) nomem = 1;
#pragma omp for schedule(dynamic, 64)
    for (int64_t u = 0; u < n; u++) {
      if (!set) continue;
      const int64_t want = off[u + 1] - off[u];
      uint64_t nd = 0;
      outc[u] = (int32_t)draw_vertex(x, u, outc[u], want - outc[u], set, tgt + off[u], &nd);
      ndraws += nd;
    }
    free(set);
  }
  if (nomem) {
    st = cg_err_set(CG_ERR_NOMEM, "out of memory for the synthetic generator's draw sets");
    goto done;
  }

  double tt1 = cg_time_now();
  /* In-lists: the transpose of the out-lists. Walking u in order leaves every
   * in-list sorted. */
  irow = cg_calloc((size_t)n + 1, sizeof *irow, "synthetic in-list offsets");
  cursor = cg_malloc((size_t)n * sizeof *cursor, "synthetic in-list cursors");
  inl = cg_malloc((size_t)e * sizeof *inl, "synthetic in-lists");
  rowptr = cg_malloc((size_t)(n + 1) * sizeof *rowptr, "graph row pointers");
  if (!irow || !cursor || !inl || !rowptr) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int64_t u = 0; u < n; u++)
    for (int64_t k = off[u]; k < off[u] + outc[u]; k++) irow[tgt[k] + 1]++;
  for (int64_t v = 0; v < n; v++) irow[v + 1] += irow[v];
  memcpy(cursor, irow, (size_t)n * sizeof *cursor);
  for (int64_t u = 0; u < n; u++)
    for (int64_t k = off[u]; k < off[u] + outc[u]; k++) inl[cursor[tgt[k]]++] = (int32_t)u;
  cg_free(cursor);
  cursor = NULL;

  double tt2 = cg_time_now();
  /* Row u = out(u) U in(u): a merge of two sorted lists. Count, then fill. */
#define MERGE_ROW(EMIT)                                                           \
  do {                                                                            \
    const int32_t *o = tgt + off[u], *i_ = inl + irow[u];                         \
    int64_t no = outc[u], ni = irow[u + 1] - irow[u], a_ = 0, b_ = 0;             \
    while (a_ < no || b_ < ni) {                                                  \
      int32_t v;                                                                  \
      if (b_ >= ni || (a_ < no && o[a_] < i_[b_]))                                \
        v = o[a_++];                                                              \
      else if (a_ >= no || i_[b_] < o[a_])                                        \
        v = i_[b_++];                                                             \
      else {                                                                      \
        v = o[a_++];                                                              \
        b_++;                                                                     \
      }                                                                           \
      EMIT;                                                                       \
    }                                                                             \
  } while (0)
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t u = 0; u < n; u++) {
    int64_t cnt = 0;
    MERGE_ROW((void)v; cnt++);
    rowptr[u + 1] = cnt;
  }
  rowptr[0] = 0;
  for (int64_t u = 0; u < n; u++) rowptr[u + 1] += rowptr[u];
  colidx = cg_malloc((size_t)rowptr[n] * sizeof *colidx, "graph column indices");
  if (!colidx) {
    st = CG_ERR_NOMEM;
    goto done;
  }
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t u = 0; u < n; u++) {
    int32_t *dst = colidx + rowptr[u];
    MERGE_ROW(*dst++ = v);
  }
#undef MERGE_ROW
  LOG_DEBUG("graph", "synth edges: %llu draws, %lld accepted; draw %.2f s, transpose %.2f s, merge %.2f s",
            (unsigned long long)ndraws, (long long)e, tt1 - tt0, tt2 - tt1, cg_time_now() - tt2);
  *m_out = rowptr[n];
  *rowptr_out = rowptr;
  *colidx_out = colidx;
  rowptr = NULL;
  colidx = NULL;

done:
  cg_free(off);
  cg_free(outc);
  cg_free(tgt);
  cg_free(irow);
  cg_free(cursor);
  cg_free(inl);
  cg_free(rowptr);
  cg_free(colidx);
  return st;
}

/* Dominant class of community i; multilabel: its SYNTH_ML_CLASSES classes. */
static int64_t comm_class(const struct synth_params *p, int64_t i, int r) {
  if (r == 0) return i % p->c;
  struct cg_philox_out o = rnd(p, STREAM_MLABEL, (uint64_t)i, (uint64_t)1 << 40);
  return p->c > 1 ? (i % p->c + 1 + (int64_t)(o.v[r & 3] % (uint32_t)(p->c - 1))) % p->c : 0;
}

/* Vertex u's label (single-label) or its row of the multi-label matrix (c entries). */
static void label_vertex(const struct synth_ctx *x, int64_t u, int32_t *label, uint8_t *row) {
  const struct synth_params *p = x->p;
  const int64_t c = p->c;
  if (!p->multilabel) {
    struct cg_philox_out o = rnd(p, STREAM_LABEL, (uint64_t)u, 0);
    int64_t cls = comm_class(p, x->comm[u], 0);
    if (unit01(o.v[0]) < SYNTH_LABEL_NOISE) cls = (int64_t)(o.v[1] % (uint32_t)c);
    *label = (int32_t)cls;
    return;
  }
  /* Each vertex keeps each of its community's classes with probability
   * SYNTH_ML_KEEP and picks up any other class with probability 1/(2c). */
  for (int64_t k = 0; k < c; k += 4) {
    struct cg_philox_out o = rnd(p, STREAM_LABEL, (uint64_t)u, (uint64_t)(k / 4));
    for (int64_t l = k; l < c && l < k + 4; l++)
      row[l] = unit01(o.v[l - k]) < 0.5 / (double)c ? 1 : 0;
  }
  struct cg_philox_out o = rnd(p, STREAM_MLABEL, (uint64_t)u, 0);
  for (int r = 0; r < SYNTH_ML_CLASSES; r++)
    if (unit01(o.v[r]) < SYNTH_ML_KEEP) row[comm_class(p, x->comm[u], r)] = 1;
}

static int make_labels(struct synth_ctx *x, struct graph *g) {
  const struct synth_params *p = x->p;
  const int64_t n = x->n, c = p->c;
  if (!p->multilabel) {
    g->labels = cg_malloc((size_t)n * sizeof *g->labels, "labels");
    if (!g->labels) return CG_ERR_NOMEM;
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < n; u++) label_vertex(x, u, &g->labels[u], NULL);
    return CG_OK;
  }
  g->mlabels = cg_calloc((size_t)n, (size_t)c, "multi-label matrix");
  if (!g->mlabels) return CG_ERR_NOMEM;
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < n; u++) label_vertex(x, u, NULL, g->mlabels + u * c);
  return CG_OK;
}

/* Dense features: x_u = mean of the centroids of u's classes + N(0, 1) noise per
 * coordinate. Centroid coordinates are N(0, snr^2 / f), so a centroid has norm about
 * snr whatever f is: one vertex alone is a weak witness of its class, the average over
 * its (mostly same-class) neighbours a strong one. snr = 0.6 c^(1/4) + 0.7 grows
 * slowly with the class count so that features alone stay at roughly 30-65 %
 * nearest-centroid accuracy (tiny 66 %, small 50 %, 41-47 classes 30-45 %) while the
 * two-hop GCN average reaches the label-noise ceiling of ~90 %. */
/* The class centroids (c x f), cg_malloc'ed. */
static float *make_centroids(const struct synth_params *p) {
  const int64_t f = p->f, c = p->c;
  float *cent = cg_malloc((size_t)(c * f) * sizeof *cent, "synthetic class centroids");
  if (!cent) return NULL;
  const double snr = 0.6 * sqrt(sqrt((double)c)) + 0.7;
  const double cs = snr / sqrt((double)f);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < c * f; i++)
    cent[i] = (float)(cs * normal4(rnd(p, STREAM_CENTROID, (uint64_t)i, 0)));
  return cent;
}

/* Vertex u's feature row (f values) from its label or multi-label row; acc: f doubles of
 * scratch (multilabel only). */
static void feature_vertex(const struct synth_params *p, const float *cent, int64_t u, int32_t label,
                           const uint8_t *mrow, double *acc, float *row) {
  const int64_t f = p->f, c = p->c;
  if (!p->multilabel) {
    const float *mean = cent + (int64_t)label * f;
    for (int64_t j = 0; j < f; j += 2) {
      struct cg_philox_out o = rnd(p, STREAM_FEAT, (uint64_t)u, (uint64_t)j / 2);
      row[j] = (float)((double)mean[j] + normal4h(o, 0));
      if (j + 1 < f) row[j + 1] = (float)((double)mean[j + 1] + normal4h(o, 1));
    }
    return;
  }
  int64_t cnt = 0;
  for (int64_t j = 0; j < f; j++) acc[j] = 0;
  for (int64_t k = 0; k < c; k++)
    if (mrow[k]) {
      cnt++;
      for (int64_t j = 0; j < f; j++) acc[j] += cent[k * f + j];
    }
  for (int64_t j = 0; j < f; j += 2) {
    struct cg_philox_out o = rnd(p, STREAM_FEAT, (uint64_t)u, (uint64_t)j / 2);
    row[j] = (float)((cnt ? acc[j] / (double)cnt : 0.0) + normal4h(o, 0));
    if (j + 1 < f) row[j + 1] = (float)((cnt ? acc[j + 1] / (double)cnt : 0.0) + normal4h(o, 1));
  }
}

static int make_features(struct synth_ctx *x, struct graph *g) {
  const struct synth_params *p = x->p;
  const int64_t n = x->n, f = p->f, c = p->c;
  float *cent = make_centroids(p);
  g->feat_values = cg_malloc((size_t)(n * f) * sizeof *g->feat_values, "feature values");
  if (!cent || !g->feat_values) {
    cg_free(cent);
    return CG_ERR_NOMEM;
  }
  int nomem = 0;
#pragma omp parallel reduction(| : nomem)
  {
    double *acc = p->multilabel ? malloc((size_t)f * sizeof *acc) : NULL;
    if (p->multilabel && !acc) nomem = 1;
#pragma omp for schedule(dynamic, 64)
    for (int64_t u = 0; u < n; u++) {
      if (p->multilabel && !acc) continue;
      feature_vertex(p, cent, u, p->multilabel ? 0 : g->labels[u], p->multilabel ? g->mlabels + u * c : NULL, acc,
                     g->feat_values + u * f);
    }
    free(acc);
  }
  if (nomem) {
    cg_free(cent);
    return cg_err_set(CG_ERR_NOMEM, "out of memory for the multilabel feature accumulators");
  }
  cg_free(cent);
  return CG_OK;
}

/* Identity features (identity=1): x_u = e_u, the usual input of a graph without
 * features; f = n, one stored value per row. */
static int make_identity_features(int64_t n, struct graph *g) {
  g->feat_rowptr = cg_malloc((size_t)(n + 1) * sizeof *g->feat_rowptr, "identity feature row pointers");
  g->feat_colidx = cg_malloc((size_t)n * sizeof *g->feat_colidx, "identity feature columns");
  g->feat_values = cg_malloc((size_t)n * sizeof *g->feat_values, "identity feature values");
  if (!g->feat_rowptr || !g->feat_colidx || !g->feat_values) return CG_ERR_NOMEM;
  for (int64_t u = 0; u <= n; u++) g->feat_rowptr[u] = u;
  for (int64_t u = 0; u < n; u++) {
    g->feat_colidx[u] = (int32_t)u;
    g->feat_values[u] = 1.0f;
  }
  return CG_OK;
}

/* shuffle=1: the same graph with its vertices in a random order (Fisher-Yates, one
 * Philox draw per position, keyed by the seed), i.e. a graph as a publisher may ship
 * it, with no locality left in its vertex ids. */
static int shuffle_vertices(const struct synth_params *p, struct graph *g) {
  const int64_t n = g->n;
  int32_t *order = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *order, "synthetic shuffle order");
  if (!order) return CG_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) order[i] = (int32_t)i;
  for (int64_t i = n - 1; i > 0; i--) {
    const struct cg_philox_out o = rnd(p, STREAM_SHUFFLE, (uint64_t)i, 0);
    const uint64_t r = ((uint64_t)o.v[0] << 32 | o.v[1]) % (uint64_t)(i + 1);
    const int32_t t = order[i];
    order[i] = order[r];
    order[r] = t;
  }
  struct graph sh;
  int st = graph_permute(g, order, &sh);
  cg_free(order);
  if (st != CG_OK) return st;
  graph_free(g);
  *g = sh;
  return CG_OK;
}

static uint8_t split_vertex(const struct synth_params *p, int64_t u) {
  double r = unit01(rnd(p, STREAM_SPLIT, (uint64_t)u, 0).v[0]);
  return r < 0.6 ? GRAPH_SPLIT_TRAIN : r < 0.8 ? GRAPH_SPLIT_VAL : GRAPH_SPLIT_TEST;
}

int graph_synth(const char *spec, struct graph *g) {
  double factor = 0.0;
  return graph_synth_ex(spec, g, &factor);
}

int graph_synth_ex(const char *spec, struct graph *g, double *factor_out) {
  memset(g, 0, sizeof *g);
  *factor_out = 0.0;
  if (!spec) return cg_err_set(CG_ERR_ARG, "graph_synth: no spec given");
  struct synth_params p;
  TRY(parse_spec(spec, &p));
  struct synth_ctx x = {.p = &p, .n = p.n};
  int st = CG_OK;
  TRY_GOTO(make_communities(&x), fail);
  TRY_GOTO(make_weights(&x), fail);

  /* Repeats (u drawing v while v draws u) and saturated hubs make the simple graph
   * slightly smaller than the draw budget; re-draw with a corrected budget until m
   * is within SYNTH_EDGE_TOL of the target. The correction is a deterministic
   * function of the previous sample, so the result still depends on the spec only. */
  const double m_target = p.degree * (double)p.n;
  double factor = SYNTH_DRAW_FACTOR0, t0 = cg_time_now();
  for (int it = 0; it < SYNTH_EDGE_ITERS; it++) {
    int64_t m = 0;
    graph_free(g);
    TRY_GOTO(build_edges(&x, factor, &g->rowptr, &g->colidx, &m), fail);
    g->m = m;
    *factor_out = factor;
    if (m_target <= 0 || m == 0 || fabs((double)m / m_target - 1.0) <= SYNTH_EDGE_TOL) break;
    LOG_DEBUG("graph", "%s: sample %d has m = %lld for a target of %.0f (%.2f s); re-drawing", spec,
              it, (long long)m, m_target, cg_time_now() - t0);
    factor *= m_target / (double)m;
  }

  if (m_target > 0 && fabs((double)g->m / m_target - 1.0) > 0.05)
    LOG_WARN_COMMON("graph",
             "%s: %lld directed edges instead of the %.0f asked for (average degree %.1f instead "
             "of %.1f): the graph is too dense for its communities; lower degree= or raise "
             "nodes=/scale=",
             spec, (long long)g->m, m_target, (double)g->m / (double)p.n, p.degree);
  snprintf(g->name, sizeof g->name, "%s", p.preset);
  g->n = p.n;
  g->feat_dim = p.identity ? p.n : p.f;
  g->num_classes = p.c;
  g->multilabel = p.multilabel;
  g->sparse_feat = p.identity;
  g->feat_nnz = p.identity ? p.n : p.n * p.f;
  double t1 = cg_time_now();
  TRY_GOTO(make_labels(&x, g), fail);
  if (p.identity) TRY_GOTO(make_identity_features(p.n, g), fail);
  else TRY_GOTO(make_features(&x, g), fail);
  double t2 = cg_time_now();
  g->split = cg_malloc((size_t)p.n, "split");
  if (!g->split) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < p.n; u++) g->split[u] = split_vertex(&p, u);
  graph_checksum_update(g);
  if (p.shuffle) TRY_GOTO(shuffle_vertices(&p, g), fail);
  LOG_DEBUG("graph",
            "%s: n=%lld m=%lld (target %.0f) f=%lld c=%lld communities=%lld checksum 0x%08x; "
            "edges %.2f s, labels+features %.2f s, checksum %.2f s",
            spec, (long long)g->n, (long long)g->m, m_target, (long long)g->feat_dim,
            (long long)g->num_classes, (long long)p.k, g->checksum, t1 - t0, t2 - t1,
            cg_time_now() - t2);
  cg_free(x.bound);
  cg_free(x.comm);
  cg_free(x.w);
  cg_free(x.ctab);
  cg_free(x.gtab);
  return CG_OK;

fail:
  cg_free(x.bound);
  cg_free(x.comm);
  cg_free(x.w);
  cg_free(x.ctab);
  cg_free(x.gtab);
  graph_free(g);
  return st;
}

/* ---- rows of the graph, generated alone ------------------------------------------ */

/* One thread's (row slot, source) pairs of the in-lists, in increasing source order. */
struct pair_buf {
  int64_t n, cap;
  int32_t (*pr)[2];
};

static int pair_push(struct pair_buf *b, int32_t slot, int32_t v) {
  if (b->n == b->cap) {
    int64_t cap = b->cap ? 2 * b->cap : 4096;
    void *q = realloc(b->pr, (size_t)cap * sizeof *b->pr);
    if (!q) return CG_ERR_NOMEM;
    b->pr = q;
    b->cap = cap;
  }
  b->pr[b->n][0] = slot;
  b->pr[b->n][1] = v;
  b->n++;
  return CG_OK;
}

int graph_synth_rows(const char *spec, double factor, const int32_t *rows, int64_t nrows, unsigned what,
                     struct graph_rows *out) {
  memset(out, 0, sizeof *out);
  if (!spec) return cg_err_set(CG_ERR_ARG, "graph_synth_rows: no spec given");
  struct synth_params p;
  TRY(parse_spec(spec, &p));
  if (!(factor > 0.0)) return cg_err_set(CG_ERR_ARG, "graph_synth_rows: factor %g (graph_synth_ex's, > 0)", factor);
  if (p.identity || p.shuffle)
    return cg_err_set(CG_ERR_ARG, "%s: generating a rank's rows alone (--load per-rank) does not support %s yet; "
                      "use --load whole", spec, p.identity ? "identity=1" : "shuffle=1");
  const int64_t n = p.n, f = p.f, c = p.c;
  for (int64_t i = 0; i < nrows; i++)
    if (rows[i] < 0 || rows[i] >= n || (i > 0 && rows[i] <= rows[i - 1]))
      return cg_err_set(CG_ERR_ARG, "graph_synth_rows: row %lld is %d: rows must be increasing ids below %lld",
                        (long long)i, rows[i], (long long)n);
  struct synth_ctx x = {.p = &p, .n = p.n};
  int st = CG_OK;
  int32_t *slot = NULL, *outl = NULL;
  int64_t *ooff = NULL, *ocnt = NULL, *ioff = NULL;
  int32_t *inl = NULL;
  float *cent = NULL;
  int nthreads = 1;
  struct pair_buf *bufs = NULL;
  TRY_GOTO(make_communities(&x), done);
  TRY_GOTO(make_weights(&x), done);
  out->nrows = nrows;
  out->feat_dim = f;
  out->num_classes = c;
  out->multilabel = p.multilabel;

  if (what & GRAPH_ROWS_ADJ) {
    /* out(u) of the rows, and in(u): every vertex's draws are made, those that hit a row
     * kept (a row's in-neighbours are the vertices that drew it); then the merge that
     * build_edges does. */
    slot = cg_malloc((size_t)n * sizeof *slot, "synthetic row slots");
    ooff = cg_malloc((size_t)(nrows + 1) * sizeof *ooff, "synthetic out-list offsets");
    ocnt = cg_calloc((size_t)nrows + 1, sizeof *ocnt, "synthetic out-list counts");
    ioff = cg_calloc((size_t)nrows + 1, sizeof *ioff, "synthetic in-list offsets");
    if (!slot || !ooff || !ocnt || !ioff) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    for (int64_t v = 0; v < n; v++) slot[v] = -1;
    for (int64_t i = 0; i < nrows; i++) slot[rows[i]] = (int32_t)i;
    int64_t maxwant = 0;
    ooff[0] = 0;
    for (int64_t v = 0; v < n; v++) {
      int64_t tin, tout;
      vertex_budget(&x, factor, v, &tin, &tout);
      if (tin + tout > maxwant) maxwant = tin + tout;
      if (slot[v] >= 0) ooff[slot[v] + 1] = tin + tout;
    }
    for (int64_t i = 0; i < nrows; i++) ooff[i + 1] += ooff[i];
    int hash_bits = 4;
    while (((int64_t)1 << hash_bits) < 2 * maxwant) hash_bits++;
    outl = cg_malloc((size_t)(ooff[nrows] > 0 ? ooff[nrows] : 1) * sizeof *outl, "synthetic out-lists");
#ifdef _OPENMP
    nthreads = omp_get_max_threads();
#endif
    bufs = calloc((size_t)nthreads, sizeof *bufs);
    if (!outl || !bufs) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    int nomem = 0;
    /* schedule(static): thread t takes the t-th contiguous range of sources, so its
     * pairs, concatenated in thread order, come in increasing source order */
#pragma omp parallel num_threads(nthreads) reduction(| : nomem)
    {
      int tid = 0;
#ifdef _OPENMP
      tid = omp_get_thread_num();
#endif
      uint32_t *set = malloc(((size_t)1 << hash_bits) * sizeof *set);
      int32_t *t = malloc((size_t)(maxwant > 0 ? maxwant : 1) * sizeof *t);
      if (!set || !t) nomem = 1;
#pragma omp for schedule(static)
      for (int64_t v = 0; v < n; v++) {
        if (!set || !t) continue;
        int64_t tin, tout;
        uint64_t nd = 0;
        vertex_budget(&x, factor, v, &tin, &tout);
        const int64_t k = draw_vertex(&x, v, tin, tout, set, t, &nd);
        if (slot[v] >= 0) {
          memcpy(outl + ooff[slot[v]], t, (size_t)k * sizeof *t);
          ocnt[slot[v]] = k;
        }
        for (int64_t e = 0; e < k; e++)
          if (slot[t[e]] >= 0 && pair_push(&bufs[tid], slot[t[e]], (int32_t)v) != CG_OK) nomem = 1;
      }
      free(set);
      free(t);
    }
    if (nomem) {
      st = cg_err_set(CG_ERR_NOMEM, "out of memory for the synthetic generator's draws");
      goto done;
    }
    /* in-lists: a stable counting sort of the pairs by row */
    int64_t npairs = 0;
    for (int b = 0; b < nthreads; b++)
      for (int64_t k = 0; k < bufs[b].n; k++) ioff[bufs[b].pr[k][0] + 1]++;
    for (int64_t i = 0; i < nrows; i++) ioff[i + 1] += ioff[i];
    npairs = ioff[nrows];
    inl = cg_malloc((size_t)(npairs > 0 ? npairs : 1) * sizeof *inl, "synthetic in-lists");
    int64_t *cur = cg_malloc((size_t)(nrows > 0 ? nrows : 1) * sizeof *cur, "synthetic in-list cursors");
    if (!inl || !cur) {
      cg_free(cur);
      st = CG_ERR_NOMEM;
      goto done;
    }
    if (nrows) memcpy(cur, ioff, (size_t)nrows * sizeof *cur);
    for (int b = 0; b < nthreads; b++)
      for (int64_t k = 0; k < bufs[b].n; k++) inl[cur[bufs[b].pr[k][0]]++] = bufs[b].pr[k][1];
    cg_free(cur);
    for (int b = 0; b < nthreads; b++) {
      free(bufs[b].pr);
      bufs[b].pr = NULL;
    }
    /* row i = out(rows[i]) U in(rows[i]), as build_edges' MERGE_ROW */
#define MERGE_ROWS(EMIT)                                                          \
  do {                                                                            \
    const int32_t *o = outl + ooff[i], *i_ = inl + ioff[i];                       \
    int64_t no = ocnt[i], ni = ioff[i + 1] - ioff[i], a_ = 0, b_ = 0;             \
    while (a_ < no || b_ < ni) {                                                  \
      int32_t v;                                                                  \
      if (b_ >= ni || (a_ < no && o[a_] < i_[b_]))                                \
        v = o[a_++];                                                              \
      else if (a_ >= no || i_[b_] < o[a_])                                        \
        v = i_[b_++];                                                             \
      else {                                                                      \
        v = o[a_++];                                                              \
        b_++;                                                                     \
      }                                                                           \
      EMIT;                                                                       \
    }                                                                             \
  } while (0)
    out->rowptr = cg_malloc((size_t)(nrows + 1) * sizeof *out->rowptr, "row pointers of the rows");
    if (!out->rowptr) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    out->rowptr[0] = 0;
    for (int64_t i = 0; i < nrows; i++) {
      int64_t cnt = 0;
      MERGE_ROWS((void)v; cnt++);
      out->rowptr[i + 1] = out->rowptr[i] + cnt;
    }
    out->colidx = cg_malloc((size_t)(out->rowptr[nrows] > 0 ? out->rowptr[nrows] : 1) * sizeof *out->colidx,
                            "columns of the rows");
    if (!out->colidx) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    for (int64_t i = 0; i < nrows; i++) {
      int32_t *dst = out->colidx + out->rowptr[i];
      MERGE_ROWS(*dst++ = v);
    }
#undef MERGE_ROWS
  }

  /* labels, features, split: each a function of the vertex */
  cent = make_centroids(&p);
  out->feat = cg_malloc((size_t)(nrows > 0 ? nrows : 1) * (size_t)f * sizeof *out->feat, "feature rows");
  out->split = cg_malloc((size_t)(nrows > 0 ? nrows : 1), "split of the rows");
  if (p.multilabel) out->mlabels = cg_calloc((size_t)(nrows > 0 ? nrows : 1), (size_t)c, "multi-label rows");
  else out->labels = cg_malloc((size_t)(nrows > 0 ? nrows : 1) * sizeof *out->labels, "labels of the rows");
  double *acc = p.multilabel ? cg_malloc((size_t)f * sizeof *acc, "multilabel feature accumulator") : NULL;
  if (!cent || !out->feat || !out->split || (p.multilabel ? !out->mlabels || !acc : !out->labels)) {
    cg_free(acc);
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int64_t i = 0; i < nrows; i++) {
    const int64_t u = rows[i];
    uint8_t *mrow = p.multilabel ? out->mlabels + i * c : NULL;
    int32_t label = 0;
    label_vertex(&x, u, &label, mrow);
    if (!p.multilabel) out->labels[i] = label;
    feature_vertex(&p, cent, u, label, mrow, acc, out->feat + i * f);
    if (what & GRAPH_ROWS_FEAT_ROWNORM) graph_feat_row_normalise(out->feat + i * f, f);
    out->split[i] = split_vertex(&p, u);
  }
  cg_free(acc);

done:
  for (int i = 0; bufs && i < nthreads; i++) free(bufs[i].pr);
  free(bufs);
  cg_free(slot);
  cg_free(outl);
  cg_free(ooff);
  cg_free(ocnt);
  cg_free(ioff);
  cg_free(inl);
  cg_free(cent);
  cg_free(x.bound);
  cg_free(x.comm);
  cg_free(x.w);
  cg_free(x.ctab);
  cg_free(x.gtab);
  if (st != CG_OK) graph_rows_free(out);
  return st;
}
