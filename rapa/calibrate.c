/* rapa/calibrate.c — the cost model's rates: measured at start-up on the rank's own
 * backend, or read from a profile (rapa/balance.h).
 *
 * Design notes (the why):
 * - Measured at the model's own shapes (GEMMs of n/P rows at each layer's widths, the
 *   graph's own operator at the widths the model aggregates): a GEMM of 2708 x 1433 x 16
 *   runs at a fraction of the rate of a 4096 x 256 x 256 one, and the partitioner must
 *   price the work it actually places.
 * - On the backend as training runs it (threads, an emulated speed), so that two ranks
 *   with 2 and 1 threads, or speeds 1 and 0.25, measure what they will do.
 * - Ranks of a host measure one after the other (as `capgnn profile` does), so that
 *   they do not share the cores while measuring. Each rate is the median repetition's
 *   (3 to 15 repetitions of ~10 ms), not the fastest: training is compared by its median
 *   epoch, which contains what the machine's other work takes from memory bandwidth and
 *   caches as much as the median repetition does (three `capgnn plan`s of the Reddit twin
 *   on one rank: 334-375 ms from the fastest, 358-384 ms from the median, 374-447 ms
 *   measured; 2026-11-27). An emulated slow rank's wait is proportional to each repetition's own
 *   time, so the median keeps the ranks' ratio as the fastest did. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/attn.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/ops.h"
#include "core/ops_emulate.h"
#include "core/status.h"
#include "core/timer.h"
#include "rapa/balance.h"
#include "rapa/rapa_internal.h"

/* ---- from a profile ------------------------------------------------------------------ */

int rapa_rates_from_profile(const struct rapa_profile *p, int r, int staged, struct rapa_rates *out) {
  memset(out, 0, sizeof *out);
  const int n = rapa_profile_nranks(p);
  if (r < 0 || r >= n) return cg_err_set(CG_ERR_ARG, "the profile has %d ranks, not rank %d", n, r);
  const cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItem(p->root, "ranks"), r);
  const double mm = rapa_json_num(dev, "summary.mm_gflops"), sp = rapa_json_num(dev, "summary.spmm_gnnz_s");
  const double idt = rapa_json_num(dev, "summary.idt_gbs");
  if (!(mm > 0) || !(sp > 0) || !(idt > 0))
    return cg_err_set(CG_ERR_FORMAT, "profile: rank %d has no summary.mm_gflops / spmm_gnnz_s / idt_gbs", r);
  out->gemm_flops = mm * 1e9;
  out->spmm_rate = sp * 1e9;
  out->mem_bps = idt * 1e9;
  out->rng_eps = out->mem_bps / 8.0;
  out->op_s = 0.0;
  const double mem = rapa_json_num(dev, "device.memory_bytes");
  out->free_bytes = mem > 0 ? mem : 0.0;
  if (staged) {
    const double h = rapa_json_num(dev, "summary.h2d_gbs"), d = rapa_json_num(dev, "summary.d2h_gbs");
    out->h2d_bps = h > 0 ? h * 1e9 : 0.0;
    out->d2h_bps = d > 0 ? d * 1e9 : 0.0;
  }
  return CG_OK;
}

int rapa_links_from_profile(const struct rapa_profile *p, struct rapa_links *out) {
  const int n = rapa_profile_nranks(p);
  TRY(rapa_links_alloc(out, n));
  const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(p->root, "links"), "matrix");
  const cJSON *bw = cJSON_GetObjectItem(m, "bandwidth_gbs"), *lat = cJSON_GetObjectItem(m, "latency_us");
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      if (a == b) continue;
      const cJSON *x = cJSON_GetArrayItem(cJSON_GetArrayItem(bw, a), b);
      const cJSON *y = cJSON_GetArrayItem(cJSON_GetArrayItem(lat, a), b);
      if (!cJSON_IsNumber(x) || !cJSON_IsNumber(y) || !(x->valuedouble > 0)) {
        rapa_links_free(out);
        return cg_err_set(CG_ERR_FORMAT, "profile: links.matrix has no bandwidth or latency for ranks %d -> %d", a, b);
      }
      out->bw_bps[(size_t)a * n + b] = x->valuedouble * 1e9;
      out->lat_s[(size_t)a * n + b] = y->valuedouble * 1e-6;
    }
  return CG_OK;
}

/* ---- measured at start-up ---------------------------------------------------------- */

struct ew_ctx {
  struct cg_backend *be;
  float *x, *y;
  int32_t *gid;
  int64_t rows, cols;
  int kind; /* 0 relu, 1 dropout, 2 fifty one-element fills */
  uint32_t calls; /* dropout: each call draws a new mask (its key's epoch), as training does */
};

/* Dropout's key changes from call to call: training draws a new mask every step, and a
 * mask drawn again and again on the same rows is learnt by the CPU's branch predictor
 * (cora's 16-wide rows, 1354 x 16: 0.17-0.19 G elements/s with one key, 0.075-0.078 with
 * a new key per call, the rate training runs at: 0.078, CAPGNN_PROFILE_OPS on 2 ranks). */
static int ew_op(void *p) {
  struct ew_ctx *c = p;
  struct cg_dropout_key key = {1, ++c->calls, 0};
  switch (c->kind) {
    case 0: c->be->relu_fwd(c->be, c->x, c->y, c->rows * c->cols); break;
    case 1: c->be->dropout(c->be, c->x, c->y, c->rows, c->cols, c->gid, 0.5f, key); break;
    default:
      for (int i = 0; i < 50; i++) c->be->fill(c->be, c->y, 1, 0.0f);
  }
  return CG_OK;
}

/* An elementwise op on rows x cols floats of backend memory (the median repetition). */
static int elementwise_run(struct cg_backend *be, int kind, int64_t rows, int64_t cols,
                           const struct rapa_bench_opts *o, double *seconds) {
  int st = CG_OK;
  struct ew_ctx c = {be, NULL, NULL, NULL, rows, cols, kind, 0};
  const size_t n = (size_t)(rows * cols);
  int32_t *gid = NULL;
  float *h = NULL;
  TRY_GOTO(be->alloc(be, (void **)&c.x, n * sizeof(float), "calibration input"), done);
  TRY_GOTO(be->alloc(be, (void **)&c.y, n * sizeof(float), "calibration output"), done);
  TRY_GOTO(be->alloc(be, (void **)&c.gid, (size_t)rows * sizeof(int32_t), "calibration ids"), done);
  gid = cg_malloc((size_t)rows * sizeof *gid, "calibration ids");
  h = cg_malloc(n * sizeof *h, "calibration values");
  if (!gid || !h) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int64_t r = 0; r < rows; r++) gid[r] = (int32_t)r;
  for (size_t i = 0; i < n; i++) h[i] = (float)((int)(i % 7) - 3);
  TRY_GOTO(be->upload(be, c.gid, gid, (size_t)rows * sizeof *gid), done);
  TRY_GOTO(be->upload(be, c.x, h, n * sizeof *h), done);
  struct rapa_timing t;
  TRY_GOTO(rapa_measure(be, o, ew_op, &c, &t), done);
  *seconds = t.median_s;
done:
  be->free(be, c.x);
  be->free(be, c.y);
  be->free(be, c.gid);
  cg_free(gid);
  cg_free(h);
  return st;
}

/* The optimizer's update of n parameters (weights, gradient and the two moments in
 * backend memory), with Adam's default coefficients. */
struct adam_ctx {
  struct cg_backend *be;
  float *w, *g, *m, *v;
  int64_t n;
};
static int adam_op(void *p) {
  struct adam_ctx *c = p;
  const struct cg_adam_params ap = {0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, 0};
  c->be->adam(c->be, c->w, c->g, c->m, c->v, c->n, &ap, 1);
  return CG_OK;
}
static int adam_run(struct cg_backend *be, int64_t n, const struct rapa_bench_opts *o, double *seconds) {
  int st = CG_OK;
  struct adam_ctx c = {be, NULL, NULL, NULL, NULL, n};
  float *h = cg_malloc((size_t)n * sizeof *h, "calibration parameters");
  if (!h) return CG_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) h[i] = (float)((int)(i % 7) - 3) * 0.01f;
  float **bufs[4] = {&c.w, &c.g, &c.m, &c.v};
  for (int k = 0; k < 4 && st == CG_OK; k++) {
    st = be->alloc(be, (void **)bufs[k], (size_t)n * sizeof(float), "calibration optimizer state");
    if (st == CG_OK) st = be->upload(be, *bufs[k], h, (size_t)n * sizeof(float));
  }
  if (st == CG_OK) {
    struct rapa_timing t;
    st = rapa_measure(be, o, adam_op, &c, &t);
    if (st == CG_OK) *seconds = t.median_s;
  }
  for (int k = 0; k < 4; k++) be->free(be, *bufs[k]);
  cg_free(h);
  return st;
}

/* The sparse-feature ops (csr_mm, csr_mm_t, csr_dropout) on the features' own CSR. */
struct csr_ctx {
  struct cg_backend *be;
  struct cg_edges x;
  float *vals, *vout, *w, *y;
  int32_t *gid;
  int64_t f;
  int kind; /* 0 csr_mm (X·W), 1 csr_mm_t (Xᵀ·dY), 2 csr_dropout */
  uint32_t calls; /* csr_dropout: a new mask per call (ew_op says why) */
};

static int csr_op(void *p) {
  struct csr_ctx *c = p;
  struct cg_dropout_key key = {1, ++c->calls, 0};
  switch (c->kind) {
    case 0: c->be->csr_mm(c->be, &c->x, c->vals, c->f, c->w, c->f, c->y, c->f); break;
    case 1: c->be->csr_mm_t(c->be, &c->x, c->vals, c->f, c->y, c->f, c->w, c->f); break;
    default: c->be->csr_dropout(c->be, &c->x, c->vals, c->vout, c->gid, 0.5f, key);
  }
  return CG_OK;
}

/* One benchmark at a batch long enough to time: a probe of one repetition gives the
 * op's time t, then the op runs ceil(10 ms / t) times per repetition (at most 4096); the
 * median repetition's time per op. */
struct bench_call {
  int kind; /* 0 GEMM, 1 SpMM, 2 elementwise, 3 a sparse-feature op (csr), 4 Adam over m parameters */
  struct cg_backend *be;
  int64_t m, n, k;         /* GEMM m x k -> n; elementwise rows x cols (n unused) */
  const struct cg_csr *a;  /* SpMM */
  int ew;                  /* elementwise kind */
  struct csr_ctx *csr;     /* kind 3 */
};
static int elementwise_run(struct cg_backend *be, int kind, int64_t rows, int64_t cols,
                           const struct rapa_bench_opts *o, double *seconds);
static int bench_once(const struct bench_call *b, const struct rapa_bench_opts *o, double *seconds) {
  struct rapa_timing t;
  switch (b->kind) {
    case 0: TRY(rapa_bench_gemm(b->be, b->m, b->n, b->k, 2e-4, o, &t)); break;
    case 1: TRY(rapa_bench_spmm(b->be, b->a, b->n, o, &t)); break;
    case 3: TRY(rapa_measure(b->be, o, csr_op, b->csr, &t)); break;
    case 4: return adam_run(b->be, b->m, o, seconds);
    default: return elementwise_run(b->be, b->ew, b->m, b->k, o, seconds);
  }
  *seconds = t.median_s;
  return CG_OK;
}
/* evict: bytes written between two calls (rapa_bench_opts.evict_bytes; 0: none); a
 * repetition then writes at most RAPA_EVICT_REP bytes in all (fewer calls). */
#define RAPA_EVICT_REP (64.0 * 1048576.0)
static int bench_timed(const struct bench_call *b, double evict, double *seconds) {
  struct rapa_bench_opts o;
  rapa_bench_opts_default(&o, 1);
  o.min_reps = o.max_reps = 1;
  o.evict_bytes = evict;
  double t1 = 0;
  TRY(bench_once(b, &o, &t1));
  rapa_bench_opts_default(&o, 0);
  o.evict_bytes = evict;
  double want = 10e-3 / (t1 > 1e-9 ? t1 : 1e-9);
  if (evict > 0 && want > RAPA_EVICT_REP / evict) want = RAPA_EVICT_REP / evict;
  o.batch = want < 1 ? 1 : want > 4096 ? 4096 : (int)ceil(want);
  o.warmup = 0; /* the probe was the warm-up */
  return bench_once(b, &o, seconds);
}

/* The bytes a rank's training step touches (rapa_cost_rank's memory_bytes: the model's
 * buffers for n/P rows and their share of the operator), at most twice the last-level
 * cache where the C library knows it (else 64 MiB): written between two timed calls, they
 * leave the op's operands where a step leaves them. A cora rank's ops ran 1.5-2x slower
 * in training (CAPGNN_PROFILE_OPS) than called again and again on hot operands; SpMM of
 * a 1,384-row, 6,386-nonzero operator at width 16: 5.4 G nonzero-columns/s hot, 0.84
 * with 16 MB written between calls, 1.47 in training (2 ranks; 1.8 MB of buffers each). */
static double step_bytes(const struct graph *g, const struct rapa_shape *s, int P) {
  const int64_t rows = g->n / P > 0 ? g->n / P : 1;
  int64_t zero[1] = {0};
  const struct rapa_load load = {rows, 0, (g->m + (s->sage ? 0 : g->n)) / P, zero, zero};
  const struct rapa_rates unit = {1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  struct rapa_cost c;
  if (rapa_cost_rank(s, &load, &unit, NULL, 0, 1, &c) != CG_OK) {
    cg_err_clear();
    return 0.0;
  }
  double cap = 64.0 * 1048576.0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) cap = 2.0 * (double)l3;
#endif
  return c.memory_bytes < cap ? c.memory_bytes : cap;
}

/* The first rows of the graph's aggregation operator, at most ~4M nonzeros (all
 * columns: the rows read anything). */
static int operator_sample(const struct graph *g, const struct rapa_shape *s, struct cg_csr *a) {
  struct cg_csr full;
  memset(&full, 0, sizeof full);
  const enum graph_norm norm = s->sage ? GRAPH_NORM_MEAN : GRAPH_NORM_GCN;
  TRY(graph_aggr_build(g, norm, s->sage ? 0 : 1, &full));
  int64_t rows = full.nrows;
  while (rows > 1 && full.rowptr[rows] > 4000000) rows /= 2;
  int st = cg_csr_alloc(a, rows, full.ncols, full.rowptr[rows], 1);
  if (st == CG_OK) {
    memcpy(a->rowptr, full.rowptr, (size_t)(rows + 1) * sizeof *a->rowptr);
    memcpy(a->colidx, full.colidx, (size_t)full.rowptr[rows] * sizeof *a->colidx);
    memcpy(a->vals, full.vals, (size_t)full.rowptr[rows] * sizeof *a->vals);
  }
  cg_csr_free(&full);
  return st;
}

/* The sparse-feature ops' rates (rapa_rates.csr_rate, csr_t_rate, csr_drop_eps) on the
 * features of the first n/P rows, at layer 0's output width: these loops run at a few
 * times less than the aggregation's SpMM on a CPU (one scattered row of W per stored
 * entry, a Philox call per entry), so pricing them at the SpMM rate under-predicted a
 * sparse cora epoch by 60-70 %. op_s (already measured) is taken out of each timing, as
 * for the elementwise ops. */
static int csr_feature_rates(struct cg_backend *be, const struct graph *g, const struct rapa_shape *s, int P,
                             double ws, struct rapa_rates *r) {
  const int64_t rows = g->n / P > 0 ? g->n / P : 1;
  const int64_t f = s->layers > 1 ? s->hidden : s->classes;
  struct cg_csr x;
  memset(&x, 0, sizeof x);
  struct csr_ctx c;
  memset(&c, 0, sizeof c);
  c.be = be;
  c.f = f;
  int32_t *ids = cg_malloc((size_t)rows * sizeof *ids, "calibration feature rows");
  float *h = NULL;
  int st = ids ? CG_OK : CG_ERR_NOMEM;
  if (st == CG_OK) {
    for (int64_t i = 0; i < rows; i++) ids[i] = (int32_t)i;
    st = graph_feat_csr(g, ids, rows, &x);
  }
  if (st == CG_OK && x.nnz < 1) goto done; /* no stored entry: nothing to price */
  const size_t wn = (size_t)(x.ncols * f), yn = (size_t)(rows * f);
  const size_t hn = (wn > yn ? wn : yn) > (size_t)x.nnz ? (wn > yn ? wn : yn) : (size_t)x.nnz;
  if (st == CG_OK) st = cg_edges_upload(be, &x, &c.x);
  if (st == CG_OK) st = be->alloc(be, (void **)&c.vals, (size_t)x.nnz * sizeof(float), "calibration feature values");
  if (st == CG_OK) st = be->alloc(be, (void **)&c.vout, (size_t)x.nnz * sizeof(float), "calibration dropout values");
  if (st == CG_OK) st = be->alloc(be, (void **)&c.w, wn * sizeof(float), "calibration weights");
  if (st == CG_OK) st = be->alloc(be, (void **)&c.y, yn * sizeof(float), "calibration products");
  if (st == CG_OK) st = be->alloc(be, (void **)&c.gid, (size_t)rows * sizeof(int32_t), "calibration ids");
  if (st == CG_OK && !(h = cg_malloc(hn * sizeof *h, "calibration values"))) st = CG_ERR_NOMEM;
  if (st == CG_OK) {
    for (size_t i = 0; i < hn; i++) h[i] = (float)((int)(i % 7) - 3) * 0.25f;
    st = be->upload(be, c.vals, x.vals, (size_t)x.nnz * sizeof(float));
    if (st == CG_OK) st = be->upload(be, c.w, h, wn * sizeof(float));
    if (st == CG_OK) st = be->upload(be, c.y, h, yn * sizeof(float));
    if (st == CG_OK) st = be->upload(be, c.gid, ids, (size_t)rows * sizeof(int32_t));
  }
  double t[3] = {0, 0, 0};
  for (int k = 0; k < 3 && st == CG_OK; k++) {
    c.kind = k;
    const struct bench_call b = {3, be, 0, 0, 0, NULL, 0, &c};
    st = bench_timed(&b, ws, &t[k]);
    if (st == CG_OK) t[k] = t[k] - r->op_s > 0.5 * t[k] ? t[k] - r->op_s : 0.5 * t[k];
  }
  if (st == CG_OK) {
    r->csr_rate = (double)x.nnz * (double)f / t[0];
    r->csr_t_rate = (double)x.nnz * (double)f / t[1];
    r->csr_drop_eps = (double)x.nnz / t[2];
  }
done:
  cg_edges_free(be, &c.x);
  be->free(be, c.vals);
  be->free(be, c.vout);
  be->free(be, c.w);
  be->free(be, c.y);
  be->free(be, c.gid);
  cg_free(h);
  cg_free(ids);
  cg_csr_free(&x);
  return st;
}

static void rates_at_speed(struct rapa_rates *r, double f) {
  r->gemm_flops *= f;
  r->spmm_rate *= f;
  r->mem_bps *= f;
  r->rng_eps *= f;
  r->adam_eps *= f;
  r->csr_rate *= f;
  r->csr_t_rate *= f;
  r->csr_drop_eps *= f;
  r->op_s /= f;
}

int rapa_rates_emulate(struct rapa_rates *rates, int P) {
  const char *env = getenv("CAPGNN_EMULATE_SPEED");
  for (int p = 0; p < P && env && env[0]; p++) {
    double f = 1.0;
    TRY(cg_emulate_speed_parse(env, p, P, &f));
    rates_at_speed(&rates[p], f);
  }
  return CG_OK;
}

int rapa_rates_measure_local(struct cg_backend *be, const struct graph *g, const struct rapa_shape *s, int P,
                             struct rapa_rates *r) {
  memset(r, 0, sizeof *r);
  const int64_t rows = g->n / P > 0 ? g->n / P : 1;
  const double ws = be->kind == CG_DEVICE_CPU ? step_bytes(g, s, P) : 0.0;
  double flops = 0, secs = 0;
  /* sparse features: layer 0 multiplies them as CSR (csr_feature_rates), no dense GEMM
   * runs there, and its 1433-wide GEMM ran at 2-3x the rate of the narrow hidden ones
   * that do (cora 2 x 16 on 2 ranks: 3 GEMMs of 1,384 x 16 x 7, 0.085-0.105 ms a step in
   * training, CAPGNN_PROFILE_OPS; 0.027 ms priced at the 1433-wide GEMM's rate) */
  const int skip0 = s->feat_density > 0 && s->layers > 1;
  for (int l = skip0; l < s->layers; l++) {
    const int64_t fin = l == 0 ? s->features : s->hidden, fout = l == s->layers - 1 ? s->classes : s->hidden;
    int seen = 0; /* each distinct shape once */
    for (int k = skip0; k < l; k++) {
      const int64_t a = k == 0 ? s->features : s->hidden, b = k == s->layers - 1 ? s->classes : s->hidden;
      if (a == fin && b == fout) seen = 1;
    }
    if (seen) continue;
    const struct bench_call b = {0, be, rows, fout, fin, NULL, 0, NULL};
    double t = 0;
    TRY(bench_timed(&b, ws, &t));
    flops += 2.0 * (double)rows * (double)fin * (double)fout;
    secs += t;
  }
  r->gemm_flops = flops / secs;
  struct cg_csr a;
  memset(&a, 0, sizeof a);
  TRY(operator_sample(g, s, &a));
  double cols = 0;
  secs = 0;
  int st = CG_OK;
  for (int l = 0; l < s->layers && st == CG_OK; l++) {
    const int64_t fin = l == 0 ? s->features : s->hidden, fout = l == s->layers - 1 ? s->classes : s->hidden;
    const float p = l == 0 ? s->input_dropout : s->dropout;
    if (l == 0 && p == 0.0f) continue; /* aggregated once at set-up */
    const int64_t f = fout < fin ? fout : fin;
    const struct bench_call b = {1, be, 0, f, 0, &a, 0, NULL};
    double t = 0;
    st = bench_timed(&b, ws, &t);
    cols += (double)a.nnz * (double)f;
    secs += t;
  }
  if (st == CG_OK && secs == 0) { /* a one-layer model without input dropout: no SpMM per step */
    const struct bench_call b = {1, be, 0, s->hidden, 0, &a, 0, NULL};
    double t = 0;
    st = bench_timed(&b, ws, &t);
    cols = (double)a.nnz * (double)s->hidden;
    secs = t;
  }
  cg_csr_free(&a);
  TRY(st);
  r->spmm_rate = cols / secs;
  double t_relu = 0, t_ops = 0;
  const struct bench_call relu = {2, be, rows, 0, s->hidden, NULL, 0, NULL};
  const struct bench_call tiny = {2, be, 1, 0, 1, NULL, 2, NULL};
  TRY(bench_timed(&relu, ws, &t_relu));
  TRY(bench_timed(&tiny, 0.0, &t_ops)); /* a call's own cost: nothing evicted */
  r->op_s = t_ops / 50.0;
  /* the per-op cost is part of every timing above: take it out of the rates */
  const double relu_s = t_relu - r->op_s > 0.5 * t_relu ? t_relu - r->op_s : 0.5 * t_relu;
  r->mem_bps = 8.0 * (double)rows * (double)s->hidden / relu_s;
  /* dropout at the widths the model drops, weighted by the elements a step drops at each
   * (per row: the dense features once, each hidden layer's input forward and backward):
   * the CPU kernel draws 32 columns at a time in vector registers and the rest one by
   * one, so a 16-wide hidden row drops ~8x slower per element than a 1433-wide feature
   * row, and a rate measured on the features alone under-priced cora's hidden dropout */
  const int64_t wf = s->features < 4096 ? s->features : 4096;
  const double e_feat = s->input_dropout > 0 && !(s->feat_density > 0) ? (double)wf : 0.0;
  const double e_hid = s->dropout > 0 && s->layers > 1 ? 2.0 * (s->layers - 1) * (double)s->hidden : 0.0;
  const int64_t widths[2] = {e_feat > 0 || e_hid == 0 ? wf : 0, e_hid > 0 ? s->hidden : 0};
  const double elems[2] = {e_feat > 0 || e_hid == 0 ? (e_feat > 0 ? e_feat : 1.0) : 0.0, e_hid};
  double e_all = 0, s_all = 0;
  for (int k = 0; k < 2; k++) {
    if (!(elems[k] > 0) || widths[k] < 1) continue;
    const struct bench_call drop = {2, be, rows, 0, widths[k], NULL, 1, NULL};
    double t_drop = 0;
    TRY(bench_timed(&drop, ws, &t_drop));
    const double drop_s = t_drop - r->op_s > 0.5 * t_drop ? t_drop - r->op_s : 0.5 * t_drop;
    const double eps = (double)rows * (double)widths[k] / drop_s;
    e_all += elems[k];
    s_all += elems[k] / eps;
  }
  r->rng_eps = e_all / s_all;
  /* the optimizer over the model's parameters in one call (training makes one per tensor:
   * the calls' fixed cost is op_s's), op_s taken out as above. On a CPU the update is
   * arithmetic-bound: cora's 23,063 parameters took 0.12-0.16 ms a step in training
   * (CAPGNN_PROFILE_OPS, 2 and 4 ranks), where 28 bytes each at the memory rate said
   * 0.012-0.017 ms */
  const int64_t params = rapa_shape_params(s);
  const struct bench_call adam = {4, be, params, 0, 0, NULL, 0, NULL};
  double t_adam = 0;
  TRY(bench_timed(&adam, ws, &t_adam));
  r->adam_eps = (double)params / (t_adam - r->op_s > 0.5 * t_adam ? t_adam - r->op_s : 0.5 * t_adam);
  if (s->feat_density > 0 && g->feat_dim > 0) TRY(csr_feature_rates(be, g, s, P, ws, r));
  size_t fr = 0, tot = 0;
  if (be->mem_info && be->mem_info(be, &fr, &tot) == CG_OK) r->free_bytes = (double)fr;
  if (be->kind == CG_DEVICE_CUDA) { /* halo rows may be staged through the host */
    struct rapa_bench_opts o;
    rapa_bench_opts_default(&o, 1);
    struct rapa_timing th, td;
    const size_t bytes = (size_t)1 << 20;
    TRY(rapa_bench_copy(be, RAPA_COPY_H2D, 0, bytes, &o, &th));
    TRY(rapa_bench_copy(be, RAPA_COPY_D2H, 0, bytes, &o, &td));
    r->h2d_bps = (double)bytes / th.min_s;
    r->d2h_bps = (double)bytes / td.min_s;
  }
  LOG_DEBUG("rapa", "rates: GEMM %.3g GFLOP/s, SpMM %.3g G nonzero-columns/s, elementwise %.3g GB/s, dropout %.3g "
            "G elements/s, Adam %.3g G parameters/s, %.3g us per op, sparse features: csr_mm %.3g, csr_mm_t %.3g G nonzero-columns/s, dropout "
            "%.3g G entries/s; %.3g GB free", r->gemm_flops * 1e-9, r->spmm_rate * 1e-9, r->mem_bps * 1e-9,
            r->rng_eps * 1e-9, r->adam_eps * 1e-9, r->op_s * 1e6, r->csr_rate * 1e-9, r->csr_t_rate * 1e-9, r->csr_drop_eps * 1e-9,
            r->free_bytes * 1e-9);
  return CG_OK;
}

/* Every field of struct rapa_rates, by position (the collective carries doubles): a new
 * field goes into both functions and NRATE. */
#define NRATE 12
static void rates_pack(const struct rapa_rates *r, double *v) {
  v[0] = r->gemm_flops; v[1] = r->spmm_rate; v[2] = r->mem_bps; v[3] = r->rng_eps;
  v[4] = r->op_s; v[5] = r->h2d_bps; v[6] = r->d2h_bps; v[7] = r->free_bytes;
  v[8] = r->csr_rate; v[9] = r->csr_t_rate; v[10] = r->csr_drop_eps; v[11] = r->adam_eps;
}
static void rates_unpack(const double *v, struct rapa_rates *r) {
  r->gemm_flops = v[0]; r->spmm_rate = v[1]; r->mem_bps = v[2]; r->rng_eps = v[3];
  r->op_s = v[4]; r->h2d_bps = v[5]; r->d2h_bps = v[6]; r->free_bytes = v[7];
  r->csr_rate = v[8]; r->csr_t_rate = v[9]; r->csr_drop_eps = v[10]; r->adam_eps = v[11];
}

double rapa_test_rate_scale(int rank) {
  const char *spec = getenv("CAPGNN_TEST_RATE_SCALE");
  if (!spec || !spec[0]) return 1.0;
  const char *p = spec;
  for (int i = 0; i < rank && p; i++) {
    p = strchr(p, ',');
    if (p) p++;
  }
  const double f = p ? strtod(p, NULL) : 0.0;
  return f > 0.0 ? f : 1.0;
}

/* (CAPGNN_TEST_RATE_SCALE: tests/test_rapa_cli.sh checks the warning of rates_check_alike
 * with it) */
static void test_rate_scale(int rank, struct rapa_rates *r) {
  const double f = rapa_test_rate_scale(rank);
  r->gemm_flops *= f;
  r->spmm_rate *= f;
}

int rapa_rates_apart(int P, char *const *ids, const double *gemm, const double *spmm, char *out, size_t len) {
  size_t k = 0;
  int groups = 0;
  if (len) out[0] = '\0';
  for (int a = 0; a < P; a++) {
    int lo_g = a, hi_g = a, lo_s = a, hi_s = a, n = 0;
    int first = 1; /* a is the first of its kind */
    for (int b = 0; b < a && first; b++) first = strcmp(ids[a], ids[b]) != 0;
    if (!first) continue;
    for (int b = a; b < P; b++) {
      if (strcmp(ids[a], ids[b])) continue;
      n++;
      if (gemm[b] < gemm[lo_g]) lo_g = b;
      if (gemm[b] > gemm[hi_g]) hi_g = b;
      if (spmm[b] < spmm[lo_s]) lo_s = b;
      if (spmm[b] > spmm[hi_s]) hi_s = b;
    }
    const double rg = gemm[lo_g] > 0 ? gemm[hi_g] / gemm[lo_g] : 1.0;
    const double rs = spmm[lo_s] > 0 ? spmm[hi_s] / spmm[lo_s] : 1.0;
    if (n < 2 || !(rg > RAPA_RATES_APART || rs > RAPA_RATES_APART)) continue;
    groups++;
    const int g = rg > rs;
    const int w = snprintf(out + k, len > k ? len - k : 0, "%sranks alike (%s) measured rates %.1fx apart (%s: rank "
                           "%d %.3g, rank %d %.3g)", k ? "\n" : "", ids[a], g ? rg : rs,
                           g ? "GEMM FLOP/s" : "SpMM nonzero-columns/s", g ? lo_g : lo_s, g ? gemm[lo_g] : spmm[lo_s],
                           g ? hi_g : hi_s, g ? gemm[hi_g] : spmm[hi_s]);
    if (w > 0) k = k + (size_t)w < len ? k + (size_t)w : (len ? len - 1 : 0);
  }
  return groups;
}

/* CPU ranks alike (one host, the same threads, the same emulated speed)
 * should measure alike: when their GEMM or SpMM rates differ by more than 1.5x the
 * host was busy while one of them measured (seen: 0.08 against 0.51 of the capability
 * on three identical ranks), and the split will follow the noise. Rank 0 warns. */
static int rates_check_alike(struct comm *c, const struct cg_backend *be, const struct rapa_rates *rates) {
  const int rank = comm_rank(c), P = comm_size(c);
  double speed = 1.0;
  if (cg_emulate_speed_parse(getenv("CAPGNN_EMULATE_SPEED"), rank, P, &speed) != CG_OK) {
    cg_err_clear(); /* (refused at set-up; not this check's to report) */
    speed = 1.0;
  }
  char id[300];
  /* (GPU ranks of one host may be different models, which the backend does not name
   * here: CPU ranks only, each unlike any other when on a GPU). The threads are the CPU
   * backend's under the emulating wrapper (which has none of its own: "0 threads", and
   * ranks of --threads 2,1 taken for alike and warned about their different rates) */
  const int threads = cg_backend_cpu_threads(cg_backend_emulate_inner_const(be));
  if (be->kind == CG_DEVICE_CPU)
    snprintf(id, sizeof id, "host %s, cpu, %d thread%s, speed %.6g", cg_hostname(), threads, threads == 1 ? "" : "s",
             speed);
  else
    snprintf(id, sizeof id, "rank %d, a GPU", rank);
  char **ids = NULL;
  TRY(comm_gather_text(c, id, 0, &ids));
  /* every rank's host, CPU threads (0: a GPU) and speed, for the check of more threads
   * measuring slower below */
  int64_t *who = cg_malloc(3 * (size_t)P * sizeof *who, "the ranks' threads");
  int st = who ? CG_OK : CG_ERR_NOMEM;
  st = comm_agree(c, st, "gathering the ranks' threads");
  if (st == CG_OK) st = comm_allgather_i64(c, (int64_t)(cg_fnv1a_str(cg_hostname()) >> 1), who);
  if (st == CG_OK) st = comm_allgather_i64(c, be->kind == CG_DEVICE_CPU ? threads : 0, who + P);
  if (st == CG_OK) st = comm_allgather_i64(c, (int64_t)llround(speed * 1e9), who + 2 * P);
  if (st != CG_OK) {
    comm_texts_free(ids, P);
    cg_free(who);
    return st;
  }
  if (rank == 0) {
    /* a CPU rank with more threads than another of its host that measured slower (per unit of
     * speed): its threads share cores (more threads than the host has, or ranks unbound:
     * `mpirun --bind-to none`), and the split follows that. Seen: a 2-thread rank beside a
     * 1-thread one on 2 cores, rated at 1-3 % of the capability. Rank 0 warns, once. */
    for (int i = 0, warned = 0; i < P && !warned; i++)
      for (int j = 0; j < P && !warned; j++) {
        const double si = (double)who[2 * P + i] * 1e-9, sj = (double)who[2 * P + j] * 1e-9;
        if (who[i] != who[j] || who[P + j] < 1 || who[P + i] <= who[P + j] || !(si > 0) || !(sj > 0)) continue;
        if (!(rates[i].gemm_flops / si < rates[j].gemm_flops / sj)) continue;
        LOG_WARN("rapa", "rank %d (%lld threads) measured its GEMMs at %.3g GFLOP/s, slower than rank %d (%lld "
                 "thread%s) at %.3g: its threads share cores (more threads than the host's cores, or ranks unbound: "
                 "mpirun --bind-to none?), and the split follows that; give each rank cores of its own, or pass "
                 "--profile FILE from `capgnn profile`", i, (long long)who[P + i], rates[i].gemm_flops / si * 1e-9,
                 j, (long long)who[P + j], who[P + j] == 1 ? "" : "s", rates[j].gemm_flops / sj * 1e-9);
        warned = 1;
      }
  }
  cg_free(who);
  if (rank == 0) {
    double *v = cg_calloc(2 * (size_t)P, sizeof *v, "the ranks' rates");
    char *lines = cg_malloc(8192, "the rates' warnings");
    if (v && lines) {
      for (int r = 0; r < P; r++) v[r] = rates[r].gemm_flops, v[P + r] = rates[r].spmm_rate;
      rapa_rates_apart(P, ids, v, v + P, lines, 8192);
      char *save = NULL;
      for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        LOG_WARN("rapa", "%s: something else ran while one of them measured, and the split follows it; measure "
                 "on a quiet host, or pass --profile FILE from `capgnn profile`", l);
    }
    cg_err_clear(); /* (an allocation that failed leaves a check out, not the run) */
    cg_free(v);
    cg_free(lines);
  }
  comm_texts_free(ids, P);
  return CG_OK;
}

/* The model's gradient all-reduce (n floats) on every rank together, as training runs it
 * (rapa_grad_allreduce_time: comm_grad's path and algorithm, a warm-up and 10 checked
 * calls); *out the largest median over the ranks (collective). */
static int measure_allreduce(struct comm *c, struct cg_backend *be, int64_t n, double *out) {
  struct rapa_bench_opts bo;
  rapa_bench_opts_default(&bo, 0);
  struct rapa_timing t;
  TRY(rapa_grad_allreduce_time(c, be, n, &bo, &t, NULL, NULL));
  double med = t.median_s;
  TRY(comm_allreduce_host(c, &med, 1, COMM_MAX));
  *out = med;
  return CG_OK;
}

int rapa_rates_measure(struct comm *c, struct cg_backend *be, const struct graph *g, const struct rapa_shape *s,
                       struct rapa_rates *rates, struct rapa_links *links) {
  const int rank = comm_rank(c), P = comm_size(c);
  const double t0 = cg_time_now();
  int st = CG_OK;
  double *all = cg_calloc((size_t)P * NRATE, sizeof *all, "rates of the ranks");
  char *buf = NULL;
  if (!all) st = CG_ERR_NOMEM;
  TRY_GOTO(comm_agree(c, st, "allocating the rates"), done);
  /* ranks of a host take turns (a token passes along the host's ranks) */
  const int hl = comm_host_local_rank(c), hs = comm_host_local_size(c);
  for (int turn = 0; turn < hs; turn++) {
    if (turn == hl) {
      struct rapa_rates mine;
      st = rapa_rates_measure_local(be, g, s, P, &mine);
      if (st == CG_OK) test_rate_scale(rank, &mine);
      if (st == CG_OK) rates_pack(&mine, all + (size_t)rank * NRATE);
    }
    const int bst = comm_host_barrier(c); /* the turn ends; the others waited without spinning */
    if (bst != CG_OK && st == CG_OK) st = bst;
  }
  TRY_GOTO(comm_agree(c, st, "measuring this rank's rates"), done);
  TRY_GOTO(comm_allreduce_host(c, all, P * NRATE, COMM_SUM), done);
  for (int p = 0; p < P; p++) rates_unpack(all + (size_t)p * NRATE, &rates[p]);
  TRY_GOTO(rates_check_alike(c, be, rates), done);
  /* links: one pair at a time, 8 bytes (latency) and 256 KiB (bandwidth). Every rank
   * joins every pair's closing all-reduce, carrying whether its ping-pong failed, so that
   * a failure ends the loop on every rank at the same pair instead of leaving the others
   * waiting for a rank that left it. */
  const size_t big = 256 * 1024;
  double *lat = NULL, *bw = NULL;
  st = rapa_links_alloc(links, P);
  if (st == CG_OK) {
    buf = cg_calloc(2 * big, 1, "ping-pong buffers");
    lat = cg_calloc((size_t)P * P, sizeof *lat, "latencies");
    bw = cg_calloc((size_t)P * P, sizeof *bw, "bandwidths");
    if (!buf || !lat || !bw) st = CG_ERR_NOMEM;
  }
  st = comm_agree(c, st, "allocating the link measurement"); /* (the same status on every rank) */
  if (st == CG_OK) {
    for (int a = 0; a < P && st == CG_OK; a++)
      for (int b = a + 1; b < P && st == CG_OK; b++) {
        int mine = CG_OK;
        if (rank == a || rank == b) {
          const int peer = rank == a ? b : a;
          double small[21], large[7];
          mine = comm_pingpong(c, NULL, COMM_PATH_HOST, peer, buf, buf + big, 8, 21, small);
          if (mine == CG_OK) mine = comm_pingpong(c, NULL, COMM_PATH_HOST, peer, buf, buf + big, big, 7, large);
          if (mine == CG_OK && rank == a) {
            const double l = rapa_median(small + 1, 20) / 2.0, t = rapa_median(large + 1, 6) / 2.0;
            lat[(size_t)a * P + b] = lat[(size_t)b * P + a] = l;
            bw[(size_t)a * P + b] = bw[(size_t)b * P + a] = (double)big / (t - l > 0.5 * t ? t - l : 0.5 * t);
          }
        }
        double failed = mine != CG_OK;
        const int ast = comm_allreduce_host(c, &failed, 1, COMM_SUM);
        if (mine != CG_OK) st = mine;
        else if (ast != CG_OK) st = ast;
        else if (failed > 0)
          st = cg_err_set(CG_ERR_MPI, "measuring the link between ranks %d and %d failed on one of them", a, b);
      }
    if (st == CG_OK) st = comm_allreduce_host(c, lat, P * P, COMM_SUM);
    if (st == CG_OK) st = comm_allreduce_host(c, bw, P * P, COMM_SUM);
    if (st == CG_OK) {
      memcpy(links->lat_s, lat, (size_t)P * P * sizeof *lat);
      memcpy(links->bw_bps, bw, (size_t)P * P * sizeof *bw);
    }
  }
  cg_free(lat);
  cg_free(bw);
  TRY_GOTO(comm_agree(c, st, "measuring the links"), done);
  /* (on the backend the exchange runs on: an emulated slow device computes slowly, its links are the links) */
  TRY_GOTO(measure_allreduce(c, cg_backend_emulate_strip(be), rapa_shape_params(s), &links->allreduce_s), done);
  LOG_INFO("rapa", "rates measured on every rank at the model's shapes in %.2f s (the gradient all-reduce: %.3f ms)",
           cg_time_now() - t0, links->allreduce_s * 1e3);
done:
  cg_free(all);
  cg_free(buf);
  if (st != CG_OK) rapa_links_free(links);
  return st;
}
