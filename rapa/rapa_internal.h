/* rapa/rapa_internal.h — private to rapa/: the device timer, the CUDA parts (pinned
 * memory, peer copies, device facts), machine context, link measurement through a
 * small transport table (so tests can feed it wrong data), the profile's JSON, and
 * the cache. */
#ifndef CAPGNN_RAPA_INTERNAL_H
#define CAPGNN_RAPA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "rapa/rapa.h"

/* ---- timing (bench.c) ---- */

/* Run op(ctx) warmup times untimed, then time repetitions (see rapa.h). op returns a
 * status; a failing op stops the measurement. */
int rapa_measure(struct cg_backend *be, const struct rapa_bench_opts *o, int (*op)(void *ctx),
                 void *ctx, struct rapa_timing *t);
double rapa_median(double *v, int n); /* sorts v */

/* ---- CUDA parts (bench_cuda.c; CG_ERR_UNSUPPORTED without CUDA in the build) ---- */

/* Events on the backend's stream: start records, stop records, waits and returns the
 * elapsed seconds. The timer is created once per backend and kept by the caller. */
struct rapa_cuda_timer;
int rapa_cuda_timer_create(struct cg_backend *be, struct rapa_cuda_timer **out);
int rapa_cuda_timer_start(struct rapa_cuda_timer *t);
int rapa_cuda_timer_stop(struct rapa_cuda_timer *t, double *seconds);
void rapa_cuda_timer_destroy(struct rapa_cuda_timer **t);
int rapa_pinned_alloc(void **p, size_t bytes);
void rapa_pinned_free(void *p);
/* Device facts into obj (name, uuid, memory_bytes, sms, clock_mhz, mem_clock_mhz,
 * compute_capability, tf32, pcie_bus, pcie_locality, driver_version,
 * runtime_version, cublas_version) for CUDA device `ordinal`. */
int rapa_cuda_device_info(int ordinal, cJSON *obj);
/* GPU-to-GPU copies from `ordinal` to every other visible device with peer access:
 * fills obj with "available", "note" and "results" [{peer, bytes, median_s, min_s,
 * reps, gbs}] (each checked). */
int rapa_cuda_peer(struct cg_backend *be, size_t bytes, const struct rapa_bench_opts *o,
                   cJSON *obj);
/* Whether the device has TF32 tensor cores (compute capability >= 8.0). */
int rapa_cuda_has_tf32(int ordinal);

/* ---- machine context (context.c) ---- */

/* hostname, os, cpu_model, packages, cores, pus, numa_nodes, memory_bytes, bound_pus
 * (the PUs this process may run on), hwloc_version. */
cJSON *rapa_context_json(void);
const char *rapa_cpu_model(void);

/* ---- links (links.c) ---- */

/* The transport the link measurements go through: comm_pingpong and the gradient
 * all-reduce in production (rapa_link_ops_mpi), a fake in tests. allreduce sums n
 * floats of backend memory in place over the ranks and returns its seconds. */
struct rapa_link_ops {
  void *ctx;
  int (*pingpong)(void *ctx, int peer, const void *sbuf, void *rbuf, size_t bytes, int reps,
                  double *seconds);
  int (*allreduce)(void *ctx, float *buf, int64_t n, double *seconds);
};
/* One pair: this rank and `peer` ping-pong `bytes` of backend memory of `be` (host
 * memory when be is NULL); checks that the echo is the initiator's payload (the lower
 * rank's; `rank` is this rank). */
int rapa_link_pair(const struct rapa_link_ops *ops, struct cg_backend *be, int rank, int peer,
                   size_t bytes, const struct rapa_bench_opts *o, struct rapa_timing *t);
/* n floats: rank r contributes (r + 1) * (i % 61); checks the sum nranks (nranks + 1) / 2
 * * (i % 61) exactly. */
int rapa_link_allreduce(const struct rapa_link_ops *ops, struct cg_backend *be, int rank,
                        int nranks, int64_t n, const struct rapa_bench_opts *o,
                        struct rapa_timing *t);
/* The gradient all-reduce of n floats over every rank of c as training runs it (a
 * comm_grad of that size: its path and algorithm), timed and checked by
 * rapa_link_allreduce; *path and *alg (either may be NULL) name them ("nccl" for the
 * algorithm on the NCCL path). Collective; the status is agreed. */
int rapa_grad_allreduce_time(struct comm *c, struct cg_backend *be, int64_t n, const struct rapa_bench_opts *o,
                             struct rapa_timing *t, const char **path, const char **alg);
/* The whole link matrix over comm (collective); returns the "links" object. */
int rapa_links_measure(struct comm *c, struct cg_backend *be, const struct rapa_run_opts *o,
                       cJSON **out);

/* ---- the profile's JSON (profile.c) ---- */

struct rapa_profile {
  cJSON *root;
  char **desc; /* per rank, rapa_profile_describe */
};
/* Take ownership of root (validated by the caller). */
int rapa_profile_wrap(cJSON *root, struct rapa_profile **out);
/* Validate one device entry (as cached or inside "ranks"), one links object, the
 * whole document. CG_ERR_FORMAT with "<what>: <path>: expected ...". */
int rapa_validate_device(const cJSON *d, const char *what, const char *path);
int rapa_validate_links(const cJSON *l, int nranks, const char *what, const char *path);
int rapa_validate_profile(const cJSON *root, const char *what);
/* The number at `path` of a JSON object ("mm.summary.gflops"); NaN when absent. */
/* obj as indented JSON into path, whole or not at all (core/outfile.h). */
int rapa_write_json(const char *path, const cJSON *obj, const char *what);
double rapa_json_num(const cJSON *obj, const char *path);
/* T_i of rapa_profile_capabilities for one device entry; CG_ERR_FORMAT when its rates
 * are missing. */
int rapa_device_layer_time(const cJSON *dev, double *t);
/* ISO 8601 UTC now, "2026-11-24T10:00:00Z". */
void rapa_now_iso(char *buf, size_t len);

/* ---- links (links.c) ---- */

/* The sizes (floats, increasing) at which the profile measures the gradient all-reduce
 * besides the model's gradient (links.allreduce.curve; `capgnn plan` interpolates a job's
 * all-reduce on the profiled layout from it, rapa/plan.h): 4 KB, 64 KB, 256 KB. */
#define RAPA_AR_SIZES 1024, 16384, 65536

/* ---- alike ranks (calibrate.c) ---- */

/* Ranks alike (equal ids[r]: one host, the same device, threads and emulated speed)
 * should measure alike: rates further apart than this mean the host was busy while one
 * of them measured. */
#define RAPA_RATES_APART 1.5
/* For each group of two or more alike ranks whose GEMM (gemm[r], FLOP/s) or SpMM
 * (spmm[r], nonzero-columns/s) rates differ by more than RAPA_RATES_APART, one line in
 * `out` ('\n' between lines): "ranks alike (ID) measured rates 2.0x apart (GEMM FLOP/s:
 * rank 1 5e+10, rank 0 1e+11)"; the caller adds what it means for it. Returns the number
 * of such groups (0: `out` is ""). Used by the start-up calibration of --partition rapa
 * and by `capgnn profile`. */
int rapa_rates_apart(int P, char *const *ids, const double *gemm, const double *spmm, char *out, size_t len);
/* Testing only: CAPGNN_TEST_RATE_SCALE=f0,f1,... gives rank r's factor f_r (1 when unset
 * or not a number > 0): the start-up calibration multiplies rank r's measured GEMM and
 * SpMM rates by it, `capgnn profile` the rates its alike-check compares (the profile
 * itself keeps what was measured), as a rank that measured while its host was busy would
 * see them. */
double rapa_test_rate_scale(int rank);

/* ---- cache (profile.c) ---- */

const char *rapa_cache_dir(const char *cache_dir); /* NULL: $CAPGNN_CACHE, else .capgnn-cache */
/* Read, parse and validate a cached file of `schema` name; 1 when usable (*out set),
 * 0 when absent or unusable. With `remeasure` (the caller measures again) an unusable
 * file is a warning saying why and "re-measuring", and *why gets a short reason;
 * without (the caller refuses, e.g. train --profile auto) nothing is logged and *why
 * gets the reason with its detail, for the caller's one error line. */
int rapa_cache_read(const char *path, const char *schema, int need_full, int remeasure, cJSON **out,
                    char *why, size_t why_len);
int rapa_cache_write(const char *path, const cJSON *obj);
int rapa_mkdirs(const char *dir);

/* ---- one device (device.c) ---- */

/* Measure this rank's device on `be` into a device entry (without rank/host/node).
 * key: the device key. */
/* The GEMM library a device entry names ("blas"): cuBLAS, or the CPU backend's. */
const char *rapa_blas_name(const struct cg_backend *be);
/* The SpMM matrix a profile measures when --spmm-graph is not given (quick or full). */
const char *rapa_spmm_default_spec(int quick);
int rapa_device_measure(struct cg_backend *be, const struct rapa_run_opts *o, const char *key,
                        cJSON **out);

#endif
