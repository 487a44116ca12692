/* rapa/device.c — one rank's device profile: MM at the model's shapes and a size
 * sweep (plus TF32 where the GPU has it), SpMM at widths 16..602 on a Reddit-shaped
 * synthetic operator, H2D / D2H (pageable, and pinned on the GPU) and IDT (copies
 * inside the device, peer copies between GPUs) over a size sweep, and the summary
 * figures that the capabilities and the report use.
 *
 * Design notes (the why):
 * - The GEMM shapes are those of a GCN layer's combination step (rows x in -> out),
 *   since that is what the partitioner has to balance; the square sweep shows where
 *   the device saturates.
 * - The SpMM matrix is the GCN operator of synth:reddit at a scale that keeps its
 *   degree distribution and clustering, so the gathered rows hit the caches as in
 *   training; rates are in nonzero-columns per second (nnz x f / s), which is what a
 *   layer's cost scales with.
 * - On the CPU backend "device" memory is host memory: H2D, D2H and IDT are the
 *   backend's memcpy, measured all the same so the whole flow runs without a GPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "graph/graph.h"
#include "rapa/rapa_internal.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#ifndef CAPGNN_VERSION
#define CAPGNN_VERSION "unknown"
#endif

static cJSON *timing_obj(const struct rapa_timing *t) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "median_s", t->median_s);
  cJSON_AddNumberToObject(o, "min_s", t->min_s);
  cJSON_AddNumberToObject(o, "reps", t->reps);
  return o;
}

const char *rapa_spmm_default_spec(int quick) {
  return quick ? "synth:reddit:scale=0.02" : "synth:reddit:scale=0.1";
}

static int mm_entry(struct cg_backend *be, int64_t m, int64_t n, int64_t k, double rtol,
                    const struct rapa_bench_opts *bo, const char *label, cJSON *arr, double *gflops) {
  struct rapa_timing t;
  TRY(rapa_bench_gemm(be, m, n, k, rtol, bo, &t));
  cJSON *e = timing_obj(&t);
  if (label) cJSON_AddStringToObject(e, "label", label);
  cJSON_AddNumberToObject(e, "m", (double)m);
  cJSON_AddNumberToObject(e, "n", (double)n);
  cJSON_AddNumberToObject(e, "k", (double)k);
  const double g = 2.0 * (double)m * (double)n * (double)k / t.median_s / 1e9;
  cJSON_AddNumberToObject(e, "gflops", g);
  cJSON_AddItemToArray(arr, e);
  if (gflops) *gflops = g;
  return CG_OK;
}

static int measure_mm(struct cg_backend *be, struct cg_backend *be_tf32, const struct rapa_run_opts *o,
                      const struct rapa_bench_opts *bo, cJSON *dev, cJSON *sum) {
  cJSON *mm = cJSON_AddObjectToObject(dev, "mm");
  cJSON *model = cJSON_AddArrayToObject(mm, "model");
  const int64_t r = o->rows;
  char label[96];
  double g_hidden = NAN;
  /* layer 0: features -> hidden; middle layers: hidden -> hidden; last: hidden -> classes */
  snprintf(label, sizeof label, "layer 0: %lld x %lld -> %lld", (long long)r, (long long)o->features,
           (long long)o->hidden);
  TRY(mm_entry(be, r, o->hidden, o->features, 2e-4, bo, label, model, NULL));
  snprintf(label, sizeof label, "hidden: %lld x %lld -> %lld", (long long)r, (long long)o->hidden,
           (long long)o->hidden);
  TRY(mm_entry(be, r, o->hidden, o->hidden, 2e-4, bo, label, model, &g_hidden));
  snprintf(label, sizeof label, "last: %lld x %lld -> %lld", (long long)r, (long long)o->hidden,
           (long long)o->classes);
  TRY(mm_entry(be, r, o->classes, o->hidden, 2e-4, bo, label, model, NULL));
  cJSON *sweep = cJSON_AddArrayToObject(mm, "sweep");
  const int64_t cpu_sizes[] = {256, 512, 1024, 2048}, gpu_sizes[] = {256, 512, 1024, 2048, 4096, 8192};
  const int64_t *sizes = be->kind == CG_DEVICE_CUDA ? gpu_sizes : cpu_sizes;
  int nsizes = be->kind == CG_DEVICE_CUDA ? (o->quick ? 5 : 6) : (o->quick ? 3 : 4);
  for (int i = 0; i < nsizes; i++) TRY(mm_entry(be, sizes[i], sizes[i], sizes[i], 2e-4, bo, NULL, sweep, NULL));
  cJSON_AddNumberToObject(sum, "mm_gflops", g_hidden);
  cJSON_AddBoolToObject(mm, "tf32", be_tf32 != NULL);
  if (be_tf32) {
    double g_tf32 = NAN;
    cJSON *m32 = cJSON_AddArrayToObject(mm, "model_tf32");
    TRY(mm_entry(be_tf32, r, o->hidden, o->hidden, 1e-2, bo, "hidden, TF32", m32, &g_tf32));
    cJSON *s32 = cJSON_AddArrayToObject(mm, "sweep_tf32");
    for (int i = 0; i < nsizes; i++)
      TRY(mm_entry(be_tf32, sizes[i], sizes[i], sizes[i], 1e-2, bo, NULL, s32, NULL));
    cJSON_AddNumberToObject(sum, "mm_tf32_gflops", g_tf32);
  } else {
    cJSON_AddNullToObject(sum, "mm_tf32_gflops");
  }
  return CG_OK;
}

static int measure_spmm(struct cg_backend *be, const struct rapa_run_opts *o, const struct rapa_bench_opts *bo,
                        cJSON *dev, cJSON *sum) {
  int st = CG_OK;
  struct graph g;
  struct cg_csr a;
  memset(&g, 0, sizeof g);
  memset(&a, 0, sizeof a);
  const char *spec = o->spmm_graph ? o->spmm_graph : rapa_spmm_default_spec(o->quick);
  TRY_GOTO(graph_synth(spec, &g), done);
  TRY_GOTO(graph_aggr_build(&g, GRAPH_NORM_GCN, 1, &a), done);
  graph_free(&g);
  cJSON *sp = cJSON_AddObjectToObject(dev, "spmm");
  cJSON_AddStringToObject(sp, "graph", spec);
  cJSON_AddNumberToObject(sp, "rows", (double)a.nrows);
  cJSON_AddNumberToObject(sp, "cols", (double)a.ncols);
  cJSON_AddNumberToObject(sp, "nnz", (double)a.nnz);
  cJSON *res = cJSON_AddArrayToObject(sp, "results");
  const int64_t full[] = {16, 41, 64, 128, 256, 602}, quick[] = {16, 64, 256, 602};
  const int64_t *w = o->quick ? quick : full;
  const int nw = o->quick ? 4 : 6;
  for (int i = 0; i < nw; i++) {
    struct rapa_timing t;
    TRY_GOTO(rapa_bench_spmm(be, &a, w[i], bo, &t), done);
    cJSON *e = timing_obj(&t);
    cJSON_AddNumberToObject(e, "f", (double)w[i]);
    const double gnnz = (double)a.nnz * (double)w[i] / t.median_s / 1e9;
    const double gbs = (double)a.nnz * (double)w[i] * 4.0 / t.median_s / 1e9;
    cJSON_AddNumberToObject(e, "gnnz_s", gnnz);
    cJSON_AddNumberToObject(e, "gathered_gbs", gbs);
    cJSON_AddItemToArray(res, e);
    if (w[i] == 256) {
      cJSON_AddNumberToObject(sum, "spmm_gnnz_s", gnnz);
      cJSON_AddNumberToObject(sum, "spmm_gbs", gbs);
    }
  }
done:
  graph_free(&g);
  cg_csr_free(&a);
  return st;
}

/* One bandwidth-versus-size curve; *peak gets the bandwidth at the largest size (the
 * sustained rate: small copies run from the caches on a CPU) and *lat_us the time at
 * the smallest size. */
static int measure_curve(struct cg_backend *be, enum rapa_copy_kind kind, int pinned, int quick,
                         const struct rapa_bench_opts *bo, cJSON *arr, double *peak, double *lat_us) {
  const size_t top = quick ? ((size_t)16 << 20) : ((size_t)1 << 30);
  *peak = 0.0;
  for (size_t b = 4096; b <= top; b *= 4) {
    struct rapa_timing t;
    TRY(rapa_bench_copy(be, kind, pinned, b, bo, &t));
    cJSON *e = timing_obj(&t);
    cJSON_AddNumberToObject(e, "bytes", (double)b);
    const double gbs = (double)b / t.median_s / 1e9;
    cJSON_AddNumberToObject(e, "gbs", gbs);
    cJSON_AddItemToArray(arr, e);
    *peak = gbs;
    if (b == 4096) *lat_us = t.median_s * 1e6;
  }
  return CG_OK;
}

static int measure_copies(struct cg_backend *be, const struct rapa_run_opts *o, const struct rapa_bench_opts *bo,
                          cJSON *dev, cJSON *sum) {
  const int gpu = be->kind == CG_DEVICE_CUDA;
  static const char *names[] = {"h2d", "d2h"};
  for (int k = 0; k < 2; k++) {
    cJSON *obj = cJSON_AddObjectToObject(dev, names[k]);
    double peak_pg = 0, lat_pg = 0, peak_pin = 0, lat_pin = 0;
    TRY(measure_curve(be, (enum rapa_copy_kind)k, 0, o->quick, bo, cJSON_AddArrayToObject(obj, "pageable"),
                      &peak_pg, &lat_pg));
    cJSON *pin = cJSON_AddArrayToObject(obj, "pinned");
    if (gpu) TRY(measure_curve(be, (enum rapa_copy_kind)k, 1, o->quick, bo, pin, &peak_pin, &lat_pin));
    char key[32];
    snprintf(key, sizeof key, "%s_gbs", names[k]);
    cJSON_AddNumberToObject(sum, key, gpu && peak_pin > peak_pg ? peak_pin : peak_pg);
    snprintf(key, sizeof key, "%s_pageable_gbs", names[k]);
    cJSON_AddNumberToObject(sum, key, peak_pg);
    snprintf(key, sizeof key, "%s_latency_us", names[k]);
    cJSON_AddNumberToObject(sum, key, gpu ? lat_pin : lat_pg);
  }
  cJSON *idt = cJSON_AddObjectToObject(dev, "idt");
  double peak = 0, lat = 0;
  TRY(measure_curve(be, RAPA_COPY_D2D, 0, o->quick, bo, cJSON_AddArrayToObject(idt, "d2d"), &peak, &lat));
  cJSON_AddNumberToObject(sum, "idt_gbs", peak);
  cJSON_AddNumberToObject(sum, "idt_latency_us", lat);
  cJSON *peer = cJSON_AddObjectToObject(idt, "peer");
  if (gpu) {
    TRY(rapa_cuda_peer(be, o->quick ? ((size_t)16 << 20) : ((size_t)256 << 20), bo, peer));
  } else {
    cJSON_AddBoolToObject(peer, "available", 0);
    cJSON_AddStringToObject(peer, "note", "CPU backend: no GPU-to-GPU copies");
    cJSON_AddArrayToObject(peer, "results");
  }
  if (!gpu)
    cJSON_AddStringToObject(dev, "copy_note",
                            "CPU backend: device memory is host memory; H2D, D2H and IDT are the "
                            "backend's memcpy (be->upload, be->download, be->copy)");
  return CG_OK;
}

const char *rapa_blas_name(const struct cg_backend *be) {
  return be->kind == CG_DEVICE_CUDA ? "cuBLAS" : cg_backend_cpu_blas_info(be);
}

int rapa_device_measure(struct cg_backend *be, const struct rapa_run_opts *o, const char *key,
                        cJSON **out) {
  int st = CG_OK;
  *out = NULL;
  struct rapa_bench_opts bo;
  rapa_bench_opts_default(&bo, o->quick);
  struct cg_backend *be_tf32 = NULL;
  cJSON *sum = NULL;
  cJSON *d = cJSON_CreateObject();
  if (!d) return cg_err_set(CG_ERR_NOMEM, "out of memory for the device profile");
  char now[64];
  rapa_now_iso(now, sizeof now);
  cJSON_AddStringToObject(d, "schema", "capgnn-device-profile");
  cJSON_AddNumberToObject(d, "version", RAPA_PROFILE_VERSION);
  cJSON_AddStringToObject(d, "key", key);
  cJSON_AddStringToObject(d, "measured", now);
  cJSON_AddBoolToObject(d, "quick", o->quick);
  cJSON_AddStringToObject(d, "capgnn_version", CAPGNN_VERSION);
  cJSON *dv = cJSON_AddObjectToObject(d, "device");
  cJSON_AddStringToObject(dv, "kind", be->kind == CG_DEVICE_CUDA ? "cuda" : "cpu");
  if (be->kind == CG_DEVICE_CUDA) {
#ifdef CAPGNN_HAVE_CUDA
    const int ord = cg_cuda_device(be);
    TRY_GOTO(rapa_cuda_device_info(ord, dv), fail);
    cJSON_AddNumberToObject(dv, "threads", 0);
    if (rapa_cuda_has_tf32(ord)) TRY_GOTO(cg_backend_cuda_create(ord, 1, &be_tf32), fail);
#endif
  } else {
    cJSON_AddStringToObject(dv, "name", rapa_cpu_model());
    cJSON_AddNullToObject(dv, "uuid");
    cJSON_AddNumberToObject(dv, "threads", cg_backend_cpu_threads(be));
    size_t fr = 0, tot = 0;
    if (be->mem_info(be, &fr, &tot) != CG_OK) cg_err_clear();
    cJSON_AddNumberToObject(dv, "memory_bytes", (double)tot);
    cJSON_AddBoolToObject(dv, "tf32", 0);
  }
  cJSON_AddNumberToObject(dv, "share_pct", o->share_pct);
  cJSON_AddStringToObject(dv, "blas", rapa_blas_name(be));
  cJSON_AddItemToObject(d, "context", rapa_context_json());
  sum = cJSON_CreateObject();
  const double t0 = cg_time_now();
  TRY_GOTO(measure_mm(be, be_tf32, o, &bo, d, sum), fail);
  TRY_GOTO(measure_spmm(be, o, &bo, d, sum), fail);
  TRY_GOTO(measure_copies(be, o, &bo, d, sum), fail);
  cJSON_AddItemToObject(d, "summary", sum);
  sum = NULL;
  double tl = 0;
  TRY_GOTO(rapa_device_layer_time(d, &tl), fail);
  cJSON_AddNumberToObject(cJSON_GetObjectItem(d, "summary"), "layer_s", tl);
  cJSON_AddNumberToObject(d, "measure_s", cg_time_now() - t0);
  cg_backend_destroy(&be_tf32);
  *out = d;
  return CG_OK;
fail:
  cJSON_Delete(sum);
  cJSON_Delete(d);
  cg_backend_destroy(&be_tf32);
  return st;
}
