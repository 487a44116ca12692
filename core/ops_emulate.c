/* core/ops_emulate.c — forwarding backend that makes every op 1/speed times as long.
 *
 * Why a CPU op of one thread is timed by its thread's CPU time: ranks that share cores (more ranks than
 * cores, as in the 4-rank benchmarks on 2 cores) wait for a core inside their ops, and a
 * wait of (1/speed - 1) x the wall time would multiply that queueing too, so a slow rank
 * would get slower with every neighbour's work. The emulated device's op lasts its own
 * work (CPU time) / speed, and the time queued for a core is counted towards it.
 *
 * Why the debt is paid at synchronisation points and not after each op: an op of a
 * few microseconds would otherwise cost a sleep each (a system call and the timer's
 * granularity), and the emulated slowdown would depend on the op count rather than on
 * the work. Paying where the host waits for the device anyway puts every owed second
 * inside the same timers (the runtime synchronises before reading a clock) and before
 * every exchange (the model synchronises before it), so a peer waits for the slow rank
 * exactly as it would for a slow device. Sleeping to an absolute deadline and carrying
 * the oversleep as credit keeps the total right whatever the timer slack. */
#define _GNU_SOURCE
#include "ops_emulate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "status.h"
#include "timer.h"

/* An oversleep is carried over as credit up to this much: beyond it (a sleeper woken
 * late on a busy machine) the time is lost rather than repaid by skipping later waits,
 * which would make whole stretches of ops run at full speed. */
#define EMU_MAX_CREDIT_S 200e-6
/* A debt below this waits for a later synchronisation: a sleep costs a system call and a
 * wake-up that a busy machine delays by far more than a few microseconds, so ops of
 * microseconds (small graphs) would otherwise be slowed by the sleeping, not by the
 * speed. At most this much of a step's wait moves into the next step. */
#define EMU_MIN_WAIT_S 100e-6

struct emu {
  struct cg_backend pub; /* first member: the wrapper is the backend */
  struct cg_backend *in;
  double speed, factor; /* factor = 1/speed - 1 */
  int cpu_clock;        /* 1: the inner backend computes on this thread alone (CPU, one thread):
                           its CPU time is the op's own time */
  double debt;          /* seconds still to wait (negative: credit from an oversleep) */
  struct cg_emulate_counters c;
};

static struct emu *E(struct cg_backend *be) { return (struct emu *)be->impl; }

static void emu_pay(struct emu *p) {
  if (p->debt < EMU_MIN_WAIT_S) return;
  const double t0 = cg_time_now();
  struct timespec now, until;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double s = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 + p->debt;
  until.tv_sec = (time_t)s;
  until.tv_nsec = (long)((s - (double)until.tv_sec) * 1e9);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
  }
  const double slept = cg_time_now() - t0;
  p->debt -= slept;
  if (p->debt < -EMU_MAX_CREDIT_S) p->debt = -EMU_MAX_CREDIT_S;
  p->c.slept_s += slept;
  p->c.waits++;
}

static double thread_cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct emu_t0 {
  double wall, cpu;
};
static struct emu_t0 emu_begin(const struct emu *p) {
  return (struct emu_t0){cg_time_now(), p->cpu_clock ? thread_cpu_now() : 0.0};
}
static void emu_end(struct emu *p, struct emu_t0 t0) {
  p->in->sync(p->in);
  const double cpu = p->cpu_clock ? thread_cpu_now() - t0.cpu : 0.0; /* read inside the wall interval */
  const double dt = cg_time_now() - t0.wall;
  double owe = p->factor * dt;
  if (p->cpu_clock) { /* the op lasts its own CPU time / speed; time spent waiting for a core is part of it */
    p->c.cpu_s += cpu;
    owe = cpu / p->speed - dt;
    if (!(owe > 0.0)) owe = 0.0;
  }
  p->c.measured_s += dt;
  p->c.owed_s += owe;
  p->debt += owe;
  p->c.ops++;
}

#define FWD(call)                         \
  do {                                    \
    struct emu *p_ = E(be);               \
    struct emu_t0 t0_ = emu_begin(p_);    \
    call;                                 \
    emu_end(p_, t0_);                     \
  } while (0)
/* ... and ops that hand a value to the host: the host waits for the device there */
#define FWD_PAY(call) \
  do {                \
    FWD(call);        \
    emu_pay(E(be));   \
  } while (0)

static void w_destroy(struct cg_backend *be) {
  struct emu *p = E(be);
  cg_backend_destroy(&p->in);
  cg_free(p);
}
static int w_alloc(struct cg_backend *be, void **ptr, size_t bytes, const char *what) {
  return E(be)->in->alloc(E(be)->in, ptr, bytes, what);
}
static void w_free(struct cg_backend *be, void *ptr) { E(be)->in->free(E(be)->in, ptr); }
static int w_upload(struct cg_backend *be, void *d, const void *s, size_t n) {
  int st;
  FWD_PAY(st = p_->in->upload(p_->in, d, s, n));
  return st;
}
static int w_download(struct cg_backend *be, void *d, const void *s, size_t n) {
  int st;
  FWD_PAY(st = p_->in->download(p_->in, d, s, n));
  return st;
}
static void w_copy(struct cg_backend *be, void *d, const void *s, size_t n) { FWD(p_->in->copy(p_->in, d, s, n)); }
static void w_sync(struct cg_backend *be) {
  E(be)->in->sync(E(be)->in);
  emu_pay(E(be));
}
static int w_mem_info(struct cg_backend *be, size_t *f, size_t *t) { return E(be)->in->mem_info(E(be)->in, f, t); }
/* side uploads: passed through without debt (copies beside the stream, not ops of it);
 * set only when the inner backend has them */
static int w_host_alloc(struct cg_backend *be, void **p, size_t n, const char *what) {
  return E(be)->in->host_alloc(E(be)->in, p, n, what);
}
static void w_host_free(struct cg_backend *be, void *p) { E(be)->in->host_free(E(be)->in, p); }
static int w_upchan_create(struct cg_backend *be, struct cg_upchan **out) {
  return E(be)->in->upchan_create(E(be)->in, out);
}
static void w_upchan_destroy(struct cg_backend *be, struct cg_upchan *ch) { E(be)->in->upchan_destroy(E(be)->in, ch); }
static int w_upchan_begin(struct cg_backend *be, struct cg_upchan *ch) { return E(be)->in->upchan_begin(E(be)->in, ch); }
static int w_upchan_upload(struct cg_backend *be, struct cg_upchan *ch, void *dst, const void *src, size_t n) {
  return E(be)->in->upchan_upload(E(be)->in, ch, dst, src, n);
}
static int w_upchan_join(struct cg_backend *be, struct cg_upchan *ch) { return E(be)->in->upchan_join(E(be)->in, ch); }
static void w_gemm(struct cg_backend *be, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  FWD(p_->in->gemm(p_->in, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}
static void w_fill(struct cg_backend *be, float *x, int64_t n, float v) { FWD(p_->in->fill(p_->in, x, n, v)); }
static void w_axpy(struct cg_backend *be, int64_t n, float a, const float *x, float *y) {
  FWD(p_->in->axpy(p_->in, n, a, x, y));
}
static void w_scale(struct cg_backend *be, int64_t n, float a, float *x) { FWD(p_->in->scale(p_->in, n, a, x)); }
/* Sparse matrices are the inner backend's own: the wrapper hands them through. */
static int w_spmat_create(struct cg_backend *be, const struct cg_csr *h, struct cg_spmat **out) {
  return E(be)->in->spmat_create(E(be)->in, h, out);
}
static void w_spmat_destroy(struct cg_backend *be, struct cg_spmat *a) { E(be)->in->spmat_destroy(E(be)->in, a); }
static void w_spmm(struct cg_backend *be, const struct cg_spmat *a, const float *x, int64_t ldx, float *y,
                   int64_t ldy, int64_t f) {
  FWD(p_->in->spmm(p_->in, a, x, ldx, y, ldy, f));
}
static void w_bias_add(struct cg_backend *be, float *y, const float *b, int64_t r, int64_t c) {
  FWD(p_->in->bias_add(p_->in, y, b, r, c));
}
static void w_bias_grad(struct cg_backend *be, const float *dy, int64_t r, int64_t c, float *db) {
  FWD(p_->in->bias_grad(p_->in, dy, r, c, db));
}
static void w_relu_fwd(struct cg_backend *be, const float *x, float *y, int64_t n) {
  FWD(p_->in->relu_fwd(p_->in, x, y, n));
}
static void w_relu_bwd(struct cg_backend *be, const float *y, float *dy, int64_t n) {
  FWD(p_->in->relu_bwd(p_->in, y, dy, n));
}
static void w_dropout_relu_bwd(struct cg_backend *be, const float *hd, float *dy, int64_t n,
                               float scale) {
  FWD(p_->in->dropout_relu_bwd(p_->in, hd, dy, n, scale));
}
static void w_dropout(struct cg_backend *be, const float *in, float *out, int64_t r, int64_t c, const int32_t *gid,
                      float pr, struct cg_dropout_key key) {
  FWD(p_->in->dropout(p_->in, in, out, r, c, gid, pr, key));
}
static void w_ln_fwd(struct cg_backend *be, const float *x, int64_t r, int64_t c, const float *g, const float *b,
                     float eps, float *y, float *mean, float *rstd) {
  FWD(p_->in->layernorm_fwd(p_->in, x, r, c, g, b, eps, y, mean, rstd));
}
static void w_ln_bwd(struct cg_backend *be, const float *dy, const float *x, const float *mean, const float *rstd,
                     const float *g, int64_t r, int64_t c, float *dx, float *dg, float *db) {
  FWD(p_->in->layernorm_bwd(p_->in, dy, x, mean, rstd, g, r, c, dx, dg, db));
}
static void w_xent(struct cg_backend *be, const float *lg, int64_t r, int64_t c, const int32_t *lab,
                   const int32_t *idx, int64_t n, float s, float *dl, double *loss) {
  FWD_PAY(p_->in->xent(p_->in, lg, r, c, lab, idx, n, s, dl, loss));
}
static void w_bce(struct cg_backend *be, const float *lg, int64_t r, int64_t c, const uint8_t *lab,
                  const int32_t *idx, int64_t n, float s, float *dl, double *loss) {
  FWD_PAY(p_->in->bce(p_->in, lg, r, c, lab, idx, n, s, dl, loss));
}
static void w_eval(struct cg_backend *be, const float *lg, int64_t r, int64_t c, const int32_t *lab,
                   const uint8_t *ml, const int32_t *idx, int64_t n, int64_t out[3]) {
  FWD_PAY(p_->in->eval_counts(p_->in, lg, r, c, lab, ml, idx, n, out));
}
static void w_adam(struct cg_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                   const struct cg_adam_params *pa, int64_t t) {
  FWD(p_->in->adam(p_->in, w, g, m, v, n, pa, t));
}
static void w_gather(struct cg_backend *be, const float *s, int64_t c, const int32_t *idx, int64_t n, float *d) {
  FWD(p_->in->gather_rows(p_->in, s, c, idx, n, d));
}
static void w_scatter(struct cg_backend *be, const float *s, int64_t c, const int32_t *idx, int64_t n, float *d) {
  FWD(p_->in->scatter_add_rows(p_->in, s, c, idx, n, d));
}

static void w_sgd(struct cg_backend *be, float *w, const float *g, float *buf, int64_t n,
                  const struct cg_sgd_params *pa) {
  FWD(p_->in->sgd(p_->in, w, g, buf, n, pa));
}
/* graph attention (GAT) */
static void w_scores(struct cg_backend *be, const struct cg_edges *e, const float *el, int64_t lde,
                     const float *er, int64_t ldr, int64_t h, float sl, float *s) {
  FWD(p_->in->edge_scores(p_->in, e, el, lde, er, ldr, h, sl, s));
}
static void w_scores_bwd(struct cg_backend *be, const struct cg_edges *e, const float *s, const float *ds,
                         int64_t h, float sl, float *del, int64_t lde, float *der, int64_t ldr) {
  FWD(p_->in->edge_scores_bwd(p_->in, e, s, ds, h, sl, del, lde, der, ldr));
}
static void w_softmax(struct cg_backend *be, const struct cg_edges *e, const float *s, int64_t h, float *al) {
  FWD(p_->in->edge_softmax(p_->in, e, s, h, al));
}
static void w_softmax_bwd(struct cg_backend *be, const struct cg_edges *e, const float *al, const float *dal,
                          int64_t h, float *ds) {
  FWD(p_->in->edge_softmax_bwd(p_->in, e, al, dal, h, ds));
}
static void w_edge_dropout(struct cg_backend *be, const struct cg_edges *e, const float *in, float *out,
                           int64_t h, const int32_t *gid, float pr, struct cg_dropout_key key) {
  FWD(p_->in->edge_dropout(p_->in, e, in, out, h, gid, pr, key));
}
static void w_spmm_edge(struct cg_backend *be, const struct cg_edges *e, const float *al, int64_t h, int64_t f,
                        const float *x, int64_t ldx, float *y, int64_t ldy) {
  FWD(p_->in->spmm_edge(p_->in, e, al, h, f, x, ldx, y, ldy));
}
static void w_spmm_edge_bwd_x(struct cg_backend *be, const struct cg_edges *e, const float *al, int64_t h,
                              int64_t f, const float *dy, int64_t lddy, float *dx, int64_t lddx) {
  FWD(p_->in->spmm_edge_bwd_x(p_->in, e, al, h, f, dy, lddy, dx, lddx));
}
static void w_spmm_edge_bwd_alpha(struct cg_backend *be, const struct cg_edges *e, int64_t h, int64_t f,
                                  const float *x, int64_t ldx, const float *dy, int64_t lddy, float *dal) {
  FWD(p_->in->spmm_edge_bwd_alpha(p_->in, e, h, f, x, ldx, dy, lddy, dal));
}
static void w_elu_fwd(struct cg_backend *be, const float *x, float *y, int64_t n) {
  FWD(p_->in->elu_fwd(p_->in, x, y, n));
}
static void w_elu_bwd(struct cg_backend *be, const float *y, float *dy, int64_t n) {
  FWD(p_->in->elu_bwd(p_->in, y, dy, n));
}
/* sparse input features */
static void w_csr_mm(struct cg_backend *be, const struct cg_edges *x, const float *v, int64_t f, const float *w,
                     int64_t ldw, float *y, int64_t ldy) {
  FWD(p_->in->csr_mm(p_->in, x, v, f, w, ldw, y, ldy));
}
static void w_csr_mm_t(struct cg_backend *be, const struct cg_edges *x, const float *v, int64_t f,
                       const float *dy, int64_t lddy, float *g, int64_t ldg) {
  FWD(p_->in->csr_mm_t(p_->in, x, v, f, dy, lddy, g, ldg));
}
static void w_csr_dropout(struct cg_backend *be, const struct cg_edges *x, const float *in, float *out,
                          const int32_t *gid, float pr, struct cg_dropout_key key) {
  FWD(p_->in->csr_dropout(p_->in, x, in, out, gid, pr, key));
}

int cg_backend_emulate_wrap(struct cg_backend *inner, double speed, struct cg_backend **out) {
  if (!inner || !out) return cg_err_set(CG_ERR_ARG, "cg_backend_emulate_wrap: no backend");
  if (!(speed > 0.0 && speed <= 1.0))
    return cg_err_set(CG_ERR_ARG, "emulated speed %g: expected a number in (0, 1]", speed);
  struct emu *p = cg_calloc(1, sizeof *p, "emulating backend");
  if (!p) return CG_ERR_NOMEM;
  p->in = inner;
  p->speed = speed;
  p->factor = 1.0 / speed - 1.0;
  /* with several threads the calling thread's CPU time is not the op's work (the other
   * threads' is not in it; a thread spinning at a barrier counts its wait): wall time */
  p->cpu_clock = inner->kind == CG_DEVICE_CPU && cg_backend_cpu_threads(inner) == 1;
  /* short sleeps end close to their deadline (the default slack is 50 us) */
  (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  struct cg_backend *b = &p->pub;
  b->name = inner->name;
  b->kind = inner->kind;
  b->impl = p;
  b->wraps = inner;
  b->destroy = w_destroy;
  b->alloc = w_alloc; b->free = w_free; b->upload = w_upload; b->download = w_download;
  b->copy = w_copy; b->sync = w_sync; b->mem_info = w_mem_info;
  b->gemm = w_gemm; b->fill = w_fill; b->axpy = w_axpy; b->scale = w_scale;
  b->spmat_create = w_spmat_create; b->spmat_destroy = w_spmat_destroy; b->spmm = w_spmm;
  b->bias_add = w_bias_add; b->bias_grad = w_bias_grad; b->relu_fwd = w_relu_fwd;
  b->relu_bwd = w_relu_bwd; b->dropout = w_dropout; b->layernorm_fwd = w_ln_fwd;
  b->dropout_relu_bwd = w_dropout_relu_bwd;
  b->layernorm_bwd = w_ln_bwd; b->xent = w_xent; b->bce = w_bce; b->eval_counts = w_eval;
  b->adam = w_adam; b->sgd = w_sgd; b->gather_rows = w_gather; b->scatter_add_rows = w_scatter;
  b->edge_scores = w_scores; b->edge_scores_bwd = w_scores_bwd; b->edge_softmax = w_softmax;
  b->edge_softmax_bwd = w_softmax_bwd; b->edge_dropout = w_edge_dropout; b->spmm_edge = w_spmm_edge;
  b->spmm_edge_bwd_x = w_spmm_edge_bwd_x; b->spmm_edge_bwd_alpha = w_spmm_edge_bwd_alpha;
  b->elu_fwd = w_elu_fwd; b->elu_bwd = w_elu_bwd;
  b->csr_mm = w_csr_mm; b->csr_mm_t = w_csr_mm_t; b->csr_dropout = w_csr_dropout;
  if (inner->host_alloc && inner->host_free && inner->upchan_create && inner->upchan_destroy &&
      inner->upchan_begin && inner->upchan_upload && inner->upchan_join) {
    b->host_alloc = w_host_alloc; b->host_free = w_host_free;
    b->upchan_create = w_upchan_create; b->upchan_destroy = w_upchan_destroy;
    b->upchan_begin = w_upchan_begin; b->upchan_upload = w_upchan_upload; b->upchan_join = w_upchan_join;
  }
  *out = b;
  return CG_OK;
}

/* The emulating wrapper in be's chain of wrappers (be itself, or under a profiling
 * wrapper: CAPGNN_PROFILE_OPS wraps the emulated backend), NULL when there is none. */
static const struct emu *emu_of(const struct cg_backend *be) {
  for (; be; be = be->wraps)
    if (be->destroy == w_destroy) return be->impl;
  return NULL;
}

struct cg_backend *cg_backend_emulate_inner(struct cg_backend *be) { return cg_backend_base(be); }
const struct cg_backend *cg_backend_emulate_inner_const(const struct cg_backend *be) {
  return cg_backend_base_const(be);
}
struct cg_backend *cg_backend_emulate_strip(struct cg_backend *be) {
  return emu_of(be) ? cg_backend_base(be) : be;
}
double cg_backend_emulate_speed(const struct cg_backend *be) {
  const struct emu *e = emu_of(be);
  return e ? e->speed : 1.0;
}
int cg_backend_emulate_cpu_clock(const struct cg_backend *be) {
  const struct emu *e = emu_of(be);
  return e ? e->cpu_clock : 0;
}
void cg_emulate_get(const struct cg_backend *be, struct cg_emulate_counters *c) {
  const struct emu *e = emu_of(be);
  if (e) *c = e->c;
  else memset(c, 0, sizeof *c);
}

/* Reads the list: its number of values, the first and rank `rank`'s (rank < 0: none). */
static int speed_list_scan(const char *spec, int rank, int *nvalues, double *first, double *mine) {
  int n = 0;
  *first = *mine = NAN;
  const char *p = spec;
  for (;;) {
    char *end = NULL;
    errno = 0;
    const double v = strtod(p, &end);
    if (end == p || errno || !(v > 0.0 && v <= 1.0) || (*end != ',' && *end != '\0')) {
      /* name the value itself and its position: "value 1" read as the number 1 */
      const size_t len = strcspn(p, ",");
      return cg_err_set(CG_ERR_ARG,
                        "CAPGNN_EMULATE_SPEED='%s': value number %d in the list, '%.*s', is not a speed in (0, 1] "
                        "(expected one value or one per rank, comma-separated, e.g. 1,0.5,0.25,0.25)",
                        spec, n + 1, (int)(len < 40 ? len : 40), p);
    }
    if (n == 0) *first = v;
    if (n == rank) *mine = v;
    n++;
    if (*end == '\0') break;
    p = end + 1;
  }
  *nvalues = n;
  return CG_OK;
}

int cg_emulate_speed_check(const char *spec, int *nvalues) {
  double first, mine;
  *nvalues = 0;
  if (!spec || !spec[0]) return CG_OK;
  return speed_list_scan(spec, -1, nvalues, &first, &mine);
}

int cg_emulate_speed_parse(const char *spec, int rank, int nranks, double *speed) {
  *speed = 1.0;
  if (!spec || !spec[0]) return CG_OK;
  int n = 0;
  double mine, first;
  TRY(speed_list_scan(spec, rank, &n, &first, &mine));
  if (n != 1 && n != nranks)
    return cg_err_set(CG_ERR_ARG, "CAPGNN_EMULATE_SPEED='%s' has %d values but the job has %d rank%s: give one "
                      "value for all ranks or one per rank", spec, n, nranks, nranks == 1 ? "" : "s");
  *speed = n == 1 ? first : mine;
  return CG_OK;
}
