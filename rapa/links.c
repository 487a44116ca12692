/* rapa/links.c — the links between ranks: ping-pong latency and bandwidth for every
 * pair (host buffers; device buffers through a CUDA-aware MPI; NCCL send/recv when
 * every rank has a GPU of its own) and the gradient all-reduce.
 *
 * Design notes (the why):
 * - One pair at a time, the other ranks waiting at a barrier: two pairs measured at
 *   once would share the node's memory bus or NIC and both look slower.
 * - Each ping-pong checks that the echo is the initiator's payload: a transport that
 *   drops or corrupts data fails the profile instead of producing a number.
 * - The repetition count is fixed per size (both ends must run the same number of
 *   round trips), not budgeted by time as the device benchmarks are.
 * - Latency is half the round trip of an 8-byte message, bandwidth the bytes over
 *   half the round trip (one way), as osu_latency / osu_bw-style tools report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "rapa/rapa_internal.h"

static inline unsigned char link_byte(size_t i, int seed) {
  return (unsigned char)((i * 40503u) >> 7 ^ (unsigned)(seed * 29 + 3));
}

/* reps per size: more for small messages, whose times are short and noisy */
static int link_reps(size_t bytes, int quick) {
  int r = bytes <= 65536 ? 30 : bytes <= (1u << 20) ? 12 : 5;
  return quick ? (r + 1) / 2 : r;
}

int rapa_link_pair(const struct rapa_link_ops *ops, struct cg_backend *be, int rank, int peer,
                   size_t bytes, const struct rapa_bench_opts *o, struct rapa_timing *t) {
  int st = CG_OK;
  const int quick = o && o->max_reps < 10;
  const int reps = link_reps(bytes, quick);
  unsigned char *hs = cg_malloc(bytes, "link benchmark: send pattern");
  unsigned char *hr = cg_malloc(bytes, "link benchmark: received data");
  double *times = cg_malloc(sizeof(double) * (size_t)(reps + 1), "link benchmark: times");
  void *sbuf = NULL, *rbuf = NULL;
  if (!hs || !hr || !times) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (size_t i = 0; i < bytes; i++) hs[i] = link_byte(i, rank);
  memset(hr, 0xa5, bytes);
  if (be) {
    TRY_GOTO(be->alloc(be, &sbuf, bytes, "link benchmark: send buffer"), done);
    TRY_GOTO(be->alloc(be, &rbuf, bytes, "link benchmark: receive buffer"), done);
    TRY_GOTO(be->upload(be, sbuf, hs, bytes), done);
    TRY_GOTO(be->upload(be, rbuf, hr, bytes), done);
  } else {
    sbuf = hs;
    rbuf = hr;
  }
  TRY_GOTO(ops->pingpong(ops->ctx, peer, sbuf, rbuf, bytes, 1, times), done); /* warm-up */
  TRY_GOTO(ops->pingpong(ops->ctx, peer, sbuf, rbuf, bytes, reps, times), done);
  if (be) TRY_GOTO(be->download(be, hr, rbuf, bytes), done);
  const int init = rank < peer ? rank : peer;
  for (size_t i = 0; i < bytes; i++)
    if (hr[i] != link_byte(i, init)) {
      st = cg_err_set(CG_ERR_INTERNAL,
                      "link check failed between ranks %d and %d (%zu bytes%s): byte %zu is 0x%02x, "
                      "expected 0x%02x from rank %d: the transport moved wrong data",
                      rank, peer, bytes, be ? ", device buffers" : "", i, hr[i], link_byte(i, init), init);
      goto done;
    }
  t->reps = reps;
  double mn = times[0];
  for (int r = 1; r < reps; r++)
    if (times[r] < mn) mn = times[r];
  t->min_s = mn;
  t->median_s = rapa_median(times, reps);
done:
  if (be) {
    if (sbuf) be->free(be, sbuf);
    if (rbuf) be->free(be, rbuf);
  }
  cg_free(hs);
  cg_free(hr);
  cg_free(times);
  return st;
}

int rapa_link_allreduce(const struct rapa_link_ops *ops, struct cg_backend *be, int rank, int nranks,
                        int64_t n, const struct rapa_bench_opts *o, struct rapa_timing *t) {
  int st = CG_OK;
  const int reps = o && o->max_reps < 10 ? 5 : 10;
  float *h = cg_malloc((size_t)n * sizeof(float), "all-reduce benchmark: host buffer");
  double *times = cg_malloc(sizeof(double) * (size_t)reps, "all-reduce benchmark: times");
  float *d = NULL;
  if (!h || !times) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  TRY_GOTO(be->alloc(be, (void **)&d, (size_t)n * sizeof(float), "all-reduce benchmark: buffer"), done);
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
    for (int64_t i = 0; i < n; i++) h[i] = (float)((rank + 1) * (int)(i % 61));
    TRY_GOTO(be->upload(be, d, h, (size_t)n * sizeof(float)), done); /* untimed: the sum is in place */
    double s = 0;
    TRY_GOTO(ops->allreduce(ops->ctx, d, n, &s), done);
    if (r >= 0) times[r] = s;
  }
  TRY_GOTO(be->download(be, h, d, (size_t)n * sizeof(float)), done);
  const double f = (double)nranks * (nranks + 1) / 2.0;
  for (int64_t i = 0; i < n; i++)
    if ((double)h[i] != f * (double)(i % 61)) {
      st = cg_err_set(CG_ERR_INTERNAL,
                      "all-reduce check failed (%lld floats over %d ranks): value %lld is %g, expected %g",
                      (long long)n, nranks, (long long)i, (double)h[i], f * (double)(i % 61));
      goto done;
    }
  t->reps = reps;
  double mn = times[0];
  for (int r = 1; r < reps; r++)
    if (times[r] < mn) mn = times[r];
  t->min_s = mn;
  t->median_s = rapa_median(times, reps);
done:
  if (d) be->free(be, d);
  cg_free(h);
  cg_free(times);
  return st;
}

/* ---- over MPI ------------------------------------------------------------------------- */

struct mpi_link {
  struct comm *c;
  struct cg_backend *be;
  enum comm_path path;
  struct comm_grad *grad;
};

static int mpi_pingpong(void *ctx, int peer, const void *sbuf, void *rbuf, size_t bytes, int reps,
                        double *seconds) {
  struct mpi_link *m = ctx;
  return comm_pingpong(m->c, m->be, m->path, peer, sbuf, rbuf, bytes, reps, seconds);
}

static int mpi_allreduce(void *ctx, float *buf, int64_t n, double *seconds) {
  struct mpi_link *m = ctx;
  m->be->sync(m->be);
  double t0 = cg_time_now();
  TRY(comm_grad_allreduce(m->grad, buf));
  m->be->sync(m->be);
  *seconds = cg_time_now() - t0;
  return CG_OK;
}

enum { P_HOST = 0, P_DEVICE = 1, P_NCCL = 2, P_N = 3 };
static const char *pname[P_N] = {"host", "device", "nccl"};

static cJSON *curve_json(const double *vals, const size_t *sizes, int ns, double *lat_us, double *peak) {
  cJSON *arr = cJSON_CreateArray();
  *peak = 0;
  for (int s = 0; s < ns; s++) {
    const double med = vals[3 * s], mn = vals[3 * s + 1], reps = vals[3 * s + 2];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "bytes", (double)sizes[s]);
    cJSON_AddNumberToObject(e, "median_s", med);
    cJSON_AddNumberToObject(e, "min_s", mn);
    cJSON_AddNumberToObject(e, "reps", reps);
    const double gbs = (double)sizes[s] / (med / 2.0) / 1e9;
    cJSON_AddNumberToObject(e, "gbs", gbs);
    cJSON_AddItemToArray(arr, e);
    if (s == 0) *lat_us = med / 2.0 * 1e6;
    if (gbs > *peak) *peak = gbs;
  }
  return arr;
}

int rapa_grad_allreduce_time(struct comm *c, struct cg_backend *be, int64_t n, const struct rapa_bench_opts *o,
                             struct rapa_timing *t, const char **path, const char **alg) {
  struct mpi_link ml = {c, be, COMM_PATH_HOST, NULL};
  struct rapa_link_ops ops = {&ml, mpi_pingpong, mpi_allreduce};
  TRY(comm_grad_create(c, be, n, &ml.grad)); /* (collective, agreed inside) */
  const enum comm_path p = comm_grad_path(ml.grad);
  if (path) *path = comm_path_name(p);
  if (alg) *alg = p == COMM_PATH_NCCL ? "nccl" : comm_allreduce_name(comm_grad_algorithm(ml.grad));
  const int st = comm_agree(c, rapa_link_allreduce(&ops, be, comm_rank(c), comm_size(c), n, o, t),
                            "measuring the gradient all-reduce");
  comm_grad_destroy(&ml.grad);
  return st;
}

/* One point of the all-reduce's curve. */
static cJSON *ar_point(int64_t floats, const struct rapa_timing *t) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddNumberToObject(e, "floats", (double)floats);
  cJSON_AddNumberToObject(e, "bytes", (double)floats * 4.0);
  cJSON_AddNumberToObject(e, "median_s", t->median_s);
  cJSON_AddNumberToObject(e, "min_s", t->min_s);
  cJSON_AddNumberToObject(e, "reps", t->reps);
  return e;
}

int rapa_links_measure(struct comm *c, struct cg_backend *be, const struct rapa_run_opts *o, cJSON **out) {
  int st = CG_OK;
  *out = NULL;
  const int rank = comm_rank(c), P = comm_size(c);
  const int npairs = P * (P - 1) / 2;
  const size_t full_sizes[] = {8, 4096, 65536, 1 << 20, 16 << 20, 64 << 20};
  const size_t quick_sizes[] = {8, 4096, 65536, 1 << 20, 4 << 20};
  const size_t *sizes = o->quick ? quick_sizes : full_sizes;
  const int ns = o->quick ? 5 : 6;
  struct rapa_bench_opts bo;
  rapa_bench_opts_default(&bo, o->quick);

  /* which paths every rank can take */
  struct comm_lib_info li;
  TRY(comm_lib_info(c, &li));
  double flags[2] = {be->kind == CG_DEVICE_CUDA ? 1.0 : 0.0, li.cuda_aware ? 1.0 : 0.0};
  TRY(comm_allreduce_host(c, flags, 2, COMM_MIN));
  const int all_cuda = flags[0] > 0, all_aware = flags[1] > 0;
  int use[P_N] = {1, all_cuda && all_aware, 0};
  char device_note[256], nccl_note[256];
  if (!all_cuda) snprintf(device_note, sizeof device_note, "not measured: some rank is on the CPU backend (device memory is host memory there)");
  else if (!all_aware) snprintf(device_note, sizeof device_note, "not measured: MPI is not CUDA-aware on every rank (this rank: %s)", li.cuda_aware_how);
  else snprintf(device_note, sizeof device_note, "MPI_Send/MPI_Recv on device buffers (CUDA-aware MPI: %s)", li.cuda_aware_how);
  snprintf(nccl_note, sizeof nccl_note, "not measured: some rank is on the CPU backend");
  if (all_cuda && P > 1) {
    enum comm_path p = COMM_PATH_AUTO;
    TRY(comm_path_resolve(c, be, &p)); /* starts NCCL when every rank has a GPU of its own */
    use[P_NCCL] = p == COMM_PATH_NCCL;
    snprintf(nccl_note, sizeof nccl_note, "%s",
             use[P_NCCL] ? "ncclSend/ncclRecv on the backend's stream"
                         : "not measured: NCCL is not usable here (ranks share a GPU, the build has no "
                           "NCCL, or it did not start; see the log)");
  }

  /* results[pair][path][size][median, min, reps], summed over the ranks: only a pair's
   * initiator writes its entries */
  const size_t nres = (size_t)(npairs > 0 ? npairs : 1) * P_N * (size_t)ns * 3;
  double *res = cg_calloc(nres, sizeof(double), "link results");
  int64_t *node = NULL;
  char **hosts = NULL;
  if (!res) return CG_ERR_NOMEM;
  struct mpi_link ml = {c, be, COMM_PATH_HOST, NULL};
  struct rapa_link_ops ops = {&ml, mpi_pingpong, mpi_allreduce};
  int pair = 0;
  for (int a = 0; a < P; a++)
    for (int b = a + 1; b < P; b++, pair++) {
      if (rank == a || rank == b) {
        const int peer = rank == a ? b : a;
        for (int p = 0; p < P_N && st == CG_OK; p++) {
          if (!use[p]) continue;
          ml.path = p == P_HOST ? COMM_PATH_HOST : p == P_DEVICE ? COMM_PATH_MPI_CUDA : COMM_PATH_NCCL;
          for (int s = 0; s < ns && st == CG_OK; s++) {
            struct rapa_timing t;
            st = rapa_link_pair(&ops, p == P_HOST ? NULL : be, rank, peer, sizes[s], &bo, &t);
            if (st == CG_OK && rank == a) {
              double *r = res + (((size_t)pair * P_N + (size_t)p) * (size_t)ns + (size_t)s) * 3;
              r[0] = t.median_s;
              r[1] = t.min_s;
              r[2] = t.reps;
            }
          }
        }
      }
      /* a failed ping-pong may leave the peer waiting: agree before the next pair would
       * hang, which MPI's error return makes possible (both ends fail or time out) */
      TRY_GOTO(comm_agree(c, st, "measuring a link"), done);
    }
  TRY_GOTO(comm_allreduce_host(c, res, (int)nres, COMM_SUM), done);

  /* the gradient all-reduce over the path training would use */
  int64_t grad = o->features * o->hidden + o->hidden;
  for (int l = 1; l < o->layers - 1; l++) grad += o->hidden * o->hidden + o->hidden;
  if (o->layers > 1) grad += o->hidden * o->classes + o->classes;
  /* and the same all-reduce at a few more sizes (RAPA_AR_SIZES floats): `capgnn plan`
   * prices a job of this layout's all-reduce from the curve (rapa/plan.h, ar_points).
   * Measured, because the formula from the link latencies misses what a collective costs:
   * on the 2-core VM, 4 ranks as 2 emulated nodes, the ordered hierarchical all-reduce of
   * 42 KB took 129 us where one-way latencies of 1.7 us and 6 GB/s said ~15 us (four
   * collectives, each a synchronisation of ranks that share cores). */
  static const int64_t extra[] = {RAPA_AR_SIZES};
  enum { NEXTRA = sizeof extra / sizeof *extra };
  int64_t sizes_ar[NEXTRA + 1]; /* the extra sizes (increasing) with the gradient's in its place, once */
  int nar = NEXTRA, at_grad = 0;
  memcpy(sizes_ar, extra, sizeof extra);
  while (at_grad < nar && sizes_ar[at_grad] < grad) at_grad++;
  if (at_grad == nar || sizes_ar[at_grad] != grad) {
    memmove(sizes_ar + at_grad + 1, sizes_ar + at_grad, (size_t)(nar - at_grad) * sizeof *sizes_ar);
    sizes_ar[at_grad] = grad;
    nar++;
  }
  struct rapa_timing ar_t[NEXTRA + 1];
  memset(ar_t, 0, sizeof ar_t);
  const char *ar_path = "none", *ar_alg = "none";
  for (int k = 0; k < nar && P > 1; k++)
    TRY_GOTO(rapa_grad_allreduce_time(c, be, sizes_ar[k], &bo, &ar_t[k], &ar_path, &ar_alg), done);
  const struct rapa_timing ar = ar_t[at_grad];

  /* where each rank is, for the pairs' intra/inter-node labels */
  node = cg_malloc(sizeof(int64_t) * (size_t)P, "node ids");
  if (!node) st = CG_ERR_NOMEM;
  TRY_GOTO(comm_agree(c, st, "gathering node ids"), done);
  st = comm_allgather_i64(c, comm_node(c), node);
  if (st == CG_OK) st = comm_gather_text(c, cg_hostname(), 0, &hosts);
  if (st < 0 || rank != 0) goto done;
  cJSON *L = cJSON_CreateObject();
  cJSON_AddNumberToObject(L, "nranks", P);
  cJSON_AddBoolToObject(L, "quick", o->quick);
  cJSON *sz = cJSON_AddArrayToObject(L, "sizes");
  for (int s = 0; s < ns; s++) cJSON_AddItemToArray(sz, cJSON_CreateNumber((double)sizes[s]));
  cJSON *pairs = cJSON_AddArrayToObject(L, "pairs");
  cJSON *mat = cJSON_AddObjectToObject(L, "matrix");
  cJSON *mbw = cJSON_AddArrayToObject(mat, "bandwidth_gbs"), *mlat = cJSON_AddArrayToObject(mat, "latency_us");
  double *bw = cg_calloc((size_t)P * (size_t)P, sizeof(double), "link matrix"),
         *lat = cg_calloc((size_t)P * (size_t)P, sizeof(double), "link matrix");
  pair = 0;
  for (int a = 0; a < P; a++)
    for (int b = a + 1; b < P; b++, pair++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddNumberToObject(e, "a", a);
      cJSON_AddNumberToObject(e, "b", b);
      cJSON_AddBoolToObject(e, "same_node", node[a] == node[b]);
      cJSON_AddBoolToObject(e, "same_host", !strcmp(hosts[a], hosts[b]));
      for (int p = 0; p < P_N; p++) {
        if (!use[p]) {
          cJSON_AddNullToObject(e, pname[p]);
          continue;
        }
        double l = 0, peak = 0;
        cJSON *lk = cJSON_CreateObject();
        cJSON *cv = curve_json(res + ((size_t)pair * P_N + (size_t)p) * (size_t)ns * 3, sizes, ns, &l, &peak);
        cJSON_AddNumberToObject(lk, "latency_us", l);
        cJSON_AddNumberToObject(lk, "peak_gbs", peak);
        cJSON_AddItemToObject(lk, "curve", cv);
        cJSON_AddItemToObject(e, pname[p], lk);
        if (p == P_HOST && bw && lat) {
          bw[a * P + b] = bw[b * P + a] = peak;
          lat[a * P + b] = lat[b * P + a] = l;
        }
      }
      cJSON_AddItemToArray(pairs, e);
    }
  for (int i = 0; i < P; i++) {
    cJSON *rb = cJSON_CreateArray(), *rl = cJSON_CreateArray();
    for (int j = 0; j < P; j++) {
      cJSON_AddItemToArray(rb, i == j || !bw ? cJSON_CreateNull() : cJSON_CreateNumber(bw[i * P + j]));
      cJSON_AddItemToArray(rl, i == j || !lat ? cJSON_CreateNull() : cJSON_CreateNumber(lat[i * P + j]));
    }
    cJSON_AddItemToArray(mbw, rb);
    cJSON_AddItemToArray(mlat, rl);
  }
  cg_free(bw);
  cg_free(lat);
  cJSON_AddStringToObject(L, "matrix_note", "host buffers, MPI ping-pong: peak one-way bandwidth over the sizes, and half the round trip of 8 bytes");
  cJSON_AddStringToObject(L, "device_note", device_note);
  cJSON_AddStringToObject(L, "nccl_note", nccl_note);
  if (P > 1) {
    cJSON *a = cJSON_AddObjectToObject(L, "allreduce");
    cJSON_AddNumberToObject(a, "floats", (double)grad);
    cJSON_AddNumberToObject(a, "bytes", (double)grad * 4.0);
    cJSON_AddStringToObject(a, "path", ar_path);
    cJSON_AddNumberToObject(a, "median_s", ar.median_s);
    cJSON_AddNumberToObject(a, "min_s", ar.min_s);
    cJSON_AddNumberToObject(a, "reps", ar.reps);
    cJSON_AddStringToObject(a, "algorithm", ar_alg);
    cJSON_AddNumberToObject(a, "nodes", (double)comm_nnodes(c));
    cJSON *cv = cJSON_AddArrayToObject(a, "curve"); /* every size measured, the gradient's included, by size */
    for (int k = 0; k < nar; k++) cJSON_AddItemToArray(cv, ar_point(sizes_ar[k], &ar_t[k]));
  } else {
    cJSON_AddNullToObject(L, "allreduce");
  }
  *out = L;
done:
  comm_texts_free(hosts, P);
  cg_free(node);
  comm_grad_destroy(&ml.grad);
  cg_free(res);
  return st;
}
