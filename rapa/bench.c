/* rapa/bench.c — the microbenchmarks of one backend: GEMM, SpMM, copies.
 *
 * Design notes (the why):
 * - Every benchmark checks its result before it reports a time: a fast wrong kernel
 *   must not produce a number. The check runs on the output of the last timed
 *   repetition (the same call as the timed ones), against a double-precision
 *   reference on a sample (GEMM, SpMM) or on every byte (copies).
 * - Operands are filled from a counter-based hash, so the reference needs no copy of
 *   the input beyond what the check reads.
 * - One repetition is timed at a time and the median reported: on a shared machine
 *   the mean follows the worst interruptions, the median does not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "rapa/rapa_internal.h"

void rapa_bench_opts_default(struct rapa_bench_opts *o, int quick) {
  o->warmup = 1;
  o->min_reps = 3;
  o->max_reps = quick ? 7 : 15;
  o->budget_s = quick ? 0.08 : 0.25;
  o->batch = 1;
  o->evict_bytes = 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double rapa_median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int rapa_measure(struct cg_backend *be, const struct rapa_bench_opts *o, int (*op)(void *ctx),
                 void *ctx, struct rapa_timing *t) {
  int st = CG_OK;
  struct rapa_bench_opts d;
  if (!o) {
    rapa_bench_opts_default(&d, 0);
    o = &d;
  }
  if (o->min_reps < 1 || o->max_reps < o->min_reps || o->warmup < 0 || o->batch < 1)
    return cg_err_set(CG_ERR_ARG, "benchmark repetitions: min %d, max %d, warm-up %d, batch %d (need 1 <= min <= "
                      "max, warm-up >= 0, batch >= 1)", o->min_reps, o->max_reps, o->warmup, o->batch);
  double *times = cg_malloc(sizeof(double) * (size_t)o->max_reps, "benchmark times");
  if (!times) return CG_ERR_NOMEM;
  struct rapa_cuda_timer *ct = NULL;
  unsigned char *ev = NULL; /* the eviction buffer (CPU) */
  const size_t evn = o->evict_bytes > 0 ? (size_t)o->evict_bytes : 0;
  /* CUDA events time the CUDA backend itself. A wrapper around it (an emulated speed, whose
   * waits are slept on the host at be->sync; the per-op profiler) is timed by the clock after
   * be->sync like the CPU: events on the inner stream would miss the emulated waits, and
   * the wrapper has no stream of its own to record them on. */
  if (be && be->kind == CG_DEVICE_CUDA && !be->wraps) TRY_GOTO(rapa_cuda_timer_create(be, &ct), done);
  if (evn && !ct && !(ev = cg_malloc(evn, "cache eviction buffer"))) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int w = 0; w < o->warmup; w++) TRY_GOTO(op(ctx), done);
  if (be) be->sync(be);
  double spent = 0.0;
  int n = 0;
  while (n < o->max_reps && (n < o->min_reps || spent < o->budget_s)) {
    double s;
    if (ct) {
      TRY_GOTO(rapa_cuda_timer_start(ct), done);
      for (int b = 0; b < o->batch; b++) TRY_GOTO(op(ctx), done);
      TRY_GOTO(rapa_cuda_timer_stop(ct, &s), done);
    } else if (ev) {
      s = 0.0;
      for (int b = 0; b < o->batch; b++) {
        memset(ev, (unsigned char)(n + b), evn); /* untimed: the rest of a step's data */
        const double t0 = cg_time_now();
        TRY_GOTO(op(ctx), done);
        if (be) be->sync(be);
        s += cg_time_now() - t0;
      }
    } else {
      double t0 = cg_time_now();
      for (int b = 0; b < o->batch; b++) TRY_GOTO(op(ctx), done);
      if (be) be->sync(be);
      s = cg_time_now() - t0;
    }
    spent += s;
    times[n++] = s / o->batch;
  }
  t->reps = n;
  t->median_s = rapa_median(times, n);
  t->min_s = times[0];
done:
  rapa_cuda_timer_destroy(&ct);
  cg_free(ev);
  cg_free(times);
  return st;
}

/* A value in [-1, 1) from (seed, i): splitmix64. */
static float pattern_val(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)((double)(z >> 40) / (double)(1ull << 23) - 1.0);
}

static float *host_pattern(size_t n, uint64_t seed, const char *what) {
  float *h = cg_malloc(n * sizeof(float), what);
  if (h)
    for (size_t i = 0; i < n; i++) h[i] = pattern_val(seed, i);
  return h;
}

/* ---- GEMM ------------------------------------------------------------------------ */

struct gemm_ctx {
  struct cg_backend *be;
  int64_t m, n, k;
  float *a, *b, *c;
};

static int gemm_op(void *p) {
  struct gemm_ctx *g = p;
  g->be->gemm(g->be, 0, 0, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, g->n, 0.0f, g->c, g->n);
  return CG_OK;
}

int rapa_bench_gemm(struct cg_backend *be, int64_t m, int64_t n, int64_t k, double rtol,
                    const struct rapa_bench_opts *o, struct rapa_timing *t) {
  int st = CG_OK;
  if (m < 1 || n < 1 || k < 1)
    return cg_err_set(CG_ERR_ARG, "rapa_bench_gemm: sizes %lld x %lld x %lld must be positive",
                      (long long)m, (long long)n, (long long)k);
  struct gemm_ctx g = {be, m, n, k, NULL, NULL, NULL};
  float *ha = host_pattern((size_t)(m * k), 11, "GEMM benchmark: host A");
  float *hb = host_pattern((size_t)(k * n), 12, "GEMM benchmark: host B");
  float *hc = cg_malloc((size_t)(m * n) * sizeof(float), "GEMM benchmark: host C");
  if (!ha || !hb || !hc) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  TRY_GOTO(be->alloc(be, (void **)&g.a, (size_t)(m * k) * sizeof(float), "GEMM benchmark: A"), done);
  TRY_GOTO(be->alloc(be, (void **)&g.b, (size_t)(k * n) * sizeof(float), "GEMM benchmark: B"), done);
  TRY_GOTO(be->alloc(be, (void **)&g.c, (size_t)(m * n) * sizeof(float), "GEMM benchmark: C"), done);
  TRY_GOTO(be->upload(be, g.a, ha, (size_t)(m * k) * sizeof(float)), done);
  TRY_GOTO(be->upload(be, g.b, hb, (size_t)(k * n) * sizeof(float)), done);
  TRY_GOTO(rapa_measure(be, o, gemm_op, &g, t), done);
  TRY_GOTO(be->download(be, hc, g.c, (size_t)(m * n) * sizeof(float)), done);
  /* the check: 64 entries, the four corners first */
  double worst = 0.0;
  int64_t wi = 0, wj = 0;
  for (int s = 0; s < 64; s++) {
    int64_t i, j;
    if (s < 4) {
      i = (s & 1) ? m - 1 : 0;
      j = (s & 2) ? n - 1 : 0;
    } else {
      i = (int64_t)((pattern_val(99, (uint64_t)s) + 1.0f) * 0.5f * (float)m) % m;
      j = (int64_t)((pattern_val(98, (uint64_t)s) + 1.0f) * 0.5f * (float)n) % n;
    }
    double ref = 0.0, mag = 0.0;
    for (int64_t q = 0; q < k; q++) {
      double x = (double)ha[i * k + q] * (double)hb[q * n + j];
      ref += x;
      mag += fabs(x);
    }
    double err = fabs((double)hc[i * n + j] - ref) / (mag > 0 ? mag : 1.0);
    if (!(err <= worst)) { /* NaN counts as the worst */
      worst = isnan(err) ? INFINITY : err;
      wi = i;
      wj = j;
    }
  }
  if (!(worst <= rtol))
    st = cg_err_set(CG_ERR_INTERNAL,
                    "GEMM check failed on backend %s (%lld x %lld x %lld): C[%lld][%lld] is off by "
                    "%.3g of sum |a b| (allowed %.3g): the backend computes a wrong product",
                    be->name, (long long)m, (long long)n, (long long)k, (long long)wi, (long long)wj,
                    worst, rtol);
done:
  if (g.a) be->free(be, g.a);
  if (g.b) be->free(be, g.b);
  if (g.c) be->free(be, g.c);
  cg_free(ha);
  cg_free(hb);
  cg_free(hc);
  return st;
}

/* ---- SpMM ------------------------------------------------------------------------ */

struct spmm_ctx {
  struct cg_backend *be;
  struct cg_spmat *a;
  float *x, *y;
  int64_t f;
};

static int spmm_op(void *p) {
  struct spmm_ctx *s = p;
  s->be->spmm(s->be, s->a, s->x, s->f, s->y, s->f, s->f);
  return CG_OK;
}

int rapa_bench_spmm(struct cg_backend *be, const struct cg_csr *a, int64_t f,
                    const struct rapa_bench_opts *o, struct rapa_timing *t) {
  int st = CG_OK;
  if (f < 1 || !a || !a->vals || a->nrows < 1 || a->ncols < 1)
    return cg_err_set(CG_ERR_ARG, "rapa_bench_spmm: width %lld and a non-empty matrix with values needed",
                      (long long)f);
  struct spmm_ctx s = {be, NULL, NULL, NULL, f};
  const size_t xn = (size_t)(a->ncols * f), yn = (size_t)(a->nrows * f);
  float *hx = host_pattern(xn, 21, "SpMM benchmark: host X");
  float *hy = cg_malloc(yn * sizeof(float), "SpMM benchmark: host Y");
  if (!hx || !hy) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  TRY_GOTO(be->spmat_create(be, a, &s.a), done);
  TRY_GOTO(be->alloc(be, (void **)&s.x, xn * sizeof(float), "SpMM benchmark: X"), done);
  TRY_GOTO(be->alloc(be, (void **)&s.y, yn * sizeof(float), "SpMM benchmark: Y"), done);
  TRY_GOTO(be->upload(be, s.x, hx, xn * sizeof(float)), done);
  TRY_GOTO(rapa_measure(be, o, spmm_op, &s, t), done);
  TRY_GOTO(be->download(be, hy, s.y, yn * sizeof(float)), done);
  double worst = 0.0;
  int64_t wr = 0, wc = 0;
  const int nsample = a->nrows < 64 ? (int)a->nrows : 64;
  for (int q = 0; q < nsample; q++) {
    int64_t r = q == 0 ? 0 : q == 1 ? a->nrows - 1 : (int64_t)(q * (a->nrows / nsample)) % a->nrows;
    for (int64_t j = 0; j < f; j++) {
      double ref = 0.0, mag = 0.0;
      for (int64_t e = a->rowptr[r]; e < a->rowptr[r + 1]; e++) {
        double v = (double)a->vals[e] * (double)hx[(size_t)a->colidx[e] * (size_t)f + (size_t)j];
        ref += v;
        mag += fabs(v);
      }
      double err = fabs((double)hy[(size_t)r * (size_t)f + (size_t)j] - ref) - 1e-6;
      err /= mag > 0 ? mag : 1.0;
      if (!(err <= worst)) {
        worst = isnan(err) ? INFINITY : err;
        wr = r;
        wc = j;
      }
    }
  }
  if (!(worst <= 1e-4))
    st = cg_err_set(CG_ERR_INTERNAL,
                    "SpMM check failed on backend %s (%lld x %lld, %lld nonzeros, width %lld): "
                    "Y[%lld][%lld] is off by %.3g of sum |a x| (allowed 1e-4): the backend "
                    "computes a wrong product",
                    be->name, (long long)a->nrows, (long long)a->ncols, (long long)a->nnz,
                    (long long)f, (long long)wr, (long long)wc, worst);
done:
  if (s.x) be->free(be, s.x);
  if (s.y) be->free(be, s.y);
  if (s.a) be->spmat_destroy(be, s.a);
  cg_free(hx);
  cg_free(hy);
  return st;
}

/* ---- copies ---------------------------------------------------------------------- */

const char *rapa_copy_kind_name(enum rapa_copy_kind k) {
  switch (k) {
    case RAPA_COPY_H2D:
      return "h2d";
    case RAPA_COPY_D2H:
      return "d2h";
    case RAPA_COPY_D2D:
      return "d2d";
  }
  return "?";
}

struct copy_ctx {
  struct cg_backend *be;
  enum rapa_copy_kind kind;
  void *dst;
  const void *src;
  size_t bytes;
};

static int copy_op(void *p) {
  struct copy_ctx *c = p;
  switch (c->kind) {
    case RAPA_COPY_H2D:
      return c->be->upload(c->be, c->dst, c->src, c->bytes);
    case RAPA_COPY_D2H:
      return c->be->download(c->be, c->dst, c->src, c->bytes);
    default:
      c->be->copy(c->be, c->dst, c->src, c->bytes);
      return CG_OK;
  }
}

/* byte i of the pattern */
static inline unsigned char pat_byte(size_t i, unsigned seed) {
  return (unsigned char)((i * 2654435761u) >> 13 ^ seed);
}

int rapa_bench_copy(struct cg_backend *be, enum rapa_copy_kind kind, int pinned, size_t bytes,
                    const struct rapa_bench_opts *o, struct rapa_timing *t) {
  int st = CG_OK;
  if (bytes < 1 || (kind != RAPA_COPY_H2D && kind != RAPA_COPY_D2H && kind != RAPA_COPY_D2D))
    return cg_err_set(CG_ERR_ARG, "rapa_bench_copy: %zu bytes of kind %d", bytes, (int)kind);
  if (kind == RAPA_COPY_D2D) pinned = 0;
  if (pinned && be->kind != CG_DEVICE_CUDA)
    return cg_err_set(CG_ERR_UNSUPPORTED, "pinned host memory needs the CUDA backend (backend %s)",
                      be->name);
  unsigned char *host = NULL, *check = NULL;
  void *dev = NULL, *dev2 = NULL;
  const unsigned seed = (unsigned)kind * 77u + 5u;
  if (pinned)
    TRY_GOTO(rapa_pinned_alloc((void **)&host, bytes), done);
  else if (!(host = cg_malloc(bytes, "copy benchmark: host buffer"))) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  TRY_GOTO(be->alloc(be, &dev, bytes, "copy benchmark: device buffer"), done);
  if (kind == RAPA_COPY_D2D) TRY_GOTO(be->alloc(be, &dev2, bytes, "copy benchmark: second device buffer"), done);
  /* the source holds the pattern, the destination something else */
  for (size_t i = 0; i < bytes; i++) host[i] = pat_byte(i, seed);
  if (kind != RAPA_COPY_H2D) {
    TRY_GOTO(be->upload(be, dev, host, bytes), done); /* the device source */
    memset(host, 0x5a, bytes);                       /* D2H: the destination */
  }
  if (kind == RAPA_COPY_D2D) TRY_GOTO(be->upload(be, dev2, host, bytes), done);
  struct copy_ctx c = {be, kind, NULL, NULL, bytes};
  if (kind == RAPA_COPY_H2D) {
    c.dst = dev;
    c.src = host;
  } else if (kind == RAPA_COPY_D2H) {
    c.dst = host;
    c.src = dev;
  } else {
    c.dst = dev2;
    c.src = dev;
  }
  TRY_GOTO(rapa_measure(be, o, copy_op, &c, t), done);
  /* the check: the destination, brought to the host, is the pattern */
  const unsigned char *got = host;
  if (kind != RAPA_COPY_D2H) {
    if (!(check = cg_malloc(bytes, "copy benchmark: check buffer"))) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    TRY_GOTO(be->download(be, check, c.dst, bytes), done);
    got = check;
  }
  for (size_t i = 0; i < bytes; i++)
    if (got[i] != pat_byte(i, seed)) {
      st = cg_err_set(CG_ERR_INTERNAL,
                      "%s copy check failed on backend %s (%zu bytes%s): byte %zu is 0x%02x, "
                      "expected 0x%02x: the copy moved wrong data",
                      rapa_copy_kind_name(kind), be->name, bytes, pinned ? ", pinned" : "", i,
                      got[i], pat_byte(i, seed));
      break;
    }
done:
  if (dev) be->free(be, dev);
  if (dev2) be->free(be, dev2);
  if (pinned) rapa_pinned_free(host);
  else cg_free(host);
  cg_free(check);
  return st;
}
