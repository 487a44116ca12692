/* core/ops_profile.c — forwarding backend that times op categories.
 * Each wrapper syncs the inner backend before and after the op so that queued
 * work of earlier ops is not charged to this one. */
#include "ops_profile.h"

#include <string.h>

#include "status.h"
#include "timer.h"

struct prof {
  struct cg_backend pub; /* first member: the wrapper is the backend */
  struct cg_backend *in;
  int timing;
  struct cg_prof_counters c;
};

struct cg_spmat_prof_ { /* what the wrapper hands out as a struct cg_spmat */
  struct cg_spmat *inner;
  int64_t nnz;
};

static struct prof *P(struct cg_backend *be) { return (struct prof *)be->impl; }

static double prof_begin(struct prof *p) {
  if (!p->timing) return 0.0;
  p->in->sync(p->in);
  return cg_time_now();
}
static void prof_end(struct prof *p, enum cg_prof_op op, double t0) {
  p->c.calls[op]++;
  if (!p->timing) return;
  p->in->sync(p->in);
  p->c.seconds[op] += cg_time_now() - t0;
}

#define FWD(op, call)                 \
  do {                                \
    struct prof *p_ = P(be);          \
    double t0_ = prof_begin(p_);      \
    call;                             \
    prof_end(p_, op, t0_);            \
  } while (0)

static void w_destroy(struct cg_backend *be) { cg_free(P(be)); }
static int w_alloc(struct cg_backend *be, void **ptr, size_t bytes, const char *what) {
  return P(be)->in->alloc(P(be)->in, ptr, bytes, what);
}
static void w_free(struct cg_backend *be, void *ptr) { P(be)->in->free(P(be)->in, ptr); }
static int w_upload(struct cg_backend *be, void *d, const void *s, size_t n) {
  int st;
  FWD(CG_PROF_MEMORY, st = p_->in->upload(p_->in, d, s, n));
  return st;
}
static int w_download(struct cg_backend *be, void *d, const void *s, size_t n) {
  int st;
  FWD(CG_PROF_MEMORY, st = p_->in->download(p_->in, d, s, n));
  return st;
}
static void w_copy(struct cg_backend *be, void *d, const void *s, size_t n) {
  FWD(CG_PROF_MEMORY, p_->in->copy(p_->in, d, s, n));
}
static void w_sync(struct cg_backend *be) { P(be)->in->sync(P(be)->in); }
static int w_mem_info(struct cg_backend *be, size_t *f, size_t *t) {
  return P(be)->in->mem_info(P(be)->in, f, t);
}
/* side uploads: passed through untimed (copies beside the stream, not its ops); set
 * only when the inner backend has them */
static int w_host_alloc(struct cg_backend *be, void **p, size_t n, const char *what) {
  return P(be)->in->host_alloc(P(be)->in, p, n, what);
}
static void w_host_free(struct cg_backend *be, void *p) { P(be)->in->host_free(P(be)->in, p); }
static int w_upchan_create(struct cg_backend *be, struct cg_upchan **out) {
  return P(be)->in->upchan_create(P(be)->in, out);
}
static void w_upchan_destroy(struct cg_backend *be, struct cg_upchan *ch) { P(be)->in->upchan_destroy(P(be)->in, ch); }
static int w_upchan_begin(struct cg_backend *be, struct cg_upchan *ch) { return P(be)->in->upchan_begin(P(be)->in, ch); }
static int w_upchan_upload(struct cg_backend *be, struct cg_upchan *ch, void *dst, const void *src, size_t n) {
  return P(be)->in->upchan_upload(P(be)->in, ch, dst, src, n);
}
static int w_upchan_join(struct cg_backend *be, struct cg_upchan *ch) { return P(be)->in->upchan_join(P(be)->in, ch); }
static void w_gemm(struct cg_backend *be, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc) {
  FWD(CG_PROF_GEMM, p_->in->gemm(p_->in, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
  P(be)->c.gemm_flops += 2.0 * (double)m * (double)n * (double)k;
}
static void w_fill(struct cg_backend *be, float *x, int64_t n, float v) {
  FWD(CG_PROF_ELEMWISE, p_->in->fill(p_->in, x, n, v));
}
static void w_axpy(struct cg_backend *be, int64_t n, float a, const float *x, float *y) {
  FWD(CG_PROF_ELEMWISE, p_->in->axpy(p_->in, n, a, x, y));
}
static void w_scale(struct cg_backend *be, int64_t n, float a, float *x) {
  FWD(CG_PROF_ELEMWISE, p_->in->scale(p_->in, n, a, x));
}
static int w_spmat_create(struct cg_backend *be, const struct cg_csr *h, struct cg_spmat **out) {
  struct cg_spmat_prof_ *w = cg_calloc(1, sizeof *w, "profiled sparse matrix");
  if (!w) return CG_ERR_NOMEM;
  int st = P(be)->in->spmat_create(P(be)->in, h, &w->inner);
  if (st < 0) {
    cg_free(w);
    cg_err_trail(__FILE__, __LINE__, "spmat_create");
    return st;
  }
  w->nnz = h->nnz;
  *out = (struct cg_spmat *)w;
  return CG_OK;
}
static void w_spmat_destroy(struct cg_backend *be, struct cg_spmat *a) {
  if (!a) return;
  struct cg_spmat_prof_ *w = (struct cg_spmat_prof_ *)a;
  P(be)->in->spmat_destroy(P(be)->in, w->inner);
  cg_free(w);
}
static void w_spmm(struct cg_backend *be, const struct cg_spmat *a, const float *x, int64_t ldx,
                   float *y, int64_t ldy, int64_t f) {
  const struct cg_spmat_prof_ *w = (const struct cg_spmat_prof_ *)a;
  FWD(CG_PROF_SPMM, p_->in->spmm(p_->in, w->inner, x, ldx, y, ldy, f));
  P(be)->c.spmm_gathered_bytes += (double)w->nnz * (double)f * sizeof(float);
  P(be)->c.spmm_flops += 2.0 * (double)w->nnz * (double)f;
}
static void w_bias_add(struct cg_backend *be, float *y, const float *b, int64_t r, int64_t c) {
  FWD(CG_PROF_ELEMWISE, p_->in->bias_add(p_->in, y, b, r, c));
}
static void w_bias_grad(struct cg_backend *be, const float *dy, int64_t r, int64_t c, float *db) {
  FWD(CG_PROF_ELEMWISE, p_->in->bias_grad(p_->in, dy, r, c, db));
}
static void w_relu_fwd(struct cg_backend *be, const float *x, float *y, int64_t n) {
  FWD(CG_PROF_ELEMWISE, p_->in->relu_fwd(p_->in, x, y, n));
}
static void w_relu_bwd(struct cg_backend *be, const float *y, float *dy, int64_t n) {
  FWD(CG_PROF_ELEMWISE, p_->in->relu_bwd(p_->in, y, dy, n));
}
static void w_dropout_relu_bwd(struct cg_backend *be, const float *hd, float *dy, int64_t n,
                               float scale) {
  FWD(CG_PROF_ELEMWISE, p_->in->dropout_relu_bwd(p_->in, hd, dy, n, scale));
}
static void w_dropout(struct cg_backend *be, const float *in, float *out, int64_t r, int64_t c,
                      const int32_t *gid, float pr, struct cg_dropout_key key) {
  FWD(CG_PROF_DROPOUT, p_->in->dropout(p_->in, in, out, r, c, gid, pr, key));
}
static void w_ln_fwd(struct cg_backend *be, const float *x, int64_t r, int64_t c, const float *g,
                     const float *b, float eps, float *y, float *mean, float *rstd) {
  FWD(CG_PROF_LAYERNORM, p_->in->layernorm_fwd(p_->in, x, r, c, g, b, eps, y, mean, rstd));
}
static void w_ln_bwd(struct cg_backend *be, const float *dy, const float *x, const float *mean,
                     const float *rstd, const float *g, int64_t r, int64_t c, float *dx, float *dg,
                     float *db) {
  FWD(CG_PROF_LAYERNORM, p_->in->layernorm_bwd(p_->in, dy, x, mean, rstd, g, r, c, dx, dg, db));
}
static void w_xent(struct cg_backend *be, const float *lg, int64_t r, int64_t c, const int32_t *lab,
                   const int32_t *idx, int64_t n, float s, float *dl, double *loss) {
  FWD(CG_PROF_LOSS, p_->in->xent(p_->in, lg, r, c, lab, idx, n, s, dl, loss));
}
static void w_bce(struct cg_backend *be, const float *lg, int64_t r, int64_t c, const uint8_t *lab,
                  const int32_t *idx, int64_t n, float s, float *dl, double *loss) {
  FWD(CG_PROF_LOSS, p_->in->bce(p_->in, lg, r, c, lab, idx, n, s, dl, loss));
}
static void w_eval(struct cg_backend *be, const float *lg, int64_t r, int64_t c, const int32_t *lab,
                   const uint8_t *ml, const int32_t *idx, int64_t n, int64_t out[3]) {
  FWD(CG_PROF_LOSS, p_->in->eval_counts(p_->in, lg, r, c, lab, ml, idx, n, out));
}
static void w_adam(struct cg_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                   const struct cg_adam_params *pa, int64_t t) {
  FWD(CG_PROF_ADAM, p_->in->adam(p_->in, w, g, m, v, n, pa, t));
}
/* SGD's update counts in the optimizer's category, which keeps its name "adam" */
static void w_sgd(struct cg_backend *be, float *w, const float *g, float *buf, int64_t n,
                  const struct cg_sgd_params *ps) {
  FWD(CG_PROF_ADAM, p_->in->sgd(p_->in, w, g, buf, n, ps));
}
static void w_gather(struct cg_backend *be, const float *s, int64_t c, const int32_t *idx, int64_t n,
                     float *d) {
  FWD(CG_PROF_HALO_ROWS, p_->in->gather_rows(p_->in, s, c, idx, n, d));
}
static void w_scatter(struct cg_backend *be, const float *s, int64_t c, const int32_t *idx,
                      int64_t n, float *d) {
  FWD(CG_PROF_HALO_ROWS, p_->in->scatter_add_rows(p_->in, s, c, idx, n, d));
}

static void w_scores(struct cg_backend *be, const struct cg_edges *e, const float *el, int64_t lde,
                     const float *er, int64_t ldr, int64_t h, float sl, float *s) {
  FWD(CG_PROF_ATTENTION, p_->in->edge_scores(p_->in, e, el, lde, er, ldr, h, sl, s));
}
static void w_scores_bwd(struct cg_backend *be, const struct cg_edges *e, const float *s,
                         const float *ds, int64_t h, float sl, float *del, int64_t lde, float *der,
                         int64_t ldr) {
  FWD(CG_PROF_ATTENTION, p_->in->edge_scores_bwd(p_->in, e, s, ds, h, sl, del, lde, der, ldr));
}
static void w_softmax(struct cg_backend *be, const struct cg_edges *e, const float *s, int64_t h,
                      float *al) {
  FWD(CG_PROF_ATTENTION, p_->in->edge_softmax(p_->in, e, s, h, al));
}
static void w_softmax_bwd(struct cg_backend *be, const struct cg_edges *e, const float *al,
                          const float *dal, int64_t h, float *ds) {
  FWD(CG_PROF_ATTENTION, p_->in->edge_softmax_bwd(p_->in, e, al, dal, h, ds));
}
static void w_edge_dropout(struct cg_backend *be, const struct cg_edges *e, const float *in,
                           float *out, int64_t h, const int32_t *gid, float pr,
                           struct cg_dropout_key key) {
  FWD(CG_PROF_DROPOUT, p_->in->edge_dropout(p_->in, e, in, out, h, gid, pr, key));
}
static void w_spmm_edge(struct cg_backend *be, const struct cg_edges *e, const float *al, int64_t h,
                        int64_t f, const float *x, int64_t ldx, float *y, int64_t ldy) {
  FWD(CG_PROF_ATTENTION, p_->in->spmm_edge(p_->in, e, al, h, f, x, ldx, y, ldy));
}
static void w_spmm_edge_bwd_x(struct cg_backend *be, const struct cg_edges *e, const float *al,
                              int64_t h, int64_t f, const float *dy, int64_t lddy, float *dx,
                              int64_t lddx) {
  FWD(CG_PROF_ATTENTION, p_->in->spmm_edge_bwd_x(p_->in, e, al, h, f, dy, lddy, dx, lddx));
}
static void w_spmm_edge_bwd_alpha(struct cg_backend *be, const struct cg_edges *e, int64_t h,
                                  int64_t f, const float *x, int64_t ldx, const float *dy,
                                  int64_t lddy, float *dal) {
  FWD(CG_PROF_ATTENTION, p_->in->spmm_edge_bwd_alpha(p_->in, e, h, f, x, ldx, dy, lddy, dal));
}
static void w_elu_fwd(struct cg_backend *be, const float *x, float *y, int64_t n) {
  FWD(CG_PROF_ELEMWISE, p_->in->elu_fwd(p_->in, x, y, n));
}
static void w_elu_bwd(struct cg_backend *be, const float *y, float *dy, int64_t n) {
  FWD(CG_PROF_ELEMWISE, p_->in->elu_bwd(p_->in, y, dy, n));
}

/* Sparse input features: their products count as SpMM (nnz x f gathered), their
 * dropout as dropout. */
static void w_csr_mm(struct cg_backend *be, const struct cg_edges *x, const float *v, int64_t f, const float *w,
                     int64_t ldw, float *y, int64_t ldy) {
  P(be)->c.spmm_gathered_bytes += (double)x->nnz * (double)f * sizeof(float);
  P(be)->c.spmm_flops += 2.0 * (double)x->nnz * (double)f;
  FWD(CG_PROF_SPMM, p_->in->csr_mm(p_->in, x, v, f, w, ldw, y, ldy));
}
static void w_csr_mm_t(struct cg_backend *be, const struct cg_edges *x, const float *v, int64_t f,
                       const float *dy, int64_t lddy, float *g, int64_t ldg) {
  P(be)->c.spmm_gathered_bytes += (double)x->nnz * (double)f * sizeof(float);
  P(be)->c.spmm_flops += 2.0 * (double)x->nnz * (double)f;
  FWD(CG_PROF_SPMM, p_->in->csr_mm_t(p_->in, x, v, f, dy, lddy, g, ldg));
}
static void w_csr_dropout(struct cg_backend *be, const struct cg_edges *x, const float *in, float *out,
                          const int32_t *gid, float pr, struct cg_dropout_key key) {
  FWD(CG_PROF_DROPOUT, p_->in->csr_dropout(p_->in, x, in, out, gid, pr, key));
}

int cg_backend_profile_wrap(struct cg_backend *inner, struct cg_backend **out) {
  struct prof *p = cg_calloc(1, sizeof *p, "profiling backend");
  if (!p) return CG_ERR_NOMEM;
  p->in = inner;
  p->timing = 1;
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

void cg_profile_set_timing(struct cg_backend *prof, int on) { P(prof)->timing = on; }
void cg_profile_get(const struct cg_backend *prof, struct cg_prof_counters *c) {
  *c = ((const struct prof *)prof->impl)->c;
}
void cg_profile_reset(struct cg_backend *prof) { memset(&P(prof)->c, 0, sizeof P(prof)->c); }

const char *cg_prof_op_name(enum cg_prof_op op) {
  static const char *names[CG_PROF_NOPS] = {"gemm", "spmm", "elementwise", "dropout", "layernorm",
                                            "loss", "adam", "halo_rows", "memory", "attention"};
  return (unsigned)op < CG_PROF_NOPS ? names[op] : "?";
}
